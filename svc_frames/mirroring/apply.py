"""The write phase of a run: every table of every object and the mirror's own tables, in
the target's one transaction (all of it is kept, or none).

Per object (``ObjectRun``): the current tables get the inserted and updated records' rows
and lose the updated and deleted ones' (an object listed again after a schema change, or
seen for the first time, has its current tables written anew); the history tables get the
versions (history.py), after the schema changes were followed (schemas.py): new columns
added, the old kind's columns renamed. Then ``svc_mirror_objects`` and ``to_duckdb``'s
``svc_tables``, ``svc_connections`` and ``svc_sources`` are written again whole,
``svc_mirror_runs`` gets the run's row, and ``svc_mirror_schema`` and ``svc_mirror`` are
written again only when they change (a schema version added; the first run).

Usage::

    write_run(target, plan)     # plan: RunPlan built by run.py
"""

from __future__ import annotations

import datetime as dt
import json
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..arrowcols import member
from ..frames import Frames
from ..saved.arrow import frame_to_arrow, table_meta
from ..saved.snapshot import TableKind, TableSpec, meta_tables
from ..schema import Connection
from .assets import write_copies
from .history import versions
from .report import MirrorReport, ObjectReport
from .schemas import FieldChanges
from .state import FORMAT, MirrorState, ObjectState, fit_name, history_name
from .stream import StreamedObject
from .stream import null_free as _null_free
from .target import MirrorTarget, Writer

__all__ = ["ObjectRun", "RunPlan", "write_run", "current_tables"]


@dataclass
class ObjectRun:
    """One object's part of a run: what was read and what changed."""

    key: str
    name: str
    table: str
    report: ObjectReport
    prev: ObjectState | None = None
    frames: Frames | None = None       # the records now (None: the object was removed)
    old: Frames | None = None          # the records as the last run left them
    changes: FieldChanges | None = None
    rebuild: bool = False              # current tables written anew
    inserted: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    # each current table's rows after the run, when ``frames`` holds the changed records
    # only (an incremental run, incremental.py); None: ``frames`` holds every record
    rows: dict[str, int] | None = None
    # per exploded field, the updated records whose rows in it changed (an incremental
    # run compares each table); None: every updated record's rows are written again
    exploded: dict[str, list[str]] | None = None
    stream: StreamedObject | None = None   # its listing written as read (stream.py)

    def updated_in(self, fkey: str) -> list[str]:
        """The updated records whose rows change in a table (``fkey``: an exploded
        field's key, "" the main table): an updated record whose exploded rows are as
        they were keeps them, and their open versions, in that table; a table not
        compared has every updated record's rows written again."""
        if not fkey or self.exploded is None:
            return self.updated
        return self.exploded.get(fkey, self.updated)


@dataclass
class RunPlan:
    """Everything a run writes."""

    state: MirrorState | None
    app_id: str
    run_id: int
    started: dt.datetime
    objects: list[ObjectRun]
    others: dict[str, Frames]           # present objects not in this run, as they are
    connections: list[Connection]
    report: MirrorReport
    copies: pa.Table | None = None      # files downloaded for svc_assets (assets.py)


