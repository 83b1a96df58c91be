"""Timestamps in the Parquet files svc_frames writes and reads back, with pyarrow alone
(Spark and Dask themselves: tests_engines/, ``make test-engines``).

Written: microseconds, adjusted to UTC, the zone in the Arrow schema. Read back by what
the file says: INT96 is a UTC instant, an adjusted TIMESTAMP an instant, an unmarked one
the application's wall clock; a column whose meaning cannot be known is refused before
any request. Whatever the representation, an untouched date plans nothing.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from fixtures.guard import FAST_GUARD

from svc_frames.errors import UsageError
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.writeback import diff

DATE = "field_29"  # the demo work orders' due date (date and time)


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def _timestamp_columns(path: Path) -> dict[str, tuple[str, str]]:
    """Top-level timestamp columns of a Parquet file: name -> (physical, logical type)."""
    schema = pq.ParquetFile(path).schema
    out = {}
    for i in range(len(schema)):
        c = schema.column(i)
        if c.path == c.name and (c.physical_type == "INT96"
                                 or "Timestamp" in str(c.logical_type)):
            out[c.name] = (c.physical_type, str(c.logical_type))
    return out


def _assert_engine_timestamps(path: Path) -> None:
    cols = _timestamp_columns(path)
    assert cols, f"{path}: no timestamp column"
    for name, (physical, logical) in cols.items():
        assert physical == "INT64", (path, name, physical)
        assert "isAdjustedToUTC=true" in logical and "timeUnit=microseconds" in logical, (
            path, name, logical)


@pytest.fixture()
def exported(fresh_service: LocalService, tmp_path: Path) -> Path:
    out = tmp_path / "orders"
    export(_client(fresh_service), "object_3", out, progress=False, columns="keys")
    return out


def _replace_data(out: Path, table: pa.Table, name: str = "edited.parquet",
                  **options: object) -> None:
    """What a user does after editing elsewhere: the old parts out, the edited file in."""
    for p in out.iterdir():
        p.unlink()
    pq.write_table(table, out / name, **options)  # type: ignore[arg-type]


def test_every_writer_stores_microseconds_adjusted_to_utc(fresh_service: LocalService,
                                                          exported: Path,
                                                          tmp_path: Path) -> None:
    from svc_frames.application import read_app

    for part in [*sorted(exported.glob("*.parquet")),
                 *sorted(exported.with_name("orders.svc_frames").rglob("main/*.parquet"))]:
        _assert_engine_timestamps(part)
    frames = read_parquet(exported)
    to_parquet(frames, tmp_path / "saved")
    _assert_engine_timestamps(next((tmp_path / "saved").glob("*.parquet")))
    app = read_app(_client(fresh_service), progress=False, columns="keys")
    app.to_parquet(tmp_path / "app")
    table = next(p for p in (tmp_path / "app").iterdir()
                 if any("Timestamp" in str(pq.ParquetFile(f).schema)
                        for f in p.glob("*.parquet")))
    _assert_engine_timestamps(next(table.glob("*.parquet")))
    # the zone stays with the data: pandas and read_parquet give the application's time
    tz = str(frames.main[DATE].dt.tz)
    assert tz not in ("UTC", "None")
    assert str(pd.read_parquet(exported)[DATE].dt.tz) == tz
    assert str(read_parquet(tmp_path / "saved").main[DATE].dt.tz) == tz


def test_the_cache_and_the_incremental_export_write_microseconds(
        fresh_service: LocalService, tmp_path: Path) -> None:
    from svc_frames.loaders import read_object
    from svc_frames.refreshing.cache import export_incremental

    read_object(_client(fresh_service), "object_3", cache=tmp_path / "cache", progress=False, columns="keys")
    export_incremental(_client(fresh_service), "object_3", tmp_path / "inc", progress=False)
    parts = [p for d in ("cache", "inc") for p in (tmp_path / d).rglob("*.parquet")
             if _timestamp_columns(p)]
    assert {p.relative_to(tmp_path).parts[0] for p in parts} == {"cache", "inc"}
    for p in parts:
        _assert_engine_timestamps(p)


def _edited_due(table: pa.Table, rid: str) -> tuple[pa.Table, pd.Timestamp]:
    """``table`` with record ``rid``'s due date one day later; returns the new instant."""
    col = table.column(DATE)
    hit = pc.equal(table.column("id"), rid)
    was = col.to_pylist()[table.column("id").to_pylist().index(rid)]
    new = pd.Timestamp(was) + pd.Timedelta(days=1)
    moved = pc.if_else(hit, pa.scalar(new.to_pydatetime(), type=col.type), col)
    return table.set_column(table.column_names.index(DATE), DATE, moved), new


def _as_naive(table: pa.Table, zone: str | None) -> pa.Table:
    """Every timestamp column without its zone: UTC wall clock (``zone=None``) or the
    wall clock of ``zone``."""
    for i, f in enumerate(table.schema):
        if pa.types.is_timestamp(f.type) and f.type.tz is not None:
            col = table.column(i)
            col = pc.local_timestamp(col.cast(pa.timestamp(f.type.unit, zone))
                                     ) if zone else col.cast(pa.timestamp(f.type.unit))
            table = table.set_column(i, f.name, col)
    return table


