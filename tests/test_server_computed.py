"""The local service computes every computed kind as the hosted service does, over
loopback HTTP, on an application of its own (tests/fixtures/computed_app.py): aggregates
over a connection either object holds, with and without filters, kept current when a
connected record changes, is connected, disconnected or deleted; each text function;
equations; an application's own roles; refusals that name their field."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
import requests
from fixtures.computed_app import (
    DATE_EQUATIONS,
    EQUATIONS,
    MEMBER,
    TEXT_FORMULAS,
    computed_document,
)

from svc_frames.kinds.base import FieldSpec
from svc_frames.kinds.choices import UserRolesCodec
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import hosted_sample_dir


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=False, app=computed_document(), records=0) as s:
        yield s


def _url(svc: LocalService, obj: str, rid: str = "") -> str:
    return f"{svc.base_url}/v1/objects/{obj}/records" + (f"/{rid}" if rid else "")


def create(svc: LocalService, obj: str, body: dict[str, Any]) -> dict[str, Any]:
    r = requests.post(_url(svc, obj), json=body, headers=svc.headers(), timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def update(svc: LocalService, obj: str, rid: str, body: dict[str, Any]) -> dict[str, Any]:
    r = requests.put(_url(svc, obj, rid), json=body, headers=svc.headers(), timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def get(svc: LocalService, obj: str, rid: str) -> dict[str, Any]:
    r = requests.get(_url(svc, obj, rid), headers=svc.headers(), timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json())


def delete(svc: LocalService, obj: str, rid: str) -> None:
    r = requests.delete(_url(svc, obj, rid), headers=svc.headers(), timeout=30)
    assert r.status_code == 200, r.text


def customer_values(rec: dict[str, Any]) -> dict[str, Any]:
    """The customer's computed raw values: count, sum, average, min, max, paid count, big
    spend, spend per order; and its summary text."""
    keys = ["field_11", "field_12", "field_13", "field_14", "field_15", "field_16",
            "field_17", "field_18"]
    out: dict[str, Any] = {k: rec.get(k + "_raw") for k in keys}
    out["field_19"] = rec["field_19"]
    return out


def expect(count: int, amounts: list[float], paid: int, name: str,
           words: str) -> dict[str, Any]:
    """What the customer's fields hold for orders of ``amounts`` (the hosted rules: a count
    or sum of none is 0, an average, minimum or maximum of none is blank)."""
    total = float(sum(amounts))
    return {"field_11": count, "field_12": total,
            "field_13": total / len(amounts) if amounts else None,
            "field_14": min(amounts) if amounts else None,
            "field_15": max(amounts) if amounts else None,
            "field_16": paid, "field_17": float(sum(a for a in amounts if a > 50)),
            "field_18": total / max(count, 1), "field_19": f"{name}: {words} orders"}


def test_aggregates_over_either_side_kept_current(svc: LocalService) -> None:
    ann = create(svc, "object_2", {"field_10": "Ann"})
    bob = create(svc, "object_2", {"field_10": "Bob"})
    assert customer_values(ann) == expect(0, [], 0, "Ann", "zero")
    l1 = create(svc, "object_4", {"field_32": "SKU-1", "field_31": 2})
    l2 = create(svc, "object_4", {"field_32": "SKU-2", "field_31": 3})
    # orders hold the connection to their customer: the customer's aggregates count them
    o1 = create(svc, "object_3", {"field_20": "O-1", "field_21": [ann["id"]],
                                  "field_22": "40.00", "field_23": "Paid",
                                  "field_25": [l1["id"], l2["id"]]})
    o2 = create(svc, "object_3", {"field_20": "O-2", "field_21": [ann["id"]],
                                  "field_22": "60.00", "field_23": "Open"})
    o3 = create(svc, "object_3", {"field_20": "O-3", "field_21": [bob["id"]],
                                  "field_22": "100.00", "field_23": "Paid"})
    assert customer_values(get(svc, "object_2", ann["id"])) == \
        expect(2, [40, 60], 1, "Ann", "two")
    assert customer_values(get(svc, "object_2", bob["id"])) == \
        expect(1, [100], 1, "Bob", "one")
    # over the order's own connection, and a connected record's field in a text formula
    assert (o1["field_26_raw"], o1["field_27_raw"], o1["field_28"]) == (2, 5, "Ann / O-1")
    # a connected record changes: the other side's aggregate follows
    update(svc, "object_3", o2["id"], {"field_22": "70.00", "field_23": "Paid"})
    assert customer_values(get(svc, "object_2", ann["id"])) == \
        expect(2, [40, 70], 2, "Ann", "two")
    # moved to another customer: disconnected from one, connected to the other
    update(svc, "object_3", o2["id"], {"field_21": [bob["id"]]})
    assert customer_values(get(svc, "object_2", ann["id"])) == \
        expect(1, [40], 1, "Ann", "one")
    assert customer_values(get(svc, "object_2", bob["id"])) == \
        expect(2, [100, 70], 2, "Bob", "two")
    # disconnected altogether
    update(svc, "object_3", o1["id"], {"field_21": []})
    assert customer_values(get(svc, "object_2", ann["id"])) == expect(0, [], 0, "Ann", "zero")
    # deleted
    delete(svc, "object_3", o3["id"])
    assert customer_values(get(svc, "object_2", bob["id"])) == \
        expect(1, [70], 1, "Bob", "one")
    # the order's own side: a line changes or goes; a customer is renamed
    update(svc, "object_4", l1["id"], {"field_31": 10})
    assert get(svc, "object_3", o1["id"])["field_27_raw"] == 13
    delete(svc, "object_4", l2["id"])
    got = get(svc, "object_3", o1["id"])
    assert (got["field_26_raw"], got["field_27_raw"]) == (1, 10)
    update(svc, "object_2", bob["id"], {"field_10": "Robert"})
    assert get(svc, "object_3", o2["id"])["field_28"] == "Robert / O-2"
    assert get(svc, "object_2", bob["id"])["field_19"] == "Robert: one orders"


NOTE = {"field_40": "Hello World",
        "field_41": {"date": "03/14/2024", "hours": "09", "minutes": "05", "am_pm": "PM"},
        "field_42": 1042,
        "field_63": {"date": "03/15/2024", "hours": "11", "minutes": "05", "am_pm": "PM"}}
#: worked out from the hosted documentation of each function (docs/local-service.md)
TEXT_EXPECTED = {
    "field_43": "Hell", "field_44": "rld", "field_45": "World", "field_46": "11",
    "field_47": "hello world", "field_48": "HELLO WORLD", "field_49": "Hello world",
    "field_50": "[padded][padded  ][  padded]", "field_53": "Hell0 W0rld",
    "field_54": "H_ll_ W_rld", "field_55": "World", "field_56": "one thousand forty two",
    "field_57": "March Thursday", "field_58": "March 14, 2024 9:05 PM",
    "field_60": "HELLO! (not a call) left(",
}
EQUATION_EXPECTED: dict[str, float | None] = {
    "field_61": 155109.14, "field_62": 26.0, "field_64": 202403.0,
    "field_65": math.sqrt(1042) + 2 + 3 + 2 + 4 + 2 + 3 + 6 + 24 + 3 + 3 + 3,
    "field_66": None, "field_67": None,
}


def test_each_text_function_and_equation(svc: LocalService) -> None:
    assert set(TEXT_EXPECTED) | {"field_59"} == set(TEXT_FORMULAS)
    assert set(EQUATION_EXPECTED) == set(EQUATIONS)
    rec = create(svc, "object_5", NOTE)
    for key, want in TEXT_EXPECTED.items():
        assert rec[key] == want, (key, TEXT_FORMULAS[key], rec[key])
    assert re.fullmatch(r"[a-z0-9]{8}", rec["field_59"]), rec["field_59"]
    for key, value in EQUATION_EXPECTED.items():
        got = rec.get(key + "_raw")
        if value is None:  # a formula it cannot evaluate is blank, never an error
            assert got in (None, ""), (key, got)
            assert rec[key] == ""
        else:
            assert got == pytest.approx(value), (key, EQUATIONS[key][0], got)
    # a referenced field changes: every formula follows
    again = update(svc, "object_5", rec["id"], {"field_40": "Good Night", "field_42": 7})
    assert (again["field_43"], again["field_56"], again["field_61_raw"]) == \
        ("Good", "seven", 7.0)


def test_application_roles_and_refusals_name_their_field(svc: LocalService) -> None:
    r = requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/session",
                      json={"email": MEMBER["email"], "password": MEMBER["password"]},
                      timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["session"]["user"]["profile_keys"] == ["profile_7", "profile_8"]
    ok = create(svc, "object_1", {"field_2": {"email": "cy@example.com"},
                                  "field_5": ["profile_9", "profile_8"]})
    assert ok["field_5_raw"] == ["profile_9", "profile_8"]
    r = requests.post(_url(svc, "object_1"), json={"field_5": ["profile_2"]},
                      headers=svc.headers(), timeout=30)
    assert r.status_code == 400
    (err,) = r.json()["errors"]
    assert err["field"] == "field_5" and err["message"].startswith("field_5")
    assert "profile_2" in err["message"]
    r = requests.post(_url(svc, "object_3"), json={"field_33": "5d79645a0000000000000000"},
                      headers=svc.headers(), timeout=30)
    assert r.status_code == 400
    (err,) = r.json()["errors"]
    assert err["field"] == "field_33" and err["message"].startswith("field_33 (file):")


def test_generated_records_use_the_applications_roles_and_aggregates() -> None:
    with LocalService(demo=False, app=computed_document(), records=12, seed=3) as svc:
        roles = {"profile_7", "profile_8", "profile_9"}
        for obj, own in (("object_1", "profile_7"), ("object_6", "profile_9")):
            r = requests.get(_url(svc, obj), params={"rows_per_page": 1000},
                             headers=svc.headers(), timeout=30)
            held = [p for rec in r.json()["records"] for p in rec.get(
                "field_5_raw" if obj == "object_1" else "field_84_raw") or []]
            assert held and set(held) <= roles - {own}, (obj, held)
        customers = requests.get(_url(svc, "object_2"), params={"rows_per_page": 1000},
                                 headers=svc.headers(), timeout=30).json()["records"]
        orders = requests.get(_url(svc, "object_3"), params={"rows_per_page": 1000},
                              headers=svc.headers(), timeout=30).json()["records"]
        assert sum(c["field_11_raw"] for c in customers) == sum(
            1 for o in orders if o.get("field_21_raw"))
        for c in customers:
            mine = [float(o["field_22_raw"]) for o in orders
                    if [x["id"] for x in o.get("field_21_raw") or []] == [c["id"]]
                    and o.get("field_22_raw") is not None]
            assert c["field_12_raw"] == pytest.approx(sum(mine)), c["id"]


def test_all_users_is_a_role_of_a_real_application() -> None:
    """``all_users`` (the hosted sample's accounts role) is a user-roles value, for the
    toolkit's checks and for the service; a role the application lacks is refused."""
    spec = FieldSpec("field_36", "user_roles", "User Roles", object_key="object_6")
    assert UserRolesCodec().normalize(["all_users", "profile_15"], spec) == \
        ["all_users", "profile_15"]
    with LocalService(demo=False, app=hosted_sample_dir() / "application.json",
                      records=0) as svc:
        got = create(svc, "object_6", {"field_36": ["all_users", "profile_15"]})
        assert got["field_36_raw"] == ["all_users", "profile_15"]
        r = requests.post(_url(svc, "object_6"), json={"field_36": ["profile_2"]},
                          headers=svc.headers(), timeout=30)
        assert r.status_code == 400 and r.json()["errors"][0]["field"] == "field_36"


# ---- equations whose result is a date --------------------------------------------------
def _wall(display: str) -> dict[str, Any]:
    """A date write value from ``MM/DD/YYYY h:mmam``."""
    day, clock = display.split()
    hours, minutes = clock[:-2].split(":")
    return {"date": day, "hours": f"{int(hours):02d}", "minutes": minutes,
            "am_pm": clock[-2:].upper()}


def _raw_wall(raw: dict[str, Any]) -> str:
    """The wall clock a raw date object holds (its timestamp is that wall clock as UTC)."""
    stamp = datetime.fromtimestamp(raw["unix_timestamp"] / 1000, timezone.utc)
    assert raw["iso_timestamp"] == stamp.strftime("%Y-%m-%dT%H:%M:00.000Z")
    return stamp.strftime("%Y-%m-%d %H:%M")


#: (field_41, field_63) -> {field: (display, raw wall clock | number)}: worked out by hand
#: from the hosted documentation (date_type converts a number to that unit) and the
#: choices in docs/local-service.md (the application's timezone is America/Chicago)
DATE_CASES: list[tuple[str, str, dict[str, tuple[Any, Any]]]] = [
    ("03/14/2024 9:05pm", "03/15/2024 11:05pm", {
        "field_68": ("04/13/2024 9:05pm", "2024-04-13 21:05"),
        "field_69": ("Mar 15, 2024 21:05", "2024-03-15 21:05"),
        "field_70": ("14/04/2024", "2024-04-14 21:05"),     # time ignored in the display
        "field_71": ("03/30/2024 9:05pm", "2024-03-30 21:05"),  # a date equation's result
        "field_72": (26, 26.0),     # a date equation whose result is a number
        "field_73": ("", None),     # a number where the format wants a date: blank
        "field_74": ("", None)}),   # past any date a column holds: blank, never a 500
    # daylight saving starts on 03/10/2024 at 2am: a day is a calendar day (the wall
    # clock kept), 24 hours are 24 hours (the wall clock moves on by one), and the span
    # between the two 10pms is 23 hours, or 1 day
    ("03/09/2024 10:00pm", "03/10/2024 10:00pm", {
        "field_68": ("04/08/2024 10:00pm", "2024-04-08 22:00"),
        "field_69": ("Mar 10, 2024 23:00", "2024-03-10 23:00"),
        "field_70": ("09/04/2024", "2024-04-09 22:00"),
        "field_72": (23, 23.0), "field_76": (1, 1.0)}),
    # and ends on 11/03/2024 at 2am: 24 hours later is 9pm, the span 25 hours (1 day)
    ("11/02/2024 10:00pm", "11/03/2024 10:00pm", {
        "field_69": ("Nov 3, 2024 21:00", "2024-11-03 21:00"),
        "field_72": (25, 25.0), "field_76": (1, 1.0)}),
    # a calendar month from January 31st: the month's last day
    ("01/31/2024 8:00am", "", {
        "field_70": ("29/02/2024", "2024-02-29 08:00"),
        "field_72": ("", None)}),
]


def _check_dates(rec: dict[str, Any], want: dict[str, tuple[Any, Any]]) -> None:
    for key, (display, value) in want.items():
        raw = rec.get(key + "_raw")
        assert rec[key] == display, (key, DATE_EQUATIONS[key][0], rec[key])
        if isinstance(value, str):
            assert isinstance(raw, dict), (key, raw)
            assert _raw_wall(raw) == value, (key, raw)
            assert raw["date"] == raw["date_formatted"] == display.split()[0] \
                or DATE_EQUATIONS[key][3] != "mm/dd/yyyy", (key, raw)
        else:
            assert raw in (None, "") if value is None else raw == pytest.approx(value), \
                (key, raw)


@pytest.mark.parametrize("case", DATE_CASES, ids=lambda c: c[0])
def test_date_equations_compute_dates_in_the_applications_timezone(
        svc: LocalService, case: tuple[str, str, dict[str, tuple[Any, Any]]]) -> None:
    start, until, want = case
    rec = create(svc, "object_5", {"field_40": "dates", "field_41": _wall(start),
                                   "field_63": _wall(until) if until else ""})
    _check_dates(rec, want)
    _check_dates(get(svc, "object_5", rec["id"]), want)
    r = requests.get(_url(svc, "object_5", rec["id"]), params={"format": "raw"},
                     headers=svc.headers(), timeout=30)
    assert r.status_code == 200
    for key, (_display, value) in want.items():
        if isinstance(value, str):
            assert _raw_wall(r.json()[key]) == value


def test_date_equations_follow_their_dates_and_filter_as_dates(svc: LocalService) -> None:
    rec = create(svc, "object_5", {"field_40": "follow", "field_41": _wall("03/14/2024 9:05pm"),
                                   "field_63": _wall("03/15/2024 11:05pm")})
    moved = update(svc, "object_5", rec["id"], {"field_41": _wall("03/09/2024 10:00pm")})
    # field_71 reads field_68, itself an equation: both follow; the span is six days and
    # five minutes, less the hour daylight saving skips
    assert (moved["field_68"], moved["field_71"], moved["field_72_raw"]) == \
        ("04/08/2024 10:00pm", "03/25/2024 10:00pm", pytest.approx(144 + 5 / 60))
    cleared = update(svc, "object_5", rec["id"], {"field_41": ""})
    assert all(cleared[k] == "" and cleared.get(k + "_raw") in (None, "")
               for k in ("field_68", "field_69", "field_70", "field_71", "field_72"))
    update(svc, "object_5", rec["id"], {"field_41": _wall("06/01/2031 8:00am")})
    # a date result filters as a date ("is after" the day, "is" the day), and sorts by it
    for rule, hit in (({"operator": "is after", "value": "06/30/2031"}, True),
                      ({"operator": "is after", "value": "07/01/2031"}, False),
                      ({"operator": "is", "value": "07/01/2031"}, True)):
        params = {"filters": '{"match": "and", "rules": [' + _json_rule("field_68", rule)
                  + "]}", "rows_per_page": 1000}
        r = requests.get(_url(svc, "object_5"), params=params, headers=svc.headers(),
                         timeout=30)
        assert r.status_code == 200, r.text
        assert (rec["id"] in [x["id"] for x in r.json()["records"]]) is hit, rule
    r = requests.get(_url(svc, "object_5"), params={"sort_field": "field_68",
                                                    "sort_order": "desc", "rows_per_page": 1},
                     headers=svc.headers(), timeout=30)
    assert r.status_code == 200 and r.json()["records"][0]["id"] == rec["id"]


def test_current_time_is_the_service_clock_at_the_write(svc: LocalService) -> None:
    zone = ZoneInfo("America/Chicago")
    before = datetime.now(zone).replace(tzinfo=None, second=0, microsecond=0)
    rec = create(svc, "object_5", {"field_40": "now"})
    after = datetime.now(zone).replace(tzinfo=None)
    day = timedelta(days=1)
    got = datetime.strptime(_raw_wall(rec["field_75_raw"]), "%Y-%m-%d %H:%M")
    assert before + day <= got <= after + day, (before, got, after)


def _json_rule(key: str, rule: dict[str, str]) -> str:
    return json.dumps({"field": key, **rule})


def test_toolkit_reads_a_date_result_as_a_tz_aware_date_column(svc: LocalService) -> None:
    ids = [create(svc, "object_5", {"field_40": "read", "field_41": _wall(start),
                                    "field_63": _wall(until) if until else ""})["id"]
           for start, until, _ in DATE_CASES]
    client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                    backoff=0.01)
    frame = read_object(client, "object_5", columns="keys", progress=False).main
    zone = "America/Chicago"
    assert str(frame["field_68"].dtype) == f"datetime64[ns, {zone}]"
    assert str(frame["field_69"].dtype) == f"datetime64[ns, {zone}]"
    assert str(frame["field_72"].dtype) == "Float64"   # a date equation's number result
    assert str(frame["field_76"].dtype) == "Float64"
    assert str(frame["field_62"].dtype) == "Float64"   # a numeric equation stays numeric
    for rid, (_start, _until, want) in zip(ids, DATE_CASES, strict=True):
        for key, (_display, value) in want.items():
            got = frame.loc[rid, key]
            if key in ("field_72", "field_76") or value is None:
                assert (pd.isna(got) if value is None else got == value), (rid, key, got)
            else:
                assert got == pd.Timestamp(value, tz=zone), (rid, key, got)
    # the instants, not only the wall clocks: across the change 24 hours are 24 hours
    after_spring = frame.loc[ids[1]]
    assert after_spring["field_69"] - after_spring["field_41"] == pd.Timedelta(hours=24)
    assert after_spring["field_68"].utcoffset() == pd.Timedelta(hours=-5)
