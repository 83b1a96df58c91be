"""Write edited frames back: diff -> Plan -> apply -> Report, sending only what changed.

Usage::

    frames = read_object(client, "object_2")
    frames.main.loc["5d79...", "field_21.latitude"] = 30.27
    plan = diff(frames)              # what would be sent, as a DataFrame: plan.changes
    report = write_back(client, frames, journal="push.jsonl")
    report.table                     # record_id, action, fields, status, message

Rules (issue 4, ARCHITECTURE.md "Write-back contract"):

* The loaded frames remember their ``original``; ``diff`` compares column by column
  (vectorized) and encodes only the changed fields of changed records through the same
  kind codec that decoded them, so an unchanged frame plans nothing and sends nothing.
* Everything is validated before the first request: unknown columns, duplicate or unknown
  ids, a reset or re-typed index, values a kind does not accept, read-only kinds, missing
  upload files, a view target without a token, frames without metadata.
* ``write_back`` re-reads the records about to change in a few batched list requests (the
  lost-update guard), then applies updates, creates and (opt-in) deletes concurrently
  within the client's pace. A create is never repeated blindly: when its outcome is
  unknown it is looked up first, and a journal makes an interrupted run resumable.

Reading order: ``diff`` = ``_source_and_base`` / ``_Rows.of`` (validate) then
``_PlanBuilder`` (updates, creates, connections, deletes). ``write_back`` = validate & plan,
``_resolve_target``, then a ``_Run``: ``key_records`` / ``triage`` (journal) ->
``drop_fields_the_view_does_not_take`` -> ``guard`` (``_reread``, conflicts) -> ``apply``
(uploads + writes, concurrent) -> ``refresh`` (``_refresh``) -> ``report``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from .errors import (
    ConfigurationError,
    ConflictError,
    InvalidValue,
    OutcomeUnknown,
    ReadOnlyField,
    ServerError,
    SvcError,
    UsageError,
)
from .frames import Frames, Source, label_map, relabel
from .kinds import codec_for, values_equal
from .kinds._util import is_empty_cell
from .kinds.assets import is_url_source
from .kinds.base import Codec, FieldSpec, ReadContext
from .paging import Paginator

__all__ = ["Plan", "Report", "Journal", "diff", "write_back", "push", "add_rows", "NEW_ID_PREFIX"]

#: Index labels starting with this prefix (or NA) mark rows to create; connection-table
#: rows may use the same temporary id to connect a new record.
NEW_ID_PREFIX = "new:"

Action = Literal["update", "create", "delete"]
Status = Literal["applied", "conflict", "failed", "skipped", "unknown", "not_applied",
                 "planned"]

# Kinds whose uploaded asset is placed by id; an image whose source is a URL is plain text.
_ASSET_KINDS = ("file", "image")
# Kinds whose acceptance needs the service (connected ids, uploaded assets): not
# pre-checked with the codec's normalize.
_HOOKED_KINDS = ("connection", "file", "image")
_CHANGE_COLUMNS = ["record_id", "action", "field", "column", "old", "new"]
_REPORT_COLUMNS = ["record_id", "action", "fields", "status", "message"]


# ----------------------------------------------------------------------------------------
# Field/column layout of a source
# ----------------------------------------------------------------------------------------
@dataclass
class _Layout:
    """Which frame column belongs to which field, for one source."""

    fields: dict[str, FieldSpec]
    codecs: dict[str, Codec]
    field_cols: dict[str, list[str]]        # field key -> frame column names
    col_field: dict[str, str]               # frame column name -> field key
    col_key: dict[str, str]                 # frame column name -> keys-mode column name
    tables: dict[str, str]                  # table name -> connection field key
    ctx: ReadContext

    @classmethod
    def of(cls, source: Source) -> _Layout:
        fields: dict[str, FieldSpec] = {}
        codecs: dict[str, Codec] = {}
        field_cols: dict[str, list[str]] = {}
        col_field: dict[str, str] = {}
        col_key: dict[str, str] = {}
        tables: dict[str, str] = {}
        labels = source.columns == "labels"
        names = label_map(source.fields)
        for f in source.fields:
            codec = codec_for(f)
            fields[f.key] = f
            codecs[f.key] = codec
            cols: list[str] = []
            for key_col in codec.columns(f):
                col = relabel(key_col, names) if labels else key_col
                cols.append(col)
                col_field[col] = f.key
                col_key[col] = key_col
            field_cols[f.key] = cols
            if f.kind == "connection":
                tables[f.key] = f.key
                if labels:
                    tables[relabel(f.key, names)] = f.key
        tz = ZoneInfo(source.timezone) if source.timezone else None
        return cls(fields, codecs, field_cols, col_field, col_key, tables, ReadContext(tz))

    def is_upload(self, key: str) -> bool:
        f = self.fields[key]
        return f.kind in _ASSET_KINDS and not is_url_source(f)  # the codec's rule


# ----------------------------------------------------------------------------------------
# Plan
# ----------------------------------------------------------------------------------------
@dataclass
class Plan:
    """What ``write_back`` would send: one entry per record, shown as ``changes``.

    Usage::

        plan = diff(frames)
        plan.changes            # record_id, action, field, column, old, new
        plan.counts             # {"update": 12, "create": 1, "delete": 0}
        write_back(client, frames, plan=plan.select(["5d79..."]))
    """

    changes: pd.DataFrame
    payloads: dict[str, dict[str, Any]]
    actions: dict[str, Action]
    source: Source
    edited: Frames | None = dc_field(default=None, repr=False)
    base: Frames | None = dc_field(default=None, repr=False)
    # record id -> field key -> the field's base column values {keys-mode column: value}
    loaded: dict[str, dict[str, dict[str, Any]]] = dc_field(default_factory=dict, repr=False)
    # record id -> field key -> edited column values (for conflict / "already applied")
    wanted: dict[str, dict[str, dict[str, Any]]] = dc_field(default_factory=dict, repr=False)
    # temporary id of a create -> position of its row in ``edited.main``
    create_rows: dict[str, int] = dc_field(default_factory=dict, repr=False)

    @property
    def counts(self) -> dict[str, int]:
        out = {"update": 0, "create": 0, "delete": 0}
        for a in self.actions.values():
            out[a] += 1
        return out

    @property
    def empty(self) -> bool:
        return not self.actions

    @property
    def record_ids(self) -> list[str]:
        return list(self.actions)

    def select(self, ids: Iterable[str]) -> Plan:
        """The same plan restricted to ``ids`` (for a review widget's selection)."""
        keep = [i for i in ids if i in self.actions]
        wanted = set(keep)
        ch = self.changes[self.changes["record_id"].isin(wanted)].reset_index(drop=True)
        return Plan(ch, {i: self.payloads[i] for i in keep if i in self.payloads},
                    {i: self.actions[i] for i in keep}, self.source, self.edited, self.base,
                    {i: self.loaded[i] for i in keep if i in self.loaded},
                    {i: self.wanted[i] for i in keep if i in self.wanted},
                    {i: p for i, p in self.create_rows.items() if i in wanted})

    def summary(self) -> pd.DataFrame:
        """One row per record: record_id, action, fields (comma separated)."""
        rows = [(rid, act, ", ".join(self.payloads.get(rid, {})))
                for rid, act in self.actions.items()]
        return pd.DataFrame(rows, columns=["record_id", "action", "fields"]).astype("string")

    def __repr__(self) -> str:
        c = self.counts
        return (f"Plan({c['update']} update, {c['create']} create, {c['delete']} delete; "
                f"{len(self.changes)} changed cells)")

    def _repr_html_(self) -> str:
        return f"<p>{self!r}</p>" + self.changes.head(50).to_html()


# ----------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------
@dataclass
class Report:
    """The outcome of ``write_back``: one row per record and action.

    Usage::

        report = write_back(client, frames)
        report.table[report.table.status != "applied"]
        report.requests   # {"writes": 12, "rereads": 1, "uploads": 0, "lookups": 0}
    """

    table: pd.DataFrame
    plan: Plan
    conflicts: pd.DataFrame
    requests: dict[str, int]
    dry_run: bool = False

    @property
    def counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.table["status"].value_counts().items()}

    @property
    def ok(self) -> bool:
        """True when every planned change was applied (or only planned, in a dry run)."""
        return bool(self.table["status"].isin(["applied", "planned"]).all())

    def __repr__(self) -> str:
        return f"Report({self.counts}, requests={self.requests})"

    def _repr_html_(self) -> str:
        return f"<p>{self!r}</p>" + self.table.head(50).to_html()


