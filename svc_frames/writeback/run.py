"""write_back: validate and plan, then one run in numbered phases; push: the same for
saved frames (``to_parquet`` or ``export``; read and checked by ``parquet.read_for_push``).

Usage::

    report = write_back(client, frames, journal="push.jsonl")
    push(client, "out/orders", dry_run=True).table

Reading order of ``write_back``: 1. validate & plan (``diff``), 2. resolve the target
(``target.py``), every check before the first request; then a ``RunState``: journal keys
and ``triage`` -> ``drop_fields_the_view_does_not_take`` -> 3. ``guard`` (``guard.py``)
-> 4. ``apply`` (``apply.py``: uploads + writes) -> 5. ``follow`` (``follow.py``) ->
6. the Report (``report.py``). The journal is closed whatever happens. The daily quota
(``budget.py``): the plan's requests are checked against what is left before the first
request, and every write passes the run's ``QuotaGate``, which stops sending at the
``quota_reserve``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Literal

from ..errors import ConflictError, UsageError
from ..frames import Frames
from ..joins import refuse_join_result
from ..progress import want_progress
from ..records import Client
from .apply import LiveBatches, apply
from .budget import DEFAULT_QUOTA_RESERVE, check_reserve, quota_note
from .diff import diff
from .follow import follow
from .gate import QuotaGate
from .guard import check_written, guard_within_quota, halt_message, keep_skipped_walls
from .guardmode import DEFAULT_GUARD_WINDOW, GuardMode
from .interrupt import cut_short
from .journal import Journal, check_journal_path
from .kept import Keeper, inbound_connections
from .plan import ColumnMap, Plan
from .report import Outcome, Report, dry_run_report, make_report, summary_line
from .stamp import stamp_for
from .state import RunState
from .target import write_target
from .uploads import check_upload_files

__all__ = ["write_back"]


def write_back(client: Client, edited: Frames, *, base: Frames | None = None,
               plan: Plan | None = None, dry_run: bool = False,
               on_conflict: Literal["skip", "overwrite", "raise"] = "skip",
               delete_missing: bool = False, journal: str | os.PathLike[str] | None = None,
               token: str | None = None, target: Any = None, guard: bool | str = "live",
               max_workers: int = 8, progress: bool | None = None,
               quota_reserve: int = DEFAULT_QUOTA_RESERVE,
               guard_window: float = DEFAULT_GUARD_WINDOW) -> Report:
    """Send the changes of edited frames: only the changed fields of changed records.

    Everything that can be checked without the service is checked first (:func:`diff`
    and the options below): a bad input sends nothing. Then the lost-update guard
    re-reads the records about to change, the writes go out concurrently within the
    client's pace (uploads of file cells just before the write that places them), and
    the frames and their ``original`` follow the server. The Report says the truth of
    each record: ``applied`` only when acknowledged or seen on a re-read, ``unknown`` with
    the reason when neither could be proven. With ``progress`` on, a bar and a one-line
    summary (``write_back object_3: 1 applied; 3 requests``) are shown.

    Parameters
    ----------
    client : Client
        The application the frames were loaded from.
    edited : Frames
        Loaded frames (``read_object``, ``read_view``, ``read_parquet``), edited.
    base : Frames, optional
        The values to diff against; default ``edited.original``.
    plan : Plan, optional
        A plan of ``edited`` made before (e.g. ``diff(edited).select(ids)`` to send only
        some records); default ``diff(edited, base)``.
    dry_run : bool, default False
        Plan and report (status ``planned``); send nothing.
    on_conflict : {"skip", "overwrite", "raise"}, default "skip"
        A record changed on the service since it was loaded is skipped (status
        ``conflict``), overwritten, or raises ConflictError (see Raises).
    delete_missing : bool, default False
        Delete the loaded records whose rows were removed from the frame (otherwise they
        are reported ``skipped``).
    journal : str or os.PathLike, optional
        A JSON-lines file of acknowledged writes: running again with it resumes an
        interrupted run without sending what was applied.
    token : str, optional
        A user token for a ``target`` view behind a login (default: the client's, after
        ``client.login``).
    target : str or tuple of str, optional
        Write through a form or an inline-editing view (``("scene_3", "view_7")``), as
        that view's user; default: the frames' object.
    guard : {"live", "once", "off"} or bool, default "live"
        How the run protects other editors' work (the service has no conditional write).
        ``"live"`` (or True): each batch of records is re-read within ``guard_window``
        seconds before it is written, and every update is re-read again no sooner than
        ``guard_window`` after its write (a value no longer ours is ``overwritten``): the
        run waits that long at its end. ``"once"``: one re-read of every record before
        the first write and no check after (cheaper; an edit made meanwhile can be
        overwritten silently). ``"off"`` (or False): no re-read, but for a record whose
        unedited date part may be a wall time the timezone skips (held as the first valid
        instant): it is re-read so that part goes as the server stores it
        (``plan.walls_reread``). ``plan.estimate_requests(guard=...)`` counts each
        choice's requests.
    max_workers : int, default 8
        Writes in flight at once (the client's pace still bounds them).
    progress : bool, optional
        A bar of writes and the summary line (default: on in notebooks and terminals).
    quota_reserve : int, default 100
        Requests to leave of the application's daily quota (its users share it): the run
        stops sending before what is left would fall below it; the rest is
        ``not_applied`` and ``report.resume`` says how to go on.
    guard_window : float, default 2.0
        Seconds of the live guard (0.5 to 60).

    Returns
    -------
    Report
        One row per record and action (``report.table``), the request counts, the
        conflicts, and the quota beside the plan's requests.

    Raises
    ------
    UsageError
        Before any request: what :func:`diff` refuses (``InvalidValue``,
        ``ReadOnlyField``), a plan made from other frames, a bad ``on_conflict``,
        ``guard``, ``guard_window``, ``quota_reserve`` or ``journal`` path, a file to
        upload that does not exist, a ``target`` that is not the frames' object or a
        view, or a view behind a login without a token (``ConfigurationError``).
    ConflictError
        ``on_conflict="raise"`` and a record changed on the service since it was loaded.
        Every conflict known before the first write raises before any write
        (``err.report`` is None). With the live guard, a record edited after that check
        and found by its batch's re-read once some writes went raises after them: those
        writes stand, ``err.report`` is the run's Report (the changed records
        ``conflict``, the unsent ones ``not_applied``), and the message names the written
        and the unwritten records (docs/live-application.md).
    ServiceError
        A request that is no record's own write failed after the client's retries (the
        schema, the guard's re-reads); a write's failure is its record's status instead.
        Once a request was sent, it carries the run's Report so far as ``err.report``.
    WriteInterrupted
        Ctrl-C (a KeyboardInterrupt subclass, raised in its place): the writes in flight
        were waited for (a second Ctrl-C stops the wait: they end ``unknown``), the
        frames follow every answered write, ``err.report`` says what each record did
        (``not_applied``: not sent), the journal holds every acknowledged write, and
        calling ``write_back`` again sends only the rest. Any other exception raised
        during the run is left as it is, with the same ``report`` attribute.

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> rid = frames.main.index[0]
    >>> frames.main.loc[rid, "Title"] = "Replace the pump"
    >>> write_back(client, frames, dry_run=True).counts       # nothing sent
    {'planned': 1}
    >>> report = write_back(client, frames, progress=True)
    write_back object_3: 1 applied; 3 requests
    >>> report.table[["action", "fields", "status"]]
       action fields   status
    0  update  Title  applied
    >>> read_object(client, "Work Orders").main.loc[rid, "Title"]
    'Replace the pump'
    >>> diff(frames).empty                # the frames followed: nothing left to send
    True
    """
    # 1. validate & plan: everything that can fail without the service fails here
    if on_conflict not in ("skip", "overwrite", "raise"):
        raise UsageError(f"on_conflict must be 'skip', 'overwrite' or 'raise', got "
                         f"{on_conflict!r}")
    refuse_join_result(edited, "write_back")
    reserve = check_reserve(quota_reserve)
    mode = GuardMode.of(guard, guard_window)
    if plan is None:
        plan = diff(edited, base)
    elif plan.edited is not None and plan.edited is not edited:
        raise UsageError("the plan was made from other frames: diff(edited) again")
    layout = ColumnMap.of(plan.source)
    if journal is not None:
        check_journal_path(journal)
    # 2. resolve the target (object or view + token)
    tgt = write_target(client, plan.source, target, token)
    check_upload_files(plan)
    # the reads of other objects' links to the deleted: the schema says how many fields
    # (a run reads it for them anyway; a dry run sends nothing for it)
    links = plan.link_fields
    if links is None and delete_missing and not tgt.is_view \
            and "delete" in plan.actions.values() and (client.schema_read or not dry_run):
        links = len(inbound_connections(client, plan.source.object_key))
    estimate = plan.estimate_requests(guard=mode.mode, delete_missing=delete_missing,
                                      guard_window=mode.window, rate=client.limiter.rate,
                                      on_conflict=on_conflict, link_fields=links)
    needed = estimate.total
    note = quota_note(client, needed, reserve)    # what is left, before the first request
    if dry_run:
        report = dry_run_report(plan, delete_missing, note)
        _summarize(report, tgt.name, progress)
        return report

    run = RunState.start(client, plan, layout, tgt,
                         Journal(journal) if journal is not None else None)
    run.duration = estimate.duration()
    keeper = Keeper(run)                      # what an undo needs, kept as acks come
    if run.jr:
        run.jr.begin(keeper.kept.header)
        run.jr.keep = keeper.entry
    # the live guard's check after the writes is kept back from the writes' claims
    run.gate = gate = QuotaGate(client, reserve, owed=estimate.checks if mode.live else 0)
    try:
        triage(run, delete_missing)           # journal acks, deletes not asked for
        drop_fields_the_view_does_not_take(run)
        live = None
        if mode.mode == "once" or (mode.live and on_conflict == "raise"):
            guard_within_quota(run, on_conflict)   # 3. lost-update guard
        if not mode.rereads:                  # skipped wall times: as the server has them
            keep_skipped_walls(run)
        if mode.live:                         # 3. per batch, just before its writes
            live = LiveBatches(on_conflict, mode.batch(client.limiter.rate), mode.window)
        if note.remaining is None:            # unknown before: the first answer told it
            note = quota_note(client, needed, reserve, learned=True,
                              sent=sum(run.counter.n.values()))
        if not gate.stopped and any(act != "delete" for act in run.todo.values()):
            # the forms' stamp, set by us (stamp.py): the schema, if this client has not
            # read it yet, is one request more, after the guard told the quota
            run.stamp = stamp_for(client, tgt, layout.ctx)
        run.read_links = keeper.keep_links    # other objects' links to the deleted,
        apply(run, max_workers, progress, live)   # 4. uploads + writes, concurrently
        if mode.live:                         # an editor who wrote after us?
            check_written(run, mode.window)
        keeper.finish()                       # before mark_done: earlier processes' acks
        if run.jr and run.halted is None \
                and not any(o.status == "unknown" for o in run.outcomes.values()):
            run.jr.mark_done()
    except BaseException as exc:
        # Ctrl-C or a crash: the frames follow what was answered, the exception carries
        # the Report so far (interrupt.py); the journal is closed below, complete
        cut = cut_short(run, edited, exc, note, keeper)
        if cut is exc:
            raise
        raise cut from None
    finally:
        if run.jr:
            run.jr.close()
    try:
        follow(run, edited)                   # 5. frames follow the server
    except BaseException as exc:
        # every write is answered: the exception carries the whole Report all the same
        cut = cut_short(run, edited, exc, note, keeper)
        if cut is exc:
            raise
        raise cut from None
    note = dataclasses.replace(note, stopped=gate.stopped,
                               reset_at=gate.reset_at or note.reset_at)
    report = make_report([run.outcomes[rid] for rid in plan.actions if rid in run.outcomes]
                         + run.extra, plan, run.conflicts, run.counter,
                         quota=note, kept=keeper.kept)                    # 6. one row each
    _summarize(report, tgt.name, progress)
    if run.halted is not None:
        raise ConflictError(halt_message(run, report), conflicts=report.conflicts,
                            report=report)
    return report


def triage(run: RunState, delete_missing: bool) -> None:
    """Settle what needs no request: deletes not asked for, writes the journal acked."""
    for rid, act in run.plan.actions.items():
        if act == "delete" and not delete_missing:
            run.outcomes[rid] = Outcome(rid, act, [], "skipped",
                                        "row removed from the frame; pass "
                                        "delete_missing=True to delete it")
            continue
        ack = run.jr.acks.get(run.keys[rid]) if run.jr else None
        if ack is not None:
            run.outcomes[rid] = Outcome(rid, act, run.fields_of(rid), "applied",
                                        "already applied (journal)", None, ack.get("new_id"))
            continue
        run.todo[rid] = act
    run.payloads = {rid: dict(run.plan.payloads.get(rid, {})) for rid in run.todo}


def drop_fields_the_view_does_not_take(run: RunState) -> None:
    """A view ignores fields it does not show: report them instead of pretending."""
    tgt = run.tgt
    if not tgt.is_view:
        return
    assert tgt.scene and tgt.view
    keys = run.client.schema().view_field_keys(tgt.scene, tgt.view)
    if keys is None:
        return
    accepted = set(keys)
    for rid in list(run.todo):
        dropped = [k for k in run.payloads[rid] if k not in accepted]
        if not dropped:
            continue
        for k in dropped:
            del run.payloads[rid][k]
        run.extra.append(Outcome(rid, run.todo[rid], dropped, "not_applied",
                                 f"not in the view {tgt.name}"))
        if not run.payloads[rid] and run.todo[rid] == "update":
            del run.todo[rid]


def _summarize(report: Report, name: str, progress: bool | None) -> None:
    """The one-line summary for a person, on stdout: it is the run's result, not a
    diagnostic (notebooks show stderr as an error band); warnings stay warnings."""
    if want_progress(progress):
        print(summary_line(report, name), file=sys.stdout, flush=True)
