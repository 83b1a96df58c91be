"""A multiple choice (a list column) and a yes/no field (a boolean column with empty
cells, nullable in every engine) edited in Spark and in Dask with their default write
settings: push reads them back as the same data, so the untouched records plan nothing
and the edited record is one update of exactly the edited fields; no date moves.

Dask's own defaults cannot write these files at all: ``dd.read_parquet(path)`` holds the
lists (and the booleans with empty cells) as plain objects, for which ``to_parquet``
infers no Parquet type and stops before writing anything (pandas 3: "did not recognize
Python value type"; pandas 2: "Failed to convert partition"). The guide's way is
``dtype_backend="pyarrow"`` at read, with ``to_parquet``'s defaults, or ``schema=None``
at write; both are run here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.writeback import diff

# work orders: title, yes/no (empty in some records), multiple choice; the service
# recomputes the number text from the title and stamps the date of the last update
TEXT, FLAG, MULTI = "field_12", "field_26", "field_28"
DERIVED = ("field_15", "field_46")
NEW_CHOICES = ["HVAC", "Electrical"]


def _edit_partition(df: pd.DataFrame, rid: str, flag: bool) -> pd.DataFrame:
    """One Dask partition with the record ``rid`` edited as a user would in pandas: the
    booleans as pandas' nullable ``boolean``, the list cell a Python list."""
    df = df.copy()
    hit = (df["id"] == rid).fillna(False).to_numpy(bool)
    df.loc[hit, TEXT] = "edited by dask"
    df[FLAG] = df[FLAG].astype("boolean")
    df.loc[hit, FLAG] = flag
    df[MULTI] = pd.Series([list(NEW_CHOICES) if h else v for h, v in zip(hit, df[MULTI],
                                                                        strict=True)],
                          index=df.index, dtype=object)
    return df


def _dask_edit(out: Path, rid: str, flag: bool, how: str) -> None:
    import dask.dataframe as dd

    if how == "pyarrow":
        ddf = dd.read_parquet(str(out), dtype_backend="pyarrow")
        write: dict[str, Any] = {}
    else:
        ddf = dd.read_parquet(str(out))
        write = {"schema": None}   # each part's types from its data
    ddf = ddf.map_partitions(_edit_partition, rid, flag, meta=ddf._meta)
    ddf.to_parquet(str(out.with_name("orders.dask")), **write)
    shutil.rmtree(out)
    out.with_name("orders.dask").rename(out)


def _spark_edit(spark: Any, out: Path, rid: str, flag: bool) -> None:
    from pyspark.sql import functions as F

    spark.conf.unset("spark.sql.parquet.outputTimestampType")   # Spark's default: INT96
    sdf = spark.read.parquet(str(out))
    hit = F.col("id") == rid
    sdf = (sdf.withColumn(TEXT, F.when(hit, F.lit("edited by spark")).otherwise(F.col(TEXT)))
              .withColumn(FLAG, F.when(hit, F.lit(flag)).otherwise(F.col(FLAG)))
              .withColumn(MULTI, F.when(hit, F.array(*map(F.lit, NEW_CHOICES)))
                          .otherwise(F.col(MULTI))))
    sdf.write.mode("overwrite").parquet(str(out.with_name("orders.spark")))
    shutil.rmtree(out)
    out.with_name("orders.spark").rename(out)


def test_dask_defaults_cannot_write_object_lists(tmp_path: Path, client: Client) -> None:
    """What the module docstring says of Dask's defaults, checked: if Dask learns to
    write these, the guide should say so."""
    import dask.dataframe as dd

    export(client, "object_3", tmp_path / "orders", progress=False, columns="keys")
    with pytest.raises(Exception, match="(?i)recognize Python value type|convert partition"):
        dd.read_parquet(str(tmp_path / "orders")).to_parquet(str(tmp_path / "plain"))
    assert not list((tmp_path / "plain").glob("*.parquet"))   # nothing half-written


@pytest.mark.parametrize("engine", ["spark", "dask-pyarrow", "dask-schema-none"])
def test_a_list_and_a_boolean_edit_push_alone(engine: str, spark: Any,
                                              fresh_service: LocalService, client: Client,
                                              tmp_path: Path) -> None:
    out = tmp_path / "orders"
    export(client, "object_3", out, progress=False, columns="keys")
    before = read_object(client, "object_3", progress=False, columns="keys").main
    assert before[FLAG].isna().any(), "the demo should have empty yes/no cells"
    ok = before[before[FLAG].notna() & before["field_29"].notna()
                & before[MULTI].map(lambda v: sorted(v or []) != sorted(NEW_CHOICES))]
    rid = str(ok.index[0])
    flag = not bool(before.loc[rid, FLAG])
    if engine == "spark":
        _spark_edit(spark, out, rid, flag)
    else:
        _dask_edit(out, rid, flag, engine.split("-", 1)[1])
    plan = diff(read_parquet(out))
    assert set(plan.changes["record_id"]) == {rid}
    assert sorted(plan.changes["column"]) == sorted([TEXT, FLAG, MULTI])
    writes = fresh_service.request_log.count(method="PUT")
    report = push(client, out)
    assert report.table["status"].tolist() == ["applied"]
    assert fresh_service.request_log.count(method="PUT") - writes == 1
    after = read_object(client, "object_3", progress=False, columns="keys").main
    assert after.loc[rid, TEXT] == f"edited by {engine.split('-')[0]}"
    assert bool(after.loc[rid, FLAG]) is flag
    assert after.loc[rid, MULTI] == NEW_CHOICES
    # nothing else moved: the other records, and every other column of this one
    keep = [c for c in before.columns if c not in (TEXT, FLAG, MULTI, *DERIVED)]
    assert before[keep].astype(str).equals(after[keep].astype(str))
    others = before.index != rid
    assert before.loc[others, [TEXT, FLAG, MULTI]].astype(str).equals(
        after.loc[others, [TEXT, FLAG, MULTI]].astype(str))
    assert diff(read_parquet(out)).empty
