"""Paging: concurrent fetch, stop conditions, and records moving mid-run (never lost or
duplicated). Mutations are made over HTTP from another thread between page requests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from svc_frames.errors import ConsistencyError, UsageError
from svc_frames.read.pager import Page, Paginator
from svc_frames.records import Client
from svc_frames.server import LocalService


def make_client(svc: LocalService, **kw: Any) -> Client:
    kw.setdefault("rate_limit", 0)
    kw.setdefault("backoff", 0.01)
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, **kw)


def all_ids(svc: LocalService, object_key: str = "object_3") -> list[str]:
    r = requests.get(f"{svc.base_url}/v1/objects/{object_key}/records",
                     params={"rows_per_page": 1000}, headers=svc.headers(), timeout=30)
    r.raise_for_status()
    assert r.json()["total_pages"] == 1
    return [rec["id"] for rec in r.json()["records"]]


class Mutator:
    """Creates and deletes work orders over HTTP, in its own thread, when asked."""

    def __init__(self, svc: LocalService) -> None:
        self.svc = svc
        self.created: list[str] = []
        self.deleted: list[str] = []

    def _run(self, delete: list[str], create: int) -> None:
        base = f"{self.svc.base_url}/v1/objects/object_3/records"
        for rid in delete:
            requests.delete(f"{base}/{rid}", headers=self.svc.headers(),
                            timeout=30).raise_for_status()
            self.deleted.append(rid)
        for i in range(create):
            r = requests.post(base, json={"field_12": f"inserted mid-run {i}"},
                              headers=self.svc.headers(), timeout=30)
            r.raise_for_status()
            self.created.append(r.json()["id"])

    def now(self, delete: list[str], create: int) -> None:
        t = threading.Thread(target=self._run, args=(delete, create))
        t.start()
        t.join()


def test_concurrent_pages_in_order(service: LocalService, client: Client) -> None:
    pager = Paginator(client, "object_3", rows_per_page=7)
    before = client.request_count
    records = pager.records()
    truth = all_ids(service)
    assert [r["id"] for r in records] == truth
    assert len(pager.passes) == 1 and pager.passes[0].consistent
    # every page once, plus page 1 again to verify nothing moved
    assert client.request_count - before == -(-len(truth) // 7) + 1


def test_request_window_opens_gradually(client: Client) -> None:
    # a burst of every prefetched request at once would make the service render them side
    # by side and page 2 arrive last: page 1 is handed out with pages 2-5 asked for, and
    # each page handed out opens the window by four: when page 2 is, at most pages 2-10
    pager = Paginator(client, "object_3", rows_per_page=7, max_workers=16)
    before = client.request_count
    sent_at: dict[int, int] = {}
    for page in pager.iter_pages():
        sent_at[page.number] = client.request_count - before
    assert pager.prefetch == 32 and len(sent_at) > 10
    assert sent_at[2] <= 10
    assert sent_at[max(sent_at)] > 5  # the window did open further


def test_verify_none_and_full(service: LocalService, client: Client) -> None:
    pages = -(-len(all_ids(service)) // 50)
    before = client.request_count
    Paginator(client, "object_3", rows_per_page=50, verify="none").records()
    assert client.request_count - before == pages
    before = client.request_count
    pager = Paginator(client, "object_3", rows_per_page=50, verify="full")
    pager.records()
    assert client.request_count - before == 2 * pages and len(pager.passes) == 2


def test_limit_stops_early(client: Client) -> None:
    before = client.request_count
    records = Paginator(client, "object_3", rows_per_page=7, limit=20).records()
    assert len(records) == 20 and len({r["id"] for r in records}) == 20
    assert client.request_count - before == 3 + 1  # + page 1 again (verification)


def test_limit_smaller_than_a_page_asks_for_less(client: Client) -> None:
    pager = Paginator(client, "object_3", limit=5)
    assert pager.rows_per_page == 5
    assert len(pager.records()) == 5


def test_rows_per_page_over_1000_refused_before_request(client: Client) -> None:
    before = client.request_count
    with pytest.raises(UsageError, match="rows_per_page"):
        Paginator(client, "object_3", rows_per_page=1001)
    assert client.request_count == before


@pytest.mark.parametrize("sort", [None, ("field_24", "desc")])
def test_inserts_and_deletes_mid_run(fresh_service: LocalService,
                                     sort: tuple[str, str] | None) -> None:
    """Records deleted from an early page and inserted (at the end, or at the front when
    sorted newest first) between page requests: none lost, none repeated."""
    start = all_ids(fresh_service)
    mut = Mutator(fresh_service)
    done = threading.Event()

    def on_page(page: Page) -> None:
        if page.pass_no == 1 and page.number == 2 and not done.is_set():
            done.set()
            mut.now(delete=start[:3], create=4)

    client = make_client(fresh_service, max_workers=1)  # page requests one after another
    pager = Paginator(client, "object_3", rows_per_page=4, on_page=on_page,
                      sort_field=sort[0] if sort else None,
                      sort_order=sort[1] if sort else None)
    ids = [r["id"] for r in pager.records()]
    truth = all_ids(fresh_service)
    assert done.is_set() and len(mut.created) == 4
    assert len(ids) == len(set(ids))                     # no duplicate
    assert set(ids) == set(truth)                        # nothing lost, nothing stale
    assert not set(mut.deleted) & set(ids)
    assert set(mut.created) <= set(ids)
    assert pager.refetched and not pager.passes[0].consistent


@pytest.mark.parametrize("direction", ["forward", "back"])
def test_a_record_re_sorted_mid_run(fresh_service: LocalService, direction: str) -> None:
    """Editing the sort field moves a record across the read position: pages shift, a
    record is skipped or repeated, yet the count never changes. The duplicate gives it
    away and a second pass reads the list right."""
    h = fresh_service.headers()
    base = f"{fresh_service.base_url}/v1/objects/object_3/records"
    order = requests.get(base, headers=h, timeout=30, params={
        "rows_per_page": 1000, "sort_field": "field_16", "sort_order": "asc"}).json()
    ranked = [r["id"] for r in order["records"]]
    values = [r.get("field_16_raw") for r in order["records"]]
    numbers = [v for v in values if isinstance(v, (int, float))]
    # forward: a record read on page 1 jumps to the end; back: one from the end to the front
    mover = ranked[0] if direction == "forward" else ranked[-1]
    new_value = max(numbers) + 1000 if direction == "forward" else min(numbers) - 1000
    done = threading.Event()

    def on_page(page: Page) -> None:
        if page.pass_no == 1 and page.number == 2 and not done.is_set():
            done.set()
            requests.put(f"{base}/{mover}", json={"field_16": new_value}, headers=h,
                         timeout=30).raise_for_status()

    client = make_client(fresh_service, max_workers=1)  # page requests one after another
    pager = Paginator(client, "object_3", rows_per_page=4, on_page=on_page,
                      sort_field="field_16", sort_order="asc")
    ids = [r["id"] for r in pager.records()]
    assert done.is_set()
    assert len(ids) == len(set(ids)) and set(ids) == set(ranked)
    assert pager.refetched and pager.passes[0].duplicates == 1
    assert len(pager.passes[0].totals) == 1  # the count never changed


def test_mutations_with_concurrent_pages(fresh_service: LocalService) -> None:
    fresh_service.emulation.latency_ms = 20
    start = all_ids(fresh_service)
    mut = Mutator(fresh_service)
    fired = threading.Lock()
    count = {"n": 0}

    def on_page(page: Page) -> None:
        with fired:
            count["n"] += 1
            go = page.pass_no == 1 and count["n"] == 2
        if go:
            mut.now(delete=start[5:7], create=3)

    client = make_client(fresh_service, max_workers=4)
    ids = [r["id"] for r in Paginator(client, "object_3", rows_per_page=3,
                                      on_page=on_page).records()]
    fresh_service.emulation.latency_ms = 0
    assert len(ids) == len(set(ids))
    assert set(ids) == set(all_ids(fresh_service))


def test_records_that_never_settle_raise(fresh_service: LocalService) -> None:
    mut = Mutator(fresh_service)

    def on_page(page: Page) -> None:
        if page.number == 2:  # every pass
            mut.now(delete=[all_ids(fresh_service)[0]], create=1)

    client = make_client(fresh_service, max_workers=1)
    with pytest.raises(ConsistencyError, match="kept moving"):
        Paginator(client, "object_3", rows_per_page=4, on_page=on_page,
                  max_passes=2).records()


# ---- stop conditions, on a scripted server --------------------------------------------
class Envelopes(ThreadingHTTPServer):
    """Serves ``pages[n]`` (records) with fixed announced totals."""

    daemon_threads = True

    def __init__(self, pages: list[list[str]], total_pages: int, total_records: int) -> None:
        super().__init__(("127.0.0.1", 0), _EnvHandler)
        self.pages, self.total_pages, self.total_records = pages, total_pages, total_records
        self.hits: list[int] = []
        self.hold_first = False   # page 1 answered only once page 2 is asked
        self.page_2_asked = threading.Event()
        self.held = False


class _EnvHandler(BaseHTTPRequestHandler):
    server: Envelopes

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        n = int(parse_qs(urlparse(self.path).query)["page"][0])
        self.server.hits.append(n)
        if n == 2:
            self.server.page_2_asked.set()
        if n == 1 and self.server.hold_first:   # answered once page 2 is asked (or 5 s)
            self.server.held = self.server.page_2_asked.wait(5)
        ids = self.server.pages[n - 1] if n <= len(self.server.pages) else []
        body = json.dumps({"total_pages": self.server.total_pages, "current_page": n,
                           "total_records": self.server.total_records,
                           "records": [{"id": i, "field_1": i, "field_1_raw": i}
                                       for i in ids]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def envelopes(request: pytest.FixtureRequest) -> Iterator[Envelopes]:
    srv = Envelopes(*request.param)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def scripted_client(srv: Envelopes) -> Client:
    return Client("app", api_key="k", base_url=f"http://127.0.0.1:{srv.server_address[1]}",
                  rate_limit=0, max_workers=1)


@pytest.mark.parametrize("envelopes", [([["a", "b", "c"], ["d", "e", "f"]], 8, 24)],
                         indirect=True)
def test_empty_page_stops_and_an_overestimated_total_is_accepted_when_stable(
        envelopes: Envelopes) -> None:
    pager = Paginator(scripted_client(envelopes), "object_1", rows_per_page=3)
    assert [r["id"] for r in pager.records()] == list("abcdef")
    # each pass stopped at the empty third page (one page of read-ahead at most)
    assert max(envelopes.hits) <= 4
    assert len(pager.passes) == 2 and not pager.passes[0].consistent


@pytest.mark.parametrize("envelopes", [([["a", "b"], ["c", "d"], ["e"]], 1, 5)],
                         indirect=True)
def test_underestimated_pages_are_fetched_past_the_announced_end(envelopes: Envelopes) -> None:
    pager = Paginator(scripted_client(envelopes), "object_1", rows_per_page=2)
    assert [r["id"] for r in pager.records()] == list("abcde")
    assert 3 in envelopes.hits and len(pager.passes) == 1  # page 3 though 1 was announced


@pytest.mark.parametrize("envelopes", [([["a", "b"], ["b", "c"]], 2, 4)], indirect=True)
def test_duplicates_across_pages_never_reach_the_result(envelopes: Envelopes) -> None:
    with pytest.raises(ConsistencyError, match="twice"):
        Paginator(scripted_client(envelopes), "object_1", rows_per_page=2).records()


@pytest.mark.parametrize("envelopes", [([["a", "b"], ["c", "d"], ["e"]], 3, 5)],
                         indirect=True)
def test_pages_asked_ahead_go_beside_page_1(envelopes: Envelopes) -> None:
    # ``ahead``: page 2 is asked before page 1's answer (page 1 is held until it is), and
    # is then the window's page 2, asked once
    envelopes.hold_first = True
    client = scripted_client(envelopes)
    pager = Paginator(client, "object_1", rows_per_page=2, verify="none", ahead=1)
    assert [r["id"] for r in pager.records()] == list("abcde")
    assert envelopes.held and sorted(envelopes.hits) == [1, 2, 3]
    assert client.request_count == 3


@pytest.mark.parametrize("envelopes", [([["a", "b"], ["c", "d"]], 2, 4)], indirect=True)
def test_a_page_asked_ahead_and_not_needed_is_answered_and_counted(
        envelopes: Envelopes) -> None:
    # the caller's stop ends the pass at page 1: page 2 was asked already; the listing
    # waits for its answer, so the requests it sent are all counted when it returns.
    # Page 1 is answered once page 2 is asked: on a busy machine page 2's thread may not
    # have started when page 1 (answered at once) ends the pass, and a page not yet sent
    # is not sent at all
    envelopes.hold_first = True
    client = scripted_client(envelopes)
    pager = Paginator(client, "object_1", rows_per_page=2, verify="none", ahead=1,
                      stop=lambda page: True)
    assert [p.number for p in pager.iter_pages()] == [1]
    assert envelopes.held
    assert sorted(envelopes.hits) == [1, 2] and client.request_count == 2


def _count_calls(monkeypatch: pytest.MonkeyPatch, *funcs: Any) -> dict[str, int]:
    """Every module of svc_frames holding one of ``funcs`` gets a counting wrapper."""
    import sys

    calls = {f.__name__: 0 for f in funcs}
    for func in funcs:
        def counted(*args: Any, _f: Any = func, **kw: Any) -> Any:
            calls[_f.__name__] += 1
            return _f(*args, **kw)
        for name, mod in list(sys.modules.items()):
            if name.startswith("svc_frames") and getattr(mod, func.__name__, None) is func:
                monkeypatch.setattr(mod, func.__name__, counted)
    return calls


def test_a_listings_filters_are_checked_and_prepared_once(
        service: LocalService, client: Client, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Any) -> None:
    """The loaders and export check a filter once (``LoadOptions.of``) and prepare it
    once (``LoadOptions.prepared``); the pager sends the prepared query as it is. A
    pager given filters without a schema checks them once and prepares nothing."""
    from svc_frames.loaders import read_object
    from svc_frames.query import validate_filters
    from svc_frames.query.prepare import prepare_checked
    from svc_frames.saved.export import export

    rule = [{"field": "field_12", "operator": "is not blank"}]
    calls = _count_calls(monkeypatch, validate_filters, prepare_checked)
    frames = read_object(client, "object_3", filters=rule, columns="keys", progress=False)
    assert calls == {"validate_filters": 1, "prepare_checked": 1}
    calls.update(validate_filters=0, prepare_checked=0)
    result = export(client, "object_3", tmp_path / "out", filters=rule, columns="keys",
                    progress=False)
    assert result.records == len(frames.main) > 0
    assert calls == {"validate_filters": 1, "prepare_checked": 1}
    calls.update(validate_filters=0, prepare_checked=0)
    assert len(Paginator(client, "object_3", filters=rule, verify="none").records()) \
        == len(frames.main)
    assert calls == {"validate_filters": 1, "prepare_checked": 0}
