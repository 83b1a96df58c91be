"""A write_back cut short (Ctrl-C, a crash, a failed re-read): it keeps count.

Every write the service answered is already in ``run.answered`` (the worker that sent it
put it there, and its journal line) and the writes in flight were waited for (apply.py);
here the frames follow those answers as after a whole run, and the exception leaves
carrying the Report so far: a Ctrl-C as :class:`~svc_frames.errors.WriteInterrupted` (a
KeyboardInterrupt), any other exception with a ``report`` attribute. Calling
``write_back`` again then sends only what remains.

Usage::

    try:
        ...phases...
    except BaseException as exc:
        raise cut_short(run, edited, exc, note) from None   # in write_back
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import ConflictError, WriteInterrupted
from ..frames import Frames
from .follow import follow
from .kept import Keeper
from .report import Outcome, QuotaNote, Report, make_report
from .state import RunState

__all__ = ["cut_short", "interrupted_line"]

NOT_SENT = "not sent: the run was interrupted"
IN_FLIGHT = ("the run was interrupted while this write was in flight and its answer never "
             "came: it may have been applied (write_back again re-reads it first)")


def cut_short(run: RunState, edited: Frames, exc: BaseException,
              quota: QuotaNote | None, keeper: Keeper | None = None) -> BaseException:
    """The exception to raise for ``exc``, which stopped ``run``: the frames follow
    every answered write, and the exception carries the Report so far (``.report``, with
    what an undo needs of the applied writes when ``keeper`` is given). A
    KeyboardInterrupt becomes a WriteInterrupted (same traceback); a ConflictError raised
    before any write (nothing sent, ``report`` None by its contract) is left as it is."""
    if isinstance(exc, ConflictError) and (exc.report is not None
                                           or not run.counter.n["writes"]):
        return exc
    report = partial_report(run, quota, keeper)
    try:
        follow(run, edited)
    except Exception as err:   # noqa: BLE001 - the run's own exception is the one to raise
        exc.add_note(f"the frames could not follow the applied writes ({err!r}): load "
                     "them again before editing further")
    line = interrupted_line(report, run.tgt.name, exc)
    if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, WriteInterrupted):
        new = WriteInterrupted(line, report)
        return new.with_traceback(exc.__traceback__)
    if getattr(exc, "report", None) is None:
        exc.report = report  # type: ignore[attr-defined]
    exc.add_note(line)
    return exc


def partial_report(run: RunState, quota: QuotaNote | None,
                   keeper: Keeper | None = None) -> Report:
    """One row per planned record: its outcome when settled or answered, ``unknown`` when
    its write was in flight, else ``not_applied`` (not sent). Settles ``run.outcomes``
    with them, so the frames follow exactly the answered writes; the applied ones are
    kept for an undo (``Report.kept``) as after a whole run."""
    with run.adopt_lock:
        answered = dict(run.answered)
        flying = set(run.in_flight)
    for rid, out in answered.items():
        run.outcomes.setdefault(rid, out)
    for rid, act in run.todo.items():
        if rid in run.outcomes:
            continue
        fields = list(run.payloads.get(rid, {}))
        run.outcomes[rid] = (Outcome(rid, act, fields, "unknown", IN_FLIGHT)
                             if rid in flying else
                             Outcome(rid, act, fields, "not_applied", NOT_SENT))
    plan = run.plan
    gate = run.gate
    if quota is not None and gate is not None:
        quota = dataclasses.replace(quota, stopped=gate.stopped,
                                    reset_at=gate.reset_at or quota.reset_at)
    rows = [run.outcomes[rid] for rid in plan.actions if rid in run.outcomes] + run.extra
    kept = keeper.finish() if keeper is not None else None
    return make_report(rows, plan, run.conflicts, run.counter, quota=quota, kept=kept)


def interrupted_line(report: Report, name: str, exc: BaseException | None = None) -> str:
    """One line: what a cut run did and how to go on, e.g. ``write_back object_3
    interrupted (KeyboardInterrupt): 42 applied, 78 not sent; the frames hold what was
    applied: write_back again sends only the rest``."""
    status = report.table["status"]
    counts: dict[str, Any] = {str(k): int(v) for k, v in status.value_counts().items()}
    not_sent = counts.pop("not_applied", 0)
    done = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "nothing answered"
    why = f" ({type(exc).__name__})" if exc is not None else ""
    unknown = (" (unknown: sent, answer lost; the next run re-reads them)"
               if counts.get("unknown") else "")
    return (f"write_back {name} interrupted{why}: {done}{unknown}, {not_sent} not sent; "
            "the frames hold what was applied: write_back again sends only the rest")
