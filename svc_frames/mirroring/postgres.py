"""The PostgreSQL target (``postgresql://...``, psycopg 3): one transaction per run, rows
written by ``COPY``, one run at a time by an advisory lock.

PostgreSQL's DDL is transactional, so a run (tables created, columns added or renamed,
rows deleted, copied and versions closed) is kept whole at ``COMMIT`` or not at all: a
run killed at any point leaves the database as the last run left it. The lock is a
session advisory lock on the target's schema (``pg_try_advisory_lock``), released by the
server when the session ends, even when its process is killed; a second run names the
holder from ``pg_stat_activity`` (the ``application_name`` each run sets: its process,
host and start). Tables go into the connection's current schema (``search_path``; add
``?options=-csearch_path%3Dmirror`` to the URL for another). Primary keys are declared;
foreign keys are listed in ``svc_tables``, as for DuckDB. Each table has one more column,
``svc_row_order`` (``ROW_ORDER``), that reads order by and hide.

Needs ``pip install 'svc-frames[postgres]'`` (psycopg 3).

Usage::

    with PostgresTarget("postgresql://me@db.example.org/reports") as t:
        t.check()
"""

from __future__ import annotations

import datetime as dt
import io
import zlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..errors import TargetBusy, UsageError
from ..saved.snapshot import quote
from .history import append_with_versions
from .lock import holder_text
from .report import display_name

__all__ = ["PostgresTarget", "pg_type", "arrow_type_of"]


def import_psycopg() -> Any:
    try:
        import psycopg  # optional: the svc_frames[postgres] extra
    except ImportError:
        raise UsageError("a PostgreSQL mirror needs psycopg 3: pip install "
                         "'svc-frames[postgres]'") from None
    return psycopg


def pg_type(t: pa.DataType) -> str:
    """The PostgreSQL type of an Arrow column."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return "text"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_integer(t):
        return "bigint"
    if pa.types.is_floating(t):
        return "double precision"
    if pa.types.is_decimal(t):
        return f"numeric({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return "timestamptz" if t.tz else "timestamp"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_duration(t) or pa.types.is_interval(t):
        return "interval"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"{pg_type(t.value_type)}[]"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytea"
    return "text"


_ARROW = {"text": pa.string(), "boolean": pa.bool_(), "bigint": pa.int64(),
          "integer": pa.int64(), "double precision": pa.float64(),
          "timestamp with time zone": pa.timestamp("us", tz="UTC"),
          "timestamp without time zone": pa.timestamp("us"), "date": pa.date32(),
          "interval": pa.duration("us"), "numeric": pa.float64(),
          "bytea": pa.large_binary()}
_ELEMENT = {"_text": pa.string(), "_int8": pa.int64(), "_float8": pa.float64(),
            "_bool": pa.bool_(), "_timestamptz": pa.timestamp("us", tz="UTC")}


def arrow_type_of(data_type: str, udt: str) -> pa.DataType:
    """The Arrow type of a PostgreSQL column (``information_schema`` names)."""
    if data_type == "ARRAY":
        return pa.list_(_ELEMENT.get(udt, pa.string()))
    return _ARROW.get(data_type, pa.string())


# Arrow's CSV: every string quoted, a null an empty unquoted field (PostgreSQL's CSV NULL),
# floats in their shortest exact form (and nan, inf, -0), timestamps in ISO form; no header.
_CSV = pacsv.WriteOptions(include_header=False, quoting_style="needed")
COPY_ROWS = 65_536


def _plain(t: pa.DataType) -> bool:
    """Whether Arrow's CSV text of a column of type ``t`` is PostgreSQL's of its value."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t)
                or pa.types.is_boolean(t) or pa.types.is_integer(t)
                or pa.types.is_floating(t) or pa.types.is_decimal(t)
                or pa.types.is_date(t))


def _concat(*parts: Any) -> Any:
    """Arrow large strings and text joined element-wise (null where a part is null)."""
    return pc.binary_join_element_wise(
        *(pa.scalar(p, pa.large_string()) if isinstance(p, str) else p for p in parts),
        pa.scalar("", pa.large_string()))


