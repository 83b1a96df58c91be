"""svc_frames.objects / views / fields (svc_frames/catalog.py) and frames.fields: what an
application holds, with the keys and the names a newcomer looks up."""

from __future__ import annotations

import pandas as pd
import pytest

import svc_frames
from svc_frames import Client, UsageError, read_object
from svc_frames.server import LocalService


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)


def test_objects_lists_keys_names_and_connections(service: LocalService) -> None:
    objs = svc_frames.objects(client_of(service))
    assert list(objs.index) == ["object_1", "object_2", "object_3"]
    assert objs.loc["object_3", "name"] == "Work Orders"
    assert objs.loc["object_3", "identifier"] == "Title"
    assert "Parts -> Parts" in objs.loc["object_3", "connections"]


def test_views_say_which_need_a_login(service: LocalService) -> None:
    views = svc_frames.views(client_of(service))
    assert views.loc["scene_2/view_3", "name"] == "Dispatch board"
    assert bool(views.loc["scene_2/view_3", "login"]) and not bool(views.loc["scene_1/view_1", "login"])
    assert views.loc["scene_4/view_8", "object"] == "object_1"


def test_fields_give_the_columns_a_load_gives(service: LocalService) -> None:
    client = client_of(service)
    by_key = svc_frames.fields(client, "work orders", columns="keys")
    assert by_key.loc["field_27", "label"] == "Status"
    assert by_key.loc["field_27", "choices"][0] == "Open"
    assert by_key.loc["field_41", "connects_to"] == "object_2"
    assert by_key.loc["field_41", "table"] == "field_41" and by_key.loc["field_41", "columns"] == []
    assert "field_34.latitude" in by_key.loc["field_34", "columns"]
    frames = read_object(client, "object_3", limit=5, progress=False, columns="keys")
    every_column = {c for cols in by_key["columns"] for c in cols}
    assert set(frames.main.columns) <= every_column
    assert set(frames.tables) <= set(by_key["table"].dropna())
    labels = svc_frames.fields(client, "object_3", columns="labels")
    assert "Site.latitude" in labels.loc["field_34", "columns"]


def test_frames_fields_equal_the_catalog_for_an_object(service: LocalService) -> None:
    client = client_of(service)
    frames = read_object(client, "Parts", columns="labels", progress=False)
    pd.testing.assert_frame_equal(frames.fields,
                                  svc_frames.fields(client, "Parts", columns="labels"))


def test_fields_of_a_view_are_the_fields_it_shows(service: LocalService) -> None:
    shown = svc_frames.fields(client_of(service), "scene_2/view_3", columns="keys")
    assert list(shown.index) == ["field_24", "field_12", "field_27", "field_42", "field_41",
                                 "field_19"]


def test_unknown_names_are_refused_with_the_closest(service: LocalService) -> None:
    with pytest.raises(UsageError, match=r"did you mean 'Work Orders' \(object_3\)"):
        svc_frames.fields(client_of(service), "Work Order", columns="keys")
    with pytest.raises(UsageError, match="columns"):
        svc_frames.fields(client_of(service), "object_3", columns="names")  # type: ignore[arg-type]
