"""The merge: server records folded into loaded frames in place (``Merger``), the user's
edits kept, a cell changed on both sides reported as a conflict; its cost follows the
records listed, not the frames held.

Usage: ``merger = Merger(frames); merger.merge(new_frames); merger.finish()``
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..arrowcols import (
    ARROW_ERRORS,
    arrow_backed,
    combined,
    concat_rows,
    equal_data,
    id_array,
    id_needles,
    locate,
    member,
)
from ..frames import Frames
from ..kinds import values_equal
from .listing import column_maps


# ---- merging server values into the frames -----------------------------------------------
def same(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Cell by cell, by position: do two columns hold the same values (NA == NA).
    Columns of one dtype are compared on their data (Arrow's equal, the integers of
    instants, a masked array's values): a few calls, not a pandas operation each."""
    if a.dtype == object or b.dtype == object:
        return np.fromiter(map(cell_same, a, b), dtype=bool, count=len(a))
    if a.dtype == b.dtype:
        eq = equal_data(a.array, b.array)
        if eq is not None:
            na_a = np.asarray(a.isna(), dtype=bool)
            na_b = np.asarray(b.isna(), dtype=bool)
            out: np.ndarray = (eq & ~na_a & ~na_b) | (na_a & na_b)
            return out
    x, y = pd.Series(a.array, copy=False), pd.Series(b.array, copy=False)
    try:
        eq = (x == y).fillna(False).to_numpy(dtype=bool)
    except (TypeError, ValueError):
        return np.fromiter(map(cell_same, a, b), dtype=bool, count=len(a))
    return eq | (x.isna().to_numpy() & y.isna().to_numpy())


def cell_same(x: Any, y: Any) -> bool:
    """``values_equal``, with equal lists (a multiple choice's cells) told at once."""
    if type(x) is list and type(y) is list:
        try:
            if x == y:
                return True
        except (TypeError, ValueError):  # elements that do not compare (arrays)
            pass
    return values_equal(x, y)


def _short(value: Any) -> str:
    if isinstance(value, float) and np.isnan(value):
        return ""
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    text = str(list(value) if isinstance(value, (list, tuple, np.ndarray)) else value)
    return text if len(text) <= 80 else text[:77] + "..."


