"""undo over real HTTP: a mistaken bulk edit (updates, a create, deletes of connected
records) reversed through write_back and its live guard; another user's later edits left
as they are (conflicts) unless forced; an undo undone; an undo from a journal in another
process (the CLI); an interrupted undo resumed without sending anything twice; bad
journals refused before any write."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from svc_frames import undo
from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.widgets import review
from svc_frames.writeback import Report, add_rows, write_back

OBJ = "object_3"          # the demo's work orders
TITLE, QTY, STATUS, PARTS = "field_12", "field_16", "field_27", "field_41"
QUIET = {"progress": False}   # the default guard window: a loaded machine keeps writes late


def _load(client: Client) -> Frames:
    return read_object(client, OBJ, columns="keys", progress=False)


def _status(report: Report) -> dict[str, str]:
    return dict(zip(report.table["record_id"], report.table["status"], strict=True))


def _parts_of(frames: Frames, rid: str) -> set[str]:
    t = frames.tables[PARTS]
    return set(t.loc[t["record_id"] == rid, "connected_id"].tolist())


def _mistake(client: Client, journal: Path | None = None, n: int = 6
             ) -> tuple[Frames, Report, list[str], list[str]]:
    """A bulk edit gone wrong: ``n`` titles and quantities overwritten, two connected
    records deleted, one record created. Returns the frames as loaded (a copy), the
    report, the updated ids and the deleted ids."""
    frames = _load(client)
    loaded = frames.snapshot()
    t = frames.tables[PARTS]
    connected = [r for r in frames.main.index if (t["record_id"] == r).any()]
    deleted = connected[-2:]
    updated = [r for r in frames.main.index if r not in deleted][:n]
    frames.main.loc[updated, TITLE] = "oops"
    frames.main.loc[updated, QTY] = 0.0
    frames.main = frames.main.drop(deleted)
    frames.tables[PARTS] = t[~t["record_id"].isin(deleted)]
    add_rows(frames, [{TITLE: "made by mistake", QTY: 1.0}])
    # the mistake's own guard re-reads once: a loaded machine cannot keep it late
    report = write_back(client, frames, delete_missing=True, journal=journal, guard="once",
                        **QUIET)
    assert set(report.table["status"]) == {"applied"}, report.table
    return loaded, report, updated, deleted


def _same(a: Any, b: Any) -> bool:
    return bool(pd.isna(a) and pd.isna(b)) if pd.isna(a) or pd.isna(b) else bool(a == b)


def _writes(svc: LocalService) -> int:
    log = svc.request_log
    return sum(log.count(method=m, applied=True) for m in ("PUT", "POST", "DELETE"))


@pytest.fixture()
def svc() -> Any:
    with LocalService(demo=True, records=30, rate_limit=0, seed=7) as s:
        yield s


# ---- a mistaken bulk edit undone ------------------------------------------------------------
def test_a_mistaken_bulk_edit_is_undone(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    loaded, report, updated, deleted = _mistake(client)
    created = report.table.loc[report.table["action"] == "create", "record_id"].tolist()
    u = undo(client, report)
    assert u.counts == {"update": len(updated), "create": len(deleted), "delete": 1}
    # said before any write: the auto-increment numbers and computed fields of the
    # re-created records
    lost = u.lost
    for rid in deleted:
        whys = dict(zip(lost.loc[lost["record_id"] == rid, "field"],
                        lost.loc[lost["record_id"] == rid, "why"], strict=True))
        assert "auto-increment" in whys["field_24"]
        assert "computed" in whys["field_18"]
    assert u.missing.empty
    ch = u.changes
    assert set(ch.loc[ch["action"] == "create", "undoes"]) == set(deleted)
    n = len(u.plan.record_ids)            # reviewable as any plan is
    assert repr(review(u.plan, client, u.edited, delete_missing=True)) == \
        f"PlanReview({n} of {n} records selected)"

    out = u.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    assert set(u.id_map) == set(deleted)
    now = _load(client)
    for rid in updated:
        assert _same(now.main.at[rid, TITLE], loaded.main.at[rid, TITLE])
        assert _same(now.main.at[rid, QTY], loaded.main.at[rid, QTY])
    assert created[0] not in now.main.index
    for old, new in u.id_map.items():
        assert old not in now.main.index and new in now.main.index
        for col in (TITLE, QTY, STATUS, "field_13", "field_29"):
            a, b = loaded.main.at[old, col], now.main.at[new, col]
            assert _same(a, b), (col, a, b)
        assert _parts_of(now, new) == _parts_of(loaded, old)
        assert now.main.at[new, "field_24"] != loaded.main.at[old, "field_24"]
    assert len(now.main) == len(loaded.main)


# ---- another user's later edits are never overwritten unless forced ------------------------
def test_an_undo_leaves_later_edits_of_others_as_conflicts(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    loaded, report, updated, _deleted = _mistake(client)
    theirs = updated[:2]
    for rid in theirs:                 # another user fixes two records by hand
        svc.pages.update_record(OBJ, rid, {TITLE: f"fixed by hand {rid[-4:]}"})
    # and edits another field of a third while we undo: not our cell, no conflict
    svc.pages.update_record(OBJ, updated[2], {STATUS: "Open"})
    u = undo(client, report)
    out = u.apply(**QUIET)
    st = _status(out)
    assert [st[r] for r in theirs] == ["conflict", "conflict"]
    assert all(st[r] == "applied" for r in updated[2:])
    conf = out.conflicts
    assert set(conf["record_id"]) == set(theirs)
    assert set(conf["field"]) == {TITLE}
    now = _load(client)
    for rid in theirs:                 # their cell stands, and ours was not sent
        assert now.main.at[rid, TITLE] == f"fixed by hand {rid[-4:]}"
        assert now.main.at[rid, QTY] == 0.0
    assert now.main.at[updated[2], STATUS] == "Open"
    assert now.main.at[updated[2], TITLE] == loaded.main.at[updated[2], TITLE]
    # forced, per record: the first goes back as loaded, the second stays theirs
    again = u.apply(force=[theirs[0]], **QUIET)
    assert _status(again) == {theirs[0]: "applied", theirs[1]: "conflict"}
    now = _load(client)
    assert now.main.at[theirs[0], TITLE] == loaded.main.at[theirs[0], TITLE]
    assert now.main.at[theirs[1], TITLE] == f"fixed by hand {theirs[1][-4:]}"
    with pytest.raises(UsageError, match="not records of the undo plan"):
        u.apply(force=["no-such-record"])


def test_an_edit_racing_the_undo_is_reported_not_hidden(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    _loaded, report, updated, _deleted = _mistake(client)
    victim = updated[1]
    done = threading.Event()

    def edit_right_after_our_write() -> None:
        # another user, on the application's pages, just after the undo's PUT answered
        while not done.is_set():
            if svc.request_log.count(method="PUT", path_prefix=f"/v1/objects/{OBJ}/"
                                     f"records/{victim}", applied=True):
                svc.pages.update_record(OBJ, victim, {TITLE: "theirs, after the undo"})
                return
            time.sleep(0.01)

    u = undo(client, report)
    svc.request_log.clear()
    t = threading.Thread(target=edit_right_after_our_write)
    t.start()
    try:
        out = u.apply(max_workers=1, **QUIET)
    finally:
        done.set()
        t.join()
    st = _status(out)
    assert st[victim] == "overwritten"          # the live guard's check saw theirs
    assert "theirs, after the undo" in out.table.set_index("record_id").at[victim, "message"]
    assert {st[r] for r in updated if r != victim} == {"applied"}
    assert _load(client).main.at[victim, TITLE] == "theirs, after the undo"


# ---- an undo can be undone ----------------------------------------------------------------------
def test_an_undo_of_an_undo_brings_the_edit_back(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    _loaded, report, updated, deleted = _mistake(client)
    edited_state = _load(client)
    u = undo(client, report)
    first = u.apply(**QUIET)
    redo = undo(client, first)
    assert redo.counts == {"update": len(updated), "create": 1, "delete": len(deleted)}
    out = redo.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    now = _load(client)
    for rid in updated:
        assert now.main.at[rid, TITLE] == "oops" and now.main.at[rid, QTY] == 0.0
    for new in u.id_map.values():
        assert new not in now.main.index
    assert (now.main[TITLE] == "made by mistake").sum() == 1
    assert len(now.main) == len(edited_state.main)


# ---- an undo from a journal, in another process ----------------------------------------------
def _cli(svc: LocalService, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "svc_frames.cli", "undo", *args, "--app-id", svc.app_id,
         "--api-key", svc.api_key, "--base-url", svc.base_url, "--rate-limit", "0"],
        capture_output=True, text=True, timeout=120)


@pytest.mark.slow(seconds=30)
def test_an_undo_from_a_journal_in_another_process(svc: LocalService,
                                                   tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    journal, undo_journal = tmp_path / "push.jsonl", tmp_path / "undo.jsonl"
    loaded, _report, updated, deleted = _mistake(client, journal)
    dry = _cli(svc, str(journal), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "auto-increment" in dry.stdout          # what cannot come back, before a write
    assert json.loads(dry.stdout.splitlines()[-1])["plan"] == {
        "update": len(updated), "create": len(deleted), "delete": 1}
    # and the requests it would send: the undo's writes, then the repointing's
    assert "it would send" in dry.stdout
    assert json.loads(dry.stdout.splitlines()[-1])["requests"]["writes"] >= \
        len(updated) + len(deleted) + 1
    done = _cli(svc, str(journal), "--journal", str(undo_journal))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["status"] == {"applied": len(updated) + len(deleted) + 1}
    assert set(result["id_map"]) == set(deleted)
    now = _load(client)
    for rid in updated:
        assert now.main.at[rid, TITLE] == loaded.main.at[rid, TITLE]
    # the other process's journal undoes its undo here
    redo = undo(client, undo_journal)
    assert redo.counts == {"update": len(updated), "create": 1, "delete": len(deleted)}
    assert set(redo.apply(**QUIET).table["status"]) == {"applied"}
    assert (_load(client).main.loc[updated, TITLE] == "oops").all()


# ---- an interrupted undo resumes, nothing done twice --------------------------------------
class _Crash(Exception):
    pass


class _CrashingClient(Client):
    """A real client that dies (as a killed process would) after ``budget`` updates."""

    budget = 3
    _budget_lock = threading.Lock()

    def update_record(self, *a: Any, **kw: Any) -> Any:
        with _CrashingClient._budget_lock:
            if _CrashingClient.budget <= 0:
                raise _Crash("killed")
            _CrashingClient.budget -= 1
        return super().update_record(*a, **kw)


def test_an_interrupted_undo_resumes_without_sending_twice(svc: LocalService,
                                                           tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    journal, undo_journal = tmp_path / "push.jsonl", tmp_path / "undo.jsonl"
    loaded, _report, updated, deleted = _mistake(client, journal, n=8)
    crashing = _CrashingClient(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                               rate_limit=0)
    _CrashingClient.budget = 3
    svc.request_log.clear()
    with pytest.raises(_Crash):
        undo(crashing, journal).apply(journal=undo_journal, max_workers=1, **QUIET)
    puts_before = svc.request_log.count(method="PUT", applied=True)
    assert puts_before == 3
    out = undo(client, journal).apply(journal=undo_journal, **QUIET)   # a new process would
    assert set(out.table["status"]) == {"applied"}, out.table
    from_journal = out.table[out.table["message"].str.contains("journal")]
    assert len(from_journal) == 3
    # each record written once over both runs: the updates, the re-creates, the delete
    assert svc.request_log.count(method="PUT", applied=True) == len(updated)
    assert svc.request_log.count(method="POST", applied=True) == len(deleted)
    assert svc.request_log.count(method="DELETE", applied=True) == 1
    now = _load(client)
    for rid in updated:
        assert now.main.at[rid, TITLE] == loaded.main.at[rid, TITLE]


# ---- bad input: refused before any write ------------------------------------------------------
def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_bad_journals_are_refused_naming_the_culprit(svc: LocalService,
                                                     tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    journal = tmp_path / "push.jsonl"
    _loaded, report, _updated, _deleted = _mistake(client, journal)
    svc.request_log.clear()
    # of another application
    other = tmp_path / "other-app.jsonl"
    _write(other, [{**x, "app_id": "0123456789abcdef01234567"} if x["op"] == "run" else x
                   for x in _lines(journal)])
    with pytest.raises(UsageError) as err:
        undo(client, other)
    assert "0123456789abcdef01234567" in str(err.value) and svc.app_id in str(err.value)
    # of another object than the one expected
    with pytest.raises(UsageError) as err:
        undo(client, journal, object="Parts")
    assert "object_3" in str(err.value) and "object_2" in str(err.value)
    # of an older svc_frames: no values as loaded
    old = tmp_path / "old.jsonl"
    _write(old, [{k: v for k, v in x.items() if k != "undo"} for x in _lines(journal)
                 if x["op"] != "run"])
    with pytest.raises(UsageError, match="older svc_frames.*cannot be undone"):
        undo(client, old)
    # nothing to undo
    with pytest.raises(UsageError, match="no such file"):
        undo(client, tmp_path / "missing.jsonl")
    with pytest.raises(UsageError, match="dry run"):
        undo(client, write_back(client, _load(client), dry_run=True, progress=False))
    with pytest.raises(UsageError, match="Report or a journal"):
        undo(client, 42)  # type: ignore[arg-type]
    assert _writes(svc) == 0


def test_a_journal_cut_short_undoes_its_complete_part(svc: LocalService,
                                                      tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    journal = tmp_path / "push.jsonl"
    loaded, _report, updated, _deleted = _mistake(client, journal)
    # the process died while writing: the journal ends mid-line, never settled
    text = journal.read_text().splitlines()
    acks = [i for i, x in enumerate(text) if json.loads(x)["op"] == "ack"
            and json.loads(x)["action"] == "update"]
    cut = text[:acks[2]] + [text[acks[2]][:40]]
    journal.write_text("\n".join(cut))
    whole = [json.loads(x) for x in text[:acks[2]]]
    done = {x["record_id"]: x["action"] for x in whole if x["op"] == "ack"}
    undone = {"update": 0, "create": 0, "delete": 0}
    for act in done.values():
        undone[{"update": "update", "create": "delete", "delete": "create"}[act]] += 1
    u = undo(client, journal)
    assert u.counts == undone and undone["update"] == 2
    missing = u.missing
    assert "could not be read" in missing["why"].iloc[-1]
    # a create sent whose acknowledgement is not in the complete part: listed, not undone
    intents = [x for x in whole if x["op"] == "intent" and x["record_id"] not in done]
    assert len(missing) == 1 + len(intents)
    out = u.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}
    now = _load(client)
    back = [r for r in updated if done.get(r) == "update"]
    assert len(back) == 2
    for r in updated:
        assert (now.main.at[r, TITLE] == loaded.main.at[r, TITLE]) == (r in back)


# ---- records connected to a deleted record are pointed at the new one ----------------------
TREE: dict[str, Any] = {
    "objects": [{"key": "object_1", "name": "Tasks", "identifier": "field_1", "fields": [
        {"key": "field_1", "type": "short_text", "name": "Name"},
        {"key": "field_2", "type": "connection", "name": "Depends On",
         "relationship": {"object": "object_1", "has": "many", "belongs_to": "many"}}]}],
}


def test_records_connected_to_a_re_created_record_point_at_the_new_one() -> None:
    with LocalService(demo=False, app=TREE, records=0, rate_limit=0) as svc:
        client = client_for(svc, rate_limit=0)
        a = client.create_record("object_1", {"field_1": "A"})["id"]
        b = client.create_record("object_1", {"field_1": "B", "field_2": [a]})["id"]
        c = client.create_record("object_1", {"field_1": "C", "field_2": [a, b]})["id"]
        frames = read_object(client, "object_1", columns="keys", progress=False)
        frames.main = frames.main.drop([a, b])     # "delete all" of the wrong two
        t = frames.tables["field_2"]
        frames.tables["field_2"] = t[t["record_id"] == c]
        report = write_back(client, frames, delete_missing=True, **QUIET)
        assert set(report.table["status"]) == {"applied"}
        after = read_object(client, "object_1", columns="keys", progress=False)
        t = after.tables["field_2"]
        assert t.loc[t["record_id"] == c, "connected_id"].tolist() == []  # dropped with them
        u = undo(client, report)
        # B is created after A with A's new id in its list: only C is pointed after
        assert "1 to point at new ids" in repr(u)
        svc.request_log.clear()
        out = u.apply(**QUIET)
        assert set(out.table["status"]) == {"applied"}, out.table
        assert svc.request_log.count(method="POST", applied=True) == 2
        assert svc.request_log.count(method="PUT", applied=True) == 1
        new_a, new_b = u.id_map[a], u.id_map[b]
        now = read_object(client, "object_1", columns="keys", progress=False)
        assert set(now.main.index) == {c, new_a, new_b}
        links = now.tables["field_2"]

        def of(r: str) -> set[str]:
            return set(links.loc[links["record_id"] == r, "connected_id"])

        assert of(c) == {new_a, new_b}       # the record that stayed points at both again
        assert of(new_b) == {new_a}          # and a re-created one at the other
        assert of(new_a) == set()


@pytest.mark.slow(seconds=10)
def test_a_journal_of_several_runs_undoes_the_one_asked(svc: LocalService,
                                                        tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    journal = tmp_path / "push.jsonl"
    frames = _load(client)
    first, second = frames.main.index[:2].tolist(), frames.main.index[2:5].tolist()
    was = frames.main[TITLE].copy()
    frames.main.loc[first, TITLE] = "first run"
    write_back(client, frames, journal=journal, **QUIET)
    frames.main.loc[second, TITLE] = "second run"
    write_back(client, frames, journal=journal, **QUIET)
    last = undo(client, journal)
    assert last.counts["update"] == 3 and set(last.plan.record_ids) == set(second)
    one = undo(client, journal, run=0)
    assert set(one.plan.record_ids) == set(first)
    with pytest.raises(UsageError, match="holds 2 runs; run=5"):
        undo(client, journal, run=5)
    assert set(one.apply(**QUIET).table["status"]) == {"applied"}
    now = _load(client)
    assert now.main.loc[first, TITLE].tolist() == was.loc[first].tolist()
    assert (now.main.loc[second, TITLE] == "second run").all()


def test_records_of_other_objects_connected_to_a_deleted_one_point_at_the_new_one(
        svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    orders = _load(client)
    links = orders.tables[PARTS]
    parts = read_object(client, "object_2", columns="keys", progress=False)
    used = links["connected_id"].value_counts()
    gone = used.index[:2].tolist()                 # two parts that work orders list
    users = {p: set(links.loc[links["connected_id"] == p, "record_id"]) for p in gone}
    parts.main = parts.main.drop(gone)              # a "delete all" gone wrong, in small
    svc.request_log.clear()
    report = write_back(client, parts, delete_missing=True, **QUIET)
    assert set(report.table["status"]) == {"applied"}
    assert report.requests["lookups"] >= 1          # their links, read before the delete
    held = _load(client).tables[PARTS]
    assert not held["connected_id"].isin(gone).any()   # the service dropped them
    u = undo(client, report)
    assert not u.lost["field"].str.startswith("object_3.").any()
    out = u.apply(journal=tmp_path / "undo.jsonl", **QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    now = _load(client).tables[PARTS]
    for old in gone:
        new = u.id_map[old]
        assert set(now.loc[now["connected_id"] == new, "record_id"]) == users[old]
    for order in set().union(*users.values()):      # each list as loaded, new ids for old
        want = {u.id_map.get(p, p) for p in links.loc[links["record_id"] == order,
                                                      "connected_id"]}
        assert set(now.loc[now["record_id"] == order, "connected_id"]) == want
    # the undo undone, from its report or its journal: the re-created parts deleted (the
    # links made to them go with them)
    assert undo(client, out).counts == {"update": 0, "create": 0, "delete": 2}
    redo = undo(client, tmp_path / "undo.jsonl")
    assert redo.counts == {"update": 0, "create": 0, "delete": 2}
    assert set(redo.apply(**QUIET).table["status"]) == {"applied"}
    final = _load(client).tables[PARTS]
    assert not final["connected_id"].isin(list(u.id_map.values())).any()


def test_a_delete_from_frames_of_some_columns_lists_the_unread_fields_as_lost(
        svc: LocalService) -> None:
    """A run whose frames held a subset of the columns deleted a record: its other fields
    were never read, so an undo re-creates it without them and says so before any write
    (never a silent gap)."""
    client = client_for(svc, rate_limit=0)
    frames = read_object(client, OBJ, columns=[TITLE, QTY], progress=False)
    assert list(frames.main.columns) == ["Title", "Quantity"]   # a subset: by label
    gone = str(frames.main.index[-1])
    frames.main = frames.main.drop(gone)
    report = write_back(client, frames, delete_missing=True, guard="once", **QUIET)
    assert _status(report)[gone] == "applied"
    lost = undo(client, report).lost
    unread = set(lost.loc[(lost["record_id"] == gone)
                          & lost["why"].str.contains("never read"), "field"])
    assert {STATUS, PARTS, "field_13", "field_29"} <= unread
    assert not {TITLE, QTY} & unread
    assert "field_24" not in unread and "field_18" not in unread   # said otherwise or nothing
