"""refreshing/listing.py: the load's listing asked again (target, column names, records
decoded as the load decoded them) over the local service (real HTTP)."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from svc_frames import Client, read_object, read_view
from svc_frames.filters import Field, all_of
from svc_frames.refreshing.listing import column_maps, decode, list_all, list_ids, target_of
from svc_frames.server import LocalService

WO = "object_3"


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=13) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def test_the_listing_asked_again_decodes_as_the_load(svc: LocalService) -> None:
    client = client_of(svc)
    flt = all_of(Field("field_24").higher_than(5))
    frames = read_object(client, WO, filters=flt, progress=False, rows_per_page=7, columns="keys")
    source = frames.source
    assert source is not None and source.load is not None
    svc.request_log.clear()
    again = list_all(client, source, source.load, 7)
    pd.testing.assert_frame_equal(again.main, frames.main)
    for name, table in frames.tables.items():
        pd.testing.assert_frame_equal(again.tables[name], table)
    # decode: the records of a page as the load decodes them
    page = client.get_page(source.object_key, 1, 7, filters=source.query)["records"]
    pd.testing.assert_frame_equal(decode(page, source).main, frames.main.iloc[:7])
    ids = list_ids(client, source, source.load, 7)
    assert list(ids) == list(frames.main.index)
    queries = {e.query for e in svc.request_log.entries if e.path.endswith("/records")}
    assert all("filters=" in q for q in queries)  # the load's filter every time


def test_column_names_in_labels_mode_and_the_target_of_a_view(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, columns="labels", progress=False, limit=3)
    assert frames.source is not None
    col_field, bare = column_maps(frames.source)
    assert set(col_field) >= set(frames.main.columns)
    assert all(f.startswith("field_") for f in col_field.values())
    assert bare["field_46"] == "Last Modified"
    view = read_view(client, "scene_1", "view_1", progress=False, limit=2, columns="keys")
    assert view.source is not None and target_of(view.source) == ("scene_1", "view_1")
    assert target_of(frames.source) == WO
