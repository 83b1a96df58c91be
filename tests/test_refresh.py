"""refresh(): loaded frames brought up to date over the local service (never mocks)."""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from svc_frames import Client, diff, read_object, read_view, write_back
from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.query import format_filter_date
from svc_frames.refreshing.cache import CacheNotice, pointer_digest
from svc_frames.refreshing.policy import RefreshNotice, refresh
from svc_frames.saved.layout import SavedLayout
from svc_frames.saved.parquet import read_parquet
from svc_frames.schema import modified_field_of
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


def same_frames(got: Frames, want: Frames, *, ordered: bool = True) -> None:
    """Main frames equal (order included), tables equal row for row. ``ordered=False``: a
    sorted listing (new records are appended, not sorted in): rows compared by id."""
    if ordered:
        pd.testing.assert_frame_equal(got.main, want.main)
    else:
        pd.testing.assert_frame_equal(got.main.sort_index(), want.main.sort_index())
    assert sorted(got.tables) == sorted(want.tables)
    for name, table in want.tables.items():
        mine = got.tables[name]
        if not ordered:
            mine = mine.sort_values(list(mine.columns), kind="stable")
            table = table.sort_values(list(table.columns), kind="stable")
        pd.testing.assert_frame_equal(mine.reset_index(drop=True),
                                      table.reset_index(drop=True), obj=name)


def part_ids(c: Client) -> list[str]:
    return list(read_object(c, "object_2", columns="keys").main.index[:3])


def change_server(svc: LocalService, ids: list[str], *, inserts: bool, updates: bool,
                  deletes: bool) -> None:
    """Inserts (with a connection and tags), updates (text, choice, tags, connection) and
    deletes of work orders, as another user makes them on the application's pages (its
    record rules stamp them)."""
    c = client_of(svc)
    parts = part_ids(c)
    other = svc.pages
    if updates:
        other.update_record(WO, ids[0], {"field_12": "Changed title", "field_27": "Done"})
        other.update_record(WO, ids[1], {"field_28": ["Safety", "HVAC"], "field_41": parts[:2]})
        other.update_record(WO, ids[2], {"field_41": [], "field_16": 7})
    if inserts:
        other.create_record(WO, {"field_12": "New order A", "field_41": [parts[2]],
                             "field_28": ["Outdoor"]})
        other.create_record(WO, {"field_12": "New order B"})
    if deletes:
        c.delete_record(WO, ids[3])
        c.delete_record(WO, ids[-1])


@pytest.mark.parametrize("inserts,updates,deletes",
                         list(itertools.product([False, True], repeat=3)))
def test_refreshed_equals_a_fresh_load(svc: LocalService, inserts: bool, updates: bool,
                                       deletes: bool) -> None:
    c = client_of(svc)
    # pages of 10: the newest page alone does not hold the changed (oldest) records
    frames = read_object(c, WO, rows_per_page=10, columns="keys")
    change_server(svc, list(frames.main.index), inserts=inserts, updates=updates,
                  deletes=deletes)
    report = refresh(c, frames)
    fresh = read_object(client_of(svc), WO, columns="keys")
    same_frames(frames, fresh)
    same_frames(frames.original, fresh)  # type: ignore[arg-type]
    assert len(report.added) == (2 if inserts else 0)
    assert len(report.deleted) == (2 if deletes else 0)
    assert len(report.changed) >= (3 if updates else 0)
    assert report.conflicts.empty and not report.full
    # the schema's rule stamps creations too: no cursor needed
    assert report.modified_field == "field_46" and report.cursor_field is None
    # one page of the listing, newest stamps first (it also tells the total); more only
    # to find what was deleted
    assert report.requests == 1 + report.deletion_requests
    assert (report.deletion_requests > 0) == deletes
    assert diff(frames).empty


def test_a_named_field_uses_the_cursor_for_new_records(svc: LocalService,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    import copy

    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=10, columns="keys")
    # a deployment whose schema does not show the rule: the named field may be stamped on
    # updates only, so new records are asked for by the auto-increment cursor too
    hidden = copy.deepcopy(c.schema())
    for obj in hidden["objects"]:
        obj.pop("rules", None)
    monkeypatch.setattr(c, "schema", lambda **_: hidden)
    change_server(svc, list(frames.main.index), inserts=True, updates=True, deletes=False)
    report = refresh(c, frames, modified_field="field_46")
    assert report.cursor_field == "field_24" and report.requests == 2  # window, cursor
    assert len(report.added) == 2
    same_frames(frames, read_object(client_of(svc), WO, columns="keys"))
    with pytest.warns(RefreshNotice, match="pass modified_field="):
        assert refresh(c, frames).full
    forced = refresh(c, frames, modified_field="field_46", full=True)
    assert forced.full and forced.reason == "full=True" and not forced.changed


