"""``mirror``: bring a target up to date with the application, in numbered phases.

1. Check the arguments and the target (reachable, writable, a mirror of this application,
   its tables as the last run left them): before any request to the service.
2. Take the target's lock for the whole run (``wait`` seconds, then ``TargetBusy``).
3. Read the schema (one request) and compare each object's fields with the last run's;
   ``schema="stop"`` refuses a field of another kind here, before anything is written.
4. Read each object, one after another (each at the client's full pace): an object the
   last run mirrored with the same fields is refreshed (``refresh``: the stamp window,
   the deletion search, the periodic sweep); a new object, or one whose fields changed, is
   listed in full and compared with the last run's state.
5. Write everything in one transaction (apply.py). An object listed for the first time
   has its pages written as they come, in that same transaction, opened at its first
   page (stream.py): the writes overlap the paced reads.

Usage::

    report = mirror(client, "app.duckdb")
    print(report)     # mirror run 2 to app.duckdb: 3 objects, 1 inserted, 3 updated, ...
"""

from __future__ import annotations

import datetime as dt
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from ..application import connections_of, resolve_objects
from ..arrowcols import member
from ..errors import TargetMismatch, UsageError
from ..frames import Frames
from ..kinds.base import FieldSpec
from ..names import sql_name
from ..records import Client
from ..refreshing.policy import DEFAULT_SWEEP_EVERY, check_sweep_every, refresh
from .apply import ObjectRun, RunPlan, write_run
from .downloads import fetch_copies
from .history import compare
from .incremental import HeadStart, read_changes
from .past import open_versions
from .report import MirrorReport, ObjectReport, display_name
from .schemas import SCHEMA_MODES, compare_fields, refuse_kind_changes
from .state import META_TABLES, MirrorState, fit_name, history_name
from .stream import RunWrites, StreamedObject, read_listing
from .target import MirrorTarget, open_target

__all__ = ["mirror"]


def mirror(client: Client, target: str | os.PathLike[str], objects: Sequence[str] | None = None,
           *, schema: str = "stop", sweep_every: int = DEFAULT_SWEEP_EVERY,
           wait: float = 0.0, repair: bool = False, rows_per_page: int = 1000,
           assets: bool = False) -> MirrorReport:
    """Bring a mirror (DuckDB, PostgreSQL or Parquet) up to date with the application.

    The target holds the current state (a table per object, its exploded tables, the
    ``svc_*`` tables ``to_duckdb`` writes) and every version of every record
    (``<table>__history``: the values, ``valid_from``, ``valid_to``, ``run_id``,
    ``change``); docs/mirror.md says what each run costs and guarantees.

    Parameters
    ----------
    client : Client
        The application to mirror.
    target : str or os.PathLike
        A DuckDB file (a path), a directory of Parquet datasets (an existing directory or
        a path ending in ``/``), or ``postgresql://user@host/db``.
    objects : list of str, optional
        The objects to mirror, by key or name (default: all; an object the application no
        longer has is then followed as removed).
    schema : {"stop", "evolve"}, default "stop"
        What a field of another kind does: refuse the run naming it, or keep both kinds
        in the history.
    sweep_every : int, default 10
        Every Nth run of an object lists all its records (refresh's sweep: finds edits
        that carry no stamp); 0: never.
    wait : float, default 0.0
        Seconds to wait for another run holding the target.
    repair : bool, default False
        Write again the current tables of a target whose tables were edited by hand
        (each object listed in full and compared with its history).
    rows_per_page : int, default 1000
        Records per request of a full listing.
    assets : bool, default False
        Keep a copy of every file and uploaded image in the target (``svc_assets``;
        mirroring/assets.py): each run downloads those of the records it inserted or
        whose file changed, once per file.

    Returns
    -------
    MirrorReport
        Per object: inserted, updated, deleted, unchanged, schema changes, requests, time.

    Raises
    ------
    UsageError
        Before any request: a bad argument, or a target that cannot be reached or written.
    TargetMismatch
        Before any request: the target mirrors another application (both named), is not a
        mirror, or its tables were edited by hand (without ``repair``).
    TargetBusy
        Another run holds the target (its holder named); nothing sent.
    SchemaChanged
        ``schema="stop"`` and a field's kind changed; nothing written.
    ServiceError
        A request failed; nothing written.

    Examples
    --------
    >>> report = mirror(client, tmp_path / "app.duckdb")
    >>> report.run, report.total("inserted")
    (1, 90)
    >>> mirror(client, tmp_path / "app.duckdb").total("unchanged")
    90
    """
    t0 = time.monotonic()
    if not isinstance(client, Client):
        raise UsageError(f"mirror needs a Client, got {type(client).__name__}")
    if schema not in SCHEMA_MODES:
        raise UsageError(f"schema must be one of {', '.join(SCHEMA_MODES)}, got {schema!r}")
    every = check_sweep_every(sweep_every)
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or wait < 0:
        raise UsageError(f"wait must be a number of seconds >= 0, got {wait!r}")
    if isinstance(rows_per_page, bool) or not isinstance(rows_per_page, int) \
            or not 1 <= rows_per_page <= 1000:
        raise UsageError(f"rows_per_page must be an integer from 1 to 1000, got "
                         f"{rows_per_page!r}")
    if not isinstance(assets, bool):
        raise UsageError(f"assets must be True or False, got {assets!r}")
    if isinstance(objects, str):
        objects = [objects]
    tgt = open_target(target)
    try:
        tgt.check()
        with tgt.lock(wait):
            state = MirrorState.read(tgt)
            if state is not None:
                if state.app_id != client.app_id:
                    raise TargetMismatch(
                        f"{tgt.name} mirrors application {state.app_id}; the client is for "
                        f"application {client.app_id}: mirror it to another target")
                if not repair:
                    state.check_tables(list(state.objects))
            with RunWrites(tgt) as writes:   # the run's one transaction (stream.py)
                return _run(client, tgt, state, objects, schema, every, repair,
                            rows_per_page, t0, assets, writes)
    finally:
        tgt.close()


