"""Assets over real HTTP: upload a file and an image, create a record with an asset,
download the exact bytes, thumbnails, one asset per placement, uploads from write_back."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.guard import FAST_GUARD

from svc_frames.assets import create_with_asset, download, upload_file, upload_image
from svc_frames.errors import InvalidValue, UsageError, ValidationError
from svc_frames.frames import Frames
from svc_frames.kinds.base import FieldSpec
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.writeback import add_rows, diff, write_back


def _png(size: tuple[int, int] = (64, 48)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, (200, 30, 90)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=8, rate_limit=0) as s:
        yield s


@pytest.fixture(scope="module")
def client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)


def _object_with(client: Client, kind: str) -> tuple[str, FieldSpec]:
    app = client.schema() or {}
    for obj in app.get("objects") or []:
        for f in obj["fields"]:
            if f["type"] == kind and (f.get("format") or {}).get("source", "upload") != "url":
                return obj["key"], FieldSpec.from_schema(f, obj["key"])
    pytest.skip(f"no uploadable {kind} field in the demo")


def _text_field(client: Client, obj: str) -> str:
    app = client.schema() or {}
    o = next(o for o in app["objects"] if o["key"] == obj)
    return next(f["key"] for f in o["fields"] if f["type"] == "short_text")


def test_upload_file_and_download_exact_bytes(client: Client) -> None:
    data = os.urandom(5000) + b"\x00end"
    asset = upload_file(client, data, "report.bin")
    assert asset["type"] == "file" and asset["filename"] == "report.bin"
    assert asset["thumb_url"] == "" and asset["size"] == len(data)
    assert download(client, asset) == data


def test_upload_image_has_a_thumbnail(client: Client, tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "photo.png"
    path.write_bytes(_png((300, 200)))
    asset = upload_image(client, path)
    assert asset["type"] == "image" and asset["thumb_url"]
    assert download(client, asset) == path.read_bytes()
    thumb = Image.open(io.BytesIO(download(client, asset, thumb=True)))
    assert thumb.size[0] <= 300 and thumb.size[1] <= 200 and thumb.size != (300, 200)


def test_create_with_asset_then_download(client: Client, tmp_path: Path) -> None:
    obj, f = _object_with(client, "file")
    path = tmp_path / "manual.pdf"
    path.write_bytes(b"%PDF-1.4 manual " + os.urandom(100))
    text = _text_field(client, obj)
    rec = create_with_asset(client, obj, {text: "with a file"}, {f.key: path})
    raw = rec[f"{f.key}_raw"]
    assert raw["filename"] == "manual.pdf"
    assert download(client, raw) == path.read_bytes()
    # the same record read back carries the asset
    got = client.get_record(obj, rec["id"])
    assert got[f"{f.key}_raw"]["id"] == raw["id"]


def test_create_with_asset_takes_the_object_name_and_field_labels(
        svc: LocalService, client: Client, tmp_path: Path) -> None:
    """As a frame named by labels names them: the object by name, fields by label; a
    label and a key of the same field given twice are refused before any request."""
    obj, f = _object_with(client, "file")
    path = tmp_path / "by-label.txt"
    path.write_bytes(b"named by label")
    text = _text_field(client, obj)
    schema = client.schema()
    name, text_label = schema.object_name(obj), schema.field(obj, text).label
    rec = create_with_asset(client, name, {text_label: "by label"}, {f.label: path})
    assert rec[text] == "by label" and download(client, rec[f"{f.key}_raw"]) == b"named by label"
    svc.request_log.clear()
    with pytest.raises(UsageError, match="both as data and as assets"):
        create_with_asset(client, name, {f.label: "x"}, {f.key: path})
    assert svc.request_log.count() == 0


def test_asset_id_reused_in_a_second_field_is_refused(client: Client) -> None:
    obj, f = _object_with(client, "file")
    asset = upload_file(client, b"once", "once.txt")
    client.create_record(obj, {f.key: asset["id"]})
    with pytest.raises(ValidationError) as err:
        client.create_record(obj, {f.key: asset["id"]})
    assert f.key in str(err.value) or err.value.field == f.key


def test_create_with_asset_missing_file_sends_nothing(svc: LocalService, client: Client,
                                                      tmp_path: Path) -> None:
    obj, f = _object_with(client, "file")
    client.schema()   # cached: the check below must send nothing at all
    svc.request_log.clear()
    with pytest.raises(InvalidValue) as err:
        create_with_asset(client, obj, {}, {f.key: tmp_path / "absent.pdf"})
    assert "absent.pdf" in str(err.value)
    assert svc.request_log.count() == 0


def _field(client: Client, obj: str, kind: str, **want: Any) -> FieldSpec:
    for f in (client.schema() or {})["objects"]:
        if f["key"] != obj:
            continue
        for fld in f["fields"]:
            spec = FieldSpec.from_schema(fld, obj)
            if spec.kind == kind and all((spec.relationship or {}).get(k) == v
                                         for k, v in want.items()):
                return spec
    pytest.skip(f"no {kind} field {want} in {obj}")


@pytest.mark.parametrize("case", ["unknown object", "unknown field", "bad number",
                                  "two ids for a has-one connection"])
def test_create_with_asset_checks_the_record_before_uploading(
        svc: LocalService, client: Client, tmp_path: Path, case: str) -> None:
    """A create the service would refuse must not upload first (no orphan asset)."""
    obj, f = _object_with(client, "file")
    path = tmp_path / "kept.pdf"
    path.write_bytes(b"%PDF-1.4 never uploaded")
    data: dict[str, Any] = {}
    target, culprit = obj, ""
    if case == "unknown object":
        target, culprit = "object_999", "object_999"
    elif case == "unknown field":
        data, culprit = {"field_9999": "x"}, "field_9999"
    elif case == "bad number":
        num = _field(client, obj, "number")
        data, culprit = {num.key: "twelve"}, num.key
    else:
        one = _field(client, obj, "connection", has="one")
        ids = client.get_page(str((one.relationship or {})["object"]))["records"][:2]
        if len(ids) < 2:
            pytest.skip("the connected object has fewer than two records")
        data, culprit = {one.key: [r["id"] for r in ids]}, one.key
    client.schema()   # cached: the check below must send nothing at all
    svc.request_log.clear()
    with pytest.raises(UsageError) as err:
        create_with_asset(client, target, data, {f.key: path})
    assert culprit in str(err.value)
    assert svc.request_log.count() == 0


def test_write_back_checks_a_record_before_uploading_its_file(
        svc: LocalService, client: Client, tmp_path: Path) -> None:
    """A plan whose record the service would refuse (here a hand-edited payload): refused,
    naming the field, before the upload, not after it (an asset placed nowhere)."""
    obj, f = _object_with(client, "file")
    num = _field(client, obj, "number")
    frames = _load(client, obj)
    path = tmp_path / "attached.txt"
    path.write_bytes(b"attached to a record the service refuses")
    assert frames.source is not None
    required = {r.key: "required" for r in frames.source.fields   # diff asks for them
                if r.required and r.kind == "short_text"}
    (tmp,) = add_rows(frames, [{f.key: str(path), **required}])
    plan = diff(frames)
    plan.payloads[tmp][num.key] = "twelve"
    svc.request_log.clear()
    with pytest.raises(InvalidValue) as err:
        write_back(client, frames, plan=plan)
    assert num.key in str(err.value) and tmp in str(err.value)
    assert svc.request_log.count() == 0


def _load(client: Client, obj: str) -> Frames:
    return read_object(client, obj, progress=False, columns="keys")


def _set(frames: Frames, rid: str, col: str, value: Any) -> None:
    s = frames.main[col].astype(object)
    s.at[rid] = value
    frames.main[col] = s


def test_write_back_uploads_once_per_placement(svc: LocalService, client: Client,
                                               tmp_path: Path) -> None:
    obj, f = _object_with(client, "file")
    frames = _load(client, obj)
    path = tmp_path / "shared.txt"
    path.write_bytes(b"the same file in two records")
    a, b = frames.main.index[0], frames.main.index[1]
    _set(frames, a, f.key, str(path))
    _set(frames, b, f.key, path)
    svc.request_log.clear()
    report = write_back(client, frames, **FAST_GUARD)
    assert set(report.table["status"]) == {"applied"}
    assert report.requests["uploads"] == 2
    assert svc.request_log.count(method="POST") == 2
    again = _load(client, obj)
    ida, idb = again.main.loc[a, f.key], again.main.loc[b, f.key]
    assert ida != idb
    for rid in (a, b):
        assert download(client, str(again.main.loc[rid, f"{f.key}.url"])) == path.read_bytes()
    # an asset id placed in one record, copied into another: refused before any request
    frames = _load(client, obj)
    _set(frames, frames.main.index[2], f.key, ida)
    svc.request_log.clear()
    with pytest.raises(InvalidValue) as err:
        diff(frames)
    assert ida in str(err.value) and "upload" in str(err.value)
    assert svc.request_log.count() == 0


def test_uploads_under_faults_place_each_file_once(tmp_path: Path) -> None:
    with LocalService(demo=True, records=6, rate_limit=0, seed=3) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=0, backoff=0.01, max_retries=8)
        obj, f = _object_with(client, "image")
        frames = _load(client, obj)
        data = _png((40, 30))
        ids = frames.main.index[:4].tolist()
        for rid in ids:
            _set(frames, rid, f.key, data)
        svc.emulation.fault_rate = 0.2
        report = write_back(client, frames, journal=tmp_path / "j.jsonl")
        for _ in range(4):
            if report.ok:
                break
            report = write_back(client, frames, journal=tmp_path / "j.jsonl")
        svc.emulation.fault_rate = 0.0
        assert report.ok
        again = _load(client, obj)
        placed = again.main.loc[ids, f.key].tolist()
        assert len(set(placed)) == len(ids)          # one asset per placement
        for rid in ids:
            assert download(client, str(again.main.loc[rid, f"{f.key}.url"])) == data
