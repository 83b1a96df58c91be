"""Write-back benchmarks. Run: ``.venv/bin/python -m benchmarks.bench_writeback``

1. ``diff`` of a 100,000 x 20 frame with 1% of the cells changed: seconds (goal <= 1 s).
2. Requests sent / records changed, from the local service's request log: exactly 1.0,
   plus the lost-update guard's re-reads, counted separately (batched).
3. 2,000 updates with the service emulating 50 requests/s (client rate_limit=50): wall
   time / ceiling (requests / 50) -- goal <= 1.15.
4. Faults: (a) with 20% of all requests faulted (every kind, before and
   after the write), one ``write_back`` of 200 updates and 40 creates: calls needed (goal
   1) and each change applied exactly once (request log + a clean re-read; a create whose
   answer was lost after it was stored is ``unknown``, naming the record); (b) with 30%
   of write answers lost (``cut``/``500-after``; no retries, so every lost answer is
   settled by the re-read or the create proof): records whose reported status a clean
   re-read contradicts (goal 0).
5. Budgeted writes: 8,000 updates against a daily quota of 5,000 requests at
   10 requests/s (``quota_reserve`` default, 100): requests sent never exceed quota minus
   reserve, every change is applied or ``not_applied`` (none lost or doubled), and the
   second call after the emulated reset applies exactly the rest, counted from the
   request log. ~14 minutes of paced time at full size (``--quick``: 800 updates, quota
   500, reserve 50, so that the rest fits the second day).

``--quick`` runs smaller sizes (a smoke run, not the reported figures).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import pandas as pd

from svc_frames.frames import Frames, Source
from svc_frames.kinds.base import FieldSpec
from svc_frames.writeback import Report, diff, write_back


# ---- 1. diff speed ---------------------------------------------------------------------------
def _synthetic(n: int, seed: int = 0) -> Frames:
    """A loaded-looking frame of n records and 20 columns of common kinds."""
    rng = np.random.default_rng(seed)
    fields: list[FieldSpec] = []
    cols: dict[str, Any] = {}
    k = 1

    def add(kind: str, values: Any, dtype: str, fmt: dict[str, Any] | None = None) -> None:
        nonlocal k
        key = f"field_{k}"
        k += 1
        fields.append(FieldSpec(key=key, kind=kind, name=f"{kind} {k}", format=fmt or {}))
        cols[key] = pd.array(values, dtype=dtype)

    words = np.array(["alpha", "beta", "gamma", "delta", "omega", "pump", "valve", "Austin"])
    for _ in range(5):
        add("short_text", rng.choice(words, n), "string")
    for _ in range(4):
        add("number", rng.integers(0, 10_000, n).astype(float), "Float64")
    for _ in range(2):
        add("currency", np.round(rng.random(n) * 1000, 2), "Float64", {"format": "$"})
    for _ in range(2):
        add("boolean", rng.random(n) < 0.5, "boolean")
    tz = "America/Chicago"
    for _ in range(2):
        ts = pd.to_datetime(1_600_000_000 + rng.integers(0, 10**8, n) // 60 * 60, unit="s",
                            utc=True).tz_convert(tz)
        fields.append(FieldSpec(key=f"field_{k}", kind="date_time", name=f"date {k}",
                                format={"date_format": "mm/dd/yyyy", "time_format": "HH:MM am"}))
        cols[f"field_{k}"] = ts.array
        k += 1
    add("email", [f"user{i}@example.org" for i in rng.integers(0, 10**6, n)], "string")
    add("phone", [f"(512) 555-{i:04d}" for i in rng.integers(0, 10**4, n)], "string")
    add("multiple_choice", rng.choice(np.array(["Open", "Closed", "Hold"]), n), "string",
        {"type": "single", "options": ["Open", "Closed", "Hold"]})
    add("rating", rng.integers(0, 6, n).astype(float), "Float64")
    add("link", [f"https://example.org/{i}" for i in rng.integers(0, 10**6, n)], "string")
    ids = [f"{i:024x}" for i in range(n)]
    main = pd.DataFrame(cols, index=pd.Index(pd.array(ids, dtype="string"), name="id"))
    frames = Frames(main, {}, Source("object", "object_1", fields, timezone=tz))
    frames.original = frames.snapshot()
    return frames


def _edit(frames: Frames, share: float, seed: int = 1) -> int:
    """Change ``share`` of the cells in place (new values of the column's type)."""
    rng = np.random.default_rng(seed)
    main = frames.main
    n, m = main.shape
    cells = int(n * m * share)
    flat = rng.choice(n * m, cells, replace=False)
    rows, cols = flat // m, flat % m
    for j, col in enumerate(main.columns):
        pos = rows[cols == j]
        if not len(pos):
            continue
        s = main[col].copy()
        dt = s.dtype
        if str(dt) == "Float64" and col == "field_19":   # rating: whole steps 0..5
            s.iloc[pos] = (s.iloc[pos].fillna(0) + 1) % 6
        elif str(dt) == "Float64":
            s.iloc[pos] = s.iloc[pos].fillna(0) + 1.5
        elif str(dt) == "boolean":
            s.iloc[pos] = ~s.iloc[pos].fillna(False)
        elif isinstance(dt, pd.DatetimeTZDtype):
            s.iloc[pos] = s.iloc[pos] + pd.Timedelta(minutes=30)
        elif col == "field_18":  # multiple choice: another option
            s.iloc[pos] = "Hold"
        elif col == "field_16":
            s.iloc[pos] = "changed@example.org"
        elif col == "field_17":
            s.iloc[pos] = "(512) 555-0000"
        elif col == "field_20":
            s.iloc[pos] = "https://example.org/changed"
        else:
            s.iloc[pos] = s.iloc[pos] + "!"
        main[col] = s
    return cells


def bench_diff(n: int = 100_000) -> dict[str, float]:
    frames = _synthetic(n)
    cells = _edit(frames, 0.01)
    t0 = time.perf_counter()
    plan = diff(frames)
    secs = time.perf_counter() - t0
    t0 = time.perf_counter()
    diff(Frames(frames.original.main, {}, frames.source, frames.original))  # type: ignore[arg-type]
    unchanged = time.perf_counter() - t0
    return {"records": n, "columns": frames.main.shape[1], "cells_changed": cells,
            "changed_cells_found": len(plan.changes), "records_to_update": plan.counts["update"],
            "diff_seconds": round(secs, 3), "unchanged_diff_seconds": round(unchanged, 3)}


# ---- 2 and 3: against the local service ----------------------------------------------------
def _service_edit(frames: Frames, n: int, seed: int = 2) -> list[str]:
    """Edit one short-text field of n records; returns their ids."""
    src = frames.source
    assert src is not None
    key = next(f.key for f in src.fields if f.kind == "short_text" and f.key in frames.main)
    rng = np.random.default_rng(seed)
    ids = list(rng.choice(np.asarray(frames.main.index, dtype=object), n, replace=False))
    s = frames.main[key].copy()
    s.loc[ids] = [f"bench {i}" for i in range(n)]
    frames.main[key] = s
    return ids


def bench_requests(records: int = 500, changed: int = 100) -> dict[str, Any]:
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService

    with LocalService(demo=True, records=records, rate_limit=0) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
        obj = _biggest_object(client)
        frames = read_object(client, obj, progress=False, columns="keys")
        _service_edit(frames, changed)
        svc.request_log.clear()
        report = write_back(client, frames)
        puts = svc.request_log.count(method="PUT")
        gets = svc.request_log.count(method="GET")
        total = svc.request_log.count()
        svc.request_log.clear()
        second = write_back(client, frames)
        again = svc.request_log.count()
    return {"records": records, "records_changed": changed, "writes": puts,
            "writes_per_changed_record": puts / changed, "guard_rereads": gets,
            "requests_total": total, "report_requests": report.requests,
            "applied": int((report.table.status == "applied").sum()),
            "second_write_back_requests": again, "second_plan_empty": second.plan.empty}


def bench_apply(updates: int = 2000, rate: float = 50.0) -> dict[str, Any]:
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService

    with LocalService(demo=True, records=updates + 200, rate_limit=0) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
        obj = _biggest_object(client)
        frames = read_object(client, obj, progress=False, columns="keys")
        _service_edit(frames, updates)
        svc.emulation.rate_limit = rate
        paced = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=rate)
        svc.request_log.clear()
        t0 = time.perf_counter()
        report = write_back(paced, frames, max_workers=16, progress=False)
        wall = time.perf_counter() - t0
        sent = svc.request_log.count()
        limited = sum(1 for e in svc.request_log.entries if _status(e) == 429)
    ceiling = sent / rate
    return {"updates": updates, "rate_limit": rate, "requests": sent,
            "rereads": report.requests.get("rereads"), "wall_s": round(wall, 2),
            "ceiling_s": round(ceiling, 2), "ratio": round(wall / ceiling, 3),
            "429s": limited, "applied": int((report.table.status == "applied").sum())}


