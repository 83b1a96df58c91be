"""read_object / read_view against the local service over loopback HTTP."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
import requests

from svc_frames.errors import AuthenticationError, Forbidden, NotFound, UsageError
from svc_frames.filters import Field
from svc_frames.frames import Frames
from svc_frames.loaders import read_object, read_view
from svc_frames.records import Client
from svc_frames.server import LocalService

NUMERIC = {"number", "currency", "equation", "sum", "count", "average", "min", "max", "rating"}
TEXT = {"short_text", "paragraph_text", "rich_text", "concatenation", "email", "phone", "link",
        "signature"}


def truth(svc: LocalService, path: str, token: str | None = None,
          **params: Any) -> list[dict[str, Any]]:
    """All records straight from the service (plain requests, page by page)."""
    out: list[dict[str, Any]] = []
    page = 1
    while True:
        r = requests.get(svc.base_url + path, headers=svc.headers(view="/pages/" in path,
                                                                  token=token),
                         params={"page": page, "rows_per_page": 1000, **params}, timeout=30)
        r.raise_for_status()
        body = r.json()
        out.extend(body["records"])
        if page >= body["total_pages"]:
            return out
        page += 1


def schema(svc: LocalService) -> dict[str, Any]:
    r = requests.get(f"{svc.base_url}/v1/applications/{svc.app_id}", timeout=30)
    return r.json()["application"]


def kinds_of(svc: LocalService, object_key: str) -> dict[str, dict[str, Any]]:
    obj = next(o for o in schema(svc)["objects"] if o["key"] == object_key)
    return {f["key"]: f for f in obj["fields"]}


def make_client(svc: LocalService, **kw: Any) -> Client:
    kw.setdefault("rate_limit", 0)
    kw.setdefault("backoff", 0.01)
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, **kw)


# ---- every kind, the right dtype ----------------------------------------------------------
def test_every_kind_gets_its_dtype(service: LocalService, client: Client) -> None:
    frames = read_object(client, "object_3", progress=False, columns="keys")
    main = frames.main
    expected = truth(service, "/v1/objects/object_3/records")
    assert sorted(main.index) == sorted(r["id"] for r in expected)
    assert main.index.is_unique and main.index.dtype == "string" and main.index.name == "id"
    seen = set()
    for key, f in kinds_of(service, "object_3").items():
        kind = f["type"]
        seen.add(kind)
        if kind in NUMERIC:
            assert main[key].dtype == "Float64", key
        elif kind in TEXT:
            assert main[key].dtype == "string", key
        elif kind == "auto_increment":
            assert main[key].dtype == "Int64", key
        elif kind == "boolean":
            assert main[key].dtype == "boolean", key
        elif kind == "multiple_choice":
            if (f.get("format") or {}).get("type") == "multi":
                assert main[key].dtype == object and key in frames.tables
                assert all(v is None or isinstance(v, list) for v in main[key])
            else:
                assert main[key].dtype == "string", key
        elif kind == "date_time":
            assert isinstance(main[key].dtype, pd.DatetimeTZDtype), key
            assert frames.source is not None
            assert str(main[key].dt.tz) == frames.source.timezone
        elif kind == "timer":
            assert pd.api.types.is_timedelta64_dtype(main[f"{key}.total"]), key
        elif kind == "name":
            assert {f"{key}.first", f"{key}.last"} <= set(main.columns)
        elif kind == "address":
            assert main[f"{key}.latitude"].dtype == "Float64"
            assert main[f"{key}.city"].dtype == "string"
        elif kind in ("file", "image") and (f.get("format") or {}).get("source") != "url":
            assert main[f"{key}.size"].dtype == "Int64", key
        elif kind == "connection":
            assert key not in main.columns
            assert list(frames.tables[key].columns) == ["record_id", "connected_id",
                                                        "identifier"]
    assert len(seen) >= 20  # the demo object holds every kind
    # values agree with the raw records
    by_id = {r["id"]: r for r in expected}
    rid = main.index[0]
    assert main.loc[rid, "field_12"] == by_id[rid]["field_12_raw"]
    conn = frames.tables["field_41"]
    want = {(r["id"], c["id"]) for r in expected for c in r.get("field_41_raw") or []}
    assert set(zip(conn["record_id"], conn["connected_id"], strict=True)) == want
    assert frames.original is not None
    pd.testing.assert_frame_equal(frames.original.main, main)


def test_empty_values_are_na_not_blank_strings(client: Client) -> None:
    main = read_object(client, "object_3", progress=False, columns="keys").main
    for col in main.columns:
        if main[col].dtype == "string":
            assert not (main[col] == "").any(), col


def test_labels(client: Client) -> None:
    frames = read_object(client, "object_2", columns="labels", progress=False)
    assert {"Part Name", "Unit Price", "In Stock", "Part No"} <= set(frames.main.columns)
    assert frames.source is not None and frames.source.columns == "labels"


def test_inferred_kinds_without_schema(service: LocalService, client: Client) -> None:
    blind = make_client(service, use_schema=False)
    inferred = read_object(blind, "object_2", progress=False, columns="keys")
    known = read_object(client, "object_2", progress=False, columns="keys")
    assert inferred.source is not None and inferred.source.kinds_inferred
    assert inferred.main["field_9"].dtype == "Float64"  # currency from "$1.00" + "1.00"
    pd.testing.assert_series_equal(inferred.main["field_9"], known.main["field_9"])
    pd.testing.assert_series_equal(inferred.main["field_8"], known.main["field_8"])


# ---- views ---------------------------------------------------------------------------------
def test_view_sees_only_its_fields(service: LocalService, client: Client) -> None:
    frames = read_view(client, "scene_1", "view_1", progress=False, columns="keys")
    scene = next(s for s in schema(service)["scenes"] if s["key"] == "scene_1")
    view = next(v for v in scene["views"] if v["key"] == "view_1")
    view_keys = {c["field"]["key"] for c in view["columns"]}
    assert set(frames.main.columns) == view_keys
    expected = truth(service, "/v1/pages/scene_1/views/view_1/records")
    assert sorted(frames.main.index) == sorted(r["id"] for r in expected)
    assert frames.source is not None and frames.source.kind == "view"
    assert frames.source.object_key == "object_3"
    assert (frames.source.scene_key, frames.source.view_key) == ("scene_1", "view_1")
    assert frames.source.name == view["name"]  # for titles: the schema's name, not the key
    obj = next(o for o in schema(service)["objects"] if o["key"] == "object_3")
    assert read_object(client, "object_3", limit=1, progress=False, columns="keys").source.name == obj["name"]


def test_login_view_name_like_connection(service: LocalService) -> None:
    client = make_client(service)
    manager = next(u for u in service.users if "profile_2" in u["profile_keys"])
    client.login(manager["email"], manager["password"])
    frames = read_view(client, "scene_2", "view_3", progress=False, columns="keys")
    raw = truth(service, "/v1/pages/scene_2/views/view_3/records", token=client.token)
    shapes = [c for r in raw for c in r.get("field_42_raw") or []]
    assert shapes and all("id" not in c for c in shapes)  # the name-like shape
    table = frames.tables["field_42"]
    people = {r["id"] for r in truth(service, "/v1/objects/object_1/records")}
    assert len(table) == len(shapes) and set(table["connected_id"]) <= people
    # the same links as an object load of the same records
    full = read_object(client, "object_3", progress=False, columns="keys").tables["field_42"]
    full = full[full["record_id"].isin(frames.main.index)]
    assert (set(zip(full["record_id"], full["connected_id"], strict=True))
            == set(zip(table["record_id"], table["connected_id"], strict=True)))


def test_login_view_without_token_says_log_in(client: Client) -> None:
    with pytest.raises((Forbidden, AuthenticationError)) as exc:
        read_view(client, "scene_2", "view_3", progress=False, columns="keys")
    assert "login" in str(exc.value)


def test_expired_token_says_log_in_again(fresh_service: LocalService) -> None:
    client = make_client(fresh_service)
    fresh_service.set_token_ttl(-60)  # tokens are born expired: no waiting on the clock
    user = fresh_service.users[0]
    client.login(user["email"], user["password"])
    with pytest.raises(Forbidden, match="log in again"):
        read_view(client, "scene_3", "view_5", progress=False, columns="keys")


def test_wrong_login(client: Client, service: LocalService) -> None:
    with pytest.raises(AuthenticationError) as exc:
        client.login(service.users[0]["email"], "wrong password")
    assert "wrong password" not in str(exc.value)


# ---- bad input ---------------------------------------------------------------------------
def test_unknown_object_named(client: Client, service: LocalService) -> None:
    # the schema is in before page 1 (read for the keyset pass): refused before any
    # record request
    with pytest.raises(UsageError, match=r"unknown object 'object_99'.*'Work Orders' "
                                         r"\(object_3\)") as raised:
        read_object(client, "object_99", progress=False)
    assert raised.value.__context__ is None
    # a sorted load of a fresh client does not wait for the schema: the service's 404, told
    fresh = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                   rate_limit=0)
    with pytest.raises(UsageError, match=r"unknown object 'object_99'") as raised:
        read_object(fresh, "object_99", progress=False, sort_field="field_1")
    assert isinstance(raised.value.__context__, NotFound)


def test_unknown_view_named(client: Client) -> None:
    with pytest.raises(UsageError, match=r"unknown view scene_1/view_99.*svc_frames.views"):
        read_view(client, "scene_1", "view_99", progress=False, columns="keys")


def test_wrong_key(service: LocalService) -> None:
    client = Client(service.app_id, api_key="not-the-key", base_url=service.base_url,
                    rate_limit=0)
    with pytest.raises(AuthenticationError) as exc:
        read_object(client, "object_2", progress=False, columns="keys")
    assert "not-the-key" not in str(exc.value)


@pytest.mark.parametrize("kwargs, culprit", [
    ({"rows_per_page": 1001}, "rows_per_page"),
    ({"filters": [{"field": "field_27", "operator": "resembles", "value": "x"}]}, "resembles"),
    ({"filters": [{"field": "Stauts", "operator": "is", "value": "x"}]},
     r"did you mean 'Status' \(field_27\)"),
    ({"filters": [{"field": "field_999", "operator": "is blank"}]}, "no field 'field_999'"),
    ({"columns": "names"}, "columns"),
    ({"timezone": "Mars/Olympus"}, "Mars/Olympus"),
    ({"limit": -1}, "limit"),
])
def test_bad_arguments_before_any_request(service: LocalService, client: Client,
                                          kwargs: dict[str, Any], culprit: str) -> None:
    client.schema()  # a field named by label or checked by key needs it (read once)
    before = client.request_count
    with pytest.raises(UsageError, match=culprit):
        read_object(client, "object_3", progress=False, **kwargs)
    assert client.request_count == before


# ---- filters, sort, limit --------------------------------------------------------------------
def test_filters_and_builder(service: LocalService, client: Client) -> None:
    flt = [{"field": "field_27", "operator": "is", "value": "Open"}]
    frames = read_object(client, "object_3", filters=flt, progress=False, columns="keys")
    import json
    expected = truth(service, "/v1/objects/object_3/records", filters=json.dumps(flt))
    assert sorted(frames.main.index) == sorted(r["id"] for r in expected)
    assert len(frames.main) and (frames.main["field_27"] == "Open").all()
    built = read_object(client, "object_3", filters=[Field("field_27") == "Open"],
                        progress=False, columns="keys")
    pd.testing.assert_frame_equal(built.main, frames.main)


def test_sort_and_limit(client: Client) -> None:
    frames = read_object(client, "object_3", sort_field="field_24", sort_order="desc",
                         limit=7, rows_per_page=3, progress=False, columns="keys")
    numbers = list(frames.main["field_24"])
    assert len(numbers) == 7 and numbers == sorted(numbers, reverse=True)
    for table in frames.tables.values():
        assert set(table["record_id"]) <= set(frames.main.index)


def test_no_match_gives_empty_typed_frame(client: Client) -> None:
    frames = read_object(client, "object_3", progress=False,
                         filters=[Field("field_12") == "no such title anywhere"], columns="keys")
    assert len(frames.main) == 0
    assert frames.main["field_16"].dtype == "Float64"


def test_progress_bar_on_request(client: Client, capsys: pytest.CaptureFixture[str]) -> None:
    read_object(client, "object_2", rows_per_page=5, progress=True, columns="keys")
    assert "page" in capsys.readouterr().err


# ---- faults --------------------------------------------------------------------------------
@pytest.mark.parametrize("processes", [0, 1])
def test_faults_give_the_same_frames(fresh_service: LocalService, processes: int) -> None:
    """Also with a helper process decoding raw pages (processes=1)."""
    clean = read_object(make_client(fresh_service), "object_3", rows_per_page=5,
                        progress=False, processes=0, columns="keys")
    fresh_service.emulation.fault_rate = 0.2
    fresh_service.request_log.clear()
    faulty_client = make_client(fresh_service, max_retries=8)
    faulty = read_object(faulty_client, "object_3", rows_per_page=5, progress=False,
                         processes=processes, columns="keys")
    fresh_service.emulation.fault_rate = 0.0
    assert faulty_client.retry_count > 0  # faults did happen
    assert_same(faulty, clean)


def assert_same(a: Frames, b: Frames) -> None:
    pd.testing.assert_frame_equal(a.main, b.main)
    assert set(a.tables) == set(b.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])


def test_timezone_given_by_the_user(client: Client) -> None:
    """Raw timestamps are local wall clock labelled UTC: another zone keeps the wall clock
    and changes the instant."""
    app_tz = read_object(client, "object_3", limit=20, progress=False, columns="keys").main["field_29"]
    paris = read_object(client, "object_3", limit=20, timezone="Europe/Paris",
                        progress=False, columns="keys").main["field_29"]
    assert str(paris.dt.tz) == "Europe/Paris"
    pd.testing.assert_series_equal(paris.dt.tz_localize(None), app_tz.dt.tz_localize(None))
    assert app_tz.notna().any()


def test_deployment_without_schema_infers_kinds(fresh_service: LocalService) -> None:
    with_schema = read_object(make_client(fresh_service), "object_3", progress=False, columns="keys")
    fresh_service.emulation.expose_schema = False
    try:
        # pages of 7: kinds inferred from every record, each page decoded with them
        blind = read_object(make_client(fresh_service), "object_3", progress=False,
                            rows_per_page=7, columns="keys")
    finally:
        fresh_service.emulation.expose_schema = True
    assert blind.source is not None and blind.source.kinds_inferred
    assert with_schema.source is not None and not with_schema.source.kinds_inferred
    assert list(blind.main.index) == list(with_schema.main.index)
    for key in ("field_12", "field_16", "field_26", "field_34.latitude"):
        assert blind.main[key].dtype == with_schema.main[key].dtype, key
    assert "field_41" in blind.tables  # connections found from their raw shape


# ---- format=raw pages ------------------------------------------------------------------------
def page_urls(client: Client) -> list[str]:
    """The URLs of the record-list requests this client sends from now on."""
    urls: list[str] = []
    client.session.hooks["response"].append(
        lambda r, *a, **k: urls.append(r.url) if "/records" in r.url else None)
    return urls


@pytest.mark.parametrize(("target", "rows", "columns"), [
    ("object_1", 3, "keys"), ("object_3", 20, "keys"), ("object_3", 30, "labels"),
    (("scene_1", "view_1"), 10, "keys")])
def test_pages_after_the_first_come_raw_and_decode_the_same(service: LocalService,
                                                            target: Any, rows: int,
                                                            columns: Any) -> None:
    """Page 1 shows raw values will do: later pages are asked for with format=raw (the
    slow start has pages 2-5 on the way already) and the frames equal a both-format load."""
    from svc_frames.read.load import load

    client = make_client(service)
    urls = page_urls(client)
    fast = load(client, target, rows_per_page=rows, progress=False, columns=columns)
    assert "format=raw" not in urls[0]
    raw = sum("format=raw" in u for u in urls)
    assert raw >= 1 and raw >= len(urls) - 5
    slow_client = make_client(service)
    slow_urls = page_urls(slow_client)
    slow = load(slow_client, target, rows_per_page=rows, progress=False, raw_pages=False,
                columns=columns)
    assert not any("format=raw" in u for u in slow_urls)
    assert_same(fast, slow)


def test_with_the_schema_in_every_page_after_the_first_comes_raw(service: LocalService) -> None:
    """When the schema is in by the time page 1 is (here: fetched before), the loader
    settles the format before page 2 is requested: no page but the first (and the
    verification re-read of page 1, which follows the format) has display values."""
    client = make_client(service)
    assert client.schema()
    urls = page_urls(client)
    fast = read_object(client, "object_3", rows_per_page=20, progress=False, columns="keys")
    # page 1, then the ranges of the auto-increment field (each its own page 1: keyset.py)
    # (and the one row of the largest value, beside page 1, in page 1's format)
    first = [u for u in urls if "rows_per_page=1&" not in u and not u.endswith(
        "rows_per_page=1")]
    pages = first[1:]
    assert "format=raw" not in first[0] and len(pages) >= 5
    assert all("format=raw" in u for u in pages)
    slow_client = make_client(service)
    slow = read_object(slow_client, "object_3", rows_per_page=20, progress=False, processes=0, columns="keys")
    assert_same(fast, slow)


def test_a_schema_slower_than_page_one_delays_no_request(service: LocalService) -> None:
    """The schema comes after page 1 (held back here until page 2 is answered): page 2 is
    requested without waiting for it, with display values, and the load decodes the same.
    (A sorted load pages by number; an unsorted object load needs the schema before page
    1, to page by ranges of its auto-increment field.)"""
    import threading

    client = make_client(service)
    urls = page_urls(client)
    page_two = threading.Event()
    client.session.hooks["response"].append(
        lambda r, *a, **k: page_two.set() if "page=2&" in r.url else None)
    fetch_schema = client.schema

    def slow_schema(*, refresh: bool = False) -> Any:
        assert page_two.wait(30), "page 2 was not requested before the schema came"
        return fetch_schema(refresh=refresh)

    client.schema = slow_schema  # type: ignore[method-assign]
    slow = read_object(client, "object_3", rows_per_page=20, progress=False,
                       sort_field="field_12", columns="keys")
    second = next(u for u in urls if "page=2&" in u)
    assert "format=raw" not in second
    assert any("format=raw" in u for u in urls)  # settled with page 1: the rest come raw
    plain = read_object(make_client(service), "object_3", rows_per_page=20, progress=False,
                        processes=0, sort_field="field_12", columns="keys")
    assert_same(slow, plain)


def test_name_like_connection_pages_keep_display_values(service: LocalService) -> None:
    """A view whose connections are name-like (ids only in the display HTML) is never read
    from raw pages; had page 1 looked fine, a raw page showing one is fetched again with
    display values (the check is forced past page 1 here)."""
    import svc_frames.read.load as loaders
    import svc_frames.read.pipeline as pipeline

    manager = next(u for u in service.users if "profile_2" in u["profile_keys"])
    client = make_client(service)
    client.login(manager["email"], manager["password"])
    urls = page_urls(client)
    plain = loaders.load(client, ("scene_2", "view_3"), rows_per_page=10, progress=False,
                         columns="keys")
    assert not any("format=raw" in u for u in urls)

    real = pipeline.decodes_raw_alone  # the format decision is the pipeline's

    def page_one_looks_fine(records: Any, fields: Any) -> bool:
        return True  # raw pages are then checked by build_frames (DisplayValuesNeeded)

    urls.clear()
    pipeline.decodes_raw_alone = page_one_looks_fine  # type: ignore[assignment]
    try:
        again = loaders.load(client, ("scene_2", "view_3"), rows_per_page=10, progress=False,
                             columns="keys")
    finally:
        pipeline.decodes_raw_alone = real
    assert any("format=raw" in u for u in urls)  # raw pages were asked for ...
    assert_same(again, plain)  # ... and fetched again with display values
    assert again.tables["field_42"]["connected_id"].notna().all()


def test_helper_processes_by_default_only_when_one_core_falls_behind(
        fresh_service: LocalService, monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper for 8+ pages when unpaced or paced at 20+ requests/s on 3+ cores with one
    idle beyond this process and the service; none at the hosted 10/s (one core decodes
    faster than pages come), for a short load, on 2 cores (the helper would share the
    local service's core), or when the machine's cores are busy (it would only compete).
    (A service of its own: clients of one application share a limiter, and another
    test's slower client would lower this one's pace.)"""
    service = fresh_service
    import os

    from svc_frames.read.pager import Page, Paginator
    from svc_frames.read.pipeline import decode_helpers

    cores = (os.cpu_count() or 1) >= 3
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))

    def helpers(rate: float, pages: int, processes: int | None = None) -> int:
        pager = Paginator(make_client(service, rate_limit=rate), "object_3", rows_per_page=10)
        first = Page(1, [{"id": "x"}] * 10, total_pages=pages, total_records=pages * 10)
        return decode_helpers(processes, pager, first)

    assert helpers(0, 50) == helpers(50, 50) == (1 if cores else 0)
    assert helpers(10, 50) == 0 and helpers(0, 7) == 0
    assert helpers(10, 50, processes=2) == 2 and helpers(0, 50, processes=0) == 0
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert helpers(0, 50) == 0 and helpers(0, 50, processes=1) == 1
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert helpers(0, 50) == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (float(os.cpu_count() or 1), 0.0, 0.0))
    assert helpers(0, 50) == 0 and helpers(0, 50, processes=1) == 1


def test_read_view_takes_scene_slash_view_like_the_cli(service: LocalService) -> None:
    client = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                    rate_limit=0)
    manager = next(u for u in service.users if "manager" in u["email"])
    client.login(manager["email"], manager["password"])
    one = read_view(client, "scene_2/view_3", progress=False, columns="keys")
    two = read_view(client, "scene_2", "view_3", progress=False, columns="keys")
    # the same source but for when each load started (a second boundary may fall between)
    assert one.source is not None and two.source is not None
    assert one.source.load and two.source.load
    one.source.load["loaded_at"] = two.source.load["loaded_at"]
    assert one.source == two.source and len(one.main) == len(two.main) > 0
    pd.testing.assert_frame_equal(one.main, two.main)
    sent = client.request_count
    for bad in ("object_3", "scene_2/", "view_3"):
        with pytest.raises(UsageError) as exc:
            read_view(client, bad, progress=False, columns="keys")
        assert bad.rstrip("/") in str(exc.value) and "scene_N" in str(exc.value)
    assert client.request_count == sent  # refused before any request
