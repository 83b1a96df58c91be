"""The mirror's three targets side by side: a first run, many runs' history, and the past.
Run: ``.venv/bin/python -m benchmarks.bench_mirror_history [--quick] [--records N]``

The local service (its own process) holds the demo work orders and emulates the hosted
service (10 requests/s, 100 ms latency); the client keeps the hosted pace. Each run
mirrors the work orders alone (``objects=["object_3"]``) to a DuckDB file, a directory of
Parquet datasets and a PostgreSQL database (a cluster of its own, started by
``svc_frames.testing.postgres_cluster`` with ``fsync`` on, as a user's server runs;
``--no-postgres`` leaves it out), one target after the other, so each target sees the
same changes. Between runs another client changes 1% of the records (bench_refresh's
``mutate``: stamped, as the application's own pages stamp them); ``--pause`` then waits
for the next minute (the stamps' unit: bench_refresh's ``pause``). Without it a run's
stamp window also holds the records the run before read again: they compare equal to the
target's rows and add no version, so the counts below do not depend on it (the requests
and walls do a little).

1. Per target: a ``read_object`` of the work orders, then the first mirror: wall / the
   ``read_object``'s wall (the load's ceiling), requests.
2. ``--runs`` runs (default 30) of 1% updated each: per target, the first change run's
   wall and requests, and the mean wall of the others; for a Parquet directory the bytes
   a run writes (files it replaced), by table, against the directory's size, and the
   seconds of its commit (``ParquetWriter.commit``, timed by a wrapper: the files
   written aside with an fsync each, then moved into place).
3. Per target: history rows against the first run's plus the changes made (and plus those
   the runs reported), whether the target is whole (``mirror_consistent``: its current
   tables equal to its history's open versions), and the size on disk after the first mirror and after change runs
   1, 10 and ``--runs`` (DuckDB: the file; Parquet: the files; PostgreSQL:
   ``pg_database_size``).
4. ``as_of`` at 10 times over the runs (each right after a run; ``--as-of N``) against
   an unpaced ``read_object`` taken at that time: records whose values differ, per
   target (goal 0).

``--quick``: 2,000 records, 3 runs, no PostgreSQL (a smoke run, not the reported figures).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pandas as pd

from benchmarks.bench_load import client_for
from benchmarks.bench_mirror import differing
from benchmarks.bench_refresh import HOSTED, OFF, mutate, pause, timed_load
from benchmarks.remote import RemoteService
from svc_frames.frames import Frames
from svc_frames.mirroring import parquetdir
from svc_frames.mirroring.past import as_of
from svc_frames.mirroring.run import mirror
from svc_frames.mirroring.target import open_target
from svc_frames.testing import mirror_consistent, postgres_cluster, postgres_database

HISTORY = "work_orders__history"


def history_rows(target: str) -> int:
    """Rows of the work orders' history, through the target's own count."""
    with open_target(target, readonly=True) as tgt:
        tgt.check()
        return tgt.count(HISTORY)


def files_of(directory: Path) -> dict[Path, tuple[int, int]]:
    """Every file under ``directory``: (size, mtime in ns)."""
    out = {}
    for p in directory.rglob("*"):
        if p.is_file():
            st = p.stat()
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def size_on_disk(target: str) -> int:
    """Bytes the target takes: the DuckDB file, the Parquet files, the database."""
    if target.startswith("postgresql://"):
        import psycopg
        with psycopg.connect(target) as con:
            row = con.execute("SELECT pg_database_size(current_database())").fetchone()
            return int(row[0]) if row else 0
    path = Path(target)
    if path.is_dir():
        return sum(size for size, _ in files_of(path).values())
    return path.stat().st_size


@contextmanager
def postgres_url(wanted: bool) -> Iterator[str | None]:
    """A database of a cluster of its own (module docstring), or None."""
    if not wanted:
        yield None
        return
    with postgres_cluster(fsync=True) as base:
        yield postgres_database(base, "bench_mirror")


COMMITS: list[float] = []   # seconds of each Parquet commit (timed_commit)


def timed_commit() -> None:
    """Time every ``ParquetWriter.commit`` into ``COMMITS`` (this process only)."""
    plain = parquetdir.ParquetWriter.commit

    def commit(self: parquetdir.ParquetWriter) -> None:
        t0 = time.perf_counter()
        try:
            plain(self)
        finally:
            COMMITS.append(time.perf_counter() - t0)

    parquetdir.ParquetWriter.commit = commit  # type: ignore[method-assign]


def by_table(root: Path, before: dict[Path, tuple[int, int]]) -> dict[str, int]:
    """Bytes of the files under ``root`` written since ``before`` was taken, by table."""
    out: dict[str, int] = {}
    for p, (size, ns) in files_of(root).items():
        if before.get(p, (0, 0))[1] != ns:
            table = p.relative_to(root).parts[0]
            out[table] = out.get(table, 0) + size
    return out


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2,000 records, 3 runs, no PG")
    ap.add_argument("--records", type=int, default=None, help="work orders (20,000)")
    ap.add_argument("--runs", type=int, default=None, help="change runs (30)")
    ap.add_argument("--pause", action="store_true", help="wait for the next minute")
    ap.add_argument("--no-postgres", action="store_true", help="DuckDB and Parquet only")
    ap.add_argument("--as-of", type=int, default=10, help="times of case 4 (0: none)")
    args = ap.parse_args()
    n = args.records or (2_000 if args.quick else 20_000)
    runs = args.runs or (3 if args.quick else 30)
    rng = random.Random(40)
    picks = sorted({max(1, round(runs * (i + 1) / args.as_of)) for i in range(args.as_of)})
    sized_at = sorted({1, min(10, runs), runs})
    print(f"{n} work orders, {runs} change runs of 1%, as_of after runs {picks} "
          f"(load average {os.getloadavg()[0]:.1f}; {time.strftime('%H:%M UTC', time.gmtime())})",
          flush=True)
    with ExitStack() as stack:
        pg = stack.enter_context(postgres_url(not (args.quick or args.no_postgres)))
        svc = stack.enter_context(RemoteService(n))
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        targets = {"DuckDB": str(tmp / "mirror.duckdb"), "Parquet": f"{tmp}/mirror/"}
        if pg:
            targets["PostgreSQL"] = pg
        svc.set(**HOSTED)
        client = client_for(svc, 10)
        ids: list[str] = []
        first: dict[str, float] = {}
        sizes: dict[str, dict[str, int]] = {name: {} for name in targets}
        for name, target in targets.items():
            loaded, full_s, _ = timed_load(client, columns="keys")
            ids = list(loaded.main.index)
            t0 = time.perf_counter()
            report = mirror(client, target, ["object_3"])
            first[name] = took = time.perf_counter() - t0
            sizes[name]["first"] = size_on_disk(target)
            print(f"1. {name}: first mirror of {report.total('inserted')} records, "
                  f"{report.requests} requests, {took:.2f}s = {took / full_s:.3f} of a "
                  f"read_object ({full_s:.2f}s); {mb(sizes[name]['first'])}  goal <= 1.10 "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
        base = {name: history_rows(t) for name, t in targets.items()}
        made_total = 0
        counted = dict.fromkeys(targets, 0)
        walls: dict[str, list[float]] = {name: [] for name in targets}
        requests: dict[str, list[int]] = {name: [] for name in targets}
        mismatched: dict[str, list[str]] = {name: [] for name in targets}
        written: list[dict[str, int]] = []
        timed_commit()
        times: dict[int, pd.Timestamp] = {}
        loads: dict[int, Frames] = {}
        t_runs = time.perf_counter()
        for r in range(1, runs + 1):
            made = mutate(svc, ids, changed=0.01, inserted=0.0, deleted=0, rng=rng)
            made_total += made["changed"]
            pause(args.pause)
            for name, target in targets.items():
                before = files_of(Path(target)) if name == "Parquet" else {}
                COMMITS.clear()
                t0 = time.perf_counter()
                report = mirror(client, target, ["object_3"])
                walls[name].append(time.perf_counter() - t0)
                o = report.objects["object_3"]
                requests[name].append(o.requests)
                counted[name] += o.updated + o.inserted + o.deleted
                if (o.updated, o.inserted, o.deleted) != (made["changed"], 0, 0):
                    mismatched[name].append(f"run {r}: {made['changed']} made, "
                                            f"{o.updated}/{o.inserted}/{o.deleted} reported")
                if name == "Parquet":
                    written.append(by_table(Path(target), before))
                    written[-1]["(commit, ms)"] = int(1000 * sum(COMMITS))
                if r in sized_at:
                    sizes[name][f"run {r}"] = size_on_disk(target)
            if r in picks:
                times[r] = pd.Timestamp.now(tz="UTC")
                svc.set(**OFF)
                loads[r] = timed_load(client_for(svc, 0), columns="keys")[0]
                svc.set(**HOSTED)
        print(f"2. {runs} runs of {made_total // runs} updates each "
              f"({time.perf_counter() - t_runs:.0f}s in all; load average "
              f"{os.getloadavg()[0]:.1f}):", flush=True)
        for name in targets:
            rest = walls[name][1:] or walls[name]
            print(f"   {name}: run 1 {walls[name][0]:.2f}s ({requests[name][0]} requests) = "
                  f"{100 * walls[name][0] / first[name]:.1f}% of the first mirror; runs 2-"
                  f"{runs} mean {sum(rest) / len(rest):.2f}s, max {max(rest):.2f}s, "
                  f"requests {min(requests[name])}-{max(requests[name])}; runs whose counts "
                  f"differ from the changes made: {len(mismatched[name])} "
                  f"{'; '.join(mismatched[name][:3])}", flush=True)
        if written:
            total = [sum(v for k, v in w.items() if not k.startswith("(")) for w in written]
            commit = [w["(commit, ms)"] / 1000 for w in written]
            wall = walls["Parquet"]
            print(f"   Parquet: a run writes {mb(min(total))}-{mb(max(total))} "
                  f"(mean {mb(sum(total) // len(total))}) of a directory of "
                  f"{mb(size_on_disk(targets['Parquet']))}; its commit takes "
                  f"{min(commit):.2f}-{max(commit):.2f}s (mean {sum(commit) / len(commit):.2f}s"
                  f" of a mean run of {sum(wall) / len(wall):.2f}s)", flush=True)
            for label, w in (("run 1", written[0]), (f"run {runs}", written[-1])):
                big = sorted(((v, k) for k, v in w.items() if not k.startswith("(")),
                             reverse=True)[:4]
                print(f"   Parquet {label} wrote: " + ", ".join(f"{k} {mb(v)}" for v, k in big),
                      flush=True)
        print("3. history rows = the first run's + the changes made:", flush=True)
        for name, target in targets.items():
            rows = history_rows(target)
            expected = base[name] + made_total
            try:
                mirror_consistent(target)
                whole = "whole"
            except AssertionError as e:
                whole = f"NOT WHOLE ({str(e)[:200]})"
            print(f"   {name}: {whole}; {rows} = {base[name]} + {made_total}: "
                  f"{'equal' if rows == expected else f'NOT EQUAL ({rows - expected:+d})'}"
                  f" (runs reported {counted[name]} changes); size "
                  + ", ".join(f"{k} {mb(v)}" for k, v in sizes[name].items()), flush=True)
        if picks:
            print(f"4. as_of at {len(picks)} times against loads taken then:", flush=True)
            for name, target in targets.items():
                diffs = [differing(as_of(target, times[r])["object_3"], loads[r])
                         for r in picks]
                print(f"   {name}: {sum(diffs)} records differ ({diffs})  goal 0",
                      flush=True)
        print(f"(load average {os.getloadavg()[0]:.1f}; "
              f"{time.strftime('%H:%M UTC', time.gmtime())})", flush=True)


if __name__ == "__main__":
    main()
