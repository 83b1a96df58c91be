"""restore over real HTTP: a "delete all" of work orders brought back from a DuckDB mirror
with their connections in both directions (their parts, assignee and the work orders they
follow; the visits that were for them), the object equal to ``as_of(when)`` but for the
new ids; another user's edits after the mirror's last run left as conflicts; bad input
refused before any write; a Parquet mirror with a part of the records, a filter and the
records created since deleted; an interrupted restore resumed without sending twice; the
CLI."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures.works_app import (
    ASSIGNEE,
    ATTACHMENT,
    DOUBLE,
    FOLLOWS,
    ORDER_PARTS,
    ORDERS,
    PARTS,
    PEOPLE,
    QTY,
    STATUS,
    TITLE,
    VISIT_ORDERS,
    VISITS,
    WO_NO,
    fill_works,
    works_document,
)

from svc_frames import as_of, mirror, restore
from svc_frames.cli import main as cli_main
from svc_frames.errors import TargetMismatch, UsageError
from svc_frames.filters import Field
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for

QUIET = {"progress": False}
DATA = [TITLE, QTY, STATUS]


@pytest.fixture()
def svc() -> Any:
    with LocalService(demo=False, app=works_document(), records=0, rate_limit=0) as s:
        s.made = fill_works(s, orders=12, visits=24)
        yield s


def _load(client: Client, obj: str = ORDERS) -> Frames:
    return read_object(client, obj, columns="keys", progress=False)


def _pairs(frames: Frames, key: str, ids: dict[str, str] | None = None
           ) -> set[tuple[str, str]]:
    """A connection table as (record, connected) pairs, new ids mapped back to old."""
    back = ids or {}
    t = frames.tables[key]
    return {(back.get(r, r), back.get(c, c)) for r, c in
            zip(t["record_id"].astype(str), t["connected_id"].astype(str), strict=True)}


def _writes(svc: LocalService) -> int:
    log = svc.request_log
    return sum(log.count(method=m, applied=True) for m in ("PUT", "POST", "DELETE"))


def _tick() -> pd.Timestamp:
    """A time strictly between two runs."""
    time.sleep(0.02)
    when = pd.Timestamp.now(tz="UTC")
    time.sleep(0.02)
    return when


# ---- a "delete all" restored, with its connections both ways --------------------------------
@pytest.mark.slow(seconds=8)
def test_a_delete_all_of_work_orders_comes_back_from_a_duckdb_mirror(
        svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    target = tmp_path / "app.duckdb"
    mirror(client, target)
    when = _tick()
    orders = _load(client)
    orders.main = orders.main.iloc[0:0]                   # "Delete All", pressed by mistake
    for key in (ORDER_PARTS, ASSIGNEE, FOLLOWS):
        orders.tables[key] = orders.tables[key].iloc[0:0]
    from svc_frames.writeback import write_back
    report = write_back(client, orders, delete_missing=True, guard="once", **QUIET)
    assert report.counts == {"applied": 12}
    # meanwhile, work goes on: a new order, and a visit that pointed at deleted orders
    # now points at it too (a link the restore must keep)
    fresh = svc.pages.create_record(ORDERS, {TITLE: "made after", QTY: 1.0})["id"]
    then = as_of(target, when)
    visit = next(v for v, ids in then[VISITS].tables[VISIT_ORDERS].groupby("record_id")
                 ["connected_id"])
    svc.pages.update_record(VISITS, visit, {VISIT_ORDERS: [fresh]})
    mirror(client, target)

    p = restore(client, target, when, "Work Orders")
    assert p.counts == {"update": 0, "create": 12, "delete": 0}
    assert p.created_after["record_id"].tolist() == [fresh]
    assert not p.created_after["deleted"].any()
    lost = p.lost
    assert set(lost["field"]) == {WO_NO, DOUBLE}          # said before any write
    assert lost["why"].str.contains("auto-increment").sum() == 12
    assert set(p.changes["restores"]) == set(then[ORDERS].main.index)
    est = p.requests        # the creates, the live lists' reads and the repointing
    svc.request_log.clear()
    out = p.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    assert set(p.id_map) == set(then[ORDERS].main.index)
    assert out.requests["writes"] <= est.writes and est.lookups >= p.relink_reads >= 1
    back = {new: old for old, new in p.id_map.items()}

    now = _load(client)
    assert set(now.main.index) == set(p.id_map.values()) | {fresh}
    was = then[ORDERS]
    mine = now.main.drop(index=[fresh]).rename(index=back).sort_index()
    stored = [c for c in was.main.columns if c not in (WO_NO, DOUBLE)]  # all but lost
    pd.testing.assert_frame_equal(mine[stored], was.main.sort_index()[stored],
                                  check_index_type=False, check_names=False)
    assert (mine[DOUBLE] == mine[QTY] * 2).all()          # computed again
    for key in (ORDER_PARTS, ASSIGNEE, FOLLOWS):          # its own connections
        assert _pairs(now, key, back) == _pairs(was, key), key
    # the other direction: every visit that pointed at an order points at its new id,
    # and the link made after the delete is kept
    visits_now = _pairs(_load(client, VISITS), VISIT_ORDERS, back)
    assert visits_now == _pairs(then[VISITS], VISIT_ORDERS) | {(visit, fresh)}
    # parts and people untouched
    assert set(_load(client, PARTS).main.index) == set(then[PARTS].main.index)
    assert set(_load(client, PEOPLE).main.index) == set(then[PEOPLE].main.index)
    # the mirror's next run sees the records back: the object equals as_of(when) but for
    # the new ids (and the one made since)
    mirror(client, target)
    later = as_of(target, pd.Timestamp.now(tz="UTC"))[ORDERS]
    assert len(later.main) == len(was.main) + 1


# ---- another user's edits are conflicts, never overwritten unless forced ------------------------
@pytest.mark.slow(seconds=8)
def test_a_restore_racing_another_users_edits_leaves_theirs(svc: LocalService,
                                                            tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    target = tmp_path / "app.duckdb"
    mirror(client, target)
    when = _tick()
    orders = _load(client)
    ids = orders.main.index[:6].tolist()
    orders.main.loc[ids, TITLE] = "bulk edit gone wrong"
    orders.main.loc[ids, QTY] = 0.0
    from svc_frames.writeback import write_back
    write_back(client, orders, guard="once", **QUIET)
    mirror(client, target)
    # after the mirror's last run, another user fixes two titles on the app's pages
    theirs = ids[:2]
    for rid in theirs:
        svc.pages.update_record(ORDERS, rid, {TITLE: f"fixed by hand {rid[-4:]}"})
    p = restore(client, target, when, ORDERS, records=ids)
    assert p.counts == {"update": 6, "create": 0, "delete": 0}
    victim = ids[3]
    done = threading.Event()

    def edit_during_the_restore() -> None:
        # and a third, on the app's pages, just after the restore's PUT of it answered
        while not done.is_set():
            if svc.request_log.count(method="PUT", path_prefix=f"/v1/objects/{ORDERS}/"
                                     f"records/{victim}", applied=True):
                svc.pages.update_record(ORDERS, victim, {TITLE: "theirs, during"})
                return
            time.sleep(0.005)

    svc.request_log.clear()
    t = threading.Thread(target=edit_during_the_restore)
    t.start()
    try:
        out = p.apply(max_workers=1, **QUIET)
    finally:
        done.set()
        t.join()
    st = dict(zip(out.table["record_id"], out.table["status"], strict=True))
    assert [st[r] for r in theirs] == ["conflict", "conflict"]
    assert st[victim] == "overwritten"          # the live guard's check saw theirs
    assert set(out.conflicts["field"]) == {TITLE}
    now = _load(client).main
    was = as_of(target, when)[ORDERS].main
    for rid in theirs:
        assert now.at[rid, TITLE] == f"fixed by hand {rid[-4:]}"   # theirs stands
        assert now.at[rid, QTY] == 0.0         # the whole record is left: one conflict
    assert now.at[victim, TITLE] == "theirs, during"
    for rid in ids[2:]:
        if rid != victim:
            assert now.at[rid, TITLE] == was.at[rid, TITLE]
            assert now.at[rid, QTY] == was.at[rid, QTY]
    # forced for one record: that one is overwritten, the other left
    again = restore(client, target, when, ORDERS, records=theirs).apply(
        force=[theirs[0]], **QUIET)
    st = dict(zip(again.table["record_id"], again.table["status"], strict=True))
    assert st == {theirs[0]: "applied", theirs[1]: "conflict"}
    now = _load(client).main
    assert now.at[theirs[0], TITLE] == was.at[theirs[0], TITLE]
    assert now.at[theirs[1], TITLE] == f"fixed by hand {theirs[1][-4:]}"


# ---- bad input: refused before any write -----------------------------------------------------
def test_bad_input_is_refused_naming_the_culprit(svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    target = tmp_path / "app.duckdb"
    before_first = pd.Timestamp.now(tz="UTC") - pd.Timedelta(hours=1)
    mirror(client, target)
    when = _tick()
    svc.request_log.clear()
    with pytest.raises(UsageError, match="before the mirror's first run"):
        restore(client, target, before_first, ORDERS)
    with pytest.raises(UsageError, match="in the future"):
        restore(client, target, pd.Timestamp.now(tz="UTC") + pd.Timedelta(days=1), ORDERS)
    with pytest.raises(UsageError, match="must be a time"):
        restore(client, target, "yesterday-ish", ORDERS)
    with pytest.raises(UsageError, match="never saw an object 'Invoices'.*Work Orders"):
        restore(client, target, when, "Invoices")
    with pytest.raises(UsageError, match="never saw in object_3: 0123456789abcdef01234567"):
        restore(client, target, when, ORDERS, records=["0123456789abcdef01234567"])
    with pytest.raises(UsageError, match="'is during the previous' cannot be matched"):
        restore(client, target, when, ORDERS,
                records=Field(TITLE).during_previous(2, "days"))
    with pytest.raises(UsageError, match="no mirror|not a mirror|no such"):
        restore(client, tmp_path / "empty.duckdb", when, ORDERS)
    with LocalService(demo=False, app=works_document(), records=0, rate_limit=0) as other:
        stranger = client_for(other, rate_limit=0)
        with pytest.raises(TargetMismatch, match=f"{svc.app_id}.*{other.app_id}"):
            restore(stranger, target, when, ORDERS)
    assert _writes(svc) == 0


# ---- a Parquet mirror: some records, a filter, the records made since deleted -------------------
@pytest.mark.slow(seconds=10)
def test_a_parquet_mirror_restores_some_records_and_deletes_those_made_since(
        svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    target = tmp_path / "mirror/"
    mirror(client, str(target))
    when = _tick()
    orders = _load(client)
    first = orders.main.index[:3].tolist()
    for rid in first:
        client.delete_record(ORDERS, rid)
    done = orders.main.index[(orders.main[STATUS] == "Done").to_numpy()].tolist()
    changed = [r for r in done if r not in first][:2]
    for rid in changed:
        svc.pages.update_record(ORDERS, rid, {STATUS: "Open", QTY: 99.0})
    made = svc.pages.create_record(ORDERS, {TITLE: "made since", QTY: 2.0})["id"]
    mirror(client, str(target))

    only = restore(client, str(target), when, ORDERS, records=first[:1])
    assert only.counts == {"update": 0, "create": 1, "delete": 0}
    assert only.created_after.empty
    # a filter, matched against the mirror (the deleted records are not on the service)
    flt = Field("Status").is_("Done")
    p = restore(client, str(target), when, "Work Orders", records=flt, delete_created=True)
    want_created = [r for r in first if r in done]
    assert p.counts == {"update": len(changed), "create": len(want_created), "delete": 0}
    everything = restore(client, str(target), when, ORDERS, delete_created=True)
    assert everything.counts == {"update": len(changed), "create": 3, "delete": 1}
    assert everything.created_after["record_id"].tolist() == [made]
    out = everything.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    now = _load(client).main
    was = as_of(str(target), when)[ORDERS].main
    assert made not in now.index
    assert len(now) == len(was)
    for rid in changed:
        assert now.at[rid, STATUS] == "Done" and now.at[rid, QTY] == was.at[rid, QTY]


# ---- an interrupted restore resumes, nothing sent twice --------------------------------------
class _Crash(BaseException):
    pass


class _CrashingClient(Client):
    """A real client that dies (as a killed process would) after ``budget`` creates."""

    budget = 3
    _lock = threading.Lock()

    def create_record(self, *a: Any, **kw: Any) -> Any:
        with _CrashingClient._lock:
            if _CrashingClient.budget <= 0:
                raise _Crash("killed")
            _CrashingClient.budget -= 1
        return super().create_record(*a, **kw)


@pytest.mark.slow(seconds=8)
def test_an_interrupted_restore_resumes_without_sending_twice(svc: LocalService,
                                                              tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    target, journal = tmp_path / "app.duckdb", tmp_path / "restore.jsonl"
    mirror(client, target)
    when = _tick()
    gone = _load(client).main.index[:6].tolist()
    for rid in gone:
        client.delete_record(ORDERS, rid)
    mirror(client, target)
    crashing = _CrashingClient(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                               rate_limit=0)
    _CrashingClient.budget = 3
    svc.request_log.clear()
    with pytest.raises(_Crash):
        restore(crashing, target, when, ORDERS).apply(journal=journal, max_workers=1,
                                                      **QUIET)
    assert svc.request_log.count(method="POST", applied=True) == 3
    p = restore(client, target, when, ORDERS)        # as a new process would
    out = p.apply(journal=journal, **QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    assert svc.request_log.count(method="POST", applied=True) == len(gone)
    assert set(p.id_map) == set(gone)
    now = _load(client)
    assert len(now.main) == 12
    back = {new: old for old, new in p.id_map.items()}
    was = as_of(target, when)
    assert _pairs(_load(client, VISITS), VISIT_ORDERS, back) == \
        _pairs(was[VISITS], VISIT_ORDERS)
    assert _pairs(now, FOLLOWS, back) == _pairs(was[ORDERS], FOLLOWS)


# ---- the command ------------------------------------------------------------------------------
def test_the_command_plans_and_applies_a_restore(svc: LocalService, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    client = client_for(svc, rate_limit=0)
    target = tmp_path / "app.duckdb"
    mirror(client, target)
    when = _tick()
    gone = _load(client).main.index[:2].tolist()
    for rid in gone:
        client.delete_record(ORDERS, rid)
    svc.pages.update_record(ORDERS, _load(client).main.index[0], {TITLE: "edited since"})
    mirror(client, target)
    monkeypatch.setenv("SVC_APP_ID", svc.app_id)
    monkeypatch.setenv("SVC_API_KEY", svc.api_key)
    monkeypatch.setenv("SVC_BASE_URL", svc.base_url)
    base = ["restore", "--mirror", str(target), "--object", "Work Orders",
            "--when", when.isoformat()]
    svc.request_log.clear()
    assert cli_main([*base, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "cannot come back" in out and ATTACHMENT not in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["dry_run"] is True
    assert summary["plan"] == {"update": 1, "create": 2, "delete": 0}
    assert "it would send" in out and summary["requests"]["writes"] >= 3
    assert _writes(svc) == 0
    assert cli_main([*base, "--ids", gone[0], "--journal", str(tmp_path / "r.jsonl")]) == 0
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert set(summary["status"]) == {"applied"}       # the create, then the repointing
    assert summary["plan"] == {"update": 0, "create": 1, "delete": 0}
    assert list(summary["id_map"]) == [gone[0]]
    assert f"{gone[0]} -> {summary['id_map'][gone[0]]}" in out
    assert cli_main([*base, "--when", "2000-01-01"]) == 2      # bad input: exit 2


# ---- files: uploaded again from the mirror's copies, or said lost ------------------------------
def test_files_come_back_from_the_mirrors_copies(svc: LocalService, tmp_path: Path) -> None:
    from svc_frames import download, upload_file
    client = client_for(svc, rate_limit=0)
    ids = _load(client).main.index[:3].tolist()
    for i, rid in enumerate(ids[:2]):
        up = upload_file(client, f"manual {i}".encode(), f"manual-{i}.txt")
        client.update_record(ORDERS, rid, {ATTACHMENT: up["id"]})
    copies, plain = tmp_path / "copies.duckdb", tmp_path / "plain.duckdb"
    mirror(client, copies, assets=True)
    mirror(client, plain)
    when = _tick()
    client.delete_record(ORDERS, ids[0])
    client.update_record(ORDERS, ids[1], {ATTACHMENT: None})      # a file removed
    for target in (copies, plain):
        mirror(client, target, **({"assets": True} if target == copies else {}))

    without = restore(client, plain, when, ORDERS, records=ids[:2])
    lost = without.lost[without.lost["field"] == ATTACHMENT]
    assert set(lost["record_id"]) == set(ids[:2])
    assert lost["why"].str.contains("no copy").all()

    p = restore(client, copies, when, ORDERS, records=ids[:2])
    assert ATTACHMENT not in set(p.lost["field"])
    assert p.counts == {"update": 1, "create": 1, "delete": 0}
    out = p.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    now = _load(client).main
    new = p.id_map[ids[0]]
    for rid, i in ((new, 0), (ids[1], 1)):
        assert now.at[rid, f"{ATTACHMENT}.filename"] == f"manual-{i}.txt"
        assert download(client, str(now.at[rid, f"{ATTACHMENT}.url"])) == \
            f"manual {i}".encode()


# ---- what cannot come back is said before any write -------------------------------------------
def test_a_field_removed_since_and_links_the_mirror_never_held_are_said_lost(
        svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    target = tmp_path / "app.duckdb"
    mirror(client, target, [PEOPLE, PARTS, ORDERS])          # the visits are not mirrored
    when = _tick()
    gone = _load(client).main.index[:2].tolist()
    for rid in gone:
        client.delete_record(ORDERS, rid)
    svc.builder.remove_field(STATUS)                        # the owner drops a field
    client = client_for(svc, rate_limit=0)                  # a client reading the new schema
    mirror(client, target, [PEOPLE, PARTS, ORDERS])
    svc.request_log.clear()
    p = restore(client, target, when, ORDERS, records=gone)
    lost = p.lost
    why = dict(zip(zip(lost["record_id"], lost["field"], strict=True), lost["why"],
                   strict=True))
    for rid in gone:
        assert "no longer in the schema" in why[(rid, STATUS)]
        assert "not in the mirror" in why[(rid, f"{VISITS}.{VISIT_ORDERS}")]
    assert _writes(svc) == 0
    out = p.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    now = _load(client).main
    was = as_of(target, when)[ORDERS].main
    for old, new in p.id_map.items():
        assert now.at[new, TITLE] == was.at[old, TITLE]
        assert STATUS not in now.columns


# ---- the live lists' reads before the repointing are claimed of the quota -------------------
def _deleted_on_the_pages(svc: LocalService, client: Client, tmp_path: Path) -> Any:
    """Three work orders deleted on the application's pages (visits point at them), the
    mirror run before and after: the restore's plan."""
    target = tmp_path / "app.duckdb"
    mirror(client, target)
    when = _tick()
    for rid in svc.made[ORDERS][:3]:
        svc.pages.delete_record(ORDERS, rid)
    mirror(client, target)
    return restore(client, target, when, "Work Orders")


