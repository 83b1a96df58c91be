"""Parquet files as every engine reads and writes them: the one place svc_frames writes a
Parquet file (``write_table``) and reads one that any tool may have written back
(``read_table``).

Writing: timestamps at microsecond precision, adjusted to UTC, their zone kept in the
Arrow schema stored in the file. Spark refuses nanosecond timestamps, and the service
keeps milliseconds, so nothing finer is lost.

Reading, by what the file says its timestamps are (the Parquet format's rules):

* INT96 (Spark's default output, Hive, Impala): a UTC instant; pyarrow reads it as a
  timestamp without zone, so the zone is put back here;
* TIMESTAMP marked adjusted-to-UTC: an instant (pyarrow gives it a zone);
* TIMESTAMP not so marked: a wall clock, the application's time (``arrow.conform``).

Usage: ``write_table(table, path); table = read_table(path)``
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def _for_engines(table: pa.Table) -> pa.Table:
    """``table`` with every timestamp column (top level) at microseconds, zone kept. A
    finer fraction is dropped: the service keeps milliseconds."""
    fields = []
    changed = False
    for f in table.schema:
        if pa.types.is_timestamp(f.type) and f.type.unit == "ns":
            f = f.with_type(pa.timestamp("us", f.type.tz))
            changed = True
        fields.append(f)
    if not changed:
        return table
    schema = pa.schema(fields, metadata=table.schema.metadata)
    return table.cast(schema, safe=False)


def write_table(table: pa.Table, path: Path) -> None:
    """``table`` as the Parquet file ``path``, readable by Spark, Dask, DuckDB, Polars and
    pyarrow alike (module docstring)."""
    pq.write_table(_for_engines(table), path)


def _int96_columns(path: Path) -> set[str]:
    """The top-level columns of the Parquet file ``path`` stored as INT96 timestamps."""
    schema = pq.ParquetFile(path).schema
    cols = [schema.column(i) for i in range(len(schema))]
    # a top-level leaf's path is its name alone (a name may hold dots: field_34.latitude)
    return {c.name for c in cols if c.physical_type == "INT96" and c.path == c.name}


def read_table(path: Path) -> pa.Table:
    """The Parquet file ``path`` with each INT96 column read as the UTC instant it is
    (pyarrow gives it no zone, which would read as the application's wall clock)."""
    table = pq.read_table(path)
    int96 = _int96_columns(path)
    if not int96:
        return table
    for i, f in enumerate(table.schema):
        if f.name in int96 and pa.types.is_timestamp(f.type) and f.type.tz is None:
            table = table.set_column(i, f.with_type(pa.timestamp(f.type.unit, "UTC")),
                                     table.column(i).cast(pa.timestamp(f.type.unit, "UTC")))
    return table
