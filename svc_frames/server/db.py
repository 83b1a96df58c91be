"""The SQLite database of a data directory: its tables, per-thread readers and the one
writer connection, and write transactions.

WAL mode; reads use one connection per thread, writes go through one connection under a
lock, one ``BEGIN IMMEDIATE`` transaction per write (a write answered 200 has been
committed; WAL with ``synchronous=NORMAL`` keeps it through a killed process).

Usage::

    db = Database(Path("data") / "service.db")
    with db.transaction() as conn:
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", ("k", "v"))
    db.reader.execute("SELECT value FROM meta").fetchall()
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import filtervalues
from .private import touch_private

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records(
    seq INTEGER PRIMARY KEY AUTOINCREMENT, obj TEXT NOT NULL, id TEXT NOT NULL,
    vals TEXT NOT NULL, secret TEXT, frag TEXT NOT NULL, frag_raw TEXT NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS records_id ON records(obj, id);
CREATE INDEX IF NOT EXISTS records_obj ON records(obj);
CREATE TABLE IF NOT EXISTS links(obj TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
    target TEXT NOT NULL);
DROP INDEX IF EXISTS links_target;
CREATE INDEX IF NOT EXISTS links_target_src ON links(field, target, obj, id);
CREATE INDEX IF NOT EXISTS links_src ON links(obj, id);
CREATE TABLE IF NOT EXISTS counters(obj TEXT NOT NULL, field TEXT NOT NULL,
    value INTEGER NOT NULL, PRIMARY KEY(obj, field));
CREATE TABLE IF NOT EXISTS assets(id TEXT PRIMARY KEY, type TEXT NOT NULL,
    filename TEXT NOT NULL, size INTEGER NOT NULL, thumb INTEGER NOT NULL,
    field_key TEXT, record_id TEXT, created REAL NOT NULL);
DROP TABLE IF EXISTS tokens;
CREATE TABLE IF NOT EXISTS user_tokens(token_hash TEXT PRIMARY KEY, obj TEXT NOT NULL,
    user_id TEXT NOT NULL, expires REAL NOT NULL, stamp TEXT NOT NULL DEFAULT '');
""" + filtervalues.SCHEMA_SQL
# ``tokens`` held tokens in plain text (before 0.1.1): dropped, its users log in again


WRITER_CACHE_KIB = 131_072
"""Page cache of the writer connection (KiB; SQLite's default is 2,000)."""


def new_id(now: float | None = None) -> str:
    """A 24-hex record/asset id, time-prefixed like the hosted service's ids (``now``: the
    service's clock, epoch seconds; default this machine's)."""
    return f"{int(time.time() if now is None else now):08x}{secrets.token_hex(8)}"


class Database:
    """One SQLite file: a writer under a lock and a reader per thread."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        for suffix in ("", "-wal", "-shm"):  # SQLite gives -wal/-shm the database's mode
            extra = self.path.with_name(self.path.name + suffix)
            if suffix == "" or extra.exists():
                touch_private(extra)
        self._local = threading.local()
        self._wlock = threading.RLock()
        self._writer = self._connect()
        # the filter values' indexes take a row per record and field, in another order
        # than the records': a large bulk write must not read and write a page per row
        self._writer.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        self._writer.execute("PRAGMA temp_store=MEMORY")  # their staging and sorting
        self._writer.executescript(SCHEMA_SQL)
        self._all_conns: list[sqlite3.Connection] = [self._writer]
        self._conns_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                               timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    @property
    def reader(self) -> sqlite3.Connection:
        """This thread's read connection."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._conns_lock:
                self._all_conns.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The writer inside ``BEGIN IMMEDIATE``: committed on exit, rolled back on error."""
        with self._wlock:
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement on the writer (its own implicit transaction)."""
        with self._wlock:
            self._writer.execute(sql, params)

    def columns(self, table: str) -> set[str]:
        """Column names of a table."""
        return {row[1] for row in self._writer.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        with self._conns_lock:
            for c in self._all_conns:
                try:
                    c.close()
                except sqlite3.Error:
                    pass
            self._all_conns.clear()
