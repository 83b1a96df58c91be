"""Keyset paging (read/keyset.py): the plans' arithmetic, and ordered pages over real HTTP
finding the record a delete moved between two page answers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
import requests
from requests.adapters import HTTPAdapter

from svc_frames import query
from svc_frames.query import Query
from svc_frames.read.keyset import (
    VALUES_PER_CHECK,
    KeyRange,
    KeyValues,
    check_tests,
    dense,
    gap_checks,
    ordered_key_values,
    page_gaps,
    page_span,
    plan_ranges,
    span_gaps,
)
from svc_frames.read.load import load
from svc_frames.read.pager import Page, Paginator
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.server import query as server_query
from svc_frames.server.protocol import MAX_REQUEST_LINE_BYTES

OBJ = "object_3"   # work orders: field_24 is its auto-increment field


def test_page_gaps_are_the_holes_between_pages_and_after_an_empty_one() -> None:
    assert page_gaps([[1, 2, 3], [4, 5], [6]]) == []               # no hole: no check
    assert page_gaps([[1, 2, 3], [5, 6], [9]]) == [(3, 5), (6, 9)]
    assert page_gaps([[1, 2, 3], [3, 4]]) == []                    # a repeat: no hole
    assert page_gaps([[1, 2, 3], [5, 6], []]) == [(3, 5), (6, None)]
    assert page_gaps([[1, 2]]) == [] and page_gaps([]) == []


def test_a_range_between_two_pages_leaves_no_gap_on_either_side() -> None:
    # pages by number answer for their first value to their last; a range between two
    # of them for its whole range, so no hole is left at its edges (even an empty one)
    assert page_span([5, 6, 8]) == (4, 8) and page_span([]) is None
    between = KeyRange(3, 8)
    assert page_span([5, 7], between) == (3, 8) and page_span([], between) == (3, 8)
    spans = [page_span([1, 2, 3]), page_span([5, 7], between), page_span([9, 11])]
    assert span_gaps(spans) == []
    # a range that held more than a page answered up to its last value only
    spans[1] = page_span([5, 7], between, complete=False)
    assert span_gaps(spans) == [(7, 9)] and gap_checks(span_gaps(spans)) == [
        KeyValues((8,))]
    # an open range (the last page came empty) leaves nothing after it
    assert span_gaps([page_span([1, 2]), page_span([], KeyRange(2, None)), None]) == []
    assert span_gaps([page_span([1, 2]), None]) == [(2, None)]


def test_gap_checks_list_narrow_gaps_and_range_wide_or_open_ones() -> None:
    assert gap_checks([]) == []
    assert gap_checks([(3, 5), (6, 9)]) == [KeyValues((4, 7, 8))]
    wide = (10, 10 + VALUES_PER_CHECK + 2)
    assert gap_checks([wide, (6, None)]) == [
        KeyRange(10, 10 + VALUES_PER_CHECK + 1, seek=True), KeyRange(6, None)]
    # a wide gap is asked for by its start alone (one rule), as many rows as it has values
    seek = gap_checks([wide])[0]
    assert isinstance(seek, KeyRange) and seek.rules("f") == [
        {"field": "f", "operator": "higher than", "value": 10}]
    assert seek.rows(1000) == VALUES_PER_CHECK + 1 and seek.rest(30).seek
    # over a large object a check holds fewer rules (the service's filter limit)
    assert check_tests(50_000) == 20 and check_tests(10_000) == VALUES_PER_CHECK
    assert check_tests(2_000_000) == 1
    assert gap_checks([(3, 5), (6, 9)], 1) == [KeyRange(6, 8, seek=True),
                                               KeyValues((4,))]
    # many narrow gaps: VALUES_PER_CHECK (or the page size, if smaller) to a request
    many = [(i * 3, i * 3 + 2) for i in range(100)]
    checks = gap_checks(many)
    assert [len(c.values) for c in checks if isinstance(c, KeyValues)] == [40, 40, 20]
    assert all(len(c.values) <= 4 for c in gap_checks(many, 4) if isinstance(c, KeyValues))
    # every value strictly inside a gap is asked for, once
    asked = [v for c in checks if isinstance(c, KeyValues) for v in c.values]
    assert asked == [i * 3 + 1 for i in range(100)]


def test_a_full_values_check_fits_the_request_line_limit() -> None:
    """40 twelve-digit values, URL-encoded as the client sends them, stay well inside
    the 8 KB request line that front ends (and the local service) accept."""
    values = KeyValues(tuple(10**11 + i for i in range(VALUES_PER_CHECK)))
    text = values.query(Query(None), "field_1234").text
    assert text is not None
    line = f"GET /v1/objects/object_1234/records?page=1&rows_per_page=1000&filters=" \
           f"{quote(text)}&sort_field=field_1234&sort_order=asc&format=raw HTTP/1.1"
    assert len(line.encode()) < MAX_REQUEST_LINE_BYTES * 0.75


def test_ordered_key_values_refuse_a_page_out_of_order_or_with_a_blank() -> None:
    def recs(*values: Any) -> list[dict[str, Any]]:
        return [{"id": str(i), "field_24": v} for i, v in enumerate(values)]
    assert ordered_key_values(recs(1, 2, 5), "field_24") == [1, 2, 5]
    assert ordered_key_values(recs(2, 1), "field_24") is None       # not the key's order
    assert ordered_key_values(recs(1, 1, 2), "field_24") is None    # a value repeats
    assert ordered_key_values(recs(1, None), "field_24") is None    # a blank


def test_dense_values_choose_ordered_pages() -> None:
    assert dense([1, 2, 3, 4]) and dense([1, 3, 5, 7])
    assert not dense([1, 4, 7, 10]) and not dense([])


def test_ranges_cover_everything_past_page_one() -> None:
    ranges = plan_ranges([1, 2, 3], 30, 3, top=40)
    assert ranges[0].after == 3 and ranges[-1].upto is None
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert a.upto == b.after            # adjacent: no value falls between two ranges


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  max_workers=1)   # page requests one after another


def _ids(svc: LocalService) -> list[str]:
    r = requests.get(f"{svc.base_url}/v1/objects/{OBJ}/records",
                     params={"rows_per_page": 1000}, headers=svc.headers(), timeout=30)
    r.raise_for_status()
    return [rec["id"] for rec in r.json()["records"]]


def _delete_once_page_one_is_answered(svc: LocalService, record_id: str
                                      ) -> tuple[threading.Event, Callable[[Page], None]]:
    """An ``on_page`` hook deleting ``record_id`` once page 1 is answered (set: done)."""
    done = threading.Event()

    def on_page(page: Page) -> None:
        if page.number == 1 and not done.is_set():
            done.set()
            requests.delete(f"{svc.base_url}/v1/objects/{OBJ}/records/{record_id}",
                            headers=svc.headers(), timeout=30).raise_for_status()
    return done, on_page


def test_a_delete_between_two_page_answers_is_found_by_the_gap_check() -> None:
    """Ordered pages of 4: once page 1 is answered, its first record is deleted, so page 2
    (asked after) starts one record later and the record that was fifth is on no page.
    Its value lies between page 1's last and page 2's first: the gap check returns it.
    Every other record comes once; the deleted one came (it existed when page 1 was
    answered: a record deleted during the load may come or not)."""
    with LocalService(demo=True, records=30, rate_limit=0, seed=31) as svc:
        start = _ids(svc)
        done, on_page = _delete_once_page_one_is_answered(svc, start[0])

        client = _client(svc)
        svc.request_log.clear()
        pager = Paginator(client, OBJ, rows_per_page=4, on_page=on_page, keyset=True)
        pages = list(pager.iter_pages())
        assert done.is_set() and pager.final_ids is not None
        ids = pager.final_ids
        assert ids == start and pager.reordered     # every record once, in the key's order
        # the fifth record came from the check, the last page yielded
        assert start[4] in [r["id"] for r in pages[-1].records]
        assert start[4] not in [r["id"] for p in pages[:-1] for r in p.records]
        report = pager.passes[0]
        assert report.consistent and "1 gap check" in report.reason
        checks = [e.query for e in svc.request_log.entries
                  if e.path == f"/v1/objects/{OBJ}/records" and "filters=" in e.query]
        assert len(checks) == 1 and "%22is%22" in checks[0]


def _checks_sent(svc: LocalService) -> list[str]:
    return [e.query for e in svc.request_log.entries
            if e.path == f"/v1/objects/{OBJ}/records" and "filters=" in e.query]


def test_a_slow_consumer_gets_the_gap_check_sent_once_every_page_is_in() -> None:
    """A consumer slower than the answers (decoding wide pages): the gap check leaves
    once every page is answered, not after the consumer has taken them all, so its
    answer is in while the consumer catches up. The load is as the fast consumer's:
    the record the delete moved is found, each record once, in the key's order."""
    with LocalService(demo=True, records=30, rate_limit=0, seed=31) as svc:
        start = _ids(svc)
        done, on_page = _delete_once_page_one_is_answered(svc, start[0])

        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=0, max_workers=4)
        client.schema()
        svc.request_log.clear()
        pager = Paginator(client, OBJ, rows_per_page=4, on_page=on_page, keyset=True)
        sent_by_last_page: list[int] = []
        for page in pager.iter_pages():
            if page.number == 8:       # the pass's last page (30 records, pages of 4)
                sent_by_last_page.append(len(_checks_sent(svc)))
            time.sleep(0.1)            # the consumer's decode
        assert done.is_set() and sent_by_last_page == [1]   # the check left before it
        assert pager.final_ids == start and pager.reordered
        assert len(_checks_sent(svc)) == 1 and "1 gap check" in pager.passes[0].reason


