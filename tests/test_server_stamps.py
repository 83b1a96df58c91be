"""Stamps as the hosted service makes them: record rules (the demo's "Last Modified"
stamp, an object-level rule) run for form writes and the application's own pages, never
for object-based API writes; write_back through object endpoints sets the stamp itself,
so a refresh from another client still sees its changes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from fixtures.guard import FAST_GUARD

from svc_frames import Client, read_object, write_back
from svc_frames.refreshing.policy import refresh
from svc_frames.schema import Schema, modified_field_of
from svc_frames.server import LocalService
from svc_frames.server.demo_app import demo_document
from svc_frames.testing import login, object_url, view_url

WO, STAMP = "object_3", "field_46"


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=11) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def stamp_of(record: dict[str, Any]) -> dt.datetime | None:
    raw = record.get(f"{STAMP}_raw")
    if not raw:
        return None
    return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=raw["unix_timestamp"])


def stamped_now(svc: LocalService, record: dict[str, Any]) -> bool:
    """The record carries a stamp of the service's current minute (or the one before)."""
    got = stamp_of(record)
    now = svc.app.local_now()
    return got is not None and now - dt.timedelta(minutes=2) <= got <= now


def stored(svc: LocalService, rid: str) -> dict[str, Any]:
    r = requests.get(object_url(svc, WO, rid), headers=svc.headers(), timeout=30)
    r.raise_for_status()
    out: dict[str, Any] = r.json()
    return out


def test_the_schema_reader_and_refresh_agree_on_the_stamped_field() -> None:
    doc = demo_document()
    for key in ("object_1", "object_2", "object_3"):
        assert Schema.of(doc).stamped_field(key) == modified_field_of(doc, key)
    assert Schema.of(doc).stamped_field(WO) == STAMP
    assert Schema.of(None).stamped_field(WO) is None


def test_an_object_api_write_does_not_stamp(svc: LocalService) -> None:
    rid = read_object(client_of(svc), WO, limit=1, columns="keys").main.index[0]
    before = stamp_of(stored(svc, rid))
    r = requests.put(object_url(svc, WO, rid), json={"field_12": "through the API"},
                     headers=svc.headers(), timeout=30)
    assert r.status_code == 200 and r.json()["field_12"] == "through the API"
    assert stamp_of(r.json()) == before and not stamped_now(svc, r.json())
    made = requests.post(object_url(svc, WO), json={"field_12": "new through the API"},
                         headers=svc.headers(), timeout=30)
    assert made.status_code == 200 and stamp_of(made.json()) is None


def test_form_writes_and_own_page_writes_stamp(svc: LocalService) -> None:
    manager = login(svc, "manager@example.com")
    h = {**svc.headers(view=True), "Authorization": manager}
    made = requests.post(view_url(svc, "scene_2", "view_4"), json={"field_12": "by form"},
                         headers=h, timeout=30)
    assert made.status_code == 200, made.text
    rid = made.json()["record"]["id"]
    assert stamped_now(svc, stored(svc, rid))   # the insert form's create is stamped
    # an update form (the user's own work orders): stamped too
    mine = requests.get(view_url(svc, "scene_4", "view_6"), headers=h, timeout=30).json()
    assert mine["records"], "the manager has no work order assigned"
    own = mine["records"][0]["id"]
    requests.put(object_url(svc, WO, own), json={STAMP: "01/02/2020 3:00pm"},
                 headers=svc.headers(), timeout=30).raise_for_status()
    r = requests.put(view_url(svc, "scene_4", "view_7", own), json={"field_14": "noted"},
                     headers=h, timeout=30)
    assert r.status_code == 200, r.text
    assert stamped_now(svc, stored(svc, own))
    # another user on the application's own pages
    other = read_object(client_of(svc), WO, limit=3, columns="keys").main.index[2]
    assert not stamped_now(svc, stored(svc, other))
    assert stamped_now(svc, svc.pages.update_record(WO, other, {"field_12": "by a user"}))


def test_inline_edits_run_no_record_rule(svc: LocalService) -> None:
    # record rules belong to forms; a search with inline editing is not one
    token = login(svc, 0)
    h = {**svc.headers(view=True), "Authorization": token}
    rid = read_object(client_of(svc), WO, limit=1, columns="keys").main.index[0]
    before = stamp_of(stored(svc, rid))
    r = requests.put(view_url(svc, "scene_3", "view_5", rid), json={"field_12": "inline"},
                     headers=h, timeout=30)
    assert r.status_code == 200, r.text
    after = stored(svc, rid)
    assert after["field_12"] == "inline" and stamp_of(after) == before


def test_write_back_stamps_itself_and_another_client_refresh_sees_it(
        svc: LocalService) -> None:
    theirs = client_of(svc)
    watched = read_object(theirs, WO, rows_per_page=10, columns="keys")
    ours = client_of(svc)
    frames = read_object(ours, WO, columns="keys")
    rid = frames.main.index[3]   # an old record: far from the newest stamps
    frames.main.loc[rid, "field_12"] = "written back"
    report = write_back(ours, frames, progress=False, **FAST_GUARD)
    assert report.ok
    server = stored(svc, rid)
    assert server["field_12"] == "written back" and stamped_now(svc, server)
    # the outcome lists the edit alone: the stamp is the service's business, not the user's
    assert list(report.table.loc[report.table["record_id"] == rid, "fields"]) == ["field_12"]
    seen = refresh(theirs, watched)
    assert rid in seen.changed and not seen.full
    assert watched.main.at[rid, "field_12"] == "written back"


def test_an_edited_stamp_is_sent_as_edited(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, columns="keys")
    rid = frames.main.index[5]
    when = frames.main.at[rid, STAMP].replace(year=2021, month=6, day=1, hour=9, minute=30)
    frames.main.loc[rid, STAMP] = when
    write_back(c, frames, progress=False, **FAST_GUARD)
    got = read_object(client_of(svc), WO, columns="keys").main.at[rid, STAMP]
    assert got == when