def current_tables(run: ObjectRun, ids: list[str] | None = None,
                   written: dict[str, pa.Schema] | None = None
                   ) -> tuple[list[TableSpec], dict[str, int]]:
    """The object's current tables: the main one (``id`` its key), then one per exploded
    field, named ``<table>__<field key>`` (a relabel renames nothing); and each table's
    rows. ``ids``: only these records' rows are converted (a refreshed object's inserted
    and updated ones: the target holds the others already, and converting every row would
    make a run cost what the object holds rather than what changed; in an exploded table
    the updated ones whose rows changed there, ``ObjectRun.updated_in``). ``written``: the
    tables' columns, their rows written already (stream.py): no row is converted."""
    assert run.frames is not None and run.frames.source is not None
    frames = run.frames
    fields = run.frames.source.fields
    rows = {run.table: len(frames.main)}
    layout = run.prev.layout if run.prev is not None and ids is not None else {}
    tables = layout.get("tables", {})
    out = [TableSpec(run.table, written[run.table].empty_table() if written else
                     _rows_of(frames.main, ids, None, layout.get("main", {}).get("dtypes")),
                     "object", run.key,
                     primary_key=["id"], named_from=run.name)]
    for fkey, tdf in frames.tables.items():
        spec = next((f for f in fields if f.key == fkey), None)
        kind: TableKind = ("connection" if spec is not None and spec.kind == "connection"
                           else "intervals" if spec is not None and spec.kind == "timer"
                           else "choices")
        name = fit_name(f"{run.table}__{fkey}")
        rows[name] = len(tdf)
        tids = ids if ids is None or run.exploded is None else [
            *run.inserted, *run.updated_in(fkey)]
        out.append(TableSpec(name, written[name].empty_table() if written else
                             _rows_of(tdf, tids, "record_id",
                                      tables.get(fkey, {}).get("dtypes")), kind,
                             run.key, fkey, [], [("record_id", run.table, "id")],
                             spec.label if spec is not None else fkey))
    rows.update(run.rows or {})
    return out, rows


def _rows_of(df: pd.DataFrame, ids: list[str] | None, column: str | None,
             dtypes: dict[str, str] | None) -> pa.Table:
    """``df`` as Arrow, or only the rows of ``ids`` (by the index, or by ``column``).
    A text column empty in every row of the part is text still (Arrow alone would take
    it for a list column, as an empty list column is): ``dtypes``, the layout the last
    run wrote, says which it is; without it the whole is converted and the rows taken."""
    if ids is None:
        return frame_to_arrow(df)
    wanted = pd.Index(ids, dtype=object)
    part = (df[member(df.index, wanted)] if column is None
            else df[member(df[column], wanted)].reset_index(drop=True))
    data = frame_to_arrow(part)
    for c in part.columns:
        if part[c].dtype != object or part[c].map(_filled).any():
            continue
        if dtypes is None or str(c) not in dtypes:
            return rows_for(frame_to_arrow(df), "id" if column is None else column, ids)
        if dtypes[str(c)] != "list":
            i = data.column_names.index(str(c))
            data = data.set_column(i, pa.field(str(c), pa.large_string()),
                                   pa.nulls(data.num_rows, pa.large_string()))
    return data


def _filled(value: object) -> bool:
    return value is not None and value is not pd.NA and not (
        isinstance(value, float) and value != value)


def layout_of(specs: list[TableSpec]) -> dict[str, Any]:
    """The object's tables and column types, as ``svc_mirror_objects.layout`` keeps them."""
    main, *rest = specs
    return {"main": {"dtypes": table_meta(main.data)["dtypes"]},
            "tables": {t.field: {"table": t.name, "dtypes": table_meta(t.data)["dtypes"],
                                 "kind": t.kind} for t in rest}}


def rows_for(data: pa.Table, column: str, ids: list[str]) -> pa.Table:
    """The rows of ``data`` whose ``column`` is one of ``ids``, in ``data``'s order."""
    if not ids:
        return data.slice(0, 0)
    mask = pa.compute.is_in(data.column(column), value_set=pa.array(ids, pa.string()))
    return data.filter(mask)