# ---- 4. faults: outcomes under lost answers ------------------------------------------------
def _fault_run(svc: Any, client: Any, updates: int, creates: int, deletes: int = 0
               ) -> tuple[Any, str, str, list[str], list[str], dict[str, Any]]:
    """Load, edit ``updates`` records' text, drop ``deletes``, add ``creates`` rows.
    Returns (frames, object, text field, updated ids, deleted ids, loaded texts)."""
    from svc_frames.loaders import read_object
    from svc_frames.writeback import add_rows

    obj = _biggest_object(client)
    frames = read_object(client, obj, progress=False, columns="keys")
    src = frames.source
    key = next(f.key for f in src.fields if f.kind == "short_text" and f.key in frames.main)
    ids = frames.main.index[:updates].tolist()
    gone = frames.main.index[updates:updates + deletes].tolist()
    loaded = {rid: frames.main.loc[rid, key] for rid in ids + gone}
    s = frames.main[key].copy()
    s.loc[ids] = [f"fault {i}" for i in range(updates)]
    frames.main[key] = s
    frames.main = frames.main.drop(index=gone)
    add_rows(frames, [{key: f"fault new {i}"} for i in range(creates)])
    return frames, obj, key, ids, gone, loaded


def bench_faults_one_call(updates: int = 200, creates: int = 40, rate: float = 0.2,
                          pace: float = 0.0) -> dict[str, Any]:
    """20% faults of every kind on every request: calls until every change is applied,
    and how often each was applied (request log) and is held (clean re-read)."""
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService
    from svc_frames.server.emulate import FAULT_KINDS

    with LocalService(demo=True, records=updates + 20, rate_limit=0, seed=9) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=pace)
        frames, obj, key, ids, _, _ = _fault_run(svc, client, updates, creates)
        emu = svc.emulation
        emu.faults, emu.fault_rate = FAULT_KINDS, rate
        svc.request_log.clear()
        t0 = time.perf_counter()
        calls, statuses = 0, {}
        while calls < 5:
            calls += 1
            report = write_back(client, frames, progress=False)
            statuses = report.counts
            # a create whose answer was lost after the service stored it has no unique
            # value to prove the record it finds is its own: unknown, naming it; a
            # second call finds it again (frames.sent_creates) and changes nothing
            if set(statuses) <= {"applied", "unknown"}:
                break
        wall = time.perf_counter() - t0
        emu.fault_rate = 0.0
        log = svc.request_log
        faults = sum(1 for e in log.entries if e.fault)
        ok_puts = pd.Series([e.path.rsplit("/", 1)[-1] for e in log.entries
                             if e.method == "PUT" and e.status == 200]).value_counts()
        now = read_object(client, obj, progress=False, columns="keys").main[key]
        held = sum(int(now.get(rid) == f"fault {i}") for i, rid in enumerate(ids))
        once = sum(int((now == f"fault new {i}").sum() == 1) for i in range(creates))
    return {"updates": updates, "creates": creates, "fault_rate": rate, "calls": calls,
            "statuses_last_call": statuses, "faults_fired": faults,
            "updates_answered_once": int((ok_puts == 1).sum()), "updates_held": held,
            "creates_applied_in_log": log.count(method="POST", applied=True),
            "creates_held_once": once, "wall_s": round(wall, 2)}