def test_a_change_in_the_same_minute_is_not_missed(svc: LocalService) -> None:
    c = client_of(svc)
    rid = read_object(c, WO, limit=1, columns="keys").main.index[0]
    svc.pages.update_record(WO, rid, {"field_12": "first"})   # stamped this minute
    frames = read_object(c, WO, rows_per_page=10, columns="keys")     # the record is not on the newest page
    assert frames.main.at[rid, "field_12"] == "first"
    stamp = frames.main.at[rid, "field_46"]
    svc.pages.update_record(WO, rid, {"field_12": "second"})  # most likely the same stamp
    report = refresh(c, frames)
    assert report.changed == [rid]
    assert frames.main.at[rid, "field_12"] == "second"
    assert frames.main.at[rid, "field_46"] >= stamp
    # nothing changed since: a second refresh finds nothing (the window is compared)
    again = refresh(c, frames)
    assert again.counts == {"added": 0, "changed": 0, "deleted": 0, "conflicts": 0,
                            "requests": 1}


def test_conflicts_are_reported_and_diff_sends_only_local_edits(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, columns="keys")
    a, b, d = frames.main.index[:3]
    frames.main.loc[a, "field_12"] = "mine"           # also changed on the server
    frames.main.loc[b, "field_13"] = "my description"  # the server changes another field
    svc.pages.update_record(WO, a, {"field_12": "theirs"})
    svc.pages.update_record(WO, b, {"field_27": "On Hold"})
    svc.pages.update_record(WO, d, {"field_12": "server only"})
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


def test_pages_merged_as_they_come_equal_a_fresh_load(svc: LocalService) -> None:
    # Pages of 2: each page is merged while the next is fetched, the new records of
    # several pages are appended once, in the cursor's order, and local edits (a cell
    # the server did not change, a conflicting one) survive as local edits.
    c = client_of(svc)
    frames = read_object(c, WO, rows_per_page=2, columns="keys")
    ids = list(frames.main.index)
    mine, clash = ids[5], ids[6]
    parts = part_ids(c)
    frames.main.loc[mine, "field_13"] = "my description"
    loaded = frames.main.at[clash, "field_12"]
    frames.main.loc[clash, "field_12"] = "mine"
    created = [svc.pages.create_record(WO, {"field_12": f"new {i}",
                                            "field_41": parts[:1]})["id"]
               for i in range(3)]
    updated = [*ids[:4], mine, clash]
    for rid in updated:
        svc.pages.update_record(WO, rid, {"field_12": f"changed {rid}",
                                          "field_41": parts[1:3]})
    report = refresh(c, frames)
    assert report.requests >= 5  # 9 stamped records on pages of 2, and the one past them
    assert report.added == created and sorted(report.changed) == sorted(updated)
    assert list(report.conflicts["record_id"]) == [clash]  # once, though merged per page
    fresh = read_object(client_of(svc), WO, columns="keys")
    orig = frames.original
    assert orig is not None
    # the clash keeps its loaded value in the as-loaded copy (write_back's guard sees it)
    assert orig.main.at[clash, "field_12"] == loaded
    orig.main.loc[clash, "field_12"] = fresh.main.at[clash, "field_12"]
    same_frames(orig, fresh)
    orig.main.loc[clash, "field_12"] = loaded
    changes = diff(frames).changes
    assert sorted(zip(changes["record_id"], changes["column"], strict=True)) == sorted(
        [(mine, "field_13"), (clash, "field_12")])
    assert frames.main.at[mine, "field_12"] == f"changed {mine}"  # merged beside the edit
    # the local edits undone, the frames are the fresh load
    frames.main.loc[mine, "field_13"] = fresh.main.at[mine, "field_13"]
    frames.main.loc[clash, "field_12"] = fresh.main.at[clash, "field_12"]
    same_frames(frames, fresh)


def test_a_record_edited_here_and_deleted_there_is_a_conflict(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, columns="keys")
    rid = frames.main.index[5]
    frames.main.loc[rid, "field_12"] = "edited here"
    c.delete_record(WO, rid)
    report = refresh(c, frames)
    assert report.deleted == [rid] and rid not in frames.main.index
    assert list(report.conflicts["server"]) == ["<deleted>"]