class Merger:
    """Merges decoded server records into frames and their ``original`` (see module)."""

    def __init__(self, frames: Frames) -> None:
        assert frames.original is not None and frames.source is not None
        self.frames = frames
        self.col_field, self.bare = column_maps(frames.source)
        self.table_field = {self.bare[f.key]: f.key for f in frames.source.fields}
        self.added: list[str] = []
        self.changed: list[str] = []
        self.deleted: list[str] = []
        self.conflicts: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self.touched: set[str] = set()  # tables whose rows moved: re-ordered at the end
        # column -> records: wall times the timezone skips in what was merged (warned once)
        self.skipped: dict[str, list[str]] = {}

    def server_count(self) -> int:
        """Records the server holds, as far as the merged ``original`` knows."""
        assert self.frames.original is not None
        return len(self.frames.original.main)

    def merge(self, server: Frames, *, complete: bool, order_by: str | None = None) -> None:
        """Take ``server``'s records; ``complete``: it is the whole listing, so loaded
        records absent from it are gone. ``order_by``: new rows are appended in the order
        of this column (the cursor), else as listed."""
        self.update(server)
        if complete:
            om = self.frames.original.main if self.frames.original is not None else None
            assert om is not None
            self.drop(om.index[~member(om.index, server.main.index)])
        self.add(server, order_by=order_by)

    def _note(self, server: Frames) -> None:
        for col, ids in server.skipped.items():
            self.skipped.setdefault(col, []).extend(ids)

    def update(self, server: Frames) -> None:
        """Take the server's values of the records held (cells and exploded tables); the
        records not held are left to :meth:`add`. A record updated twice (listed again on
        a later page) takes its later values.

        Its cost follows the server's records, not the frames': rows are found by hashing
        the server's ids and probing the held ones in Arrow (:func:`locate`), and only the
        rows in question are taken and compared."""
        self._note(server)
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        main, om, sm = frames.main, orig.main, server.main
        s_to_o, _ = locate(om.index, sm.index)
        in_orig = s_to_o >= 0
        if not in_orig.any():
            return
        common = sm.index[in_orig]
        o_pos = s_to_o[in_orig]
        m_pos, m_count = locate(main.index, common)
        present = m_pos >= 0
        # cells are put by position, by label where the user's index repeats one of these
        # labels (rows added under it): every row under the label then takes the value
        by_label = bool((m_count > 1).any())
        changed_rows = np.zeros(len(common), dtype=bool)
        main_cols: dict[str, pd.Series] = {}
        orig_cols: dict[str, pd.Series] = {}
        # the rows in question (the server's rows are few: taken at once)
        cols = [c for c in om.columns if c in sm.columns]
        s_rows = sm.iloc[np.flatnonzero(in_orig)][cols]
        o_pick = Picker(o_pos, len(om))
        m_pick = Picker(np.where(present, m_pos, 0), len(main))
        for col in cols:
            s_val, o_val = s_rows[col], o_pick.take(om[col])
            srv = ~same(s_val, o_val)
            if not srv.any():
                continue
            changed_rows |= srv
            m_col = main[col] if col in main.columns else None
            # a row the user deleted: its cells are the user's (a delete) too
            usr = ~present
            agree = np.zeros(len(common), dtype=bool)
            m_val = None
            if m_col is not None and present.any():
                # the user's rows of the columns the server changed only
                m_val = m_pick.take(m_col)
                usr = usr | (present & ~same(m_val, o_val))
                agree = usr & present & same(m_val, s_val)
            clash = srv & usr & ~agree
            take_main = srv & ~usr & present
            take_orig = srv & ~clash
            for i in map(int, np.flatnonzero(clash)):
                self.conflicts.append({
                    "record_id": common[i], "field": self.col_field.get(col, col),
                    "column": col, "loaded": _short(o_val.iloc[i]),
                    "server": _short(s_val.iloc[i]),
                    "local": ("<deleted>" if not present[i] or m_val is None
                              else _short(m_val.iloc[i]))})
            if take_main.any() and m_col is not None:
                main_cols[col] = put(m_col, None if by_label else m_pos[take_main],
                                     common[take_main], s_val[take_main])
            if take_orig.any():
                orig_cols[col] = put(om[col], o_pos[take_orig], common[take_orig],
                                     s_val[take_orig])
        for col, values in main_cols.items():
            main[col] = values
        for col, values in orig_cols.items():
            om[col] = values
        table_changed = self._merge_tables(server, common, present)
        changed_ids = set(common[changed_rows]) | table_changed
        for rid in common:
            if rid in changed_ids and rid not in self._seen:
                self._seen.add(rid)
                self.changed.append(rid)

    def add(self, server: Frames, *, order_by: str | None = None) -> None:
        """Append the server's records not held (in the order of ``order_by``, else as
        listed), to the main frame, its ``original`` and the exploded tables."""
        self._note(server)
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        sm = server.main
        s_to_o, _ = locate(orig.main.index, sm.index)
        fresh = sm.iloc[np.flatnonzero(s_to_o < 0)]
        if not len(fresh):
            return
        if order_by is not None and order_by in fresh.columns:
            fresh = fresh.sort_values(order_by, kind="stable")
        self.added.extend(str(r) for r in fresh.index)
        # both frames copied side by side: appending rows copies every numeric column,
        # tens of MB into fresh pages, and the copies run without the GIL
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-append") as pool:
            later = pool.submit(concat_rows, orig.main, fresh)
            frames.main = concat_rows(frames.main, fresh)
            orig.main = later.result()
        self._tables_add_drop(server, list(fresh.index), [])

    def drop(self, gone: pd.Index) -> None:
        """Remove records gone from the server (main, original, tables); a record the user
        edited is reported as a conflict."""
        if not len(gone):
            return
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        main, om = frames.main, orig.main
        for rid in gone:
            if rid in main.index and not self._row_same(main, om, rid):
                self.conflicts.append({"record_id": rid, "field": "", "column": "",
                                       "loaded": "", "server": "<deleted>",
                                       "local": "<edited>"})
        self.deleted.extend(str(r) for r in gone)
        frames.main = main[~member(main.index, gone)]
        orig.main = om[~member(om.index, gone)]
        self._tables_add_drop(Frames(om.iloc[:0]), [], list(gone))

    def _row_same(self, main: pd.DataFrame, om: pd.DataFrame, rid: str) -> bool:
        cols = [c for c in om.columns if c in main.columns]
        return all(values_equal(main.at[rid, c], om.at[rid, c]) for c in cols)

    def _merge_tables(self, server: Frames, common: pd.Index, present: np.ndarray
                      ) -> set[str]:
        """Exploded tables of records in both: per record, the server's rows unless the
        user changed that record's rows too (a conflict). Returns ids whose rows changed.
        Only the rows of ``common`` are read (one Arrow probe of each table)."""
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        changed: set[str] = set()
        ids = id_needles(common)
        here = set(common[present])
        for name, ot in orig.tables.items():
            st = server.tables.get(name)
            if st is None or "record_id" not in ot.columns:
                continue
            o_sub, s_sub = ot[member(ot["record_id"], ids)], st[member(st["record_id"], ids)]
            differ = records_differing(o_sub, s_sub)
            if not differ:
                continue
            o_rows, s_rows = rows_by_record(o_sub, differ), rows_by_record(s_sub, differ)
            mt = frames.tables.get(name, ot.iloc[:0])
            m_rows = rows_by_record(mt, differ)
            take_main: set[str] = set()
            take_orig: set[str] = set()
            for rid in differ:
                o, s = o_rows.get(rid, ()), s_rows.get(rid, ())
                changed.add(rid)
                m = m_rows.get(rid, ()) if rid in here else None
                user = m is None or m != o
                if user and m != s:
                    self.conflicts.append({
                        "record_id": rid, "field": self.table_field.get(name, name),
                        "column": f"tables[{name!r}]", "loaded": _short(len(o)) + " rows",
                        "server": _short(len(s)) + " rows",
                        "local": "<deleted>" if m is None else f"{len(m)} rows"})
                    continue
                take_orig.add(rid)
                if not user:
                    take_main.add(rid)
            if take_orig:
                self.touched.add(name)
                orig.tables[name] = replace_rows(ot, st, take_orig)
            if take_main:
                frames.tables[name] = replace_rows(mt, st, take_main)
        return changed

    def _tables_add_drop(self, server: Frames, new: list[str], gone: list[str]) -> None:
        orig = self.frames.original
        assert orig is not None
        for holder in (self.frames, orig):
            for name, t in list(holder.tables.items()):
                if "record_id" not in t.columns:
                    continue
                st = server.tables.get(name)
                add = in_order(st, new) if st is not None and new else None
                keep = t[~member(t["record_id"], gone)] if gone else t
                out = concat_rows(keep, add, ignore_index=True) if add is not None else keep
                holder.tables[name] = out.reset_index(drop=True)
        # a table the load had none of (no record had a row) but new records bring
        for name, st in server.tables.items():
            for holder in (self.frames, orig):
                if name not in holder.tables and "record_id" in st.columns:
                    holder.tables[name] = in_order(st, new)

    def finish(self) -> None:
        """Tables in the order of the main frame (as a load builds them)."""
        orig = self.frames.original
        assert orig is not None
        for holder in (self.frames, orig):
            for name, t in list(holder.tables.items()):
                if name in self.touched:
                    holder.tables[name] = order_rows(t, holder.main.index)

    def conflict_frame(self) -> pd.DataFrame:
        """The conflicts, one per record and column (a record merged twice, listed again
        on a later page, keeps its last)."""
        cols = ["record_id", "field", "column", "loaded", "server", "local"]
        last = {(c["record_id"], c["column"]): c for c in self.conflicts}
        return pd.DataFrame(list(last.values()), columns=cols).astype("string")