def test_a_list_grown_past_the_plan_after_the_early_check_is_checked_again() -> None:
    """The early gap check saw the pages as planned; then the list grew past them (two
    records created) and a delete left the page after the plan empty: the gaps at the end
    differ, so the checks go again for every gap. Every record that stayed comes once."""
    with LocalService(demo=True, records=32, rate_limit=0, seed=35) as svc:
        start = _ids(svc)
        url = f"{svc.base_url}/v1/objects/{OBJ}/records"
        first_done = threading.Event()

        def on_page(page: Page) -> None:
            if page.number == 1 and not first_done.is_set():
                first_done.set()
                requests.delete(f"{url}/{start[0]}", headers=svc.headers(),
                                timeout=30).raise_for_status()
                for _ in range(2):
                    requests.post(url, json={"field_12": "a new order"},
                                  headers=svc.headers(), timeout=30).raise_for_status()

        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=0, max_workers=4)
        client.schema()
        svc.request_log.clear()
        pager = Paginator(client, OBJ, rows_per_page=4, on_page=on_page, keyset=True)
        early = 0
        for page in pager.iter_pages():
            if page.number == 8:   # the planned pass's last page: the early check went
                early = len(_checks_sent(svc))
                requests.delete(f"{url}/{start[9]}", headers=svc.headers(),
                                timeout=30).raise_for_status()
            time.sleep(0.1)
        assert early == 1
        assert len(_checks_sent(svc)) > early      # checked again, every gap
        got = pager.final_ids or []
        assert len(got) == len(set(got))
        assert set(start) - {start[0], start[9]} <= set(got)
        created = [rid for rid in _ids(svc) if rid not in start]
        assert len(created) == 2
        order = start + created                    # the auto-increment field's order
        assert got == [rid for rid in order if rid in set(got)]