def test_filtered_loads_follow_records_in_and_out_of_the_filter(svc: LocalService) -> None:
    c = client_of(svc)
    flt = [{"field": "field_27", "operator": "is", "value": "Open"}]
    frames = read_object(c, WO, filters=flt, rows_per_page=5, columns="keys")
    everything = read_object(c, WO, columns="keys")
    leaving = frames.main.index[0]
    entering = everything.main.index[everything.main["field_27"] != "Open"][0]
    svc.pages.update_record(WO, leaving, {"field_27": "Done"})
    svc.pages.update_record(WO, entering, {"field_27": "Open"})
    report = refresh(c, frames)
    fresh = read_object(c, WO, filters=flt, columns="keys")
    assert sorted(frames.main.index) == sorted(fresh.main.index)
    pd.testing.assert_frame_equal(frames.main.sort_index(), fresh.main.sort_index())
    assert entering in report.added and leaving in report.deleted


def test_or_filters_are_split_into_and_queries(svc: LocalService) -> None:
    c = client_of(svc)
    flt = {"match": "or", "rules": [{"field": "field_27", "operator": "is", "value": "Open"},
                                    {"field": "field_27", "operator": "is", "value": "Done"}]}
    frames = read_object(c, WO, filters=flt, rows_per_page=5, columns="keys")
    rid = frames.main.index[0]
    svc.pages.update_record(WO, rid, {"field_12": "or-changed"})
    report = refresh(c, frames)
    assert report.changed == [rid] and frames.main.at[rid, "field_12"] == "or-changed"
    assert report.requests == 3  # the total, and one window query per rule


def test_without_a_stamped_field_a_full_listing_says_why(svc: LocalService) -> None:
    c = client_of(svc)
    parts = read_object(c, "object_2", columns="keys")
    pid = parts.main.index[0]
    c.update_record("object_2", pid, {"field_10": 999})
    with pytest.warns(RefreshNotice, match="object_2 has no date_time field stamped"):
        report = refresh(c, parts)
    assert report.full and report.changed == [pid]
    assert parts.main.at[pid, "field_10"] == 999


def test_view_frames_refresh_when_the_view_shows_the_stamp(svc: LocalService) -> None:
    c = client_of(svc)
    c.token = login(svc, 0)
    board = read_view(c, "scene_3", "view_5", columns="keys")  # does not show field_46
    with pytest.warns(RefreshNotice, match="the view does not show field_46"):
        report = refresh(c, board)
    assert report.full
    with pytest.raises(UsageError, match="field_46"):
        refresh(c, board, modified_field="field_46")


def test_view_frames_refresh_incrementally_when_the_view_shows_the_stamp() -> None:
    from svc_frames.server.demo_app import demo_document

    doc = demo_document()  # the public board, showing the stamp too
    view = next(v for sc in doc["scenes"] for v in sc["views"] if v["key"] == "view_1")
    view["columns"].append({"field": {"key": "field_46"}, "type": "field"})
    with LocalService(demo=False, app=doc, records=30) as s:
        c = client_of(s)
        board = read_view(c, "scene_1", "view_1", rows_per_page=5, columns="keys")
        changed, leaving = board.main.index[0], board.main.index[1]
        s.pages.update_record(WO, changed, {"field_12": "changed behind the view"})
        s.pages.update_record(WO, leaving, {"field_27": "Cancelled"})  # the view hides these
        s.pages.create_record(WO, {"field_12": "new on the board", "field_27": "Open"})
        report = refresh(c, board)
        assert not report.full and report.changed == [changed]
        assert report.deleted == [leaving] and len(report.added) == 1
        # the view is sorted by Due: the new record was appended, not sorted in
        same_frames(board, read_view(c, "scene_1", "view_1", columns="keys"), ordered=False)


def test_bad_input_is_refused_before_any_request(svc: LocalService) -> None:
    c = client_of(svc)
    frames = read_object(c, WO, limit=5, columns="keys")
    with pytest.raises(UsageError, match="limit=5"):
        refresh(c, frames)
    frames = read_object(c, WO, columns="keys")
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
    from svc_frames.server.demo_app import demo_document

    assert modified_field_of(demo_document(), "object_3") == "field_46"
    assert modified_field_of(demo_document(), "object_2") is None
    import datetime as dt
    assert format_filter_date(dt.date(2024, 1, 31), with_time=False) == "01/31/2024"


