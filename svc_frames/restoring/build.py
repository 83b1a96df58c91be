"""The frames of a restore: ``base`` holds each record as the mirror last saw it, ``edited``
as it was at ``when``, so ``diff(edited, base)`` plans the writes and ``write_back``'s
guard compares the service with what the mirror last saw (a cell someone changed after
the mirror's last run is a conflict).

* a record of both times: its cells and connection lists at ``when`` in ``edited``, as
  last seen in ``base`` (diff sends the cells that differ);
* a record deleted since ``when``: a new row ``new:N`` in ``edited`` with its cells and
  tables at ``when`` (what cannot come back is left out and listed: ``Lost``);
* a record created after ``when``: in ``base`` alone (a delete) when asked, else listed.

Connections come back in both directions: a re-created record's own lists as they were
at ``when`` (a connected record of its own object that is re-created too is created
first, and the list carries its new id: ``undoing/order.py``; one link of a cycle is
pointed at its new id after the creates), and the records that pointed at it then, of any object, get its
new id added to their lists (``relinks``, applied after the creates).

Usage::

    built = RestoreFrames.build(source, then, last, inbound=..., alive=...)
    plan = diff(built.edited, built.base)
"""

from __future__ import annotations

import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..frames import Frames, Source, build_frames
from ..kinds import codec_for
from ..kinds.base import FieldSpec
from ..undoing.build import Lost, UndoFrames, frames_of, not_restorable
from ..undoing.order import link_creates
from ..writeback.plan import NEW_ID_PREFIX, ColumnMap

__all__ = ["RestoreFrames", "Inbound", "NO_COPY", "Copies"]

NO_COPY = "the mirror keeps no copy of it (mirror with assets=True to keep copies)"

Copies = Mapping[tuple[str, str], Any]
"""The mirror's copies of files and images by (record id, field key): ``AssetCopy``
(``name``, ``data``, ``asset_id``), as ``mirroring.assets.asset_copies`` reads them."""


@dataclass(frozen=True)
class Inbound:
    """A connection field of ``object`` (this one or another) pointing at the restored
    object: its lists at ``when`` (``then``: record id -> connected ids; None when the
    mirror does not hold that object then) and the records of ``object`` the mirror last
    saw (``alive``: None when not mirrored)."""

    object: str
    field: str
    label: str
    then: Mapping[str, list[str]] | None
    alive: Collection[str] | None


@dataclass
class RestoreFrames:
    """The frames of a restore (module docstring) and what it found: the re-created
    records' temporary ids -> old ids, the records created after ``when``."""

    frames: UndoFrames
    created_after: list[str] = field(default_factory=list)
    unchanged: int = 0
    stage: tempfile.TemporaryDirectory[str] | None = None   # the files to upload again

    @classmethod
    def build(cls, source: Source, then: Frames, last: Frames, *,
              then_fields: Sequence[FieldSpec], scope: Collection[str] | None,
              delete_created: bool, inbound: Sequence[Inbound],
              alive: Mapping[str, Collection[str] | None], copies: Copies | None = None
              ) -> RestoreFrames:
        """``source``: the object now (the fields of ``when`` that it still has, of the
        same kind); ``then``, ``last``: the object at ``when`` and as last seen (keys-mode
        frames from the mirror); ``then_fields``: its fields at ``when``; ``scope``: the
        records asked (None: all); ``alive``: per object key, the ids the mirror last
        saw (None: the object is not mirrored, its records are taken as there);
        ``copies``: the mirror's copies of the files at ``when`` (uploaded again)."""
        b = _Builder(source, then, last, then_fields, alive, copies or {})
        then_ids, last_ids = set(then.main.index), set(last.main.index)
        inside = (then_ids | last_ids) if scope is None else set(scope)
        deleted = sorted(i for i in then_ids - last_ids if i in inside)
        both = sorted(i for i in then_ids & last_ids if i in inside)
        created = sorted(i for i in last_ids - then_ids if i in inside)
        for rid in deleted:
            b.tmp[rid] = f"{NEW_ID_PREFIX}{len(b.tmp)}"
        for rid in both:
            b.update(rid)
        for rid in deleted:
            b.create(rid)
        if delete_created:
            for rid in created:
                b.delete(rid)
        for conn in inbound:
            b.inbound(conn, deleted, inside)
        built = b.finish()
        changed = {r for r in both if r in b.touched}
        return cls(built, created, len(both) - len(changed), b.stage)


