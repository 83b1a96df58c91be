"""connections: a connection field edited in its exploded table (``record_id``,
``connected_id``): each record whose set of connected ids changed writes its whole new
list (the main frame's list column is not what is written)."""

from __future__ import annotations

import pandas as pd

from ..errors import InvalidValue, UsageError
from ..frames import Frames
from ..kinds import is_empty_cell
from .cells import encode_field
from .edits import Edits
from .plan import ColumnMap
from .required import refuse_blanked_required
from .rows import Rows


def connection_edits(layout: ColumnMap, rows: Rows, edits: Edits, edited: Frames,
                     base: Frames) -> None:
    """A connection field is edited in its exploded table (record_id, connected_id):
    each record whose set of connected ids changed writes the whole new list."""
    all_ids = set(rows.ids)
    dropped = set(rows.removed)
    for name, table in edited.tables.items():
        conn_key = layout.tables.get(name)
        if conn_key is None:
            continue  # multi-choice tables etc.: the main-frame list column is the truth
        missing = {"record_id", "connected_id"} - set(table.columns)
        if missing:
            raise UsageError(f"connection table {name!r} lacks columns {sorted(missing)}")
        btable = base.tables.get(name)
        if btable is not None and table.equals(btable):
            continue
        new_lists = connection_lists(name, conn_key, table, all_ids, dropped)
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
            _connection_change(layout, edits, r, name, conn_key, new_lists.get(r, []),
                               old_lists.get(r, []))


def _connection_change(layout: ColumnMap, edits: Edits, r: str, name: str, conn_key: str,
                       new_ids: list[str], old_ids: list[str]) -> None:
    """Record ``r`` writes its whole new list of connected ids."""
    action = edits.actions.get(r, "update")
    if action == "create" and not new_ids:
        return
    if action == "update" and not new_ids and layout.fields[conn_key].required:
        refuse_blanked_required(layout, r, conn_key, [name])
    enc = encode_field(layout, conn_key, {conn_key: new_ids}, r, {conn_key: name})
    edits.set_field(r, action, conn_key, enc, {conn_key: sorted(old_ids)},
                    {conn_key: sorted(new_ids)})
    edits.add_change(r, action, conn_key, name, old_ids if action == "update" else pd.NA,
                     new_ids)


def connection_lists(name: str, conn_key: str, table: pd.DataFrame, all_ids: set[str],
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