def _array_literals(col: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """A list column as PostgreSQL array literals (``{"a","b \\"c\\""}``, ``{}``,
    ``NULL`` elements), or None for elements that are not text, integers or booleans."""
    item = col.type.value_type
    if not (pa.types.is_string(item) or pa.types.is_large_string(item)
            or pa.types.is_integer(item) or pa.types.is_boolean(item)):
        return None
    chunks = []
    for chunk in col.chunks:
        values = pc.cast(chunk.values, pa.large_string())
        if pa.types.is_string(item) or pa.types.is_large_string(item):
            values = pc.replace_substring(values, "\\", "\\\\")
            values = pc.replace_substring(values, '"', '\\"')
            values = _concat('"', values, '"')
        values = pc.fill_null(values, "NULL")
        lists = pa.LargeListArray.from_arrays(pc.cast(chunk.offsets, pa.int64()), values,
                                              mask=chunk.is_null())
        comma = pa.scalar(",", pa.large_string())
        chunks.append(_concat("{", pc.binary_join(lists, comma), "}"))
    return pa.chunked_array(chunks, pa.large_string())


def csv_columns(data: pa.Table) -> pa.Table | None:
    """``data`` with every column as one whose Arrow CSV text PostgreSQL reads as the
    column's value: timestamps in microseconds and UTC (``+00``), durations as
    ``N microseconds``, lists as array literals (sub-microsecond parts cut toward zero,
    as Arrow casts); None when a column has no such form (binaries, nested lists, lists
    of floats or timestamps): those go row by row."""
    out = []
    for col, f in zip(data.columns, data.schema, strict=True):
        t = f.type
        if _plain(t):
            out.append(col)
        elif pa.types.is_timestamp(t):
            # as text here: Arrow writes a zoned timestamp ten times slower than a naive
            # one (the same values: UTC), and ``+00`` says the zone
            text = pc.cast(pc.cast(col, pa.timestamp("us"), safe=False), pa.large_string())
            out.append(_concat(text, "+00") if t.tz else text)
        elif pa.types.is_duration(t):
            micros = pc.cast(pc.cast(col, pa.duration("us"), safe=False), pa.int64())
            out.append(_concat(pc.cast(micros, pa.large_string()), " microseconds"))
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            literals = _array_literals(col)
            if literals is None:
                return None
            out.append(literals)
        else:
            return None
    return pa.table(out, names=data.column_names)


def _csv_chunks(data: pa.Table) -> list[memoryview] | None:
    """``data`` as the CSV ``COPY ... (FORMAT csv)`` reads, in chunks of ``COPY_ROWS``
    rows (``csv_columns``); None when a column has no CSV form."""
    flat = csv_columns(data) if data.num_rows else None
    if flat is None:
        return None
    chunks = []
    for batch in flat.to_batches(max_chunksize=COPY_ROWS):
        buf = io.BytesIO()
        pacsv.write_csv(batch, buf, _CSV)
        chunks.append(buf.getbuffer())
    return chunks


def _text(value: str) -> str:
    """A text literal (a sequence's name for ``setval``)."""
    return "'" + value.replace("'", "''") + "'"


def _literal(when: dt.datetime) -> str:
    """A time as a ``timestamptz`` literal (microseconds, its offset)."""
    return f"'{when.isoformat()}'::timestamptz"


STAGE_MEMORY = "64MB"
"""The session's ``temp_buffers`` and ``work_mem`` (settings any user may change): a
batch of 15 pages of work orders (18 MB) stays in memory, where the defaults (8 MB,
4 MB) write it to temporary files and back."""

ROW_ORDER = "svc_row_order"
"""A column of every table the mirror creates, increasing (with gaps) in the order its
rows are written, which reads order by and hide: a record's exploded rows are compared in
order, and PostgreSQL returns rows in their place on disk, where a ``COPY`` puts them in
any hole deleted rows left."""


class PostgresWriter:
    """The changes of one PostgreSQL transaction (target.Writer)."""

    def __init__(self, con: Any, temp: bool = True) -> None:
        self.con = con
        self.temp = temp                       # may create temporary tables (stages)
        self._stages: dict[str, str] = {}      # table -> its stage (insert_with_versions)
        self._sequences: dict[str, str] = {}   # table -> its ROW_ORDER sequence
        self._numbered: dict[str, str] = {}    # table -> the history its stage numbers after
        self._moving: ExitStack | None = None  # the pipeline of moves not yet answered

    def settle(self) -> None:
        """Wait for the moves ``insert_with_versions`` left running on the server; raise
        the first one's error. Every other use of the connection settles first."""
        moving, self._moving = self._moving, None
        if moving is not None:
            moving.close()

    def abandon(self) -> None:
        """Wait for the moves left running, their errors ignored (the transaction is
        rolled back for another error)."""
        moving, self._moving = self._moving, None
        if moving is not None:
            try:
                moving.close()
            except Exception:  # noqa: BLE001  # the error being raised is the run's
                pass

    def create(self, table: str, schema: pa.Schema, primary_key: Sequence[str] = ()
               ) -> None:
        self.drop(table)
        parts = [f"{quote(f.name)} {pg_type(f.type)}" for f in schema]
        parts.append(f"{ROW_ORDER} bigint GENERATED ALWAYS AS IDENTITY")
        if primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(map(quote, primary_key))})")
        self.con.execute(f"CREATE TABLE {quote(table)} ({', '.join(parts)})")

    def drop(self, table: str) -> None:
        self.settle()
        self.con.execute(f"DROP TABLE IF EXISTS {quote(table)}")
        self._sequences.pop(table, None)
        self._numbered.pop(table, None)
        self._numbered = {t: h for t, h in self._numbered.items() if h != table}
        stage = self._stages.pop(table, None)
        if stage is not None:   # made in the table's columns of then
            self.con.execute(f"DROP TABLE IF EXISTS pg_temp.{stage}")

    def add_columns(self, table: str, schema: pa.Schema) -> None:
        self.settle()
        for f in schema:
            self.con.execute(f"ALTER TABLE {quote(table)} ADD COLUMN {quote(f.name)} "
                             f"{pg_type(f.type)}")

    def rename_column(self, table: str, old: str, new: str) -> None:
        self.settle()
        self.con.execute(f"ALTER TABLE {quote(table)} RENAME COLUMN {quote(old)} TO "
                         f"{quote(new)}")

    def delete(self, table: str, column: str, ids: Sequence[str]) -> None:
        self.settle()
        if len(ids):
            self.con.execute(f"DELETE FROM {quote(table)} WHERE {quote(column)} = ANY(%s)",
                             [list(ids)])

    def insert(self, table: str, data: pa.Table) -> None:
        """The rows by ``COPY ... FROM STDIN``: as the CSV Arrow writes of ``csv_columns``,
        in chunks of ``COPY_ROWS`` rows; row by row (psycopg adapting each value) for a
        table with a column that has no CSV form."""
        chunks = _csv_chunks(data)
        self.settle()
        self._copy(quote(table), data, chunks)
        # numbered by the table's own sequence: a stage numbers after it again
        self._numbered = {t: h for t, h in self._numbered.items() if table not in (t, h)}

    def insert_with_versions(self, parts: Sequence[tuple[str, str, pa.Table]],
                             when: dt.datetime, run_id: int) -> None:
        """Each ``(table, history, data)``: ``data``'s rows into ``table`` and, as the run's
        ``insert`` versions, into ``history``: copied once, into a temporary table of
        ``table``'s columns (the session's own, no WAL; dropped at the end of the
        transaction), then moved into both by ``INSERT ... SELECT`` in the order copied.
        The rows are converted to text and parsed once, not twice; two ``COPY``s where
        the user may not create temporary tables.

        The moves (two ``INSERT``s, the sequences set, a ``TRUNCATE``) are sent in a
        pipeline and not waited for: the server moves one batch while the writer converts
        the next, whose rows are turned into CSV before the call waits for the last moves
        (a ``COPY`` cannot join a pipeline). ``settle`` waits for them; the other methods
        and the transaction's end call it."""
        parts = [p for p in parts if p[2].num_rows]
        if not self.temp:
            self.settle()
            append_with_versions(self.insert, parts, when, run_id)
            return
        converted = [(table, history, data, _csv_chunks(data))
                     for table, history, data in parts]
        self.settle()
        moves, stamp = [], _literal(when)
        for table, history, data, chunks in converted:
            stage = self._stages.get(table)
            if stage is None:
                stage = self._stages[table] = f"svc_mirror_stage_{len(self._stages) + 1}"
                self.con.execute(f"CREATE TEMPORARY TABLE {stage} (LIKE {quote(table)} "
                                 "INCLUDING IDENTITY) ON COMMIT DROP")
            numbers = self._number_after(table, history, stage)
            self._copy(f"pg_temp.{stage}", data, chunks)
            names = ", ".join(quote(c) for c in [*data.column_names, ROW_ORDER])
            into = f"OVERRIDING SYSTEM VALUE SELECT {names}"
            moves += [f"INSERT INTO {quote(table)} ({names}) {into} FROM pg_temp.{stage}",
                      f"INSERT INTO {quote(history)} ({names}, valid_from, valid_to, "
                      f"run_id, change) {into}, {stamp}, NULL, {int(run_id)}, 'insert' "
                      f"FROM pg_temp.{stage}",
                      f"SELECT setval({_text(self._sequence(table))}, last_value), "
                      f"setval({_text(self._sequence(history))}, last_value) FROM {numbers}",
                      f"TRUNCATE pg_temp.{stage}"]
        if moves:
            pipeline = ExitStack()
            pipeline.enter_context(self.con.pipeline())
            try:
                for statement in moves:   # sent, not waited for
                    self.con.execute(statement, prepare=False)
            except BaseException:   # a move's error, answered already: raised as it is
                self._moving = pipeline
                self.abandon()
                raise
            self._moving = pipeline

    def _sequence(self, table: str) -> str:
        """The name of the sequence that numbers ``table``'s ``ROW_ORDER``."""
        if table not in self._sequences:
            row = self.con.execute("SELECT pg_get_serial_sequence(%s, %s)",
                                   [quote(table) if "." not in table else table, ROW_ORDER]
                                   ).fetchone()
            self._sequences[table] = str(row[0])
        return self._sequences[table]

    def _number_after(self, table: str, history: str, stage: str) -> str:
        """The stage's sequence, set to number its rows after every row of ``table`` and
        ``history``: the moves keep the stage's numbers (``ROW_ORDER``, the order the rows
        were copied in) instead of drawing each row's twice more and sorting the stage,
        then set both tables' sequences to the stage's last number."""
        numbers = self._sequence(f"pg_temp.{stage}")
        if self._numbered.get(table) != history:
            self.con.execute(
                f"SELECT setval({_text(numbers)}, GREATEST(s.last_value, t.last_value, "
                f"h.last_value)) FROM {numbers} s, {self._sequence(table)} t, "
                f"{self._sequence(history)} h")
            self._numbered[table] = history
        return numbers

    def _copy(self, table: str, data: pa.Table, chunks: list[memoryview] | None) -> None:
        """``data`` into ``table`` (a quoted, perhaps qualified name): ``chunks`` of CSV
        (``_csv_chunks``), or row by row when None."""
        if data.num_rows == 0:
            return
        names = ", ".join(quote(c) for c in data.column_names)
        with self.con.cursor() as cur:
            if chunks is not None:
                with cur.copy(f"COPY {table} ({names}) FROM STDIN (FORMAT csv, "
                              "ENCODING 'UTF8')") as copy:
                    for chunk in chunks:
                        copy.write(chunk)
                return
            columns = [data.column(i).to_pylist() for i in range(data.num_columns)]
            with cur.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in zip(*columns, strict=True):
                    copy.write_row(row)

    def close_versions(self, table: str, column: str, ids: Sequence[str], when: Any
                       ) -> None:
        self.settle()
        if len(ids):
            self.con.execute(f"UPDATE {quote(table)} SET valid_to = %s WHERE valid_to IS "
                             f"NULL AND {quote(column)} = ANY(%s)", [when, list(ids)])


