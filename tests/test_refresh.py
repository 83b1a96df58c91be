"""refresh(): loaded frames brought up to date over the local service (never mocks)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pandas as pd
import pytest

from svc_frames import Client, diff, read_object, read_view, write_back
from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.incremental import (
    RefreshNotice,
    filter_date,
    modified_field_of,
    refresh,
)
from svc_frames.server import LocalService
from svc_frames.testing import login

WO = "object_3"


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=40, rate_limit=0, seed=3) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def same_frames(got: Frames, want: Frames) -> None:
    """Main frames equal (order included), tables equal row for row."""
    pd.testing.assert_frame_equal(got.main, want.main)
    assert sorted(got.tables) == sorted(want.tables)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name].reset_index(drop=True),
                                      table.reset_index(drop=True), obj=name)


def part_ids(c: Client) -> list[str]:
    return list(read_object(c, "object_2").main.index[:3])


def change_server(c: Client, ids: list[str], *, inserts: bool, updates: bool,
                  deletes: bool) -> None:
    """Inserts (with a connection and tags), updates (text, choice, tags, connection) and
    deletes of work orders, as another user would make them."""
    parts = part_ids(c)
    if updates:
        c.update_record(WO, ids[0], {"field_12": "Changed title", "field_27": "Done"})
        c.update_record(WO, ids[1], {"field_28": ["Safety", "HVAC"], "field_41": parts[:2]})
        c.update_record(WO, ids[2], {"field_41": [], "field_16": 7})
    if inserts:
        c.create_record(WO, {"field_12": "New order A", "field_41": [parts[2]],
                             "field_28": ["Outdoor"]})
        c.create_record(WO, {"field_12": "New order B"})
    if deletes:
        c.delete_record(WO, ids[3])
        c.delete_record(WO, ids[-1])


@pytest.mark.parametrize("inserts,updates,deletes",
                         list(itertools.product([False, True], repeat=3)))
def test_refreshed_equals_a_fresh_load(svc: LocalService, inserts: bool, updates: bool,
                                       deletes: bool) -> None:
    c = client_of(svc)
    # pages of 10: the newest page alone does not hold the changed (oldest) records
    frames = read_object(c, WO, rows_per_page=10)
    change_server(c, list(frames.main.index), inserts=inserts, updates=updates,
                  deletes=deletes)
    report = refresh(c, frames)
    fresh = read_object(client_of(svc), WO)
    same_frames(frames, fresh)
    same_frames(frames.original, fresh)  # type: ignore[arg-type]
    assert len(report.added) == (2 if inserts else 0)
    assert len(report.deleted) == (2 if deletes else 0)
    assert len(report.changed) >= (3 if updates else 0)
    assert report.conflicts.empty and not report.full
    assert report.modified_field == "field_46" and report.cursor_field == "field_24"
    # the newest page and the stamped window; a listing only when something was deleted
    assert report.requests == 2 + report.deletion_requests
    assert (report.deletion_requests > 0) == deletes
    assert diff(frames).empty


def test_a_change_in_the_same_minute_is_not_missed(svc: LocalService) -> None:
    c = client_of(svc)
    rid = read_object(c, WO, limit=1).main.index[0]
    c.update_record(WO, rid, {"field_12": "first"})   # stamped this minute
    frames = read_object(c, WO, rows_per_page=10)     # the record is not on the newest page
    assert frames.main.at[rid, "field_12"] == "first"
    stamp = frames.main.at[rid, "field_46"]
    c.update_record(WO, rid, {"field_12": "second"})  # most likely the very same stamp
    report = refresh(c, frames)
    assert report.changed == [rid]
    assert frames.main.at[rid, "field_12"] == "second"
    assert frames.main.at[rid, "field_46"] >= stamp
    # nothing changed since: a second refresh finds nothing (the window is compared)
    again = refresh(c, frames)
    assert again.counts == {"added": 0, "changed": 0, "deleted": 0, "conflicts": 0,
                            "requests": 2}


def test_conflicts_are_reported_and_diff_sends_only_local_edits(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO)
    a, b, d = frames.main.index[:3]
    frames.main.loc[a, "field_12"] = "mine"           # also changed on the server
    frames.main.loc[b, "field_13"] = "my description"  # the server changes another field
    c.update_record(WO, a, {"field_12": "theirs"})
    c.update_record(WO, b, {"field_27": "On Hold"})
    c.update_record(WO, d, {"field_12": "server only"})
    report = refresh(c, frames)
    conf = report.conflicts
    assert list(conf["record_id"]) == [a] and list(conf["column"]) == ["field_12"]
    assert (conf.loc[0, "server"], conf.loc[0, "local"]) == ("theirs", "mine")
    assert frames.main.at[a, "field_12"] == "mine"       # not overwritten
    assert frames.main.at[b, "field_27"] == "On Hold"    # merged
    assert frames.main.at[b, "field_13"] == "my description"
    assert frames.main.at[d, "field_12"] == "server only"
    changes = diff(frames).changes
    assert sorted(zip(changes["record_id"], changes["column"], strict=True)) == sorted(
        [(a, "field_12"), (b, "field_13")])
    # the conflict is still one for write_back's guard: skipped, the other edit applied
    result = write_back(c, frames)
    status = dict(zip(result.table["record_id"], result.table["status"], strict=True))
    assert status == {a: "conflict", b: "applied"}
    assert c.get_record(WO, a)["field_12"] == "theirs"


def test_a_record_edited_here_and_deleted_there_is_a_conflict(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO)
    rid = frames.main.index[5]
    frames.main.loc[rid, "field_12"] = "edited here"
    c.delete_record(WO, rid)
    report = refresh(c, frames)
    assert report.deleted == [rid] and rid not in frames.main.index
    assert list(report.conflicts["server"]) == ["<deleted>"]


def test_filtered_loads_follow_records_in_and_out_of_the_filter(svc: LocalService) -> None:
    c = client_of(svc)
    flt = [{"field": "field_27", "operator": "is", "value": "Open"}]
    frames = read_object(c, WO, filters=flt, rows_per_page=5)
    everything = read_object(c, WO)
    leaving = frames.main.index[0]
    entering = everything.main.index[everything.main["field_27"] != "Open"][0]
    c.update_record(WO, leaving, {"field_27": "Done"})
    c.update_record(WO, entering, {"field_27": "Open"})
    report = refresh(c, frames)
    fresh = read_object(c, WO, filters=flt)
    assert sorted(frames.main.index) == sorted(fresh.main.index)
    pd.testing.assert_frame_equal(frames.main.sort_index(), fresh.main.sort_index())
    assert entering in report.added and leaving in report.deleted


def test_or_filters_are_split_into_and_queries(svc: LocalService) -> None:
    c = client_of(svc)
    flt = {"match": "or", "rules": [{"field": "field_27", "operator": "is", "value": "Open"},
                                    {"field": "field_27", "operator": "is", "value": "Done"}]}
    frames = read_object(c, WO, filters=flt, rows_per_page=5)
    rid = frames.main.index[0]
    c.update_record(WO, rid, {"field_12": "or-changed"})
    report = refresh(c, frames)
    assert report.changed == [rid] and frames.main.at[rid, "field_12"] == "or-changed"
    assert report.requests == 3  # the head, and one window query per rule


def test_without_a_stamped_field_a_full_listing_says_why(svc: LocalService) -> None:
    c = client_of(svc)
    parts = read_object(c, "object_2")
    pid = parts.main.index[0]
    c.update_record("object_2", pid, {"field_10": 999})
    with pytest.warns(RefreshNotice, match="object_2 has no date_time field stamped"):
        report = refresh(c, parts)
    assert report.full and report.changed == [pid]
    assert parts.main.at[pid, "field_10"] == 999


def test_view_frames_refresh_when_the_view_shows_the_stamp(svc: LocalService) -> None:
    c = client_of(svc)
    c.token = login(svc, 0)
    board = read_view(c, "scene_3", "view_5")  # does not show field_46
    with pytest.warns(RefreshNotice, match="the view does not show field_46"):
        report = refresh(c, board)
    assert report.full
    with pytest.raises(UsageError, match="field_46"):
        refresh(c, board, modified_field="field_46")


def test_bad_input_is_refused_before_any_request(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, limit=5)
    with pytest.raises(UsageError, match="limit=5"):
        refresh(c, frames)
    frames = read_object(c, WO)
    sent = c.request_count
    with pytest.raises(UsageError, match="'field_12'.*not a date_time") as err:
        refresh(c, frames, modified_field="field_12")
    assert err.value.field == "field_12"
    with pytest.raises(UsageError, match="field_999"):
        refresh(c, frames, modified_field="field_999")
    with pytest.raises(UsageError, match="no load source"):
        refresh(c, Frames(frames.main.copy()))
    with pytest.raises(UsageError, match="Frames"):
        refresh(c, frames.main)  # type: ignore[arg-type]
    assert c.request_count == sent


def test_schema_marker_and_filter_dates() -> None:
    from svc_frames.server.demo import demo_document

    assert modified_field_of(demo_document(), "object_3") == "field_46"
    assert modified_field_of(demo_document(), "object_2") is None
    import datetime as dt
    assert filter_date(dt.date(2024, 1, 31)) == "01/31/2024"