def put(column: pd.Series, positions: np.ndarray | None, labels: pd.Index,
        values: pd.Series) -> pd.Series:
    """A copy of ``column`` with ``values`` (in the order of ``labels``) at ``positions``
    (by ``labels`` when None)."""
    if positions is not None and len(positions):
        spliced = put_chunks(column, positions, values)
        if spliced is not None:
            return spliced
    out = column.copy(deep=False)  # copy-on-write: the first change copies, once
    data = values.to_numpy() if out.dtype == object else values.array
    if positions is None:
        out.loc[labels] = data
    else:
        out.iloc[positions] = data
    return out


def put_chunks(column: pd.Series, positions: np.ndarray, values: pd.Series
               ) -> pd.Series | None:
    """``put`` into an Arrow column of many chunks: only the chunks holding ``positions``
    (unique) are rewritten, the others kept as they are (pandas' own setitem concatenates
    the whole column first, then copies it again). None for another kind of column."""
    if not arrow_backed(column.dtype):
        return None
    arrow = column.array.__arrow_array__()
    if not isinstance(arrow, pa.ChunkedArray) or arrow.num_chunks <= 1:
        return None
    try:
        new = combined(values.array.__arrow_array__() if arrow_backed(values.dtype) else
                       pa.array(values.to_numpy(dtype=object), from_pandas=True)
                       ).cast(arrow.type)
    except ARROW_ERRORS:
        return None
    order = np.argsort(positions, kind="stable")
    where = positions[order]
    new = new.take(pa.array(order))
    starts = np.concatenate([[0], np.cumsum([len(c) for c in arrow.chunks])])
    chunks = list(arrow.chunks)
    which = np.searchsorted(starts, where, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(where)]]),
                      strict=True):
        c = int(which[lo])
        mask = np.zeros(len(chunks[c]), dtype=bool)
        mask[where[lo:hi] - starts[c]] = True
        chunks[c] = pc.replace_with_mask(chunks[c], pa.array(mask), new.slice(lo, hi - lo))
    return pd.Series(pd.array(pa.chunked_array(chunks, type=arrow.type), dtype=column.dtype),
                     index=column.index, name=column.name, copy=False)


