"""The filter values of records in a narrow table of their own: one row per record and
non-empty field (``obj``, ``field``, ``text``, ``seq`` of the record, ``num``, ``lat``,
``lon``), derived from the record's ``vals`` (render.py) whenever the record's row is
written, so filters never read the records' wide rows (their two answer fragments).

Keyed by ``(obj, field, text, seq)`` (equality and sets on text are index probes) with an
index on ``(obj, field, num)`` (number and date ranges) and one on ``seq`` (a record's
rows replaced or dropped). A record's text is ``''`` in its row when it has only a number
or a position; a record with no row is blank in that field (query.py relies on both).

Usage::

    seq = conn.execute("INSERT INTO records(...) VALUES (...)", row).lastrowid
    put(conn, seq, "object_3", vals)      # in the same transaction as the record's row
    forget(conn, seq)                     # the record deleted
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

TABLE = "filter_values"
"""The table's name, for the SQL of filters (query.py)."""
SCHEMA_SQL = f"""
CREATE TABLE IF NOT EXISTS {TABLE}(obj TEXT NOT NULL, field TEXT NOT NULL,
    text TEXT NOT NULL, seq INTEGER NOT NULL, num REAL, lat REAL, lon REAL,
    PRIMARY KEY(obj, field, text, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {TABLE}_num ON {TABLE}(obj, field, num);
CREATE INDEX IF NOT EXISTS {TABLE}_seq ON {TABLE}(seq);
"""
_READY = "filter_values_ready"  # meta key: the table holds every record's rows
FilterRow = tuple[str, str, str, int, "float | None", "float | None", "float | None"]
_SLOTS = {"": 0, "n": 1, "lat": 2, "lon": 3}
_INSERT = f"INSERT INTO {TABLE}(obj, field, text, seq, num, lat, lon) VALUES (?,?,?,?,?,?,?)"


def rows_of(seq: int, obj_key: str, vals: str) -> list[FilterRow]:
    """The narrow rows of one record from its ``vals`` JSON (``field_N``: text,
    ``field_N#n``: number, ``field_N#lat``/``#lon``: position)."""
    by_field: dict[str, list[object]] = {}
    for key, value in json.loads(vals).items():
        field, _, part = key.partition("#")
        row = by_field.setdefault(field, ["", None, None, None])
        slot = _SLOTS.get(part)
        if slot is not None:
            row[slot] = value
    return [(obj_key, f, str(r[0]), seq, _num(r[1]), _num(r[2]), _num(r[3]))
            for f, r in by_field.items()]


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def put(conn: sqlite3.Connection, seq: int, obj_key: str, vals: str) -> None:
    """Replace one record's rows (the caller's write transaction)."""
    conn.execute(f"DELETE FROM {TABLE} WHERE seq = ?", (seq,))
    conn.executemany(_INSERT, rows_of(seq, obj_key, vals))


def add(conn: sqlite3.Connection, records: Iterable[tuple[int, str, str]]) -> None:
    """Rows of records new to the table: ``(seq, object key, vals)`` each."""
    conn.executemany(_INSERT, (row for seq, obj_key, vals in records
                               for row in rows_of(seq, obj_key, vals)))


def forget(conn: sqlite3.Connection, seq: int) -> None:
    """Drop a deleted record's rows."""
    conn.execute(f"DELETE FROM {TABLE} WHERE seq = ?", (seq,))


def fill_once(conn: sqlite3.Connection) -> None:
    """A data directory written before the table existed gets its rows, from the stored
    ``vals`` of every record (once: a meta key says it is done)."""
    if conn.execute("SELECT 1 FROM meta WHERE key = ?", (_READY,)).fetchone():
        return
    conn.execute(f"DELETE FROM {TABLE}")
    add(conn, conn.execute("SELECT seq, obj, vals FROM records").fetchall())
    conn.execute("INSERT INTO meta(key, value) VALUES (?, '1')", (_READY,))
