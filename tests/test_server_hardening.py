"""What a client can send never gets a 500 and is refused naming the culprit; the OpenAPI
document's 405 answers are right; a data directory keeps no secret readable by others or in
plain text; downloads cannot run script from the service's address.

Every request goes over loopback HTTP (raw sockets where the HTTP client would refuse to
send it). The limits: JSON bodies ``MAX_JSON_BODY_BYTES`` (1 MiB), request lines
``MAX_REQUEST_LINE_BYTES`` (8 KiB).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from svc_frames.server import LocalService
from svc_frames.server.protocol import MAX_REQUEST_LINE_BYTES
from svc_frames.server.routes.http import MAX_JSON_BODY_BYTES
from svc_frames.testing import create, login, object_url, view_url

JSON = {"content-type": "application/json"}


def raw_request(svc: LocalService, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """Send bytes as they are; (status, response head and body) of the answer."""
    with socket.create_connection(("127.0.0.1", svc.port), timeout=30) as sock:
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + int(
                _header(data, b"content-length") or 0):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def _header(data: bytes, name: bytes) -> bytes | None:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def post_text(svc: LocalService, url: str, text: str, headers: dict[str, str] | None = None
              ) -> requests.Response:
    """POST a JSON text exactly as written (escapes such as \\ud800 kept)."""
    return requests.post(url, data=text.encode(), headers={**JSON, **(headers or {})},
                         timeout=30)


def message(r: requests.Response) -> str:
    return " ".join(e["message"] for e in r.json()["errors"])


# ---- no 500: the bad-input catalogue ----------------------------------------------------
BAD_BODIES = [
    # (JSON text, the field the answer names, or None, words of its message)
    ('{"field_12": "\\ud800"}', "field_12", "surrogate"),
    ('{"field_12": "ok \\udfff end"}', "field_12", "surrogate"),
    ('{"field_28": ["Plumbing", "\\ud800"]}', "field_28", "surrogate"),
    ('{"\\ud800": "x"}', None, "surrogate"),
    ('{"field_16": NaN}', "field_16", "finite"),
    ('{"field_16": Infinity}', "field_16", "finite"),
    ('{"field_16": -Infinity}', "field_16", "finite"),
    ('{"field_34": {"street": "1 Main", "latitude": NaN}}', "field_34", "finite"),
]


@pytest.mark.parametrize(("text", "field", "words"), BAD_BODIES)
def test_bad_bodies_are_refused_naming_the_field(service: LocalService, text: str,
                                                 field: str | None, words: str) -> None:
    before = requests.get(object_url(service, "object_3"), headers=service.headers(),
                          timeout=30).json()["total_records"]
    rec = create(service, "object_3", {"field_12": "bad bodies"})
    r = requests.put(object_url(service, "object_3", rec["id"]), data=text.encode(),
                     headers={**JSON, **service.headers()}, timeout=30)
    assert r.status_code == 400, r.text
    r = post_text(service, object_url(service, "object_3"), text, service.headers())
    assert r.status_code == 400
    assert words in message(r)
    if field:
        assert r.json()["errors"][0]["field"] == field and field in message(r)
    after = requests.get(object_url(service, "object_3"), headers=service.headers(),
                         timeout=30).json()["total_records"]
    assert after == before + 1  # the refused create wrote nothing


def test_nan_does_not_clear_a_number(service: LocalService) -> None:
    rec = create(service, "object_3", {"field_12": "nan check", "field_16": 7})
    r = requests.put(object_url(service, "object_3", rec["id"]), data=b'{"field_16": NaN}',
                     headers={**JSON, **service.headers()}, timeout=30)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "field_16"
    again = requests.get(object_url(service, "object_3", rec["id"]), headers=service.headers(),
                         timeout=30).json()
    assert again["field_16_raw"] == 7


def test_surrogates_in_a_login(service: LocalService) -> None:
    url = f"{service.base_url}/v1/applications/{service.app_id}/session"
    r = post_text(service, url, '{"email": "\\ud800@example.com", "password": "x"}')
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "email"
    r = post_text(service, url, '{"email": "manager@example.com", "password": "\\udc00"}')
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "password"


def test_json_body_over_the_limit_is_413_before_parsing(service: LocalService) -> None:
    url = object_url(service, "object_3")
    big = json.dumps({"field_13": "x" * MAX_JSON_BODY_BYTES}).encode()
    r = requests.post(url, data=big, headers={**JSON, **service.headers()}, timeout=60)
    assert r.status_code == 413 and str(MAX_JSON_BODY_BYTES) in message(r)
    # without a declared length (chunked), the count stops the read
    r = requests.post(url, data=iter([big[i:i + 65536] for i in range(0, len(big), 65536)]),
                      headers={**JSON, **service.headers()}, timeout=60)
    assert r.status_code == 413
    # not JSON at all, but too large: the size is what is refused (nothing was parsed)
    status, _ = raw_request(service, (
        f"POST /v1/objects/object_3/records HTTP/1.1\r\nHost: x\r\n"
        f"X-Service-Application-Id: {service.app_id}\r\n"
        f"X-Service-REST-API-KEY: {service.api_key}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {MAX_JSON_BODY_BYTES + 1}\r\nConnection: close\r\n\r\n").encode(),
        b"{" * (MAX_JSON_BODY_BYTES + 1))
    assert status == 413
    # just under the limit is served
    ok = json.dumps({"field_12": "y", "field_13": "x" * (MAX_JSON_BODY_BYTES - 100)})
    r = requests.post(url, data=ok, headers={**JSON, **service.headers()}, timeout=60)
    assert r.status_code == 200


@pytest.mark.parametrize("length", [MAX_REQUEST_LINE_BYTES + 1, 70_000, 3_000_000])
def test_request_line_too_long_is_414(service: LocalService, length: int) -> None:
    target = "/v1/objects/object_3/records?filters="
    line = f"GET {target}{'a' * (length - len(target) - 13)} HTTP/1.1\r\n".encode()
    assert len(line) - 2 == length > MAX_REQUEST_LINE_BYTES
    status, data = raw_request(service, line + b"Host: x\r\n\r\n")
    assert status == 414
    assert b"request line" in data.split(b"\r\n\r\n", 1)[1]


def test_request_line_at_the_limit_is_served(service: LocalService) -> None:
    target = "/v1/objects/object_3/records?rows_per_page=1&sort_field="
    head = (f"X-Service-Application-Id: {service.app_id}\r\n"
            f"X-Service-REST-API-KEY: {service.api_key}\r\nHost: x\r\nConnection: close\r\n")
    pad = MAX_REQUEST_LINE_BYTES - len(f"GET {target} HTTP/1.1")
    status, _ = raw_request(service, f"GET {target}{'f' * pad} HTTP/1.1\r\n{head}\r\n".encode())
    assert status == 400  # served: the unknown sort field is named, not the line refused


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded",
                                   "text/plain; charset=utf-8", "application/xml"])
def test_json_sent_as_another_media_type_is_415(service: LocalService, ctype: str) -> None:
    for url, headers in ((object_url(service, "object_3"), service.headers()),
                         (f"{service.base_url}/v1/applications/{service.app_id}/session", {})):
        r = requests.post(url, data=b'{"field_12": "x", "email": "a", "password": "b"}',
                          headers={**headers, "content-type": ctype}, timeout=30)
        assert r.status_code == 415, r.text
        assert ctype.split(";")[0] in message(r)


@pytest.mark.parametrize("page", ["١", "²", "٣", "+1", " 1", "1_0", "0x1", "1.0", "-1"])
def test_page_numbers_are_ascii_digits(service: LocalService, page: str) -> None:
    for name in ("page", "rows_per_page"):
        r = requests.get(object_url(service, "object_3"), params={name: page},
                         headers=service.headers(), timeout=30)
        assert r.status_code == 400 and name in message(r) and repr(page) in message(r)
    r = requests.get(view_url(service, "scene_1", "view_1"), params={"page": page},
                     headers=service.headers(view=True), timeout=30)
    assert r.status_code == 400


def test_huge_page_numbers_are_out_of_range(service: LocalService) -> None:
    r = requests.get(object_url(service, "object_3"), params={"page": "9" * 5000},
                     headers=service.headers(), timeout=30)
    assert r.status_code == 400 and "range" in message(r)


def test_405_lists_every_allowed_method(service: LocalService) -> None:
    r = requests.delete(object_url(service, "object_3"), headers=service.headers(), timeout=30)
    assert r.status_code == 405
    assert set(r.headers["allow"].split(", ")) == {"GET", "POST"}
    r = requests.patch(object_url(service, "object_3", "x"), headers=service.headers(),
                       timeout=30)
    assert r.status_code == 405
    assert set(r.headers["allow"].split(", ")) == {"GET", "PUT", "DELETE"}


# ---- secrets at rest ---------------------------------------------------------------------
@pytest.fixture()
def own_dir(tmp_path: Path) -> Iterator[LocalService]:
    with LocalService(records=5, data_dir=tmp_path / "data") as svc:
        yield svc


def test_data_directory_is_owner_only(own_dir: LocalService) -> None:
    svc = own_dir
    up = requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/assets/file/upload",
                       files={"files": ("notes.txt", b"private")}, headers=svc.headers(),
                       timeout=30)
    assert up.status_code == 200
    login(svc, 0)
    modes = {p.relative_to(svc.data_dir).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in [svc.data_dir, *svc.data_dir.rglob("*")]}
    assert "service.db" in modes and "app.json" in modes
    assert any(k.endswith("/content") for k in modes)
    for name, mode in modes.items():
        wanted = 0o700 if (svc.data_dir / name).is_dir() else 0o600
        assert mode == wanted, (name, oct(mode))


def test_app_json_holds_no_password(tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "objects": [{"key": "object_1", "name": "Staff", "type": "UserObject",
                     "profile_key": "profile_1", "fields": [
                         {"key": "field_1", "type": "email", "name": "Email", "unique": True},
                         {"key": "field_2", "type": "password", "name": "Password"}]}],
        "users": [{"object": "object_1", "email": "a@example.com", "password": "pw-Secret-1"}]}
    for kind, opts in (("demo", {}), ("custom", {"app": doc, "demo": False, "records": 0})):
        data = tmp_path / kind
        with LocalService(data_dir=data, **opts) as svc:  # type: ignore[arg-type]
            first = svc.users
            password = first[0]["password"]
            assert password and login(svc, 0)
        stored = (data / "app.json").read_text()
        assert password not in stored
        assert "Manager-2024!" not in stored and "Tech-2024!" not in stored
        with LocalService(data_dir=data) as svc:  # reopened: the hashes still log in
            url = f"{svc.base_url}/v1/applications/{svc.app_id}/session"
            r = requests.post(url, json={"email": first[0]["email"], "password": password},
                              timeout=30)
            assert r.status_code == 200
            # the demo's passwords are published; a custom document's are not kept
            assert svc.users[0]["password"] == (password if kind == "demo" else None)


def test_app_json_written_before_is_scrubbed(tmp_path: Path) -> None:
    with LocalService(records=3, data_dir=tmp_path):
        pass
    meta = json.loads((tmp_path / "app.json").read_text())
    meta["document"]["users"][0]["password"] = "Manager-2024!"  # as older versions wrote it
    (tmp_path / "app.json").write_text(json.dumps(meta))
    os.chmod(tmp_path / "app.json", 0o644)
    with LocalService(data_dir=tmp_path) as svc:
        assert svc.users[0]["password"] == "Manager-2024!"
    assert "Manager-2024!" not in (tmp_path / "app.json").read_text()
    assert stat.S_IMODE((tmp_path / "app.json").stat().st_mode) == 0o600


def test_user_tokens_are_stored_hashed(own_dir: LocalService) -> None:
    svc = own_dir
    token = login(svc, 0)
    db = (svc.data_dir / "service.db").read_bytes() + b"".join(
        p.read_bytes() for p in svc.data_dir.glob("service.db-wal"))
    assert token.encode() not in db
    assert hashlib.sha256(token.encode()).hexdigest().encode() in db
    r = requests.get(view_url(svc, "scene_3", "view_5"),
                     headers=svc.headers(view=True, token=token), timeout=30)
    assert r.status_code == 200  # compared by hash
    forged = hashlib.sha256(token.encode()).hexdigest()  # the stored value is no token
    r = requests.get(view_url(svc, "scene_3", "view_5"),
                     headers=svc.headers(view=True, token=forged), timeout=30)
    assert r.status_code == 403


@pytest.mark.parametrize(("name", "content"), [
    ("page.html", b"<html><script>alert(document.cookie)</script></html>"),
    ("logo.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    ("data.bin", b"\x00\x01"),
])
def test_downloads_are_attachments_without_sniffing(service: LocalService, name: str,
                                                    content: bytes) -> None:
    up = requests.post(f"{service.base_url}/v1/applications/{service.app_id}/assets/file/"
                       "upload", files={"files": (name, content)}, headers=service.headers(),
                       timeout=30)
    assert up.status_code == 200
    r = requests.get(up.json()["public_url"], timeout=30)
    assert r.content == content
    assert r.headers["content-disposition"].startswith("attachment")
    assert name in r.headers["content-disposition"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_an_image_that_is_not_one_is_refused(service: LocalService) -> None:
    r = requests.post(f"{service.base_url}/v1/applications/{service.app_id}/assets/image/"
                      "upload", files={"files": ("x.svg", b"<svg><script/></svg>")},
                      headers=service.headers(), timeout=30)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "files"


# ---- text that is not text: every place the service reads it -----------------------------
_SURROGATE_FILTERS = [
    # (the filters parameter as the client writes it, the place the answer names)
    ('[{"field": "field_12", "operator": "is", "value": "\\ud800"}]', "filters[0].value"),
    ('[{"field": "\\ud800", "operator": "is", "value": "x"}]', "filters[0].field"),
    ('{"match": "or", "rules": [{"field": "field_27", "operator": "is any", '
     '"value": ["Open", "\\udfff"]}]}', "filters.rules[0].value[1]"),
    ('[{"\\ud800": 1, "field": "field_12", "operator": "is", "value": "x"}]', "filters[0]"),
]


@pytest.mark.parametrize(("filters", "where"), _SURROGATE_FILTERS)
@pytest.mark.parametrize("view", [False, True])
def test_a_lone_surrogate_in_filters_is_400_naming_them(service: LocalService, filters: str,
                                                        where: str, view: bool) -> None:
    # a public view needs only the application id: anyone may send this
    url = (view_url(service, "scene_1", "view_1") if view
           else object_url(service, "object_3"))
    r = requests.get(url, params={"filters": filters}, headers=service.headers(view=view),
                     timeout=30)
    assert r.status_code == 400, r.text
    assert r.json()["errors"][0]["field"] == "filters"
    assert where in message(r) and "surrogate" in message(r)


@pytest.mark.parametrize("query", ["filters=%5B%7B%22field%22%3A%22field_12%22%2C%22operator"
                                   "%22%3A%22is%22%2C%22value%22%3A%22%ED%A0%80%22%7D%5D",
                                   "sort_field=%ED%A0%80", "format=%FF", "page=%C3"])
def test_query_bytes_that_are_not_utf8_are_400_naming_the_parameter(
        service: LocalService, query: str) -> None:
    # the HTTP layer would read them as U+FFFD and go on with other text than was sent
    r = requests.get(f"{object_url(service, 'object_3')}?{query}", headers=service.headers(),
                     timeout=30)
    name = query.split("=")[0]
    assert r.status_code == 400, r.text
    assert r.json()["errors"][0]["field"] == name and repr(name) in message(r)


def test_path_bytes_that_are_not_utf8_are_400(service: LocalService) -> None:
    for path in ("/v1/objects/object_3/records/%ED%A0%80", "/v1/objects/%FF/records"):
        r = requests.get(service.base_url + path, headers=service.headers(), timeout=30)
        assert r.status_code == 400 and "path" in message(r), r.text


# ---- answers are built from the configured base URL, never from the Host header --------
@pytest.mark.parametrize("host", ['evil"x', 'x","injected":"yes', "attacker.example"])
def test_asset_urls_ignore_the_host_header(service: LocalService, host: str) -> None:
    headers = {**service.headers(), "Host": host}
    up = requests.post(f"{service.base_url}/v1/applications/{service.app_id}/assets/file/"
                       "upload", files={"files": ("host.txt", b"hello")}, headers=headers,
                       timeout=30)
    assert up.status_code == 200, up.text
    asset = up.json()  # valid JSON, or this raises
    assert "injected" not in asset and asset["public_url"].startswith(service.base_url + "/")
    rec = create(service, "object_3", {"field_12": "host check", "field_37": asset["id"]})
    r = requests.get(object_url(service, "object_3", rec["id"]), headers=headers, timeout=30)
    answer = r.json()
    assert "injected" not in answer
    assert answer["field_37_raw"]["url"].startswith(service.base_url + "/")
    assert host not in r.text


def test_a_configured_public_url_is_used(tmp_path: Path) -> None:
    with LocalService(demo=True, records=0, public_url="https://data.example.org/") as svc:
        up = requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/assets/file/upload",
                           files={"files": ("a.txt", b"a")}, headers=svc.headers(), timeout=30)
        assert up.json()["public_url"].startswith("https://data.example.org/v1/applications/")


# ---- requests that never arrive whole; refusals the client can read ----------------------
@pytest.fixture(scope="module")
def short_deadline() -> Iterator[LocalService]:
    with LocalService(demo=True, records=0, request_timeout_s=0.5) as svc:
        yield svc


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_a_half_sent_request_is_answered_408(short_deadline: LocalService) -> None:
    svc = short_deadline
    h = svc.headers()
    heads = [b"GET /v1/objects/object_3/records HTTP/1.1\r\nHost: x\r\n",
             ("POST /v1/objects/object_3/records HTTP/1.1\r\nHost: x\r\ncontent-type: "
              f"application/json\r\nX-Service-Application-Id: {svc.app_id}\r\n"
              f"X-Service-REST-API-KEY: {h['X-Service-REST-API-KEY']}\r\n"
              'content-length: 100\r\n\r\n{"field_12": ').encode()]
    for head in heads:
        with socket.create_connection(("127.0.0.1", svc.port), timeout=10) as sock:
            sock.sendall(head)
            data = _read_all(sock)  # returns: the service closed the connection
        assert data.startswith(b"HTTP/1.1 408 "), data
        assert json.loads(data.split(b"\r\n\r\n", 1)[1])["errors"][0]["message"]
    assert not [e for e in svc.request_log.entries if e.status >= 500]


def test_an_idle_connection_is_closed(short_deadline: LocalService) -> None:
    with socket.create_connection(("127.0.0.1", short_deadline.port), timeout=10) as sock:
        assert _read_all(sock) == b""


def test_a_whole_request_on_a_kept_connection_is_served(short_deadline: LocalService) -> None:
    svc = short_deadline
    with requests.Session() as session:
        for _ in range(2):
            r = session.get(object_url(svc, "object_3"), headers=svc.headers(), timeout=10)
            assert r.status_code == 200


def test_a_refused_body_is_drained_so_the_client_reads_the_answer(
        service: LocalService) -> None:
    # refused before its body is read, with Connection: close: closing at once would
    # reset the connection under the client's feet while it still sends
    size = 8 * MAX_JSON_BODY_BYTES
    head = (f"POST /v1/objects/object_3/records HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            f"content-type: application/json\r\nX-Service-Application-Id: {service.app_id}\r\n"
            f"X-Service-REST-API-KEY: {service.api_key}\r\ncontent-length: {size}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
        sock.sendall(head.encode())
        chunk = b" " * 65536
        for _ in range(size // len(chunk)):
            sock.sendall(chunk)  # a reset would raise here
        data = _read_all(sock)
    assert data.startswith(b"HTTP/1.1 413 "), data[:200]


def test_a_request_that_is_not_http_gets_the_error_body(service: LocalService) -> None:
    # h11 refuses it before any route; the answer is still the documented JSON shape
    for head in (b"GET /v1/objects/object_3/records HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n",
                 b"GET /v1/objects/object_3/records HTTP/1.1\r\nBad Name: x\r\n\r\n",
                 b"GET /v1/objects/object_3/records HTTP/1.1\r\nX-A: a\nb\r\n\r\n"):
        status, data = raw_request(service, head)
        assert status == 400, data
        assert _header(data, b"content-type") == b"application/json"
        assert json.loads(data.split(b"\r\n\r\n", 1)[1])["errors"][0]["message"]