class Picker:
    """Takes the cells at some positions of long columns. An Arrow column of many chunks
    (a load leaves one per page) is filtered chunk by chunk and the few cells put in
    order: Arrow's take concatenates every chunk of a text column first, megabytes per
    column for a thousand cells (and, memory freshly mapped, milliseconds each).

    Usage: ``pick = Picker(positions, len(frame)); cells = pick.take(frame[col])``"""

    def __init__(self, positions: np.ndarray, length: int) -> None:
        self.positions = positions
        self.length = length
        self._mask: pa.Array | None = None
        self._order: pa.Array | None = None

    def take(self, column: pd.Series) -> pd.Series:
        """``column.iloc[positions]`` with a new RangeIndex."""
        arrow = column.array.__arrow_array__() if arrow_backed(column.dtype) else None
        if (not isinstance(arrow, pa.ChunkedArray) or arrow.num_chunks <= 1
                or not len(self.positions) or len(column) != self.length):
            return pd.Series(column.array.take(self.positions), copy=False)
        if self._mask is None:
            unique, order = np.unique(self.positions, return_inverse=True)
            mask = np.zeros(self.length, dtype=bool)
            mask[unique] = True
            self._mask, self._order = pa.array(mask), pa.array(order)
        picked = combined(pc.filter(arrow, self._mask)).take(self._order)
        return pd.Series(pd.array(picked, dtype=column.dtype), copy=False)


