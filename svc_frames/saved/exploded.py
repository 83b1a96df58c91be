"""The exploded tables of saved frames against their records, before any request.

A multiple choice is saved twice: as the records' list column (``Tags``) and as its
exploded table (``orders.tables/Tags/``: ``record_id``, ``value``, one row per chosen
option). An analyst may edit either: a row added to or removed from the table is a
change of that record's cell, as an edit of the cell is; both edited alike is one
change; both edited differently is refused, naming the file, the record and the fix.
A timer's intervals (``record_id``, ``from``, ``to``) and its summary columns both
edited for one record are refused the same way (the intervals are what is written).
A table row naming a record that is no row of the records (a typo, an id of another
object) is refused naming its file. Connections are only tables: write_back reads them.

Usage: ``main = with_table_edits(main, tables, spans, original, source, data_dir)``
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import UsageError
from ..frames import Frames
from ..kinds import is_empty_cell
from ..kinds.base import FieldSpec

CHOICE_KINDS = ("multiple_choice", "user_roles")

Spans = Sequence[tuple[Path, int]]


def with_table_edits(main: pd.DataFrame, tables: Mapping[str, pd.DataFrame],
                     spans: Mapping[str, Spans], original: Frames,
                     fields: Mapping[str, FieldSpec], data: Path,
                     stale: Mapping[str, Mapping[str, list[str]]] | None = None
                     ) -> pd.DataFrame:
    """``main`` with each multiple choice edited in its table taken into its cell;
    UsageError (naming the table's file, the record and the fix) where a table and the
    records disagree. ``spans``: table name -> (file, rows) as read; ``fields``: column
    or table name -> its field; ``data``: the records' directory, for messages;
    ``stale``: table -> record -> the options its cell in the records' file still shows
    after push sent an edit made in the table (the metadata's ``stale``): while the cell
    shows them, it is no edit (the as-loaded copy holds what was sent)."""
    for name, cells in (stale or {}).items():
        if name in main.columns and name in original.main.columns:
            main = _unstale(main, original.main, name, cells)
    for name, table in tables.items():
        f = fields.get(name)
        base = original.tables.get(name)
        if f is None or base is None or "record_id" not in table.columns \
                or table.equals(base):
            continue
        _known_records(name, table, spans.get(name, ()), main, original.main)
        if f.kind in CHOICE_KINDS and name in main.columns and "value" in table.columns \
                and "value" in base.columns:
            main = _choices(name, table, base, spans.get(name, ()), main, original.main,
                            data)
        elif f.kind == "timer" and {"from", "to"} <= set(table.columns) & set(base.columns):
            cols = [c for c, g in fields.items() if g.key == f.key and c in main.columns]
            _timer(name, table, base, spans.get(name, ()), main, original.main, cols, data)
    return main


def _unstale(main: pd.DataFrame, loaded: pd.DataFrame, name: str,
             cells: Mapping[str, list[str]]) -> pd.DataFrame:
    """Cells that still show the options they showed before a push sent their table's
    edit are the as-loaded value (what was sent), not an edit back."""
    fix = {r: loaded.at[r, name] for r, shown in cells.items()
           if r in main.index and r in loaded.index
           and _items(main.at[r, name]) == frozenset(shown)}
    if not fix:
        return main
    values: list[Any] = main[name].astype(object).tolist()
    row = {r: i for i, r in enumerate(main.index)}
    for r, v in fix.items():
        values[row[r]] = v
    out = main.copy()
    out[name] = pd.Series(values, index=main.index, dtype=object)
    return out


def stale_cells(previous: Mapping[str, Mapping[str, list[str]]], written: pd.DataFrame,
                sent: pd.DataFrame, sent_ids: Mapping[str, set[Any]],
                fields: Mapping[str, FieldSpec]) -> dict[str, dict[str, list[str]]]:
    """The metadata's ``stale`` after a push that left the files as they are: for each
    multiple choice, the records sent with it (``sent_ids``: table -> records) whose cell
    in the records' file (``written``) shows other options than were sent (``sent``: the
    records as push read them, table edits taken in); the ``previous`` entries of records
    not sent again stay while their record does."""
    out: dict[str, dict[str, list[str]]] = {}
    for name, f in fields.items():
        if f.kind not in CHOICE_KINDS or name not in written.columns \
                or name not in sent.columns:
            continue
        ids = sent_ids.get(name, set())
        mine = {r: v for r, v in previous.get(name, {}).items()
                if r not in ids and r in written.index}
        for r in ids:
            if r in written.index and r in sent.index:
                shown = _items(written.at[r, name])
                if shown != _items(sent.at[r, name]):
                    mine[str(r)] = _shown(shown)
        if mine:
            out[name] = mine
    return out


def _file_of(r: Any, table: pd.DataFrame, spans: Spans, fallback: str) -> str:
    """The file of ``table`` (read from the files of ``spans``) holding ``r``'s rows."""
    rids = table["record_id"].astype(object).tolist()
    row = 0
    for path, n in spans:
        if r in rids[row: row + n]:
            return str(path)
        row += n
    return fallback


def _table_dir(spans: Spans, name: str) -> str:
    return str(spans[0][0].parent) if spans else f"table {name!r}"


def _known_records(name: str, table: pd.DataFrame, spans: Spans, main: pd.DataFrame,
                   loaded: pd.DataFrame) -> None:
    """Every ``record_id`` of the table is a record of the saved frames (a row of the
    records, or one loaded and since removed from them)."""
    for r in dict.fromkeys(table["record_id"].astype(object).tolist()):
        if is_empty_cell(r):
            raise UsageError(
                f"{_file_of(r, table, spans, _table_dir(spans, name))}: a row of table "
                f"{name!r} has no record_id: a table row belongs to a saved record (for a "
                "new row, set its value in the records' file); nothing was sent",
                field=name)
        if r not in main.index and r not in loaded.index:
            raise UsageError(
                f"{_file_of(r, table, spans, _table_dir(spans, name))}: table {name!r}: "
                f"record_id {r!r} is no record of these saved frames (ids stay as "
                "exported: correct it, or remove that row); nothing was sent", field=name)


def _lists(table: pd.DataFrame, column: str) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for r, v in zip(table["record_id"].astype(object).tolist(),
                    table[column].astype(object).tolist(), strict=True):
        items = out.setdefault(r, [])
        if not is_empty_cell(v) and v not in items:
            items.append(v)
    return out


def _items(cell: Any) -> frozenset[Any]:
    if cell is None or (not isinstance(cell, (list, tuple)) and not hasattr(cell, "tolist")
                        and is_empty_cell(cell)):
        return frozenset()
    values = cell.tolist() if hasattr(cell, "tolist") else list(cell)
    return frozenset(v for v in values if not is_empty_cell(v))


def _shown(items: frozenset[Any] | list[Any]) -> list[str]:
    return sorted(map(str, items))


def _choices(name: str, table: pd.DataFrame, base: pd.DataFrame, spans: Spans,
             main: pd.DataFrame, loaded: pd.DataFrame, data: Path) -> pd.DataFrame:
    new, old = _lists(table, "value"), _lists(base, "value")
    touched = [r for r in dict.fromkeys([*old, *new])
               if set(new.get(r, [])) != set(old.get(r, []))]
    touched = [r for r in touched if r in main.index]   # a removed record: its row decides
    if not touched:
        return main
    cells: list[Any] = main[name].astype(object).tolist()
    row = {r: i for i, r in enumerate(main.index)}
    for r in touched:
        want = new.get(r, [])
        was = _items(loaded.at[r, name]) if r in loaded.index else frozenset()
        now = _items(cells[row[r]])
        if now == was:
            cells[row[r]] = list(want) if want else None
        elif now != frozenset(want):
            where = _file_of(r, table, spans, _table_dir(spans, name))
            raise UsageError(
                f"{where}: record {r!r}: table {name!r} now holds {_shown(want)}, but "
                f"column {name!r} of the records ({data}) holds {_shown(now)} (loaded: "
                f"{_shown(was)}): the two disagree. Edit one of them and leave the other as "
                "exported, or make them agree; nothing was sent", field=name)
    out = main.copy()
    out[name] = pd.Series(cells, index=main.index, dtype=object)
    return out


def _same(a: Any, b: Any) -> bool:
    if is_empty_cell(a) or is_empty_cell(b):
        return is_empty_cell(a) and is_empty_cell(b)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _timer(name: str, table: pd.DataFrame, base: pd.DataFrame, spans: Spans,
           main: pd.DataFrame, loaded: pd.DataFrame, cols: list[str], data: Path) -> None:
    def spans_of(t: pd.DataFrame) -> dict[Any, list[tuple[Any, Any]]]:
        out: dict[Any, list[tuple[Any, Any]]] = {}
        for r, a, b in zip(t["record_id"].astype(object).tolist(), t["from"].tolist(),
                           t["to"].tolist(), strict=True):
            out.setdefault(r, []).append((a, b))
        return out

    new, old = spans_of(table), spans_of(base)
    for r in dict.fromkeys([*old, *new]):
        if r not in main.index or r not in loaded.index:
            continue
        a, b = new.get(r, []), old.get(r, [])
        if len(a) == len(b) and all(_same(x, y) and _same(p, q)
                                    for (x, p), (y, q) in zip(a, b, strict=True)):
            continue
        moved = [c for c in cols if c in loaded.columns
                 and not _same(main.at[r, c], loaded.at[r, c])]
        if moved:
            where = _file_of(r, table, spans, _table_dir(spans, name))
            raise UsageError(
                f"{where}: record {r!r}: both its intervals (table {name!r}) and its "
                f"column(s) {moved} of the records ({data}) changed: the intervals are what "
                "is written. Edit the intervals only and put those columns back as "
                "exported (or edit the columns only); nothing was sent", field=name)

