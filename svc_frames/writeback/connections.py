"""connections: a connection field edited in its exploded table (``record_id``,
``connected_id``): each record whose set of connected ids changed writes its whole new
list (the main frame's list column is not what is written)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..errors import InvalidValue, UsageError
from ..frames import Frames
from ..kinds import is_empty_cell
from .cells import encode_field
from .depends import create_levels
from .edits import Edits
from .plan import NEW_ID_PREFIX, ColumnMap
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
    creates = [r for r, act in edits.actions.items() if act == "create"]
    create_levels(creates, edits.payloads, layout)    # a cycle of new rows: refused


def _connection_change(layout: ColumnMap, edits: Edits, r: str, name: str, conn_key: str,
                       new_ids: list[str], old_ids: list[str]) -> None:
    """Record ``r`` writes its whole new list of connected ids."""
    action = edits.actions.get(r, "update")
    if action == "create" and not new_ids:
        return
    if action == "update" and not new_ids and layout.fields[conn_key].required:
        refuse_blanked_required(layout, r, conn_key, [name])
    enc = _encode_links(layout, edits, r, name, conn_key, new_ids)
    edits.set_field(r, action, conn_key, enc, {conn_key: sorted(old_ids)},
                    {conn_key: sorted(new_ids)})
    edits.add_change(r, action, conn_key, name, old_ids if action == "update" else pd.NA,
                     new_ids)


def _encode_links(layout: ColumnMap, edits: Edits, r: str, name: str, conn_key: str,
                  new_ids: list[str]) -> Any:
    """A list as sent: a new row of the frame named by its temporary id stays so, and
    ``apply`` writes the record linking to it once it is created, with its new id
    (depends.py); only a new row may link to one (an update is sent before any create)."""
    temps = [c for c in new_ids if c.startswith(NEW_ID_PREFIX)]
    if not temps:
        return encode_field(layout, conn_key, {conn_key: new_ids}, r, {conn_key: name})
    for c in temps:
        if edits.actions.get(c) != "create":
            raise UsageError(f"connection table {name!r}: record {r} connects to {c!r}, "
                             "which is no new row of the frame", field=conn_key)
        if edits.actions.get(r) != "create":
            raise UsageError(f"connection table {name!r}: record {r} (an update) connects "
                             f"to the new row {c!r}: write_back sends updates before "
                             "creates; connect it with a second write_back once the new "
                             "record exists", field=conn_key)
    # the codec's checks (one record only, an id's form) on stand-ins of the same count
    stand_in = {f"svc-frames-new-{i}": c for i, c in enumerate(temps)}
    back = {c: s for s, c in stand_in.items()}
    enc = encode_field(layout, conn_key, {conn_key: [back.get(c, c) for c in new_ids]}, r,
                       {conn_key: name})
    return [stand_in.get(x, x) for x in enc] if isinstance(enc, list) else enc


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
