"""Other users at work in the local service (``activity=``): records appear, change and
disappear at the configured rate, through the application's own pages (stamped), seeded
and reproducible; bad settings refused before anything starts. No timed assertion: the
runner is waited for by the count of its log, and its rate is checked as an upper bound
the schedule guarantees."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from svc_frames.errors import UsageError
from svc_frames.server import Activity, LocalService
from svc_frames.server.activity import ActivityEntry
from svc_frames.testing import object_url

WO, PARTS = "object_3", "object_2"


def wait_for(svc: LocalService, n: int) -> list[ActivityEntry]:
    """The first ``n`` actions (however slow the machine), then the runner paused."""
    runner = svc.activity
    assert runner is not None
    deadline = time.monotonic() + 120
    while len(runner.log) < n:
        assert time.monotonic() < deadline, f"only {len(runner.log)} actions in 120 s"
        time.sleep(0.05)
    runner.pause()
    return runner.log.entries


def record(svc: LocalService, obj: str, rid: str) -> requests.Response:
    return requests.get(object_url(svc, obj, rid), headers=svc.headers(), timeout=30)


def listing(svc: LocalService, obj: str) -> dict[str, dict[str, Any]]:
    r = requests.get(object_url(svc, obj), params={"rows_per_page": 1000},
                     headers=svc.headers(), timeout=30)
    r.raise_for_status()
    return {rec["id"]: rec for rec in r.json()["records"]}


@pytest.fixture()
def busy() -> Iterator[LocalService]:
    with LocalService(demo=True, records=40, seed=2,
                      activity=Activity((WO,), rate=25, inserts=1, updates=2, deletes=1,
                                        seed=4)) as s:
        yield s


def test_nothing_runs_unasked(service: LocalService) -> None:
    assert service.activity is None


def test_records_appear_change_and_disappear_as_logged(busy: LocalService) -> None:
    runner = busy.activity
    assert runner is not None
    runner.pause()
    before = listing(busy, WO)
    since = busy.emulation.now()
    runner.resume()
    entries = [e for e in wait_for(busy, 30) if e.time >= since]
    assert len(entries) >= 10 and runner.refused == 0
    assert {e.object_key for e in entries} == {WO}
    after = listing(busy, WO)
    acts = Counter(e.action for e in entries)
    assert set(acts) == {"insert", "update", "delete"}
    deleted = {e.record_id for e in entries if e.action == "delete"}
    inserted = {e.record_id for e in entries if e.action == "insert"}
    updated = {e.record_id for e in entries if e.action == "update"} - deleted
    assert len(after) == len(before) + len(inserted) - len(deleted & (inserted | set(before)))
    assert not deleted & set(after) and all(record(busy, WO, r).status_code == 404
                                            for r in deleted)
    assert inserted - deleted <= set(after) and not (inserted & set(before))
    # an update changed real values, and the application's record rule stamped it
    now = busy.app.local_now()
    for rid in updated & set(before):
        old, new = before[rid], after[rid]
        assert any(old.get(k) != new.get(k) for k in new if k not in ("field_46",
                                                                        "field_46_raw"))
        stamp = dt.datetime(1970, 1, 1) + dt.timedelta(
            milliseconds=new["field_46_raw"]["unix_timestamp"])
        assert now - dt.timedelta(minutes=2) <= stamp <= now
    # the records no action touched are as they were: what "existed for the whole load"
    untouched = set(before) - runner.log.touched(WO, since=since)
    assert untouched and all(after[rid] == before[rid] for rid in untouched)
    # evenly spaced at 25/s at most: never a burst (a slow machine only goes slower)
    span = entries[-1].time - entries[0].time
    assert len(entries) - 1 <= span * 25 + 1


def test_pause_holds_and_resume_goes_on(busy: LocalService) -> None:
    runner = busy.activity
    assert runner is not None
    wait_for(busy, 3)
    held = len(runner.log)
    count = busy.store.count(WO)
    time.sleep(0.3)   # several intervals at 25/s: none may act while paused
    assert len(runner.log) == held and busy.store.count(WO) == count and runner.paused
    runner.resume()
    wait_for(busy, held + 3)
    runner.stop()
    stopped = len(runner.log)
    time.sleep(0.2)
    assert len(runner.log) == stopped


def _choices(seed: int) -> list[tuple[str, str, str]]:
    with LocalService(demo=True, records=20, seed=1,
                      activity=Activity((WO, PARTS), rate=50, seed=seed)) as svc:
        made = set()
        out = []
        for e in wait_for(svc, 25)[:25]:
            if e.action == "insert":
                made.add(e.record_id)
            # ids of generated records are seeded; a record made during the run is not
            out.append((e.action, e.object_key, "new" if e.record_id in made
                        else e.record_id))
        return out


def test_seeded_runs_make_the_same_choices() -> None:
    first = _choices(9)
    assert first == _choices(9)
    assert first != _choices(10)


def test_deletes_leave_no_dangling_connection() -> None:
    with LocalService(demo=True, records=30, seed=3,
                      activity=Activity((PARTS,), rate=40, inserts=0, updates=0,
                                        deletes=1)) as svc:
        entries = wait_for(svc, 8)
        gone = {e.record_id for e in entries}
        assert len(gone) == len(entries) >= 8 and {e.action for e in entries} == {"delete"}
        for rec in listing(svc, WO).values():
            linked = {c["id"] for c in rec.get("field_41_raw") or []}
            assert not linked & gone, rec["id"]


@pytest.mark.parametrize("setting,culprit", [
    ({"objects": ("object_9",)}, "object_9"),
    ({"objects": ("object_1",)}, "user object"),
    ({"objects": (WO,), "rate": 0}, "rate"),
    ({"objects": (WO,), "rate": 1000}, "rate"),
    ({"objects": (WO,), "deletes": -1}, "deletes"),
    ({"objects": (WO,), "inserts": 0, "updates": 0, "deletes": 0}, "all weigh 0"),
    ({"objects": ()}, "objects"),
    ({"objects": (WO,), "speed": 3}, "unknown settings"),
    ("object_3", "expected OBJECTS:RATE/s"),
    ("object_3:fast/s", "rate 'fast'"),
    ("object_3:2/s:updates=x", "updates 'x'"),
    ("object_3:2/s:edits=2", "'edits=2'"),
])
def test_bad_settings_are_refused_before_anything_starts(tmp_path: Any, setting: Any,
                                                         culprit: str) -> None:
    data = tmp_path / "data"
    with pytest.raises(UsageError, match=culprit):
        LocalService(demo=True, records=5, data_dir=data, activity=setting).start()
    assert not (data / "service.db").exists()


def test_the_cli_spelling() -> None:
    a = Activity.parse("object_3, object_2:0.5/s:updates=3,deletes=0", seed=7)
    assert a == Activity(("object_3", "object_2"), rate=0.5, inserts=1, updates=3,
                         deletes=0, seed=7)
    assert Activity.of("object_3:2/s") == Activity(("object_3",), rate=2.0)
    assert Activity.of({"objects": "object_3", "rate": 2}) == Activity(("object_3",), 2)


@pytest.mark.slow
def test_serve_runs_the_activity_and_refuses_a_bad_one(tmp_path: Any) -> None:
    import json
    import subprocess
    import sys

    bad = subprocess.run([sys.executable, "-m", "svc_frames.cli", "serve", "--records", "5",
                          "--port", "0", "--data", str(tmp_path / "bad"),
                          "--activity", "object_9:2/s"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "object_9" in bad.stderr
    assert not (tmp_path / "bad" / "service.db").exists()
    with subprocess.Popen([sys.executable, "-m", "svc_frames.cli", "serve", "--records", "10",
                           "--port", "0", "--data", str(tmp_path / "ok"), "--rate-limit", "0",
                           "--activity", "object_3:20/s:deletes=0", "--clock-offset-ms",
                           "-1500"], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            info = json.loads(proc.stdout.readline())
            h = {"X-Service-Application-Id": info["app_id"],
                 "X-Service-REST-API-KEY": info["api_key"]}
            url = f"{info['base_url']}/v1/objects/object_3/records"
            deadline = time.monotonic() + 120
            while True:   # inserts only add: the total grows past the 10 generated
                r = requests.get(url, headers=h, params={"rows_per_page": 1}, timeout=30)
                if r.json()["total_records"] > 10:
                    break
                assert time.monotonic() < deadline
                time.sleep(0.1)
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0