def bench_cut_truth(updates: int = 200, creates: int = 40, deletes: int = 20,
                    rate: float = 0.3) -> dict[str, Any]:
    """30% of write answers lost after the write was applied (and, second run, mixed
    with faults before it): reported statuses a clean re-read contradicts (goal 0)."""
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService

    out: dict[str, Any] = {"updates": updates, "creates": creates, "deletes": deletes,
                           "cut_rate": rate}
    for label, faults in (("after", ("cut", "500-after")),
                          ("mixed", ("cut", "500-after", "500", "drop"))):
        with LocalService(demo=True, records=updates + deletes + 20, rate_limit=0,
                          seed=13) as svc:
            client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                            rate_limit=0, max_retries=0)
            frames, obj, key, ids, gone, loaded = _fault_run(svc, client, updates, creates,
                                                             deletes)
            emu = svc.emulation
            emu.faults, emu.fault_methods, emu.fault_rate = faults, ("POST", "PUT",
                                                                     "DELETE"), rate
            report = write_back(client, frames, delete_missing=True, progress=False)
            emu.fault_rate = 0.0
            lost = svc.request_log.count(fault="cut") + svc.request_log.count(
                fault="500-after")
            now = read_object(client, obj, progress=False, columns="keys").main[key]
            wrong = 0
            for row in report.table.itertuples():
                rid, act, status = str(row.record_id), row.action, row.status
                if status == "unknown":
                    continue
                if act == "update":
                    held = now.get(rid) == f"fault {ids.index(rid)}"
                    wrong += int((status == "applied") != held)
                elif act == "delete":
                    wrong += int((status == "applied") == (rid in now.index))
                else:
                    mark = frames.main.loc[rid, key] if rid in frames.main.index else None
                    where = now.index[now == mark].tolist() if mark is not None else []
                    wrong += int((status == "applied") != (where == [rid]))
            out[label] = {"answers_lost": lost, "statuses": report.counts,
                          "disagreements": wrong}
    return out


