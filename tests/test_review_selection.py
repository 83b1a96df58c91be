"""The review's selection state, plainly: ticks, filter, pages and what Apply sends, with
no widget and no front end (the widget over it: test_widgets.py)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.reviewing.selection import Selection
from svc_frames.server import LocalService
from svc_frames.writeback import Plan, diff

ORDERS = "object_3"  # Work Orders (svc_frames/server/demo_app.py documents the demo keys)
TITLE, PRIORITY = "field_12", "field_25"


@pytest.fixture(scope="module")
def orders(service: LocalService) -> Frames:
    client = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                    rate_limit=0)
    return read_object(client, ORDERS, progress=False, columns="keys")


def edited_plan(orders: Frames, n: int = 5) -> tuple[Plan, list[str]]:
    """A plan retitling the first ``n`` orders ("Order 0: a gate" ...)."""
    frames = orders.snapshot()
    ids = [str(i) for i in frames.main.index[:n]]
    things = ["door", "GATE", "roof", "fence", "gate post", "shed", "well"]
    for i, rid in enumerate(ids):
        frames.main.loc[rid, TITLE] = f"Order {i}: a {things[i % len(things)]}"
    return diff(frames, orders), ids


def test_the_state_imports_no_widget_library() -> None:
    code = ("import sys, svc_frames.reviewing.selection; "
            "print('ipywidgets' in sys.modules, 'IPython' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]


def test_every_record_starts_ticked_and_ticks_follow_include_exclude_toggle(
        orders: Frames) -> None:
    plan, ids = edited_plan(orders)
    sel = Selection(plan)
    assert sel.record_ids == ids and sel.selected == ids and sel.count == 5
    sel.exclude(ids[1:3])
    assert sel.selected == [ids[0], *ids[3:]] and sel.count == 3
    sel.exclude(ids[1:3])                          # again: nothing counted twice
    assert sel.count == 3
    sel.include(ids[2])                            # one id as a str
    assert sel.selected == [ids[0], *ids[2:]] and sel.is_selected(ids[2])
    assert sel.toggle(ids[0], False) is True
    assert sel.toggle(ids[0], False) is False      # a box set to what it shows: no change
    assert sel.selected == ids[2:] and sel.count == 3
    assert [c[0] for c in sel.rows[ids[0]]] == ["update"]
    assert {c[1] for c in sel.rows[ids[0]]} == {TITLE}


def test_an_id_not_in_the_plan_is_refused_and_nothing_changes(orders: Frames) -> None:
    plan, ids = edited_plan(orders)
    sel = Selection(plan)
    with pytest.raises(UsageError, match="not-an-id"):
        sel.exclude([ids[0], "not-an-id"])
    assert sel.selected == ids


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "10"])
def test_a_page_size_that_is_not_a_positive_integer_is_refused(orders: Frames,
                                                               bad: object) -> None:
    plan, _ids = edited_plan(orders)
    with pytest.raises(UsageError, match="page_size must be a positive integer"):
        Selection(plan, page_size=bad)  # type: ignore[arg-type]


def test_what_is_not_a_plan_is_refused(orders: Frames) -> None:
    with pytest.raises(UsageError, match="DataFrame"):
        Selection(orders.main)  # type: ignore[arg-type]


def test_the_filter_searches_ids_values_and_names_in_any_case_and_keeps_ticks(
        orders: Frames) -> None:
    plan, ids = edited_plan(orders)
    sel = Selection(plan, page_size=2)
    sel.exclude([ids[1]])
    sel.show_page(1)
    sel.set_filter("gate")                          # new values, any case
    assert sel.shown == [ids[1], ids[4]] and sel.page == 0
    assert sel.selected == [ids[0], *ids[2:]]       # the filter leaves the ticks alone
    sel.set_filter(ids[3].upper())                  # the id
    assert sel.shown == [ids[3]]
    sel.set_filter("nothing has this text")
    assert sel.shown == [] and sel.pages == 1 and sel.page_ids == []
    sel.identifiers = {ids[2]: "The Harbour Office"}  # names become searchable
    sel.set_filter("  harbour ")
    assert sel.shown == [ids[2]] and sel.filter_text == "  harbour "
    sel.set_filter("")
    assert sel.shown == ids


def test_pages_are_clamped_and_hold_page_size_records(orders: Frames) -> None:
    plan, ids = edited_plan(orders)
    sel = Selection(plan, page_size=2)
    assert sel.pages == 3 and sel.page_ids == ids[:2]
    assert sel.show_page(2) == ids[4:] and sel.page == 2
    assert sel.show_page(99) == ids[4:] and sel.page == 2
    assert sel.show_page(-3) == ids[:2] and sel.page == 0
    sel.set_filter("gate")
    assert sel.pages == 1 and sel.show_page(1) == [ids[1], ids[4]]


def test_the_requests_are_those_of_the_ticked_records(orders: Frames) -> None:
    plan, ids = edited_plan(orders)
    sel = Selection(plan)
    assert sel.requests() == str(plan.estimate_requests(guard=True))
    sel.exclude(ids[:3])
    assert sel.requests() == str(plan.select(ids[3:]).estimate_requests(guard=True))
    sel.set_filter("door")          # a filter is not a change of what is sent
    assert sel.requests() == str(plan.select(ids[3:]).estimate_requests(guard=True))
    unguarded = Selection(plan, guard=False)
    assert unguarded.requests() == str(plan.estimate_requests(guard=False))
    assert unguarded.requests() != sel.requests()


def test_apply_sends_the_plan_of_the_ticked_records_or_nothing(orders: Frames) -> None:
    plan, ids = edited_plan(orders)
    sel = Selection(plan)
    sel.exclude([ids[0], ids[3]])
    sent = sel.to_send()
    assert sent is not None and sent.record_ids == [ids[1], ids[2], ids[4]]
    assert set(sent.changes["record_id"]) == {ids[1], ids[2], ids[4]}
    sel.exclude(ids)
    assert sel.to_send() is None


def test_a_create_and_a_delete_are_records_of_the_selection(orders: Frames) -> None:
    frames = orders.snapshot()
    gone = str(frames.main.index[0])
    frames.main = frames.main.drop(index=gone)
    new = pd.DataFrame({TITLE: pd.array(["A brand new order"], dtype=frames.main[TITLE].dtype)},
                       index=pd.Index(["new:1"], name=frames.main.index.name))
    frames.main = pd.concat([frames.main, new])
    sel = Selection(diff(frames, orders))
    created = next(r for r in sel.record_ids if r.startswith("new:"))
    assert {sel.rows[gone][0][0], sel.rows[created][0][0]} == {"delete", "create"}
    sel.set_filter("BRAND NEW")
    assert sel.shown == [created]
    sel.exclude([gone])
    sent = sel.to_send()
    assert sent is not None and sent.actions == {created: "create"}
