"""The review widget, driven in-process from Python against the local service (what a
person sees in a browser is checked by tests_browser/, ``make test-browser``)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from fixtures.guard import FAST_GUARD

from svc_frames.errors import UsageError
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.widgets import PlanReview, changes_html, review, short_id
from svc_frames.writeback import diff

ORDERS = "object_3"  # Work Orders (svc_frames/server/demo_app.py documents the demo keys)
TITLE, PRIORITY = "field_12", "field_25"   # Title is the object's display field


@pytest.fixture()
def setup(fresh_service: LocalService):
    client = Client(fresh_service.app_id, api_key=fresh_service.api_key,
                    base_url=fresh_service.base_url, rate_limit=0, backoff=0.01)
    frames = read_object(client, ORDERS, progress=False, columns="keys")
    return fresh_service, client, frames


def puts(svc: LocalService) -> list[str]:
    prefix = f"/v1/objects/{ORDERS}/records/"
    return [e.path[len(prefix):] for e in svc.request_log.entries
            if e.method == "PUT" and e.path.startswith(prefix)]


def rows_html(box: PlanReview) -> list[str]:
    return [row.children[1].value for row in box.list.children]


def test_apply_sends_only_the_ticked_records_and_shows_the_report(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:4])
    for i, rid in enumerate(ids):
        frames.main.loc[rid, TITLE] = f"Reviewed title {i}"
    plan = diff(frames)
    box = review(plan, client)  # the edited frames come with the plan

    assert list(box.checkboxes) == ids and box.selected == ids
    row_html = "".join(rows_html(box))
    assert "Title" in row_html and "Reviewed title 3" in row_html  # labels and new values
    assert "4</b> of 4 records selected" in box.summary.value
    assert f"Apply sends at most {plan.requests}" in box.summary.value
    assert str(plan.requests).startswith(
        "7 requests (4 writes, 1 re-reads, 1 checks, up to 1 late re-reads)")

    box.checkboxes[ids[1]].value = False  # untick one, as a user would
    assert "3</b> of 4" in box.summary.value
    assert f"at most {plan.select(ids[:1] + ids[2:]).requests}" in box.summary.value
    svc.request_log.clear()
    box.apply_button.click()

    sent = puts(svc)
    assert sorted(sent) == sorted(ids[:1] + ids[2:])
    assert "3 applied" in box.output.value and "box.report.table" in box.output.value
    assert box.report is not None and set(box.report.table["record_id"]) == set(sent)
    assert box.apply_button.disabled and box.error is None
    assert all(cb.disabled for cb in box.checkboxes.values())
    assert box.table_button.layout.display == ""   # the report's table, one click away

    after = read_object(client, ORDERS, progress=False, columns="keys").main
    assert after.loc[ids[0], TITLE] == "Reviewed title 0"
    assert after.loc[ids[1], TITLE] == frames.original.main.loc[ids[1], TITLE]

    svc.request_log.clear()
    box.apply_button.click()  # a second press sends nothing
    assert puts(svc) == []
    assert "Already applied" in box.output.value


def test_rows_keep_their_height_in_a_scrolling_box_and_show_identifier_and_headers(
        setup) -> None:
    _svc, client, frames = setup
    ids = list(frames.main.index[:3])
    loaded = {rid: frames.main.loc[rid, TITLE] for rid in ids}
    frames.main.loc[ids, PRIORITY] = pd.array([1.0, 2.0, 3.0], dtype="Float64")
    box = review(diff(frames), client)
    # the list is bounded and scrolls; a row never shrinks below its content
    assert box.list.layout.max_height and box.list.layout.overflow == "auto"
    assert all(row.layout.flex == "0 0 auto" for row in box.list.children)
    for rid, html in zip(ids, rows_html(box), strict=True):
        assert str(loaded[rid]) in html                      # the display field's value
        assert short_id(rid) in html and f"title='{rid}'" in html   # id: short, full on hover
        assert re.search(r"<th[^>]*>field</th><th>value as loaded</th><th>new value</th>",
                         html)
        assert "svcf-act-update" in html
    assert len(short_id(ids[0])) < len(ids[0])


def test_a_long_value_is_cut_with_the_full_value_on_hover(setup) -> None:
    _svc, client, frames = setup
    rid = frames.main.index[0]
    long = "pump " * 100
    frames.main.loc[rid, TITLE] = long
    html = rows_html(review(diff(frames), client))[0]
    assert long not in html.split("title=")[0]          # not shown whole in a cell
    assert f"title='{long}'" in html and "…" in html


def test_filter_narrows_the_list_and_all_none_act_on_what_is_shown(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:6])
    for i, rid in enumerate(ids):
        frames.main.loc[rid, TITLE] = f"{'Quokka' if i % 2 else 'Zebrafish'} check {i}"
    box = review(diff(frames), client, **FAST_GUARD)
    box.filter.value = "qUOKKA"        # typed in the box, any case
    assert box.shown == ids[1::2] and list(box.checkboxes) == ids[1::2]
    assert "3 shown by the filter" in box.summary.value
    box.none_button.click()            # unticks only the three shown
    assert box.selected == ids[0::2]
    box.set_filter(ids[2])             # an id matches too
    assert box.shown == [ids[2]]
    box.set_filter("no such text")
    assert box.shown == [] and box.list.children == ()
    box.set_filter("")
    assert box.shown == ids and [cb.value for cb in box.checkboxes.values()] == \
        [True, False, True, False, True, False]
    box.none_button.click()
    box.filter.value = "zebrafish"
    box.all_button.click()
    assert box.selected == ids[0::2]
    svc.request_log.clear()
    box.apply()
    assert sorted(puts(svc)) == sorted(ids[0::2])


def test_exclude_include_and_select_none(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:3])
    frames.main.loc[ids, PRIORITY] = pd.array([1.0, 2.0, 3.0], dtype="Float64")
    plan = diff(frames)
    changed = list(plan.changes["record_id"].unique())
    box = PlanReview(plan, client, **FAST_GUARD)
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


def test_a_conflict_is_highlighted_in_the_report_with_its_reason(setup) -> None:
    _svc, client, frames = setup
    ids = list(frames.main.index[:2])
    client.update_record(ORDERS, ids[0], {TITLE: "changed by a colleague"})
    frames.main.loc[ids, TITLE] = ["ours 0", "ours 1"]
    box = review(diff(frames), client, **FAST_GUARD)
    report = box.apply()
    assert report.counts == {"conflict": 1, "applied": 1}
    bad = re.findall(r"<tr class='svcf-bad'>(.*?)</tr>", box.output.value)
    assert len(bad) == 1 and short_id(ids[0]) in bad[0] and "conflict" in bad[0]
    message = report.table.set_index("record_id").loc[ids[0], "message"]
    assert message and message[:40] in bad[0]


def test_an_exception_during_apply_is_shown_and_can_be_raised_again(setup) -> None:
    _svc, client, frames = setup
    frames.main.loc[frames.main.index[0], TITLE] = "never sent"

    def broken(*_args, **_kwargs):
        raise RuntimeError("the network went away")

    box = review(diff(frames), client, write=broken)
    box.apply_button.click()         # a click does not raise into the front end...
    assert isinstance(box.error, RuntimeError)
    assert "Not applied" in box.output.value and "the network went away" in box.output.value
    assert "Traceback" in box.output.value
    assert not box.apply_button.disabled and box.report is None   # it may be tried again
    with pytest.raises(RuntimeError, match="network went away"):
        box.reraise()                # ...and the exception is kept, not swallowed
    with pytest.raises(RuntimeError, match="network went away"):
        box.apply()                  # from code it raises


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
    with pytest.raises(UsageError, match="page_size"):
        review(diff(frames), client, page_size=0)


def test_changes_html_uses_labels_and_escapes_values(setup) -> None:
    _svc, _client, frames = setup
    rid = frames.main.index[0]
    frames.main.loc[rid, TITLE] = "<b>bold</b>"
    plan = diff(frames)
    text = changes_html(plan.changes, {TITLE: "Title"})
    assert "Title" in text and "&lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold</b>" not in text
    assert "value as loaded" in text


def test_pages_keep_ticks_across_pages_and_reuse_their_rows(setup) -> None:
    svc, client, frames = setup
    ids = list(frames.main.index[:5])
    for i, rid in enumerate(ids):
        frames.main.loc[rid, TITLE] = f"Paged title {i}"
    box = review(diff(frames), client, page_size=2)
    assert box.pages == 3 and list(box.checkboxes) == ids[:2]
    first_rows = box.list.children
    box.checkboxes[ids[0]].value = False      # untick on page 1
    box.next_button.click()
    assert list(box.checkboxes) == ids[2:4]
    assert box.list.children == first_rows    # the same widgets, showing other records
    assert "Paged title 2" in rows_html(box)[0]
    box.checkboxes[ids[3]].value = False      # untick on page 2
    box.prev_button.click()
    assert box.checkboxes[ids[0]].value is False  # remembered
    box.show_page(99)                          # clamped to the last page
    assert list(box.checkboxes) == ids[4:]
    assert "3</b> of 5" in box.summary.value
    svc.request_log.clear()
    box.apply_button.click()
    assert sorted(puts(svc)) == sorted([ids[1], ids[2], ids[4]])


def test_creates_and_deletes_show_their_action_and_identifier(setup) -> None:
    svc, client, frames = setup
    gone = frames.main.index[0]
    gone_title = str(frames.main.loc[gone, TITLE])
    frames.main = frames.main.drop(index=gone)
    new = pd.DataFrame({TITLE: pd.array(["A brand new order"], dtype=frames.main[TITLE].dtype)},
                       index=pd.Index(["new:1"], name=frames.main.index.name))
    frames.main = pd.concat([frames.main, new])
    box = review(diff(frames), client, delete_missing=True)
    html = dict(zip(box.checkboxes, rows_html(box), strict=True))
    created = next(rid for rid in html if rid.startswith("new:"))
    assert "svcf-act-create" in html[created] and "A brand new order" in html[created]
    assert "new record" in html[created]
    assert "svcf-act-delete" in html[gone] and gone_title in html[gone]
    assert "deleted" in html[gone]
    box.set_filter("brand new")
    assert box.shown == [created]
    svc.request_log.clear()
    report = box.apply()
    assert report.counts == {"applied": 2}
    assert svc.request_log.count(method="DELETE") == 1