def bench_quota(updates: int = 8000, quota: int = 5000, rate: float = 10.0,
                reserve: int | None = None) -> dict[str, Any]:
    """Section 5: a write_back that the daily quota stops, resumed after the reset
    (``reserve``: ``quota_reserve``, default the library's)."""
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService
    from svc_frames.writeback.budget import DEFAULT_QUOTA_RESERVE

    reserve = DEFAULT_QUOTA_RESERVE if reserve is None else reserve
    with LocalService(demo=True, records=updates + 200, rate_limit=0) as svc:
        fast = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
        obj = _biggest_object(fast)
        frames = read_object(fast, obj, progress=False, columns="keys")
        ids = [str(i) for i in _service_edit(frames, updates)]
        key = next(f.key for f in frames.source.fields   # type: ignore[union-attr]
                   if f.kind == "short_text" and f.key in frames.main)
        want = frames.main.loc[ids, key].tolist()
        plan_total = diff(frames).requests.total
        svc.emulation.rate_limit = rate
        svc.emulation.daily_quota = quota
        svc.emulation.new_quota_day()
        prefix = f"/v1/objects/{obj}/records/"

        def puts() -> list[str]:
            return [e.path[len(prefix):] for e in svc.request_log.entries
                    if e.method == "PUT" and e.path.startswith(prefix) and e.applied]

        def one_day() -> tuple[Report, float, dict[Any, int]]:
            """write_back in a new session (the quota unknown until the guard's first
            answer), from a cleared request log: the report, wall time, statuses."""
            svc.request_log.clear()
            session = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                             rate_limit=rate)
            t0 = time.perf_counter()
            report = write_back(session, frames, max_workers=8, progress=False,
                                quota_reserve=reserve)
            wall = time.perf_counter() - t0
            return report, wall, report.table["status"].value_counts().to_dict()

        first, wall1, st1 = one_day()
        sent1, used1, puts1 = svc.request_log.count(), svc.emulation.quota_used, puts()
        refused1 = svc.request_log.count(status=429)
        svc.emulation.new_quota_day()  # the emulated reset, then the same call again
        second, wall2, st2 = one_day()
        sent2, puts2 = svc.request_log.count(), puts()
        svc.emulation.daily_quota = 0
        svc.emulation.rate_limit = 0
        server = read_object(fast, obj, progress=False, columns="keys").main[key]
    not_applied1 = int(st1.get("not_applied", 0))
    return {
        "updates": updates, "daily_quota": quota, "reserve": reserve, "rate_limit": rate,
        "plan_requests": plan_total,
        "day1_requests_sent": sent1, "day1_quota_used": used1,
        "day1_within_quota_minus_reserve": used1 <= quota - reserve,
        "day1_applied": int(st1.get("applied", 0)), "day1_not_applied": not_applied1,
        "day1_other_statuses": {k: v for k, v in st1.items()
                                if k not in ("applied", "not_applied")},
        "day1_429s": refused1, "day1_fits": first.quota.fits if first.quota else None,
        "day1_wall_s": round(wall1, 1),
        "day2_requests_sent": sent2, "day2_applied": int(st2.get("applied", 0)),
        "day2_puts_equal_the_rest": sorted(puts2) == sorted(
            r for r in ids if r not in set(puts1)) and len(puts2) == not_applied1,
        "puts_total": len(puts1) + len(puts2),
        "doubled": len(set(puts1) & set(puts2)) + (len(puts1) - len(set(puts1)))
        + (len(puts2) - len(set(puts2))),
        "lost": sum(1 for r in ids if r not in set(puts1) | set(puts2)),
        "server_holds_every_edit": server.loc[ids].tolist() == want,
        "day2_wall_s": round(wall2, 1),
        "resume_text": first.resume[:160] + ("..." if len(first.resume) > 160 else ""),
    }


