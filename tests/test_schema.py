"""svc_frames.schema: one reader of the application schema, tolerant of what it lacks.

"Which fields does a view show" must have one answer, the one the service renders: the
demo views are checked against the fields the local service actually serves, and the
hosted sample's forms (fields nested in groups/columns/inputs) against their documents.
"""

from __future__ import annotations

import json
from typing import Any

import requests

from svc_frames.schema import Schema, ViewColumn, view_columns
from svc_frames.server import LocalService
from svc_frames.testing import hosted_sample_dir, login, view_url


def _hosted_app() -> dict[str, Any]:
    doc = json.loads((hosted_sample_dir() / "application.json").read_text())
    return dict(doc.get("application", doc))


def test_empty_schema_answers_none_not_errors() -> None:
    s = Schema.of(None)
    assert not s.available
    assert s.object_fields("object_1") is None
    assert s.view_field_keys("scene_1", "view_1") is None
    assert s.timezone is None and s.timezone_name is None
    assert s.object_name("object_1") == "" and s.view_object("scene_1", "view_1") == ""
    assert s.connections() == [] and s.all_fields() == {}


def test_hosted_sample_objects_views_and_forms() -> None:
    app = _hosted_app()
    s = Schema.of(app)
    assert s.available and s.object_keys() == [o["key"] for o in app["objects"]]
    first = app["objects"][0]
    fields = s.object_fields(first["key"])
    assert fields is not None and [f.key for f in fields] == [f["key"] for f in first["fields"]]
    # a form nests its inputs in groups -> columns -> inputs: every one is found, once
    assert s.view_field_keys("scene_2", "view_2") == ["field_32", "field_33"]
    # a table's columns
    assert s.view_field_keys("scene_1", "view_1") == ["field_55"]
    assert s.view_object("scene_1", "view_1") == "object_4"
    assert s.timezone is not None  # the hosted display name resolves


def test_view_columns_keeps_connection_fields_and_bare_keys() -> None:
    doc = {"columns": [{"field": {"key": "field_9"}, "connection_field": {"key": "field_2"}},
                       {"field": {"key": "field_9"}}, {"key": "field_4"}, {"key": "scene_1"},
                       {"field": {"key": "field_4"}}],
           "groups": [{"columns": [{"inputs": [{"field": {"key": "field_7"}}]}]}]}
    assert view_columns(doc) == [ViewColumn("field_9", "field_2"), ViewColumn("field_9"),
                                 ViewColumn("field_4"), ViewColumn("field_7")]


def test_view_fields_are_what_the_local_service_renders() -> None:
    with LocalService(demo=True, records=5, rate_limit=0) as svc:
        app = requests.get(f"{svc.base_url}/v1/applications/{svc.app_id}", timeout=10).json()
        s = Schema.of(app["application"])
        token = login(svc)
        checked = 0
        for scene, view, doc in s.views():
            if doc.get("type") not in ("table", "search", "list", "details"):
                continue
            resp = requests.get(view_url(svc, scene, view), timeout=10,
                                headers=svc.headers(view=True, token=token))
            if resp.status_code != 200 or not resp.json()["records"]:
                continue
            served = {k.removesuffix("_raw") for k in resp.json()["records"][0]
                      if k.startswith("field_")}
            assert served == set(s.view_field_keys(scene, view) or ()), (scene, view)
            checked += 1
        assert checked >= 2


def test_connections_from_the_demo_schema() -> None:
    with LocalService(demo=True, records=5, rate_limit=0) as svc:
        app = requests.get(f"{svc.base_url}/v1/applications/{svc.app_id}", timeout=10).json()
    s = Schema.of(app["application"])
    conns = s.connections()
    assert conns, "the demo application has connections"
    for c in conns:
        assert s.object(c.from_object) is not None and s.object(c.to_object) is not None
        spec = s.field(c.from_object, c.field)
        assert spec is not None and spec.kind == "connection"
