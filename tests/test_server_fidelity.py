"""The local service serves a real application document (--app) and renders the hosted
service's own records the way the hosted service did."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from svc_frames.server import LocalService
from svc_frames.testing import hosted_sample_dir

FIXTURES = hosted_sample_dir()

# kinds whose stored value refers to things this app does not hold (assets, connected
# records), or that the service computes with functions it does not implement
NOT_REPLAYED = {"file", "connection", "auto_increment", "equation", "concatenation",
                "signature"}


@pytest.fixture(scope="module")
def hosted_app() -> Iterator[LocalService]:
    with LocalService(demo=False, app=FIXTURES / "application.json", records=0) as svc:
        yield svc


def test_schema_is_served_as_given(hosted_app: LocalService) -> None:
    doc = json.loads((FIXTURES / "application.json").read_text())["application"]
    r = requests.get(f"{hosted_app.base_url}/v1/applications/{doc['id']}", timeout=30)
    assert r.status_code == 200
    app = r.json()["application"]
    assert [o["key"] for o in app["objects"]] == [o["key"] for o in doc["objects"]]
    assert app["settings"]["timezone"] == "Central Time (US & Canada)"


def test_hosted_records_render_identically(hosted_app: LocalService) -> None:
    records = json.loads((FIXTURES / "records.json").read_text())["records"]
    obj = hosted_app.app.object("object_3")
    compared = 0
    for rec in records:
        body: dict[str, Any] = {}
        for f in obj.fields:
            replay = f.kind not in NOT_REPLAYED and not (
                f.kind == "image" and (f.format or {}).get("source") != "url")
            if replay and f.key + "_raw" in rec:
                body[f.key] = rec[f.key + "_raw"]
        r = requests.post(f"{hosted_app.base_url}/v1/objects/object_3/records", json=body,
                          headers=hosted_app.headers(), timeout=30)
        assert r.status_code == 200, r.text
        got = r.json()
        for key in body:
            assert got[key] == rec[key], (key, rec[key], got[key])
            compared += 1
    assert compared > 150


def test_hosted_text_formulas_computed_as_hosted(hosted_app: LocalService) -> None:
    """The application's two text formulas (``left({field_7}, 2) two three (four)`` and
    ``getDateMonthOfYearName({field_13}) pizza getDateDayOfWeekName({field_13}) ``), for
    each of the 25 hosted records, give the text the hosted service answered."""
    records = json.loads((FIXTURES / "records.json").read_text())["records"]
    formulas = [f.key for f in hosted_app.app.object("object_3").fields
                if f.kind == "concatenation"]
    assert formulas == ["field_9", "field_76"]
    for rec in records:
        body = {k: rec[k + "_raw"] for k in ("field_7", "field_13") if k + "_raw" in rec}
        r = requests.post(f"{hosted_app.base_url}/v1/objects/object_3/records", json=body,
                          headers=hosted_app.headers(), timeout=30)
        assert r.status_code == 200, r.text
        got = r.json()
        for key in formulas:
            assert got[key] == rec[key], (rec["id"], key, rec[key], got[key])
