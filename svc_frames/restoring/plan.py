"""restore: the plan bringing records of one object back to their state at a past time,
from a mirror's history, and its application through ``write_back`` (its live guard,
plan, report and journal: no second writer).

Usage::

    p = restore(client, "app.duckdb", "2026-11-27 18:00", "Work Orders")   # nothing sent
    p.changes; p.lost; p.created_after        # what it would send, what cannot come back
    report = p.apply(journal="restore.jsonl")
    p.id_map                                  # deleted record's old id -> its new id
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pandas as pd

from ..errors import TargetMismatch, UsageError
from ..frames import Frames, Source
from ..mirroring.assets import asset_copies
from ..mirroring.past import object_at, open_mirror, read_time
from ..mirroring.state import MirrorState, history_name
from ..records import Client
from ..undoing.reversal import Reversal
from ..writeback.diff import diff
from ..writeback.guard import fetch_all, reread
from ..writeback.plan import NEW_ID_PREFIX, ColumnMap, reread_requests
from ..writeback.report import Report, RequestCounter
from ..writeback.rereads import list_pages
from ..writeback.target import where as where_of
from ..writeback.values import decode_records
from .build import Copies, Inbound, RestoreFrames
from .select import selected_ids

__all__ = ["restore", "RestorePlan"]


def restore(client: Client, mirror: str | os.PathLike[str], when: Any, object: str,
            records: Any = None, *, delete_created: bool = False) -> RestorePlan:
    """Plan bringing records of one object back to their state at ``when``; nothing sent.

    The plan is made from the mirror's history.
    Each record of both times goes back to its cells and connections at ``when``; each
    record deleted since is created again (a new id: ``RestorePlan.id_map`` after
    ``apply``) with its own connections as they were, and the records of any object that
    pointed at it then get its new id added to their lists as they are when applied; the
    records created after ``when`` are listed (``created_after``) and deleted only with
    ``delete_created=True``. ``RestorePlan.apply`` sends it through ``write_back`` and its
    live guard, which compares the service with what the mirror last saw: a cell someone
    changed after the mirror's last run is a ``conflict``, reported and left as it is
    unless forced for that record. Files and images come back from the mirror's copies
    (``mirror(..., assets=True)``). What cannot come back is listed before any write
    (``RestorePlan.lost``: computed fields, auto-increment numbers, passwords, fields no
    longer in the schema or of another kind, files the mirror keeps no copy of,
    connections to records deleted since and not restored).

    Parameters
    ----------
    client : Client
        The application the mirror copies.
    mirror : str or os.PathLike
        A mirror target (what ``mirror`` writes to: a DuckDB path, a Parquet directory, a
        ``postgresql://`` URL). Run ``mirror`` just before: the plan starts from what the
        mirror last saw.
    when : datetime, pandas.Timestamp or str
        The time to go back to (a naive time is UTC), between the mirror's first run and
        now.
    object : str
        The object (key or name).
    records : None, list of str, or filter, optional
        The records to restore: all (None), these ids, or a filter (the toolkit's filter
        conditions: ``Field(...)`` rules, ``all_of``/``any_of``, or their dicts), matched
        against the records as they were at ``when`` and as last seen.
    delete_created : bool, default False
        Delete the records created after ``when`` (their guard compares every field).

    Returns
    -------
    RestorePlan
        ``plan`` (a write-back Plan), ``changes``, ``lost``, ``created_after``,
        ``apply()``.

    Raises
    ------
    TargetMismatch
        The mirror copies another application (both named).
    UsageError
        Before any write: ``mirror`` is no mirror; ``when`` is not a time, is before the
        mirror's first run or in the future; the mirror never saw ``object``, or it is no
        longer in the application; ids the mirror never saw (named); a filter on a field
        the object does not have, or with an operator that cannot be matched against the
        mirror.

    Examples
    --------
    >>> target = tmp_path / "app.duckdb"
    >>> _ = mirror(client, target)
    >>> before = pd.Timestamp.now(tz="UTC")
    >>> links = read_object(client, "Work Orders", columns="keys").tables["field_41"]
    >>> gone = links.groupby("connected_id").size().index[:2]    # two parts in use
    >>> users = links[links["connected_id"].isin(gone)]
    >>> for rid in gone:
    ...     _ = client.delete_record("object_2", rid)           # by mistake
    >>> _ = mirror(client, target)
    >>> p = restore(client, target, before, "Parts")
    >>> p.counts, len(p.frames.relinks) == users["record_id"].nunique()
    ({'update': 0, 'create': 2, 'delete': 0}, True)
    >>> sorted(p.lost["field"])            # the auto-increment "Part No" of each
    ['field_11', 'field_11']
    >>> report = p.apply()
    >>> sorted(p.id_map) == sorted(gone)
    True
    >>> now = read_object(client, "Work Orders", columns="keys").tables["field_41"]
    >>> int(now["connected_id"].isin([p.id_map[g] for g in gone]).sum()) == len(users)
    True
    """
    at = read_time(when, "when")
    if not isinstance(object, str) or not object:
        raise UsageError(f"object must be an object's key or name, got {object!r}")
    tgt, state = open_mirror(mirror)
    try:
        return _plan(client, state, mirror, at, object, records, delete_created)
    finally:
        tgt.close()


def _plan(client: Client, state: MirrorState, mirror: Any, at: pd.Timestamp, name: str,
          records: Any, delete_created: bool) -> RestorePlan:
    where = os.fspath(mirror) if isinstance(mirror, (str, os.PathLike)) else str(mirror)
    if state.app_id != client.app_id:
        raise TargetMismatch(f"the mirror {where} copies application {state.app_id}, not "
                             f"the client's application {client.app_id}: nothing was sent")
    first, last_start = _run_span(state)
    now = pd.Timestamp.now(tz="UTC")
    if first is None:
        raise UsageError(f"the mirror {where} holds no run: nothing to restore from")
    if at < first:
        raise UsageError(f"when={at.isoformat()} is before the mirror's first run "
                         f"({first.isoformat()}): {where} knows nothing of that time")
    if at > now:
        raise UsageError(f"when={at.isoformat()} is in the future (now is "
                         f"{now.isoformat(timespec='seconds')})")
    names = {o.name: k for k, o in state.objects.items()}
    key = name if name in state.objects else names.get(name)
    if key is None:
        raise UsageError(f"the mirror {where} never saw an object {name!r}; it holds "
                         + ", ".join(f"{k} ({o.name})" for k, o in state.objects.items()))
    then = object_at(state, key, at)
    if then is None:
        raise UsageError(f"{key} ({state.objects[key].name}) was not mirrored at "
                         f"{at.isoformat()} in {where}")
    last = object_at(state, key, None)
    if last is None or last.source is None or then.source is None:    # removed from the application since: nothing to write to
        raise UsageError(f"{key} ({state.objects[key].name}) is no longer in the "
                         "application (the mirror's last run saw it removed)")
    schema = client.schema()
    fields = schema.object_fields(key) if schema.available else None
    if fields is None:
        if schema.available:
            raise UsageError(f"{key} ({state.objects[key].name}) is no longer in the "
                             "application: nothing can be restored")
        fields = list(last.source.fields)
    seen = _ever_seen(state, key)
    scope = selected_ids(records, then, last, seen, key)
    then_kinds = {f.key: f.kind for f in then.source.fields}
    kept = [f for f in fields if then_kinds.get(f.key) == f.kind]
    rows = int(len(last.main) * 1.25) + 100   # sizes the guard's re-reads (no request)
    source = Source("object", key, kept, timezone=last.source.timezone or schema.timezone_name,
                    app_id=client.app_id, base_url=client.base_url, columns="keys",
                    name=schema.object_name(key) or state.objects[key].name,
                    load={"object_records": rows})
    alive: dict[str, set[str] | None] = {}
    inbound: list[Inbound] = []
    for conn in schema.connections():
        for obj in (conn.from_object, conn.to_object):
            if obj not in alive:
                frames = last if obj == key else (
                    object_at(state, obj, None) if obj in state.objects else None)
                alive[obj] = None if frames is None else set(frames.main.index.astype(str))
        if conn.to_object != key:
            continue
        src = then if conn.from_object == key else (
            object_at(state, conn.from_object, at)
            if conn.from_object in state.objects else None)
        lists = None if src is None else _lists_of(src, conn.field)
        inbound.append(Inbound(conn.from_object, conn.field, conn.label, lists,
                               alive.get(conn.from_object)))
    built = RestoreFrames.build(source, then, last, then_fields=then.source.fields,
                                scope=scope, delete_created=delete_created,
                                inbound=inbound, alive=alive,
                                copies=_copies(state, source, then, scope, at))
    never = sorted(set(scope or ()) - set(then.main.index) - set(last.main.index))
    plan = diff(built.frames.edited, built.frames.base)
    # the records it deletes: other objects' links to them are read first (requests)
    plan.link_fields = len(inbound)   # the object's own fields into it too
    return RestorePlan(client, built.frames, plan, mirror=where, when=at,
                       last_run=last_start, created_after_ids=built.created_after,
                       gone_between=never, delete_created=delete_created,
                       unchanged=built.unchanged,
                       sizes={k: len(v) for k, v in alive.items() if v is not None},
                       files=built.stage)


def _run_span(state: MirrorState) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The start of the mirror's first run and of its last."""
    runs = state.runs
    if not len(runs):
        return None, None
    started = pd.to_datetime(runs["started"], utc=True)
    return pd.Timestamp(started.min()), pd.Timestamp(started.max())


def _copies(state: MirrorState, source: Source, then: Frames,
            scope: set[str] | None, at: pd.Timestamp) -> Copies:
    """The mirror's copies of the files the records held at ``at`` (the copies of the
    last run that started by then), for the records in scope holding one."""
    layout = ColumnMap.of(source)
    keys = [f.key for f in source.fields if layout.is_upload(f.key)]
    if not keys:
        return {}
    held = then.main[[k for k in keys if k in then.main.columns]].notna().any(axis=1)
    ids = [str(i) for i in then.main.index[held.to_numpy()] if scope is None or i in scope]
    if not ids:
        return {}
    started = pd.to_datetime(state.runs["started"], utc=True)
    runs = state.runs.loc[(started <= at).to_numpy(), "run_id"]
    assert state.target is not None
    return asset_copies(state.target, source.object_key, ids,
                        run=int(runs.max()) if len(runs) else None)


def _ever_seen(state: MirrorState, key: str) -> set[str]:
    """Every record id the mirror's history of the object holds."""
    assert state.target is not None
    table = state.target.read(history_name(state.objects[key].table_name))
    return {str(i) for i in table.column("id").to_pylist()}


def _lists_of(frames: Frames, key: str) -> dict[str, list[str]]:
    t = frames.tables.get(key)
    out: dict[str, list[str]] = {}
    if t is None or "connected_id" not in t.columns:
        return out
    for r, c in zip(t["record_id"].astype(str), t["connected_id"].astype(str), strict=True):
        out.setdefault(r, []).append(c)
    return out


@dataclass(kw_only=True)
class RestorePlan(Reversal):
    """Records of one object brought back to their state at a past time (``restore``
    makes it): nothing is sent until ``apply``.

    Attributes
    ----------
    client : Client
        Where ``apply`` sends.
    frames : UndoFrames
        The restore's frames, what cannot come back and the links to repoint.
    plan : Plan
        The write-back plan (``plan.changes``, ``plan.requests``); ``review(p.plan,
        client, p.edited, delete_missing=True)`` shows it in a notebook.
    edited, base : Frames
        The records as they were at ``when`` (what is written) and as the mirror last saw
        them (what the guard expects on the service), keys-mode columns.
    mirror : str
        The mirror read.
    when : pandas.Timestamp
        The time restored (UTC).
    last_run : pandas.Timestamp
        The start of the mirror's last run: a cell changed on the service after it is a
        conflict.
    created_after_ids : list of str
        The records created after ``when`` (deleted only with ``delete_created``).
    gone_between : list of str
        Ids asked for that were created after ``when`` and deleted before the mirror's
        last run: nothing to restore.
    delete_created : bool
        Whether the plan deletes the records created after ``when``.
    unchanged : int
        Records of both times already as they were at ``when``.
    relink_reads : int
        Requests the last ``apply`` made reading the lists to repoint.
    sizes : dict
        Per object, its records as the mirror last saw them (sizes the re-reads).
    files : tempfile.TemporaryDirectory or None
        The mirror's copies of files staged for upload while the plan lives.
    id_map : dict
        After ``apply``: each re-created record's old id -> its new id.
    reports : list of Report
        The ``write_back`` runs ``apply`` made.
    """

    WHAT: ClassVar[str] = "restore"
    OLD_ID_COLUMN: ClassVar[str] = "restores"

    mirror: str
    when: pd.Timestamp
    last_run: pd.Timestamp | None
    created_after_ids: list[str] = field(default_factory=list)
    gone_between: list[str] = field(default_factory=list)
    delete_created: bool = False
    unchanged: int = 0
    relink_reads: int = 0
    sizes: dict[str, int] = field(default_factory=dict)
    files: Any = field(default=None, repr=False)   # the copies staged for upload

    @property
    def created_after(self) -> pd.DataFrame:
        """The records created after ``when`` (``record_id``, ``deleted``: whether the plan
        deletes them)."""
        return pd.DataFrame({"record_id": pd.array(self.created_after_ids, dtype="string"),
                             "deleted": [self.delete_created] * len(self.created_after_ids)})

    def __repr__(self) -> str:
        c = self.plan.counts
        lost = f"{len(self.frames.lost)} lost" if self.frames.lost else "nothing lost"
        relink = f", {len(self.frames.relinks)} to point at new ids" \
            if self.frames.relinks else ""
        return (f"RestorePlan({self.frames.source.object_key}: {c['update']} update, "
                f"{c['create']} create, {c['delete']} delete, "
                f"{len(self.created_after_ids)} created after{relink}; {lost})")

    def _relink_reads(self) -> dict[str, tuple[Source, set[str], bool]]:
        """Per object, the records whose lists the repointing reads live: their source,
        ids, and whether the object is listed whole (paged: fewer requests than
        re-reading those records, by its size as the mirror last saw it)."""
        by_obj: dict[str, set[str]] = {}
        for (obj, rid, _key) in self.frames.relinks:
            if not rid.startswith(NEW_ID_PREFIX):
                by_obj.setdefault(obj, set()).add(rid)
        if not by_obj:
            return {}
        schema = self.client.schema()
        own = self.frames.source
        out: dict[str, tuple[Source, set[str], bool]] = {}
        for obj, ids in by_obj.items():
            # the object's size (as the mirror last saw it) lets the re-read list many
            # ids per request, or list the object when that is fewer requests
            size = self.sizes.get(obj)
            src = own if obj == own.object_key else Source(
                "object", obj, schema.object_fields(obj) or [], timezone=own.timezone,
                app_id=own.app_id, base_url=own.base_url, columns="keys",
                name=schema.object_name(obj),
                load=None if size is None else {"object_records": int(size * 1.25) + 100})
            out[obj] = (src, ids, size is not None and list_pages(size) < len(ids))
        return out

    def _relink_read_requests(self) -> int:
        """The reads of the live lists before the repointing (``_relink_lists``)."""
        return sum(list_pages(self.sizes[obj]) if whole
                   else reread_requests(src, ColumnMap.of(src), None, sorted(ids))
                   for obj, (src, ids, whole) in self._relink_reads().items())

    def _relink_lists(self) -> dict[tuple[str, str, str], list[str]]:
        """The lists to add new ids to, read live now (per object: the whole list paged
        when that is fewer requests than re-reading the records, else the guard's
        re-read): connections others made since the mirror's last run are kept. A record
        no longer on the service is left out (not repointed)."""
        out: dict[tuple[str, str, str], list[str]] = {
            k: was for k, (was, _olds) in self.frames.relinks.items()
            if k[1].startswith(NEW_ID_PREFIX)}         # as it was just created
        counter = RequestCounter()
        for obj, (src, ids, whole) in self._relink_reads().items():
            if whole:   # more records than the object's pages: list it whole (paged)
                got = {str(r["id"]): r for r in fetch_all(self.client, where_of(src),
                                                          counter, purpose="lookups")
                       if str(r.get("id")) in ids}
            else:
                got = reread(self.client, src, sorted(ids), counter, ColumnMap.of(src), None,
                             purpose="lookups")
            frames = decode_records(list(got.values()), src)
            for (o, rid, key), _ in self.frames.relinks.items():
                if o != obj or rid not in got:
                    continue
                t = frames.tables.get(key)
                out[(o, rid, key)] = [] if t is None else \
                    sorted(t.loc[t["record_id"] == rid, "connected_id"].astype(str))
        self.relink_reads += counter.n["lookups"]
        return out

    def apply(self, *, force: Iterable[str] = (),
              journal: str | os.PathLike[str] | None = None, **write_options: Any) -> Report:
        """Send the restore through ``write_back`` (creates, updates, and deletes when
        asked), then add each re-created record's new id to the lists of the records that
        pointed at it, as those lists are now.

        Parameters
        ----------
        force : iterable of str
            Records (ids in ``plan.record_ids``) to write even where someone changed them
            after the mirror's last run; every other record in conflict is left as it is
            and reported ``conflict``.
        journal : str or os.PathLike, optional
            ``write_back``'s journal: ``restore(...).apply(journal=...)`` again, in this
            process or another, resumes an interrupted restore without sending anything
            twice (before the mirror runs again: a run after the creates would see the
            new records as created after ``when``). The repointing is journaled beside it
            (the same path + ``.links``).
        **write_options
            Other options of ``write_back`` (``guard``, ``guard_window``, ``progress``,
            ``max_workers``, ``quota_reserve``).

        Returns
        -------
        Report
            One row per record of the runs made (the restore, then the repointing), the
            conflicts, the requests summed (``lookups``: the live lists read before the
            repointing); ``id_map`` holds the new ids.

        Raises
        ------
        UsageError
            A ``force`` id not in the plan, or an option ``write_back`` refuses.
        """
        self.relink_reads = 0
        report = super().apply(force=force, journal=journal, **write_options)
        if self.relink_reads:
            report.requests["lookups"] = report.requests.get("lookups", 0) \
                + self.relink_reads
        return report


def as_mapping(plan: RestorePlan) -> Mapping[str, Any]:
    """The plan in one JSON-able line (the CLI's summary)."""
    return {"object": plan.frames.source.object_key, "when": plan.when.isoformat(),
            "plan": plan.counts, "created_after": len(plan.created_after_ids),
            "lost": len(plan.frames.lost), "relinks": len(plan.frames.relinks),
            "mirror_last_run": None if plan.last_run is None
            else plan.last_run.to_pydatetime().astimezone(dt.timezone.utc).isoformat()}