def _run(client: Client, tgt: MirrorTarget, state: MirrorState | None,
         objects: Sequence[str] | None, schema: str, every: int, repair: bool, rpp: int,
         t0: float, assets: bool, writes: RunWrites) -> MirrorReport:
    started = dt.datetime.now(dt.timezone.utc)
    sent = client.request_count
    # the first object's stamp window beside the schema's request (incremental.py)
    head = HeadStart.begin(client, state, objects, every) if not repair else None
    try:
        return _read_and_write(client, tgt, state, objects, schema, every, repair, rpp, t0,
                               assets, writes, started, sent, head)
    finally:
        if head is not None:
            head.close()


def _read_and_write(client: Client, tgt: MirrorTarget, state: MirrorState | None,
                    objects: Sequence[str] | None, schema: str, every: int, repair: bool,
                    rpp: int, t0: float, assets: bool, writes: RunWrites,
                    started: dt.datetime, sent: int, head: HeadStart | None
                    ) -> MirrorReport:
    """Phases 3 to 5 (module docstring)."""
    try:
        doc = client.schema(refresh=True)
    finally:
        if head is not None:
            head.schema_answered()
    if doc is None:
        raise UsageError("the service does not expose its schema: the mirror needs it")
    listed = {str(o["key"]): o for o in doc.get("objects") or [] if o.get("key")}
    keys = resolve_objects(doc, objects)
    prev = state.objects if state is not None else {}
    report = MirrorReport(run=(state.last_run if state else 0) + 1,
                          target=display_name(tgt.name),
                          started=started.isoformat(timespec="seconds"))
    taken = {o.table_name for o in prev.values()} | set(META_TABLES) | {
        "svc_tables", "svc_connections", "svc_sources"}
    runs: list[ObjectRun] = []
    for key in keys:
        name = str(listed[key].get("name") or key)
        old = prev.get(key)
        table = old.table_name if old is not None else _table_name(name, key, taken)
        run = ObjectRun(key, name, table, ObjectReport(key, name, table), prev=old)
        if old is not None and old.present:
            run.changes = compare_fields(key, old.source.get("fields", []),
                                         listed[key].get("fields") or [])
            run.report.schema_changes = run.changes.describe()
        elif old is not None:
            run.report.schema_changes = ["object added again"]
            run.prev = None
        else:
            run.report.schema_changes = ["object added"] if state is not None else []
        runs.append(run)
    if schema == "stop":
        refuse_kind_changes([r.changes for r in runs if r.changes is not None],
                            {r.key: r.name for r in runs}, report.target)
    if objects is None:   # objects gone from the application
        for key, old in prev.items():
            if old.present and key not in listed:
                run = ObjectRun(key, old.name, old.table_name,
                                ObjectReport(key, old.name, old.table_name,
                                             schema_changes=["object removed"]), prev=old)
                runs.append(run)
    have = tgt.tables()
    for i, run in enumerate(runs):
        if run.prev is None and not {run.table, history_name(run.table)} & have:
            # listed for the first time: its pages written as they come
            run.stream = StreamedObject(writes, run.table, started, report.run)
        _read_object(client, state, run, every, repair, rpp, head if i == 0 else None)
        report.objects[run.key] = run.report
    if head is not None:
        head.close()   # not taken: its requests were spent, nothing of it is written
    in_run = {r.key for r in runs}
    others = {k: state.frames(k) for k, o in prev.items()
              if o.present and k not in in_run} if state is not None else {}
    copies = fetch_copies(client, tgt, runs, report.run, state) if assets else None
    report.requests = client.request_count - sent
    report.seconds = time.monotonic() - t0
    plan = RunPlan(state, client.app_id, report.run, started, runs, others,
                   connections_of(doc), report, copies)
    write_run(tgt, plan, writes.writer)
    report.seconds = time.monotonic() - t0
    return report


