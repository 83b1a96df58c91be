"""read/pipeline.py: pages to frames over the local service (real HTTP): the format
decision, the display-value fallback, whole listings collected, and a pager run that
ends at the caller's stop condition."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from svc_frames import Client, read_object, read_view
from svc_frames.errors import QuotaInsufficient
from svc_frames.frames import Frames, Source
from svc_frames.http import body
from svc_frames.http.body import BodyBuffers
from svc_frames.read.pager import Page, Paginator, PassReport
from svc_frames.read.pipeline import (
    MAX_PIECES,
    PageParts,
    PagePipeline,
    concat_frames,
    final_frames,
    in_order,
    latest_only,
    pages_ahead,
)
from svc_frames.read.target import describe
from svc_frames.server import LocalService

WO = "object_3"
PATH = f"/v1/objects/{WO}/records"


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=45, rate_limit=0, seed=11) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def page_queries(svc: LocalService, path: str = PATH) -> list[str]:
    return [e.query for e in svc.request_log.entries
            if e.method == "GET" and e.path == path and e.status == 200]


def fields_and_source(client: Client, target: Any) -> tuple[list[Any], Source, ZoneInfo]:
    app = client.schema()
    first = client.get_page(target, 1, 5)["records"]
    tz = ZoneInfo("America/Chicago")
    fields, source = describe(client, target, app, first, "keys", tz)
    return fields, source, tz


def test_settled_raw_pages_decode_like_a_load(svc: LocalService) -> None:
    client = client_of(svc)
    want = read_object(client, WO, progress=False, columns="keys")
    pager = Paginator(client, WO, rows_per_page=10, verify="none")
    fields, source, tz = fields_and_source(client, WO)
    pipe = PagePipeline(pager, fields, source, tz)
    first: list[Page] = []

    def settle(page: Page) -> None:
        first.append(page)
        assert pipe.settle(page)  # the demo's work orders decode from raw values
    pager.on_first = settle
    svc.request_log.clear()
    got = pipe.collect()
    queries = page_queries(svc)
    assert len(queries) == 5 and "format=raw" not in queries[0]
    assert all("format=raw" in q for q in queries[1:])  # every later page came raw
    pd.testing.assert_frame_equal(got.main, want.main)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name], table)


def test_raw_pages_are_read_into_buffers_reused_page_after_page(
        svc: LocalService, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load's raw pages are read into a few buffers, each reused page after page and
    unmapped once the pages are in; the frames are those of pages read as bytes."""
    monkeypatch.setattr(body, "BUFFERED_MIN", 1)   # this service's pages are small
    taken: list[int] = []
    closed: list[BodyBuffers] = []
    take, close = BodyBuffers.take, BodyBuffers.close

    def spy_take(self: BodyBuffers, length: int) -> memoryview | None:
        view = take(self, length)
        taken.append(id(view.obj) if view is not None else 0)
        return view

    def spy_close(self: BodyBuffers) -> None:
        closed.append(self)
        close(self)
    monkeypatch.setattr(BodyBuffers, "take", spy_take)
    monkeypatch.setattr(BodyBuffers, "close", spy_close)
    client = client_of(svc)
    got = read_object(client, WO, rows_per_page=5, progress=False, columns="keys")
    assert len(taken) >= 8 and all(taken)   # pages 2-9 (and page 1 verified) raw
    assert len(set(taken)) <= pages_ahead(0) + 2 < len(taken)   # reused
    assert len(closed) == 1 and closed[0].take(100) is None   # unmapped after the pages
    monkeypatch.setattr(BodyBuffers, "take", lambda self, length: None)
    want = read_object(client, WO, rows_per_page=5, progress=False, columns="keys")
    pd.testing.assert_frame_equal(got.main, want.main, check_exact=True)
    assert list(got.tables) == list(want.tables)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name], table, check_exact=True)


