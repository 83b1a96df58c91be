"""After the writes: the frames follow the server (new ids, stored values), and their
``original`` follows the frames, so a second write_back of the same frames sends nothing.

Usage::

    refresh(run, edited)        # run: a RunState after apply
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..arrowcols import member
from ..errors import SvcError
from ..frames import Frames
from .apply import sent_earlier
from .plan import ColumnMap, Plan
from .report import Outcome
from .retype import read_as_loaded
from .state import RunState
from .values import decode_records

__all__ = ["follow", "refresh_frames"]


def follow(run: RunState, edited: Frames) -> None:
    """Frames follow the server; ``original`` follows the frames (``refresh_frames``)."""
    pending: dict[str, list[str]] = {}
    for o in run.extra:
        pending.setdefault(o.record_id, []).extend(o.fields)
        if o.action == "create" and o.record_id in run.outcomes:
            o.new_id = run.outcomes[o.record_id].new_id   # the created record's id
    refresh_frames(edited, run.plan, run.layout, run.outcomes, run.server_now, pending)
    if run.plan.edited is edited:
        _remember_sent_creates(edited, run)


def _remember_sent_creates(edited: Frames, run: RunState) -> None:
    """Creates this run sent without learning their outcome go into
    ``edited.sent_creates`` (with the ids that matched them before the first send, kept
    from the earliest run), so the next write_back looks before sending them again; a
    create now settled (applied, or provably not stored) leaves it."""
    for tmp, o in run.outcomes.items():
        if o.action != "create":
            continue
        if o.status == "unknown":
            if tmp not in edited.sent_creates:
                earlier = sent_earlier(run, tmp)   # a journal's intent: its ids
                before = earlier[0] if earlier is not None else run.before.get(tmp)
                edited.sent_creates[tmp] = sorted(before) if before is not None else None
        elif o.status in ("applied", "failed"):
            edited.sent_creates.pop(tmp, None)


def refresh_frames(edited: Frames, plan: Plan, layout: ColumnMap, outcomes: Mapping[str, Outcome],
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


def _relabel_created(edited: Frames, plan: Plan, applied: Mapping[str, Outcome]
                     ) -> dict[Any, str]:
    """Give created rows (and their connection-table rows) their real ids; returns
    temporary id -> real id."""
    relabel: dict[Any, str] = {}
    if not any(o.action == "create" and o.new_id for o in applied.values()):
        return relabel
    main = edited.main
    labels = main.index.tolist()
    for tmp, pos in plan.create_rows.items():
        # rows appended the pandas ways (appends.py) keep their temporary id, as text
        labels[pos] = tmp
    for tmp, o in applied.items():
        if o.action == "create" and o.new_id and tmp in plan.create_rows:
            relabel[tmp] = o.new_id
            labels[plan.create_rows[tmp]] = o.new_id
    idx_dtype: Any = main.index.dtype if main.index.dtype != object else "string"
    # pd.concat drops the index's name: the record id index takes it back
    name = plan.base.main.index.name if plan.base is not None else main.index.name
    main.index = pd.Index(pd.array(labels, dtype=idx_dtype), name=name)
    for name in list(edited.tables):
        t = edited.tables[name]
        # a new row's id where rows are its own, and where a new row links to it
        for col in ("record_id", "connected_id"):
            if col in t.columns and member(t[col], list(relabel)).any():
                t = t.copy()
                t[col] = t[col].map(lambda r: relabel.get(r, r)).astype(t[col].dtype)
                edited.tables[name] = t
    return relabel


def _take_server_values(edited: Frames, layout: ColumnMap, applied: Mapping[str, Outcome],
                        server_now: Mapping[str, dict[str, Any]]) -> None:
    """Values as the server stored them (rendering, rounding, computed fields); a view's
    answer holds only its own fields, so only fields present in an answer are taken."""
    recs = [o.record for o in applied.values() if o.record]
    recs += [server_now[rid] for rid, o in applied.items() if o.record is None
             and rid in server_now]
    if not recs:
        return
    try:
        dec = decode_records(recs, edited.source) if edited.source is not None else None
    except (SvcError, ValueError, TypeError, KeyError):
        dec = None
    if dec is None:
        return
    main = edited.main
    present = {r["id"]: {k[:-4] if k.endswith("_raw") else k for k in r} for r in recs}
    for name, timer in layout.intervals.items():   # a timer's intervals as stored
        if name not in edited.tables or name not in dec.tables:
            continue
        ids = [i for i in dec.main.index if timer in present[i]]
        t, st = edited.tables[name], dec.tables[name]
        edited.tables[name] = pd.concat([t[~member(t["record_id"], ids)],
                                         st[member(st["record_id"], ids)]], ignore_index=True)
    # positions, not labels: a label-aligned assignment per column re-looked up every id
    # in both indexes (the step was most of write_back's own CPU after the writes)
    dec_ids = list(dec.main.index)
    at = main.index.get_indexer(dec.main.index)
    by_key: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for col in main.columns:
        key = layout.col_field.get(col)
        if key is None or col not in dec.main.columns:
            continue
        if key not in by_key:    # the records whose answer holds the field, and where
            took = np.array([at[n] >= 0 and key in present[i]
                             for n, i in enumerate(dec_ids)], dtype=bool)
            by_key[key] = (at[took], np.flatnonzero(took))
        rows, from_rows = by_key[key]
        if not len(rows):
            continue
        taken = dec.main[col].iloc[from_rows].array
        try:
            s = main[col].copy()
            s.iloc[rows] = taken
        except (TypeError, ValueError, NotImplementedError):
            # a dtype an edit left that cannot hold the server's value (naive times, a
            # row enlargement's null[pyarrow] text column): the column as loaded
            s = _as_loaded(main[col], dec.main[col], layout, col)
            try:
                s.iloc[rows] = taken
            except (TypeError, ValueError, NotImplementedError):
                continue   # the frame's dtype cannot hold the server's value: keep the edit
        main[col] = s


def _as_loaded(values: pd.Series, loaded: pd.Series, layout: ColumnMap, col: str) -> pd.Series:
    """A field column an edit re-typed, read in the loaded dtype as diff reads it (a naive
    time is the application's wall clock); as it is when it cannot be."""
    if values.dtype == loaded.dtype:
        return values.copy()
    try:
        return read_as_loaded(values, loaded, layout.fields[layout.col_field[col]], col)
    except (SvcError, ValueError, TypeError, NotImplementedError):
        return values.copy()


def _refresh_original(edited: Frames, orig: Frames, layout: ColumnMap,
                      applied: Mapping[str, Outcome], relabel: Mapping[Any, str],
                      not_applied: Mapping[str, list[str]]) -> None:
    """original := edited for applied records (others keep their loaded values)."""
    done_ids = [o.new_id or rid for rid, o in applied.items() if o.action != "delete"]
    gone = {rid for rid, o in applied.items() if o.action == "delete"}
    keep = orig.main.drop(index=[i for i in set(done_ids) | gone if i in orig.main.index])
    # field columns only: analysis columns (writeback/analysis.py) are the frame's own
    fresh = edited.main.loc[[i for i in done_ids if i in edited.main.index],
                            [c for c in edited.main.columns if c in layout.col_field]]
    om = pd.concat([keep, fresh]) if len(keep) else fresh.copy()
    for col in om.columns:
        if col in orig.main.columns and om[col].dtype != orig.main[col].dtype:
            om[col] = _as_loaded(om[col], orig.main[col], layout, col)
            try:
                om[col] = om[col].astype(orig.main[col].dtype)
            except (TypeError, ValueError, NotImplementedError):
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
            t = t[~member(t["record_id"], list(gone))].reset_index(drop=True)
            edited.tables[name] = t
        ot = orig.tables.get(name)
        if ot is None:
            continue
        orig.tables[name] = pd.concat(
            [ot[~member(ot["record_id"], touched)], t[member(t["record_id"], touched)]],
            ignore_index=True)


