"""The mirror's copies of files and images (``assets=True``) over the local service, in
DuckDB and in a Parquet directory: files uploaded through the toolkit, mirrored, read back
byte-equal; a run downloads only what it has no copy of; a replaced file gets a new copy
beside the old; a deleted record's copies stay."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import svc_frames as sf
from svc_frames.errors import UsageError
from svc_frames.mirroring.assets import asset_copies
from svc_frames.server import LocalService
from tests.test_mirror import client_of


def _target(tmp_path: Path, kind: str) -> str:
    return str(tmp_path / "m.duckdb") if kind == "duckdb" else f"{tmp_path / 'm'}/"


@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_copies_kept_byte_equal_and_downloaded_once(fresh_service: LocalService,
                                                    tmp_path: Path, kind: str) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = _target(tmp_path, kind)
    before = sf.read_object(client, "object_3", columns="keys").main
    ids = list(before.index)
    photo = sf.download(client, str(before["field_38.url"].dropna().iloc[0]))
    manual = sf.upload_file(client, b"Pump manual, first edition", "manual.txt")
    image = sf.upload_image(client, photo, "pump.png")
    client.update_record("object_3", ids[0], {"field_37": manual["id"],
                                              "field_38": image["id"]})
    client.update_record("object_3", ids[1], {"field_37": None})   # a record without

    first = sf.mirror(client, target, ["object_3"], assets=True)
    loaded = sf.read_object(client, "object_3", columns="keys").main
    held = {(str(r), f) for f in ("field_37", "field_38")
            for r in loaded.index[loaded[f].notna()]}
    assert first.objects["object_3"].assets == len(held) > 30
    got = asset_copies(target, "object_3", [str(i) for i in loaded.index])
    assert set(got) == held
    assert got[(ids[0], "field_37")].data == b"Pump manual, first edition"
    assert (got[(ids[0], "field_37")].name, got[(ids[0], "field_37")].content_type) == (
        "manual.txt", "text/plain")
    assert got[(ids[0], "field_38")].data == photo
    assert got[(ids[0], "field_38")].content_type == "image/png"
    assert (ids[1], "field_37") not in got
    for (rid, fkey), copy in got.items():   # every copy is the service's file, whole
        assert copy.asset_id == loaded.at[rid, fkey]
        assert len(copy.data) == loaded.at[rid, f"{fkey}.size"]
        assert copy.run == 1
    rid = next(r for r, f in held if r not in ids[:2] and f == "field_37")
    assert got[(rid, "field_37")].data == sf.download(client, str(loaded.at[rid,
                                                                           "field_37.url"]))

    # a run after an edit of another field downloads nothing
    svc.pages.update_record("object_3", ids[2], {"field_12": "Checked the valve"})
    second = sf.mirror(client, target, ["object_3"], assets=True)
    assert second.objects["object_3"].updated == 1
    assert second.objects["object_3"].assets == 0

    # a replaced file: one download, the new copy beside the old one
    revised = sf.upload_file(client, b"Pump manual, second edition", "manual.txt")
    svc.pages.update_record("object_3", ids[0], {"field_37": revised["id"]})
    third = sf.mirror(client, target, ["object_3"], assets=True)
    assert third.objects["object_3"].assets == 1
    assert asset_copies(target, "object_3", [ids[0]])[(ids[0], "field_37")].data == (
        b"Pump manual, second edition")
    then = asset_copies(target, "object_3", [ids[0]], run=2)
    assert then[(ids[0], "field_37")].data == b"Pump manual, first edition"
    assert then[(ids[0], "field_37")].asset_id == manual["id"]

    # a deleted record's copies stay, for restore
    client.delete_record("object_3", ids[0])
    fourth = sf.mirror(client, target, ["object_3"], assets=True)
    assert (fourth.objects["object_3"].deleted, fourth.objects["object_3"].assets) == (1, 0)
    kept = asset_copies(target, "object_3", [ids[0]])
    assert kept[(ids[0], "field_38")].data == photo
    now = sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"]
    assert len(now.main) == len(loaded) - 1


def test_copies_off_by_default_and_turned_on_later(fresh_service: LocalService,
                                                   tmp_path: Path) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "m.duckdb"
    first = sf.mirror(client, target, ["object_3"])
    assert first.objects["object_3"].assets == 0
    assert asset_copies(target, "object_3", ["x"]) == {}
    # turned on for a mirror that has none: every record's files are copied once
    loaded = sf.read_object(client, "object_3", columns="keys").main
    files = int(loaded["field_37"].notna().sum() + loaded["field_38"].notna().sum())
    second = sf.mirror(client, target, ["object_3"], assets=True)
    assert (second.objects["object_3"].unchanged, second.objects["object_3"].assets) == (
        len(loaded), files)
    assert sf.mirror(client, target, ["object_3"], assets=True).objects[
        "object_3"].assets == 0
    with pytest.raises(UsageError, match="assets must be True or False"):
        sf.mirror(client, target, assets="yes")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="list of record ids"):
        asset_copies(target, "object_3", "abc")


def test_the_readers_example_runs(fresh_service: LocalService, tmp_path: Path) -> None:
    from test_docstrings import run_examples
    assert not run_examples("asset_copies", asset_copies, fresh_service, tmp_path)


def test_the_command_keeps_copies_with_assets(fresh_service: LocalService, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.cli import main
    svc = fresh_service
    target = tmp_path / "app.duckdb"
    assert main(["mirror", "--to", str(target), "--objects", "Work Orders", "--assets",
                 "--json", "--app-id", svc.app_id, "--api-key", svc.api_key,
                 "--base-url", svc.base_url, "--rate-limit", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    files = report["objects"]["object_3"]["assets"]
    assert files > 30
    loaded = sf.read_object(client_of(svc), "object_3", columns="keys").main
    got = asset_copies(target, "object_3", [str(i) for i in loaded.index])
    assert len(got) == files
