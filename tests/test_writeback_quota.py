"""Budgeted writes over real HTTP: ``plan.requests`` against the requests a clean
run sends, ``quota_reserve`` stopping a run before the daily quota falls below it, the
resume after the (emulated) reset applying exactly the rest, and a quota spent by someone
else mid-run reported as ``not_applied``, never ``failed``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for, widest_object
from svc_frames.writeback import Report, add_rows, diff, write_back
from svc_frames.writeback.budget import DEFAULT_QUOTA_RESERVE


def load_orders(svc: LocalService) -> tuple[Client, str, Frames]:
    """A client on ``svc``, the work orders' key and their frames, freshly loaded."""
    client = client_for(svc)
    obj = widest_object(client)
    return client, obj, read_object(client, obj, progress=False, columns="keys")


def text_key(frames: Frames) -> str:
    assert frames.source is not None
    return next(f.key for f in frames.source.fields if f.kind == "short_text")


def edit(frames: Frames, ids: list[str], prefix: str) -> dict[str, str]:
    """Set the first short text of ``ids`` to ``f"{prefix} {i}"``; returns id -> value."""
    key = text_key(frames)
    want = {rid: f"{prefix} {i}" for i, rid in enumerate(ids)}
    s = frames.main[key].copy()
    for rid, v in want.items():
        s.at[rid] = v
    frames.main[key] = s
    return want


def statuses(report: Report) -> dict[str, str]:
    return dict(zip(report.table["record_id"], report.table["status"], strict=True))


def put_ids(svc: LocalService, obj: str, *, applied: bool | None = True) -> list[str]:
    """Record ids of the PUTs in the request log (``applied``: the store took them)."""
    prefix = f"/v1/objects/{obj}/records/"
    return [e.path[len(prefix):] for e in svc.request_log.entries
            if e.method == "PUT" and e.path.startswith(prefix)
            and (applied is None or e.applied == applied)]


def learn_quota(svc: LocalService, client: Client, obj: str, quota: int) -> None:
    """A new quota day of ``quota`` requests, told to the client by one cheap answer."""
    svc.emulation.daily_quota = quota
    svc.emulation.new_quota_day()
    client.get_page(obj, rows_per_page=1)


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=40, rate_limit=0, seed=3) as s:
        yield s


# The gate's arithmetic below is shown with the single re-read guard (guard="once"); the
# live guard's re-reads are claimed at the gate as writes are, and its check after the
# writes is kept back from the start (test_the_live_guards_reads_stay_above_the_reserve).

