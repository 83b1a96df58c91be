"""Parquet: frames round-trip exactly; a streaming export is a dataset readers take as is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import requests
from fixtures.guard import FAST_GUARD

from svc_frames.errors import ServerError, UsageError
from svc_frames.frames import Frames, Source, build_frames, resolve_fields
from svc_frames.kinds import resolve_timezone
from svc_frames.loaders import read_view
from svc_frames.read.load import load
from svc_frames.records import Client
from svc_frames.saved.arrow import arrow_to_frame, table_meta
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.schema import Schema
from svc_frames.server import LocalService
from svc_frames.testing import hosted_sample_dir

FIXTURES = hosted_sample_dir()


def assert_frames_equal(a: Frames, b: Frames) -> None:
    pd.testing.assert_frame_equal(a.main, b.main)
    assert list(a.tables) == list(b.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert a.source == b.source


@pytest.fixture(scope="module")
def fixture_frames() -> Frames:
    app = json.loads((FIXTURES / "application.json").read_text())["application"]
    recs = json.loads((FIXTURES / "records.json").read_text())["records"]
    tz = resolve_timezone(app["settings"]["timezone"])
    fields, _ = resolve_fields(recs, Schema.of(app).all_fields(), Schema.of(app).object_fields("object_3"))
    return build_frames(recs, fields, Source("object", "object_3", fields, timezone=tz.key),
                        tz=tz)


def test_roundtrip_fixture_every_kind(fixture_frames: Frames, tmp_path: Path) -> None:
    to_parquet(fixture_frames, tmp_path / "out")
    back = read_parquet(tmp_path / "out")
    assert_frames_equal(back, fixture_frames)
    assert back.original is not None and fixture_frames.original is not None
    assert_frames_equal(back.original, fixture_frames.original)


def test_roundtrip_keeps_edits_apart_from_original(fixture_frames: Frames,
                                                   tmp_path: Path) -> None:
    edited = Frames(fixture_frames.main.copy(), dict(fixture_frames.tables),
                    fixture_frames.source, fixture_frames.original)
    edited.main.loc[edited.main.index[0], "field_7"] = "changed"
    to_parquet(edited, tmp_path / "e")
    back = read_parquet(tmp_path / "e")
    assert back.main["field_7"].iloc[0] == "changed"
    assert back.original is not None and back.original.main["field_7"].iloc[0] != "changed"


def test_list_columns_roundtrip(tmp_path: Path) -> None:
    from svc_frames.kinds import FieldSpec
    f = FieldSpec(key="field_1", kind="multiple_choice", format={"type": "multi"})
    recs = [{"id": "a", "field_1": "x, y", "field_1_raw": ["x", "y"]},
            {"id": "b", "field_1": ""}]
    frames = build_frames(recs, [f], Source("object", "object_1", [f]))
    to_parquet(frames, tmp_path / "l")
    back = read_parquet(tmp_path / "l")
    assert_frames_equal(back, frames)
    assert back.main["field_1"].iloc[0] == ["x", "y"]


def test_main_file_is_plain_parquet_with_metadata(fixture_frames: Frames,
                                                  tmp_path: Path) -> None:
    to_parquet(fixture_frames, tmp_path / "m")
    table = ds.dataset(tmp_path / "m").to_table()
    meta = table_meta(table.schema)
    assert meta["source"]["object_key"] == "object_3"
    assert meta["source"]["timezone"] == "America/Chicago"
    assert table.num_rows == len(fixture_frames.main)
    # the JSON beside the data says the same, for writers that drop the schema metadata
    doc = json.loads((tmp_path / "m.svc_frames.json").read_text())
    assert doc["source"] == meta["source"] and doc["columns"]["id"] == "string"


def test_read_parquet_of_a_foreign_dir(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(UsageError, match=r"d\.svc_frames\.json is missing"):
        read_parquet(tmp_path / "d")


def test_to_parquet_refuses_foreign_nonempty_dir(fixture_frames: Frames,
                                                 tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="overwrite=True"):
        to_parquet(fixture_frames, tmp_path)
    with pytest.raises(UsageError, match="not saved frames"):
        to_parquet(fixture_frames, tmp_path, overwrite=True)
    assert (tmp_path / "keep.txt").read_text() == "mine"




# ---- streaming export, over HTTP --------------------------------------------------------
def _client(svc: LocalService, **kw: object) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01, **kw)  # type: ignore[arg-type]


def test_export_dataset_equals_a_load(service: LocalService, client: Client,
                                      tmp_path: Path) -> None:
    """Raw pages after the first, as the loaders; compared with a load of both formats."""
    urls: list[str] = []
    client.session.hooks["response"].append(lambda r, *a, **k: urls.append(r.url))
    try:
        res = export(client, "object_3", tmp_path / "ds", rows_per_page=40, progress=False, columns="keys")
    finally:
        client.session.hooks["response"].clear()
    pages = [u for u in urls if "/records" in u]
    assert sum("format=raw" in u for u in pages) >= len(pages) - 5 > 0  # 2-5: on their way
    loaded = load(client, "object_3", progress=False, raw_pages=False, columns="keys")
    assert res.records == len(loaded.main) and res.parts == -(-len(loaded.main) // 40)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ds", "ds.svc_frames", "ds.svc_frames.json", "ds.tables"]
    assert {p.name for p in (tmp_path / "ds").iterdir()} == {
        f"part-{n:05d}.parquet" for n in range(1, res.parts + 1)}  # the parts alone
    assert res.tables_path == tmp_path / "ds.tables" and set(res.tables) == set(loaded.tables)
    dataset = ds.dataset(tmp_path / "ds")
    schemas = {pq.read_schema(f).remove_metadata() for f in dataset.files}
    assert len(schemas) == 1  # one schema for every part
    table = dataset.to_table()
    assert table.num_rows == len(loaded.main)
    main = arrow_to_frame(table)
    pd.testing.assert_frame_equal(main, loaded.main)
    for name in loaded.tables:
        part_dir = tmp_path / "ds.tables" / name
        t = arrow_to_frame(ds.dataset(part_dir).to_table())
        pd.testing.assert_frame_equal(t, loaded.tables[name])
    meta = table_meta(pq.read_schema(dataset.files[0]))
    assert meta is not None and meta["source"]["object_key"] == "object_3"


def test_export_is_read_as_is_by_duckdb_and_polars(client: Client, tmp_path: Path) -> None:
    """The directory itself, no glob: DuckDB reads directories recursively and Polars
    refuses one holding other files, so the export directory holds its parts alone."""
    import duckdb
    import polars as pl

    res = export(client, "object_3", tmp_path / "ds", rows_per_page=40, progress=False, columns="keys")
    want = ds.dataset(tmp_path / "ds").to_table()
    con = duckdb.connect()
    got = con.sql(f"SELECT * FROM read_parquet('{tmp_path / 'ds'}') ORDER BY id").arrow()
    got = got.read_all() if hasattr(got, "read_all") else got  # a reader from duckdb 2
    assert got.num_rows == res.records == want.num_rows
    assert got.column_names == want.column_names
    assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist())
    polars = pl.read_parquet(tmp_path / "ds")
    assert polars.shape == (want.num_rows, want.num_columns)
    assert pl.scan_parquet(tmp_path / "ds").select(pl.len()).collect().item() == res.records
    assert res.tables_path is not None
    for name in res.tables:
        path = res.tables_path / name
        n = ds.dataset(path).count_rows()
        assert con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchall() == [(n,)]
        assert pl.read_parquet(path).height == n


def test_export_view_to_csv(service: LocalService, tmp_path: Path) -> None:
    client = _client(service)
    res = export(client, "scene_1/view_1", tmp_path / "csv", format="csv", progress=False, columns="keys")
    table = ds.dataset(tmp_path / "csv", format="csv").to_table()
    loaded = read_view(client, "scene_1", "view_1", progress=False, columns="keys")
    assert table.num_rows == res.records == len(loaded.main)
    assert set(table.column_names) == {"id", *loaded.main.columns}


def test_export_refuses_a_nonempty_dir_and_leaves_nothing_on_error(
        client: Client, service: LocalService, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    with pytest.raises(UsageError, match="exists: pass overwrite=True"):
        export(client, "object_3", tmp_path / "full", progress=False, columns="keys")
    with pytest.raises(UsageError, match="unknown object 'object_99'"):
        export(client, "object_99", tmp_path / "none", progress=False, columns="keys")  # before any page
    # a failure once pages are coming in leaves nothing half-written either (a service
    # of its own: the injected faults must not reach other tests)
    with LocalService(demo=True, records=30) as failing:
        once = Client(failing.app_id, api_key=failing.api_key, base_url=failing.base_url,
                      rate_limit=0, max_retries=0)
        once.schema()
        failing.emulation.inject("503", method="GET",
                                 path_prefix="/v1/objects/object_3/records", times=50)
        with pytest.raises(ServerError):
            export(once, "object_3", tmp_path / "none", progress=False, columns="keys")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # no half-written dir
    with pytest.raises(UsageError, match="format"):
        export(client, "object_3", tmp_path / "f", format="json", progress=False, columns="keys")  # type: ignore[arg-type]


def test_export_with_records_deleted_mid_run(fresh_service: LocalService,
                                             tmp_path: Path) -> None:
    ids = [r["id"] for r in requests.get(
        f"{fresh_service.base_url}/v1/objects/object_3/records",
        params={"rows_per_page": 100, "sort_field": "field_24", "sort_order": "desc"},
        headers=fresh_service.headers(), timeout=30).json()["records"]]
    victims = ids[1:3]
    client = _client(fresh_service, max_workers=1)
    fetch = client.get_page
    fetched = 0

    def get_page_then_delete(*args: Any, **kwargs: Any) -> dict[str, Any]:
        # once page 2 of pass 1 is in, delete two rows of page 1: mid-run for sure, with
        # no race against a thread (deterministic however slow the machine)
        nonlocal fetched
        env = fetch(*args, **kwargs)
        fetched += 1
        if fetched == 2:
            for rid in victims:
                requests.delete(f"{fresh_service.base_url}/v1/objects/object_3/records/{rid}",
                                headers=fresh_service.headers(), timeout=30).raise_for_status()
        return env

    client.get_page = get_page_then_delete  # type: ignore[method-assign]
    # sorted descending, so it pages by number (a load of an object with an auto-increment
    # field, unsorted or ascending by it, pages by its ranges, where no record shifts:
    # tests/test_live_loads.py); this is the repair of a pass that saw records move
    res = export(client, "object_3", tmp_path / "m", rows_per_page=3, sort_field="field_24",
                 sort_order="desc", progress=False, columns="keys")
    got = ds.dataset(tmp_path / "m").to_table().column("id").to_pylist()
    assert len(got) == len(set(got)) == res.records
    assert set(got) == set(ids) - set(victims)
    # pass 1 was written, then repaired: the deleted rows and the re-fetched repeats go
    assert res.passes > 1 and res.repaired_rows >= 2
    links = ds.dataset(tmp_path / "m.tables" / "field_41").to_table().to_pylist()
    pairs = [(r["record_id"], r["connected_id"]) for r in links]
    assert len(pairs) == len(set(pairs)) and {p[0] for p in pairs} <= set(got)


# ---- the CLI ---------------------------------------------------------------------------------
def test_cli_export_and_schema(service: LocalService, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.cli import main

    monkeypatch.setenv("SVC_APP_ID", service.app_id)
    monkeypatch.setenv("SVC_API_KEY", service.api_key)
    monkeypatch.setenv("SVC_BASE_URL", service.base_url)
    flt = json.dumps([{"field": "field_27", "operator": "is", "value": "Open"}])
    assert main(["export", "object_3", "--out", str(tmp_path / "o"), "--filters", flt,
                 "--no-progress", "--columns", "keys"]) == 0
    summary = json.loads(capsys.readouterr().out)
    status = ds.dataset(tmp_path / "o").to_table().column("field_27").to_pylist()
    assert summary["records"] == len(status) > 0 and set(status) == {"Open"}
    manager = next(u for u in service.users if "profile_2" in u["profile_keys"])
    assert main(["export", "scene_2/view_3", "--out", str(tmp_path / "v"), "--format", "csv",
                 "--email", manager["email"], "--password", manager["password"],
                 "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] > 0
    assert main(["schema"]) == 0
    out = capsys.readouterr().out
    assert "object_3" in out and "connection" in out and "view_3" in out


def test_cli_errors_are_one_clear_line(service: LocalService, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.cli import main

    monkeypatch.setenv("SVC_APP_ID", service.app_id)
    monkeypatch.setenv("SVC_API_KEY", "wrong-key-123")
    monkeypatch.setenv("SVC_BASE_URL", service.base_url)
    assert main(["export", "object_3", "--out", str(tmp_path / "x"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and "wrong-key-123" not in err
    assert main(["export", "object_3", "--out", str(tmp_path / "y"), "--filters",
                 '[{"field": "field_1", "operator": "near-ish", "value": 1}]']) == 2
    assert "near-ish" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


# ---- one saved format, readable by everyone --------------------------------------------------
def test_every_saved_directory_reads_one_row_per_record(fixture_frames: Frames,
                                                        client: Client,
                                                        tmp_path: Path) -> None:
    """pd.read_parquet, pyarrow, DuckDB and Polars see each record once, with its id, in
    whatever svc_frames writes (the as-loaded copy and tables live beside, not inside)."""
    import duckdb
    import polars as pl

    assert fixture_frames.tables  # the case that stacked tables into the records before
    saved = to_parquet(fixture_frames, tmp_path / "saved")
    exported = export(client, "object_3", tmp_path / "exported", rows_per_page=50,
                      progress=False, columns="keys").path
    for path, n in ((saved, len(fixture_frames.main)), (exported, None)):
        plain = pd.read_parquet(path)
        n = n if n is not None else len(load(client, "object_3", progress=False, columns="keys").main)
        assert len(plain) == n and plain["id"].is_unique, path
        assert ds.dataset(path).count_rows() == n
        assert duckdb.sql(f"SELECT count(DISTINCT id), count(*) FROM "
                          f"read_parquet('{path}/*.parquet')").fetchall() == [(n, n)]
        assert pl.read_parquet(path).height == n


def test_to_parquet_never_replaces_without_overwrite(fixture_frames: Frames,
                                                     tmp_path: Path) -> None:
    path = to_parquet(fixture_frames, tmp_path / "o")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    edited = read_parquet(path)
    edited.main.iloc[0, edited.main.columns.get_loc("field_7")] = "changed"
    with pytest.raises(UsageError, match="overwrite=True"):
        to_parquet(edited, path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    to_parquet(edited, path, overwrite=True)
    assert read_parquet(path).main["field_7"].iloc[0] == "changed"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers


def test_labels_saved_and_read_back_diff_to_nothing(fixture_frames: Frames,
                                                    tmp_path: Path) -> None:
    from svc_frames.writeback import diff

    path = to_parquet(fixture_frames, tmp_path / "l", columns="labels")
    cols = pd.read_parquet(path).columns
    assert "field_7" not in cols and fixture_frames.source is not None
    assert fixture_frames.source.field("field_7").label in cols
    back = read_parquet(path)
    assert back.source is not None and back.source.columns == "labels"
    assert diff(back).empty
    plain = read_parquet(to_parquet(back, tmp_path / "k", columns="keys"))
    assert_frames_equal(plain, fixture_frames)


def test_csv_text_has_no_float_noise_and_reads_back() -> None:
    from svc_frames.kinds import FieldSpec
    from svc_frames.saved.csvtext import duration_text, number_text, parse_column

    assert number_text(842.8499999999999) == "842.85"
    assert number_text(3.0) == "3" and number_text(0.1 + 0.2) == "0.3"
    assert number_text(12.5, FieldSpec("field_1", "currency")) == "12.50"
    assert duration_text(pd.Timedelta(hours=27, minutes=5)) == "27:05:00"
    tz = "America/Chicago"
    got = parse_column(["2026-03-04T09:30:00-06:00", "2026-03-04 09:30", ""],
                       f"datetime64[ns, {tz}]", None, column="due", where="x.csv", timezone=tz)
    assert got[0] == got[1] == pd.Timestamp("2026-03-04 09:30", tz=tz) and got[2] is None
    opts = FieldSpec("field_2", "multiple_choice",
                     format={"type": "multi", "options": ["A, with comma", "B"]})
    assert parse_column(["A, with comma, B"], "list", opts) == [["A, with comma", "B"]]
    with pytest.raises(UsageError, match=r"x\.csv: column 'n', row 2: cannot read 'abc'"):
        parse_column(["1", "abc"], "Float64", None, column="n", where="x.csv")


def test_the_first_layout_still_reads_but_push_asks_to_convert(fixture_frames: Frames,
                                                               client: Client,
                                                               tmp_path: Path) -> None:
    """Directories saved before the layout changed (main.parquet, tables/, original/)."""
    from svc_frames.saved.arrow import frame_to_arrow
    from svc_frames.saved.push import push

    assert fixture_frames.source is not None and fixture_frames.original is not None
    old = tmp_path / "old"
    for root, fr in ((old, fixture_frames), (old / "original", fixture_frames.original)):
        files = {name: f"{i:03d}-{name}.parquet" for i, name in enumerate(fr.tables)}
        (root / "tables").mkdir(parents=True)
        pq.write_table(frame_to_arrow(fr.main, {"format": 1, "tables": files,
                                                "source": fixture_frames.source.to_dict()}),
                       root / "main.parquet")
        for name, fname in files.items():
            pq.write_table(frame_to_arrow(fr.tables[name], {"table": name}),
                           root / "tables" / fname)
    assert_frames_equal(read_parquet(old), fixture_frames)
    sent = client.request_count
    with pytest.raises(UsageError, match="earlier svc_frames"):
        push(client, old)
    assert client.request_count == sent
    converted = to_parquet(read_parquet(old), tmp_path / "new")
    assert_frames_equal(read_parquet(converted), fixture_frames)


# ---- push's refusals: another application, a changed as-loaded copy ------------------------
def _edit_first_title(path: Path, title: str) -> str:
    """Rewrite the saved records with one title changed, as a user's tool would."""
    part = next(iter(sorted(path.glob("*.parquet"))))
    df = pd.read_parquet(part)
    rid = str(df["id"].iloc[0])
    df.loc[0, "field_12"] = title
    df.to_parquet(part, index=False)
    return rid


