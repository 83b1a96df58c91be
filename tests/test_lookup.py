"""Objects, views and fields by key or name (svc_frames/lookup.py), and every public call
that takes one: a key, a name and a differently cased name give the same thing; an
ambiguous or unknown name is a UsageError naming the candidates, with no request sent but
the schema's."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from svc_frames import Client, UsageError, export, read_object, read_view
from svc_frames.kinds.base import FieldSpec
from svc_frames.lookup import field_key, fold, object_key, target_keys, view_keys
from svc_frames.schema import Schema
from svc_frames.server import LocalService
from svc_frames.server.demo_app import demo_document


@pytest.fixture(scope="module")
def twin() -> Iterator[LocalService]:
    """The demo with a second object named "Parts " (a trailing space: the same name once
    spaces are ignored) and a field of Work Orders labelled "status" beside "Status"."""
    doc = copy.deepcopy(demo_document())
    parts = next(o for o in doc["objects"] if o["key"] == "object_2")
    other = copy.deepcopy(parts)
    other["key"], other["name"] = "object_4", "parts"
    for f in other["fields"]:
        f["key"] = f["key"].replace("field_", "field_9")
    other["identifier"] = other["identifier"].replace("field_", "field_9")
    doc["objects"].append(other)
    with LocalService(demo=False, app=doc, records=10) as svc:
        yield svc


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)


def test_fold_ignores_case_and_space_runs() -> None:
    assert fold("  Work \t Orders ") == fold("work orders")


def test_object_by_key_name_and_other_case(service: LocalService) -> None:
    schema = Schema(client_of(service).schema())
    assert object_key(schema, "object_3") == "object_3"
    assert object_key(schema, "Work Orders") == "object_3"
    assert object_key(schema, "work  ORDERS") == "object_3"


def test_unknown_names_say_the_closest_and_the_call_that_lists_them(service: LocalService
                                                                    ) -> None:
    schema = Schema(client_of(service).schema())
    with pytest.raises(UsageError, match=r"did you mean 'Work Orders' \(object_3\)\?.*"
                                         r"svc_frames.objects\(client\)"):
        object_key(schema, "Work Order")
    with pytest.raises(UsageError, match=r"unknown object 'object_99'.*'Parts' \(object_2\)"):
        object_key(schema, "object_99")


def test_ambiguous_names_list_both_keys(twin: LocalService) -> None:
    schema = Schema(client_of(twin).schema())
    assert object_key(schema, "Parts") == "object_2"        # exact first
    with pytest.raises(UsageError, match=r"ambiguous.*object_2.*object_4"):
        object_key(schema, "PARTS")


def test_views_by_keys_name_and_scene_and_view_names(service: LocalService) -> None:
    schema = Schema(client_of(service).schema())
    assert view_keys(schema, "scene_2/view_3") == ("scene_2", "view_3")
    assert view_keys(schema, ("scene_2", "view_3")) == ("scene_2", "view_3")
    assert view_keys(schema, "dispatch board") == ("scene_2", "view_3")
    assert view_keys(schema, ("Dispatch", "Dispatch Board")) == ("scene_2", "view_3")
    assert target_keys(schema, "Dispatch board") == ("scene_2", "view_3")
    assert target_keys(schema, "Work Orders") == "object_3"
    with pytest.raises(UsageError, match="unknown view scene_9/view_1"):
        view_keys(schema, "scene_9/view_1")


def test_fields_by_key_or_label() -> None:
    specs = [FieldSpec("field_1", "short_text", "Status"), FieldSpec("field_2", "number", "Qty"),
             FieldSpec("field_3", "short_text", "status")]
    assert field_key(specs, "field_2", "X") == "field_2"
    assert field_key(specs, "Qty", "X") == "field_2"
    assert field_key(specs, "qty", "X") == "field_2"
    assert field_key(specs, "Status", "X") == "field_1"   # exact first
    with pytest.raises(UsageError, match=r"ambiguous.*field_1.*field_3"):
        field_key(specs, "STATUS", "X")
    with pytest.raises(UsageError, match=r"X has no field 'field_9'"):
        field_key(specs, "field_9", "X")
    with pytest.raises(UsageError, match=r"did you mean 'Qty' \(field_2\)"):
        field_key(specs, "Qtys", "X")


CALLS: dict[str, Any] = {
    "read_object": lambda c, t, tmp: read_object(c, t, progress=False, columns="keys"),
    "export": lambda c, t, tmp: export(c, t, tmp / "out", progress=False, columns="keys"),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize(("target", "outcome"), [
    ("object_2", "ok"), ("Parts", "ok"), ("parts ", "ambiguous"), ("Partz", "unknown"),
    ("object_99", "unknown")])
def test_every_call_that_takes_an_object(twin: LocalService, tmp_path: Any, call: str,
                                         target: str, outcome: str) -> None:
    client = client_of(twin)
    client.schema()
    twin.request_log.clear()
    if outcome == "ok":
        CALLS[call](client, target, tmp_path)
        return
    with pytest.raises(UsageError, match="ambiguous" if outcome == "ambiguous" else "unknown"):
        CALLS[call](client, target, tmp_path)
    if target != "object_99":  # a key is tried as it is: the service's 404 is then told
        assert twin.request_log.count() == 0


def test_read_view_takes_names(service: LocalService) -> None:
    client = client_of(service)
    manager = next(u for u in service.users if "profile_2" in u["profile_keys"])
    client.login(manager["email"], manager["password"])
    a = read_view(client, "scene_2/view_3", progress=False, columns="keys")
    b = read_view(client, "Dispatch", "dispatch board", progress=False, columns="keys")
    c = read_view(client, "Dispatch board", progress=False, columns="keys")
    assert a.main.index.equals(b.main.index) and a.main.index.equals(c.main.index)
    with pytest.raises(UsageError, match="use read_object"):
        read_view(client, "object_3", columns="keys")