def write_object(w: Writer, target: MirrorTarget, have: set[str], run: ObjectRun,
                 when: dt.datetime, run_id: int
                 ) -> tuple[list[TableSpec], dict[str, int], list[dict[str, Any]]]:
    """One object's tables (module docstring); its current TableSpecs (a refreshed
    object's: its changed rows only), each table's rows, and the history column renames
    made ({table, old, new})."""
    prev_tables = ([(run.prev.table_name, "id")] + [
        (t["table"], "record_id") for t in run.prev.layout.get("tables", {}).values()]
        if run.prev is not None else [])
    renames: list[dict[str, Any]] = []
    if run.frames is None:   # removed from the application: every record closed
        for name, col in prev_tables:
            w.drop(name)
            if history_name(name) in have:
                w.close_versions(history_name(name), col, run.deleted, when)
        _delete_markers(w, run, when, run_id)
        return [], {}, renames
    # a listing written as it was read (stream.py) has its tables and versions already
    streamed = run.stream is not None and run.stream.whole
    specs, rows = current_tables(run, None if run.rebuild else run.inserted + run.updated,
                                 run.stream.schemas if run.stream and streamed else None)
    if streamed:
        return specs, rows, renames
    new_names = {t.name for t in specs}
    if run.rebuild:
        for name, col in prev_tables:
            if name not in new_names:
                w.drop(name)
                if history_name(name) in have:   # a removed field's rows: closed
                    w.close_versions(history_name(name), col, run.deleted + run.updated
                                     + [str(i) for i in run.frames.main.index], when)
        for t in specs:
            w.create(t.name, _null_free(t.data.schema), t.primary_key)
            w.insert(t.name, t.data)
    else:
        for t in specs:
            col = "id" if t.kind == "object" else "record_id"
            w.delete(t.name, col, run.updated_in(t.field) + run.deleted)
            w.insert(t.name, t.data)   # the inserted and updated records' rows only
    for t in specs:
        col = "id" if t.kind == "object" else "record_id"
        updated = run.updated_in(t.field)
        hist = history_name(t.name)
        shape = versions(t.data.slice(0, 0), when, run_id, "insert").schema
        if hist not in have:
            w.create(hist, _null_free(shape))
        elif run.rebuild:
            renames += _follow_schema(w, target, hist, shape, run.changes)
        w.close_versions(hist, col, updated + run.deleted, when)
        w.insert(hist, pa.concat_tables([   # one statement for both
            versions(rows_for(t.data, col, run.inserted), when, run_id, "insert"),
            versions(rows_for(t.data, col, updated), when, run_id, "update")]))
    _delete_markers(w, run, when, run_id)
    return specs, rows, renames


def _delete_markers(w: Writer, run: ObjectRun, when: dt.datetime, run_id: int) -> None:
    """A ``delete`` version per deleted record: its last values, an empty interval."""
    if not run.deleted or run.old is None:
        return
    gone = run.old.main.loc[[i for i in run.deleted if i in run.old.main.index]]
    w.insert(history_name(run.table if run.prev is None else run.prev.table_name),
             versions(frame_to_arrow(gone), when, run_id, "delete", valid_to=when))


def _follow_schema(w: Writer, target: MirrorTarget, hist: str, shape: pa.Schema,
                   changes: FieldChanges | None) -> list[dict[str, Any]]:
    """The history table's columns after a schema change: the old kind's columns renamed
    ``<column>__<old kind>``, the new columns added (empty in earlier versions)."""
    have = list(target.schema(hist).names)
    renames: list[dict[str, Any]] = []
    for key, (old_kind, _) in (changes.rekinded.items() if changes else ()):
        for col in [c for c in have if c == key or c.startswith(f"{key}.")]:
            new = f"{col}__{old_kind}"
            n = 2
            while new in have:
                new, n = f"{col}__{old_kind}_{n}", n + 1
            w.rename_column(hist, col, new)
            have[have.index(col)] = new
            renames.append({"table": hist, "old": col, "new": new})
    missing = [f for f in _null_free(shape) if f.name not in have]
    if missing:
        w.add_columns(hist, pa.schema(missing))
    return renames


