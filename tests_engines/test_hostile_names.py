"""Spark on the hostile application (tests/fixtures/hostile_app.py): names that differ
only by case, hold dots, spaces, quotes, slashes and unicode, plus (here) a label of the
characters older Spark refused in Parquet column names. Spark reads the export and
the whole-app dataset in both column modes with the values of the frames, and an edit it
writes back (under those names) pushes as that edit alone."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_values import rows_of_frame, spark_rows
from fixtures.hostile_app import hostile_document, seed

from svc_frames.application import read_app
from svc_frames.errors import NameWarning
from svc_frames.loaders import read_object
from svc_frames.names import fold_case, path_names
from svc_frames.saved.export import export
from svc_frames.saved.push import push
from svc_frames.saved.snapshot import app_tables
from svc_frames.server import LocalService
from svc_frames.testing import client_for

MODES = ["keys", "labels"]
ODD = "field_60"
ODD_LABEL = "a,b; c{d}(e)\n\tf=g"


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[LocalService, dict[str, list[str]]]]:
    doc = hostile_document()
    doc["objects"][0]["fields"].append({"key": ODD, "type": "short_text",
                                        "name": ODD_LABEL})
    with LocalService(demo=False, app=doc, records=0) as svc:
        client = client_for(svc)
        ids = seed(client)
        client.update_record("object_1", ids["object_1"][0], {ODD: "odd"})
        yield svc, ids


@pytest.mark.parametrize("columns", MODES)
def test_spark_reads_the_hostile_export_and_app_as_the_frames(
        spark: Any, hostile: Any, columns: str, tmp_path: Path) -> None:
    svc, _ids = hostile
    client = client_for(svc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        frames = read_object(client, "object_1", columns=columns)  # type: ignore[arg-type]
        export(client, "object_1", tmp_path / "x", columns=columns,  # type: ignore[arg-type]
               progress=False)
        app = read_app(client, columns=columns)  # type: ignore[arg-type]
    app.to_parquet(tmp_path / "app")
    main = frames.main.reset_index()
    names = spark.read.parquet(str(tmp_path / "x")).columns
    assert sorted(names) == sorted(map(str, main.columns))
    assert len({fold_case(n) for n in names}) == len(names)   # Spark folds case
    assert spark_rows(spark, tmp_path / "x", list(main.columns)) == rows_of_frame(
        main, list(main.columns))
    dirs = path_names(frames.tables)   # where the export put each table
    assert sorted(p.name for p in (tmp_path / "x.tables").iterdir()) == sorted(dirs.values())
    for name, table in frames.tables.items():
        cols = list(table.columns)
        got = spark_rows(spark, tmp_path / "x.tables" / dirs[name], cols)
        assert got == rows_of_frame(table, cols), name
    for spec in app_tables(app):
        if spec.kind == "meta":
            continue
        df = (app.frames[spec.object_key].main.reset_index() if spec.kind == "object"
              else spec.data.to_pandas())
        got = spark_rows(spark, tmp_path / "app" / spec.name, list(df.columns))
        assert got == rows_of_frame(df, list(df.columns)), spec.name


@pytest.mark.parametrize("columns", MODES)
def test_a_spark_edit_of_the_hostile_export_pushes_alone(
        spark: Any, hostile: Any, columns: str, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    svc, ids = hostile
    client = client_for(svc)
    out = tmp_path / "x"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        export(client, "object_1", out, columns=columns,  # type: ignore[arg-type]
               progress=False)
    rid = ids["object_1"][1 if columns == "keys" else 4]
    before = {r: client.get_record("object_1", r) for r in ids["object_1"]}
    text = "field_10" if columns == "keys" else 'say "hi" / \'bye\''
    odd = ODD if columns == "keys" else ODD_LABEL
    spark.conf.unset("spark.sql.parquet.outputTimestampType")   # Spark's default: INT96
    sdf = spark.read.parquet(str(out))
    assert odd in sdf.columns   # the name as saved, unchanged by Spark
    hit = F.col("id") == rid
    sdf = (sdf.withColumn(text, F.when(hit, F.lit(f"spark {columns} ✓"))
                          .otherwise(F.col(f"`{text}`")))
              .withColumn(odd, F.when(hit, F.lit("odd, edited")).otherwise(F.col(f"`{odd}`"))))
    sdf.write.mode("overwrite").parquet(str(tmp_path / "x.spark"))
    shutil.rmtree(out)
    (tmp_path / "x.spark").rename(out)
    writes = svc.request_log.count(method="PUT")
    report = push(client, out)
    assert report.table["status"].tolist() == ["applied"]
    assert svc.request_log.count(method="PUT") - writes == 1
    after = {r: client.get_record("object_1", r) for r in ids["object_1"]}
    for r in ids["object_1"]:
        changed = {k for k in after[r] if after[r][k] != before[r].get(k)}
        want = {f"{k}{raw}" for k in ("field_10", ODD) for raw in ("", "_raw")}
        assert changed == (want if r == rid else set()), (r, changed)
    assert after[rid]["field_10_raw"] == f"spark {columns} ✓"
    assert after[rid][f"{ODD}_raw"] == "odd, edited"
