"""The frames of an undo: ``base`` holds each record as the run left it, ``edited`` as
it was before the run, so ``diff(edited, base)`` plans the reversal and ``write_back``'s
guard compares the server with what the run wrote (a cell changed since is a conflict).

* an update: its fields as written in ``base``, as loaded in ``edited``;
* a create: the created record whole in ``base`` (the guard compares every field before a
  delete), absent from ``edited`` (a delete);
* a delete: a new row ``new:N`` in ``edited`` with the record's cells and tables as
  loaded (what cannot come back is left out and listed: ``Lost``).

A deleted record that connected to another deleted record is created after it, with its
new id (``order.py``; one link of a cycle is made after the creates). Records that
connected to a deleted record (kept in its entry) are pointed at the new one after the
creates (``relink.py``), when its id is known.

Usage::

    built = UndoFrames.build(run, fields)      # fields: the object's fields now
    plan = diff(built.edited, built.base)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..frames import Frames, Source, build_frames
from ..kinds import codec_for
from ..kinds.base import FieldSpec
from ..schema import Connection
from ..writeback.kept import from_json
from ..writeback.plan import NEW_ID_PREFIX, ColumnMap
from ..writeback.values import decode_records, intervals_key
from .order import link_creates
from .runs import KeptRun

__all__ = ["UndoFrames", "Lost", "LOST_COLUMNS", "frames_of", "not_restorable"]

LOST_COLUMNS = ["record_id", "action", "field", "why"]


@dataclass(frozen=True)
class Lost:
    """What cannot come back (a row of ``UndoPlan.lost``)."""

    record_id: str
    action: str
    field: str
    why: str


@dataclass
class UndoFrames:
    """``base`` and ``edited`` (keys-mode columns) of an undo, the lost values, the
    temporary id of each re-created record -> its old id, and the relinks to make once
    the new ids are known: (object, record id, connection field) -> (list after the
    run, the old ids to add); the object is the run's or another whose records
    connected to a deleted record (the run read them before the delete)."""

    source: Source
    base: Frames
    edited: Frames
    lost: list[Lost] = field(default_factory=list)
    old_ids: dict[str, str] = field(default_factory=dict)
    relinks: dict[tuple[str, str, str], tuple[list[str], list[str]]] = field(
        default_factory=dict)

    @classmethod
    def build(cls, run: KeptRun, fields: Sequence[FieldSpec],
              inbound: Sequence[Connection] = (), records: int | None = None
              ) -> UndoFrames:
        """The frames reversing ``run`` over the object's ``fields`` as they are now
        (fields the run knew and the schema no longer has are lost); ``inbound``: the
        connection fields of other objects that point at this one (their links to a
        deleted record are not kept: listed as lost); ``records``: the object's size,
        when counted (it sizes the guard's re-reads: ``plan.object_records``)."""
        then = Source.from_dict(run.header["source"])
        now = {f.key: f for f in fields}
        kept: list[FieldSpec] = []
        gone: dict[str, str] = {}
        for f in then.fields:
            cur = now.get(f.key)
            if cur is None:
                gone[f.key] = "the field is no longer in the schema"
            elif cur.kind != f.kind:
                gone[f.key] = f"the field's kind is now {cur.kind}, not {f.kind}"
            else:
                kept.append(cur)
        source = Source(then.kind if then.kind == "object" else "object", then.object_key,
                        kept, timezone=then.timezone, app_id=then.app_id,
                        base_url=then.base_url, columns="keys", name=then.name,
                        load={"object_records": records} if records is not None else None)
        known = {f.key for f in then.fields}
        # fields of the object the run's frames did not hold (a subset of columns, or a
        # field added since): a deleted record's values there were never read
        unread = [f.key for f in fields if f.key not in known
                  and not not_restorable(f, False, False)]
        b = _Builder(source, gone, unread)
        deleted = {str(x.get("record_id")) for x in run.entries.values()
                   if x.get("action") == "delete"}
        for rid, e in run.entries.items():
            act = e.get("action")
            if act == "update":
                b.update(rid, e)
            elif act == "create":
                b.create(e)
            elif act == "delete":
                b.delete(rid, e, run.entries)
                b.links(rid, e, deleted, inbound)
        return b.finish()


class _Builder:
    def __init__(self, source: Source, gone: Mapping[str, str],
                 unread: Sequence[str] = ()) -> None:
        self.source, self.gone, self.unread = source, gone, list(unread)
        self.layout = ColumnMap.of(source)
        self.empty = build_frames([], source.fields, source, keep_original=False)
        self.base_rows: dict[str, dict[str, Any]] = {}
        self.edit_rows: dict[str, dict[str, Any]] = {}
        self.base_tables: dict[str, list[dict[str, Any]]] = {}
        self.edit_tables: dict[str, list[dict[str, Any]]] = {}
        self.lost: list[Lost] = []
        self.old_ids: dict[str, str] = {}
        self.relinks: dict[tuple[str, str, str], tuple[list[str], list[str]]] = {}
        self.created: list[Frames] = []
        self.deleted: dict[str, dict[str, Any]] = {}

    # ---- updates: written -> loaded ------------------------------------------------------
    def update(self, rid: str, e: Mapping[str, Any]) -> None:
        loaded, written = e.get("loaded") or {}, e.get("written") or {}
        base = self.base_rows.setdefault(rid, {})
        edit = self.edit_rows.setdefault(rid, {})
        for col, v in (e.get("key") or {}).items():   # what the guard re-reads it by
            if col in self.empty.main.columns:
                base[col] = edit[col] = from_json(v)
        for key in written:
            if key in self.gone:
                self.lost.append(Lost(rid, "update", key, self.gone[key]))
                continue
            if key not in loaded:
                continue
            self._place(rid, key, from_json(written[key]), base, self.base_tables)
            self._place(rid, key, from_json(loaded[key]), edit, self.edit_tables)

    def _place(self, rid: str, key: str, values: Mapping[str, Any], row: dict[str, Any],
               tables: dict[str, list[dict[str, Any]]]) -> None:
        """A field's kept columns into a row (and its connection or timer table)."""
        kind = self.layout.fields[key].kind
        for col, v in values.items():
            if kind == "connection" and col == key:
                tables.setdefault(key, []).extend(
                    {"record_id": rid, "connected_id": c} for c in v or [])
            elif kind == "timer" and col == intervals_key(key):
                tables.setdefault(key, []).extend(
                    {"record_id": rid, "from": a, "to": z} for a, z in v or [])
            elif col in self.empty.main.columns:
                row[col] = v
        if kind == "connection":
            tables.setdefault(key, [])

    # ---- creates: the record as made -> deleted -------------------------------------------
    def create(self, e: Mapping[str, Any]) -> None:
        new_id = e.get("new_id")
        if not new_id:
            self.lost.append(Lost(str(e.get("record_id")), "create", "",
                                  "created, but its id was never learned: look for it"))
            return
        record = e.get("record")
        if isinstance(record, Mapping) and record.get("id") == new_id:
            self.created.append(decode_records([record], self.source))
            return
        # adopted after a lost answer: only what was sent is known; a field the service
        # filled itself is compared as empty (a conflict rather than an unseen delete)
        row = self.base_rows.setdefault(str(new_id), {})
        for key, vals in (e.get("written") or {}).items():
            if key in self.layout.fields:
                self._place(str(new_id), key, from_json(vals), row, self.base_tables)

    # ---- deletes: the record as loaded -> created again --------------------------------------
    def delete(self, rid: str, e: Mapping[str, Any],
               entries: Mapping[str, Mapping[str, Any]]) -> None:
        tmp = f"{NEW_ID_PREFIX}{len(self.old_ids)}"
        self.old_ids[tmp] = rid
        self.deleted[rid] = dict(e)
        cells = {c: from_json(v) for c, v in (e.get("row") or {}).items()}
        row = self.edit_rows.setdefault(tmp, {})
        layout = self.layout
        for key in self.gone:
            if any(c == key or c.startswith(key + ".") for c, v in cells.items()
                   if v is not None):
                self.lost.append(Lost(rid, "create", key, self.gone[key]))
        for key in self.unread:
            self.lost.append(Lost(rid, "create", key,
                                  "not in the run's frames (not loaded, or added since): "
                                  "its value before the delete was never read"))
        for key, f in layout.fields.items():
            cols = layout.field_cols.get(key, [])
            held = [c for c in cols if cells.get(c) is not None]
            why = not_restorable(f, bool(held), layout.is_upload(key))
            if why:
                if why != "-":
                    self.lost.append(Lost(rid, "create", key, why))
                continue
            if f.kind == "timer":
                continue    # a timer is created from its intervals (its table) alone
            for c in held:
                row[c] = cells[c]
        deleted_ids = {str(x.get("record_id")) for x in entries.values()
                       if x.get("action") == "delete"}
        for key, rows in (e.get("tables") or {}).items():
            spec = layout.fields.get(key)
            if spec is None or spec.kind not in ("connection", "timer"):
                continue
            for r in rows:
                r = {c: from_json(v) for c, v in r.items()}
                if spec.kind == "connection" and str(r.get("connected_id")) in deleted_ids \
                        and str(r.get("connected_id")) != rid:
                    # a connection to another record this undo creates again: created
                    # after it, with its new id (order.py)
                    self._relink(self.source.object_key, tmp, key, [],
                                 str(r["connected_id"]))
                    continue
                self.edit_tables.setdefault(key, []).append({"record_id": tmp, **r})
        for key, by in (e.get("inbound") or {}).items():
            if key not in layout.fields:
                continue
            for other, ids in by.items():
                if other in deleted_ids:
                    continue
                after = self._after_run(other, key, ids, entries, deleted_ids)
                self._relink(self.source.object_key, other, key, after, rid)

    def _relink(self, obj: str, rid: str, key: str, after: list[str], old: str) -> None:
        was, add = self.relinks.get((obj, rid, key), (after, []))
        self.relinks[(obj, rid, key)] = (was, add + [old])

    def links(self, rid: str, e: Mapping[str, Any], deleted: set[str],
              inbound: Sequence[Connection]) -> None:
        """Records connected to a deleted record, read just before the delete (of other
        objects, and of its own outside the frames): pointed at the new one (their lists
        as the run left them: without the run's deleted records)."""
        links = e.get("links")
        if not isinstance(links, Mapping):     # an entry kept before links were read
            for c in inbound:
                self.lost.append(Lost(rid, "create", f"{c.from_object}.{c.field}",
                                      f"records of {c.from_object} connected to it "
                                      f"({c.label}): the service dropped those links when "
                                      "it was deleted, and the run did not keep them"))
            return
        own = self.source.object_key
        for name, by in links.items():
            obj, _, key = str(name).partition(".")
            if obj == own and key in self.gone:
                continue    # a field no longer in the schema (listed lost)
            # the object's own records in the frames: from the frames (``inbound``: their
            # lists as the run left them); a re-created one: from its own table
            framed = (e.get("inbound") or {}).get(key) or {} if obj == own else {}
            if by is None:
                self.lost.append(Lost(rid, "create", name,
                                      f"records of {obj} connected to it could not be read "
                                      "before the delete: not connected again"))
                continue
            for other, ids in by.items():
                if str(other) in framed or (obj == own and str(other) in deleted):
                    continue
                after = sorted(str(i) for i in ids if str(i) not in deleted)
                self._relink(obj, str(other), key, after, rid)

    @staticmethod
    def _after_run(rid: str, key: str, loaded: list[str],
                   entries: Mapping[str, Mapping[str, Any]], deleted: set[str]) -> list[str]:
        """A connection list as the run left it: as written when the run updated it,
        else as loaded without the records the run deleted (the service dropped them)."""
        e = entries.get(rid) or {}
        written = (e.get("written") or {}).get(key) if e.get("action") == "update" else None
        ids = from_json(written[key]) if isinstance(written, dict) and key in written \
            else loaded
        return sorted(str(i) for i in ids if str(i) not in deleted)

    def finish(self) -> UndoFrames:
        src = self.source
        # re-created records linking to each other: created in order (order.py)
        link_creates(self.relinks, src.object_key,
                     {old: tmp for tmp, old in self.old_ids.items()}, self.edit_tables)
        for (obj, rid, key), (_after, olds) in list(self.relinks.items()):
            if rid.startswith(NEW_ID_PREFIX):   # a re-created record: as it is created
                made = sorted(str(r["connected_id"]) for r in self.edit_tables.get(key, [])
                              if r["record_id"] == rid)
                self.relinks[(obj, rid, key)] = (made, olds)
        base = frames_of(src, self.empty, self.base_rows, self.base_tables, self.created)
        edited = frames_of(src, self.empty, self.edit_rows, self.edit_tables, [])
        # rows only one side has are updates' partners: every record in both, but the
        # creates (base only) and the re-created (edited only)
        edited.original = base
        return UndoFrames(src, base, edited, self.lost, self.old_ids, self.relinks)


def not_restorable(f: FieldSpec, held: bool, upload: bool,
                   no_copy: str = "the journal keeps no copy of it") -> str:
    """Why a deleted record's field cannot be created again ("" when it can; "-" when
    there is nothing to say: an empty computed field); ``no_copy`` says why an uploaded
    file cannot."""
    codec = codec_for(f)
    if f.kind == "password":
        return "a password cannot be read back: the re-created user has none"
    if f.kind == "auto_increment":
        return "an auto-increment number: the re-created record gets a new one" if held \
            else "-"
    if codec.read_only:
        return "computed by the service: computed again for the new record" if held \
            else "-"
    if upload and held:
        return f"an uploaded {f.kind}: {no_copy}"
    return ""


def frames_of(source: Source, empty: Frames, rows: Mapping[str, Mapping[str, Any]],
              tables: Mapping[str, Sequence[Mapping[str, Any]]],
              decoded: Sequence[Frames]) -> Frames:
    """Frames of ``source`` (keys mode) holding ``rows`` (record id -> keys-mode column ->
    cell; other cells missing) and ``tables`` (field key -> rows), beside ``decoded``
    frames of whole records, in the column dtypes a load gives."""
    ids = list(rows)
    main = pd.DataFrame(
        {c: pd.array([rows[r].get(c) for r in ids], dtype=object)
         for c in empty.main.columns},
        index=pd.Index(pd.array(ids, dtype="string"), name="id"))
    main = _typed(main, empty.main)
    out_tables: dict[str, pd.DataFrame] = {}
    for name, proto in empty.tables.items():
        recs = list(tables.get(name, []))
        t = pd.DataFrame({c: pd.array([r.get(c) for r in recs], dtype=object)
                          for c in proto.columns})
        out_tables[name] = _typed(t, proto)
    parts = [d for d in decoded if len(d.main)]
    if parts:
        main = pd.concat([main] + [d.main.reindex(columns=main.columns) for d in parts])
        main = _typed(main, empty.main)
        for name in out_tables:
            extra = [d.tables[name] for d in parts if name in d.tables]
            if extra:
                out_tables[name] = _typed(pd.concat([out_tables[name], *extra],
                                                    ignore_index=True), empty.tables[name])
    return Frames(main, out_tables, source)


def _typed(frame: pd.DataFrame, proto: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s columns in ``proto``'s dtypes (missing values as the dtype's own)."""
    out = {}
    for c in proto.columns:
        col = frame[c]
        dtype = proto[c].dtype
        if str(dtype) == "object":
            out[c] = col.astype(object).where(col.notna(), None) \
                if len(col) else col.astype(object)
            continue
        if isinstance(dtype, pd.DatetimeTZDtype):
            out[c] = pd.to_datetime(col.astype(object), utc=True).dt.tz_convert(
                dtype.tz).astype(dtype)
            continue
        out[c] = col.astype(dtype)
    return pd.DataFrame(out, index=frame.index)