# ---- the on-disk cache -----------------------------------------------------------------
def test_a_second_run_with_a_cache_takes_two_requests(svc: LocalService, tmp_path) -> None:
    cache = tmp_path / "orders"
    first = client_of(svc)
    frames = read_object(first, WO, cache=cache, rows_per_page=10, columns="keys")
    assert (cache / "CURRENT.json").exists()
    change_server(svc, list(frames.main.index), inserts=True, updates=True, deletes=False)
    second = client_of(svc)  # a new notebook run: nothing cached in memory
    again = read_object(second, WO, cache=cache, rows_per_page=10, columns="keys")
    assert second.request_count <= 2  # schema, the newest stamps (and the total)
    same_frames(again, read_object(client_of(svc), WO, columns="keys"))
    # the cache now holds the refreshed frames: a third run finds nothing new
    third = client_of(svc)
    same_frames(read_object(third, WO, cache=cache, rows_per_page=10, columns="keys"), again)
    assert third.request_count <= 2
    assert len(list(cache.glob("snap-*"))) == 1


def test_a_cache_made_for_something_else_is_not_used(svc: LocalService, tmp_path) -> None:
    import json

    cache = tmp_path / "c"
    c = client_of(svc)
    read_object(c, WO, cache=cache, columns="keys")
    flt = [{"field": "field_27", "operator": "is", "value": "Open"}]
    with pytest.warns(RefreshNotice, match="another filters"):
        frames = read_object(c, WO, cache=cache, filters=flt, columns="keys")
    assert set(frames.main["field_27"]) == {"Open"}
    with pytest.warns(RefreshNotice, match="another object or view"):
        read_object(c, "object_2", cache=cache, columns="keys")
    pointer = cache / "CURRENT.json"
    meta = json.loads(pointer.read_text())
    changed = dict(meta, schema="0" * 20)   # as a cache of another schema version says
    changed["pointer_sha256"] = pointer_digest(changed)
    pointer.write_text(json.dumps(changed))
    with pytest.warns(RefreshNotice, match="schema changed"):
        read_object(c, "object_2", cache=cache, columns="keys")
    older = {k: v for k, v in meta.items() if not k.endswith("_sha256")}
    pointer.write_text(json.dumps(dict(older, format=0)))   # an old format had no checksum
    with pytest.warns(RefreshNotice, match="cache format 0"):
        parts = read_object(c, "object_2", cache=cache, columns="keys")
    same_frames(parts, read_object(c, "object_2", columns="keys"))


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_cache_with_a_flipped_byte_is_loaded_in_full(svc: LocalService, tmp_path) -> None:
    """One flipped byte in any file of a cache (its pointer, the records, a table, the
    metadata, the as-loaded copy) is caught by the checksums: a notice and a full load,
    never other data; the cache is then whole again."""
    cache = tmp_path / "c"
    c = client_of(svc)
    truth = read_object(c, WO, columns="keys")
    read_object(c, WO, cache=cache, columns="keys")

    def files() -> list[Path]:  # by role: the snapshot's name changes with each rewrite
        return sorted((p for p in cache.rglob("*") if p.is_file()),
                      key=lambda p: p.relative_to(cache).parts[1:] or ("",))

    count = len(files())
    assert count >= 5   # pointer, records, metadata, as-loaded records, tables
    for i in range(count):
        victim = files()[i]
        _flip_a_byte(victim)
        with pytest.warns(CacheNotice, match="changed or damaged|cannot be used"):
            frames = read_object(c, WO, cache=cache, columns="keys")
        same_frames(frames, truth)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RefreshNotice)
        same_frames(read_object(client_of(svc), WO, cache=cache, columns="keys"), truth)


def test_a_cache_written_before_checksums_is_loaded_in_full_once(svc: LocalService,
                                                                 tmp_path) -> None:
    """A cache without checksums (the previous version's) cannot be verified: a notice
    saying so, a full load, and from then on a checked cache."""
    import json

    cache = tmp_path / "c"
    c = client_of(svc)
    read_object(c, WO, cache=cache, columns="keys")
    pointer = cache / "CURRENT.json"
    meta = json.loads(pointer.read_text())
    assert len(meta.pop("files_sha256")) == len(meta.pop("pointer_sha256")) == 64
    pointer.write_text(json.dumps(meta))
    with pytest.warns(CacheNotice, match="no checksum"):
        frames = read_object(c, WO, cache=cache, columns="keys")
    same_frames(frames, read_object(c, WO, columns="keys"))
    run = client_of(svc)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RefreshNotice)
        read_object(run, WO, cache=cache, columns="keys")
    assert run.request_count <= 3   # refreshed, not loaded in full


