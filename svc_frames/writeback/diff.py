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

Reading order: ``source_and_base`` / ``Rows.of`` (validate: rows.py), then ``PlanBuilder``
(updates, creates, connections: connections.py, timers: timers.py, required fields of
creates: required.py, deletes). Cells are compared and encoded by cells.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import ReadOnlyField, SvcError
from ..frames import Frames, Source
from ..kinds import is_empty_cell
from .analysis import analysis_columns, refuse_new_only
from .cells import changed_positions, encode_field
from .connections import connection_edits
from .edits import Edits
from .plan import CHANGE_COLUMNS, NEW_ID_PREFIX, ColumnMap, Plan
from .required import refuse_blanked_required, require_fields_of_creates
from .retype import read_as_loaded
from .rows import Rows, refuse_cleared_id, source_and_base
from .timers import TimerEdits
from .uploads import UNCHANGED, placed_assets, plan_asset_value
from .walls import may_be_skipped

__all__ = ["diff"]

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
    layout = ColumnMap.of(source)
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


class PlanBuilder:
    """Collects a Plan phase by phase: updates, creates, connections, timers, required
    fields of creates, deletes (what it collects: ``Edits``)."""

    def __init__(self, layout: ColumnMap, rows: Rows, placed: Any,
                 base_main: pd.DataFrame | None = None, base: Frames | None = None) -> None:
        self.layout, self.rows, self.placed = layout, rows, placed
        self.base_main = base_main   # to tell a cleared id from a new row
        self.base = base
        self.edits = Edits()
        # keys-mode column -> frame column, to name the culprit in an encoding error
        self.inv_cols = {v: k for k, v in layout.col_key.items()}
        self.timer_edits = TimerEdits(layout, rows, self.edits, base, base_main,
                                      self.inv_cols)

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
            pos = changed_positions(a.reset_index(drop=True),
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
                refuse_blanked_required(self.layout, rid, key, per[p])
            if layout.is_upload(key):
                enc = plan_asset_value(new_v, old_v, layout.fields[key], rid,
                                              self.placed)
                if enc is UNCHANGED:
                    continue
                if enc is None:   # cleared: the kind's empty write value
                    enc = encode_field(layout, key, {key: pd.NA}, rid, {key: key})
            elif layout.fields[key].kind == "timer":
                enc = self.timer_edits.update(key, rid, new_v, old_v, per[p])
                if enc is UNCHANGED:
                    continue
            else:
                enc = encode_field(layout, key, new_v, rid, self.inv_cols)
                if bare is not None and bare not in per[p] and self._same_write(
                        key, old_v, enc):
                    # the write column is unchanged, only others (e.g. a timer's total)
                    # changed, and they do not change what would be written
                    continue
            self.edits.payloads.setdefault(rid, {})[key] = enc
            self.edits.actions[rid] = "update"
            self.edits.loaded.setdefault(rid, {})[key] = old_v
            self.edits.wanted.setdefault(rid, {})[key] = new_v
            for c in per[p]:
                self.edits.add_change(rid, "update", key, c, old_v[layout.col_key[c]],
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
            self.edits.create_rows[rid] = new_pos
            self.edits.actions[rid] = "create"
            self.edits.payloads[rid] = {}
            row = {c: by_col[c][j] for c in main.columns}
            if not (isinstance(labels[j], str) and labels[j].startswith(NEW_ID_PREFIX)):
                refuse_cleared_id(layout, self.rows, self.base_main, new_pos, row)
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
                    enc = encode_field(layout, key, vals, rid, self.inv_cols)
                self.edits.payloads[rid][key] = enc
                self.edits.wanted.setdefault(rid, {})[key] = vals
                for c in cols_present:
                    if not is_empty_cell(row[c]):
                        self.edits.add_change(rid, "create", key, c, pd.NA, row[c])

    # ---- connections: exploded tables -> id lists (connections.py) -------------------------
    def connections(self, edited: Frames, base: Frames) -> None:
        """Each record whose set of connected ids changed writes the whole new list."""
        connection_edits(self.layout, self.rows, self.edits, edited, base)

    # ---- timers: summary columns and the intervals table (timers.py) ------------------------
    def timers(self, edited: Frames, base: Frames) -> None:
        """Each record whose intervals changed in a timer's table writes them all."""
        self.timer_edits.tables(edited, base)

    # ---- required fields of creates (required.py) -------------------------------------------
    def required_of_creates(self) -> None:
        """A new row must fill every field the schema marks required."""
        source = self.base.source if self.base is not None else None
        require_fields_of_creates(self.layout, source, self.edits.create_rows,
                                  self.edits.payloads)

    # ---- deletes -----------------------------------------------------------------------------
    def deletes(self) -> None:
        """Loaded records no longer in the frame (sent with ``delete_missing=True``)."""
        for rid in self.rows.removed:
            self.edits.actions[rid] = "delete"
            self.edits.payloads[rid] = {}
            self.edits.add_change(rid, "delete", "", "", pd.NA, pd.NA)

    def plan(self, source: Source, edited: Frames, base: Frames) -> Plan:
        """The Plan of what the phases collected."""
        e = self.edits
        frame = pd.DataFrame(e.changes, columns=CHANGE_COLUMNS)
        for c in ("record_id", "action", "field", "column"):
            frame[c] = frame[c].astype("string")
        fields = self.layout.fields
        walls = [rid for rid, act in e.actions.items() if act == "update"
                 and any(fields[k].kind in ("date_time", "timer")
                         and may_be_skipped(fields[k], v, e.loaded.get(rid, {}).get(k, {}),
                                            e.wanted.get(rid, {}).get(k, {}))
                         for k, v in e.payloads.get(rid, {}).items())]
        return Plan(frame, e.payloads, e.actions, source, edited, base, e.loaded, e.wanted,
                    e.create_rows, walls)
