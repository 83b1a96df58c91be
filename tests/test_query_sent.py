"""Filters prepared once: a load and every later request for the same listing (refresh,
cache check, saved frames refreshed) send the same bytes, as the local service's request
log records them (real HTTP, no mocks)."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from svc_frames import Client, read_object
from svc_frames.filters import Field, all_of, any_of
from svc_frames.frames import Source
from svc_frames.query import Query
from svc_frames.refreshing.cache import load_cached
from svc_frames.refreshing.policy import refresh
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.server import LocalService

WO = "object_3"
PATH = f"/v1/objects/{WO}/records"
UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=40, rate_limit=0, seed=5) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def sent_filters(svc: LocalService) -> list[str]:
    """The ``filters`` parameter of every answered page request since the log was cleared,
    decoded from the query string the service received."""
    out = []
    for e in svc.request_log.entries:
        if e.method == "GET" and e.path == PATH and e.status == 200:
            out.extend(parse_qs(e.query).get("filters", [""]))
    return out


# the demo application's timezone is Central Time: 23:00 UTC on Jan 1 is 5:00pm there,
# 05:30 UTC on Jan 2 is 11:30pm on Jan 1 (the other side of midnight from UTC's date)
CASES = {
    "aware": (dt.datetime(2024, 1, 1, 23, tzinfo=UTC), "01/01/2024 5:00pm"),
    "near_midnight": (dt.datetime(2024, 1, 2, 5, 30, tzinfo=UTC), "01/01/2024 11:30pm"),
    "naive": (dt.datetime(2024, 1, 1, 23, 0), "01/01/2024 11:00pm"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_load_and_refresh_send_byte_identical_filters(svc: LocalService, case: str) -> None:
    when, expected = CASES[case]
    client = client_of(svc)
    svc.request_log.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the load warns that a time may not be honoured
        frames = read_object(client, WO, filters=all_of(Field("field_29").is_after(when)),
                             progress=False, columns="keys")
    loaded = sent_filters(svc)
    assert loaded and len(set(loaded)) == 1
    rule = json.loads(loaded[0])["rules"][0]
    assert rule["value"] == expected  # the application's timezone, MM/DD/YYYY h:mma
    svc.request_log.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is encoded again: no timezone warning
        refresh(client, frames)
    refreshed = sent_filters(svc)
    assert refreshed and set(refreshed) == set(loaded)


def test_an_export_sends_what_a_load_sends(svc: LocalService, tmp_path: object) -> None:
    when, _ = CASES["near_midnight"]
    flt = all_of(Field("field_29").is_after(when))
    client = client_of(svc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svc.request_log.clear()
        read_object(client, WO, filters=flt, progress=False, columns="keys")
        loaded = set(sent_filters(svc))
        svc.request_log.clear()
        export(client, WO, Path(str(tmp_path)) / "out", filters=flt, progress=False, columns="keys")
    assert len(loaded) == 1 and set(sent_filters(svc)) == loaded


def test_saved_frames_and_the_cache_send_the_loads_filters(svc: LocalService,
                                                           tmp_path: object) -> None:
    root = Path(str(tmp_path))
    client = client_of(svc)
    flt = any_of(Field("field_29").is_after(dt.datetime(2024, 1, 2, 5, 30, tzinfo=UTC)),
                 Field("field_29").is_blank())
    svc.request_log.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frames = read_object(client, WO, filters=flt, progress=False, columns="keys")
    loaded = set(sent_filters(svc))
    assert len(loaded) == 1
    # saved and read back: the Source keeps the query, a refresh sends it again
    to_parquet(frames, root / "saved")
    again = read_parquet(root / "saved")
    assert again.source is not None and again.source.query == frames.source.query  # type: ignore[union-attr]
    svc.request_log.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        refresh(client, again)
    # an "or" filter is asked rule by rule, newest stamps first, and its total from one
    # row of the load's own listing: that one sends the load's bytes exactly
    sent = sent_filters(svc)
    assert loaded <= set(sent)
    for text in set(sent) - loaded:
        rules = json.loads(text)["rules"]
        assert rules[0] in json.loads(next(iter(loaded)))["rules"]
    # the cache is checked against the prepared query, so a second run is a refresh
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, first = load_cached(client, WO, root / "cache", filters=flt, progress=False, columns="keys")
        svc.request_log.clear()
        _, second = load_cached(client, WO, root / "cache", filters=flt, progress=False, columns="keys")
    assert first is None and second is not None
    assert loaded <= set(sent_filters(svc))


def test_a_source_saved_before_the_query_was_kept_still_gives_one() -> None:
    # frames saved before: their load holds the rules alone (no "query")
    old = {"kind": "object", "object_key": WO, "fields": [], "timezone": "America/Chicago",
           "load": {"filters": {"match": "and", "rules": [
               {"field": "field_29", "operator": "is after", "value": "01/01/2024"}]},
               "sort_field": None, "sort_order": None, "limit": None,
               "rows_per_page": 1000, "loaded_at": "2024-01-02T00:00:00+00:00"}}
    source = Source.from_dict(old)
    assert source.query.text == ('{"match":"and","rules":[{"field":"field_29",'
                                 '"operator":"is after","value":"01/01/2024"}]}')
    assert Source.from_dict({**old, "load": None}).query == Query(None)


def test_query_also_keeps_the_loads_bytes_and_splits_or() -> None:
    q = Query.of(all_of(Field("field_27").is_("Open")))
    assert q.also([]) == [q]
    (more,) = q.also([{"field": "field_24", "operator": "higher than", "value": 3}])
    assert more.text is not None and more.text.startswith(q.text[:-2])  # type: ignore[index]
    either = Query.of(any_of(Field("field_27").is_("Open"), Field("field_27").is_("Done")))
    split = either.also([{"field": "field_24", "operator": "higher than", "value": 3}])
    assert [json.loads(s.text or "")["match"] for s in split] == ["and", "and"]
    assert [len(json.loads(s.text or "")["rules"]) for s in split] == [2, 2]
    assert not Query.of(None)
    assert Query.of(None).also([]) == [Query(None)]


def test_http_sits_below_the_filter_builder() -> None:
    """http/ imports query.py (encoded queries), never filters.py (the builder and the
    schema-aware preparation sit above it)."""
    import ast

    import svc_frames.http as http_pkg
    root = Path(http_pkg.__file__).parent
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").endswith("filters"), path.name
            elif isinstance(node, ast.Import):
                assert not any(a.name.endswith("filters") for a in node.names), path.name
