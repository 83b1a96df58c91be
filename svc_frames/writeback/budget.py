"""The daily request quota in a write-back run: what the plan needs against what is left,
and the gate every record's write passes, which stops sending before the remaining quota
would fall below the reserve (docs/hosted-behaviour.md §4).

Usage::

    reserve = check_reserve(quota_reserve)          # UsageError before any request
    run.gate = QuotaGate(client, reserve)
    out = budgeted(run, rid, write)                  # claim, write, release

A record is claimed whole (its write and the uploads it places), so it is sent whole or
not at all. When the gate shuts (the reserve reached, or a ``QuotaExceeded`` from quota
spent elsewhere), writes in flight finish and every later record is ``not_applied`` with
the reason; the run's Report says how to resume.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..assets import PendingUpload
from ..client import Client
from ..errors import QuotaExceeded, UsageError
from .report import Outcome, QuotaNote, when_reset

if TYPE_CHECKING:   # state.py holds a QuotaGate: imported for the annotations only
    from .state import RunState

__all__ = ["DEFAULT_QUOTA_RESERVE", "check_reserve", "QuotaGate", "budgeted", "record_cost",
           "quota_note"]

#: Requests ``write_back`` leaves of the daily quota by default. The quota is the whole
#: application's: the app's own pages (view calls with a user token), other integrations
#: and the next run's first re-read all draw on it, and a bulk edit that spends it to zero
#: locks every one of them out until the reset (midnight UTC). 100 is a few minutes of a
#: busy app's users and 10% of the smallest plan (Starter, 1,000/day); a fixed count, not a
#: share, because what the others need does not grow with the plan. ``quota_reserve=0``
#: spends it to the last request.
DEFAULT_QUOTA_RESERVE = 100


def check_reserve(value: Any) -> int:
    """The quota reserve, or UsageError naming it (before any request).

    Usage: ``check_reserve(100)``"""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"quota_reserve must be a whole number of requests (an int >= 0), "
                         f"got {value!r} ({type(value).__name__})", field="quota_reserve")
    if value < 0:
        raise UsageError(f"quota_reserve must be >= 0 (requests to leave of the daily quota), "
                         f"got {value!r}", field="quota_reserve")
    return value


class QuotaGate:
    """Claims of the daily quota by concurrent writers (thread-safe).

    ``claim(n)`` lets a record's ``n`` requests go when what is left of the quota once
    the claims in hand are sent stays at or above the reserve; otherwise it shuts the gate
    and says why. The first record goes alone: its answer, the only one in flight, tells
    the quota exactly (the run's own count starts there), or tells that the service does
    not report one (then the gate stays open). The count errs on the safe side (see
    ``_left``): a claim counts until its record's write is answered.

    Usage: ``gate = QuotaGate(client, 100); why = gate.claim(1); ...; gate.release(1)``"""

    def __init__(self, client: Client, reserve: int) -> None:
        self.client = client
        self.reserve = reserve
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
                if left - n < self.reserve:
                    quota = self.client.quota
                    self.reset_at = quota.reset_at if quota else None
                    self.stopped = (
                        f"not sent: the daily request quota is down to the reserve "
                        f"({max(left, 0)} left, quota_reserve={self.reserve}); "
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


def record_cost(run: RunState, rid: str) -> int:
    """Requests a record's write sends when all goes well: the write and its uploads."""
    return 1 + sum(isinstance(v, PendingUpload) for v in run.payloads.get(rid, {}).values())


def budgeted(run: RunState, rid: str, write: Callable[[RunState, str], Outcome]) -> Outcome:
    """``write(run, rid)`` behind the run's quota gate. A ``QuotaExceeded`` means that
    request applied nothing: ``not_applied``; unless an earlier try of it went unanswered
    (``maybe_applied``): then it may have landed, ``unknown``."""
    gate = run.gate
    act = run.todo[rid]
    fields = list(run.payloads.get(rid, {}))
    cost = record_cost(run, rid)
    if gate is not None:
        why = gate.claim(cost)
        if why:
            return Outcome(rid, act, fields, "not_applied", why)
    try:
        return write(run, rid)
    except QuotaExceeded as exc:
        reset_at = exc.reset_at
        if gate is not None:
            why = gate.spent(exc)
            reset_at = gate.reset_at
        else:
            why = f"not sent: the daily request quota is spent; resume after {when_reset(reset_at)}"
        if exc.maybe_applied:
            return Outcome(rid, act, fields, "unknown",
                           "an earlier try may have been applied (its answer was lost) "
                           f"and the daily quota is now spent: write again after "
                           f"{when_reset(reset_at)} (the guard checks what is there)")
        return Outcome(rid, act, fields, "not_applied", why)
    finally:
        if gate is not None:
            gate.release(cost)


def quota_note(client: Client, needed: int, reserve: int, *, sent: int = 0,
               learned: bool = False) -> QuotaNote:
    """What the plan needs beside the quota left when the run started: what the client
    knows is left now plus the ``sent`` requests the run spent since (``learned``: it was
    not known before the first request).

    Usage: ``quota_note(client, plan.requests.total, 100)``"""
    quota = client.quota
    left = client.quota_left()
    return QuotaNote(needed=needed, reserve=reserve,
                     remaining=left + sent if left is not None else None,
                     learned=learned and left is not None,
                     limit=quota.limit if quota else None,
                     reset_at=quota.reset_at if quota else None)