def test_bad_cache_paths_are_refused_before_any_request(svc: LocalService, tmp_path) -> None:
    import os

    c = client_of(svc)
    sent = c.request_count
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match="is not a directory"):
        read_object(c, WO, cache=a_file, columns="keys")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="holds other files"):
        read_object(c, WO, cache=other, columns="keys")
    with pytest.raises(UsageError, match="limit"):
        read_object(c, WO, cache=tmp_path / "new", limit=3, columns="keys")
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(UsageError, match="not writable"):
            read_object(c, WO, cache=locked, columns="keys")
    assert c.request_count == sent


class Crash(BaseException):
    """A process killed mid-write: no handler of the code under test runs."""


def test_a_cache_survives_a_crash_mid_write(svc: LocalService, tmp_path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import types

    import svc_frames.refreshing.cache as cache_mod

    cache = tmp_path / "c"
    c = client_of(svc)
    read_object(c, WO, cache=cache, rows_per_page=10, columns="keys")
    ids = list(read_object(c, WO, columns="keys").main.index)
    svc.pages.update_record(WO, ids[0], {"field_12": "after the first run"})

    def half_written(frames: Frames, path: os.PathLike[str]) -> None:
        os.makedirs(path)
        with open(os.path.join(path, "main.parquet"), "wb") as fh:
            fh.write(b"PAR1 half a file")
        raise Crash

    with monkeypatch.context() as m:  # killed while writing the new snapshot
        m.setattr(cache_mod, "to_parquet", half_written)
        with pytest.raises(Crash):
            read_object(client_of(svc), WO, cache=cache, rows_per_page=10, columns="keys")
    assert list(cache.glob(".tmp-*"))  # the half-written snapshot
    svc.pages.update_record(WO, ids[1], {"field_12": "after the crash"})
    fake_os = types.SimpleNamespace(**{k: getattr(os, k) for k in dir(os)
                                       if not k.startswith("__")})

    def no_replace(src: str, dst: str) -> None:
        raise Crash

    fake_os.replace = no_replace
    with monkeypatch.context() as m:  # killed after the snapshot, before the pointer
        m.setattr(cache_mod, "os", fake_os)
        with pytest.raises(Crash):
            read_object(client_of(svc), WO, cache=cache, rows_per_page=10, columns="keys")
    assert len(list(cache.glob("snap-*"))) == 2  # the new snapshot, never pointed at
    # the previous cache is read and refreshed, not reloaded in full (no warning)
    run = client_of(svc)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RefreshNotice)
        frames = read_object(run, WO, cache=cache, rows_per_page=10, columns="keys")
    assert run.request_count <= 3
    same_frames(frames, read_object(client_of(svc), WO, columns="keys"))
    assert not list(cache.glob(".tmp-*")) and len(list(cache.glob("snap-*"))) == 1


def test_export_incremental_keeps_a_dataset_current(svc: LocalService, tmp_path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    import json

    import pyarrow.dataset as ds

    from svc_frames.cli import main

    monkeypatch.setenv("SVC_APP_ID", svc.app_id)
    monkeypatch.setenv("SVC_API_KEY", svc.api_key)
    monkeypatch.setenv("SVC_BASE_URL", svc.base_url)
    out = tmp_path / "orders"
    args = ["export", WO, "--out", str(out), "--incremental", "--no-progress",
            "--rate-limit", "0", "--columns", "keys"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["full"] and first["written"] and first["records"] == 40
    c = client_of(svc)
    change_server(svc, list(read_object(c, WO, columns="keys").main.index), inserts=True, updates=True,
                  deletes=True)
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert not second["full"] and second["refresh"]["added"] == 2
    assert second["refresh"]["deleted"] == 2 and second["written"]
    fresh = read_object(c, WO, columns="keys")
    got = ds.dataset(out).to_table().to_pandas().set_index("id")
    assert sorted(got.index) == sorted(fresh.main.index)
    assert got.loc[fresh.main.index[0], "field_12"] == "Changed title"
    parts = ds.dataset(SavedLayout.of(out).tables / "field_41").to_table().to_pandas()
    assert len(parts) == len(fresh.tables["field_41"])
    saved = read_parquet(out)  # saved frames, as export writes them: pushable
    same_frames(saved, fresh)
    assert diff(saved).empty
    assert main(args) == 0  # nothing changed: the dataset is kept
    assert json.loads(capsys.readouterr().out)["written"] is False
    assert main([*args, "--format", "csv"]) == 2
    assert "--incremental" in capsys.readouterr().err
