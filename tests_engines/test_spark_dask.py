"""Spark and Dask read what svc_frames writes (an export, saved frames, the whole app) with
the values of the frames, and an edit they write back pushes as that edit alone: no date
moves, whatever timestamp representation the engine chose.

Values are compared as instants (epoch microseconds), lists, booleans and numbers, so a
zone or a unit that differs only in representation is no difference.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from engine_values import dask_rows, rows_of_frame, spark_rows

from svc_frames.application import read_app
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.saved.push import push
from svc_frames.saved.snapshot import app_tables
from svc_frames.server import LocalService
from svc_frames.writeback import diff

TEXT, DATE = "field_12", "field_29"  # work orders: title, due date


def main_of(frames: Frames) -> pd.DataFrame:
    return frames.main.reset_index()


# ---- reading ----------------------------------------------------------------------------
@pytest.fixture()
def exported(client: Client, tmp_path: Path) -> Path:
    out = tmp_path / "orders"
    export(client, "object_3", out, progress=False, columns="keys")
    return out


def test_spark_and_dask_read_an_export_and_saved_frames_as_the_frames(
        spark: Any, client: Client, exported: Path, tmp_path: Path) -> None:
    frames = read_object(client, "object_3", progress=False, columns="keys")
    saved = tmp_path / "saved"
    to_parquet(frames, saved)
    main = main_of(frames)
    assert main[DATE].notna().any() and main["field_28"].map(bool).any()
    want = rows_of_frame(main, list(main.columns))
    for path in (exported, saved):
        assert spark_rows(spark, path, list(main.columns)) == want, path
        assert dask_rows(path, list(main.columns)) == want, path
    for name, table in frames.tables.items():
        want_t = rows_of_frame(table, list(table.columns))
        for root in (exported.with_name("orders.tables"), saved.with_name("saved.tables")):
            assert spark_rows(spark, root / name, list(table.columns)) == want_t, name
            assert dask_rows(root / name, list(table.columns)) == want_t, name


def test_spark_and_dask_read_the_whole_app(spark: Any, client: Client,
                                           tmp_path: Path) -> None:
    app = read_app(client, progress=False, columns="keys")
    app.to_parquet(tmp_path / "app")
    specs = app_tables(app)
    assert {s.kind for s in specs} >= {"object", "connection", "choices", "meta"}
    for spec in specs:
        if spec.kind == "meta":
            continue
        if spec.kind == "object":
            df = main_of(app.frames[spec.object_key])
        else:
            df = spec.data.to_pandas()
        want = rows_of_frame(df, list(df.columns))
        path = tmp_path / "app" / spec.name
        assert spark_rows(spark, path, list(df.columns)) == want, spec.name
        assert dask_rows(path, list(df.columns)) == want, spec.name


# ---- editing and pushing back -----------------------------------------------------------
def _replace(out: Path, written: Path) -> None:
    """The engine's output directory becomes the export's data directory."""
    shutil.rmtree(out)
    written.rename(out)


def _spark_edit(spark: Any, out: Path, rid: str, timestamps: str) -> None:
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.parquet.outputTimestampType", timestamps)
    sdf = spark.read.parquet(str(out))
    hit = F.col("id") == rid
    sdf = (sdf.withColumn(TEXT, F.when(hit, F.lit("edited by spark")).otherwise(F.col(TEXT)))
              .withColumn(DATE, F.when(hit, F.col(DATE) + F.expr("INTERVAL 24 HOURS"))
                          .otherwise(F.col(DATE))))
    written = out.with_name("orders.spark")
    sdf.write.mode("overwrite").parquet(str(written))
    _replace(out, written)


def _dask_edit(out: Path, rid: str) -> None:
    import dask.dataframe as dd

    # Arrow-backed columns: Dask infers no Parquet type for a list column held as objects
    ddf = dd.read_parquet(str(out), dtype_backend="pyarrow")
    hit = ddf["id"] == rid
    ddf[TEXT] = ddf[TEXT].mask(hit, "edited by dask")
    ddf[DATE] = ddf[DATE].mask(hit, ddf[DATE] + pd.Timedelta(hours=24))
    written = out.with_name("orders.dask")
    ddf.to_parquet(str(written))
    _replace(out, written)


def _timestamp_styles(out: Path) -> set[str]:
    """How the files in ``out`` store the due date: INT96, or the logical type."""
    styles = set()
    for part in out.glob("*.parquet"):
        schema = pq.ParquetFile(part).schema
        col = next(schema.column(i) for i in range(len(schema))
                   if schema.column(i).path == DATE)
        styles.add("INT96" if col.physical_type == "INT96" else str(col.logical_type))
    return styles


ENGINES: dict[str, tuple[Callable[..., None], str]] = {
    "spark-int96": (lambda spark, out, rid: _spark_edit(spark, out, rid, "INT96"), "INT96"),
    "spark-micros": (lambda spark, out, rid: _spark_edit(spark, out, rid, "TIMESTAMP_MICROS"),
                     "isAdjustedToUTC=true"),
    "dask": (lambda spark, out, rid: _dask_edit(out, rid), "isAdjustedToUTC=true"),
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_an_edit_written_by_the_engine_pushes_alone_and_moves_no_date(
        engine: str, spark: Any, fresh_service: LocalService, client: Client,
        exported: Path) -> None:
    before = read_object(client, "object_3", progress=False, columns="keys").main
    rid = str(before[before[DATE].notna()].index[0])
    edit, style = ENGINES[engine]
    edit(spark, exported, rid)
    assert all(style in s for s in _timestamp_styles(exported)), _timestamp_styles(exported)
    if engine.startswith("spark"):
        names = {p.name for p in exported.iterdir()}
        assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names)
    plan = diff(read_parquet(exported))
    assert sorted(plan.changes["column"]) == [TEXT, DATE]
    assert set(plan.changes["record_id"]) == {rid}
    writes = fresh_service.request_log.count(method="PUT")
    report = push(client, exported)
    assert report.table["status"].tolist() == ["applied"]
    assert fresh_service.request_log.count(method="PUT") - writes == 1
    after = read_object(client, "object_3", progress=False, columns="keys").main
    assert after.loc[rid, TEXT] == f"edited by {engine.split('-')[0]}"
    assert after.loc[rid, DATE] == before.loc[rid, DATE] + pd.Timedelta(hours=24)
    # no other date moved (field_46 is stamped by the service on every update)
    dates = [c for c in before.columns if str(before[c].dtype).startswith("datetime64")
             and c != "field_46"]
    moved = before[dates].compare(after[dates])
    assert list(moved.index) == [rid] and {c for c, _ in moved.columns} == {DATE}
    # the as-loaded copy followed: pushing again plans and sends nothing
    assert diff(read_parquet(exported)).empty