def test_dense_values_and_no_edits_cost_the_pages_alone() -> None:
    """No holes in the values and nobody editing: the pages by number and nothing more
    (no largest value, no page 1 again, no check)."""
    with LocalService(demo=True, records=30, rate_limit=0, seed=32) as svc:
        client = _client(svc)
        client.schema()
        svc.request_log.clear()
        pager = Paginator(client, OBJ, rows_per_page=4, keyset=True)
        recs = list(pager.iter_pages())
        listing = [e.query for e in svc.request_log.entries
                   if e.path == f"/v1/objects/{OBJ}/records"]
        assert len(listing) == len(recs) == 8                  # 30 records, pages of 4
        assert not any("filters=" in q for q in listing)
        assert pager.passes[0].reason.endswith("0 gap check(s)")


def test_the_page_before_the_last_goes_between_its_neighbours_with_the_gap_check_beside(
        ) -> None:
    """Paced at 5 requests a second, five ordered pages of 4 asked one at a time: page 4
    is asked for last, as the records between pages 3 and 5 (both in by then). Nothing
    can fall between it and them, so no check waits for its answer: a load without edits
    sends the five pages alone; with a record deleted once page 1 is in (a hole between
    pages 1 and 2) the gap check leaves beside the range, in the same second of the
    pace, not after its answer (which takes 250 ms to come). Each load holds every record once,
    in order."""
    with LocalService(demo=True, records=20, rate_limit=0, latency_ms=250, seed=34) as svc:
        start = _ids(svc)[:18]
        for rid in _ids(svc)[18:]:   # 18 records: five pages of 4, the last of 2
            requests.delete(f"{svc.base_url}/v1/objects/{OBJ}/records/{rid}",
                            headers=svc.headers(), timeout=30).raise_for_status()
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=5, max_workers=1)
        client.schema()
        for edit in (False, True):
            time.sleep(1.1)   # the schema's (or the last load's) starts out of the window
            svc.request_log.clear()
            done, on_page = _delete_once_page_one_is_answered(svc, start[0])
            pager = Paginator(client, OBJ, rows_per_page=4, keyset=True,
                              on_page=on_page if edit else None)
            list(pager.iter_pages())
            assert pager.final_ids == start and done.is_set() == edit
            listing = [e for e in svc.request_log.entries
                       if e.path == f"/v1/objects/{OBJ}/records"]
            ranged = [e for e in listing if "higher" in e.query]
            checks = [e for e in listing if "%22is%22" in e.query]
            assert len(ranged) == 1 and len(checks) == int(edit)
            assert len(listing) == 5 + int(edit)
            if edit:
                # sent after the range's answer, it would arrive 250 ms (the latency)
                # after the range at least
                assert checks[0].time < ranged[0].time + 0.25
                assert pager.reordered
        # unpaced, page 4 goes by its number (nothing to wait out)
        client.limiter.rate = 0
        pager = Paginator(client, OBJ, rows_per_page=4, keyset=True)
        svc.request_log.clear()
        assert pager.records() and not any(
            "higher" in e.query for e in svc.request_log.entries)