class _Builder:
    def __init__(self, source: Source, then: Frames, last: Frames,
                 then_fields: Sequence[FieldSpec],
                 alive: Mapping[str, Collection[str] | None], copies: Copies) -> None:
        self.source, self.then, self.last = source, then, last
        self.copies = copies
        self.uploads: dict[tuple[str, str], Any] = {}    # (row id, field) -> AssetCopy
        self.stage: tempfile.TemporaryDirectory[str] | None = None
        self.alive = {k: (None if v is None else set(v)) for k, v in alive.items()}
        self.layout = ColumnMap.of(source)
        self.empty = build_frames([], source.fields, source, keep_original=False)
        now = {f.key: f for f in source.fields}
        self.gone: dict[str, str] = {}
        for f in then_fields:
            cur = now.get(f.key)
            if cur is None:
                self.gone[f.key] = "the field is no longer in the schema"
            elif cur.kind != f.kind:
                self.gone[f.key] = f"the field's kind is now {cur.kind}, not {f.kind}"
        self.base_rows: dict[str, dict[str, Any]] = {}
        self.edit_rows: dict[str, dict[str, Any]] = {}
        self.base_tables: dict[str, list[dict[str, Any]]] = {}
        self.edit_tables: dict[str, list[dict[str, Any]]] = {}
        self.lost: list[Lost] = []
        self.tmp: dict[str, str] = {}                # old id -> temporary id
        self.relinks: dict[tuple[str, str, str], tuple[list[str], list[str]]] = {}
        self.touched: set[str] = set()
        self.then_rows = _rows(then.main)
        self.last_rows = _rows(last.main)
        self.then_lists = {k: _lists(t) for k, t in then.tables.items()}
        self.last_lists = {k: _lists(t) for k, t in last.tables.items()}

    # ---- what a field is, and whether it can be written ---------------------------------
    def _target(self, key: str) -> str | None:
        rel = self.layout.fields[key].relationship or {}
        return str(rel["object"]) if rel.get("object") else None

    def _is_there(self, obj: str | None, rid: str) -> bool:
        ids = self.alive.get(obj or "")
        return ids is None or rid in ids

    def _writable(self, f: FieldSpec) -> bool:
        return not (codec_for(f).read_only or f.kind in ("password", "auto_increment")
                    or self.layout.is_upload(f.key))

    def _held(self, row: Mapping[str, Any], key: str) -> bool:
        return any(not _blank(row.get(c)) for c in self.layout.field_cols.get(key, []))

    def _gone_lost(self, rid: str, action: str) -> None:
        row = self.then_rows.get(rid, {})
        for key, why in self.gone.items():
            if any(not _blank(v) for c, v in row.items() if c == key or
                   c.startswith(key + ".")) or self.then_lists.get(key, {}).get(rid):
                self.lost.append(Lost(rid, action, key, why))

    # ---- a record of both times: as last seen -> as at `when` ---------------------------
    def update(self, rid: str) -> None:
        then, last = self.then_rows[rid], self.last_rows[rid]
        base = dict(last)
        edit = dict(last)
        for key, f in self.layout.fields.items():
            cols = self.layout.field_cols.get(key, [])
            if f.kind in ("connection", "timer"):
                continue
            differs = any(not _same(then.get(c), last.get(c)) for c in cols)
            if not differs:
                continue
            if self.layout.is_upload(key) and self._upload(rid, rid, key, then, "update"):
                self.touched.add(rid)
                continue
            if not self._writable(f):
                continue
            for c in cols:
                edit[c] = then.get(c)
            self.touched.add(rid)
        self.base_rows[rid], self.edit_rows[rid] = base, edit
        for key, f in self.layout.fields.items():
            if f.kind == "connection":
                was = self._connections(rid, rid, key, self.then_lists.get(key, {}).get(rid, []),
                                        "update")
                seen = self._still(key, self.last_lists.get(key, {}).get(rid, []))
                self._table(self.base_tables, key, rid, seen)
                self._table(self.edit_tables, key, rid, was)
                if sorted(was) != sorted(seen):
                    self.touched.add(rid)
            elif f.kind == "timer":      # its intervals: as last seen -> as at `when`
                self._copy_rows(self.last, key, rid, rid, self.base_tables)
                self._copy_rows(self.then, key, rid, rid, self.edit_tables)
        self._gone_lost(rid, "update")

    def _still(self, key: str, ids: list[str]) -> list[str]:
        """A list as last seen, without the records the mirror saw go (the service
        dropped them when they were deleted)."""
        target = self._target(key)
        return [c for c in ids if self._is_there(target, c)]

    def _connections(self, rid: str, row_id: str, key: str, ids: list[str], action: str
                     ) -> list[str]:
        """A list at ``when`` as it can be written: a connected record re-created too is
        pointed at its new id afterwards (a relink), one gone since is left out (lost)."""
        target = self._target(key)
        out = []
        for c in ids:
            if target == self.source.object_key and c in self.tmp:
                self._relink(self.source.object_key, row_id, key, [], c)
            elif self._is_there(target, c):
                out.append(c)
            else:
                self.lost.append(Lost(rid, action, key,
                                      f"connected to {c} of {target}, deleted since and not "
                                      "restored: left out"))
        return out

    @staticmethod
    def _table(tables: dict[str, list[dict[str, Any]]], key: str, rid: str,
               ids: list[str]) -> None:
        tables.setdefault(key, []).extend({"record_id": rid, "connected_id": c} for c in ids)

    @staticmethod
    def _copy_rows(frames: Frames, key: str, rid: str, as_id: str,
                   tables: dict[str, list[dict[str, Any]]]) -> None:
        t = frames.tables.get(key)
        if t is None:
            return
        for r in t[t["record_id"] == rid].to_dict("records"):
            tables.setdefault(key, []).append({**{str(k): v for k, v in r.items()},
                                               "record_id": as_id})

    def _relink(self, obj: str, rid: str, key: str, was: list[str], old: str) -> None:
        before, add = self.relinks.get((obj, rid, key), (was, []))
        if old not in add:
            self.relinks[(obj, rid, key)] = (before, add + [old])

    # ---- a record deleted since `when`: created again -----------------------------------
    def create(self, rid: str) -> None:
        tmp = self.tmp[rid]
        cells = self.then_rows[rid]
        row = self.edit_rows.setdefault(tmp, {})
        for key, f in self.layout.fields.items():
            cols = self.layout.field_cols.get(key, [])
            if f.kind == "connection":
                ids = self._connections(rid, tmp, key,
                                        self.then_lists.get(key, {}).get(rid, []), "create")
                self._table(self.edit_tables, key, tmp, ids)
                continue
            if f.kind == "timer":
                self._copy_rows(self.then, key, rid, tmp, self.edit_tables)
                continue
            held = [c for c in cols if not _blank(cells.get(c))]
            if held and self.layout.is_upload(key) and self._upload(rid, tmp, key, cells,
                                                                    "create"):
                continue
            why = not_restorable(f, bool(held), self.layout.is_upload(key), NO_COPY)
            if why:
                if why != "-":
                    self.lost.append(Lost(rid, "create", key, why))
                continue
            for c in held:
                row[c] = cells[c]
        self._gone_lost(rid, "create")

    def _upload(self, rid: str, row_id: str, key: str, cells: Mapping[str, Any],
                action: str) -> bool:
        """A file or image as it was at ``when``, uploaded again from the mirror's copy
        (True); False when there is none to upload (lost, said by the caller or here)."""
        held = cells.get(key)
        copy = self.copies.get((rid, key))
        if _blank(held):
            if action == "update":     # emptied at `when`: the field is cleared
                self.uploads[(row_id, key)] = None
                return True
            return False
        if copy is None or (copy.asset_id and copy.asset_id != held):
            if action == "update":
                self.lost.append(Lost(rid, action, key,
                                      f"an uploaded {self.layout.fields[key].kind} changed "
                                      f"since: {NO_COPY}"))
                return True    # nothing to write, said
            return False
        self.uploads[(row_id, key)] = copy
        return True

    # ---- a record created after `when`: deleted when asked ------------------------------
    def delete(self, rid: str) -> None:
        self.base_rows[rid] = dict(self.last_rows[rid])
        for key, f in self.layout.fields.items():
            if f.kind == "connection":
                self._table(self.base_tables, key, rid,
                            self._still(key, self.last_lists.get(key, {}).get(rid, [])))
            elif f.kind == "timer":
                self._copy_rows(self.last, key, rid, rid, self.base_tables)

    # ---- records that pointed at a deleted one: pointed at its new id -------------------
    def inbound(self, conn: Inbound, deleted: list[str], inside: set[str]) -> None:
        own = conn.object == self.source.object_key
        gone = set(deleted)
        if conn.then is None:
            for rid in deleted:
                self.lost.append(Lost(rid, "create", f"{conn.object}.{conn.field}",
                                      f"records of {conn.object} connected to it "
                                      f"({conn.label}): that object is not in the mirror "
                                      "at that time, so they are not known"))
            return
        alive = None if conn.alive is None else set(conn.alive)
        for other, ids in conn.then.items():
            olds = [c for c in ids if c in gone]
            if not olds:
                continue
            if own and other in inside and (other in self.tmp or other in self.edit_rows):
                continue    # written with its own lists above
            if alive is not None and other not in alive:
                continue    # deleted too, and not restored here
            last = self.last_lists.get(conn.field, {}) if own else {}
            was = [c for c in last.get(other, []) if c not in gone] if own else []
            for old in olds:
                self._relink(conn.object, other, conn.field, was, old)

    def finish(self) -> UndoFrames:
        src = self.source
        old_ids = {tmp: old for old, tmp in self.tmp.items()}
        # re-created records linking to each other: created in order (order.py)
        link_creates(self.relinks, src.object_key, self.tmp, self.edit_tables)
        for (obj, rid, key), (_was, olds) in list(self.relinks.items()):
            if rid.startswith(NEW_ID_PREFIX):   # a re-created record: as it is created
                made = sorted(str(r["connected_id"]) for r in self.edit_tables.get(key, [])
                              if r["record_id"] == rid)
                self.relinks[(obj, rid, key)] = (made, olds)
            elif obj == src.object_key and rid in self.edit_rows:
                made = sorted(str(r["connected_id"]) for r in self.edit_tables.get(key, [])
                              if r["record_id"] == rid)
                self.relinks[(obj, rid, key)] = (made, olds)
        base = frames_of(src, self.empty, self.base_rows, self.base_tables, [])
        edited = frames_of(src, self.empty, self.edit_rows, self.edit_tables, [])
        for n, ((row_id, key), copy) in enumerate(sorted(self.uploads.items(),
                                                          key=lambda kv: kv[0])):
            # write-back uploads a local file named in the cell just before the write
            # placing it: each copy is staged as a file (the frames' text column cannot
            # hold bytes) in a directory the plan keeps while it lives
            if copy is None:
                edited.main.at[row_id, key] = None
                continue
            if self.stage is None:
                self.stage = tempfile.TemporaryDirectory(prefix="svc_frames_restore_")
            path = Path(self.stage.name) / str(n) / (Path(copy.name).name or "file")
            path.parent.mkdir()
            path.write_bytes(copy.data)
            edited.main.at[row_id, key] = str(path)
            if f"{key}.filename" in edited.main.columns:
                edited.main.at[row_id, f"{key}.filename"] = copy.name
        edited.original = base
        return UndoFrames(src, base, edited, self.lost, old_ids, self.relinks)


def _rows(main: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Each record's cells (keys-mode column -> value), missing values as None."""
    out: dict[str, dict[str, Any]] = {}
    cols = list(main.columns)
    for rid, values in zip(main.index.astype(str), main.itertuples(index=False, name=None),
                           strict=True):
        out[rid] = {c: (None if _blank(v) else v) for c, v in zip(cols, values, strict=True)}
    return out


def _lists(table: pd.DataFrame) -> dict[str, list[str]]:
    """A connection table as record id -> connected ids (other tables: empty)."""
    if "connected_id" not in table.columns:
        return {}
    out: dict[str, list[str]] = {}
    for r, c in zip(table["record_id"].astype(str), table["connected_id"].astype(str),
                    strict=True):
        out.setdefault(r, []).append(c)
    return out


def _blank(v: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return len(v) == 0
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _same(a: Any, b: Any) -> bool:
    if _blank(a) or _blank(b):
        return _blank(a) and _blank(b)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return repr(a) == repr(b)