def test_push_refuses_frames_of_another_application(service: LocalService,
                                                   fresh_service: LocalService,
                                                   tmp_path: Path) -> None:
    """Two demo applications give their records ids of the same shape: an export of one
    pushed with a client of the other is refused before any request, naming both."""
    from svc_frames.saved.push import push

    export(_client(service), "object_3", tmp_path / "a", progress=False, columns="keys")
    _edit_first_title(tmp_path / "a", "pushed to the wrong app")
    other = _client(fresh_service)
    fresh_service.request_log.clear()
    with pytest.raises(UsageError) as err:
        push(other, tmp_path / "a")
    text = str(err.value)
    assert service.app_id in text and fresh_service.app_id in text and "object_3" in text
    assert fresh_service.request_log.count() == 0  # nothing asked, nothing written
    # the same directory pushes to its own application
    report = push(_client(service), tmp_path / "a", **FAST_GUARD)
    assert report.table["status"].tolist() == ["applied"]


def test_a_changed_as_loaded_copy_is_refused(client: Client, tmp_path: Path) -> None:
    """push diffs against the as-loaded copy: one put in step with the edit would turn the
    edit into no change. Its SHA-256 in the metadata catches it."""
    from svc_frames.saved.push import push

    export(client, "object_3", tmp_path / "t", progress=False, columns="keys")
    _edit_first_title(tmp_path / "t", "an edit to keep")
    _edit_first_title(tmp_path / "t.svc_frames" / "main", "an edit to keep")
    with pytest.raises(UsageError, match="as-loaded copy was changed"):
        read_parquet(tmp_path / "t")
    with pytest.raises(UsageError, match="as-loaded copy was changed"):
        push(client, tmp_path / "t", dry_run=True)


def test_saved_frames_without_a_digest_are_read_as_before(client: Client,
                                                          tmp_path: Path) -> None:
    """Saved by the version before the digest (no ``loaded_sha256``): read and pushed as
    they are; the push records a digest for next time."""
    from svc_frames.saved.push import push

    export(client, "object_3", tmp_path / "o", progress=False, columns="keys")
    meta_path = tmp_path / "o.svc_frames.json"
    doc = json.loads(meta_path.read_text())
    assert len(doc.pop("loaded_sha256")) == 64
    meta_path.write_text(json.dumps(doc))
    _edit_first_title(tmp_path / "o", "edited in an old save")
    assert read_parquet(tmp_path / "o").original is not None
    report = push(client, tmp_path / "o", **FAST_GUARD)
    assert report.table["status"].tolist() == ["applied"]
    assert len(json.loads(meta_path.read_text())["loaded_sha256"]) == 64
    assert len(push(client, tmp_path / "o").table) == 0  # the new digest fits the copy
