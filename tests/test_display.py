"""Frames and App show themselves: a short text repr and a notebook display (the object or
view, its records, its fields by name, label and kind, its tables, what was edited since
the load), every name from the application escaped in the HTML.

Evaluating loaded frames in a notebook printed about 10 KB of ``FieldSpec(...)`` with their
format dictionaries, and there was no notebook display."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pandas as pd
import pytest
from fixtures.hostile_app import hostile_document, seed

from svc_frames.application import read_app
from svc_frames.errors import NameWarning
from svc_frames.frames import Frames
from svc_frames.loaders import read_object, read_view
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for


@pytest.fixture(scope="module")
def hostile() -> Iterator[Client]:
    with LocalService(demo=False, app=hostile_document(), records=0) as svc:
        client = client_for(svc)
        seed(client)
        yield client


def test_the_text_repr_is_short_and_names_fields_by_label_and_kind(client: Client) -> None:
    orders = read_object(client, "object_3", columns="keys", progress=False)
    text = repr(orders)
    assert "FieldSpec" not in text and len(text) < 1500, text
    lines = text.splitlines()
    assert lines[0] == (f"Frames of Work Orders (object_3): {len(orders.main):,} records, "
                        f"{orders.main.shape[1]} columns by key, 5 tables")
    assert "edits: no edits since the load" in text
    assert "field_12 Title (short_text)" in text and "frames.fields lists them all" in text
    assert "field_41 Parts (" in text   # a table, by key and label, with its rows
    assert all(len(line) <= 100 for line in lines)
    by_label = repr(read_object(client, "object_3", columns="labels", progress=False))
    assert "columns by label" in by_label and "Title (short_text)" in by_label
    assert "Parts (" in by_label and "field_12" not in by_label


def test_edits_since_the_load_are_counted_and_said(client: Client) -> None:
    orders = read_object(client, "object_3", columns="keys", progress=False)
    ids = orders.main.index[:2]
    orders.main.loc[ids, "field_12"] = ["first edit", "second edit"]
    orders.main.loc[ids[:1], "field_16"] = orders.main.loc[ids[:1], "field_16"].fillna(0) + 1
    orders.main = orders.main.drop(orders.main.index[-1])
    orders.main["my_calc"] = 1.0
    flat = " ".join(repr(orders).split())   # the lines wrap at 100 characters
    assert "edits: 2 records edited (3 cells), 0 added, 1 removed;" in flat, flat
    assert "1 column not loaded: my_calc" in flat
    html = orders._repr_html_()
    assert "2 records edited (3 cells)" in html and "svcf-edits" in html


def test_a_view_and_frames_not_loaded_by_svc_frames_show_too(client: Client,
                                                             service: LocalService) -> None:
    manager = next(u for u in service.users if "profile_2" in u["profile_keys"])
    viewer = client_for(service)
    viewer.login(manager["email"], manager["password"])
    board = read_view(viewer, "scene_2/view_3", columns="keys", progress=False)
    assert repr(board).startswith("Frames of ") and "(scene_2/view_3)" in repr(board)
    bare = Frames(pd.DataFrame({"a": [1, 2]}))
    assert repr(bare).startswith("Frames of frames not loaded by svc_frames: 2 records")
    assert "<table" in bare._repr_html_()


def test_the_app_shows_each_objects_edits(client: Client) -> None:
    app = read_app(client, ["Parts", "Work Orders"], columns="keys", progress=False)
    assert "edits:" not in repr(app)
    orders = app["object_3"]
    orders.main.loc[orders.main.index[:1], "field_12"] = "edited"
    text = repr(app)
    assert "edits: object_3 Work Orders: 1 record edited (1 cell)" in text, text
    assert "1 record edited (1 cell)" in app._repr_html_()


@pytest.mark.parametrize("columns", ["keys", "labels"])
def test_hostile_names_are_escaped_in_the_html(hostile: Client, columns: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NameWarning)
        frames = read_object(hostile, "object_1", columns=columns,  # type: ignore[arg-type]
                             progress=False)
        app = read_app(hostile, ["object_1", "object_2"],
                       columns=columns, progress=False)  # type: ignore[arg-type]
    frames.main.loc[frames.main.index[:1], frames.main.columns[0]] = "<script>x</script>"
    for shown in (frames._repr_html_(), app._repr_html_()):
        assert "<b>Rich</b>" not in shown and "<script>" not in shown
    assert "&lt;b&gt;Rich&lt;/b&gt;" in frames._repr_html_()
    # a text repr keeps a label with a line break or control character on one line
    for line in repr(frames).splitlines():
        assert line.startswith(("Frames of ", "  ")), line