@pytest.mark.parametrize("how", ["by number", "ordered", "ranges"])
def test_buffers_are_unmapped_once_the_pages_are_in_not_after_their_decode(
        svc: LocalService, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A pass's raw-page buffers are unmapped once its pages are in, before the consumer
    has the last one (by number, keyset ordered pages, keyset ranges); what comes after
    (page 1 verified, a gap check) is read as bytes, and the records are the same."""
    monkeypatch.setattr(body, "BUFFERED_MIN", 1)   # this service's pages are small
    client = client_of(svc)
    fields, _, _ = fields_and_source(client, WO)
    key = next(f.key for f in client.schema().object_fields(WO) or []
               if f.kind == "auto_increment")
    filters = [{"field": key, "operator": "higher than", "value": 0}] \
        if how == "ranges" else None
    received: list[Page] = []
    closed_at: list[int] = []
    close = BodyBuffers.close

    def spy_close(self: BodyBuffers) -> None:
        closed_at.append(len(received))
        close(self)
    monkeypatch.setattr(BodyBuffers, "close", spy_close)

    def pages(spy: bool) -> list[Any]:
        pager = Paginator(client, WO, rows_per_page=5, filters=filters,
                          keyset=how != "by number")
        pager.on_first = lambda first: pager.ask_raw(fields)
        got = [r for page in pager.iter_pages() if not spy or received.append(page) is None
               for r in page.records]
        assert (pager.key_field is None) == (how == "by number")
        return got

    got = pages(spy=True)
    assert len(received) >= 9 and len(closed_at) == 1
    assert closed_at[0] < len(received)   # unmapped before the last page was handed out
    monkeypatch.setattr(BodyBuffers, "take", lambda self, length: None)
    assert [repr(r) for r in got] == [repr(r) for r in pages(spy=False)]


def test_pages_asked_ahead_of_the_decoder_follow_the_pace(svc: LocalService) -> None:
    """Once raw pages are decoded as they come, an unpaced load asks 4 pages ahead of
    its decoder (each one asked ahead waits, parsed, in memory); a paced one 0.8 s of its
    requests, 8 at the hosted 10/s (they are in flight: the pace is never held back)."""
    assert [pages_ahead(r) for r in (0, 2.5, 5, 6, 10, 50)] == [4, 4, 4, 5, 8, 8]
    for rate, ahead in ((0, 4), (10, 8)):
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=rate)
        pager = Paginator(client, WO, rows_per_page=10, verify="none")
        assert pager.prefetch == 24   # twice the client's workers, until settled
        fields, source, tz = fields_and_source(client, WO)
        assert PagePipeline(pager, fields, source, tz).settle(None)
        assert pager.prefetch == ahead


def test_without_raw_pages_the_format_stays(svc: LocalService) -> None:
    client = client_of(svc)
    pager = Paginator(client, WO, rows_per_page=20, verify="none")
    fields, source, tz = fields_and_source(client, WO)
    pipe = PagePipeline(pager, fields, source, tz)
    assert not pipe.settle(None, raw_pages=False)
    svc.request_log.clear()
    got = pipe.collect()
    assert len(got.main) == 45
    assert not any("format=raw" in q for q in page_queries(svc))


def test_a_raw_page_that_needs_display_values_is_fetched_again(svc: LocalService) -> None:
    """A view whose connection shows a name (its ids are only in the display HTML): forced
    to raw pages, each page is fetched again with display values, as are later pages."""
    manager = next(u for u in svc.users if "profile_2" in u["profile_keys"])
    client = client_of(svc)
    client.login(manager["email"], manager["password"])
    target = ("scene_2", "view_3")
    plain = read_view(client, *target, rows_per_page=5, progress=False, columns="keys")
    if not len(plain.main):
        pytest.skip("the manager has no work orders in this demo")
    pager = Paginator(client, target, rows_per_page=5, verify="none")
    fields, source, tz = fields_and_source(client, target)
    pipe = PagePipeline(pager, fields, source, ZoneInfo(plain.source.timezone or "UTC")
                        if plain.source else tz)
    pipe.settle(None)  # no page 1 to look at: the kinds alone say raw values will do
    assert pager.page_format == "raw"
    got = pipe.collect()
    assert pager.page_format == "both"  # the fallback switched the pages still to come
    pd.testing.assert_frame_equal(got.main, plain.main)
    assert got.tables["field_42"]["connected_id"].notna().all()


def test_a_stop_condition_ends_the_pass_without_more_requests(svc: LocalService) -> None:
    client = client_of(svc)
    seen: list[int] = []

    def second(page: Page) -> bool:
        seen.append(page.number)
        return page.number == 2
    pager = Paginator(client, WO, rows_per_page=5, verify="first", max_workers=1,
                      prefetch=1, stop=second)
    svc.request_log.clear()
    pages = list(pager.iter_pages())
    assert [p.number for p in pages] == [1, 2] and seen == [1, 2]
    assert pager.passes[-1].stopped and pager.passes[-1].consistent
    # pages 1 and 2, and page 1 again to verify: page 3 was never asked for
    assert len(page_queries(svc)) == 3


def test_a_stopped_pass_is_not_refused_for_the_quota(svc: LocalService) -> None:
    """The quota check counts the pages a whole listing needs; a run that stops at page 1
    needs none of them."""
    client = client_of(svc)
    svc.emulation.daily_quota = 10_000
    try:
        svc.emulation.new_quota_day()
        client.get_page(WO, 1, 1)  # the quota is known
        used = svc.emulation.quota_used
        svc.emulation.daily_quota = used + 3
        with pytest.raises(QuotaInsufficient):
            Paginator(client, WO, rows_per_page=1, verify="none").records()
        svc.emulation.daily_quota = svc.emulation.quota_used + 3
        client.get_page(WO, 1, 1)
        pages = list(Paginator(client, WO, rows_per_page=1, verify="none",
                               stop=lambda page: True).iter_pages())
        assert len(pages) == 1
    finally:
        svc.emulation.daily_quota = 0


def test_latest_only_keeps_a_repeated_record_on_its_last_page() -> None:
    source = Source("object", WO, [])

    def part(ids: list[str], value: str) -> Frames:
        main = pd.DataFrame({"v": [value] * len(ids)},
                            index=pd.Index(ids, dtype="string", name="id"))
        table = pd.DataFrame({"record_id": ids, "x": [value] * len(ids)})
        return Frames(main, {"t": table}, source)
    a, b = latest_only([part(["1", "2"], "old"), part(["2", "3"], "new")])
    assert list(a.main.index) == ["1"] and list(a.tables["t"]["record_id"]) == ["1"]
    assert list(b.main["v"]) == ["new", "new"] and list(b.tables["t"]["record_id"]) == [
        "2", "3"]
    # on three parts: the last keeps it; a part without a repeat is passed as it is
    parts = [part(["1", "2"], "a"), part(["5"], "b"), part(["2", "3"], "c"),
             part(["3", "2", "4"], "d")]
    for repeated in (None, {"2", "3"}):   # found here, or the pass's
        out = latest_only(parts, repeated)
        assert [list(f.main.index) for f in out] == [["1"], ["5"], [], ["3", "2", "4"]]
        assert out[1] is parts[1] and out[3] is parts[3]
    clean = [part(["1"], "a"), part(["2"], "b")]
    assert latest_only(clean) == clean


def _part(source: Source, ids: list[str], value: str) -> Frames:
    main = pd.DataFrame({"v": [value] * len(ids)},
                        index=pd.Index(ids, dtype="string", name="id"))
    return Frames(main, {"t": pd.DataFrame({"record_id": ids, "x": [value] * len(ids)})},
                  source)


@pytest.mark.parametrize("add", [False, True], ids=["append", "add"])
def test_page_parts_join_while_the_pager_waits_and_keep_the_order(add: bool) -> None:
    # one request at a time, 200 ms each: the consumer waits for every page after the
    # first, and joins a pair of parts in each wait (its decode of a page, on a machine
    # busy with other tests, must stay shorter than the wait: with 40 ms, once the
    # service's answers no longer waited for a delayed ACK, it did not always, and with
    # 80 ms neither under eight test workers and other builds on two cores)
    with LocalService(demo=True, records=27, rate_limit=0, latency_ms=200, seed=11) as slow:
        client = Client(slow.app_id, api_key=slow.api_key, base_url=slow.base_url,
                        rate_limit=0, max_workers=1)
        want = read_object(client, WO, progress=False, columns="keys")
        pager = Paginator(client, WO, rows_per_page=3, verify="none", max_workers=1)
        fields, source, tz = fields_and_source(client, WO)
        pipe = PagePipeline(pager, fields, source, tz)
        parts = PageParts(pager)
        for page in pager.iter_pages():
            if add:   # the columns a join copies in arrays made for the pass
                parts.add(page, pipe)
            else:
                parts.append(page.pass_no, pipe.frames(page))
    assert pager.passes[-1].pages == 9
    assert len(parts) <= 2   # the 8 pages before the last joined in one, + the last
    got = final_frames(pager, parts, source)
    pd.testing.assert_frame_equal(got.main, want.main)
    assert list(got.main.dtypes) == list(want.main.dtypes)
    if add:   # every page in one block: the joins took its rows, copied nothing
        block = parts.columns.block
        assert block is not None and block.used == block.capacity == 27
        when = [i for i, d in enumerate(got.main.dtypes) if isinstance(d, pd.DatetimeTZDtype)]
        assert when and all(np.shares_memory(got.main.iloc[:, i].array.asi8,
                                             block.columns[i].asi8) for i in when)
    assert got.tables.keys() == want.tables.keys()
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name], table)


def test_page_parts_join_only_equal_runs_of_the_current_pass(svc: LocalService) -> None:
    source = Source("object", WO, [])
    pager = Paginator(client_of(svc), WO)   # no request is sent here
    parts = PageParts(pager)
    pager.passes.append(PassReport(1))
    for n in range(3):
        parts.append(1, _part(source, [str(n)], f"p{n}"))
        parts.join_some()
    # pages 0+1 joined at the second page; the third waits for a partner
    assert [len(f.main) for _, f in parts] == [2, 1]
    pager.passes.append(PassReport(2))   # a new pass: the old one's parts stay as they are
    parts.append(2, _part(source, ["a", "b"], "old"))
    parts.append(2, _part(source, ["b", "c"], "new"))
    pager.passes[-1].duplicates = 1      # "b" came twice: the join keeps its later copy
    pager.passes[-1].repeated = {"b"}
    parts.join_some()
    assert [(n, list(f.main.index)) for n, f in parts] == [
        (1, ["0", "1"]), (1, ["2"]), (2, ["a", "b", "c"])]
    joined = list(parts)[2][1]
    assert joined.main["v"].tolist() == ["old", "new", "new"]
    assert joined.tables["t"]["record_id"].tolist() == ["a", "b", "c"]
    assert joined.tables["t"]["x"].tolist() == ["old", "new", "new"]
    # a pager keeping hashes only counts its repeats at the end of a pass: never joined
    hashed = Paginator(client_of(svc), WO, keep_ids=False)
    hashed.passes.append(PassReport(1))
    unjoined = PageParts(hashed)
    unjoined.append(1, _part(source, ["x"], "h"))
    unjoined.append(1, _part(source, ["y"], "h"))
    unjoined.join_some()
    assert len(unjoined) == 2


def test_in_order_puts_found_rows_where_the_order_says_by_slices() -> None:
    """Rows a gap check found (the last part) move to where the ids' order puts them, in
    row slices of the parts: the concat equals a take of the whole, rows of no id in the
    order are left out, and many moved rows fall back to one take."""
    source = Source("object", WO, [])
    parts = [_part(source, ["1", "2", "4"], "a"), _part(source, ["6", "7"], "b"),
             _part(source, ["3", "5"], "check")]
    order = ["1", "2", "3", "4", "5", "6", "7"]
    pieces = in_order([p.main for p in parts], order)
    joined = pd.concat(pieces)
    assert list(joined.index) == order
    assert list(joined["v"]) == ["a", "a", "check", "a", "check", "b", "b"]
    assert len(pieces) == 5 and all(p.index.dtype == "string" for p in pieces)
    # rows not in the order are dropped; an order of none of them gives no row
    assert list(pd.concat(in_order([p.main for p in parts], ["7", "1"])).index) == [
        "7", "1"]
    assert pd.concat(in_order([p.main for p in parts], ["9"])).empty
    # the whole Frames: the main frame in the order, the tables as the parts had them
    frames = concat_frames(parts, source, order=order)
    assert list(frames.main.index) == order
    assert list(frames.tables["t"]["record_id"]) == ["1", "2", "4", "6", "7", "3", "5"]
    # every row moved (reversed): more runs than MAX_PIECES is one take
    many = [str(i) for i in range(2 * MAX_PIECES)]
    big = [_part(source, many, "x")]
    one = in_order([p.main for p in big], list(reversed(many)))
    assert len(one) == 1 and list(one[0].index) == list(reversed(many))
