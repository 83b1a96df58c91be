"""The daily quota's gate: claims of the quota by a run's concurrent writers, shut once
what is left would fall below the reserve (``budget.py`` uses it; ``RunState.gate``).

Usage::

    gate = QuotaGate(client, 100, owed=2)   # 2: the live guard's check after the writes
    why = gate.claim(1)          # None: send; else why not (the gate stays shut)
    gate.release(1)              # the record's write was answered
"""

from __future__ import annotations

import datetime as dt
import threading

from ..errors import QuotaExceeded
from ..records import Client
from .report import when_reset

__all__ = ["QuotaGate"]


class QuotaGate:
    """Claims of the daily quota by concurrent writers (thread-safe).

    ``claim(n)`` lets a record's ``n`` requests go when what is left of the quota once
    the claims in hand are sent, less ``owed``, stays at or above the reserve; otherwise
    it shuts the gate and says why. ``owed`` is what the run sends after its last claim
    (the live guard's check of what it wrote): kept back from the start, so that the
    check too stays above the reserve. The first record goes alone: its answer, the only
    one in flight, tells the quota exactly (the run's own count starts there), or tells
    that the service does not report one (then the gate stays open). The count errs on
    the safe side (see ``_left``): a claim counts until its record's write is answered.

    Usage: ``gate = QuotaGate(client, 100); why = gate.claim(1); ...; gate.release(1)``"""

    def __init__(self, client: Client, reserve: int, owed: int = 0) -> None:
        self.client = client
        self.reserve = reserve
        self.owed = owed
        self.stopped: str | None = None
        self.reset_at: dt.datetime | None = None
        self._claimed = 0           # requests of the claims in hand
        self._total = 0             # requests claimed since the baseline
        self._base: int | None = None   # the quota left at a quiet moment, and
        self._count0 = 0                # the client's request count then
        self._solo = False         # a record went alone: the next quiet moment is exact
        self._unreported = False   # answers came without X-PlanLimit-*: nothing to budget
        self._cond = threading.Condition()

    def claim(self, n: int) -> str | None:
        """None when ``n`` requests may go, else why not (and the gate stays shut)."""
        with self._cond:
            while True:
                if self.stopped:
                    return self.stopped
                left = self._left()
                if self._base is None and self._claimed and not self._unreported:
                    # one record alone until its answer, the only one in flight, tells
                    # the quota exactly (parallel answers may be counted out of order)
                    self._cond.wait(0.05)
                    continue
                if left is None:
                    break
                if left - n - self.owed < self.reserve:
                    quota = self.client.quota
                    self.reset_at = quota.reset_at if quota else None
                    kept = (f", {self.owed} kept for the check after the writes"
                            if self.owed else "")
                    self.stopped = (
                        f"not sent: the daily request quota is down to the reserve "
                        f"({max(left, 0)} left, quota_reserve={self.reserve}{kept}); "
                        f"resume after {when_reset(self.reset_at)}")
                    return self.stopped
                break
            self._claimed += n
            self._total += n
            return None

    def _left(self) -> int | None:
        """What is surely left once the claims in hand are sent (called under the lock).

        Two counts, the lower wins. Our own: the quota left at a quiet moment (no claim in
        hand) less the larger of the requests sent since (retries included) and the
        requests claimed since. The service's: the latest answer's remaining less the
        larger of the requests sent after it and the claims in hand (it sees other
        spenders, but answers of parallel requests may be counted out of order)."""
        reported = self.client.quota_left()
        quota = self.client.quota
        if self._base is None and reported is not None and self._claimed == 0 and self._solo:
            self._base, self._count0, self._total = reported, self.client.request_count, 0
        own = None
        if self._base is not None:
            sent = self.client.request_count - self._count0
            own = self._base - max(sent, self._total)
        if reported is None or quota is None:
            return own
        seen = quota.remaining - max(quota.remaining - reported, self._claimed)
        return seen if own is None else min(own, seen)

    def release(self, n: int) -> None:
        """A claimed record's requests are done (sent and answered, or given up)."""
        with self._cond:
            self._claimed -= n
            self._solo = True
            if self.client.quota is None:
                self._unreported = True
            self._cond.notify_all()

    def shut(self, reason: str, reset_at: dt.datetime | None = None) -> None:
        """Send nothing more: every later claim answers ``reason``."""
        with self._cond:
            self.reset_at = reset_at or self.reset_at
            self.stopped = self.stopped or reason
            self._cond.notify_all()

    def spent(self, exc: QuotaExceeded) -> str:
        """Shut the gate after the service refused for a spent quota; returns the reason."""
        with self._cond:
            if exc.reset_at is not None:
                self.reset_at = exc.reset_at
            if not self.stopped:
                self.stopped = ("not sent: the daily request quota was spent (by other "
                                f"requests of the application); resume after "
                                f"{when_reset(self.reset_at)}")
            self._cond.notify_all()
            return self.stopped
