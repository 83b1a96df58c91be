"""The filter values of records in a narrow table of their own: one row per record and
non-empty field (``obj``, ``field``, ``text``, ``seq`` of the record, ``num``, ``lat``,
``lon``), derived from the record's ``vals`` (render.py) whenever the record's row is
written, so filters never read the records' wide rows (their two answer fragments).

Keyed by ``(obj, field, text, seq)`` (equality and sets on text are index probes) with an
index on ``(obj, field, num)`` of the rows that have a number (number and date ranges)
and one on ``seq`` (a record's
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
CREATE INDEX IF NOT EXISTS {TABLE}_n ON {TABLE}(obj, field, num) WHERE num IS NOT NULL;
CREATE INDEX IF NOT EXISTS {TABLE}_seq ON {TABLE}(seq);
"""
_READY = "filter_values_ready"  # meta key: the table holds every record's rows
FilterRow = tuple[str, str, str, int, "float | None", "float | None", "float | None"]
_INSERT = f"INSERT INTO {TABLE}(obj, field, text, seq, num, lat, lon) VALUES (?,?,?,?,?,?,?)"


def rows_of(seq: int, obj_key: str, vals: str) -> list[FilterRow]:
    """The narrow rows of one record from its ``vals`` JSON (``field_N``: text,
    ``field_N#n``: number, ``field_N#lat``/``#lon``: position)."""
    members = json.loads(vals)
    out: list[FilterRow] = []
    for key, value in members.items():
        if "#" not in key:
            out.append((obj_key, key, value, seq, members.get(key + "#n"),
                        members.get(key + "#lat"), members.get(key + "#lon")))
        elif key.endswith("#n") and key[:-2] not in members:  # a number without text
            base = key[:-2]
            out.append((obj_key, base, "", seq, value, members.get(base + "#lat"),
                        members.get(base + "#lon")))
    return out


def put(conn: sqlite3.Connection, seq: int, obj_key: str, vals: str) -> None:
    """Replace one record's rows (the caller's write transaction)."""
    conn.execute(f"DELETE FROM {TABLE} WHERE seq = ?", (seq,))
    conn.executemany(_INSERT, rows_of(seq, obj_key, vals))


def add(conn: sqlite3.Connection, records: Iterable[tuple[int, str, str]]) -> None:
    """Rows of many records new to the table: ``(seq, object key, vals)`` each.

    Staged in a temporary table and inserted in key order: rows in their records' order
    would land all over the key's B-tree (a page read and written per row once it
    outgrows the cache)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS filter_rows(obj, field, text, seq, num, "
                 "lat, lon)")
    conn.executemany("INSERT INTO temp.filter_rows VALUES (?,?,?,?,?,?,?)",
                     (row for seq, obj_key, vals in records
                      for row in rows_of(seq, obj_key, vals)))
    conn.execute(f"INSERT INTO {TABLE} SELECT * FROM temp.filter_rows "
                 "ORDER BY obj, field, text, seq")
    conn.execute("DELETE FROM temp.filter_rows")


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