@pytest.mark.parametrize("style", ["int96", "int96_aware", "wall_clock", "utc_adjusted"])
def test_a_date_edit_pushes_alone_whatever_the_timestamp_style(
        fresh_service: LocalService, exported: Path, style: str) -> None:
    """Each way a tool may store the timestamps: Spark's INT96 (from naive UTC values, or
    aware ones), an unmarked wall clock in the application's zone, plain UTC instants."""
    table = ds.dataset(exported).to_table().replace_schema_metadata(None)
    tz = table.schema.field(DATE).type.tz
    rid = next(r for r, d in zip(table.column("id").to_pylist(),
                                 table.column(DATE).to_pylist(), strict=True) if d)
    table, new = _edited_due(table, rid)
    if style == "int96":
        _replace_data(exported, _as_naive(table, None), use_deprecated_int96_timestamps=True)
    elif style == "int96_aware":
        _replace_data(exported, table, use_deprecated_int96_timestamps=True)
    elif style == "wall_clock":
        wall = _as_naive(table, tz)
        _replace_data(exported, wall)
        assert "isAdjustedToUTC=false" in _timestamp_columns(exported / "edited.parquet")[
            DATE][1]
    else:
        utc = table.cast(pa.schema([f.with_type(pa.timestamp("ms", "UTC"))
                                    if pa.types.is_timestamp(f.type) else f
                                    for f in table.schema]))
        _replace_data(exported, utc)
    if style.startswith("int96"):
        assert _timestamp_columns(exported / "edited.parquet")[DATE][0] == "INT96"
    plan = diff(read_parquet(exported))
    changes = plan.changes
    assert list(zip(changes["record_id"], changes["column"], strict=True)) == [(rid, DATE)]
    assert pd.Timestamp(changes["new"].iloc[0]) == new  # the same instant
    client = _client(fresh_service)
    report = push(client, exported, **FAST_GUARD)
    assert (report.table["status"] == "applied").sum() == 1
    after = read_parquet(exported)  # the as-loaded copy took the pushed value
    assert diff(after).empty


def test_a_column_of_unknown_meaning_is_refused_before_any_request(
        fresh_service: LocalService, exported: Path) -> None:
    table = ds.dataset(exported).to_table().replace_schema_metadata(None)
    epoch = table.column(DATE).cast(pa.int64())  # numbers: which unit, which zone?
    _replace_data(exported, table.set_column(table.column_names.index(DATE), DATE, epoch))
    sent = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(_client(fresh_service), exported)
    assert exc.value.field == DATE
    assert DATE in str(exc.value) and "int64" in str(exc.value)
    assert "timestamp" in str(exc.value)
    assert fresh_service.request_log.count() == sent


def test_utc_instants_that_lost_their_zone_are_refused(fresh_service: LocalService,
                                                       exported: Path) -> None:
    """Spark's INT96 read by pandas (no zone) and written back: unmarked timestamps, the
    application's wall clock by the format, though they hold UTC. Pushing would move
    every date by the UTC offset: refused before any request."""
    table = ds.dataset(exported).to_table().replace_schema_metadata(None)
    _replace_data(exported, table, "spark.parquet", use_deprecated_int96_timestamps=True)
    df = pd.read_parquet(exported / "spark.parquet")
    assert df[DATE].dt.tz is None  # how pandas reads INT96
    df.loc[df.index[0], "field_12"] = "edited by pandas"
    _replace_data(exported, pa.Table.from_pandas(df, preserve_index=False))
    sent = fresh_service.request_log.count()
    with pytest.raises(UsageError, match="look like UTC instants") as exc:
        push(_client(fresh_service), exported)
    assert exc.value.field in {DATE, "field_30", "field_30.to", "field_31", "field_31.to",
                               "field_44", "field_46"}
    assert fresh_service.request_log.count() == sent


def test_other_writers_conventions_read_as_the_same_data(exported: Path) -> None:
    """Spark's part names, _SUCCESS and .crc files; Dask's part.N.parquet and index
    column; columns reordered; dictionary and large-string text; booleans with nulls."""
    table = ds.dataset(exported).to_table().replace_schema_metadata(None)
    half = table.num_rows // 2
    for p in exported.iterdir():
        p.unlink()
    spark_part = "part-00000-0b1e2c3d-4e5f-6789-abcd-ef0123456789-c000.snappy.parquet"
    reordered = table.select(list(reversed(table.column_names)))
    pq.write_table(reordered.slice(0, half), exported / spark_part,
                   use_deprecated_int96_timestamps=True)
    (exported / "_SUCCESS").write_bytes(b"")
    (exported / f".{spark_part}.crc").write_bytes(b"\x00crc")
    rest = table.slice(half)
    text = [i for i, f in enumerate(rest.schema)
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    for n, i in enumerate(text):
        col = rest.column(i)
        col = col.dictionary_encode() if n % 2 else col.cast(pa.large_string())
        rest = rest.set_column(i, rest.schema.field(i).name, col)
    rest = rest.append_column("__null_dask_index__",
                              pa.array(range(half, table.num_rows), type=pa.int64()))
    pq.write_table(rest, exported / "part.1.parquet")
    assert diff(read_parquet(exported)).empty


def test_duckdb_and_polars_read_the_dates_as_instants(exported: Path) -> None:
    import duckdb
    import polars as pl

    want = read_parquet(exported).main[DATE]
    micros = {rid: (None if pd.isna(v) else v.value // 1000) for rid, v in want.items()}
    con = duckdb.connect()
    glob = f"{exported}/*.parquet"
    kinds = {r[0]: r[1] for r in
             con.sql(f"DESCRIBE SELECT id, {DATE} FROM read_parquet('{glob}')").fetchall()}
    assert kinds[DATE] == "TIMESTAMP WITH TIME ZONE"
    got = dict(con.sql(f"SELECT id, epoch_us({DATE}) FROM read_parquet('{glob}')").fetchall())
    assert got == micros
    frame = pl.read_parquet(exported)
    assert frame.schema[DATE] == pl.Datetime("us", str(want.dt.tz))
    got_pl = dict(zip(frame["id"].to_list(), frame[DATE].dt.epoch("us").to_list(),
                      strict=True))
    assert got_pl == micros
