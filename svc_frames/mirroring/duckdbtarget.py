"""The DuckDB target: one file, one connection, one transaction per run.

DuckDB makes a transaction durable only when it commits (here by a checkpoint at the
commit: ``_open_for_runs``), so a run killed at any point (``kill -9`` included) leaves
the file as the last committed run left it; a lock file beside it
(``<file>.mirror-lock``, lock.py) keeps two runs from interleaving, and DuckDB itself lets
one process at a time open the file for writing.

Tables keep their primary keys; foreign keys are listed in ``svc_tables`` but not
declared: DuckDB checks them eagerly inside a transaction (a deleted parent whose child
row was deleted a statement earlier is refused), which would make a run's delete-then-
insert of a changed record fail.

Usage::

    with DuckDBTarget(Path("app.duckdb")) as t:
        t.check()
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import UsageError
from ..saved.snapshot import SQL_TYPES, import_duckdb, quote
from .history import append_with_versions
from .lock import file_lock

__all__ = ["DuckDBTarget"]


def arrow_of(result: Any) -> pa.Table:
    """A DuckDB result as an Arrow table (the method's name differs between versions)."""
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        if hasattr(result, name):
            out = getattr(result, name)()
            return out.read_all() if hasattr(out, "read_all") else out
    raise AttributeError("this DuckDB gives no Arrow table")


class DuckDBWriter:
    """The changes of one DuckDB transaction (target.Writer)."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.n = 0

    def _register(self, data: pa.Table) -> str:
        self.n += 1
        name = f"svc_mirror_src_{self.n}"
        self.con.register(name, data)
        return name

    def create(self, table: str, schema: pa.Schema, primary_key: Sequence[str] = ()
               ) -> None:
        self.drop(table)
        parts = self._columns(schema)
        if primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(map(quote, primary_key))})")
        self.con.execute(f"CREATE TABLE {quote(table)} ({', '.join(parts)})")

    def _columns(self, schema: pa.Schema) -> list[str]:
        """Each column's definition, in DuckDB's own types for the Arrow columns."""
        src = self._register(schema.empty_table())
        try:
            cols = self.con.execute(f"DESCRIBE SELECT * FROM {src}").fetchall()
        finally:
            self.con.unregister(src)
        return [f"{quote(c[0])} {SQL_TYPES.get(c[1], c[1])}" for c in cols]

    def drop(self, table: str) -> None:
        self.con.execute(f"DROP TABLE IF EXISTS {quote(table)}")

    def add_columns(self, table: str, schema: pa.Schema) -> None:
        for part in self._columns(schema) if len(schema) else ():
            self.con.execute(f"ALTER TABLE {quote(table)} ADD COLUMN {part}")

    def rename_column(self, table: str, old: str, new: str) -> None:
        self.con.execute(f"ALTER TABLE {quote(table)} RENAME COLUMN {quote(old)} TO "
                         f"{quote(new)}")

    def delete(self, table: str, column: str, ids: Sequence[str]) -> None:
        if not len(ids):
            return
        src = self._register(pa.table({"id": pa.array(list(ids), pa.string())}))
        try:
            self.con.execute(f"DELETE FROM {quote(table)} WHERE {quote(column)} IN "
                             f"(SELECT id FROM {src})")
        finally:
            self.con.unregister(src)

    def insert(self, table: str, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        src = self._register(data)
        try:
            names = ", ".join(quote(c) for c in data.column_names)
            self.con.execute(f"INSERT INTO {quote(table)} ({names}) SELECT {names} FROM {src}")
        finally:
            self.con.unregister(src)

    def insert_with_versions(self, parts: Sequence[tuple[str, str, pa.Table]],
                             when: dt.datetime, run_id: int) -> None:
        append_with_versions(self.insert, parts, when, run_id)

    def close_versions(self, table: str, column: str, ids: Sequence[str], when: Any
                       ) -> None:
        if not len(ids):
            return
        src = self._register(pa.table({"id": pa.array(list(ids), pa.string())}))
        try:
            self.con.execute(f"UPDATE {quote(table)} SET valid_to = ? WHERE valid_to IS NULL "
                             f"AND {quote(column)} IN (SELECT id FROM {src})", [when])
        finally:
            self.con.unregister(src)


ROW_GROUP_SIZE = 16_384
"""Rows per row group of the tables a run writes (DuckDB's default: 122,880). A run's rows
are written inside its transaction as the pages come (stream.py); DuckDB writes a full
row group to the file at once ("optimistic writes"), but holds a partial one in memory
until COMMIT, which then compresses and writes it. With smaller groups most of a listing
is on disk before the last page, and the commit writes only its tail (at 100,000 records
the commit took a tenth of the time); the file grows a little (each group compressed
alone) and a scan has more, smaller groups, which DuckDB reads in parallel the same."""


def _open_for_runs(duckdb: Any, path: Path) -> Any:
    """A connection to ``path`` whose writes fill row groups of ROW_GROUP_SIZE, each written
    as soon as it is full; a DuckDB without the options (before 1.2) as it comes."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {_literal(str(path))} AS mirror (ROW_GROUP_SIZE "
                    f"{ROW_GROUP_SIZE})")
    except duckdb.Error as exc:
        if "row_group_size" not in str(exc).lower():
            con.close()
            raise
        con.close()
        return duckdb.connect(str(path))
    con.execute("USE mirror")
    try:
        con.execute("SET write_buffer_row_group_count = 1")   # written as each fills
    except duckdb.Error:
        pass
    # one thread: a run's writes come a page at a time while this process decodes the
    # next pages; DuckDB's own threads only competed with it for the cores (a first run
    # of 20,000 records unpaced took less CPU and less wall with one, and a run after it
    # no more: docs/benchmarks.md)
    con.execute("SET threads = 1")
    try:
        # the run's one COMMIT checkpoints at once, its changes written into the file
        # without being written to the log first (DuckDB logs a commit only when it does
        # not checkpoint it): the log's write and its fsync are spared, and a kill before
        # the checkpoint's end leaves the file as the last run left it, as before
        con.execute("SET checkpoint_threshold = '0b'")
    except duckdb.Error:
        pass
    return con


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class DuckDBTarget:
    """A DuckDB file as a mirror target (module docstring)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.name = str(path)
        self.readonly = readonly
        self.con: Any = None

    def check(self) -> None:
        parent = self.path.parent if str(self.path.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"mirror target {self.path}: the directory {parent} does not "
                             "exist")
        if self.readonly:
            if not self.path.is_file():
                raise UsageError(f"{self.path} is not a mirror: no such file")
        elif not os.access(parent, os.W_OK) or (self.path.exists()
                                                and not os.access(self.path, os.W_OK)):
            raise UsageError(f"mirror target {self.path} cannot be written (permissions)")
        duckdb = import_duckdb()
        try:
            self.con = (duckdb.connect(str(self.path), read_only=True) if self.readonly
                        else _open_for_runs(duckdb, self.path))
            self.con.execute("SET TimeZone = 'UTC'")
        except Exception as exc:  # noqa: BLE001  # duckdb's own errors: not a database, locked
            raise UsageError(f"mirror target {self.path} cannot be opened: {exc}") from None

    def lock(self, wait: float) -> AbstractContextManager[None]:
        return file_lock(Path(f"{self.path}.mirror-lock"), wait=wait, what=str(self.path))

    def tables(self) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'main' AND table_catalog = current_database()").fetchall()}

    def read(self, table: str) -> pa.Table:
        return arrow_of(self.con.sql(f"SELECT * FROM {quote(table)}"))

    def schema(self, table: str) -> pa.Schema:
        return arrow_of(self.con.sql(f"SELECT * FROM {quote(table)} LIMIT 0")).schema

    def read_rows(self, table: str, column: str, ids: Sequence[str]) -> pa.Table:
        if not len(ids):
            return self.schema(table).empty_table()
        src = "svc_mirror_wanted"
        self.con.register(src, pa.table({"id": pa.array(list(ids), pa.string())}))
        # an exploded table's rows as written (a record's rows in their order), as read();
        # a main table's (one row a record, found by its id) in any order: sorting them
        # moved every column of every row read (a fifth of the read at 100,000 records)
        order = "" if column == "id" else " ORDER BY rowid"
        try:
            return arrow_of(self.con.sql(f"SELECT * FROM {quote(table)} WHERE "
                                         f"{quote(column)} IN (SELECT id FROM {src})"
                                         + order))
        finally:
            self.con.unregister(src)

    def read_columns(self, table: str, columns: Sequence[str]) -> pa.Table:
        return arrow_of(self.con.sql(f"SELECT {', '.join(map(quote, columns))} FROM "
                                     f"{quote(table)}"))

    def count(self, table: str) -> int:
        rows = self.con.execute(f"SELECT count(*) FROM {quote(table)}").fetchall()
        return int(rows[0][0])

    @contextmanager
    def _transaction(self) -> Iterator[DuckDBWriter]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield DuckDBWriter(self.con)
        except BaseException:
            self._when_free("ROLLBACK")
            raise
        try:
            self.con.execute("COMMIT")
        except BaseException as exc:
            # Ctrl-C during the commit: DuckDB interrupts it ("Query interrupted", not a
            # KeyboardInterrupt) and nothing is committed; what is left rolls back and
            # the run stops as interrupted
            interrupted = "interrupted" in str(exc).lower()
            self._when_free("ROLLBACK", missing_ok=True)
            if interrupted and not isinstance(exc, KeyboardInterrupt):
                raise KeyboardInterrupt from exc
            raise
        self.con.execute("CHECKPOINT")

    def _when_free(self, sql: str, missing_ok: bool = False) -> None:
        """``sql`` once no other call holds the connection (``_while_busy``);
        ``missing_ok``: a DuckDB error (no transaction left to roll back) is ignored."""
        duckdb = import_duckdb()
        try:
            self._while_busy(lambda: self.con.execute(sql))
        except duckdb.ResourceInUseException:
            raise
        except duckdb.Error:
            if not missing_ok:
                raise

    def _while_busy(self, call: Callable[[], object]) -> None:
        """``call``, tried again while another call holds the connection: a Ctrl-C can
        land while a call the interrupted one began is still ending (DuckDB refuses a
        second call then, rather than waiting), and a connection closed or rolled back
        while busy aborts the process."""
        duckdb = import_duckdb()
        deadline = time.monotonic() + 30.0
        while True:
            try:
                call()
                return
            except duckdb.ResourceInUseException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def transaction(self) -> AbstractContextManager[DuckDBWriter]:
        return self._transaction()

    def close(self) -> None:
        if self.con is not None:
            self._while_busy(self.con.close)
            self.con = None

    def __enter__(self) -> DuckDBTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
