"""refreshing/window.py: the stamp window as a run of the Paginator that stops at the
cutoff, over the local service (real HTTP), and the cutoff's clock rules."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pandas as pd
import pytest

from svc_frames import Client, read_object
from svc_frames.frames import Frames
from svc_frames.refreshing.window import decode_stamps, recent, stamp_cutoff
from svc_frames.server import LocalService

WO = "object_3"
MOD = "field_46"  # the demo's "Last Modified", stamped on every create and update
PATH = f"/v1/objects/{WO}/records"


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=24, rate_limit=0, seed=7) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def page_requests(svc: LocalService) -> list[str]:
    return [e.query for e in svc.request_log.entries
            if e.method == "GET" and e.path == PATH and e.status == 200]


def test_a_cutoff_after_every_stamp_takes_one_page_and_no_record(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, progress=False, columns="keys")
    assert frames.source is not None
    svc.request_log.clear()
    got, total = recent(client, frames.source, 5, frames.source.query, MOD,
                        lambda: pd.Timestamp("2100-01-01", tz="UTC"))
    assert total == 24 and len(got.main) == 0
    (query,) = page_requests(svc)
    assert "sort_field=field_46" in query and "sort_order=desc" in query
    assert "format=raw" in query


def test_a_cutoff_before_every_stamp_walks_the_listing(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, progress=False, columns="keys")
    assert frames.source is not None
    parts: list[Frames] = []
    svc.request_log.clear()
    got, total = recent(client, frames.source, 5, frames.source.query, MOD,
                        lambda: pd.Timestamp("1990-01-01", tz="UTC"), parts.append)
    assert total == 24 and sorted(got.main.index) == sorted(frames.main.index)
    assert len(page_requests(svc)) == 5 and len(parts) == 5  # each page handed on
    pd.testing.assert_frame_equal(got.main.loc[frames.main.index], frames.main,
                                  check_freq=False)


def test_only_records_stamped_at_or_after_the_cutoff_are_decoded(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, progress=False, columns="keys")
    assert frames.source is not None
    stamps = frames.main[MOD].dropna().sort_values(ascending=False)
    cutoff = stamps.iloc[len(stamps) // 2]
    got, _ = recent(client, frames.source, 5, frames.source.query, MOD, lambda: cutoff)
    # blank stamps (sorted last here) are kept only on pages the walk reached
    stamped = got.main[MOD].notna()
    assert set(got.main.index[stamped]) == set(frames.main.index[frames.main[MOD] >= cutoff])
    assert (got.main.loc[stamped, MOD] >= cutoff).all()


def test_stamps_decode_alike_from_raw_and_display_pages(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, progress=False, columns="keys")
    assert frames.source is not None
    spec = frames.source.field(MOD)
    both = client.get_page(WO, 1, 10)["records"]
    params = client.page_params(1, 10)
    params["format"] = "raw"
    raw = client.get_page(WO, 1, params=params)["records"]
    a = decode_stamps(both, frames.source, spec, raw=False)
    b = decode_stamps(raw, frames.source, spec, raw=True)
    pd.testing.assert_series_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_the_cutoff_follows_the_services_clock_or_the_newest_stamp() -> None:
    loaded = "2024-05-01T12:00:40+00:00"
    stamps = pd.Series(pd.to_datetime(["2024-05-01 11:50", "2024-05-01 11:58"], utc=True))
    # known skew: the load's start in the service's clock, floored, less 30 s
    assert stamp_cutoff(loaded, stamps, dt.timedelta(seconds=0)) == pd.Timestamp(
        "2024-05-01 11:59:30", tz="UTC")
    assert stamp_cutoff(loaded, stamps, dt.timedelta(minutes=1)) == pd.Timestamp(
        "2024-05-01 10:58:30", tz="UTC") + pd.Timedelta(hours=1)
    # unknown clock: the newest stamp bounds the start, less 2 minutes
    assert stamp_cutoff(loaded, stamps, None) == pd.Timestamp("2024-05-01 11:56", tz="UTC")
    # an unknown load time: everything
    assert stamp_cutoff(None, stamps) == pd.Timestamp("1900-01-01", tz="UTC")
