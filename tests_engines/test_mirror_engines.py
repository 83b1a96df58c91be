"""Spark and Dask read a Parquet mirror as it is: the current table holds the records a
load gives, and the history (partitioned by run) holds every version, the ``run=N``
directories read as a column that agrees with ``run_id``; the state at a past time,
asked in Spark SQL over the history, is what ``as_of`` gives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
from engine_values import dask_rows, rows_of_frame, spark_rows

import svc_frames as sf
from svc_frames.records import Client
from svc_frames.server import LocalService

TEXT = "field_12"   # work orders: title


def test_spark_and_dask_read_a_parquet_mirror(spark: Any, fresh_service: LocalService,
                                              client: Client, tmp_path: Path) -> None:
    svc = fresh_service
    target = tmp_path / "mirror"
    sf.mirror(client, f"{target}/")
    before = sf.read_object(client, "object_3", columns="keys", progress=False)
    ids = list(before.main.index)
    between = pd.Timestamp.now(tz="UTC")
    time.sleep(0.05)
    svc.pages.update_record("object_3", ids[0], {TEXT: "Replace the valve"})
    client.delete_record("object_3", ids[1])
    second = sf.mirror(client, target)
    o = second.objects["object_3"]
    assert (o.updated, o.deleted) == (1, 1)

    now = sf.read_object(client, "object_3", columns="keys", progress=False).main
    main = now.reset_index()
    cols = list(main.columns)
    want = rows_of_frame(main, cols)
    current = target / "work_orders"
    assert spark_rows(spark, current, cols) == want
    assert dask_rows(current, cols) == want

    # the history: every version, its run both as run_id and as the run=N directory
    history = target / "work_orders__history"
    sdf = spark.read.parquet(str(history))
    counts = {r["change"]: r["count"] for r in sdf.groupBy("change").count().collect()}
    assert counts == {"insert": len(ids), "update": 1, "delete": 1}
    assert sdf.filter("run <> run_id").count() == 0
    import dask.dataframe as dd
    ddf = dd.read_parquet(str(history)).compute()
    assert ddf["change"].value_counts().to_dict() == counts
    assert (ddf["run"].astype(int) == ddf["run_id"].astype(int)).all()

    # the state at a past time, as docs/mirror.md writes the query
    sdf.createOrReplaceTempView("work_orders__history")
    t = f"timestamp_micros({between.value // 1000})"   # an instant, whatever the zone
    past = spark.sql(
        f"SELECT id FROM work_orders__history WHERE valid_from <= {t} AND (valid_to IS "
        f"NULL OR valid_to > {t}) AND change <> 'delete'").collect()
    as_of = sf.as_of(target, between)["object_3"].main
    assert sorted(r["id"] for r in past) == sorted(as_of.index) == sorted(ids)
    texts = {r["id"]: r[TEXT] for r in sdf.filter(f"id = '{ids[0]}'").collect()
             if r["valid_to"] is None}
    assert texts == {ids[0]: "Replace the valve"}
