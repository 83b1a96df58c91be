"""The review widget, driven headless from Python against the local service."""

from __future__ import annotations

import pandas as pd
import pytest

from svc_frames.errors import UsageError
from svc_frames.http.client import Client
from svc_frames.loaders import read_object
from svc_frames.server import LocalService
from svc_frames.widgets import PlanReview, changes_html, review
from svc_frames.writeback import diff

ORDERS = "object_3"  # Work Orders (svc_frames/server/demo_app.py documents the demo keys)
TITLE, PRIORITY = "field_12", "field_25"


@pytest.fixture()
def setup(fresh_service: LocalService):
    client = Client(fresh_service.app_id, api_key=fresh_service.api_key,
                    base_url=fresh_service.base_url, rate_limit=0, backoff=0.01)
    frames = read_object(client, ORDERS, progress=False)
    return fresh_service, client, frames


def puts(svc: LocalService) -> list[str]:
    prefix = f"/v1/objects/{ORDERS}/records/"
    return [e.path[len(prefix):] for e in svc.request_log.entries
            if e.method == "PUT" and e.path.startswith(prefix)]


def test_apply_sends_only_the_ticked_records_and_shows_the_report(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:4])
    for i, rid in enumerate(ids):
        frames.main.loc[rid, TITLE] = f"Reviewed title {i}"
    plan = diff(frames)
    box = review(plan, client)  # the edited frames come with the plan

    assert list(box.checkboxes) == ids and box.selected == ids
    row_html = "".join(child.value for row in box.widget.children[1].children
                       for child in row.children[1:])
    assert "Title" in row_html and "Reviewed title 3" in row_html  # labels and new values
    assert "4 of 4 records selected" in box.summary.value

    box.checkboxes[ids[1]].value = False  # untick one, as a user would
    assert "3 of 4" in box.summary.value
    svc.request_log.clear()
    box.apply_button.click()

    sent = puts(svc)
    assert sorted(sent) == sorted(ids[:1] + ids[2:])
    assert "3 applied" in box.output.value
    assert box.report is not None and set(box.report.table["record_id"]) == set(sent)
    assert box.apply_button.disabled

    after = read_object(client, ORDERS, progress=False).main
    assert after.loc[ids[0], TITLE] == "Reviewed title 0"
    assert after.loc[ids[1], TITLE] == frames.original.main.loc[ids[1], TITLE]

    svc.request_log.clear()
    box.apply_button.click()  # a second press sends nothing
    assert puts(svc) == []
    assert "Already applied" in box.output.value


def test_exclude_include_and_select_none(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:3])
    frames.main.loc[ids, PRIORITY] = pd.array([1.0, 2.0, 3.0], dtype="Float64")
    plan = diff(frames)
    changed = list(plan.changes["record_id"].unique())
    box = PlanReview(plan, client)
    box.exclude(changed)
    assert box.selected == []
    svc.request_log.clear()
    assert box.apply() is None
    assert "Nothing selected" in box.output.value and puts(svc) == []
    box.include(changed[:1])
    assert box.selected == changed[:1]
    with pytest.raises(UsageError, match="not-an-id"):
        box.exclude(["not-an-id"])
    report = box.apply()
    assert puts(svc) == changed[:1]
    assert list(report.table["status"]) == ["applied"]


def test_an_empty_plan_says_there_is_nothing_to_send(setup) -> None:
    svc, client, frames = setup
    plan = diff(frames)  # nothing edited
    box = review(plan, client)
    assert "Nothing to send" in box.summary.value
    assert box.apply_button.disabled
    svc.request_log.clear()
    box.apply_button.click()  # disabled in the browser; from Python it must still be safe
    assert svc.request_log.count(method="PUT") == 0


def test_review_refuses_what_is_not_a_plan(setup) -> None:
    _svc, client, frames = setup
    with pytest.raises(UsageError, match="Plan"):
        review(frames, client)


def test_changes_html_uses_labels_and_escapes_values(setup) -> None:
    _svc, _client, frames = setup
    rid = frames.main.index[0]
    frames.main.loc[rid, TITLE] = "<b>bold</b>"
    plan = diff(frames)
    text = changes_html(plan.changes, {TITLE: "Title"})
    assert "Title" in text and "&lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold</b>" not in text


def test_pages_keep_ticks_across_pages(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:5])
    for i, rid in enumerate(ids):
        frames.main.loc[rid, TITLE] = f"Paged title {i}"
    box = review(diff(frames), client, page_size=2)
    assert box.pages == 3 and list(box.checkboxes) == ids[:2]
    box.checkboxes[ids[0]].value = False      # untick on page 1
    box.next_button.click()
    assert list(box.checkboxes) == ids[2:4]
    box.checkboxes[ids[3]].value = False      # untick on page 2
    box.prev_button.click()
    assert box.checkboxes[ids[0]].value is False  # remembered
    box.show_page(99)                          # clamped to the last page
    assert list(box.checkboxes) == ids[4:]
    assert "3 of 5" in box.summary.value
    svc.request_log.clear()
    box.apply_button.click()
    assert sorted(puts(svc)) == sorted([ids[1], ids[2], ids[4]])