def _quota(svc: LocalService, client: Client) -> int:
    svc.emulation.daily_quota = 2000
    svc.emulation.new_quota_day()
    client.get_page(PEOPLE, rows_per_page=1)          # the client learns what is left
    left = client.quota_left()
    assert left is not None
    return left


def test_the_repointing_keeps_room_for_the_live_lists_reads(svc: LocalService,
                                                            tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    p = _deleted_on_the_pages(svc, client, tmp_path)
    est = p.requests
    reads = p._relink_read_requests()
    assert reads and est.lookups >= reads
    left = _quota(svc, client)
    # room for all but the live lists' reads above the reserve: the restore's own run
    # keeps room for them, so what it creates is pointed at whole, above the reserve
    reserve = left - (est.total - reads)
    out = p.apply(quota_reserve=reserve, **QUIET)
    made = out.table[(out.table["action"] == "create") & (out.table["status"] == "applied")]
    stopped = out.table[out.table["status"] == "not_applied"]
    assert len(made) < 3 and len(stopped), out.table
    assert stopped["message"].str.contains(r"left, quota_reserve=").all()
    relinked = out.table[out.table["action"] == "update"]
    assert set(relinked["status"]) <= {"applied"}, out.table
    assert client.quota_left() is not None and client.quota_left() >= reserve


def test_no_room_for_the_live_lists_reads_sends_none_of_them(svc: LocalService,
                                                             tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    p = _deleted_on_the_pages(svc, client, tmp_path)
    reads = p._relink_read_requests()
    left = _quota(svc, client)
    reserve = 10
    learn = p._learn_ids

    def spent_meanwhile(report: Any) -> None:     # another program spends the quota
        learn(report)
        client.get_page(PEOPLE, rows_per_page=1)
        svc.emulation.daily_quota -= client.quota_left() - reserve - reads - 2
        client.get_page(PEOPLE, rows_per_page=1)     # the client learns it: room for
        assert client.quota_left() == reserve + reads + 1   # the reads, not the writes

    p._learn_ids = spent_meanwhile    # type: ignore[method-assign]
    assert left > reserve
    out = p.apply(quota_reserve=reserve, **QUIET)
    assert len(p.id_map) == 3
    relinked = out.table[out.table["action"] == "update"]
    assert len(relinked) and set(relinked["status"]) == {"not_applied"}, out.table
    assert relinked["message"].str.contains(rf"{reserve + reads + 1} left, quota_reserve=").all()
    assert p.relink_reads == 0                    # none of the live lists read
