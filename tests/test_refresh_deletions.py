"""refresh(): the stamped window paged only to the last load, and deleted records found by
bisecting auto-increment ranges (or one listing when that is cheaper), over the local
service (never mocks)."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from svc_frames import Client, read_object
from svc_frames.frames import Frames
from svc_frames.refreshing.deletions import bisect_cost
from svc_frames.refreshing.policy import refresh
from svc_frames.refreshing.window import clock_skew, stamp_cutoff
from svc_frames.server import LocalService

WO = "object_3"
RECORDS = 150
RPP = 5  # a listing of ids costs 31 pages (and page 1 again): dearer than a few probes


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=RECORDS, rate_limit=0, seed=5) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def same_as_fresh(svc: LocalService, frames: Frames, **load: object) -> None:
    fresh = read_object(client_of(svc), WO, **{"columns": "keys", **load})  # type: ignore[arg-type]
    for got in (frames, frames.original):
        assert got is not None
        pd.testing.assert_frame_equal(got.main, fresh.main)
        assert sorted(got.tables) == sorted(fresh.tables)
        for name, table in fresh.tables.items():
            pd.testing.assert_frame_equal(got.tables[name].reset_index(drop=True),
                                          table.reset_index(drop=True), obj=name)


def listing_cost(records: int) -> int:
    return -(-records // RPP) + 1


@pytest.mark.parametrize("where", [[75], [0, 74, -1], [10, 11, 12]],
                         ids=["one", "first-middle-last", "adjacent"])
def test_a_few_deletions_are_found_by_bisection(svc: LocalService, where: list[int]) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="keys")
    gone = [frames.main.index[i] for i in where]
    for rid in gone:
        c.delete_record(WO, rid)
    log = svc.request_log
    log.clear()
    report = refresh(c, frames)
    assert sorted(report.deleted) == sorted(gone)
    # probes of one row each, fewer than the listing's pages and within the estimate
    assert 0 < report.deletion_requests <= bisect_cost(RECORDS, len(gone))
    assert report.deletion_requests < listing_cost(RECORDS - len(gone))
    assert report.requests == 1 + report.deletion_requests
    assert log.count(method="GET") == report.requests
    same_as_fresh(svc, frames)


def test_many_deletions_take_one_listing(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="keys")
    gone = list(frames.main.index[::10])  # 15: bisecting would cost more than listing
    for rid in gone:
        c.delete_record(WO, rid)
    assert bisect_cost(RECORDS, len(gone)) > listing_cost(RECORDS - len(gone))
    report = refresh(c, frames)
    assert sorted(report.deleted) == sorted(gone)
    assert report.deletion_requests == listing_cost(RECORDS - len(gone))
    same_as_fresh(svc, frames)


def test_inserts_and_deletes_that_cancel_in_count_are_seen(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="keys")
    gone = [frames.main.index[3], frames.main.index[100]]
    for rid in gone:
        c.delete_record(WO, rid)
    made = [svc.pages.create_record(WO, {"field_12": f"new {i}"})["id"] for i in range(2)]
    # the total is what was loaded, but the inserts carry a new stamp: the window holds
    # them, so the merged frame holds two more than the service lists
    report = refresh(c, frames)
    assert sorted(report.added) == sorted(made) and sorted(report.deleted) == sorted(gone)
    assert report.deletion_requests < listing_cost(RECORDS)
    same_as_fresh(svc, frames)


def test_a_record_leaving_the_filter_is_found_by_bisection(svc: LocalService) -> None:
    c = client_of(svc)
    flt = [{"field": "field_27", "operator": "is", "value": "Open"}]
    frames = read_object(c, WO, filters=flt, rows_per_page=RPP, columns="keys")
    leaving = frames.main.index[len(frames.main) // 2]
    svc.pages.update_record(WO, leaving, {"field_27": "Done"})  # stamped, out of the window
    report = refresh(c, frames)
    assert report.deleted == [leaving] and not report.changed
    assert 0 < report.deletion_requests < listing_cost(len(frames.main))
    same_as_fresh(svc, frames, filters=flt)


def test_deletions_and_changes_after_a_refresh_are_found_again(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="keys")
    c.delete_record(WO, frames.main.index[20])
    refresh(c, frames)
    c.delete_record(WO, frames.main.index[40])
    svc.pages.update_record(WO, frames.main.index[41],
                            {"field_12": "after the first refresh"})
    report = refresh(c, frames)
    assert len(report.deleted) == 1 and len(report.changed) == 1
    same_as_fresh(svc, frames)


def test_the_window_is_paged_until_it_reaches_the_last_load(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="keys")
    changed = list(frames.main.index[30:42])
    for rid in changed:
        svc.pages.update_record(WO, rid, {"field_12": "changed"})
    report = refresh(c, frames)
    assert sorted(report.changed) == sorted(changed)
    # 12 newest stamps on pages of 5: the third page reaches older stamps, and ends it
    assert report.requests == 3
    assert (frames.main.loc[changed, "field_12"] == "changed").all()
    same_as_fresh(svc, frames)


def test_the_cutoff_is_the_last_load_in_the_service_clock(svc: LocalService) -> None:
    import datetime as dt

    c = client_of(svc)
    assert clock_skew(c) is None  # no answer yet
    c.get_page(WO, 1, 1)
    skew = clock_skew(c)  # the same machine: the time an answer takes, at most
    assert skew is not None and dt.timedelta(0) <= skew < dt.timedelta(seconds=5)
    at = "2026-11-23T10:00:30+00:00"
    none = pd.Series([], dtype="datetime64[ns, UTC]")
    utc = pd.Timestamp
    assert stamp_cutoff(at, none, dt.timedelta(0)) == utc("2026-11-23 09:59:30Z")
    # the client's clock 5 minutes ahead: the load started at 09:55:30 for the service
    assert stamp_cutoff(at, none, dt.timedelta(minutes=5)) == utc("2026-11-23 09:54:30Z")
    # the service's clock unknown: the newest stamp loaded bounds it too
    newest = pd.Series([utc("2026-11-23 09:00:10Z"), pd.NaT], dtype="datetime64[ns, UTC]")
    assert stamp_cutoff(at, newest) == utc("2026-11-23 08:58:00Z")
    assert stamp_cutoff(at, none) == utc("2026-11-23 09:58:00Z")
    assert stamp_cutoff(None, newest) < utc("1901-01-01", tz="UTC")  # unknown: since ever


def test_frames_with_label_columns_refresh_with_one_page(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="labels")
    rid, gone = frames.main.index[7], frames.main.index[90]
    svc.pages.update_record(WO, rid, {"field_12": "labelled"})
    c.delete_record(WO, gone)
    report = refresh(c, frames)
    assert report.changed == [rid] and report.deleted == [gone]
    assert report.requests == 1 + report.deletion_requests
    assert 0 < report.deletion_requests < listing_cost(RECORDS)
    assert frames.main.at[rid, "Title"] == "labelled"
    fresh = read_object(client_of(svc), WO, columns="labels")
    pd.testing.assert_frame_equal(frames.main, fresh.main)


def test_a_delete_between_window_pages_makes_it_page_again(
        svc: LocalService, monkeypatch: pytest.MonkeyPatch) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=RPP, columns="keys")
    changed = list(frames.main.index[30:42])
    for rid in changed:
        svc.pages.update_record(WO, rid, {"field_12": "changed"})
    other = client_of(svc)
    victim = frames.main.index[100]
    real = c.get_page
    pages: list[int] = []

    def get_page(target: object, page: int = 1, *args: object, **kw: object) -> object:
        pages.append(page)
        if page == 2 and pages.count(2) == 1:  # another user deletes, just before page 2
            other.delete_record(WO, victim)
        return real(target, page, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(c, "get_page", get_page)
    report = refresh(c, frames)
    # the first pass saw two totals: it was paged again, then the deletion was found
    assert pages[:3] == [1, 2, 3] and pages.count(1) >= 2
    assert sorted(report.changed) == sorted(changed) and report.deleted == [victim]
    same_as_fresh(svc, frames)