def test_holes_in_the_values_cost_one_check() -> None:
    """Records deleted before the load leave holes: one check lists the values of the
    holes at page boundaries, returns nothing, and the load holds every record once."""
    with LocalService(demo=True, records=30, rate_limit=0, seed=33) as svc:
        start = _ids(svc)
        # the fifth record's value is a hole between pages 1 and 2, the eleventh's one
        # inside page 3 (no check needed for it)
        for rid in (start[4], start[10]):
            requests.delete(f"{svc.base_url}/v1/objects/{OBJ}/records/{rid}",
                            headers=svc.headers(), timeout=30).raise_for_status()
        client = _client(svc)
        pager = Paginator(client, OBJ, rows_per_page=4, keyset=True)
        pages = list(pager.iter_pages())
        assert sorted(pager.final_ids or []) == sorted(_ids(svc))
        assert pager.passes[0].reason.endswith("1 gap check(s)")
        assert pages[-1].records == []                     # the check found nothing


def test_the_clients_filter_limit_is_the_local_services() -> None:
    assert query.FILTER_WORK == server_query.MAX_FILTER_WORK


def test_gap_checks_stay_within_the_services_filter_limit(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The service refuses a filter whose rules times the object's records pass its limit
    (here lowered to 60: 2 rules over the 25 records left). Holes at three page
    boundaries, one of them three values wide: the check holds 2 values, the wide gap
    goes as a seek of one rule, and no request is refused (one check of the 5 values, as
    before, was); every record comes once."""
    monkeypatch.setattr(server_query, "MAX_FILTER_WORK", 60)
    monkeypatch.setattr(query, "FILTER_WORK", 60)
    with LocalService(demo=True, records=30, rate_limit=0, seed=35) as svc:
        start = _ids(svc)
        for rid in (start[4], start[9], start[14], start[15], start[16]):
            requests.delete(f"{svc.base_url}/v1/objects/{OBJ}/records/{rid}",
                            headers=svc.headers(), timeout=30).raise_for_status()
        client = _client(svc)
        svc.request_log.clear()
        pager = Paginator(client, OBJ, rows_per_page=4, keyset=True)
        list(pager.iter_pages())
        assert sorted(pager.final_ids or []) == sorted(_ids(svc))
        checks = _checks_sent(svc)
        assert svc.request_log.count(status=400) == 0 and len(checks) == 2
        assert sum("higher" in q and "lower" not in q for q in checks) == 1   # the seek


class _SlowPageTwo(HTTPAdapter):
    """Holds page 2's request back on this side of the wire until ``released`` (then
    sends it for real): page 3 is answered first."""

    def __init__(self, released: threading.Event) -> None:
        super().__init__()
        self.released = released

    def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if "page=2&" in (request.url or "") and "filters=" not in (request.url or ""):
            assert self.released.wait(30)
        return super().send(request, *args, **kwargs)


def test_pages_answered_out_of_order_around_a_delete_give_each_record_once() -> None:
    """Page 3 is answered, then a record of page 1 is deleted, then page 2 is answered:
    page 2 now starts one record later, so the record that was ninth is on pages 2 and 3
    and the fifth on neither. The load holds each once: the repeat dropped, the missing
    one found by the gap check; the frame has no row twice."""
    with LocalService(demo=True, records=30, rate_limit=0, seed=34) as svc:
        start = _ids(svc)
        released = threading.Event()

        def on_page(page: Page) -> None:
            if page.number == 3 and not released.is_set():
                requests.delete(f"{svc.base_url}/v1/objects/{OBJ}/records/{start[0]}",
                                headers=svc.headers(), timeout=30).raise_for_status()
                released.set()

        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=0, max_workers=4)
        client.schema()
        client.session.mount("http://", _SlowPageTwo(released))
        frames = load(client, OBJ, rows_per_page=4, on_page=on_page, columns="keys")   # read_object's
        assert released.is_set()
        got = [str(i) for i in frames.main.index]
        assert got == start              # each once, in the key's order (the check's find too)
        for name, table in frames.tables.items():   # each record's rows once
            assert not table.duplicated().any(), name


def test_an_ordered_page_fetched_again_is_asked_for_by_its_values() -> None:
    """A page fetched again (with display values) after others deleted one of its
    records and created others: asked for by the range of its own values, it comes back
    without the deleted record and with nothing new (an offset would have shifted it)."""
    with LocalService(demo=True, records=30, rate_limit=0, seed=35) as svc:
        client = _client(svc)
        pager = Paginator(client, OBJ, rows_per_page=4, keyset=True)
        pages = list(pager.iter_pages())
        second = [r["id"] for r in pages[1].records]
        base = f"{svc.base_url}/v1/objects/{OBJ}/records"
        for rid in (pages[0].records[0]["id"], second[1]):
            requests.delete(f"{base}/{rid}", headers=svc.headers(),
                            timeout=30).raise_for_status()
        requests.post(base, json={"field_12": "new"}, headers=svc.headers(),
                      timeout=30).raise_for_status()
        again = pager.refetch(pages[1])
        assert [r["id"] for r in again.records] == [second[0], *second[2:]]