def _status(entry: Any) -> Any:
    return entry.get("status") if isinstance(entry, dict) else getattr(entry, "status", None)


def _biggest_object(client: Any) -> str:
    app = client.schema() or {}
    best = max(app.get("objects") or [], key=lambda o: len(o.get("fields") or []))
    return str(best["key"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    ap.add_argument("--only", default="1,2,3,4,5", help="which benchmarks, e.g. 4,5")
    args = ap.parse_args()
    only = {int(x) for x in args.only.split(",") if x.strip()}
    n = 10_000 if args.quick else 100_000
    if 1 in only:
        print("1. diff:", bench_diff(n))
    if 2 in only:
        print("2. requests per changed record:", bench_requests(200 if args.quick else 1000,
                                                                 50 if args.quick else 300))
    if 3 in only:
        print("3. apply at 50 req/s:", bench_apply(200 if args.quick else 2000))
    if 4 in only:
        print("4a. 20% faults, one call:", bench_faults_one_call(
            200, 40, pace=0.0 if args.quick else 10.0))
        print("4b. 30% answers lost, statuses vs a clean re-read:",
              bench_cut_truth(*((100, 20, 10) if args.quick else (200, 40, 20))))
    if 5 in only:
        q = bench_quota(800, 500, reserve=50) if args.quick else bench_quota()
        print("5. budgeted writes (daily quota, 10 req/s):")
        for k, v in q.items():
            print(f"   {k:34} {v}")


if __name__ == "__main__":
    main()
