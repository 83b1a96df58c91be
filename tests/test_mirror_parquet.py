"""The mirror to a directory of Parquet datasets: the same model as DuckDB's, the history
partitioned by run, read as it is by DuckDB and Polars; a run cut before its commit point
leaves the directory as it was, one cut after it is completed by the next."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import svc_frames as sf
from svc_frames.mirroring import parquetdir
from svc_frames.server import LocalService
from tests.test_mirror import client_of, same_frames


def test_parquet_mirror_read_as_it_is(fresh_service: LocalService, tmp_path: Path) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "mirror"
    first = sf.mirror(client, f"{target}/")
    assert first.total("inserted") == 90
    loaded = sf.read_object(client, "object_3", columns="keys")
    ids = list(loaded.main.index)
    svc.pages.update_record("object_3", ids[0], {"field_12": "Replace the valve"})
    client.delete_record("object_3", ids[1])
    between = pd.Timestamp.now(tz="UTC")
    time.sleep(0.05)
    second = sf.mirror(client, target)   # an existing directory: the Parquet target
    o = second.objects["object_3"]
    assert (o.updated, o.deleted, o.unchanged) == (1, 1, 28)
    assert sorted(p.name for p in (target / "work_orders__history").iterdir()) == [
        "run=1", "run=2"]
    # DuckDB and Polars read the datasets as they are
    con = duckdb.connect()
    hist = f"{target}/work_orders__history/*/*.parquet"
    assert con.execute(f"SELECT change, count(*) FROM read_parquet('{hist}') GROUP BY 1 "
                       "ORDER BY 1").fetchall() == [("delete", 1), ("insert", 30),
                                                    ("update", 1)]
    assert con.execute(f"SELECT count(*) FROM '{target}/work_orders/*.parquet'"
                       ).fetchone() == (29,)
    import polars as pl  # here, not where every worker collects the module

    closed = pl.scan_parquet(f"{target}/work_orders__history/**/*.parquet").filter(
        pl.col("valid_to").is_not_null() & (pl.col("change") != "delete")).collect()
    assert sorted(closed["id"].to_list()) == sorted(ids[:2])
    same_frames(sf.as_of(target, between)["object_3"], loaded)
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))
    note = svc.builder.add_field("object_3", "Note", "short_text")
    third = sf.mirror(client, target)
    assert f"{note} added (short_text)" in third.objects["object_3"].schema_changes
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


def test_a_run_cut_before_or_after_its_commit_point(fresh_service: LocalService,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "mirror"
    sf.mirror(client, f"{target}/")
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*.parquet"))
    rid = sf.read_object(client, "object_3", columns="keys").main.index[0]
    svc.pages.update_record("object_3", rid, {"field_12": "Cut"})
    real_journal = parquetdir.JOURNAL

    def cut(_: Path) -> None:   # killed after writing the staging, before the journal
        raise KeyboardInterrupt

    monkeypatch.setattr(parquetdir, "fsync_tree", cut)
    with pytest.raises(KeyboardInterrupt):
        sf.mirror(client, target)
    monkeypatch.undo()
    assert sorted(str(p.relative_to(target)) for p in target.rglob("*.parquet")) == files
    assert len(sf.as_of(target, pd.Timestamp.now(tz="UTC"))) == 3

    # killed after the commit point, before every move: the next run completes it first
    def half(root: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(parquetdir, "finish", half)
    with pytest.raises(KeyboardInterrupt):
        sf.mirror(client, target)
    monkeypatch.undo()
    assert (target / real_journal).exists()
    nxt = sf.mirror(client, target)
    assert nxt.run == 3 and nxt.objects["object_3"].updated == 0
    con = duckdb.connect()
    assert con.execute(f"SELECT count(*) FROM read_parquet('{target}/work_orders__history/"
                       "*/*.parquet') WHERE change = 'update'").fetchone() == (1,)
