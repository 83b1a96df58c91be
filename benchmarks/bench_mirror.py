"""Mirror benchmarks: a first run, incremental runs, many runs' history, and the past.
Run: ``.venv/bin/python -m benchmarks.bench_mirror [--quick] [--postgres URL]``

The local service (in its own process) holds 100,000 demo work orders and emulates the
hosted service (10 requests/s, 100 ms latency); the client keeps the hosted pace. Between
runs another client changes records with the emulation off (bench_refresh.mutate: stamped,
as the application's own pages stamp them), then the next minute is waited for (the
stamps' unit: bench_refresh.pause). The work orders alone are mirrored
(``objects=["object_3"]``), so a run compares with one ``read_object``.

1. The first mirror to DuckDB (and to PostgreSQL with ``--postgres``): wall / the wall
   of a ``read_object`` of the same records (the load's ceiling); goal <= 1.10.
2. A run after 1% updated and 0.1% inserted: requests (goal <= 3) and wall against the
   first run's (goal <= 5%).
3. The same with 0.1% deleted too: what the deletion search costs.
4. ``--runs`` runs (default 30) of 1% changes each: history rows against the first run's
   plus the changes counted, and the file's size on disk.
5. ``as_of`` at each run's time against the load taken right after that run: records
   whose values differ (goal 0).

``--quick``: 5,000 records, 3 runs, no pauses (a smoke run, not the reported figures).
``--first-only``: case 1 alone (``--repeat N`` times, each after a ``read_object`` of
its own, so that each ratio is of two walls measured back to back).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks.bench_load import client_for
from benchmarks.bench_refresh import HOSTED, mutate, pause, timed_load
from benchmarks.remote import RemoteService
from svc_frames.frames import Frames
from svc_frames.mirroring.past import as_of
from svc_frames.mirroring.run import mirror


def history_rows(target: str) -> int:
    """Rows of the work orders' history (DuckDB or PostgreSQL)."""
    if target.startswith("postgresql://"):
        import psycopg
        with psycopg.connect(target) as con:
            row = con.execute("SELECT count(*) FROM work_orders__history").fetchone()
            return int(row[0]) if row else 0
    import duckdb
    con = duckdb.connect(target, read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM work_orders__history").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def differing(a: Frames, b: Frames) -> int:
    """Records present in one only, or whose main-frame values differ."""
    left, right = a.main.sort_index(), b.main.sort_index()
    ids = left.index.symmetric_difference(right.index)
    common = left.index.intersection(right.index)
    x = left.loc[common].astype("string").fillna("<NA>")
    y = right.loc[common, list(left.columns)].astype("string").fillna("<NA>")
    return len(ids) + int((x != y).any(axis=1).sum())


def first_run(client: Any, target: str, full_s: float) -> float:
    t0 = time.perf_counter()
    report = mirror(client, target, ["object_3"])
    took = time.perf_counter() - t0
    size = (f", {os.path.getsize(target) / 1e6:.1f} MB" if os.path.isfile(target) else "")
    print(f"1. first mirror to {target.split('?')[0]}: {report.total('inserted')} records, "
          f"{report.requests} requests, {took:.2f}s = {took / full_s:.3f} of a read_object "
          f"({full_s:.2f}s{size})  goal <= 1.10", flush=True)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="5,000 records, 3 runs, no pauses")
    ap.add_argument("--records", type=int, default=None, help="work orders (100,000)")
    ap.add_argument("--runs", type=int, default=None, help="runs of case 4 (30)")
    ap.add_argument("--postgres", default=None, help="also mirror to this PostgreSQL URL")
    ap.add_argument("--first-only", action="store_true", help="case 1 alone")
    ap.add_argument("--repeat", type=int, default=1, help="case 1's rounds (--first-only)")
    args = ap.parse_args()
    n = args.records or (5_000 if args.quick else 100_000)
    runs = args.runs or (3 if args.quick else 30)
    wait = not args.quick
    rng = random.Random(40)
    print(f"building a demo service with {n} work orders ... (load average "
          f"{os.getloadavg()[0]:.1f})", flush=True)
    with RemoteService(n) as svc, tempfile.TemporaryDirectory() as tmp:
        svc.set(**HOSTED)
        client = client_for(svc, 10)
        loaded, full_s, full_req = timed_load(client, columns="keys")
        print(f"read_object: {full_req} requests, {full_s:.2f}s for {len(loaded)} records",
              flush=True)
        ids = list(loaded.main.index)
        target = str(Path(tmp) / "mirror.duckdb")
        first_s = first_run(client, target, full_s)
        if args.postgres:
            first_run(client, args.postgres, full_s)
        if args.first_only:
            for i in range(1, args.repeat):
                print(f"(load average {os.getloadavg()[0]:.1f})", flush=True)
                full_s = timed_load(client, columns="keys")[1]
                first_run(client, str(Path(tmp) / f"mirror{i}.duckdb"), full_s)
            return

        for case, deleted in ((2, 0.0), (3, 0.001)):
            made = mutate(svc, ids, changed=0.01, inserted=0.001, deleted=deleted, rng=rng)
            pause(wait)
            t0 = time.perf_counter()
            report = mirror(client, target, ["object_3"])
            took = time.perf_counter() - t0
            o = report.objects["object_3"]
            ok = (o.updated, o.inserted, o.deleted) == (made["changed"], made["inserted"],
                                                        made["deleted"])
            read = getattr(o, "rows_read", None)   # rows of current tables read back
            print(f"{case}. {made}: {o.requests} requests, {took:.2f}s = "
                  f"{100 * took / first_s:.1f}% of the first run  goal <= 3 requests, <= 5%"
                  f"  {'(counts match)' if ok else f'(MISMATCH: {o})'}"
                  + ("" if read is None else f"; {read} rows read back"), flush=True)

        base = history_rows(target)
        counted = 0
        times: list[pd.Timestamp] = []
        loads: list[Frames] = []
        t_runs = time.perf_counter()
        for _ in range(runs):
            made = mutate(svc, ids, changed=0.01, inserted=0.0, deleted=0, rng=rng)
            pause(wait)
            report = mirror(client, target, ["object_3"])
            counted += report.total("updated") + report.total("inserted") + report.total(
                "deleted")
            times.append(pd.Timestamp.now(tz="UTC"))
            svc.set(rate_limit=0, latency_ms=0)
            loads.append(timed_load(client_for(svc, 0), columns="keys")[0])
            svc.set(**HOSTED)
        rows = history_rows(target)
        size = os.path.getsize(target)
        print(f"4. {runs} runs of 1% changes ({time.perf_counter() - t_runs:.0f}s): history "
              f"{rows} rows = {base} before + {counted} changes counted "
              f"({'equal' if rows == base + counted else 'NOT EQUAL'}); DuckDB file "
              f"{size / 1e6:.1f} MB", flush=True)
        picks = times[:: max(1, len(times) // 10)][:10]
        diffs = [differing(as_of(target, t)["object_3"], loads[times.index(t)]) for t in picks]
        print(f"5. as_of at {len(picks)} times against loads taken then: {sum(diffs)} "
              f"records differ  goal 0", flush=True)


if __name__ == "__main__":
    main()
