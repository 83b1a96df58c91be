"""``kill -9`` at random points of mirror runs: targets left inconsistent, versions lost.
Run: ``.venv/bin/python -m benchmarks.bench_mirror_kill [--quick] [--runs 20] [--records N]``

A local service (in this process; 30 ms latency, unpaced) holds the demo application;
each target (a DuckDB file, a Parquet directory, and a PostgreSQL database of a cluster of
its own, ``svc_frames.testing.postgres_cluster``; ``--no-postgres`` leaves it out) gets a
first mirror of every object, then ``--runs`` rounds of: other users edit 3 records on
the application's pages (each record edited once in the whole benchmark, to a value of
its own), a mirror run of every object starts in a child process (``sf.mirror``, as the
CLI runs it), and is killed (``SIGKILL``) at a point drawn uniformly between its start and
1.2 times the wall of an unkilled run measured first (import, requests, writes and
commit); then the target is checked (``svc_frames.testing.mirror_consistent``: its runs
numbered without a gap, every current table equal to its history's open versions). After
the rounds one run completes the work, and:

* inconsistent: targets that failed the check after a kill or after the last run;
* versions lost: versions the history held before the rounds that it no longer holds
  (by record, run and change), plus edits made during the rounds of which the history
  holds no version (the work orders' ``field_12`` of that record with that value).

``--quick``: 300 records, 4 rounds, no PostgreSQL (a smoke run).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import svc_frames as sf
from benchmarks.bench_mirror_history import HISTORY, postgres_url
from svc_frames.mirroring.target import open_target
from svc_frames.server import LocalService
from svc_frames.testing import client_for, mirror_consistent

RUN = ("import sys, svc_frames as sf; c = sf.Client.from_env(rate_limit=0); "
       "sf.mirror(c, sys.argv[1], wait=60)")
WO = "object_3"
EDITS_PER_ROUND = 3


def versions(target: str) -> tuple[set[tuple[str, int, str]], set[tuple[str, str]]]:
    """The work orders' history: (id, run, change) of every version, and (id, field_12)."""
    with open_target(target, readonly=True) as tgt:
        tgt.check()
        hist = tgt.read(HISTORY).select(["id", "run_id", "change", "field_12"]).to_pylist()
    return ({(h["id"], int(h["run_id"]), h["change"]) for h in hist},
            {(h["id"], h["field_12"]) for h in hist})


def child_run(target: str, env: dict[str, str], kill_after: float | None) -> float:
    """One mirror run in a child process, killed after ``kill_after`` seconds (None:
    left to finish); the seconds it lived."""
    t0 = time.perf_counter()
    with subprocess.Popen([sys.executable, "-c", RUN, target], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        if kill_after is None:
            _, err = proc.communicate(timeout=600)
            if proc.returncode:
                raise RuntimeError(f"an unkilled run failed: {err.decode()[-2000:]}")
        else:
            try:
                proc.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
    return time.perf_counter() - t0


def fresh_ids(ids: list[str], rng: random.Random) -> Iterator[str]:
    """Record ids in a random order, each once."""
    order = list(ids)
    rng.shuffle(order)
    yield from order


def bench(kind: str, target: str, svc: LocalService, runs: int, rng: random.Random
          ) -> None:
    client = client_for(svc)
    env = {**os.environ, "SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
           "SVC_BASE_URL": svc.base_url}
    t0 = time.perf_counter()
    sf.mirror(client, target)
    first = time.perf_counter() - t0
    ids = fresh_ids(list(sf.read_object(client, WO, columns="keys").main.index), rng)
    edits: list[tuple[str, str]] = []

    def edit(label: str) -> None:
        for j in range(EDITS_PER_ROUND):
            rid, value = next(ids), f"{kind} {label}.{j}"
            svc.pages.update_record(WO, rid, {"field_12": value})
            edits.append((rid, value))

    edit("unkilled")
    whole = child_run(target, env, None)   # the span the kill points are drawn over
    before, _ = versions(target)
    inconsistent = completed = 0
    for i in range(runs):
        edit(f"round {i}")
        last = mirror_consistent(target)
        child_run(target, env, rng.uniform(0, 1.2 * whole))
        try:
            completed += mirror_consistent(target) > last
        except AssertionError as e:
            inconsistent += 1
            print(f"   {kind}: inconsistent after round {i}: {str(e)[:300]}", flush=True)
    final = sf.mirror(client, target)
    try:
        mirror_consistent(target)
    except AssertionError as e:
        inconsistent += 1
        print(f"   {kind}: inconsistent after the last run: {str(e)[:300]}", flush=True)
    after, values = versions(target)
    lost_old = len(before - after)
    lost_edits = sum((rid, value) not in values for rid, value in edits)
    print(f"{kind}: first mirror {first:.1f}s, an unkilled run (child process) "
          f"{whole:.1f}s; {runs} runs killed at random points ({completed} had committed "
          f"before their kill); then run {final.run}: {inconsistent} inconsistent, "
          f"{lost_old + lost_edits} versions lost ({lost_old} of the {len(before)} held "
          f"before, {lost_edits} of the {len(edits)} edits)  goal 0, 0", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="300 records, 4 rounds, no PG")
    ap.add_argument("--records", type=int, default=None, help="work orders (2,000)")
    ap.add_argument("--runs", type=int, default=None, help="killed runs per target (20)")
    ap.add_argument("--no-postgres", action="store_true", help="DuckDB and Parquet only")
    args = ap.parse_args()
    n = args.records or (300 if args.quick else 2_000)
    runs = args.runs or (4 if args.quick else 20)
    rng = random.Random(9)
    print(f"{n} work orders, {runs} killed runs per target (load average "
          f"{os.getloadavg()[0]:.1f}; {time.strftime('%H:%M UTC', time.gmtime())})",
          flush=True)
    with ExitStack() as stack:
        pg = stack.enter_context(postgres_url(not (args.quick or args.no_postgres)))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        svc = stack.enter_context(LocalService(demo=True, records=n, rate_limit=0,
                                               latency_ms=30, seed=4))
        targets = {"DuckDB": str(tmp / "app.duckdb"), "Parquet": f"{tmp}/m/"}
        if pg:
            targets["PostgreSQL"] = pg
        for kind, target in targets.items():
            bench(kind, target, svc, runs, rng)
    print(f"(load average {os.getloadavg()[0]:.1f}; "
          f"{time.strftime('%H:%M UTC', time.gmtime())})", flush=True)


if __name__ == "__main__":
    main()
