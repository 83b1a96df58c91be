"""diff: compare edited frames with what was loaded and build the Plan of writes (new
rows: appends.py; columns that are no field's: analysis.py).

Usage::

    plan = diff(frames)                  # base = frames.original

The loaded frames remember their ``original``; ``diff`` compares column by column
(vectorized) and encodes only the changed fields of changed records through the same kind
codec that decoded them, so an unchanged frame plans nothing. Everything that cannot be
written is refused here, naming the column and record: columns that look like fields
but are none (analysis.py; other columns are left out), duplicate or unknown ids, a reset or re-typed index, values a kind does not accept, read-only kinds,
missing upload files, frames without metadata, a new row without a field the schema marks
required (the hosted service would create it blank: the refusal is about intent), an
update that empties such a field, and text UTF-8 cannot encode (a lone surrogate).

Reading order: ``source_and_base`` / ``Rows.of`` (validate), then ``PlanBuilder``
(updates, creates, connections, required fields of creates, deletes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidValue, ReadOnlyField, SvcError, UsageError
from ..frames import Frames, Source
from ..joins import refuse_join_result
from ..kinds import is_empty_cell, unencodable_text, values_equal
from .analysis import analysis_columns, refuse_new_only
from .appends import APPEND_FORMS, record_index
from .plan import CHANGE_COLUMNS, NEW_ID_PREFIX, Action, Layout, Plan
from .retype import read_as_loaded
from .uploads import UNCHANGED, placed_assets, plan_asset_value
from .values import interval_lists, intervals_key, same_intervals
from .walls import may_be_skipped

__all__ = ["diff"]

# Kinds whose acceptance needs the service (connected ids, uploaded assets): not
# pre-checked with the codec's normalize.
_HOOKED_KINDS = ("connection", "file", "image")
# Removed records a row without an id is compared with (a cleared id), at most.
_CLEARED_SCAN = 2000


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


def _encode(layout: Layout, key: str, values: dict[str, Any], rid: str,
            col_names: Mapping[str, str]) -> Any:
    """Encode one field of one record, re-raising with the record id and column named."""
    f = layout.fields[key]
    codec = layout.codecs[key]
    for k, v in values.items():
        bad = unencodable_text(v)
        if bad is not None:
            # no request can carry it (JSON bodies and URLs are UTF-8): said here, with the
            # culprit, rather than as a bare UnicodeEncodeError from deep in a codec
            col = col_names.get(k, k)
            raise InvalidValue(f"record {rid}: column {col!r} holds text that cannot be "
                               f"encoded as UTF-8 ({bad!r:.60}: a lone surrogate, e.g. from "
                               "a badly decoded file); fix the text (nothing was sent)",
                               field=key, column=col, record_id=rid)
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
        said_by_key = f"{key} ({f.kind}): "
        named = layout.names.get(key, key)
        if named != key and exc.message.startswith(said_by_key):
            # frames named by label: the field as they name it, its key beside it
            exc.message = f"{named!r} ({key}, {f.kind}): {exc.message[len(said_by_key):]}"
            exc.args = (exc.message,)
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

    Every check that needs no service runs here: a value its field's kind does not take,
    an edit of a field the service computes, a required field emptied or left blank in a
    new row, a join result instead of object frames. Nothing is sent. Rows whose id starts with ``new:`` (see :func:`add_rows`) or
    is empty are creates; loaded rows missing from the frame are deletes (sent only with
    ``write_back(..., delete_missing=True)``). Columns are matched to fields by the
    frames' own naming (keys or labels: docs/column-names.md); a column that is no
    field's (an analysis column, ``frames.main["x2"] = ...``) is left out, never sent,
    and named in ``plan.left_out``, unless it looks like a field (a key shape, the other
    naming, a near-miss of a field column: refused, see ``writeback/analysis.py``).

    Parameters
    ----------
    edited : Frames
        Frames as loaded (``read_object``, ``read_view``, ``read_parquet``), edited.
    base : Frames, optional
        The values to compare with; default ``edited.original`` (what was loaded).

    Returns
    -------
    Plan
        One entry per record to update, create or delete; ``plan.changes`` shows each
        changed cell (``record_id, action, field, column, old, new``).

    Raises
    ------
    UsageError
        ``edited`` is not Frames, carries no source or no values to compare with, or is a
        join result; the record ids were changed (re-typed, repeated, cleared, or ids
        that were not loaded); a column that looks like a field but is none (a key
        the source lacks, a field named the other way, a near-miss of a field column, a
        column filled only in new rows); a timer edit that
        cannot be applied faithfully; a connection or timer table without its columns.
        The message names the column, the table or the record.
    InvalidValue
        A value its field's kind does not accept, or a required field emptied (naming
        the field, the column and the record).
    ReadOnlyField
        An edit of a field the service computes (an equation, a sum, an auto increment).

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> rid = frames.main.index[0]
    >>> frames.main.loc[rid, "Priority"] = 1.0
    >>> plan = diff(frames)
    >>> plan.counts
    {'update': 1, 'create': 0, 'delete': 0}
    >>> plan.changes[["field", "column", "old", "new"]]    # the key, the frame's column
          field    column  old  new
    0  field_25  Priority  4.0  1.0
    >>> frames.main.loc[rid, "WO Number"] = 99          # an auto increment
    >>> diff(frames)
    Traceback (most recent call last):
    ...
    svc_frames.errors.ReadOnlyField: ...
    """
    source, base = source_and_base(edited, base)
    layout = Layout.of(source)
    left_out = analysis_columns(edited.main, layout)   # never sent (analysis.py)
    main = edited.main.drop(columns=left_out) if left_out else edited.main
    rows = Rows.of(edited.main, base.main, layout, source)
    refuse_new_only(edited.main, left_out, rows.new_mask)
    b = PlanBuilder(layout, rows, placed=placed_assets(base, layout), base_main=base.main,
                    base=base)
    b.updates(main, base.main)
    b.creates(main)
    b.connections(edited, base)
    b.timers(edited, base)
    b.required_of_creates()
    b.deletes()
    plan = b.plan(source, edited, base)
    plan.left_out = left_out
    return plan