def _table_name(name: str, key: str, taken: set[str]) -> str:
    """A new object's table: its name as SQL (its key added when taken); kept for good."""
    base = fit_name(sql_name(name or key))
    out = base if base not in taken else fit_name(sql_name(f"{base}_{key}"))
    taken.add(out)
    return out


def _read_object(client: Client, state: MirrorState | None, run: ObjectRun, every: int,
                 repair: bool, rpp: int, head: HeadStart | None = None) -> None:
    """Step 4 for one object: refresh, or a full listing compared with the last state."""
    t = time.monotonic()
    sent = client.request_count
    rep = run.report
    read = state.rows_read if state is not None else 0
    # the changed records alone, when refresh would ask for few (incremental.py)
    few = state is not None and not repair and read_changes(client, state, run, every, head)
    if run.prev is not None and state is not None and not few:
        # repair: the tables may be edited by hand; the history says what they held
        run.old = open_versions(state, run.key) if repair else state.frames(run.key)
    if few:
        assert run.frames is not None
        _relabel(run.frames, run)
    elif run.prev is not None and run.changes is None:
        # removed from the application: every record goes
        run.deleted = [str(i) for i in run.old.main.index] if run.old is not None else []
    elif (run.prev is not None and run.old is not None and run.changes is not None
          and not run.changes.needs_full_load and not repair):
        frames = run.old
        run.old = frames.snapshot()
        with warnings.catch_warnings():   # the report says why everything was listed
            warnings.simplefilter("ignore")
            got = refresh(client, frames, sweep_every=every)
        _relabel(frames, run)
        run.frames = frames
        # the frames before and after say what came and went; refresh says what changed
        # (a record listed twice, or added and dropped within the refresh, counts once)
        # (index operations, not a loop over every record: a run costs what changed)
        before, after = run.old.main.index, frames.main.index
        run.inserted = [str(i) for i in after[~member(after, before)]]
        run.deleted = [str(i) for i in before[~member(before, after)]]
        changed = pd.Index(list(dict.fromkeys(got.changed)), dtype=object)
        run.updated = [str(i) for i in changed[member(changed, before)
                                               & member(changed, after)]]
        rep.full, rep.reason = got.full, got.reason
    else:
        run.frames = read_listing(client, run.key, rpp, run.stream)
        run.rebuild = True
        rekinded = run.changes.rekinded if run.changes is not None else {}
        run.inserted, run.updated, run.deleted = compare(run.old, run.frames, rekinded)
        rep.full = True
        rep.reason = ("first run" if run.prev is None else "repair" if repair
                      else "schema change")
    rep.inserted, rep.updated, rep.deleted = (len(run.inserted), len(run.updated),
                                              len(run.deleted))
    now = len(run.frames.main) if run.frames is not None else 0
    now = (run.rows or {}).get(run.table, now)
    rep.unchanged = now - rep.inserted - rep.updated
    rep.rows_read = (state.rows_read if state is not None else 0) - read
    rep.requests = client.request_count - sent
    if head is not None and head.taken:   # its window began beside the schema's request
        rep.requests = client.request_count - head.sent - 1
    if run.frames is not None and run.frames.source is not None:
        # the next run begins this object's window before the schema's answer by it
        run.frames.source.load = {**(run.frames.source.load or {}),
                                  "stamped_field": client.schema().stamped_field(run.key)}
    rep.seconds = time.monotonic() - t


def _relabel(frames: Frames, run: ObjectRun) -> None:
    """The refreshed frames' source takes the labels of now (a relabel moves no column)."""
    if frames.source is None or run.changes is None or not run.changes.relabelled:
        return
    new: list[FieldSpec] = []
    for spec in frames.source.fields:
        label = run.changes.relabelled.get(spec.key, (None, spec.label))[1]
        new.append(replace(spec, name=label))
    frames.source.fields = new

