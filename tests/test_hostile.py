"""The toolkit on a hostile application (tests/fixtures/hostile_app.py), as a user with
their own application would run it, in both column modes: the values equal what the
service holds, every derived name is unique where it lands, and a write changes exactly
the edited cells. One module-scoped service; a handful of records."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures.hostile_app import TEXTS, hostile_document, seed

from svc_frames.application import read_app
from svc_frames.errors import NameWarning, UsageError
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.names import fold_case
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import diff, write_back

MODES = ["keys", "labels"]


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[LocalService, dict[str, list[str]]]]:
    with LocalService(demo=False, app=hostile_document(), records=0) as svc:
        yield svc, seed(client_for(svc))


def _load(client: Client, columns: str, obj: str = "object_1") -> Frames:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        return read_object(client, obj, columns=columns)  # type: ignore[arg-type]


def _raw(client: Client, rid: str) -> dict[str, Any]:
    return client.get_record("object_1", rid)


@pytest.mark.parametrize("columns", MODES)
def test_read_object_values_and_unique_names(hostile: Any, columns: str) -> None:
    svc, ids = hostile
    client = client_for(svc)
    if columns == "labels":
        with pytest.warns(NameWarning, match="clash as column names"):
            frames = read_object(client, "object_1", columns="labels")
    else:
        frames = _load(client, columns)
    cols = [str(c) for c in frames.main.columns]
    assert len({fold_case(c) for c in cols}) == len(cols) and "id" not in {fold_case(c) for c in cols}
    text = "field_10" if columns == "keys" else 'say "hi" / \'bye\''
    ext = "field_1" if columns == "keys" else "ID (field_1)"
    num = "field_11" if columns == "keys" else "select"
    for rid, want in zip(ids["object_1"], TEXTS, strict=True):
        raw = _raw(client, rid)
        assert frames.main.loc[rid, text] == want == raw["field_10_raw"]
        assert frames.main.loc[rid, ext] == raw["field_1_raw"]
        assert frames.main.loc[rid, num] == raw["field_11_raw"]
    assert len(frames.tables) == len(set(frames.tables))


@pytest.mark.parametrize("columns", MODES)
def test_a_write_changes_exactly_the_edited_cells(hostile: Any, columns: str) -> None:
    svc, ids = hostile
    client = client_for(svc)
    frames = _load(client, columns)
    rid = ids["object_1"][2]
    before = {r: _raw(client, r) for r in ids["object_1"]}
    ext = "field_1" if columns == "keys" else "ID (field_1)"
    frames.main.loc[rid, ext] = f"edited {columns}"
    num = "field_11" if columns == "keys" else "select"
    big = 2e19 if columns == "keys" else -3e300
    frames.main.loc[rid, num] = big
    tags = ["a, b", "[x]"] if columns == "keys" else ["b", "a, b"]
    frames.main.at[rid, "field_14" if columns == "keys" else "Tags"] = tags
    day = pd.Timestamp("2249-12-31" if columns == "keys" else "1900-01-02").tz_localize(
        "America/New_York")
    frames.main.loc[rid, "field_29" if columns == "keys" else "Day"] = day
    report = write_back(client, frames, guard="once")
    assert set(report.table["status"]) == {"applied"}
    after = {r: _raw(client, r) for r in ids["object_1"]}
    for r in ids["object_1"]:
        changed = {k for k in after[r] if after[r][k] != before[r].get(k)}
        if r == rid:
            assert changed == {f"field_{n}{raw}" for n in (1, 11, 14, 29)
                               for raw in ("", "_raw")}, changed
            assert after[r]["field_14_raw"] == tags
            assert after[r]["field_29_raw"]["date"] == day.strftime("%m/%d/%Y")
            assert after[r]["field_1_raw"] == f"edited {columns}"
            assert after[r]["field_11_raw"] == big
        else:
            assert not changed, (r, changed)
    assert diff(frames).empty


@pytest.mark.parametrize("columns", MODES)
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_saved_frames_round_trip_and_push_sends_nothing(hostile: Any, columns: str, fmt: str,
                                                        tmp_path: Path) -> None:
    svc, ids = hostile
    client = client_for(svc)
    frames = _load(client, columns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        export(client, "object_1", tmp_path / "x", format=fmt,  # type: ignore[arg-type]
               columns=columns, progress=False)  # type: ignore[arg-type]
    dirs = [p.name for p in (tmp_path / "x.tables").iterdir()]
    assert len({fold_case(d) for d in dirs}) == len(frames.tables) == len(dirs)
    assert all(d not in (".", "..") and "/" not in d for d in dirs)
    back = read_parquet(tmp_path / "x")
    assert diff(back).empty
    text = "field_10" if columns == "keys" else 'say "hi" / \'bye\''
    for rid in ids["object_1"]:
        assert back.main.loc[rid, text] == frames.main.loc[rid, text]
    sent = client.request_count
    report = push(client, tmp_path / "x", guard="once")
    assert report.table.empty or set(report.table["status"]) <= {"applied"}
    assert client.request_count - sent <= 2   # at most the schema: no write
    to_parquet(frames, tmp_path / "y", overwrite=True)
    again = read_parquet(tmp_path / "y")
    assert sorted(again.tables) == sorted(frames.tables)
    for name, t in frames.tables.items():
        assert len(again.tables[name]) == len(t), name


@pytest.mark.parametrize("columns", MODES)
def test_read_app_duckdb_and_parquet_with_long_and_shared_names(hostile: Any, columns: str,
                                                                tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    svc, ids = hostile
    client = client_for(svc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        app = read_app(client, columns=columns)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"'Contacts' is ambiguous: 'Contacts' \(object_1\), "
                                         r"'Contacts' \(object_2\)"):
        app["Contacts"]
    assert len(app["object_4"].main) == 0
    renamed = app.summary().set_index("object").loc["object_1", "renamed"]
    if columns == "labels":   # the discovery frame shows the names given instead
        assert "'ID' -> 'ID (field_1)'" in renamed and "'status' -> 'status (field_3)'" \
            in renamed and "'Site.city' -> 'Site.city (field_5)'" in renamed
    else:
        assert renamed == ""
    db = app.to_duckdb(tmp_path / "app.duckdb")
    out = app.to_parquet(tmp_path / "app")
    assert all(len(p.name.encode()) <= 120 for p in out.rglob("*"))
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
        assert len({t.casefold() for t in tables}) == len(tables)
        contacts = next(t for t in tables if t.startswith("contacts") and "__" not in t)
        ext = "field_1" if columns == "keys" else "ID (field_1)"
        got = dict(con.execute(f'SELECT id, "{ext}" FROM "{contacts}"').fetchall())
        assert got == {rid: _raw(client, rid)["field_1_raw"] for rid in ids["object_1"]}
        cols = [r[0] for r in con.execute(f'DESCRIBE "{contacts}"').fetchall()]
        assert len({c.casefold() for c in cols}) == len(cols)
        (timer, kind), = con.execute("SELECT table_name, kind FROM svc_tables "
                                     "WHERE field = 'field_12'").fetchall()
        assert kind == "intervals"
        spans = con.execute(f'SELECT "from", "to" FROM "{timer}" WHERE record_id = ?',
                            [ids["object_1"][0]]).fetchall()
        assert len(spans) == 2   # every interval of the timer
    finally:
        con.close()
    t = app["object_1"].tables
    link = "field_6" if columns == "keys" else "In/Out"
    assert len(t[link]) == sum(len(_raw(client, r)["field_6_raw"]) for r in ids["object_1"])
    joined = app.join("object_1", "object_2", field="field_6")
    assert len(joined) >= len(t[link])


@pytest.mark.parametrize("columns", MODES)
def test_connection_edit_lands_on_its_own_field(hostile: Any, columns: str) -> None:
    svc, ids = hostile
    client = client_for(svc)
    frames = _load(client, columns)
    name = "field_7" if columns == "keys" else "In Out"
    rid = ids["object_1"][0]
    other = ids["object_2"][0]
    before6 = _raw(client, rid)["field_6_raw"]
    t = frames.tables[name]
    add = pd.DataFrame({"record_id": [rid], "connected_id": [other], "identifier": [pd.NA]})
    if not ((t["record_id"] == rid) & (t["connected_id"] == other)).any():
        frames.tables[name] = pd.concat([t, add.astype(t.dtypes.to_dict())], ignore_index=True)
    plan = diff(frames)
    assert set(plan.changes["field"]) <= {"field_7"}
    write_back(client, frames, on_conflict="overwrite", guard="once")
    raw = _raw(client, rid)
    assert other in [x["id"] for x in raw["field_7_raw"]]
    assert raw["field_6_raw"] == before6


@pytest.mark.parametrize("columns", MODES)
def test_cli_export_edit_push_and_schema(hostile: Any, columns: str, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.cli import main

    svc, ids = hostile
    monkeypatch.setenv("SVC_APP_ID", svc.app_id)
    monkeypatch.setenv("SVC_API_KEY", svc.api_key)
    monkeypatch.setenv("SVC_BASE_URL", svc.base_url)
    assert main(["schema"]) == 0
    assert "Site.city" in capsys.readouterr().out
    out = tmp_path / "c"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        assert main(["export", "object_1", "--out", str(out), "--format", "csv",
                     "--columns", columns, "--no-progress"]) == 0
    capsys.readouterr()
    back = read_parquet(out)
    rid = ids["object_1"][4]
    col = "field_5" if columns == "keys" else "Site.city (field_5)"
    back.main.loc[rid, col] = f"edited\r{columns}"
    to_parquet(back, out, overwrite=True)   # as a tool would leave the directory
    assert main(["push", str(out)]) == 0
    client = client_for(svc)
    assert _raw(client, rid)["field_5_raw"] == f"edited\r{columns}"
    assert _raw(client, rid)["field_4_raw"]["city"] == "Austin"   # the address untouched


@pytest.mark.parametrize("columns", MODES)
def test_plots_on_the_hostile_app(hostile: Any, columns: str) -> None:
    pytest.importorskip("matplotlib")
    from svc_frames.plot import plot_counts, plot_over_time

    svc, _ids = hostile
    frames = _load(client_for(svc), columns)
    ax = plot_over_time(frames, "field_13", freq="D")   # 1900 to 2249: bins from the data
    assert 0 < len(ax.patches) <= 600 and "per day would be" in ax.get_title()
    assert sum(p.get_height() for p in ax.patches) == frames.main[
        "field_13" if columns == "keys" else "When"].notna().sum()
    # by label: "In Out" is not "In/Out" (the two normalise alike in a path)
    counts = plot_counts(frames, "field_7" if columns == "keys" else "In Out")
    assert "In Out" in counts.get_title() and "In/Out" not in counts.get_title()
    assert len(counts.patches) >= 1


@pytest.mark.parametrize("columns", MODES)
def test_a_saved_connection_edit_is_pushed_to_its_own_field(hostile: Any, columns: str,
                                                            tmp_path: Path) -> None:
    svc, ids = hostile
    client = client_for(svc)
    to_parquet(_load(client, columns), tmp_path / "s")
    frames = read_parquet(tmp_path / "s")
    name = "field_7" if columns == "keys" else "In Out"
    rid = ids["object_1"][3 if columns == "keys" else 5]   # both linked to p and q
    gone = ids["object_2"][0]
    before = _raw(client, rid)
    assert gone in [x["id"] for x in before["field_7_raw"]]
    t = frames.tables[name]
    frames.tables[name] = t[~((t["record_id"] == rid) & (t["connected_id"] == gone))]
    to_parquet(frames, tmp_path / "s", overwrite=True)
    report = push(client, tmp_path / "s", guard="once")
    assert set(report.table["status"]) == {"applied"}
    after = _raw(client, rid)
    assert [x["id"] for x in after["field_7_raw"]] == [ids["object_2"][1]]
    assert after["field_6_raw"] == before["field_6_raw"]   # "In/Out" untouched


@pytest.mark.parametrize("columns", MODES)
def test_read_view_and_write_through_the_public_view(hostile: Any, columns: str) -> None:
    from svc_frames.loaders import read_view

    svc, ids = hostile
    client = client_for(svc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        frames = read_view(client, "scene_1", "view_1", columns=columns)  # type: ignore[arg-type]
    cols = [str(c) for c in frames.main.columns]
    assert len({fold_case(c) for c in cols}) == len(cols)
    low = "field_3" if columns == "keys" else "status"
    timer = "field_12" if columns == "keys" else "Work/Time"
    for rid in ids["object_1"]:
        assert frames.main.loc[rid, low] == _raw(client, rid)["field_3_raw"]
    assert (frames.tables[timer]["record_id"] == ids["object_1"][0]).sum() == 2
    rid = ids["object_1"][1]
    frames.main.loc[rid, low] = f"via view {columns}"
    report = write_back(client, frames, guard="once")  # a public view: no token asked for
    assert set(report.table["status"]) == {"applied"}
    assert _raw(client, rid)["field_3_raw"] == f"via view {columns}"


def _names_warned(seen: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in seen if issubclass(w.category, NameWarning)]


@pytest.mark.parametrize("columns", MODES)
def test_every_renaming_is_warned_once_recorded_and_shown(hostile: Any, columns: str,
                                                          tmp_path: Path) -> None:
    import json

    from svc_frames.catalog import fields

    svc, _ids = hostile
    client = client_for(svc)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        frames = read_object(client, "object_1", columns=columns)  # type: ignore[arg-type]
        loaded = _names_warned(seen)
        seen.clear()
        # the discovery frame names the columns and tables as this load does
        shown = fields(client, "object_1", columns=columns)  # type: ignore[arg-type]
        assert {c for cs in shown["columns"] for c in cs} == set(frames.main.columns)
        assert set(shown["table"].dropna()) == set(frames.tables)
        to_parquet(frames, tmp_path / "s")
        saved = _names_warned(seen)
        seen.clear()
        export(client, "object_1", tmp_path / "e", columns=columns,  # type: ignore[arg-type]
               progress=False)
        exported = _names_warned(seen)
    doc = json.loads((tmp_path / "s.svc_frames.json").read_text())
    if columns == "keys":   # field keys and their directories: nothing renamed
        assert loaded == saved == exported == []
        assert doc["renamed"] == {"columns": [], "tables": {}}
        return
    assert len(loaded) == 1 and "'ID' -> 'ID (field_1)'" in loaded[0]
    assert shown.loc["field_1", "columns"] == ["ID (field_1)"]
    assert shown.loc["field_6", "table"] == "In/Out"
    # the save warns its own renaming once (the directories), not the load's again
    assert len(saved) == 1 and "'In/Out' -> 'In_Out-" in saved[0] \
        and "'Work/Time' -> 'Work_Time-" in saved[0] and "ID (field_1)" not in saved[0]
    assert {"field": "field_1", "label": "ID", "used": "ID (field_1)"} in \
        doc["renamed"]["columns"]
    dirs = {p.name for p in (tmp_path / "s.tables").iterdir()}
    assert doc["renamed"]["tables"]["In/Out"] in dirs
    assert set(doc["renamed"]["tables"]) == {"In/Out", "In Out", "Work/Time"}
    # export = a load and a save: each renaming named in exactly one warning
    assert len(exported) == 2
    for pair in ("'ID' -> 'ID (field_1)'", "'In/Out' -> 'In_Out-", "'Work/Time' ->"):
        assert sum(pair in m for m in exported) == 1, pair


def test_labels_given_by_a_save_are_warned_by_it_once(hostile: Any, tmp_path: Path) -> None:
    svc, _ids = hostile
    frames = _load(client_for(svc), "keys")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        to_parquet(frames, tmp_path / "s", columns="labels")
    said = _names_warned(seen)
    assert len(said) == 1
    assert "'ID' -> 'ID (field_1)'" in said[0] and "'In/Out' -> 'In_Out-" in said[0]


def test_sql_table_names_given_instead_are_warned_once_and_recorded(hostile: Any,
                                                                    tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    svc, _ids = hostile
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        app = read_app(client_for(svc), objects=["object_1", "object_2", "object_3"],
                       progress=False, columns="keys")
    for write in (app.to_duckdb, app.to_parquet):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = write(tmp_path / write.__name__)
        said = _names_warned(seen)
        assert len(said) == 1, said
        assert "'Contacts (object_2)' -> 'contacts_object_2'" in said[0]
        assert "'Contacts / In Out' -> 'contacts__field_7'" in said[0]
    con = duckdb.connect(str(tmp_path / "to_duckdb"), read_only=True)
    try:
        named = dict(con.execute("SELECT table_name, named_from FROM svc_tables").fetchall())
    finally:
        con.close()
    assert named["contacts_object_2"] == "Contacts" and named["contacts__field_7"] == "In Out"
    assert named["contacts__in_out"] == "In/Out"
    assert (out / "contacts_object_2").is_dir()