class PostgresTarget:
    """A PostgreSQL database as a mirror target (module docstring)."""

    def __init__(self, url: str, *, readonly: bool = False) -> None:
        self.url = url
        self.name = display_name(url)
        self.readonly = readonly
        self.con: Any = None
        self.temp = False   # may create temporary tables (check() asks)
        self._writer: PostgresWriter | None = None   # the open transaction's

    def _db(self) -> Any:
        """The connection, once the open transaction's moves are answered."""
        if self._writer is not None:
            self._writer.settle()
        return self.con

    def check(self) -> None:
        psycopg = import_psycopg()
        try:
            self.con = psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                       application_name=f"svc-frames mirror, "
                                                        f"{holder_text()}"[:63])
        except psycopg.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageError(f"mirror target {self.name} cannot be reached: {first}") from None
        if not self.readonly:
            ok = self.con.execute("SELECT has_schema_privilege(current_schema(), 'CREATE')"
                                  ).fetchone()
            if not ok or not ok[0]:
                self.close()
                raise UsageError(f"mirror target {self.name}: this user may not create "
                                 "tables in the current schema")
        self.con.execute("SET TIME ZONE 'UTC'")
        # the session's memory for a batch of pages that queued while the writer worked:
        # its stages (temporary tables, whose buffers are set before the first is made)
        # and the sort of the moves held in memory instead of temporary files
        self.con.execute(f"SET temp_buffers = '{STAGE_MEMORY}'")
        self.con.execute(f"SET work_mem = '{STAGE_MEMORY}'")
        row = self.con.execute("SELECT has_database_privilege(current_database(), "
                               "'TEMPORARY')").fetchone()
        self.temp = bool(row and row[0])

    def _lock_key(self) -> int:
        schema = self._db().execute("SELECT current_schema()").fetchone()[0]
        return zlib.crc32(f"svc_frames mirror {schema}".encode()) & 0x7FFFFFFF

    @contextmanager
    def _lock(self, wait: float) -> Iterator[None]:
        key = self._lock_key()
        deadline = dt.datetime.now() + dt.timedelta(seconds=max(float(wait), 0.0))
        while not self._db().execute("SELECT pg_try_advisory_lock(%s)", [key]).fetchone()[0]:
            if dt.datetime.now() >= deadline:
                row = self._db().execute(
                    "SELECT a.application_name, a.pid, a.client_addr, a.backend_start FROM "
                    "pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE "
                    "l.locktype = 'advisory' AND l.objid = %s AND l.granted", [key]
                ).fetchone()
                held = (f"{row[0] or 'a session'} (server pid {row[1]}, from "
                        f"{row[2] or 'a local socket'}, connected {row[3]:%Y-%m-%d %H:%M:%S})"
                        if row else "unknown")
                raise TargetBusy(f"another mirror run holds {self.name}: {held}; waited "
                                 f"{wait:g} s (pass wait= to wait longer)")
            self._db().execute("SELECT pg_sleep(0.1)")
        try:
            yield
        finally:
            if self.con is not None and not self.con.closed:
                self._db().execute("SELECT pg_advisory_unlock(%s)", [key])

    def lock(self, wait: float) -> AbstractContextManager[None]:
        return self._lock(wait)

    def tables(self) -> set[str]:
        return {r[0] for r in self._db().execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema()").fetchall()}

    def schema(self, table: str) -> pa.Schema:
        return self._columns(table)[0]

    def _columns(self, table: str) -> tuple[pa.Schema, bool]:
        """The table's columns but ``ROW_ORDER``, and whether it has that column (not
        in a table an earlier version made)."""
        rows = self._db().execute(
            "SELECT column_name, data_type, udt_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s ORDER BY "
            "ordinal_position", [table]).fetchall()
        return (pa.schema([(name, arrow_type_of(dtype, udt)) for name, dtype, udt in rows
                           if name != ROW_ORDER]),
                any(name == ROW_ORDER for name, _, _ in rows))

    def read(self, table: str) -> pa.Table:
        return self._select(table, None, "", [])

    def read_rows(self, table: str, column: str, ids: Sequence[str]) -> pa.Table:
        return self._select(table, None, f" WHERE {quote(column)} = ANY(%s)",
                            [list(map(str, ids))])

    def read_columns(self, table: str, columns: Sequence[str]) -> pa.Table:
        return self._select(table, columns, "", [])

    def count(self, table: str) -> int:
        row = self._db().execute(f"SELECT count(*) FROM {quote(table)}").fetchone()
        return int(row[0]) if row else 0

    def _select(self, table: str, columns: Sequence[str] | None, where: str,
                params: list[Any]) -> pa.Table:
        """Rows of ``table`` (``columns`` only, if given) as Arrow, in the order written."""
        schema, ordered = self._columns(table)
        if columns is not None:
            schema = pa.schema([schema.field(c) for c in columns])
        what = ", ".join(map(quote, schema.names))
        order = f" ORDER BY {ROW_ORDER}" if ordered else ""
        with self._db().cursor() as cur:
            cur.execute(f"SELECT {what} FROM {quote(table)}{where}{order}", params)
            rows = cur.fetchall()
        data = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
        return pa.table([pa.array(list(col), f.type) for col, f in zip(data, schema,
                                                                        strict=True)],
                        schema=schema)

    @contextmanager
    def _transaction(self) -> Iterator[PostgresWriter]:
        with self.con.transaction():
            writer = self._writer = PostgresWriter(self.con, self.temp)
            try:
                yield writer
                writer.settle()   # before COMMIT: the moves' errors roll the run back
            except BaseException:
                writer.abandon()
                raise
            finally:
                self._writer = None

    def transaction(self) -> AbstractContextManager[PostgresWriter]:
        return self._transaction()

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None

    def __enter__(self) -> PostgresTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