def write_run(target: MirrorTarget, plan: RunPlan, writer: Writer | None = None) -> None:
    """The whole run in one transaction (module docstring): ``writer``'s, when the run
    opened it already (stream.py), else one opened here."""
    when = plan.started
    have = target.tables()
    state = plan.state
    objects = {k: o for k, o in (state.objects.items() if state else ())}
    schema_rows: list[dict[str, Any]] = (
        [{str(k): v for k, v in r.items()} for r in state.schema.to_dict("records")]
        if state is not None and len(state.schema) else [])
    all_specs: list[TableSpec] = []
    all_rows: dict[str, int] = {}
    frames_now: dict[str, Frames] = dict(plan.others)
    versioned = state is None   # svc_mirror_schema changes: a version added, a rename
    with nullcontext(writer) if writer is not None else target.transaction() as w:
        for run in plan.objects:
            specs, rows, renames = write_object(w, target, have, run, when, plan.run_id)
            all_rows.update(rows)
            versioned = versioned or bool(renames)
            for r in renames:   # earlier versions' columns now live under the new names
                for row in schema_rows:
                    cols = json.loads(row["columns"])
                    for part in cols.values():
                        for frame_col, hist_col in list(part.get("columns", {}).items()):
                            if hist_col == r["old"] and part["history"] == r["table"]:
                                part["columns"][frame_col] = r["new"]
                    row["columns"] = json.dumps(cols)
            all_specs += specs
            version = objects[run.key].schema_version if run.key in objects else 0
            source = (run.frames.source.to_dict() if run.frames is not None
                      and run.frames.source is not None else
                      (run.prev.source if run.prev is not None else {}))
            # a refreshed object's specs hold its changed rows only: its layout is the
            # last run's (its columns did not change, or it would have been listed anew)
            layout = (layout_of(specs) if specs and (run.rebuild or run.prev is None)
                      else run.prev.layout if run.prev else {})
            if run.frames is not None:
                frames_now[run.key] = run.frames
            new_version = run.prev is None or run.frames is None or bool(
                run.changes is not None and run.changes.any)
            if new_version:
                versioned = True
                version += 1
                schema_rows.append({
                    "object_key": run.key, "version": version, "run_id": plan.run_id,
                    "time": when, "present": run.frames is not None,
                    "source": json.dumps(source), "layout": json.dumps(layout),
                    "columns": json.dumps(_columns_map(layout)),
                    "changes": json.dumps(run.report.schema_changes)})
            objects[run.key] = ObjectState(
                run.key, run.name, run.table, run.frames is not None, source, layout,
                (run.rows or {}).get(run.table, len(run.frames.main))
                if run.frames is not None else 0, version)
        for key, frames in plan.others.items():
            run = ObjectRun(key, objects[key].name, objects[key].table_name,
                            ObjectReport(key, objects[key].name, objects[key].table_name),
                            frames=frames)
            specs, rows = current_tables(run)
            all_specs += specs
            all_rows.update(rows)
        write_copies(w, target, plan.copies)
        _write_meta(w, plan, objects, schema_rows if versioned else None, all_specs,
                    all_rows, frames_now)


def _columns_map(layout: dict[str, Any]) -> dict[str, Any]:
    """Each table's frame columns -> history columns (the same names until a kind change
    renames the old ones)."""
    out: dict[str, Any] = {
        "main": {"history": None, "columns": {c: c for c in layout["main"]["dtypes"]}}}
    for fkey, t in layout.get("tables", {}).items():
        out[fkey] = {"history": history_name(t["table"]),
                     "columns": {c: c for c in t["dtypes"]}}
    return out