def rows_by_record(table: pd.DataFrame, ids: Any) -> dict[str, tuple[Any, ...]]:
    """record id -> its rows (as tuples, in table order) for the given ids (a list or
    :func:`id_needles`); only their rows are read."""
    if not len(table) or "record_id" not in table.columns:
        return {}
    sub = table[member(table["record_id"], ids)]
    out: dict[str, list[tuple[Any, ...]]] = {}
    cols = []
    for c in sub.columns:
        if c != "record_id":
            values = sub[c].to_numpy(dtype=object)  # a copy: NA cells become None below
            values[sub[c].isna().to_numpy(dtype=bool)] = None
            cols.append(values)
    for rid, *vals in zip(sub["record_id"].to_numpy(dtype=object), *cols, strict=True):
        out.setdefault(str(rid), []).append(tuple(vals))
    return {k: tuple(v) for k, v in out.items()}


def records_differing(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """The record ids whose rows (in order) differ between two tables of a few records.
    Both sorted by record (stably): when the ids then match row for row, the cells are
    compared column by column; else record by record (:func:`rows_by_record`).

    Usage: ``records_differing(orig_rows, server_rows)  # ["6503..."]``"""
    o_ids = old["record_id"].to_numpy(dtype=object)
    s_ids = new["record_id"].to_numpy(dtype=object)
    if len(o_ids) == len(s_ids):
        o_order = np.argsort(o_ids, kind="stable")
        s_order = np.argsort(s_ids, kind="stable")
        if (o_ids[o_order] == s_ids[s_order]).all():
            bad = np.zeros(len(o_ids), dtype=bool)
            for col in old.columns:
                if col != "record_id":
                    other = (new[col] if col in new.columns
                             else pd.Series(pd.NA, index=new.index, dtype=object))
                    bad |= ~same(old[col].iloc[o_order], other.iloc[s_order])
            return list(dict.fromkeys(str(r) for r in o_ids[o_order][bad]))
    ids = list(dict.fromkeys(str(r) for r in (*o_ids, *s_ids)))
    o_rows, s_rows = rows_by_record(old, ids), rows_by_record(new, ids)
    return [rid for rid in ids if o_rows.get(rid, ()) != s_rows.get(rid, ())]


def in_order(table: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    """The rows of ``ids``, grouped in the order of ``ids`` (as appended to the frame)."""
    rows = table[member(table["record_id"], ids)]
    return order_rows(rows, pd.Index(ids, dtype=object)).reset_index(drop=True)


def replace_rows(table: pd.DataFrame, server: pd.DataFrame, ids: set[str]) -> pd.DataFrame:
    """``table`` with the rows of ``ids`` replaced by the server's (put in place by
    :func:`order_rows` at the end)."""
    needles = id_needles(sorted(ids))
    keep = table[~member(table["record_id"], needles)]
    add = server[member(server["record_id"], needles)]
    return concat_rows(keep, add, ignore_index=True).reset_index(drop=True)


def order_rows(table: pd.DataFrame, index: pd.Index) -> pd.DataFrame:
    """Rows grouped in the order of ``index`` (stable within a record); rows of records
    not in it (new rows the user added) keep their place at the end. Each row's place is
    probed in Arrow, and the stable sort of rows already nearly in order is quick."""
    if not len(table) or "record_id" not in table.columns:
        return table
    key = None
    if len(index):
        try:
            # the index's first occurrence of each id: the hash is built over the index
            found = pc.index_in(id_array(table["record_id"]),
                                value_set=combined(id_array(index)), skip_nulls=True)
            key = np.asarray(found.fill_null(len(index)).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
        except ARROW_ERRORS:
            key = None
    if key is None:
        where = pd.Index(np.asarray(index, dtype=object))
        if not where.is_unique:
            where = where.drop_duplicates()
        key = where.get_indexer(np.asarray(table["record_id"], dtype=object))
        key[key < 0] = len(where)
    if (np.diff(key) >= 0).all():
        return table
    return table.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)