def source_and_base(edited: Frames, base: Frames | None) -> tuple[Source, Frames]:
    """The frames' metadata and the values to diff against (``edited.original``)."""
    refuse_join_result(edited)  # a join result: edit the object frame it came from
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
class Rows:
    """Which edited rows are new, which existed, and where they were in the base frame."""

    ids: list[str]            # record id (or temporary id) of each edited row
    new_mask: np.ndarray      # edited row is to be created
    existing: pd.Index        # ids of the edited rows that existed, in edited order
    base_ids: pd.Index        # ids of the base frame (object dtype)

    @classmethod
    def of(cls, main: pd.DataFrame, bmain: pd.DataFrame, layout: Layout,
           source: Source) -> Rows:
        """Validate the index (before any work): no unknown or duplicate ids."""
        new_mask, ids = record_index(main, bmain)
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
                             f"{unknown.tolist()[:5]}: records of another load? To create "
                             f"records instead, {APPEND_FORMS}")
        return cls(ids, new_mask, existing, base_ids)

    @property
    def removed(self) -> list[str]:
        """Loaded records no longer in the edited frame (deletes)."""
        return self.base_ids.difference(self.existing).tolist()


class PlanBuilder:
    """Collects a Plan phase by phase: updates, creates, connections, deletes."""

    def __init__(self, layout: Layout, rows: Rows, placed: Any,
                 base_main: pd.DataFrame | None = None, base: Frames | None = None) -> None:
        self.layout, self.rows, self.placed = layout, rows, placed
        self.base_main = base_main   # to tell a cleared id from a new row
        self.base = base
        self._spans: dict[str, dict[Any, list[tuple[Any, Any]]]] = {}  # timer -> record -> ...
        self.changes: dict[str, list[Any]] = {c: [] for c in CHANGE_COLUMNS}
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
        ed_old = self._as_loaded(ed_old, bmain)
        changed = self._changed_cells(ed_old, bmain, base_rows, same_order)
        for key, per in changed.items():
            self._encode_updates(key, per, ed_old, bmain, base_rows)

    def _as_loaded(self, ed_old: pd.DataFrame, bmain: pd.DataFrame) -> pd.DataFrame:
        """Columns an edit re-typed (text, category, object, another number or timezone)
        read back as loaded, by their field's kind (retype.py), so a value that means
        what it meant is no change."""
        retyped = {c: read_as_loaded(ed_old[c], bmain[c], self.layout.fields[
                       self.layout.col_field[c]], c)
                   for c in ed_old.columns
                   if c in bmain.columns and ed_old[c].dtype != bmain[c].dtype
                   and c in self.layout.col_field}
        return ed_old.assign(**retyped) if retyped else ed_old

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
            if layout.fields[key].required and all(is_empty_cell(v) for v in new_v.values()):
                self.refuse_blanked_required(rid, key, per[p])
            if layout.is_upload(key):
                enc = plan_asset_value(new_v, old_v, layout.fields[key], rid,
                                              self.placed)
                if enc is UNCHANGED:
                    continue
                if enc is None:   # cleared: the kind's empty write value
                    enc = _encode(layout, key, {key: pd.NA}, rid, {key: key})
            elif layout.fields[key].kind == "timer":
                enc = self._timer_update(key, rid, new_v, old_v, per[p])
                if enc is UNCHANGED:
                    continue
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

    # ---- timers: summary columns and the intervals table ------------------------------------
    def base_spans(self, key: str) -> dict[Any, list[tuple[Any, Any]]]:
        """record id -> the loaded intervals of timer ``key``."""
        spans = self._spans.get(key)
        if spans is None:
            table = self.layout.table_of(key, self.base) if self.base is not None else None
            spans = self._spans[key] = interval_lists(table)
        return spans

    def _timer_update(self, key: str, rid: str, new_v: dict[str, Any], old_v: dict[str, Any],
                      changed: list[str]) -> Any:
        """The write of a timer whose summary columns changed. One interval (or none):
        the start and end are its ends. Several: the start moves the first interval's
        start and the end the last one's end; anything else (the total, an end inside
        another interval, a cleared end) cannot be applied faithfully and is refused."""
        layout = self.layout
        spans = self.base_spans(key).get(rid, [])
        start, end = new_v.get(key), new_v.get(f"{key}.to")
        table = next((n for n, k in layout.intervals.items() if k == key), key)
        how = (f"edit its intervals in tables[{table!r}] (record_id, from, to) instead; "
               "the total is computed from them")
        total_changed = any(layout.col_key[c] == f"{key}.total" for c in changed)
        ends_changed = any(layout.col_key[c] in (key, f"{key}.to") for c in changed)
        if len(spans) <= 1:
            enc = _encode(layout, key, new_v, rid, self.inv_cols)
            new_spans = [] if is_empty_cell(start) else [(start, end)]
        elif is_empty_cell(start) or is_empty_cell(end):
            raise UsageError(f"record {rid}: timer {key} has {len(spans)} intervals; a "
                             f"cleared start or end cannot say which to drop: {how}",
                             field=key)
        else:
            new_spans = list(spans)
            new_spans[0] = (start, spans[0][1])
            new_spans[-1] = (new_spans[-1][0], end)
            a, b = pd.Timestamp(str(start)), pd.Timestamp(str(end))
            if a > pd.Timestamp(spans[0][1]) or b < pd.Timestamp(spans[-1][0]):
                raise UsageError(f"record {rid}: timer {key} has {len(spans)} intervals; the "
                                 "start must stay in the first and the end in the last: "
                                 + how, field=key)
            enc = self._encode_times(key, rid, new_spans)
        if total_changed and not values_equal(new_v.get(f"{key}.total"),
                                              _total(new_spans)):
            raise UsageError(f"record {rid}: the total of timer {key} is computed by the "
                             f"service from the intervals: {how}", field=key)
        if not ends_changed:
            return UNCHANGED   # the total alone, and it already is what the intervals make
        old_v[intervals_key(key)] = spans
        new_v[f"{key}.total"] = _total(new_spans) if new_spans else pd.NA
        new_v[intervals_key(key)] = new_spans
        return enc

    def _encode_times(self, key: str, rid: str, spans: Sequence[tuple[Any, Any]]) -> Any:
        layout = self.layout
        codec = layout.codecs[key]
        try:
            return codec.encode_times(spans, layout.fields[key], layout.ctx)  # type: ignore[attr-defined]
        except InvalidValue as exc:
            exc.record_id = exc.record_id or rid
            exc.field = exc.field or key
            if rid not in exc.message:
                exc.message = f"record {rid}: {exc.message}"
                exc.args = (exc.message,)
            raise

    def timers(self, edited: Frames, base: Frames) -> None:
        """A timer's intervals are edited in its table (record_id, from, to): each record
        whose intervals changed writes them all (``{times: [...]}``)."""
        all_ids = set(self.rows.ids)
        dropped = set(self.rows.removed)
        for name, key in self.layout.intervals.items():
            table = edited.tables.get(name)
            if table is None:
                continue
            btable = base.tables.get(name)
            if btable is not None and table.equals(btable):
                continue
            missing = {"record_id", "from", "to"} - set(table.columns)
            if missing:
                raise UsageError(f"timer table {name!r} lacks columns {sorted(missing)}",
                                 field=key)
            new, old = interval_lists(table), interval_lists(btable)
            for r in sorted(set(new) | set(old), key=str):
                if same_intervals(new.get(r, []), old.get(r, [])) or r in dropped:
                    continue
                if r not in all_ids:
                    raise UsageError(f"timer table {name!r}: record_id {r!r} is not a row of "
                                     "the main frame", field=key)
                if key in self.payloads.get(r, {}):
                    raise UsageError(f"record {r}: both the summary columns and the "
                                     f"intervals (tables[{name!r}]) of timer {key} changed: "
                                     "edit the intervals only", field=key)
                self._timer_change(r, name, key, new.get(r, []), old.get(r, []))

    def _timer_change(self, r: str, name: str, key: str, new: list[tuple[Any, Any]],
                      old: list[tuple[Any, Any]]) -> None:
        action = self.actions.get(r, "update")
        if action == "create" and not new:
            return
        enc = self._encode_times(key, r, new)
        self.payloads.setdefault(r, {})[key] = enc
        self.actions[r] = action
        if action == "update":
            self.loaded.setdefault(r, {})[key] = self._summary(key, r, old)
        self.wanted.setdefault(r, {})[key] = _summary_of(key, new)
        self.add_change(r, action, key, name, old if action == "update" else pd.NA, new)

    def _summary(self, key: str, rid: str, spans: list[tuple[Any, Any]]) -> dict[str, Any]:
        """A record's loaded timer values (summary columns and intervals)."""
        out: dict[str, Any] = {}
        base = self.base_main
        for c in self.layout.field_cols[key]:
            if base is not None and c in base.columns and rid in base.index:
                out[self.layout.col_key[c]] = base.at[rid, c]
        out[intervals_key(key)] = spans
        return out

    def _same_write(self, key: str, old_v: dict[str, Any], enc: Any) -> bool:
        try:
            return bool(self.layout.codecs[key].encode(old_v, self.layout.fields[key],
                                                       self.layout.ctx) == enc)
        except (SvcError, NotImplementedError, TypeError, ValueError):
            return False

    # ---- creates -----------------------------------------------------------------------------
    def creates(self, main: pd.DataFrame) -> None:
        """Every non-empty field of each new row."""
        layout = self.layout
        new_positions = np.flatnonzero(self.rows.new_mask)
        # the new rows' cells as lists, one slice per column: a row-by-row .iloc (a mixed
        # row Series each time) dominated a diff with many new rows
        new_rows = main.iloc[new_positions]
        by_col = {c: new_rows[c].tolist() for c in main.columns}
        present = {key: [c for c in cols if c in main.columns]
                   for key, cols in layout.field_cols.items()}
        labels = main.index[new_positions].tolist()
        for j, new_pos in enumerate(new_positions.tolist()):
            rid = self.rows.ids[new_pos]
            self.create_rows[rid] = new_pos
            self.actions[rid] = "create"
            self.payloads[rid] = {}
            row = {c: by_col[c][j] for c in main.columns}
            if not (isinstance(labels[j], str) and labels[j].startswith(NEW_ID_PREFIX)):
                self._refuse_cleared_id(new_pos, row)
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
                    enc = plan_asset_value(vals, {}, layout.fields[key], rid,
                                                  self.placed)
                    if enc is UNCHANGED:
                        continue
                else:
                    enc = _encode(layout, key, vals, rid, self.inv_cols)
                self.payloads[rid][key] = enc
                self.wanted.setdefault(rid, {})[key] = vals
                for c in cols_present:
                    if not is_empty_cell(row[c]):
                        self.add_change(rid, "create", key, c, pd.NA, row[c])

    def _refuse_cleared_id(self, pos: int, row: Mapping[str, Any]) -> None:
        """A row without an id that holds values only the service computes, or exactly
        the values of a loaded record missing from the frame, is a loaded record whose id
        was cleared (e.g. set to NaN), not a new row: refuse it rather than create a
        copy (and delete the original)."""
        layout = self.layout
        computed = [c for c, v in row.items() if layout.codecs[layout.col_field[c]].read_only
                    and not is_empty_cell(v)]
        base, removed = self.base_main, self.rows.removed
        same_as = None
        if not computed and base is not None and 0 < len(removed) <= _CLEARED_SCAN:
            same_as = next((r for r in removed if r in base.index and all(
                values_equal(base.at[r, c], v) for c, v in row.items()
                if c in base.columns)), None)
        if not computed and same_as is None:
            return
        why = (f"its values are those of record {same_as}, missing from the frame"
               if same_as is not None else
               f"its column {computed[0]!r} "
               f"({layout.fields[layout.col_field[computed[0]]].kind}) holds a value only "
               "the service computes")
        raise UsageError(f"the id of row {pos} was cleared: {why}; restore its id (to "
                         f"create records, {APPEND_FORMS})")

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
        if action == "update" and not new_ids and self.layout.fields[conn_key].required:
            self.refuse_blanked_required(r, conn_key, [name])
        enc = _encode(self.layout, conn_key, {conn_key: new_ids}, r, {conn_key: name})
        self.payloads.setdefault(r, {})[conn_key] = enc
        self.actions[r] = action
        if action == "update":
            self.loaded.setdefault(r, {})[conn_key] = {conn_key: sorted(old_ids)}
        self.wanted.setdefault(r, {})[conn_key] = {conn_key: sorted(new_ids)}
        self.add_change(r, action, conn_key, name, old_ids if action == "update" else pd.NA,
                        new_ids)

    # ---- required fields of creates ----------------------------------------------------------
    def required_of_creates(self) -> None:
        """A new row must fill every field the schema marks required (after connections:
        a connection is filled from its table). The hosted service creates a record
        without them (``POST {}`` makes a blank one), so only this check can say the row
        is incomplete. Fields a frame cannot hold (no column, not a connection, e.g. a
        password) and computed ones are not asked for."""
        layout = self.layout
        required = [k for k, f in layout.fields.items()
                    if f.required and not layout.codecs[k].read_only
                    and (layout.field_cols.get(k) or f.kind == "connection")]
        source = self.base.source if self.base is not None else None
        if source is not None and source.some_fields and self.create_rows:
            # a frame of some fields (columns=[...]) cannot tell which others a new record
            # needs: refused rather than created without them
            rid = next(iter(self.create_rows))
            loaded = [layout.names.get(f.key, f.key) for f in source.fields]
            raise UsageError(f"new row {rid}: these frames hold some fields only (loaded "
                             f"with columns={loaded!r}), so a new record would miss the "
                             "others: add rows to frames loaded with every field (nothing "
                             "was sent)")
        if not required:
            return
        for rid in self.create_rows:
            payload = self.payloads.get(rid, {})
            for key in required:
                if key in payload:
                    continue
                f = layout.fields[key]
                cols = layout.field_cols.get(key) or [t for t, k in layout.tables.items() if k == key][:1]
                where = ", ".join(repr(c) for c in cols)
                raise InvalidValue(
                    f"new row {rid}: {key} ({f.label}, {f.kind}) is required by the schema "
                    f"but empty: fill {where} or drop the row (nothing was sent)",
                    field=key, column=cols[0] if cols else None, record_id=rid)

    def refuse_blanked_required(self, rid: str, key: str, cols: Sequence[str]) -> None:
        """An update that empties a field the schema marks required is refused before any
        request, like a new row without it: whatever the service makes of the blank, the
        value as loaded would be lost, and a required field left empty is not intent."""
        f = self.layout.fields[key]
        where = ", ".join(repr(c) for c in cols)
        raise InvalidValue(
            f"record {rid}: {key} ({f.label}, {f.kind}) is required by the schema but "
            f"{where} was emptied: put a value back, or leave the field as loaded "
            "(nothing was sent)", field=key, column=cols[0] if cols else None, record_id=rid)

    # ---- deletes -----------------------------------------------------------------------------
    def deletes(self) -> None:
        for rid in self.rows.removed:
            self.actions[rid] = "delete"
            self.payloads[rid] = {}
            self.add_change(rid, "delete", "", "", pd.NA, pd.NA)

    def plan(self, source: Source, edited: Frames, base: Frames) -> Plan:
        frame = pd.DataFrame(self.changes, columns=CHANGE_COLUMNS)
        for c in ("record_id", "action", "field", "column"):
            frame[c] = frame[c].astype("string")
        fields = self.layout.fields
        walls = [rid for rid, act in self.actions.items() if act == "update"
                 and any(fields[k].kind in ("date_time", "timer")
                         and may_be_skipped(fields[k], v, self.loaded.get(rid, {}).get(k, {}),
                                            self.wanted.get(rid, {}).get(k, {}))
                         for k, v in self.payloads.get(rid, {}).items())]
        return Plan(frame, self.payloads, self.actions, source, edited, base, self.loaded,
                    self.wanted, self.create_rows, walls)


def _total(spans: Sequence[tuple[Any, Any]]) -> Any:
    """A timer's total: the sum of its intervals (the service computes it so)."""
    return sum((pd.Timestamp(b) - pd.Timestamp(a) for a, b in spans), pd.Timedelta(0))


def _summary_of(key: str, spans: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    """A timer's summary columns (keys mode) and intervals as the service makes them."""
    if not spans:
        return {key: pd.NA, f"{key}.to": pd.NA, f"{key}.total": pd.NA, intervals_key(key): []}
    return {key: spans[0][0], f"{key}.to": spans[-1][1], f"{key}.total": _total(spans),
            intervals_key(key): list(spans)}


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
