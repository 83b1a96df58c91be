"""Filters, sorting and formats of list requests, checked against the full record list."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests

from svc_frames.server import LocalService
from svc_frames.testing import object_url


def _all(svc: LocalService, **params: Any) -> list[dict[str, Any]]:
    r = requests.get(object_url(svc, "object_3"), headers=svc.headers(), timeout=60,
                     params={"rows_per_page": 1000, **params})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total_records"] == len(body["records"])
    return list(body["records"])


def _ids(records: list[dict[str, Any]]) -> set[str]:
    return {r["id"] for r in records}


def _wall(raw: dict[str, Any] | None) -> dt.datetime | None:
    if not raw:
        return None
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=raw["unix_timestamp"])


def _text(rec: dict[str, Any], key: str) -> str:
    return str(rec.get(key + "_raw", "")).lower()


CASES: list[tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]] = [
    ({"field": "field_27", "operator": "is", "value": "Open"},
     lambda r: r.get("field_27_raw") == "Open"),
    ({"field": "field_27", "operator": "is not", "value": "Open"},
     lambda r: r.get("field_27_raw") != "Open"),
    ({"field": "field_12", "operator": "contains", "value": "PUMP"},
     lambda r: "pump" in _text(r, "field_12")),
    ({"field": "field_12", "operator": "does not contain", "value": "pump"},
     lambda r: "pump" not in _text(r, "field_12")),
    ({"field": "field_12", "operator": "starts with", "value": "Replace"},
     lambda r: _text(r, "field_12").startswith("replace")),
    ({"field": "field_12", "operator": "ends with", "value": "1"},
     lambda r: _text(r, "field_12").endswith("1")),
    ({"field": "field_13", "operator": "is blank"}, lambda r: "field_13_raw" not in r),
    ({"field": "field_13", "operator": "is not blank"}, lambda r: "field_13_raw" in r),
    ({"field": "field_41", "operator": "is blank"}, lambda r: r["field_41_raw"] == []),
    ({"field": "field_16", "operator": "higher than", "value": 120},
     lambda r: r.get("field_16_raw") is not None and r["field_16_raw"] > 120),
    ({"field": "field_17", "operator": "lower than", "value": "100"},
     lambda r: r.get("field_17_raw") is not None and float(r["field_17_raw"]) < 100),
    ({"field": "field_26", "operator": "is", "value": True},
     lambda r: r.get("field_26_raw") is True),
    ({"field": "field_28", "operator": "is", "value": "HVAC"},
     lambda r: "HVAC" in (r.get("field_28_raw") or [])),
    ({"field": "field_29", "operator": "is before", "value": "06/01/2025"},
     lambda r: (w := _wall(r.get("field_29_raw"))) is not None and w < dt.datetime(2025, 6, 1)),
    ({"field": "field_29", "operator": "is after", "value": "06/01/2025"},
     lambda r: (w := _wall(r.get("field_29_raw"))) is not None and w >= dt.datetime(2025, 6, 2)),
    ({"field": "field_29", "operator": "is", "value": "2025-03-04"},
     lambda r: (w := _wall(r.get("field_29_raw"))) is not None and w.date() == dt.date(2025, 3, 4)),
]


@pytest.mark.parametrize("rule,pred", CASES, ids=[c[0]["operator"] + " " + c[0]["field"]
                                                   for c in CASES])
def test_filter_operator(service: LocalService, rule: dict[str, Any],
                         pred: Callable[[dict[str, Any]], bool]) -> None:
    everything = _all(service)
    expected = {r["id"] for r in everything if pred(r)}
    got = _ids(_all(service, filters=json.dumps([rule])))
    assert got == expected
    assert 0 < len(expected) < len(everything) or rule["operator"] == "is"


def test_match_or_and_bare_arrays(service: LocalService) -> None:
    everything = _all(service)
    a = {"field": "field_27", "operator": "is", "value": "Done"}
    b = {"field": "field_26", "operator": "is", "value": True}
    either = {r["id"] for r in everything
              if r.get("field_27_raw") == "Done" or r.get("field_26_raw") is True}
    both = {r["id"] for r in everything
            if r.get("field_27_raw") == "Done" and r.get("field_26_raw") is True}
    assert _ids(_all(service, filters=json.dumps({"match": "or", "rules": [a, b]}))) == either
    assert _ids(_all(service, filters=json.dumps({"match": "and", "rules": [a, b]}))) == both
    assert _ids(_all(service, filters=json.dumps([a, b]))) == both


def test_connection_filter_by_id(service: LocalService) -> None:
    everything = _all(service)
    target = next(r["field_42_raw"][0]["id"] for r in everything if r["field_42_raw"])
    expected = {r["id"] for r in everything
                if any(c["id"] == target for c in r["field_42_raw"])}
    rule = [{"field": "field_42", "operator": "is", "value": target}]
    assert _ids(_all(service, filters=json.dumps(rule))) == expected


def test_relative_date_operators(service: LocalService) -> None:
    now = dt.datetime.now()
    h = service.headers()
    # a record due today (app wall clock: the value is written in the app's timezone)
    from zoneinfo import ZoneInfo
    local = dt.datetime.now(ZoneInfo("America/Chicago"))
    if (local + dt.timedelta(seconds=15)).date() != local.date():
        # the day (week, year) must not turn between the write and the filters
        time.sleep(16)
        local = dt.datetime.now(ZoneInfo("America/Chicago"))
    due = {"date": local.strftime("%m/%d/%Y"), "hours": "12", "minutes": "00", "am_pm": "PM"}
    rec = requests.post(object_url(service, "object_3"), json={"field_12": "today",
                                                                "field_29": due},
                        headers=h, timeout=30).json()
    for rule in ({"field": "field_29", "operator": "is today"},
                 {"field": "field_29", "operator": "is during the current", "type": "years"},
                 {"field": "field_29", "operator": "is during the current", "type": "weeks"}):
        assert rec["id"] in _ids(_all(service, filters=json.dumps([rule]))), rule
    prev = _all(service, filters=json.dumps([{"field": "field_29", "operator":
                                              "is during the previous", "range": 2,
                                              "type": "years"}]))
    for r in prev:
        w = _wall(r["field_29_raw"])
        assert w is not None and w <= now + dt.timedelta(days=1)
    bad = requests.get(object_url(service, "object_3"), headers=h, timeout=30, params={
        "filters": json.dumps([{"field": "field_29", "operator": "is during the next",
                                "range": 2, "type": "fortnights"}])})
    assert bad.status_code == 400


def test_near_filter(service: LocalService) -> None:
    everything = _all(service)
    rule = [{"field": "field_34", "operator": "near", "value": "30.27,-97.74", "range": 40}]
    got = _ids(_all(service, filters=json.dumps(rule)))
    expected = {r["id"] for r in everything if r.get("field_34_raw")
                and abs(r["field_34_raw"]["latitude"] - 30.27) < 0.5
                and abs(r["field_34_raw"]["longitude"] + 97.74) < 0.5}
    assert got == expected and got


def test_sorting(service: LocalService) -> None:
    recs = _all(service, sort_field="field_16", sort_order="desc")
    nums = [r["field_16_raw"] for r in recs if "field_16_raw" in r]
    assert nums == sorted(nums, reverse=True)
    recs = _all(service, sort_field="field_12", sort_order="asc")
    titles = [r["field_12_raw"].lower() for r in recs if "field_12_raw" in r]
    assert titles == sorted(titles)
    recs = _all(service, sort_field="field_29")
    dates = [r["field_29_raw"]["unix_timestamp"] for r in recs if "field_29_raw" in r]
    assert dates == sorted(dates)


def test_formats(service: LocalService) -> None:
    both = _all(service)[:50]
    raw = _all(service, format="raw")[:50]
    html = _all(service, format="html")[:50]
    for b, r, h in zip(both, raw, html, strict=True):
        assert b["id"] == r["id"] == h["id"]
        assert not any(k.endswith("_raw") for k in r) and not any(k.endswith("_raw") for k in h)
        for key in ("field_34", "field_29", "field_41"):
            assert r[key] == b.get(key + "_raw", b[key])
            assert h[key] == b[key]


def test_raw_format_is_stored_and_kept_up_to_date(service: LocalService) -> None:
    """format=raw pages come from stored raw fragments: every record, every field, equals
    the both-format record re-shaped, also after an update and for a single-record GET."""
    from svc_frames.server.render import format_record
    from svc_frames.testing import create

    h = service.headers()
    rec = create(service, "object_3", {"field_12": "raw check", "field_26": True})
    requests.put(object_url(service, "object_3", rec["id"]),
                 json={"field_12": "raw check 2", "field_16": 7}, headers=h, timeout=30)
    both = _all(service)
    raw = _all(service, format="raw")
    assert len(both) == len(raw) > 100
    assert raw == [format_record(b, "raw") for b in both]
    one = requests.get(object_url(service, "object_3", rec["id"]), params={"format": "raw"},
                       headers=h, timeout=30).json()
    assert one["field_12"] == "raw check 2" and one["field_16"] == 7 and one["field_26"] is True
