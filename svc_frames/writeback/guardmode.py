"""How ``write_back`` guards against other editors: the setting, its window, and the size of
the batches the live guard re-reads just before writing them.

The service has no conditional write, so the live guard (the default) bounds the time
between the re-read of a record and its write by a window, and re-reads the record again
no sooner than that window after the write: two writers that both keep this rule never
both believe they won (the one whose write landed first sees the other's value on its
check, since the other's write left within a window of a read that came before it).

Usage::

    mode = GuardMode.of("live", 2.0)          # UsageError naming a bad setting
    mode.batch(rate=10.0)                     # records per re-read before their writes
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from ..errors import UsageError

__all__ = ["GuardMode", "GUARDS", "DEFAULT_GUARD_WINDOW", "MIN_GUARD_WINDOW",
           "MAX_GUARD_WINDOW", "HOSTED_RATE", "CHECK_MARGIN", "BATCH_SHARE",
           "live_batches", "overlaps"]

Guard = Literal["live", "once", "off"]
GUARDS: tuple[Guard, ...] = ("live", "once", "off")
#: Seconds from a record's re-read to its write, and from the write's answer to the check.
#: Every svc_frames writer of the application must use the same bound (a longer window
#: elsewhere could land a write after this run's check): keep the default.
DEFAULT_GUARD_WINDOW = 2.0
MIN_GUARD_WINDOW = 0.5     # below this the pace cannot fit a re-read and a write
MAX_GUARD_WINDOW = 60.0    # beyond this a run would wait a minute for its check
#: The hosted pace (requests per second) the estimate assumes, as ``plan.requests`` does.
HOSTED_RATE = 10.0
#: Added to the window before the check: a write's trip to the service after it was sent.
CHECK_MARGIN = 0.5
#: Share of the window the writes of one batch may take at the pace (the rest: the
#: re-read's own trip and the pace's queue).
BATCH_SHARE = 0.75
_MAX_BATCH = 50            # the guard's re-read chunk (plan.REREAD_CHUNK; fewer values
#                            per request over a large object: plan.reread_chunk)


@dataclass(frozen=True)
class GuardMode:
    """A checked guard setting: ``live`` (re-read each batch within ``window`` seconds
    before writing it, check the written records ``window`` after), ``once`` (one re-read
    of every record before the first write, no check) or ``off``."""

    mode: Guard = "live"
    window: float = DEFAULT_GUARD_WINDOW

    @classmethod
    def of(cls, guard: Any, window: Any = DEFAULT_GUARD_WINDOW) -> GuardMode:
        """``guard`` as given to write_back (True: ``live``, False: ``off``), checked with
        its window; UsageError naming the setting, before any request."""
        if guard is True:
            guard = "live"
        elif guard is False:
            guard = "off"
        if not isinstance(guard, str) or guard not in GUARDS:
            raise UsageError(f"guard must be one of {', '.join(map(repr, GUARDS))} (or "
                             f"True/False), got {guard!r}", field="guard")
        if isinstance(window, bool) or not isinstance(window, (int, float)) \
                or not math.isfinite(window) \
                or not MIN_GUARD_WINDOW <= window <= MAX_GUARD_WINDOW:
            raise UsageError(f"guard_window must be a number of seconds from "
                             f"{MIN_GUARD_WINDOW} to {MAX_GUARD_WINDOW}, got {window!r}",
                             field="guard_window")
        return cls(guard, float(window))

    @property
    def rereads(self) -> bool:
        return self.mode != "off"

    @property
    def live(self) -> bool:
        return self.mode == "live"

    def batch(self, rate: float | None = None) -> int:
        """Records re-read together before their writes: as many as the pace writes in
        three quarters of the window (``rate`` None or 0, unpaced: the hosted pace)."""
        pace = HOSTED_RATE if not rate else min(rate, HOSTED_RATE)
        return max(1, min(_MAX_BATCH, int(pace * self.window * BATCH_SHARE)))


A = TypeVar("A", bound=str)   # an action: "update", "create", "delete"


def live_batches(order: Sequence[tuple[str, A]], size: int | None) -> list[tuple[A, list[str]]]:
    """The records ``(id, action)`` in order, cut into the batches the live guard re-reads
    and ``apply`` writes together: runs of one action, at most ``size`` updates or deletes
    each (creates all together: nothing to re-read); one batch of everything when ``size``
    is None (no live guard).

    Usage: ``live_batches([("5d79...", "update"), ("new:0", "create")], 10)``"""
    out: list[tuple[A, list[str]]] = []
    for rid, act in order:
        if out and (size is None or out[-1][0] == act
                    and (len(out[-1][1]) < size or act == "create")):
            out[-1][1].append(rid)
        else:
            out.append((act, [rid]))
    return out


def overlaps(size: int, window: float, rate: float | None, on_conflict: str) -> bool:
    """Whether the live guard's re-read of a batch of ``size`` may go while the batch
    before is written: when the pace writes two batches within the share of the window
    one may take (the re-read is then that much older when its writes go, still inside
    the window), and not with ``on_conflict="raise"`` (a conflict found must stop the
    writes after it, not those of the batch before).

    Usage: ``overlaps(15, 2.0, 50.0, "skip")``"""
    if on_conflict == "raise":
        return False
    return not rate or 2 * size / rate <= window * BATCH_SHARE
