"""Columns named by field label by default, and every place that names a field taking and
saying labels: loads, ``diff`` changes, reports, saved frames, ``read_app`` and its joins,
the DuckDB file, ``sort_field`` / ``modified_field``, value errors, ``with_labels`` /
``with_keys``, and ``columns=[...]`` subsets (docs/column-names.md)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from fixtures.guard import FAST_GUARD

from svc_frames import Client, Field, diff, export, read_app, read_object, read_view, write_back
from svc_frames.errors import InvalidValue, NameWarning, UsageError
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.server import LocalService

WO = "object_3"


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


@pytest.fixture()
def fresh(fresh_service: LocalService) -> Iterator[tuple[LocalService, Client]]:
    yield fresh_service, client_of(fresh_service)


def test_a_load_names_columns_and_tables_by_label_unless_keys(client: Client) -> None:
    orders = read_object(client, WO, progress=False)
    keyed = read_object(client, WO, progress=False, columns="keys")
    assert orders.source is not None and orders.source.columns == "labels"
    assert orders.main.columns[:3].tolist() == ["Title", "Description", "Notes"]
    assert "Site.city" in orders.main.columns and "field_34.city" in keyed.main.columns
    assert sorted(orders.tables) == ["Assignee", "Created By", "Parts", "Tags", "Work Time"]
    assert not any(str(c).startswith("field_") for c in orders.main.columns)
    # the same data either way
    pd.testing.assert_frame_equal(orders.with_keys().main, keyed.main)
    board = read_view(client, "scene_1/view_1", progress=False)
    assert "Title" in board.main.columns


def test_with_labels_and_with_keys_switch_frames_and_still_write_back(fresh: tuple[
        LocalService, Client]) -> None:
    _svc, client = fresh
    keyed = read_object(client, WO, progress=False, columns="keys")
    labelled = keyed.with_labels()
    assert labelled is not keyed and labelled.source is not None
    assert labelled.source.columns == "labels" and keyed.source is not None \
        and keyed.source.columns == "keys"            # the original frames are unchanged
    assert "field_27" in keyed.main.columns and "Status" in labelled.main.columns
    assert labelled.original is not None and "Status" in labelled.original.main.columns
    assert diff(labelled).empty and labelled.with_labels() is labelled
    back = labelled.with_keys()
    pd.testing.assert_frame_equal(back.main, keyed.main)
    assert sorted(back.tables) == sorted(keyed.tables)
    rid = labelled.main.index[0]
    labelled.main.loc[rid, "Title"] = "Renamed by label"
    report = write_back(client, labelled, progress=False, **FAST_GUARD)
    assert report.counts == {"applied": 1}
    assert report.table["fields"].tolist() == ["Title"]
    again = read_object(client, WO, progress=False)
    assert again.main.loc[rid, "Title"] == "Renamed by label"
    app = read_app(client, ["Parts"], progress=False)
    assert app.with_keys()["Parts"].main.columns[0] == "field_8"
    assert app.with_keys().with_labels()["Parts"].main.columns[0] == "Part Name"


def test_diff_changes_summary_and_report_say_labels(client: Client) -> None:
    orders = read_object(client, WO, progress=False)
    rid = orders.main.index[0]
    orders.main.loc[rid, ["Priority", "Status"]] = [5.0, "Done"]
    plan = diff(orders)
    assert set(plan.changes["column"]) == {"Priority", "Status"}
    assert set(plan.changes["field"]) == {"field_25", "field_27"}   # the key, as ever
    assert plan.summary()["fields"].tolist() == ["Priority, Status"]
    report = write_back(client, orders, dry_run=True)
    assert report.table["fields"].tolist() == ["Priority, Status"]
    assert report.field_keys == [["field_25", "field_27"]]
    keyed = read_object(client, WO, progress=False, columns="keys")
    keyed.main.loc[rid, "field_25"] = 5.0
    assert diff(keyed).summary()["fields"].tolist() == ["field_25"]


def test_a_conflict_names_the_field_as_the_frames_do_beside_its_key(
        fresh: tuple[LocalService, Client]) -> None:
    _svc, client = fresh
    for naming, name in (("labels", "Priority"), ("keys", "field_25")):
        ours = read_object(client, WO, columns=naming, progress=False)
        theirs = read_object(client, WO, columns=naming, progress=False)
        rid = ours.main.index[0]
        theirs.main.loc[rid, name] = 1.0 if ours.main.loc[rid, name] != 1.0 else 2.0
        write_back(client, theirs, progress=False)
        ours.main.loc[rid, name] = 5.0 if theirs.main.loc[rid, name] != 5.0 else 4.0
        report = write_back(client, ours, progress=False)
        assert report.counts == {"conflict": 1}
        conflicts = report.conflicts
        assert conflicts.columns.tolist() == ["record_id", "field", "column", "loaded",
                                              "server", "new"]
        assert conflicts[["field", "column"]].values.tolist() == [["field_25", name]]


def test_a_refused_value_is_named_by_label_with_its_key(client: Client) -> None:
    orders = read_object(client, WO, progress=False)
    orders.main.loc[orders.main.index[0], "Status"] = "Closed"
    with pytest.raises(InvalidValue) as info:
        diff(orders)
    msg = str(info.value)
    assert msg.startswith(f"record {orders.main.index[0]}: 'Status' (field_27, "
                          "multiple_choice): 'Closed' is not one of the options"), msg
    keyed = read_object(client, WO, progress=False, columns="keys")
    keyed.main.loc[keyed.main.index[0], "field_27"] = "Closed"
    with pytest.raises(InvalidValue, match=r": field_27 \(multiple_choice\): 'Closed'"):
        diff(keyed)


def test_a_column_named_the_other_way_is_refused_naming_the_fix(client: Client) -> None:
    orders = read_object(client, WO, progress=False)
    orders.main.loc[orders.main.index[0], "field_12"] = "meant for Title"
    with pytest.raises(UsageError, match=r"'field_12'.*by label.*'Title'.*with_keys\(\)"):
        diff(orders)
    keyed = read_object(client, WO, progress=False, columns="keys")
    keyed.main.loc[keyed.main.index[0], "Title"] = "meant for field_12"
    with pytest.raises(UsageError, match=r"'Title'.*by key.*'field_12'.*with_labels\(\)"):
        diff(keyed)


def test_sort_field_and_filters_take_labels_resolved_before_any_request(
        client: Client) -> None:
    by_label = read_object(client, WO, progress=False, sort_field="Due", sort_order="desc")
    by_key = read_object(client, WO, progress=False, sort_field="field_29",
                         sort_order="desc")
    assert by_label.main.index.tolist() == by_key.main.index.tolist()
    assert by_label.source is not None and by_label.source.load is not None
    assert by_label.source.load["sort_field"] == "field_29"   # kept as the key it sent
    assert by_label.main["Due"].dropna().is_monotonic_decreasing
    high = read_object(client, WO, progress=False, filters=Field("Priority") > 3)
    assert len(high.main) and (high.main["Priority"] > 3).all()
    client.schema()
    before = client.request_count
    with pytest.raises(UsageError, match="Dew"):
        read_object(client, WO, progress=False, sort_field="Dew")
    with pytest.raises(UsageError, match="Titel"):
        read_object(client, WO, progress=False, columns=["Titel"])
    with pytest.raises(UsageError, match="twice"):
        read_object(client, WO, progress=False, columns=["Title", "field_12"])
    with pytest.raises(UsageError, match="columns must be"):
        read_object(client, WO, progress=False, columns=[])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="one object"):
        read_app(client, progress=False, columns=["Title"])
    assert client.request_count == before


def test_modified_field_takes_a_label(fresh: tuple[LocalService, Client],
                                      tmp_path: Path) -> None:
    _svc, client = fresh
    first = read_object(client, WO, progress=False, cache=tmp_path / "c",
                        modified_field="Last Modified")
    again = read_object(client, WO, progress=False, cache=tmp_path / "c",
                        modified_field="Last Modified")
    pd.testing.assert_frame_equal(first.main, again.main)
    with pytest.raises(UsageError, match="Last Modifed"):
        read_object(client, WO, progress=False, cache=tmp_path / "c",
                    modified_field="Last Modifed")


def test_a_subset_loads_those_fields_and_writes_back_only_its_edits(
        fresh: tuple[LocalService, Client], tmp_path: Path) -> None:
    _svc, client = fresh
    two = read_object(client, WO, progress=False, columns=["Title", "field_27", "Parts"])
    assert two.main.columns.tolist() == ["Title", "Status"]
    assert list(two.tables) == ["Parts"] and two.main.index.name == "id"
    keyed = two.with_keys()
    assert keyed.main.columns.tolist() == ["field_12", "field_27"]
    assert diff(two).empty
    rid = two.main.index[1]
    two.main.loc[rid, "Status"] = "Done"
    plan = diff(two)
    assert plan.changes[["record_id", "column"]].values.tolist() == [[rid, "Status"]]
    assert plan.payloads == {rid: {"field_27": "Done"}}
    before = read_object(client, WO, progress=False).main.loc[rid]
    report = write_back(client, two, progress=False, **FAST_GUARD)
    assert report.counts == {"applied": 1}
    after = read_object(client, WO, progress=False).main.loc[rid]
    assert after["Status"] == "Done"
    # every field not loaded is as it was on the server
    untouched = [c for c in before.index if c not in ("Status", "Last Modified")]
    pd.testing.assert_series_equal(after[untouched], before[untouched], check_names=False)
    # a new row in frames of some fields is refused before any request
    two.main.loc["new:1", ["Title", "Status"]] = ["Half a record", "Open"]
    sent = client.request_count
    with pytest.raises(UsageError, match="some fields only"):
        write_back(client, two, progress=False)
    assert client.request_count == sent
    # an export of some fields saves those, and its saved frames say so
    res = export(client, WO, tmp_path / "two", columns=["Title", "Status"], progress=False)
    assert pd.read_parquet(res.path).columns.tolist() == ["id", "Title", "Status"]
    saved = read_parquet(res.path)
    assert saved.source is not None and saved.source.some_fields


def test_saved_frames_app_join_and_duckdb_speak_labels(client: Client, tmp_path: Path
                                                        ) -> None:
    orders = read_object(client, WO, progress=False)
    to_parquet(orders, tmp_path / "orders")
    assert "Status" in pd.read_parquet(tmp_path / "orders").columns
    back = read_parquet(tmp_path / "orders")
    pd.testing.assert_frame_equal(back.main, orders.main)
    keyed = to_parquet(orders, tmp_path / "keyed", columns="keys")
    assert "field_27" in pd.read_parquet(keyed).columns
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        res = export(client, WO, tmp_path / "csv", format="csv", progress=False)
    header = next(iter((res.path).glob("*.csv"))).read_text().splitlines()[0]
    assert "Status" in header and "field_27" not in header
    app = read_app(client, progress=False)
    joined = app.join("Work Orders", "Parts", columns=["Part Name"])
    assert "Parts.Part Name" in joined.columns and "Title" in joined.columns
    duckdb = pytest.importorskip("duckdb")
    path = app.to_duckdb(tmp_path / "app.duckdb")
    con = duckdb.connect(str(path), read_only=True)
    try:
        cols = con.execute("SELECT * FROM work_orders LIMIT 1").df().columns.tolist()
    finally:
        con.close()
    assert "Status" in cols and "Site.city" in cols and "field_27" not in cols


def test_colliding_labels_stay_unique_and_switch_back_exactly() -> None:
    doc = {"objects": [{"key": "object_1", "name": "Sites", "fields": [
        {"key": "field_1", "type": "short_text", "name": "Name"},
        {"key": "field_2", "type": "short_text", "name": "NAME"},
        {"key": "field_3", "type": "short_text", "name": "ID"},
        {"key": "field_4", "type": "address", "name": "Site"},
        {"key": "field_5", "type": "short_text", "name": "Site.city"}]}]}
    with LocalService(demo=False, app=doc, records=4, rate_limit=0) as svc:
        client = client_of(svc)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NameWarning)
            sites = read_object(client, "Sites", progress=False)
            only = read_object(client, "Sites", progress=False,
                               columns=["Name (field_1)", "field_5"])
        cols = sites.main.columns.tolist()
        assert len({c.casefold() for c in cols}) == len(cols) and "id" not in cols
        assert "Name (field_1)" in cols and "Site.city (field_5)" in cols
        keyed = sites.with_keys()
        assert keyed.main.columns.tolist() == read_object(
            client, "Sites", progress=False, columns="keys").main.columns.tolist()
        assert keyed.with_labels().main.columns.tolist() == cols
        assert only.main.columns.tolist() == ["Name", "Site.city"]
        rid = sites.main.index[0]
        sites.main.loc[rid, "Name (field_1)"] = "first"
        assert write_back(client, sites, progress=False, **FAST_GUARD).counts == {"applied": 1}
        assert read_object(client, "Sites", progress=False, columns="keys"
                           ).main.loc[rid, "field_1"] == "first"


def test_the_cli_exports_by_label_by_default_and_takes_a_list_of_fields(
        service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.cli import main

    monkeypatch.setenv("SVC_APP_ID", service.app_id)
    monkeypatch.setenv("SVC_API_KEY", service.api_key)
    monkeypatch.setenv("SVC_BASE_URL", service.base_url)
    assert main(["export", WO, "--out", str(tmp_path / "all"), "--no-progress",
                 "--rate-limit", "0"]) == 0
    assert "Status" in pd.read_parquet(tmp_path / "all").columns
    assert main(["export", WO, "--out", str(tmp_path / "two"), "--no-progress",
                 "--rate-limit", "0", "--columns", "Title, field_27",
                 "--sort-field", "Due"]) == 0
    assert pd.read_parquet(tmp_path / "two").columns.tolist() == ["id", "Title", "Status"]
    capsys.readouterr()
    assert main(["export", WO, "--out", str(tmp_path / "bad"), "--no-progress",
                 "--columns", "Titel"]) == 2
    assert "Titel" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_load_options_resolve_labels_for_every_caller_of_load(client: Client) -> None:
    """LoadOptions.prepared keys a columns list and a sort field named by label, so a
    caller of read/load.py's ``load`` (read_app, the cache, any other) gets what
    read_object gets; keys alone cost no schema request."""
    from svc_frames.read.load import load
    from svc_frames.read.options import LoadOptions

    opts = LoadOptions.of(columns=["Title", "Due"], sort_field="Due", sort_order="desc",
                          progress=False)
    assert opts.sort_field == "Due"   # checked as a name; resolved once the schema is in
    prepared = opts.prepared(client, WO)
    assert prepared.columns == ["field_12", "field_29"]
    assert prepared.sort_field == "field_29"
    frames = load(client, WO, opts)
    assert frames.main.columns.tolist() == ["Title", "Due"]
    assert frames.main["Due"].dropna().is_monotonic_decreasing
    assert frames.source is not None and frames.source.load is not None
    assert frames.source.load["sort_field"] == "field_29"
    keyed = LoadOptions.of(columns="keys", sort_field="field_29")
    assert keyed.keyed(client, WO) is keyed
    with pytest.raises(UsageError, match="a field is named by its label or its key"):
        LoadOptions.of(sort_field="  ")
