"""Every version of every record: the history tables' rows, and which records changed.

Each current-state table (an object's, and each of its exploded tables) has a history table
``<table>__history`` with the same columns and four more: ``valid_from`` and ``valid_to``
(the interval the version held: from the start of the run that saw it to the start of the
run that saw it change; ``valid_to`` empty while it holds), ``run_id`` (the run that wrote
it) and ``change`` (``insert``, ``update``, ``delete``). An unchanged record adds no row. A
deleted record's last version is closed and a ``delete`` row (its last values, an empty
interval: ``valid_from = valid_to``) records when it went. An exploded table's rows are
versioned with their record: a record that changed has all its rows closed and its new
rows written.

The state at any time ``t`` is every row with ``valid_from <= t`` and (``valid_to`` empty
or ``valid_to > t``) and ``change <> 'delete'``; ``as_of`` (past.py) runs it, and a SQL
query over the history tables does the same.

Usage::

    inserted, updated, deleted = compare(old_frames, new_frames)
    rows = versions(frame_to_arrow(new_main.loc[ids]), when, run_id, "update")
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from ..frames import Frames

__all__ = ["append_with_versions", "compare", "versions", "Changed"]

Changed = tuple[list[str], list[str], list[str]]
"""(inserted, updated, deleted) record ids."""


def _text(df: pd.DataFrame) -> pd.DataFrame:
    """Every cell as comparable text (lists and NA included)."""
    out = pd.DataFrame(index=df.index)
    for c in df.columns:
        out[c] = [None if _blank(v) else repr(v) if not isinstance(v, str) else v
                  for v in df[c].tolist()]
    return out


def _blank(v: object) -> bool:
    if isinstance(v, (list, tuple)):
        return len(v) == 0
    try:
        return bool(pd.isna(v))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False


def compare(old: Frames | None, new: Frames, rekinded: Collection[str] = ()) -> Changed:
    """The records inserted, updated and deleted from ``old`` to ``new`` (a full listing
    compared with the last run's state). A column only ``new`` has counts where it holds a
    value; a column only ``old`` has (a removed field) does not count; a field of another
    kind (``rekinded``) counts wherever either side holds a value."""
    if old is None:
        return [str(i) for i in new.main.index], [], []
    old_ids, new_ids = set(old.main.index), set(new.main.index)
    inserted = [str(i) for i in new.main.index if i not in old_ids]
    deleted = [str(i) for i in old.main.index if i not in new_ids]
    common = [i for i in new.main.index if i in old_ids]
    a = _text(old.main.loc[common])
    b = _text(new.main.loc[common])
    changed = pd.Series(False, index=pd.Index(common, dtype=object))
    for col in b.columns:
        kinded = any(col == k or col.startswith(f"{k}.") for k in rekinded)
        if kinded:
            changed |= b[col].notna().to_numpy() | (a[col].notna().to_numpy()
                                                    if col in a.columns else False)
        elif col in a.columns:
            changed |= ~((a[col] == b[col]) | (a[col].isna() & b[col].isna())).to_numpy()
        else:
            changed |= b[col].notna().to_numpy()
    for name, table in new.tables.items():
        before, after = by_record(old.tables.get(name)), by_record(table)
        changed |= np.array([before.get(i, []) != after.get(i, []) for i in common],
                            dtype=bool)
    updated = [str(i) for i in changed.index[changed.to_numpy()]]
    return inserted, updated, deleted


def by_record(table: pd.DataFrame | None) -> dict[object, list[tuple[object, ...]]]:
    """Each record's rows of an exploded table, as text, in order."""
    out: dict[object, list[tuple[object, ...]]] = {}
    if table is None or not len(table):
        return out
    for rec, row in zip(table["record_id"].tolist(), _text(table).itertuples(index=False),
                        strict=True):
        out.setdefault(rec, []).append(tuple(row))
    return out


def versions(rows: pa.Table, when: dt.datetime, run_id: int, change: str,
             valid_to: dt.datetime | None = None) -> pa.Table:
    """``rows`` with the version columns: valid from ``when``, the run, the change."""
    n = rows.num_rows
    ts = pa.timestamp("us", tz="UTC")
    # constant columns built in Arrow, not as Python lists of n items: a first run's
    # writer thread makes them for every page beside the decoding (stream.py)
    return (rows.append_column("valid_from", _repeat(pa.scalar(when, ts), n))
            .append_column("valid_to", _repeat(pa.scalar(valid_to, ts), n))
            .append_column("run_id", _repeat(pa.scalar(run_id, pa.int64()), n))
            .append_column("change", _repeat(pa.scalar(change, pa.string()), n)))


def append_with_versions(insert: Callable[[str, pa.Table], None],
                         parts: Sequence[tuple[str, str, pa.Table]], when: dt.datetime,
                         run_id: int) -> None:
    """Each ``(table, history, data)``: ``data``'s rows appended to ``table`` by ``insert``
    (a writer's), and to ``history`` as the run's ``insert`` versions: the plain way of
    ``Writer.insert_with_versions``, two inserts a table."""
    for table, history, data in parts:
        insert(table, data)
        insert(history, versions(data, when, run_id, "insert"))


def _repeat(value: pa.Scalar, n: int) -> pa.Array:
    """An array of ``n`` times ``value``, of its type (a null scalar: nulls)."""
    return pa.repeat(value, n)