# ---- plan.requests ----------------------------------------------------------------------------
def test_plan_requests_equal_the_requests_of_a_clean_run(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    ids = [str(i) for i in frames.main.index[:12]]
    edit(frames, ids, "counted")
    add_rows(frames, [{text_key(frames): "new counted 1"}, {text_key(frames): "new counted 2"}])
    gone = str(frames.main.index[20])
    frames.main = frames.main.drop(index=[gone])
    plan = diff(frames)
    est = plan.requests                          # deletes not asked for: not counted
    # 1 before the creates: their matches
    assert (est.writes, est.uploads, est.lookups) == (14, 0, 1)
    assert est.rereads >= 1
    full = plan.estimate_requests(delete_missing=True)
    assert full.writes == 15
    assert "requests" in repr(plan) and str(full.total) in str(full)
    svc.request_log.clear()
    report = write_back(client, frames, delete_missing=True, quota_reserve=0)
    assert set(statuses(report).values()) == {"applied"}
    # exact in a clean run whose pace keeps up (no record comes late: no late re-read)
    assert svc.request_log.count() == full.total - full.late
    assert report.requests == {**full.as_dict(), "late": 0}


@pytest.mark.parametrize("n", [1, 60, 130])   # one GET, OR-filter chunks, the whole list
def test_plan_rereads_follow_the_guard_rules(n: int) -> None:
    with LocalService(demo=True, records=140, rate_limit=0, seed=4) as svc:
        client = client_for(svc)
        obj = widest_object(client)
        frames = read_object(client, obj, progress=False, columns="keys")
        edit(frames, [str(i) for i in frames.main.index[:n]], "reread")
        plan = diff(frames)
        svc.request_log.clear()
        report = write_back(client, frames, quota_reserve=0)
        assert report.ok
        # the live guard: re-reads before each batch, and the check after the writes;
        # on a starved machine a write can miss its window: its late re-read is counted
        # and stays within what the plan allows for
        late = report.requests["late"]
        assert late <= plan.requests.late
        assert svc.request_log.count(method="GET") == (plan.requests.rereads
                                                       + plan.requests.checks + late)
        assert report.requests["checks"] == plan.requests.checks >= 1
        assert svc.request_log.count() == plan.requests.total - plan.requests.late + late


def test_dry_run_prints_requests_beside_the_quota(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    edit(frames, [str(i) for i in frames.main.index[:5]], "dry")
    # a client that has had no answer yet: the quota is not known
    fresh_client = client_for(svc)
    report = write_back(fresh_client, frames, dry_run=True)
    assert report.quota is not None and report.quota.remaining is None
    assert "not known yet" in repr(report)
    learn_quota(svc, client, obj, 500)
    svc.request_log.clear()
    report = write_back(client, frames, dry_run=True)
    assert svc.request_log.count() == 0
    q = report.quota
    assert q is not None and q.remaining == 499 and q.limit == 500
    assert q.needed == diff(frames).requests.total and q.fits
    assert f"needs {q.needed} requests; 499 left of the daily quota" in repr(report)
    report = write_back(client, frames, dry_run=True, quota_reserve=497)
    assert report.quota is not None and report.quota.fits is False
    assert "does not fit" in repr(report)


# ---- the reserve: stop, report, resume ---------------------------------------------------------
def test_quota_runs_out_mid_run_and_the_resume_applies_exactly_the_rest(
        svc: LocalService, tmp_path: Path) -> None:
    client, obj, frames = load_orders(svc)
    ids = [str(i) for i in frames.main.index[:30]]
    want = edit(frames, ids, "budget")
    quota, reserve = 25, 5
    learn_quota(svc, client, obj, quota)             # 1 used: 24 left, the client knows
    needed = diff(frames).estimate_requests(guard="once").total
    svc.request_log.clear()
    journal = tmp_path / "push.jsonl"
    report = write_back(client, frames, guard="once", quota_reserve=reserve, max_workers=1,
                        journal=journal)
    st = statuses(report)
    applied = [r for r in ids if st[r] == "applied"]
    rest = [r for r in ids if st[r] == "not_applied"]
    rereads = report.requests["rereads"]
    # exact: every request up to the reserve, not one more
    assert svc.emulation.quota_used == quota - reserve
    assert svc.request_log.count() == quota - reserve - 1
    assert len(applied) == quota - reserve - 1 - rereads
    assert sorted(put_ids(svc, obj)) == sorted(applied)
    assert svc.request_log.count(status=429) == 0        # stopped before, never refused
    assert len(applied) + len(rest) == len(ids)
    assert all("quota" in m for m in report.table.loc[report.table.status == "not_applied",
                                                       "message"])
    q = report.quota
    assert q is not None and q.needed == needed and q.remaining == quota - 1
    assert q.fits is False and q.stopped
    assert "write_back again" in report.resume and f"{len(rest)} records" in report.resume
    assert "reset" in report.resume
    first_run = put_ids(svc, obj)

    # the emulated reset; a new session (the client's quota knowledge is of the old day)
    svc.emulation.new_quota_day()
    svc.request_log.clear()
    again = client_for(svc)
    report2 = write_back(again, frames, guard="once", quota_reserve=reserve, journal=journal)
    assert set(statuses(report2).values()) == {"applied"}
    assert sorted(statuses(report2)) == sorted(rest)
    assert sorted(put_ids(svc, obj)) == sorted(rest)      # exactly the rest, once each
    assert not set(first_run) & set(put_ids(svc, obj))
    assert report2.resume == ""
    server = read_object(again, obj, progress=False, columns="keys").main[text_key(frames)]
    assert {r: server[r] for r in ids} == want


def test_concurrent_writers_never_pass_the_reserve(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    ids = [str(i) for i in frames.main.index[:30]]
    edit(frames, ids, "parallel")
    learn_quota(svc, client, obj, 20)
    svc.request_log.clear()
    report = write_back(client, frames, guard="once", quota_reserve=4, max_workers=8)
    st = statuses(report)
    # never past the reserve; a claim counts until its answer is handled, so the gate may
    # stop a little early (at most one record per worker)
    assert 20 - 4 - 8 <= svc.emulation.quota_used <= 20 - 4
    assert sorted(put_ids(svc, obj)) == sorted(r for r in ids if st[r] == "applied")
    assert set(st.values()) == {"applied", "not_applied"}
    assert svc.request_log.count(status=429) == 0


def test_the_live_guards_reads_stay_above_the_reserve(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    ids = [str(i) for i in frames.main.index[:30]]
    edit(frames, ids, "live")
    owed = diff(frames).requests.checks
    learn_quota(svc, client, obj, 24)
    svc.request_log.clear()
    report = write_back(client, frames, quota_reserve=4, max_workers=1)   # guard="live"
    st = statuses(report)
    applied = [r for r in ids if st[r] == "applied"]
    # the batches' re-reads, the writes and the check after them, all within 24 - 4
    assert svc.emulation.quota_used <= 24 - 4
    assert report.requests["rereads"] >= 2 and report.requests["checks"] >= 1 and owed >= 1
    assert sorted(put_ids(svc, obj)) == sorted(applied) and len(applied) >= 10
    assert set(st.values()) == {"applied", "not_applied"}
    assert "kept for the check after the writes" in report.table.set_index(
        "record_id").loc[next(r for r in ids if st[r] == "not_applied"), "message"]


def test_guard_that_does_not_fit_sends_nothing(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    edit(frames, [str(i) for i in frames.main.index[:3]], "no room")
    learn_quota(svc, client, obj, 10)               # 9 left
    svc.request_log.clear()
    report = write_back(client, frames, guard="once", quota_reserve=9)
    assert svc.request_log.count() == 0
    assert set(statuses(report).values()) == {"not_applied"}
    assert "re-read" in report.table["message"].iloc[0]


def test_default_reserve_is_kept(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    edit(frames, [str(i) for i in frames.main.index[:5]], "default")
    learn_quota(svc, client, obj, DEFAULT_QUOTA_RESERVE + 3)
    report = write_back(client, frames, guard="once", max_workers=1)
    assert svc.emulation.quota_used == 3             # 1 to learn it, then 2 of 5 records
    assert report.counts == {"applied": 1, "not_applied": 4}


# ---- the quota spent by someone else -----------------------------------------------------------
def test_quota_spent_elsewhere_mid_run_is_not_applied_then_resumed(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    ids = [str(i) for i in frames.main.index[:10]]
    want = edit(frames, ids, "elsewhere")
    learn_quota(svc, client, obj, 1000)
    # someone else spends the day's quota just before our 4th write arrives
    svc.emulation.inject("quota", method="PUT", path_prefix=f"/v1/objects/{obj}/records/{ids[3]}")
    svc.request_log.clear()
    report = write_back(client, frames, guard="once", max_workers=1, quota_reserve=0)
    st = statuses(report)
    assert [st[r] for r in ids] == ["applied"] * 3 + ["not_applied"] * 7
    assert "failed" not in st.values()
    assert put_ids(svc, obj) == ids[:3]
    assert put_ids(svc, obj, applied=False) == [ids[3]]    # refused, then nothing more sent
    assert svc.request_log.count(status=429) == 1
    assert "spent" in report.table.set_index("record_id").loc[ids[3], "message"]
    assert report.quota is not None and report.quota.stopped and report.resume

    svc.emulation.new_quota_day()
    svc.request_log.clear()
    again = client_for(svc)
    report2 = write_back(again, frames, guard="once", quota_reserve=0)
    assert sorted(statuses(report2)) == sorted(ids[3:])
    assert sorted(put_ids(svc, obj)) == sorted(ids[3:])
    server = read_object(again, obj, progress=False, columns="keys").main[text_key(frames)]
    assert {r: server[r] for r in ids} == want


def test_quota_spent_after_a_lost_answer_is_unknown_not_failed(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    ids = [str(i) for i in frames.main.index[:3]]
    want = edit(frames, ids, "lost")
    learn_quota(svc, client, obj, 1000)
    path = f"/v1/objects/{obj}/records/{ids[1]}"
    svc.emulation.inject("cut", method="PUT", path_prefix=path)     # applied, answer lost
    svc.emulation.inject("quota", method="PUT", path_prefix=path)   # the retry: refused
    report = write_back(client, frames, guard="once", max_workers=1, quota_reserve=0)
    st = statuses(report)
    assert [st[r] for r in ids] == ["applied", "unknown", "not_applied"]
    assert ids[1] in put_ids(svc, obj)          # the store has it: unknown was the truth
    svc.emulation.new_quota_day()
    again = client_for(svc)
    report2 = write_back(again, frames, guard="once", quota_reserve=0)
    st2 = statuses(report2)
    assert st2 == {ids[1]: "applied", ids[2]: "applied"}
    server = read_object(again, obj, progress=False, columns="keys").main[text_key(frames)]
    assert {r: server[r] for r in ids} == want


def test_unknown_quota_is_told_by_the_first_answer(svc: LocalService) -> None:
    loader = client_for(svc)
    obj = widest_object(loader)
    frames = read_object(loader, obj, progress=False, columns="keys")
    ids = [str(i) for i in frames.main.index[:12]]
    edit(frames, ids, "unknown quota")
    svc.emulation.daily_quota = 500
    svc.emulation.new_quota_day()
    client = client_for(svc)                        # no answer yet: the quota is unknown
    report = write_back(client, frames, guard="once", quota_reserve=0)
    q = report.quota
    assert q is not None and q.learned and q.remaining == 500 and q.fits
    assert "the guard's re-read told it" in str(q)
    # without the guard, the first write goes alone and its answer tells the quota
    edit(frames, ids, "unknown again")
    svc.emulation.daily_quota = 6
    svc.emulation.new_quota_day()
    svc.request_log.clear()
    report = write_back(client_for(svc), frames, guard=False, quota_reserve=2, max_workers=8)
    # the schema (the stamped field: writeback/stamp.py), one write alone, then the
    # others within the reserve (a claim is held until its answer is handled, so the gate
    # may stop a little early, never late)
    used = svc.emulation.quota_used
    assert 3 <= used <= 6 - 2
    assert report.counts == {"applied": used - 1, "not_applied": 12 - used + 1}
    assert svc.request_log.count(status=429) == 0


# ---- required fields of creates (the refusals are in tests/test_bad_input.py) --------
def test_a_new_row_with_its_required_fields_is_created(svc: LocalService) -> None:
    client, obj, frames = load_orders(svc)
    assert frames.source is not None
    required = [f.key for f in frames.source.fields if f.required]
    assert required == [text_key(frames)]             # the demo's work orders: the title
    tmp = add_rows(frames, [{text_key(frames): "complete new row"}])
    report = write_back(client, frames)
    assert report.ok and statuses(report)[report.table["record_id"].iloc[0]] == "applied"
    assert tmp[0] not in frames.main.index
    # the service itself stays as hosted: a create without them makes a blank record
    blank = client.create_record(obj, {})
    assert blank["id"] and not blank.get(text_key(frames))


def frames_with_a_file_placed(client: Client, obj: str, doc: Path
                              ) -> tuple[Frames, str, str]:
    """Work orders loaded, with ``doc`` placed in the file field of the first record:
    (frames, the file field's key, that record's id)."""
    frames = read_object(client, obj, progress=False, columns="keys")
    assert frames.source is not None
    file_key = next(f.key for f in frames.source.fields if f.kind == "file")
    rid = str(frames.main.index[0])
    s = frames.main[file_key].astype(object)
    s.at[rid] = doc
    frames.main[file_key] = s
    return frames, file_key, rid


def test_plan_requests_count_uploads(svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc)
    obj = widest_object(client)
    doc = tmp_path / "manual.txt"
    doc.write_text("how to fix the pump\n")
    frames, file_key, _ = frames_with_a_file_placed(client, obj, doc)
    add_rows(frames, [{text_key(frames): "with a file", file_key: doc}])
    plan = diff(frames)
    assert (plan.requests.writes, plan.requests.uploads) == (2, 2)
    svc.request_log.clear()
    report = write_back(client, frames, quota_reserve=0)
    assert report.ok
    assert svc.request_log.count() == plan.requests.total - plan.requests.late
    assert report.requests == {**plan.requests.as_dict(), "late": 0}


def test_a_record_and_its_upload_go_whole_or_not_at_all(svc: LocalService,
                                                         tmp_path: Path) -> None:
    client = client_for(svc)
    obj = widest_object(client)
    doc = tmp_path / "sheet.txt"
    doc.write_text("spec sheet\n")
    frames, _, rid = frames_with_a_file_placed(client, obj, doc)
    learn_quota(svc, client, obj, 5)                # 4 left: the guard's re-read, then 3
    svc.request_log.clear()
    report = write_back(client, frames, quota_reserve=2)
    # the upload alone would fit above the reserve, the upload and its write do not
    assert statuses(report) == {rid: "not_applied"}
    assert svc.request_log.count() == report.requests["rereads"] == 1
    assert svc.emulation.quota_used == 2
