"""The daily request quota in a write-back run: what the plan needs against what is left,
and the gate every record's write passes, which stops sending before the remaining quota
would fall below the reserve (docs/hosted-behaviour.md §4).

Usage::

    reserve = check_reserve(quota_reserve)          # UsageError before any request
    run.gate = QuotaGate(client, reserve, owed)     # gate.py
    out = budgeted(run, rid, write)                  # claim, write, release

A record is claimed whole (its write and the uploads it places), so it is sent whole or
not at all. The live guard's re-reads are claimed the same way (``apply._reread``), and
its check after the writes is kept back from the start (``QuotaGate``'s ``owed``), so the
whole run stays above the reserve. When the gate shuts (the reserve reached, or a
``QuotaExceeded`` from quota spent elsewhere), writes in flight finish and every later
record is ``not_applied`` with the reason; the run's Report says how to resume.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..assets import PendingUpload
from ..errors import QuotaExceeded, UsageError
from ..records import Client
from .report import Outcome, QuotaNote, when_reset
from .state import RunState

__all__ = ["DEFAULT_QUOTA_RESERVE", "check_reserve", "budgeted", "record_cost", "quota_note"]

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
