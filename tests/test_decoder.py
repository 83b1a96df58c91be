"""PageDecoder: raw pages decoded in helper processes equal pages decoded here; a helper
that dies or fails leaves the load correct; no helper outlives its load."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import requests

from svc_frames.errors import ServerError, UsageError
from svc_frames.frames import Frames, build_frames
from svc_frames.http.body import parse_json
from svc_frames.read.load import load
from svc_frames.read.target import describe
from svc_frames.read.workers import PageDecoder
from svc_frames.records import Client
from svc_frames.schema import Schema
from svc_frames.server import LocalService
from svc_frames.testing import object_url


def raw_pages(svc: LocalService, n: int = 4, rows: int = 50) -> list[bytes]:
    return [requests.get(object_url(svc, "object_3"), headers=svc.headers(), timeout=30,
                         params={"page": p, "rows_per_page": rows, "format": "raw"}).content
            for p in range(1, n + 1)]


@pytest.fixture(scope="module")
def setup(service: LocalService) -> tuple[Client, Any, Any, Any]:
    client = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                    rate_limit=0)
    app = client.schema()
    tz = Schema.of(app).timezone
    first = client.get_page("object_3", rows_per_page=50)["records"]
    fields, source = describe(client, "object_3", app, first, "keys", tz)
    return client, fields, source, tz


@pytest.fixture
def decoder(setup: tuple[Client, Any, Any, Any]) -> Iterator[PageDecoder]:
    _, fields, source, tz = setup
    with PageDecoder(fields, source, tz, helpers=1) as dec:
        assert dec.wait_ready(1, timeout=60)
        yield dec


def same(a: Frames, b: Frames) -> None:
    pd.testing.assert_frame_equal(a.main, b.main)
    assert a.tables.keys() == b.tables.keys()
    for name, table in a.tables.items():
        pd.testing.assert_frame_equal(table, b.tables[name])


def here(setup: tuple[Client, Any, Any, Any], body: bytes) -> Frames:
    _, fields, source, tz = setup
    return build_frames(parse_json(body)["records"], fields, source, tz=tz,
                        keep_original=False, raw_format=True)


def helper_pids() -> set[int]:
    """Helper processes of this process (Linux: from /proc)."""
    out = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and b"svc_frames.read.workers" in cmd and stat[0] != "Z":
            out.add(int(pid))
    return out


def test_helper_pages_equal_pages_decoded_here(service: LocalService, decoder: PageDecoder,
                                               setup: Any) -> None:
    bodies = raw_pages(service)
    # free decoders are taken in turn: this process, then the helper, and so on
    envs = [decoder.decode(b) for b in bodies]
    assert decoder.helper_pages == 2 and decoder.local_pages == 2
    for body, env in zip(bodies, envs, strict=True):
        want = parse_json(body)
        assert env["total_records"] == want["total_records"]
        assert [r["id"] for r in env["records"]] == [r["id"] for r in want["records"]]
        # the auto-increment value stays beside the id: keyset paging reads it
        assert [r["field_24"] for r in env["records"]] == [r["field_24"]
                                                            for r in want["records"]]
        same(env["frames"], here(setup, body))


def test_a_helper_that_dies_is_not_used_again(service: LocalService, decoder: PageDecoder,
                                              setup: Any) -> None:
    bodies = raw_pages(service, n=3)
    for pid in helper_pids():
        os.kill(pid, 9)
    envs = [decoder.decode(b) for b in bodies]
    assert decoder.helper_pages == 0 and decoder.local_pages == 3
    for body, env in zip(bodies, envs, strict=True):
        same(env["frames"], here(setup, body))


def test_helper_errors_are_raised_as_here(decoder: PageDecoder) -> None:
    decoder.decode(b'{"records": []}')  # this process's turn
    with pytest.raises(ValueError):  # the client reports a body that is not JSON
        decoder.decode(b"<html>oops</html>")
    assert decoder.helper_pages == 0  # the helper raised; it still takes work
    decoder.decode(b'{"records": []}')
    assert decoder.decode(b'{"records": [], "total_pages": 0}')["records"] == []
    assert decoder.helper_pages == 1


def test_a_page_needing_display_values_has_no_frames(decoder: PageDecoder) -> None:
    name_like = b'{"records": [{"id": "r1", "field_41": [{"first": "A", "last": "B"}]}]}'
    for _ in range(2):  # once here, once in the helper
        env = decoder.decode(name_like)
        assert env["records"] == [{"id": "r1"}] and env.get("frames") is None
    assert decoder.helper_pages == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_load_with_helpers_equals_load_without_and_leaves_none(service: LocalService) -> None:
    client = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                    rate_limit=0)
    with_helpers = load(client, "object_3", rows_per_page=10, progress=False, processes=2, columns="keys")
    assert not helper_pids()
    without = load(client, "object_3", rows_per_page=10, progress=False, processes=0, columns="keys")
    same(with_helpers, without)


def test_processes_must_be_a_count(client: Client) -> None:
    for bad in (-1, 1.5, "2"):
        with pytest.raises(UsageError, match="processes"):
            load(client, "object_3", processes=bad, columns="keys")  # type: ignore[arg-type]


def test_not_json_through_a_helper_is_a_server_error(service: LocalService,
                                                     setup: Any) -> None:
    """The client turns the helper's ValueError into its usual ServerError."""
    client, fields, source, tz = setup
    with PageDecoder(fields, source, tz, helpers=1) as dec:
        assert dec.wait_ready(1, timeout=60)
        dec.decode(b'{"records": []}')  # this process's turn: the next goes to the helper
        with pytest.raises(ServerError, match="not JSON"):
            client.request("GET", "/docs", parse=dec.decode, key_required=False)
