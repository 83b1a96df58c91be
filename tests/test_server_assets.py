"""Uploads (4.6/4.7), create with an asset (4.8), downloads, thumbnails and their errors."""

from __future__ import annotations

import io
import os

import requests
from PIL import Image

from svc_frames.server import LocalService
from svc_frames.testing import object_url


def _upload(svc: LocalService, kind: str, name: str, content: bytes,
            part: str = "files") -> requests.Response:
    return requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/assets/{kind}/upload",
                         headers=svc.headers(), files={part: (name, content)}, timeout=30)


def _png(w: int = 640, h: int = 480) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (w, h), (10, 200, 30)).save(buf, format="PNG")
    return buf.getvalue()


def test_file_upload_create_and_download(service: LocalService) -> None:
    content = os.urandom(5000)
    r = _upload(service, "file", "report.pdf", content)
    assert r.status_code == 200, r.text
    asset = r.json()
    assert asset["type"] == "file" and asset["size"] == len(content)
    assert asset["thumb_url"] == "" and asset["filename"] == "report.pdf"
    assert asset["public_url"] == (f"{service.base_url}/v1/applications/{service.app_id}/"
                                   f"download/asset/{asset['id']}/report.pdf")
    assert requests.get(asset["public_url"], timeout=30).content == content
    rec = requests.post(object_url(service, "object_3"), json={"field_37": asset["id"]},
                        headers=service.headers(), timeout=30).json()
    raw = rec["field_37_raw"]
    assert raw["id"] == asset["id"] and raw["size"] == len(content)
    assert raw["field_key"] == "field_37" and raw["type"] == "file"
    assert "report.pdf" in rec["field_37"] and asset["public_url"] in rec["field_37"]
    assert requests.get(raw["url"], timeout=30).content == content
    # re-saving the same asset in the same record and field is not a second placement
    again = requests.put(object_url(service, "object_3", rec["id"]),
                         json={"field_37": asset["id"]}, headers=service.headers(), timeout=30)
    assert again.status_code == 200


def test_image_upload_thumbnail(service: LocalService) -> None:
    png = _png()
    asset = _upload(service, "image", "site.png", png).json()
    assert asset["type"] == "image" and asset["thumb_url"]
    thumb = requests.get(asset["thumb_url"], timeout=30)
    assert thumb.status_code == 200
    im = Image.open(io.BytesIO(thumb.content))
    assert max(im.size) <= 200 and im.size != (640, 480)
    assert requests.get(asset["public_url"], timeout=30).content == png
    assert _upload(service, "image", "fake.png", b"not an image").status_code == 400


def test_asset_reuse_is_refused(service: LocalService) -> None:
    asset = _upload(service, "image", "one.png", _png(20, 20)).json()
    h = service.headers()
    first = requests.post(object_url(service, "object_3"), json={"field_38": asset["id"]},
                          headers=h, timeout=30)
    assert first.status_code == 200
    for body in ({"field_38": asset["id"]}, {"field_37": asset["id"]}):
        r = requests.post(object_url(service, "object_3"), json=body, headers=h, timeout=30)
        assert r.status_code == 400
        assert r.json()["errors"][0]["field"] in ("field_37", "field_38")


def test_upload_bad_input(fresh_service: LocalService) -> None:
    svc = fresh_service
    r = _upload(svc, "file", "x.txt", b"hello", part="other")
    assert r.status_code == 400 and "files" in r.json()["errors"][0]["message"]
    r = requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/assets/file/upload",
                      headers=svc.headers(), data=b"raw body", timeout=30)
    assert r.status_code == 400
    r = requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/assets/file/upload",
                      files={"files": ("x.txt", b"x")}, timeout=30)
    assert r.status_code == 401
    assert _upload(svc, "video", "x.txt", b"x").status_code == 404
    svc.emulation.upload_limit_bytes = 1000
    assert _upload(svc, "file", "big.bin", b"x" * 5000).status_code == 413
    assert _upload(svc, "file", "small.bin", b"x" * 500).status_code == 200


def test_file_name_sanitized(service: LocalService) -> None:
    r = _upload(service, "file", "../../etc/pass wd", b"secret-ish")
    assert r.status_code == 200
    asset = r.json()
    assert "/" not in asset["filename"] and ".." not in asset["filename"]
    assert requests.get(asset["public_url"], timeout=30).content == b"secret-ish"
    assert not (service.data_dir.parent / "etc").exists()
    r = _upload(service, "file", "..\\..\\win.ini", b"x")
    assert r.status_code == 200 and "\\" not in r.json()["filename"]