def _write_meta(w: Writer, plan: RunPlan, objects: dict[str, ObjectState],
                schema_rows: list[dict[str, Any]] | None, specs: list[TableSpec],
                rows: dict[str, int], frames_now: dict[str, Frames]) -> None:
    """The mirror's own tables and to_duckdb's three, written whole where they change: a
    target's ``svc_mirror`` (its application and format) is kept as it is, its
    ``svc_mirror_runs`` gets the run's row, its ``svc_mirror_schema`` is kept unless a
    schema version was added or a history column renamed (``schema_rows`` None)."""
    held = plan.state is not None
    for row in schema_rows or ():   # the main history's name, known once the table is
        cols = json.loads(row["columns"])
        if cols["main"].get("history") is None:
            cols["main"]["history"] = history_name(objects[row["object_key"]].table_name)
            row["columns"] = json.dumps(cols)
    ts = pa.timestamp("us", tz="UTC")
    finished = dt.datetime.now(dt.timezone.utc)
    plan.report.finished = finished.isoformat(timespec="seconds")
    runs: list[dict[str, Any]] = [{"run_id": plan.run_id, "started": plan.started,
                                   "finished": finished, "report": plan.report.to_json()}]
    tables: dict[str, pa.Table] = {
        "svc_mirror": pa.table({"key": ["app_id", "format"], "value": [plan.app_id, FORMAT]}),
        "svc_mirror_runs": pa.table({
            "run_id": pa.array([int(r["run_id"]) for r in runs], pa.int64()),
            "started": pa.array([_utc(r["started"]) for r in runs], ts),
            "finished": pa.array([_utc(r["finished"]) for r in runs], ts),
            "report": pa.array([r["report"] for r in runs], pa.string())}),
        "svc_mirror_objects": pa.table({
            "object_key": [o.object_key for o in objects.values()],
            "name": [o.name for o in objects.values()],
            "table_name": [o.table_name for o in objects.values()],
            "present": pa.array([o.present for o in objects.values()], pa.bool_()),
            "source": [json.dumps(o.source) for o in objects.values()],
            "layout": [json.dumps(o.layout) for o in objects.values()],
            "rows": pa.array([o.rows for o in objects.values()], pa.int64()),
            "schema_version": pa.array([o.schema_version for o in objects.values()],
                                       pa.int64())}, schema=_OBJECTS),
    }
    if schema_rows is not None:
        tables["svc_mirror_schema"] = pa.table({
            "object_key": [r["object_key"] for r in schema_rows],
            "version": pa.array([int(r["version"]) for r in schema_rows], pa.int64()),
            "run_id": pa.array([int(r["run_id"]) for r in schema_rows], pa.int64()),
            "time": pa.array([_utc(r["time"]) for r in schema_rows], ts),
            "present": pa.array([bool(r["present"]) for r in schema_rows], pa.bool_()),
            "source": [r["source"] for r in schema_rows],
            "layout": [r["layout"] for r in schema_rows],
            "columns": [r["columns"] for r in schema_rows],
            "changes": [r["changes"] for r in schema_rows]}, schema=_SCHEMA)
    for name, data in tables.items():
        if held and name == "svc_mirror":
            continue
        if not (held and name == "svc_mirror_runs"):   # else the run's row appended
            w.create(name, data.schema)
        w.insert(name, data)
    present = {k: o for k, o in objects.items() if o.present}
    app = _Described(frames_now, {k: o.name for k, o in present.items()}, plan.connections)
    names = {k: present[k].table_name for k in frames_now}
    conn_tables = {t.field: t.name for t in specs if t.kind == "connection"}
    for t in meta_tables(app, names, conn_tables, specs, rows):
        w.create(t.name, _null_free(t.data.schema))
        w.insert(t.name, t.data)


_OBJECTS = pa.schema([("object_key", pa.string()), ("name", pa.string()),
                      ("table_name", pa.string()), ("present", pa.bool_()),
                      ("source", pa.string()), ("layout", pa.string()),
                      ("rows", pa.int64()), ("schema_version", pa.int64())])
_SCHEMA = pa.schema([("object_key", pa.string()), ("version", pa.int64()),
                     ("run_id", pa.int64()), ("time", pa.timestamp("us", tz="UTC")),
                     ("present", pa.bool_()), ("source", pa.string()),
                     ("layout", pa.string()), ("columns", pa.string()),
                     ("changes", pa.string())])


def _utc(value: Any) -> dt.datetime:
    return pd.Timestamp(value).tz_convert("UTC").to_pydatetime() if pd.Timestamp(
        value).tzinfo else pd.Timestamp(value).tz_localize("UTC").to_pydatetime()


class _Described:
    """What ``snapshot.meta_tables`` reads of an App (its AppLike): the frames, names and
    connections of the objects the mirror holds now."""

    def __init__(self, frames: dict[str, Frames], names: dict[str, str],
                 connections: list[Connection]) -> None:
        self.frames = frames
        self.names = names
        self.connections = connections

    def keys(self) -> list[str]:
        return list(self.frames)

    def items(self) -> list[tuple[str, Frames]]:
        return list(self.frames.items())

    def name(self, key: str) -> str:
        return self.names.get(key) or key
