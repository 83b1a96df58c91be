"""List and boolean columns as other tools write them back. A yes/no field as a nullable
boolean column (pandas' ``boolean`` dtype, Arrow-backed ``bool[pyarrow]``, an Arrow bool
array with nulls, an object column of True/False/None) and a multiple choice as any list
of strings read as the same data: untouched records plan nothing, an edited boolean is
one update of that field alone. Lists flattened to numpy's text (``astype(str)``) read as
the lists they show; booleans cast to numbers are refused before any request, naming the
column. pyarrow and pandas alone here; Spark and
Dask themselves: tests_engines/test_lists_and_booleans.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from fixtures.guard import FAST_GUARD

from svc_frames.errors import UsageError
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.writeback import diff

FLAG = "field_26"  # the demo work orders' yes/no field, empty in some records
MULTI = "field_28"  # their multiple choice


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


@pytest.fixture()
def exported(fresh_service: LocalService, tmp_path: Path) -> Path:
    out = tmp_path / "orders"
    export(_client(fresh_service), "object_3", out, progress=False, columns="keys")
    return out


def _frame(out: Path) -> pd.DataFrame:
    df = ds.dataset(out).to_table().replace_schema_metadata(None).to_pandas()
    assert df[FLAG].isna().any() and df[FLAG].notna().any()
    return df


def _write_back(out: Path, table: pa.Table) -> None:
    for p in out.iterdir():
        p.unlink()
    pq.write_table(table, out / "edited.parquet")


def _pandas_boolean(df: pd.DataFrame) -> pa.Table:
    df[FLAG] = df[FLAG].astype("boolean")
    return pa.Table.from_pandas(df, preserve_index=False)


def _pyarrow_backed(df: pd.DataFrame) -> pa.Table:
    df[FLAG] = df[FLAG].astype(pd.ArrowDtype(pa.bool_()))
    return pa.Table.from_pandas(df, preserve_index=False)


def _objects(df: pd.DataFrame) -> pa.Table:
    df[FLAG] = pd.Series([None if pd.isna(v) else bool(v) for v in df[FLAG]],
                         index=df.index, dtype=object)
    return pa.Table.from_pandas(df, preserve_index=False)


def _arrow_nulls(df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df.drop(columns=[FLAG]), preserve_index=False)
    flags = pa.array([None if pd.isna(v) else bool(v) for v in df[FLAG]], pa.bool_())
    return table.append_column(FLAG, flags)


WRITERS: dict[str, Callable[[pd.DataFrame], pa.Table]] = {
    "pandas-boolean": _pandas_boolean, "pyarrow-backed": _pyarrow_backed,
    "objects": _objects, "arrow-nulls": _arrow_nulls}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_nullable_boolean_column_reads_as_the_same_data(exported: Path,
                                                          writer: str) -> None:
    df = _frame(exported)
    _write_back(exported, WRITERS[writer](df))
    assert pq.read_table(exported / "edited.parquet").column(FLAG).null_count > 0
    back = read_parquet(exported)
    assert str(back.main[FLAG].dtype) == "boolean"
    assert diff(back).empty


@pytest.mark.parametrize("writer", list(WRITERS))
def test_an_edited_boolean_is_one_update_of_that_field(fresh_service: LocalService,
                                                       exported: Path, writer: str) -> None:
    df = _frame(exported)
    rid = str(df.loc[df[FLAG].notna(), "id"].iloc[0])
    was = bool(df.loc[df["id"] == rid, FLAG].iloc[0])
    df[FLAG] = df[FLAG].astype(object)
    df.loc[df["id"] == rid, FLAG] = not was
    _write_back(exported, WRITERS[writer](df))
    changes = diff(read_parquet(exported)).changes
    assert list(zip(changes["record_id"], changes["column"], strict=True)) == [(rid, FLAG)]
    assert changes["old"].iloc[0] is was or changes["old"].iloc[0] == was
    client = _client(fresh_service)
    writes = fresh_service.request_log.count(method="PUT")
    report = push(client, exported, **FAST_GUARD)
    assert report.table["status"].tolist() == ["applied"]
    assert report.table["fields"].tolist() == [FLAG]
    assert fresh_service.request_log.count(method="PUT") - writes == 1
    assert client.get_record("object_3", rid)[f"{FLAG}_raw"] is (not was)
    assert diff(read_parquet(exported)).empty


def test_booleans_turned_into_numbers_are_refused(fresh_service: LocalService,
                                                  exported: Path) -> None:
    df = _frame(exported)
    df[FLAG] = df[FLAG].astype("Int8")   # 0/1: a tool's cast, not the yes/no it was
    _write_back(exported, pa.Table.from_pandas(df, preserve_index=False))
    sent = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(_client(fresh_service), exported)
    assert exc.value.field == FLAG and "boolean" in str(exc.value)
    assert fresh_service.request_log.count() == sent


def test_lists_of_another_arrow_layout_read_as_the_same_data(exported: Path) -> None:
    table = ds.dataset(exported).to_table().replace_schema_metadata(None)
    i = table.column_names.index(MULTI)
    big = table.column(MULTI).cast(pa.large_list(pa.large_string()))
    _write_back(exported, table.set_column(i, MULTI, big))
    assert diff(read_parquet(exported)).empty


def test_lists_written_as_text_read_as_the_lists_they_show(fresh_service: LocalService,
                                                            exported: Path) -> None:
    """What a user gets from ``astype(str)`` to make a writer accept the lists: numpy's
    text of each array. A cell that shows the loaded list is that list (no edit); one
    edited in the same notation is read as the options it lists, and only it is sent."""
    df = _frame(exported)
    df[MULTI] = df[MULTI].astype(str)
    assert df[MULTI].str.startswith("[").any()
    _write_back(exported, pa.Table.from_pandas(df, preserve_index=False))
    assert diff(read_parquet(exported)).empty
    options = read_parquet(exported).source.field(MULTI).format["options"]
    df.loc[0, MULTI] = str(pd.Series([options[0], options[-1]]).to_numpy())  # "['a' 'b']"
    _write_back(exported, pa.Table.from_pandas(df, preserve_index=False))
    changes = diff(read_parquet(exported)).changes
    assert list(changes["column"]) == [MULTI]
    assert list(changes["new"].iloc[0]) == [options[0], options[-1]]
    sent = fresh_service.request_log.count()
    assert push(_client(fresh_service), exported, dry_run=True).counts == {"planned": 1}
    assert fresh_service.request_log.count() - sent <= 1   # the schema, no write