# ----------------------------------------------------------------------------------------
# diff
# ----------------------------------------------------------------------------------------
def _is_new_label(label: Any) -> bool:
    return label is None or (not isinstance(label, str) and pd.isna(label)) or (
        isinstance(label, str) and (label == "" or label.startswith(NEW_ID_PREFIX)))


def _check_index(main: pd.DataFrame, base: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Validate the index; return (is-new mask, record ids with temp ids for new rows)."""
    idx = main.index
    if isinstance(idx, pd.MultiIndex):
        raise UsageError("the frame has a MultiIndex: write_back needs the record id index 'id'")
    if idx.name != base.index.name:
        hint = (" (it looks reset: call .set_index('id'))" if "id" in main.columns else "")
        raise UsageError(f"the frame's index is {idx.name!r}, not the record id index "
                         f"{base.index.name!r}{hint}")
    if pd.api.types.is_numeric_dtype(idx.dtype) or pd.api.types.is_bool_dtype(idx.dtype):
        raise UsageError(f"the record id index was re-typed to {idx.dtype}: ids are strings")
    labels = idx.to_list()
    if pd.api.types.is_string_dtype(idx.dtype) and idx.dtype != object:
        # vectorized: string ids, new rows are NA, "" or "new:..."
        svals = pd.Series(idx, dtype=idx.dtype)
        new = (svals.isna() | svals.fillna("").str.startswith(NEW_ID_PREFIX)
               | (svals.fillna("") == "")).to_numpy(dtype=bool)
        if not new.any():
            return new, labels
    else:
        new = np.fromiter((_is_new_label(x) for x in labels), dtype=bool, count=len(labels))
    bad = [x for x, n in zip(labels, new, strict=False) if not n and not isinstance(x, str)]
    if bad:
        raise UsageError(f"the record id index holds non-string ids (e.g. {bad[0]!r}): "
                         "it was re-typed")
    ids: list[str] = []
    for pos, (x, n) in enumerate(zip(labels, new, strict=False)):
        if not n:
            ids.append(x)
        elif isinstance(x, str) and x.startswith(NEW_ID_PREFIX):
            ids.append(x)
        else:
            ids.append(f"{NEW_ID_PREFIX}{pos}")
    return new, ids


def _changed_positions(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Positions where base ``a`` and edited ``b`` (positionally aligned) differ.

    Vectorized when both columns share a non-object dtype; candidates are then confirmed
    with ``values_equal`` (NA vs "", NaN vs None, 1 vs 1.0 are not changes)."""
    n = len(a)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if a.dtype == b.dtype and a.dtype != object:
        try:
            res = a.array == b.array
            if isinstance(res, pd.api.extensions.ExtensionArray):
                eq = res.to_numpy(dtype=bool, na_value=False)
            else:
                eq = np.asarray(res, dtype=bool)
            a_na, b_na = a.isna().to_numpy(), b.isna().to_numpy()
            diff_mask = ~eq & ~(a_na & b_na)
            # same dtype, both non-NA and unequal: a change. Only NA against a value needs
            # the kind's rule ("" on an empty text field is not a change)
            sure = np.flatnonzero(diff_mask & ~a_na & ~b_na)
            maybe = np.flatnonzero(diff_mask & (a_na ^ b_na))
            if len(maybe) == 0:
                return sure
            av, bv = a.iloc[maybe].tolist(), b.iloc[maybe].tolist()
            extra = [i for i, x, y in zip(maybe, av, bv, strict=True) if not values_equal(x, y)]
            return np.sort(np.concatenate([sure, np.asarray(extra, dtype=np.int64)]))
        except (TypeError, ValueError):
            cand = np.arange(n)
    else:
        cand = np.arange(n)
    if len(cand) == 0:
        return cand
    av = a.iloc[cand].tolist() if len(cand) < n else a.tolist()
    bv = b.iloc[cand].tolist() if len(cand) < n else b.tolist()
    keep = [i for i, x, y in zip(cand, av, bv, strict=False) if not (x is y or values_equal(x, y))]
    return np.asarray(keep, dtype=np.int64)


def _encode(layout: _Layout, key: str, values: dict[str, Any], rid: str,
            col_names: Mapping[str, str]) -> Any:
    """Encode one field of one record, re-raising with the record id and column named."""
    f = layout.fields[key]
    codec = layout.codecs[key]
    try:
        out = codec.encode(values, f, layout.ctx)
        if f.kind not in _HOOKED_KINDS:
            # the service's own acceptance rule (same codec), checked before any request:
            # e.g. a latitude without its longitude
            codec.normalize(out, f, None)
        return out
    except InvalidValue as exc:
        exc.record_id = exc.record_id or rid
        exc.field = exc.field or key
        if exc.column is None and len(values) == 1:
            exc.column = col_names.get(next(iter(values)), next(iter(values)))
        if rid not in exc.message:
            exc.message = f"record {rid}: {exc.message}"
            exc.args = (exc.message,)
        raise


def _cell(v: Any) -> Any:
    """A value as shown in Plan.changes (NA for empties, paths as text)."""
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    return v


def diff(edited: Frames, base: Frames | None = None) -> Plan:
    """Compare edited frames with what was loaded; return the Plan of writes.

    Usage::

        plan = diff(frames)                  # base = frames.original
        plan.changes.query("action == 'update'")

    Raises a ``UsageError`` (or ``InvalidValue``/``ReadOnlyField``) naming the column and
    record id for anything that cannot be written; nothing is sent by ``diff``."""
    from . import assets  # late: assets imports nothing from here, but keeps import light

    source, base = _source_and_base(edited, base)
    layout = _Layout.of(source)
    rows = _Rows.of(edited.main, base.main, layout, source)
    b = _PlanBuilder(layout, rows, placed=assets.placed_assets(base, layout))
    b.updates(edited.main, base.main)
    b.creates(edited.main)
    b.connections(edited, base)
    b.deletes()
    return b.plan(source, edited, base)


def _source_and_base(edited: Frames, base: Frames | None) -> tuple[Source, Frames]:
    """The frames' metadata and the values to diff against (``edited.original``)."""
    if not isinstance(edited, Frames):
        raise UsageError(f"diff needs Frames (as read_object returns), not {type(edited).__name__}")
    source = edited.source or (base.source if base is not None else None)
    if source is None:
        raise UsageError("the frames carry no metadata (source): load them with read_object/"
                         "read_view or read_parquet, or pass base=")
    if base is None:
        base = edited.original
    if base is None:
        raise UsageError("the frames carry no original values to diff against: pass base=")
    return source, base


@dataclass
class _Rows:
    """Which edited rows are new, which existed, and where they were in the base frame."""

    ids: list[str]            # record id (or temporary id) of each edited row
    new_mask: np.ndarray      # edited row is to be created
    existing: pd.Index        # ids of the edited rows that existed, in edited order
    base_ids: pd.Index        # ids of the base frame (object dtype)

    @classmethod
    def of(cls, main: pd.DataFrame, bmain: pd.DataFrame, layout: _Layout,
           source: Source) -> _Rows:
        """Validate the index and columns (before any work): nothing unknown, no dups."""
        new_mask, ids = _check_index(main, bmain)
        for col in main.columns:
            if col not in layout.col_field:
                raise UsageError(f"unknown column {col!r}: not a column of the source's "
                                 f"fields (object {source.object_key})")
        existing = pd.Index([i for i, n in zip(ids, new_mask, strict=False) if not n],
                            dtype=object)
        if existing.has_duplicates:
            dups = existing[existing.duplicated()].unique().tolist()
            raise UsageError(f"duplicate record ids in the frame: {dups[:5]}")
        temp = [i for i, n in zip(ids, new_mask, strict=False) if n]
        if len(set(temp)) != len(temp):
            raise UsageError("duplicate temporary ids for new rows: "
                             f"{pd.Index(temp)[pd.Index(temp).duplicated()].tolist()[:5]}")
        base_ids = pd.Index(bmain.index.astype(object))
        unknown = existing.difference(base_ids)
        if len(unknown):
            raise UsageError(f"unknown record ids (not in the loaded frame): "
                             f"{unknown.tolist()[:5]}; new rows need an NA id or one "
                             f"starting with {NEW_ID_PREFIX!r}")
        return cls(ids, new_mask, existing, base_ids)

    @property
    def removed(self) -> list[str]:
        """Loaded records no longer in the edited frame (deletes)."""
        return self.base_ids.difference(self.existing).tolist()


class _PlanBuilder:
    """Collects a Plan phase by phase: updates, creates, connections, deletes."""

    def __init__(self, layout: _Layout, rows: _Rows, placed: Any) -> None:
        self.layout, self.rows, self.placed = layout, rows, placed
        self.changes: dict[str, list[Any]] = {c: [] for c in _CHANGE_COLUMNS}
        self.payloads: dict[str, dict[str, Any]] = {}
        self.actions: dict[str, Action] = {}
        self.loaded: dict[str, dict[str, dict[str, Any]]] = {}
        self.wanted: dict[str, dict[str, dict[str, Any]]] = {}
        self.create_rows: dict[str, int] = {}
        # keys-mode column -> frame column, to name the culprit in an encoding error
        self.inv_cols = {v: k for k, v in layout.col_key.items()}

    def add_change(self, rid: str, action: Action, key: str, col: str, old: Any,
                   new: Any) -> None:
        ch = self.changes
        ch["record_id"].append(rid)
        ch["action"].append(action)
        ch["field"].append(key)
        ch["column"].append(col)
        ch["old"].append(_cell(old))
        ch["new"].append(_cell(new))

    # ---- updates: vectorized per column ------------------------------------------------------
    def updates(self, main: pd.DataFrame, bmain: pd.DataFrame) -> None:
        """Changed cells of existing rows, compared column by column, then encoded per
        field (a field may span several columns, e.g. an address)."""
        rows = self.rows
        old_pos = np.flatnonzero(~rows.new_mask)
        same_order = len(old_pos) == len(bmain) and rows.existing.equals(rows.base_ids)
        base_rows = (np.arange(len(bmain)) if same_order
                     else rows.base_ids.get_indexer(rows.existing))
        ed_old = main.iloc[old_pos] if len(old_pos) != len(main) else main
        changed = self._changed_cells(ed_old, bmain, base_rows, same_order)
        for key, per in changed.items():
            self._encode_updates(key, per, ed_old, bmain, base_rows)

    def _changed_cells(self, ed_old: pd.DataFrame, bmain: pd.DataFrame,
                       base_rows: np.ndarray, same_order: bool) -> dict[str, dict[int, list[str]]]:
        """field key -> edited-existing row position -> its changed columns."""
        layout = self.layout
        changed: dict[str, dict[int, list[str]]] = {}
        for col in ed_old.columns:
            if col in bmain.columns:
                a = bmain[col] if same_order else bmain[col].iloc[base_rows]
            else:
                a = pd.Series([pd.NA] * len(base_rows), dtype=object)
            pos = _changed_positions(a.reset_index(drop=True),
                                     ed_old[col].reset_index(drop=True))
            if len(pos) == 0:
                continue
            key = layout.col_field[col]
            if layout.codecs[key].read_only:
                rid = self.rows.existing[int(pos[0])]
                raise ReadOnlyField(f"column {col!r} ({layout.fields[key].kind}) is computed by "
                                    f"the service and cannot be written (record {rid})",
                                    field=key, column=col, record_id=rid)
            per = changed.setdefault(key, {})
            for p in pos.tolist():
                per.setdefault(p, []).append(col)
        return changed

    def _encode_updates(self, key: str, per: dict[int, list[str]], ed_old: pd.DataFrame,
                        bmain: pd.DataFrame, base_rows: np.ndarray) -> None:
        """Encode one field for each record where one of its columns changed."""
        from . import assets

        layout = self.layout
        existing: list[str] = self.rows.existing.tolist()
        cols_present = [c for c in layout.field_cols[key] if c in ed_old.columns]
        bare = next((c for c in cols_present if layout.col_key[c] == key), None)
        positions = np.fromiter(per.keys(), dtype=np.int64, count=len(per))
        # the field's columns for just the changed rows, as lists (one slice per column)
        ed_vals = {c: ed_old[c].iloc[positions].tolist() for c in cols_present}
        b_idx = base_rows[positions]
        b_vals = {c: (bmain[c].iloc[b_idx].tolist() if c in bmain.columns
                      else [pd.NA] * len(positions)) for c in cols_present}
        for j, p in enumerate(positions.tolist()):
            rid = existing[p]
            new_v = {layout.col_key[c]: ed_vals[c][j] for c in cols_present}
            old_v = {layout.col_key[c]: b_vals[c][j] for c in cols_present}
            if layout.is_upload(key):
                enc = assets.plan_asset_value(new_v, old_v, layout.fields[key], rid,
                                              self.placed)
                if enc is assets.UNCHANGED:
                    continue
                if enc is None:   # cleared: the kind's empty write value
                    enc = _encode(layout, key, {key: pd.NA}, rid, {key: key})
            else:
                enc = _encode(layout, key, new_v, rid, self.inv_cols)
                if bare is not None and bare not in per[p] and self._same_write(
                        key, old_v, enc):
                    # the write column is unchanged, only others (e.g. a timer's total)
                    # changed, and they do not change what would be written
                    continue
            self.payloads.setdefault(rid, {})[key] = enc
            self.actions[rid] = "update"
            self.loaded.setdefault(rid, {})[key] = old_v
            self.wanted.setdefault(rid, {})[key] = new_v
            for c in per[p]:
                self.add_change(rid, "update", key, c, old_v[layout.col_key[c]],
                                new_v[layout.col_key[c]])

    def _same_write(self, key: str, old_v: dict[str, Any], enc: Any) -> bool:
        try:
            return bool(self.layout.codecs[key].encode(old_v, self.layout.fields[key],
                                                       self.layout.ctx) == enc)
        except (SvcError, NotImplementedError, TypeError, ValueError):
            return False

    # ---- creates -----------------------------------------------------------------------------
    def creates(self, main: pd.DataFrame) -> None:
        """Every non-empty field of each new row."""
        from . import assets

        layout = self.layout
        new_positions = np.flatnonzero(self.rows.new_mask)
        # the new rows' cells as lists, one slice per column: a row-by-row .iloc (a mixed
        # row Series each time) dominated a diff with many new rows
        new_rows = main.iloc[new_positions]
        by_col = {c: new_rows[c].tolist() for c in main.columns}
        present = {key: [c for c in cols if c in main.columns]
                   for key, cols in layout.field_cols.items()}
        for j, new_pos in enumerate(new_positions.tolist()):
            rid = self.rows.ids[new_pos]
            self.create_rows[rid] = new_pos
            self.actions[rid] = "create"
            self.payloads[rid] = {}
            row = {c: by_col[c][j] for c in main.columns}
            for key, cols_present in present.items():
                if not cols_present:
                    continue
                vals = {layout.col_key[c]: row[c] for c in cols_present}
                if all(is_empty_cell(v) for v in vals.values()):
                    continue
                if layout.codecs[key].read_only:
                    col = next(c for c in cols_present if not is_empty_cell(row[c]))
                    raise ReadOnlyField(f"new row {rid}: column {col!r} "
                                        f"({layout.fields[key].kind}) is computed by the "
                                        "service; leave it empty", field=key, column=col,
                                        record_id=rid)
                if layout.is_upload(key):
                    enc = assets.plan_asset_value(vals, {}, layout.fields[key], rid,
                                                  self.placed)
                    if enc is assets.UNCHANGED:
                        continue
                else:
                    enc = _encode(layout, key, vals, rid, self.inv_cols)
                self.payloads[rid][key] = enc
                self.wanted.setdefault(rid, {})[key] = vals
                for c in cols_present:
                    if not is_empty_cell(row[c]):
                        self.add_change(rid, "create", key, c, pd.NA, row[c])

    # ---- connections: exploded tables -> id lists --------------------------------------------
    def connections(self, edited: Frames, base: Frames) -> None:
        """A connection field is edited in its exploded table (record_id, connected_id):
        each record whose set of connected ids changed writes the whole new list."""
        all_ids = set(self.rows.ids)
        dropped = set(self.rows.removed)
        for name, table in edited.tables.items():
            conn_key = self.layout.tables.get(name)
            if conn_key is None:
                continue  # multi-choice tables etc.: the main-frame list column is the truth
            missing = {"record_id", "connected_id"} - set(table.columns)
            if missing:
                raise UsageError(f"connection table {name!r} lacks columns {sorted(missing)}")
            btable = base.tables.get(name)
            if btable is not None and table.equals(btable):
                continue
            new_lists = _connection_lists(name, conn_key, table, all_ids, dropped)
            old_lists: dict[str, list[str]] = {}
            if btable is not None:
                for r, c in zip(btable["record_id"].astype(object).tolist(),
                                btable["connected_id"].astype(object).tolist(), strict=False):
                    old_lists.setdefault(r, []).append(c)
            touched = {r for r in set(new_lists) | set(old_lists)
                       if set(new_lists.get(r, [])) != set(old_lists.get(r, []))}
            for r in sorted(touched, key=str):
                if r not in all_ids:
                    continue   # a deleted record: its connections go with it
                self._connection_change(r, name, conn_key, new_lists.get(r, []),
                                        old_lists.get(r, []))

    def _connection_change(self, r: str, name: str, conn_key: str, new_ids: list[str],
                           old_ids: list[str]) -> None:
        action = self.actions.get(r, "update")
        if action == "create" and not new_ids:
            return
        enc = _encode(self.layout, conn_key, {conn_key: new_ids}, r, {conn_key: name})
        self.payloads.setdefault(r, {})[conn_key] = enc
        self.actions[r] = action
        if action == "update":
            self.loaded.setdefault(r, {})[conn_key] = {conn_key: sorted(old_ids)}
        self.wanted.setdefault(r, {})[conn_key] = {conn_key: sorted(new_ids)}
        self.add_change(r, action, conn_key, name, old_ids if action == "update" else pd.NA,
                        new_ids)

    # ---- deletes -----------------------------------------------------------------------------
    def deletes(self) -> None:
        for rid in self.rows.removed:
            self.actions[rid] = "delete"
            self.payloads[rid] = {}
            self.add_change(rid, "delete", "", "", pd.NA, pd.NA)

    def plan(self, source: Source, edited: Frames, base: Frames) -> Plan:
        frame = pd.DataFrame(self.changes, columns=_CHANGE_COLUMNS)
        for c in ("record_id", "action", "field", "column"):
            frame[c] = frame[c].astype("string")
        return Plan(frame, self.payloads, self.actions, source, edited, base, self.loaded,
                    self.wanted, self.create_rows)


def _connection_lists(name: str, conn_key: str, table: pd.DataFrame, all_ids: set[str],
                      dropped: set[str]) -> dict[str, list[str]]:
    """record id -> its connected ids (in table order, deduplicated), validated; rows of
    records removed from the main frame are ignored."""
    rec = table["record_id"].astype(object).tolist()
    con = table["connected_id"].astype(object).tolist()
    keep_rows = [i for i, r in enumerate(rec) if r not in dropped]
    if len(keep_rows) != len(rec):
        rec = [rec[i] for i in keep_rows]
        con = [con[i] for i in keep_rows]
    for r, c in zip(rec, con, strict=False):
        if is_empty_cell(r) or r not in all_ids:
            raise UsageError(f"connection table {name!r}: record_id {r!r} is not a row of "
                             "the main frame", field=conn_key)
        if is_empty_cell(c) or not isinstance(c, str):
            raise InvalidValue(f"connection table {name!r}: connected_id {c!r} of record "
                               f"{r} is not a record id", field=conn_key, column=name,
                               record_id=str(r))
    lists: dict[str, list[str]] = {}
    for r, c in zip(rec, con, strict=False):
        lst = lists.setdefault(r, [])
        if c not in lst:   # a list per record: short, so `in` is cheap
            lst.append(c)
    return lists


def add_rows(frames: Frames, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Append new rows (to be created by ``write_back``); returns their temporary ids.

    Usage::

        add_rows(frames, [{"field_2": "New order", "field_5": 12.5}])
    """
    main = frames.main
    taken = {x for x in main.index if isinstance(x, str) and x.startswith(NEW_ID_PREFIX)}
    # count on from the pending new rows, skipping ids still in the frame (a new row may
    # have been dropped, or created while another one failed and kept its id)
    tmp: list[str] = []
    n = len(taken)
    while len(tmp) < len(rows):
        if f"{NEW_ID_PREFIX}{n}" not in taken:
            tmp.append(f"{NEW_ID_PREFIX}{n}")
        n += 1
    unknown = {k for r in rows for k in r} - set(main.columns)
    if unknown:
        raise UsageError(f"unknown columns in new rows: {sorted(unknown)}")
    add = pd.DataFrame(list(rows), index=pd.Index(tmp, name=main.index.name),
                       columns=main.columns)
    for col in main.columns:
        try:
            add[col] = add[col].astype(main[col].dtype)
        except (TypeError, ValueError):
            pass
    frames.main = pd.concat([main, add]) if len(main) else add
    return tmp


# ----------------------------------------------------------------------------------------
# Journal
# ----------------------------------------------------------------------------------------
def _jsonable(v: Any) -> Any:
    from .assets import PendingUpload

    if isinstance(v, PendingUpload):
        return {"upload": v.digest, "kind": v.kind, "filename": v.filename}
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def _key(*parts: Any) -> str:
    text = json.dumps(_jsonable(list(parts)), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class Journal:
    """Append-only JSON lines of acknowledged writes, so an interrupted run resumes.

    Each line is ``{"op": "intent"|"ack"|"upload", "key", ...}``; ``intent`` is written
    just before a create is sent, ``ack`` once the service answered. A run that settled
    every write (nothing unknown) ends with ``{"op": "settled"}``: what came before it is
    done and no longer consulted, so the same file can serve later pushes. A torn last
    line (a crash mid-write) is ignored.

    Usage: ``write_back(client, frames, journal="push.jsonl")``"""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.acks: dict[str, dict[str, Any]] = {}
        self.intents: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            with self.path.open("r", encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and rec.get("op") == "settled":
                        self.acks.clear()
                        self.intents.clear()
                        self.uploads.clear()
                        continue
                    if not isinstance(rec, dict) or "key" not in rec:
                        continue
                    {"ack": self.acks, "intent": self.intents,
                     "upload": self.uploads}.get(rec.get("op", ""), {})[rec["key"]] = rec
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, op: str, key: str, **info: Any) -> None:
        rec = {"op": op, "key": key, "ts": round(time.time(), 3), **info}
        line = json.dumps(_jsonable(rec), default=str) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()   # in the OS before the next write: survives a killed process
            {"ack": self.acks, "intent": self.intents,
             "upload": self.uploads}[op][key] = rec

    def settle(self) -> None:
        """Mark everything so far as done (a later push starts from a clean slate)."""
        with self._lock:
            self._fh.write(json.dumps({"op": "settled", "ts": round(time.time(), 3)}) + "\n")
            self._fh.flush()
            self.acks.clear()
            self.intents.clear()
            self.uploads.clear()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


# ----------------------------------------------------------------------------------------
# write_back
# ----------------------------------------------------------------------------------------
@dataclass
class _Target:
    object_key: str
    scene: str | None = None
    view: str | None = None
    token: str | None = None

    @property
    def is_view(self) -> bool:
        return self.view is not None

    @property
    def name(self) -> str:
        return f"{self.scene}/{self.view}" if self.is_view else self.object_key


def _resolve_target(client: Any, source: Source, target: Any, token: str | None) -> _Target:
    if target is None:
        target = (source.scene_key, source.view_key) if source.kind == "view" else \
            source.object_key
    if isinstance(target, str) and "/" in target:
        target = tuple(target.split("/", 1))
    if isinstance(target, str):
        if target != source.object_key:
            raise UsageError(f"target {target!r} is not the frames' object "
                             f"{source.object_key!r}")
        return _Target(source.object_key)
    if not (isinstance(target, tuple) and len(target) == 2 and all(
            isinstance(x, str) and x for x in target)):
        raise UsageError(f"target must be 'object_N' or ('scene_N', 'view_N'), got {target!r}")
    tok = token or getattr(client, "token", None)
    if not tok:
        raise ConfigurationError(
            f"writing through the view {target[0]}/{target[1]} needs a user token: call "
            "client.login(email, password) or pass token=")
    return _Target(source.object_key, target[0], target[1], tok)


def _view_fields(app: Mapping[str, Any] | None, scene: str, view: str) -> set[str] | None:
    """Field keys a view shows/accepts (form inputs, table columns), None when unknown."""
    if not app:
        return None
    for sc in app.get("scenes") or ():
        if sc.get("key") != scene:
            continue
        for v in sc.get("views") or ():
            if v.get("key") != view:
                continue
            found: set[str] = set()

            def walk(node: Any, found: set[str] = found) -> None:
                if isinstance(node, Mapping):
                    fld = node.get("field")
                    if isinstance(fld, Mapping) and isinstance(fld.get("key"), str):
                        found.add(fld["key"])
                    for k in ("groups", "columns", "inputs"):
                        if k in node:
                            walk(node[k])
                elif isinstance(node, list):
                    for x in node:
                        walk(x)

            walk(v)
            return found
    return None


@dataclass
class _Outcome:
    record_id: str
    action: str
    fields: list[str]
    status: str
    message: str = ""
    record: dict[str, Any] | None = None     # the server's record after the write
    new_id: str | None = None                # for creates


class _Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.n: dict[str, int] = {"writes": 0, "rereads": 0, "uploads": 0, "lookups": 0}

    def add(self, what: str, k: int = 1) -> None:
        with self._lock:
            self.n[what] += k


_REREAD_CHUNK = 50     # values per filtered re-read: keeps the URL near 4 KB


def _decode(records: Sequence[Mapping[str, Any]], source: Source) -> Frames:
    from .frames import build_frames

    tz = ZoneInfo(source.timezone) if source.timezone else None
    return build_frames(list(records), source.fields, source, tz=tz, keep_original=False)


def _where(source: Source) -> Any:
    return (source.scene_key, source.view_key) if source.kind == "view" else source.object_key


def _fetch_all(client: Any, where: Any, counter: _Counter, params: dict[str, Any] | None = None
               ) -> list[dict[str, Any]]:
    """Every record of a (filtered) list, each id once: the loaders' paginator, which
    re-reads when records move between pages instead of missing one (a missed record would
    pass for deleted in the guard). Each page request counts as a re-read."""
    pages = Paginator(client, where, filters=(params or {}).get("filters"), verify="none",
                      on_page=lambda _page: counter.add("rereads"))
    return pages.records()


def _key_field(layout: _Layout, base: Frames | None) -> tuple[str, pd.Series] | None:
    """A field whose loaded value identifies a record (auto increment, or unique), with
    the values by record id: list requests cannot filter on the record id itself."""
    if base is None:
        return None
    ranked = sorted(layout.fields.values(),
                    key=lambda f: (f.kind != "auto_increment", not f.unique))
    for f in ranked:
        if f.kind not in ("auto_increment", "short_text", "number", "email") or not (
                f.kind == "auto_increment" or f.unique):
            continue
        cols = layout.field_cols.get(f.key) or []
        if len(cols) == 1 and cols[0] in base.main.columns:
            return f.key, base.main[cols[0]]
    return None


def _pages(n_records: int) -> int:
    return -(-n_records // 1000)


def _reread(client: Any, source: Source, ids: Sequence[str], counter: _Counter,
            layout: _Layout, base: Frames | None) -> dict[str, dict[str, Any]]:
    """Current server records for ``ids``, batched: OR-filters on an identifying field
    (auto increment / unique) in chunks of 50 values, else the whole list paged, or one
    GET per record when that is fewer requests than the pages. Matched by id."""
    where = _where(source)
    want = set(ids)
    found: dict[str, dict[str, Any]] = {}
    n_chunks = -(-len(ids) // _REREAD_CHUNK)
    if n_chunks > 2 and base is not None and _pages(len(base.main)) < n_chunks:
        # many records to check: the whole list paged may take fewer requests
        found = _reread_list_if_fewer(client, where, want, n_chunks, counter)
    rest = [i for i in ids if i not in found]
    keyed = _key_field(layout, base)
    if keyed is not None and rest:
        found.update(_reread_by_key(client, where, want, rest, keyed, counter))
        rest = [i for i in rest if i not in found]
    if not rest:
        return found
    # no identifying value (or not found by it): one GET each, or the whole list
    n_pages = max(1, _pages(len(base.main))) if base is not None else len(rest)
    if source.kind == "object" and len(rest) <= n_pages:
        for rid in rest:
            counter.add("rereads")
            try:
                found[rid] = client.get_record(source.object_key, rid)
            except SvcError as exc:
                if getattr(exc, "status", None) != 404:   # 404: gone, the guard says so
                    raise
    else:
        found.update({r["id"]: r for r in _fetch_all(client, where, counter)
                      if r.get("id") in want})
    return found


def _reread_list_if_fewer(client: Any, where: Any, want: set[str], n_chunks: int,
                          counter: _Counter) -> dict[str, dict[str, Any]]:
    """The wanted records from the whole list, when it has at most ``n_chunks`` pages
    (the first page says how many there really are); else nothing."""
    env = client.get_page(where, params={"page": 1, "rows_per_page": 1000})
    counter.add("rereads")
    pages = int(env.get("total_pages") or 1)
    if pages > n_chunks:
        return {}
    recs = list(env.get("records") or [])
    for page in range(2, pages + 1):
        e = client.get_page(where, params={"page": page, "rows_per_page": 1000})
        counter.add("rereads")
        recs.extend(e.get("records") or [])
    return {r["id"]: r for r in recs if r.get("id") in want}


def _reread_by_key(client: Any, where: Any, want: set[str], rest: Sequence[str],
                   keyed: tuple[str, pd.Series], counter: _Counter
                   ) -> dict[str, dict[str, Any]]:
    """The wanted records found by OR-filters on their loaded identifying values (list
    requests cannot filter on the record id), ``_REREAD_CHUNK`` values per request."""
    key, values = keyed
    vals = values.reindex(pd.Index(list(rest), dtype=values.index.dtype))
    usable = [v for v in vals.tolist() if not is_empty_cell(v)]
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(usable), _REREAD_CHUNK):
        rules = [{"field": key, "operator": "is",
                  "value": int(v) if isinstance(v, float) and v.is_integer() else v}
                 for v in usable[start:start + _REREAD_CHUNK]]
        params = {"filters": json.dumps({"match": "or", "rules": rules}, default=str)}
        for r in _fetch_all(client, where, counter, params):
            if r.get("id") in want:
                found[r["id"]] = r
    return found


class _Values:
    """One record's values of one field in decoded frames: ``values(rid, key)``, keyed by
    keys-mode column (a connection: field key -> sorted id list).

    Connection tables are grouped by record once per frames, not filtered per record:
    the guard and the create lookup ask for many records, which was quadratic."""

    def __init__(self, frames: Frames, layout: _Layout) -> None:
        self.frames, self.layout = frames, layout
        self._links: dict[str, dict[Any, list[Any]]] = {}   # field -> record -> connected
        self._row_id: str | None = None
        self._row: Any = None

    def __call__(self, rid: str, key: str) -> dict[str, Any]:
        layout = self.layout
        if layout.fields[key].kind == "connection":
            links = self._links.get(key)
            if links is None:
                links = self._links[key] = self._group(key)
            return {key: sorted(str(x) for x in links.get(rid, ()))}
        if self._row is None or self._row_id != rid:   # a record's fields come in a row
            self._row, self._row_id = self.frames.main.loc[rid], rid
        row = self._row
        return {layout.col_key[c]: _py(row[c]) for c in layout.field_cols[key]
                if c in self.frames.main.columns}

    def _group(self, key: str) -> dict[Any, list[Any]]:
        for name, k in self.layout.tables.items():
            if k == key and name in self.frames.tables:
                t = self.frames.tables[name]
                out: dict[Any, list[Any]] = {}
                for r, c in zip(t["record_id"].tolist(), t["connected_id"].tolist(),
                                strict=True):
                    if not is_empty_cell(r):
                        out.setdefault(r, []).append(c)
                return out
        return {}


def _py(v: Any) -> Any:
    """numpy scalars (np.bool_ from a row of mixed dtypes) as Python values."""
    return v.item() if isinstance(v, (np.bool_, np.integer, np.floating)) else v


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(values_equal(a.get(k, pd.NA), b.get(k, pd.NA)) for k in set(a) | set(b))


def _response_record(resp: Any) -> dict[str, Any] | None:
    if isinstance(resp, Mapping):
        rec = resp.get("record") if "record" in resp and isinstance(resp.get("record"),
                                                                   Mapping) else resp
        return dict(rec) if isinstance(rec, Mapping) and rec.get("id") else None
    return None


def write_back(client: Any, edited: Frames, *, base: Frames | None = None,
               plan: Plan | None = None, dry_run: bool = False,
               on_conflict: Literal["skip", "overwrite", "raise"] = "skip",
               delete_missing: bool = False, journal: str | os.PathLike[str] | None = None,
               token: str | None = None, target: Any = None, guard: bool = True,
               max_workers: int = 8, progress: bool | None = None) -> Report:
    """Send the changes of ``edited`` (only changed fields of changed records).

    Usage::

        report = write_back(client, frames)                        # object, guard on
        write_back(client, frames, target=("scene_3", "view_7"))   # a form, as the user
        write_back(client, frames, dry_run=True).table             # nothing sent

    ``on_conflict``: a record changed on the server since it was loaded is skipped
    (default), overwritten, or raises ConflictError before anything is written.
    ``delete_missing``: rows removed from the frame are deleted (otherwise reported as
    skipped). ``journal``: a JSON-lines file of acknowledged writes; re-running with it
    resumes an interrupted run without re-sending. ``target``: write through a form or an
    inline-editing view (needs a user token: ``client.login`` or ``token=``).
    ``progress``: a progress bar for long runs (default: on in notebooks and terminals)."""
    # 1. validate & plan: everything that can fail without the service fails here
    if on_conflict not in ("skip", "overwrite", "raise"):
        raise UsageError(f"on_conflict must be 'skip', 'overwrite' or 'raise', got "
                         f"{on_conflict!r}")
    if plan is None:
        plan = diff(edited, base)
    elif plan.edited is not None and plan.edited is not edited:
        raise UsageError("the plan was made from other frames: diff(edited) again")
    layout = _Layout.of(plan.source)
    # 2. resolve the target (object or view + token)
    tgt = _resolve_target(client, plan.source, target, token)
    _check_upload_files(plan)
    if dry_run:
        return _dry_run_report(plan, delete_missing)

    run = _Run(client, plan, layout, tgt, Journal(journal) if journal is not None else None)
    try:
        run.key_records()
        run.triage(delete_missing)            # journal acks, deletes not asked for
        run.drop_fields_the_view_does_not_take()
        if guard:                             # 3. lost-update guard
            run.guard(on_conflict)
        run.apply(max_workers, progress)      # 4. uploads + writes, concurrently
        if run.jr and not any(o.status == "unknown" for o in run.outcomes.values()):
            run.jr.settle()
    finally:
        if run.jr:
            run.jr.close()
    run.refresh(edited)                       # 5. frames follow the server
    return run.report()                       # 6. one row per record


def _check_upload_files(plan: Plan) -> None:
    """Files may have vanished since diff(): check all before the first request."""
    from .assets import PendingUpload

    for rid, payload in plan.payloads.items():
        for key, val in payload.items():
            if isinstance(val, PendingUpload):
                val.check(key, rid)


def _dry_run_report(plan: Plan, delete_missing: bool) -> Report:
    rows = [_Outcome(rid, act, list(plan.payloads.get(rid, {})), "planned",
                     "" if act != "delete" or delete_missing
                     else "delete_missing=False: would be skipped")
            for rid, act in plan.actions.items()]
    return _report(rows, plan, [], _Counter(), dry_run=True)


# Kinds a created record can be looked up by (an "is" filter) when its outcome is unknown.
_LOOKUP_KINDS = ("short_text", "paragraph_text", "number")
# Without such a field, a lookup pages the whole list: only worth it for small objects.
_LOOKUP_SCAN_LIMIT = 5000


class _Run:
    """The state of one ``write_back`` run, and its phases in the order they run.

    ``todo`` shrinks as phases settle records into ``outcomes``; ``payloads`` are this
    run's copies of the plan's payloads (the view filter and the guard remove fields)."""

    def __init__(self, client: Any, plan: Plan, layout: _Layout, tgt: _Target,
                 jr: Journal | None) -> None:
        self.client, self.plan, self.layout, self.tgt, self.jr = client, plan, layout, tgt, jr
        self.source = plan.source
        self.counter = _Counter()
        self.keys: dict[str, str] = {}                    # record id -> journal key
        self.todo: dict[str, Action] = {}                 # records still to write
        self.payloads: dict[str, dict[str, Any]] = {}
        self.outcomes: dict[str, _Outcome] = {}           # one per settled record
        self.extra: list[_Outcome] = []                   # fields a view did not take
        self.conflicts: list[dict[str, Any]] = []
        self.server_now: dict[str, dict[str, Any]] = {}   # the guard's re-read, by id
        # created records a lookup must not mistake for the one it looks for
        self.known_ids = (set(map(str, plan.base.main.index)) if plan.base is not None
                          else set())
        self.adopted: set[str] = set()
        self._adopt_lock = threading.Lock()
        self._stop = threading.Event()
        self._base_values: _Values | None = None   # the loaded values, for the guard

    def fields_of(self, rid: str) -> list[str]:
        return list(self.plan.payloads.get(rid, {}))

    # ---- keys and journal ----------------------------------------------------------------
    def key_records(self) -> None:
        """Journal keys. Creates are keyed by content (+ occurrence): an acknowledged
        create is never sent again, whatever else changed. Updates and deletes are keyed by
        this run's whole plan, so a journal from an earlier, different push cannot mask a
        new edit back to an old value (the guard's re-read still spots what is already on
        the server)."""
        plan, name = self.plan, self.tgt.name
        seen: dict[str, int] = {}
        run_id = _key(name, sorted((rid, act, plan.payloads.get(rid, {}))
                                   for rid, act in plan.actions.items())) if self.jr else ""
        for rid, act in plan.actions.items():
            payload = plan.payloads.get(rid, {})
            if act == "create":
                h = _key("create", name, payload)
                n = seen[h] = seen.get(h, -1) + 1
                self.keys[rid] = f"{h}#{n}"
            else:
                self.keys[rid] = _key(act, name, rid, payload, run_id)

    def triage(self, delete_missing: bool) -> None:
        """Settle what needs no request: deletes not asked for, writes the journal acked."""
        for rid, act in self.plan.actions.items():
            if act == "delete" and not delete_missing:
                self.outcomes[rid] = _Outcome(rid, act, [], "skipped",
                                              "row removed from the frame; pass "
                                              "delete_missing=True to delete it")
                continue
            ack = self.jr.acks.get(self.keys[rid]) if self.jr else None
            if ack is not None:
                self.outcomes[rid] = _Outcome(rid, act, self.fields_of(rid), "applied",
                                              "already applied (journal)", None,
                                              ack.get("new_id"))
                continue
            self.todo[rid] = act
        self.payloads = {rid: dict(self.plan.payloads.get(rid, {})) for rid in self.todo}

    def drop_fields_the_view_does_not_take(self) -> None:
        """A view ignores fields it does not show: report them instead of pretending."""
        tgt = self.tgt
        if not tgt.is_view:
            return
        assert tgt.scene and tgt.view
        accepted = _view_fields(self.client.schema(), tgt.scene, tgt.view)
        if accepted is None:
            return
        for rid in list(self.todo):
            dropped = [k for k in self.payloads[rid] if k not in accepted]
            if not dropped:
                continue
            for k in dropped:
                del self.payloads[rid][k]
            self.extra.append(_Outcome(rid, self.todo[rid], dropped, "not_applied",
                                       f"not in the view {tgt.name}"))
            if not self.payloads[rid] and self.todo[rid] == "update":
                del self.todo[rid]

    # ---- lost-update guard -----------------------------------------------------------------
    def guard(self, on_conflict: str) -> None:
        """Re-read the records about to change (batched) and compare with what was loaded:
        a record changed on the server meanwhile is a conflict; a field already holding
        the wanted value is not sent again."""
        updates = [rid for rid, a in self.todo.items() if a == "update"]
        deletes = [rid for rid, a in self.todo.items() if a == "delete"]
        if not (updates or deletes):
            return
        plan, layout = self.plan, self.layout
        self.server_now = _reread(self.client, self.source, updates + deletes, self.counter,
                                  layout, plan.base)
        srv = (_Values(_decode(list(self.server_now.values()), self.source), layout)
               if self.server_now else None)
        for rid in deletes:
            self._guard_delete(rid, srv, on_conflict)
        for rid in updates:
            self._guard_update(rid, srv, on_conflict)
        if self.conflicts and on_conflict == "raise":
            raise ConflictError(f"{len({c['record_id'] for c in self.conflicts})} records "
                                "changed on the server since loaded; nothing was written",
                                conflicts=pd.DataFrame(self.conflicts))
        self.todo = {rid: a for rid, a in self.todo.items() if rid not in self.outcomes}

    def _guard_delete(self, rid: str, srv: _Values | None, on_conflict: str) -> None:
        if rid not in self.server_now:
            self.outcomes[rid] = _Outcome(rid, "delete", [], "applied",
                                          "already gone from the server")
            return
        assert srv is not None and self.plan.base is not None
        if self._base_values is None:
            self._base_values = _Values(self.plan.base, self.layout)
        was_of = self._base_values
        # deleting a record someone edited since it was loaded would lose that edit
        changed = [k for k, c in self.layout.codecs.items()
                   if not c.read_only and not _same(srv(rid, k), was_of(rid, k))]
        for key in changed:
            self.conflicts.append({"record_id": rid, "field": key,
                                   "loaded": _short(was_of(rid, key)),
                                   "server": _short(srv(rid, key)), "new": "<deleted>"})
        if changed and on_conflict == "skip":
            self.outcomes[rid] = _Outcome(rid, "delete", changed, "conflict",
                                          "changed on the server since loaded: "
                                          + ", ".join(changed))

    def _guard_update(self, rid: str, srv: _Values | None, on_conflict: str) -> None:
        from .assets import PendingUpload

        payload = self.payloads[rid]
        if rid not in self.server_now:
            self.outcomes[rid] = _Outcome(rid, "update", list(payload), "conflict",
                                          "the record is gone from the server")
            self.conflicts.append({"record_id": rid, "field": "", "loaded": "",
                                   "server": "<deleted>", "new": ""})
            return
        assert srv is not None
        clash: list[str] = []
        done: list[str] = []
        for key, val in list(payload.items()):
            now = srv(rid, key)
            was = self.plan.loaded.get(rid, {}).get(key, {})
            want = self.plan.wanted.get(rid, {}).get(key, {})
            prior = self.jr.uploads.get(_key("upload", self.keys[rid], key, val.digest)) \
                if self.jr and isinstance(val, PendingUpload) else None
            if prior is not None and now.get(key) == prior.get("asset_id"):
                done.append(key)   # placed by an earlier run whose answer was lost
            elif want and _same(now, want):
                done.append(key)
            elif was and not _same(now, was):
                clash.append(key)
                self.conflicts.append({"record_id": rid, "field": key, "loaded": _short(was),
                                       "server": _short(now), "new": _short(want)})
        for key in done:  # already on the server (e.g. a resumed run): not re-sent
            del payload[key]
        if clash and on_conflict == "skip":
            self.outcomes[rid] = _Outcome(rid, "update", clash, "conflict",
                                          "changed on the server since loaded: "
                                          + ", ".join(clash))
        elif not payload:
            self.outcomes[rid] = _Outcome(rid, "update", done, "applied",
                                          "already on the server", self.server_now[rid])

    # ---- apply -----------------------------------------------------------------------------
    def apply(self, max_workers: int, progress: bool | None) -> None:
        """Updates, then creates, then deletes, concurrently within the client's pace."""
        todo = self.todo
        order = sorted(todo, key=lambda r: {"update": 0, "create": 1, "delete": 2}[todo[r]])
        if not order:
            return
        workers = max(1, min(max_workers, len(order)))
        pool = ThreadPoolExecutor(workers, thread_name_prefix="write_back")
        bar = _progress_bar(progress, len(order))
        try:
            for out in pool.map(self._write, order):
                self.outcomes[out.record_id] = out
                if bar is not None:
                    bar.update(1)
        except BaseException:
            # interrupted (Ctrl-C, a crash): start nothing more; the journal holds
            # every acknowledged write for the re-run
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        if bar is not None:
            bar.close()

    def _write(self, rid: str) -> _Outcome:
        """One record's write; service errors become its outcome, not the run's."""
        act = self.todo[rid]
        if self._stop.is_set():
            return _Outcome(rid, act, list(self.payloads.get(rid, {})), "skipped", "interrupted")
        try:
            if act == "update":
                return self._update(rid)
            if act == "create":
                return self._create(rid)
            return self._delete(rid)
        except OutcomeUnknown as exc:
            return _Outcome(rid, act, list(self.payloads.get(rid, {})), "unknown", exc.message)
        except SvcError as exc:
            return _Outcome(rid, act, list(self.payloads.get(rid, {})), "failed", exc.message)
        except BaseException:
            self._stop.set()   # a crash or Ctrl-C: no further write starts
            raise

    def _resolve_uploads(self, rid: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload with each pending upload replaced by its asset id, uploading just
        before the write that places it (or reusing an upload the journal remembers)."""
        from .assets import PendingUpload, upload

        jr = self.jr
        out = dict(payload)
        for key, val in payload.items():
            if not isinstance(val, PendingUpload):
                continue
            ukey = _key("upload", self.keys[rid], key, val.digest)
            prior = jr.uploads.get(ukey) if jr else None
            if prior is not None:
                out[key] = prior["asset_id"]   # uploaded, never placed: reuse it
                continue
            asset = None
            for attempt in range(3):
                self.counter.add("uploads")
                try:
                    asset = upload(self.client, val, val.kind)
                    break
                except ServerError as exc:
                    # an upload that may have landed only leaves an unplaced asset
                    # behind: sending it again cannot duplicate a placement
                    if attempt == 2:
                        raise ServerError(f"upload of {val} for {key} failed, the "
                                          f"record was not written: {exc.message}") from None
            assert asset is not None
            if jr:
                jr.write("upload", ukey, asset_id=asset["id"], record_id=rid, field=key)
            out[key] = asset["id"]
        return out

    def _update(self, rid: str) -> _Outcome:
        client, tgt, jr = self.client, self.tgt, self.jr
        body = self._resolve_uploads(rid, self.payloads[rid])
        self.counter.add("writes")
        if tgt.is_view:
            assert tgt.scene and tgt.view
            resp = client.update_view_record(tgt.scene, tgt.view, rid, body, token=tgt.token)
        else:
            resp = client.update_record(tgt.object_key, rid, body)
        if jr:
            jr.write("ack", self.keys[rid], action="update", record_id=rid)
        rec = _response_record(resp)
        if tgt.is_view and rec is not None:
            # a view answers with the fields it shows: one it did not take is missing
            missing = [k for k in body if k not in rec and f"{k}_raw" not in rec]
            if missing:
                self.extra.append(_Outcome(rid, "update", missing, "not_applied",
                                           f"the view {tgt.name} did not take them"))
        return _Outcome(rid, "update", list(body), "applied", "", rec)

    def _create(self, tmp: str) -> _Outcome:
        """A create is never repeated blindly: after an unknown outcome the record is
        looked up first, and sent again only when verified absent."""
        client, tgt, jr = self.client, self.tgt, self.jr
        key = self.keys[tmp]
        body = self._resolve_uploads(tmp, self.payloads[tmp])
        if jr and key in jr.intents:
            found = self._lookup(tmp, body)   # a previous run sent it and never heard back
            if found:
                jr.write("ack", key, action="create", record_id=tmp, new_id=found)
                return _Outcome(tmp, "create", list(body), "applied",
                                "created by an earlier run (found)", None, found)
        for attempt in range(3):
            if jr:
                jr.write("intent", key, action="create", record_id=tmp)
            self.counter.add("writes")
            try:
                if tgt.is_view:
                    assert tgt.scene and tgt.view
                    resp = client.create_view_record(tgt.scene, tgt.view, body,
                                                     token=tgt.token)
                else:
                    resp = client.create_record(tgt.object_key, body)
            except (OutcomeUnknown, ServerError) as exc:
                time.sleep(0.2 * (attempt + 1))   # let a slow commit land before looking
                try:
                    found = self._lookup(tmp, body)
                except SvcError:
                    found = None
                if found:
                    if jr:
                        jr.write("ack", key, action="create", record_id=tmp, new_id=found)
                    return _Outcome(tmp, "create", list(body), "applied",
                                    "outcome was unknown; found on the server", None, found)
                if not self._lookup_possible(body):
                    return _Outcome(tmp, "create", list(body), "unknown",
                                    f"{exc.message}; re-run with the journal to check")
                continue   # verified absent: sending again cannot duplicate it
            rec = _response_record(resp)
            new_id = rec["id"] if rec else None
            with self._adopt_lock:
                if new_id:
                    self.adopted.add(new_id)
            if jr:
                jr.write("ack", key, action="create", record_id=tmp, new_id=new_id)
            return _Outcome(tmp, "create", list(body), "applied", "", rec, new_id)
        return _Outcome(tmp, "create", list(body), "unknown",
                        "the service kept failing; nothing found on the server")

    def _delete(self, rid: str) -> _Outcome:
        client, tgt = self.client, self.tgt
        self.counter.add("writes")
        try:
            if tgt.is_view:
                assert tgt.scene and tgt.view
                client.delete_view_record(tgt.scene, tgt.view, rid, token=tgt.token)
            else:
                client.delete_record(tgt.object_key, rid)
        except SvcError as exc:
            if getattr(exc, "status", None) != 404:   # already gone is what we wanted
                raise
        if self.jr:
            self.jr.write("ack", self.keys[rid], action="delete", record_id=rid)
        return _Outcome(rid, "delete", [], "applied")

    def _lookup_possible(self, body: Mapping[str, Any]) -> bool:
        return any(self.layout.fields[k].kind in _LOOKUP_KINDS for k in body) \
            or len(self.known_ids) <= _LOOKUP_SCAN_LIMIT

    def _lookup(self, tmp: str, body: Mapping[str, Any]) -> str | None:
        """The id of a record matching a create whose outcome is unknown, or None."""
        layout = self.layout
        want = self.plan.wanted.get(tmp, {})
        rules = []
        for key, val in body.items():
            if layout.fields[key].kind in _LOOKUP_KINDS and isinstance(
                    val, (str, int, float)) and not isinstance(val, bool):
                rules.append({"field": key, "operator": "is", "value": val})
        params = {"filters": json.dumps({"match": "and", "rules": rules[:5]})} if rules \
            else None
        if params is None and len(self.known_ids) > _LOOKUP_SCAN_LIMIT:
            return None   # no way to find it cheaply: report the outcome as unknown
        self.counter.add("lookups")
        recs = _fetch_all(self.client, _where(self.source), self.counter, params)
        cands = [r for r in recs if r.get("id") not in self.known_ids]
        if not cands:
            return None
        values = _Values(_decode(cands, self.source), layout)
        for r in cands:
            rid = r["id"]
            if all(_same(values(rid, k), want.get(k, {}))
                   for k in want if not layout.is_upload(k)):
                with self._adopt_lock:   # two lost creates must not adopt the same record
                    if rid in self.adopted:
                        continue
                    self.adopted.add(rid)
                return rid
        return None

    # ---- after the writes ------------------------------------------------------------------
    def refresh(self, edited: Frames) -> None:
        """Frames follow the server; ``original`` follows the frames (see ``_refresh``)."""
        pending: dict[str, list[str]] = {}
        for o in self.extra:
            pending.setdefault(o.record_id, []).extend(o.fields)
            if o.action == "create" and o.record_id in self.outcomes:
                o.new_id = self.outcomes[o.record_id].new_id   # the created record's id
        _refresh(edited, self.plan, self.layout, self.outcomes, self.server_now, pending)

    def report(self) -> Report:
        rows = [self.outcomes[rid] for rid in self.plan.actions if rid in self.outcomes]
        return _report(rows + self.extra, self.plan, self.conflicts, self.counter)


def _progress_bar(progress: bool | None, total: int) -> Any:
    """A tqdm.auto bar for long runs (a widget in notebooks); None when off or short."""
    from .loaders import want_progress

    if total < 50 or not want_progress(progress):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="write_back", unit="rec")


def _short(v: Mapping[str, Any]) -> Any:
    vals = list(v.values())
    return vals[0] if len(vals) == 1 else {k: x for k, x in v.items() if not is_empty_cell(x)}


def _report(rows: Sequence[_Outcome], plan: Plan, conflicts: list[dict[str, Any]],
            counter: _Counter, dry_run: bool = False) -> Report:
    table = pd.DataFrame(
        [(o.new_id or o.record_id if o.action == "create" else o.record_id, o.action,
          ", ".join(o.fields), o.status, o.message) for o in rows],
        columns=_REPORT_COLUMNS).astype("string")
    conf = pd.DataFrame(conflicts, columns=["record_id", "field", "loaded", "server", "new"])
    return Report(table, plan, conf, dict(counter.n), dry_run)


# ----------------------------------------------------------------------------------------
# After the writes: frames follow the server, and ``original`` follows the frames
# ----------------------------------------------------------------------------------------
def _refresh(edited: Frames, plan: Plan, layout: _Layout, outcomes: Mapping[str, _Outcome],
             server_now: Mapping[str, dict[str, Any]],
             not_applied: Mapping[str, list[str]] | None = None) -> None:
    """Update ``edited`` from the server's answers and refresh ``edited.original`` for the
    records that were applied, so a second write_back of the same frames sends nothing."""
    if plan.edited is not edited or edited.source is None:
        return
    applied = {rid: o for rid, o in outcomes.items() if o.status == "applied"}
    if not applied:
        return
    relabel = _relabel_created(edited, plan, applied)
    _take_server_values(edited, layout, applied, server_now)
    if edited.original is not None:
        _refresh_original(edited, edited.original, layout, applied, relabel,
                          not_applied or {})


def _relabel_created(edited: Frames, plan: Plan, applied: Mapping[str, _Outcome]
                     ) -> dict[Any, str]:
    """Give created rows (and their connection-table rows) their real ids; returns
    temporary id -> real id."""
    relabel: dict[Any, str] = {}
    if not any(o.action == "create" and o.new_id for o in applied.values()):
        return relabel
    main = edited.main
    labels = main.index.tolist()
    for tmp, o in applied.items():
        if o.action == "create" and o.new_id and tmp in plan.create_rows:
            relabel[tmp] = o.new_id
            labels[plan.create_rows[tmp]] = o.new_id
    idx_dtype: Any = main.index.dtype if main.index.dtype != object else "string"
    main.index = pd.Index(pd.array(labels, dtype=idx_dtype), name=main.index.name)
    for name in list(edited.tables):
        t = edited.tables[name]
        if "record_id" in t.columns and t["record_id"].isin(list(relabel)).any():
            t = t.copy()
            t["record_id"] = t["record_id"].map(lambda r: relabel.get(r, r)).astype(
                t["record_id"].dtype)
            edited.tables[name] = t
    return relabel


def _take_server_values(edited: Frames, layout: _Layout, applied: Mapping[str, _Outcome],
                        server_now: Mapping[str, dict[str, Any]]) -> None:
    """Values as the server stored them (rendering, rounding, computed fields); a view's
    answer holds only its own fields, so only fields present in an answer are taken."""
    recs = [o.record for o in applied.values() if o.record]
    recs += [server_now[rid] for rid, o in applied.items() if o.record is None
             and rid in server_now]
    if not recs:
        return
    try:
        dec = _decode(recs, edited.source) if edited.source is not None else None
    except (SvcError, ValueError, TypeError, KeyError):
        dec = None
    if dec is None:
        return
    main = edited.main
    present = {r["id"]: {k[:-4] if k.endswith("_raw") else k for k in r} for r in recs}
    for col in main.columns:
        key = layout.col_field.get(col)
        if key is None or col not in dec.main.columns:
            continue
        ids = [i for i in dec.main.index if i in main.index and key in present[i]]
        if not ids:
            continue
        try:
            s = main[col].copy()
            s.loc[ids] = dec.main.loc[ids, col]
            main[col] = s
        except (TypeError, ValueError):
            pass   # the frame's dtype cannot hold the server's value: keep the edit


def _refresh_original(edited: Frames, orig: Frames, layout: _Layout,
                      applied: Mapping[str, _Outcome], relabel: Mapping[Any, str],
                      not_applied: Mapping[str, list[str]]) -> None:
    """original := edited for applied records (others keep their loaded values)."""
    done_ids = [o.new_id or rid for rid, o in applied.items() if o.action != "delete"]
    gone = {rid for rid, o in applied.items() if o.action == "delete"}
    keep = orig.main.drop(index=[i for i in set(done_ids) | gone if i in orig.main.index])
    fresh = edited.main.loc[[i for i in done_ids if i in edited.main.index]]
    om = pd.concat([keep, fresh]) if len(keep) else fresh.copy()
    for col in om.columns:
        if col in orig.main.columns and om[col].dtype != orig.main[col].dtype:
            try:
                om[col] = om[col].astype(orig.main[col].dtype)
            except (TypeError, ValueError):
                pass
    # fields a view did not take stay pending: their loaded values are kept. Grouped by
    # column, so each column is copied once, not once per record
    pending: dict[str, list[str]] = {}
    for tmp_or_id, keys in not_applied.items():
        rid = relabel.get(tmp_or_id, tmp_or_id)
        if rid not in om.index:
            continue
        for key in keys:
            for col in layout.field_cols.get(key, []):
                if col in om.columns:
                    pending.setdefault(col, []).append(rid)
    for col, rids in pending.items():
        s = om[col].copy()
        for rid in rids:
            s.loc[rid] = orig.main.at[rid, col] if rid in orig.main.index else None
        om[col] = s
    orig.main = om
    touched = list(set(done_ids) | gone | set(applied))
    for name, t in list(edited.tables.items()):
        if "record_id" not in t.columns:
            continue
        if gone:   # deleted records take their table rows with them
            t = t[~t["record_id"].isin(list(gone))].reset_index(drop=True)
            edited.tables[name] = t
        ot = orig.tables.get(name)
        if ot is None:
            continue
        orig.tables[name] = pd.concat(
            [ot[~ot["record_id"].isin(touched)], t[t["record_id"].isin(touched)]],
            ignore_index=True)


def push(client: Any, path: str | os.PathLike[str], *, dry_run: bool = False,
         save: bool = True, **options: Any) -> Report:
    """``write_back`` for frames saved by ``to_parquet`` (the ``svc-frames push`` command).

    After a run that applied something, the refreshed frames (new ids, server values, the
    new ``original``) are saved back to ``path``, so pushing again sends nothing.

    Usage: ``push(Client.from_env(), "out/orders", dry_run=True).table``"""
    from .parquet import read_parquet, to_parquet

    frames = read_parquet(path)
    if frames.source is None or frames.original is None:
        raise UsageError(f"{path}: no write-back metadata (source and original) in this "
                         "parquet directory: save it with to_parquet(read_object(...))")
    report = write_back(client, frames, dry_run=dry_run, **options)
    if save and not dry_run and (report.table["status"] == "applied").any():
        to_parquet(frames, path)
    return report
