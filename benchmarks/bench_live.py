"""A live application: loads, bulk edits and creates while other users work.
Run: ``.venv/bin/python -m benchmarks.bench_live [--quick] [--records N] [--part loads]
[--rates 2,10] [--spread]``

1. Loads: work orders at 10 requests/s and 100 ms, other users making 2 and then 10
   changes a second (``activity``): over 10 loads, records missing or doubled against the
   records that existed for the whole load (computed from the activity log; goal 0),
   records deleted before the load began that came anyway (goal 0), refused loads (goal
   0), wall time / ceiling (pages / 10 per s: the schema and the gap check are
   requests beyond it; goal <= 1.10).
2. Bulk edits: two write_backs of the same cells (one text field of each record), started
   together and 3 s apart, with the live guard (default) and with ``guard="once"`` (the
   old behaviour): updates lost while reported applied (a side says ``applied`` and the
   server holds the other side's value; goal 0), and requests per changed record.
3. Creates: 40 creates, half faulted before the service stores them (the answer lost),
   while another client creates records with the same values: adoptions of the other's
   records (goal 0), duplicates (goal 0), and how many end ``unknown``.
4. Refresh: writers that do not stamp (API updates, no record rule) beside stamped edits
   in the pages: what each refresh misses, when the sweep (every 10th) finds it, and the
   requests of a refresh and of a sweep.

Every service is reached over HTTPS with each new connection's handshake taking 200 ms
(``HOSTED``: two round trips at 100 ms, as a hosted one; docs/pacing.md).

The full size is 50,000 work orders and 500 cells; ``--records``/``--cells`` change it
(the machine is shared: the figures in docs/live-application.md say which size ran).
``--quick`` runs a smoke size.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

from benchmarks.remote import RemoteService
from svc_frames.errors import ConsistencyError
from svc_frames.loaders import read_object
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import Report, add_rows, write_back

# the hosted service's pace and latency, over HTTPS with a hosted connection's handshake
# (``--plain``: plain HTTP without handshakes, as these figures were measured before)
HOSTED: dict[str, Any] = {"rate_limit": 10, "latency_ms": 100, "handshake_ms": 200,
                          "tls": True}

OBJ = "object_3"
TEXT = "field_12"   # the work orders' title (demo_app.py), not unique


# ---- 1. loads ------------------------------------------------------------------------------
def _ids_now(svc: RemoteService) -> set[str]:
    return set(map(str, read_object(client_for(svc), OBJ, progress=False,
                                    verify="none", columns="keys").main.index))


def bench_loads(records: int, rates: list[float], loads: int, spread: bool = False) -> None:
    """The service in its own process (benchmarks/remote.py), the activity in it: the
    client's decoding does not share an interpreter lock with the service's answers.

    A paced load's wall time depends on where in the service's second it starts (its
    requests fill the service's seconds; the last second's start is what it waits for):
    each load's start within that second is printed. ``spread``: the loads start at
    moments spread evenly over that second (load i of n at (i + 0.5) / n of it), so
    their mean is what a user starting at any moment waits on average, without the
    luck of ten random draws; else 1.1 s after the count's requests, as these figures
    were first measured."""
    for rate in rates:
        with RemoteService(records, seed=1, **HOSTED, activity=f"{OBJ}:{rate}/s") as svc:
            missing = doubled = ghosts = refused = 0
            ratios, sent_counts, pages = [], [], -(-records // 1000)
            phases: list[float] = []
            for i in range(loads):
                svc.pause()
                before = _ids_now(svc)
                time.sleep(1.1)   # a fresh rate-limit second after the count's requests
                if spread:   # to the planned moment of the service's second
                    time.sleep(((i + 0.5) / loads - svc.now()) % 1.0)
                svc.resume()
                client = client_for(svc, rate_limit=10)
                t0 = svc.now()
                phases.append(t0 % 1.0)
                w0 = time.perf_counter()
                sent0 = client.request_count
                try:
                    frames = read_object(client, OBJ, progress=False, columns="keys")
                except ConsistencyError:
                    refused += 1
                    continue
                finally:
                    wall = time.perf_counter() - w0
                    t1 = svc.now()
                    svc.pause()
                sent = client.request_count - sent0
                sent_counts.append(sent)
                # against the pages' ceiling (pages / 10 per s): what the user waits for
                ratios.append(wall / (pages / 10))
                inserted = svc.touched(OBJ, t0, t1, ("insert",))
                deleted = svc.touched(OBJ, t0, t1, ("delete",))
                after = _ids_now(svc)
                stable = (before & after) - inserted - deleted
                got = [str(i) for i in frames.main.index]
                missing += len(stable - set(got))
                doubled += len(got) - len(set(got))
                ghosts += len(set(got) - before - inserted)
                svc.resume()
            worst = max(ratios) if ratios else float("nan")
            mean = sum(ratios) / len(ratios) if ratios else float("nan")
            print(f"loads of {records:,} work orders ({pages} pages), activity {rate}/s, "
                  f"{loads} loads: missing {missing}, doubled {doubled}, "
                  f"deleted-before-start present {ghosts}, refused {refused}; requests "
                  f"{min(sent_counts, default=0)}-{max(sent_counts, default=0)}; "
                  f"wall/ceiling (pages / 10 per s) mean {mean:.3f}, worst {worst:.3f}, "
                  f"all {[round(r, 3) for r in ratios]}; started at "
                  f"{[round(p, 2) for p in phases]} of the service's second"
                  f"{' (spread)' if spread else ''}", flush=True)


# ---- 2. two writers of the same cells ------------------------------------------------------
def _two_writers(cells: int, apart: float, guard: str) -> tuple[int, float, dict[str, int]]:
    with LocalService(demo=True, records=cells + 20, **HOSTED, seed=2) as svc:
        ca, cb = client_for(svc, rate_limit=10), client_for(svc, rate_limit=10)
        fa = read_object(ca, OBJ, progress=False, columns="keys")
        fb = read_object(cb, OBJ, progress=False, columns="keys")
        ids = [str(i) for i in fa.main.index[:cells]]
        for frames, side in ((fa, "A"), (fb, "B")):
            col = frames.main[TEXT].copy()
            for i, rid in enumerate(ids):
                col.at[rid] = f"{side} {i}"
            frames.main[TEXT] = col
        reports: dict[str, Report] = {}

        def run(name: str, client: Any, frames: Any, delay: float) -> None:
            time.sleep(delay)
            reports[name] = write_back(client, frames, guard=guard, progress=False)

        threads = [threading.Thread(target=run, args=("A", ca, fa, 0.0)),
                   threading.Thread(target=run, args=("B", cb, fb, apart))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        now = read_object(client_for(svc), OBJ, progress=False, columns="keys").main[TEXT]
        lost = 0
        statuses: dict[str, int] = {}
        for side in ("A", "B"):
            table = reports[side].table.set_index("record_id")
            for i, rid in enumerate(ids):
                st = str(table.at[rid, "status"])
                statuses[f"{side}:{st}"] = statuses.get(f"{side}:{st}", 0) + 1
                if st == "applied" and now[rid] != f"{side} {i}":
                    lost += 1
        # requests each writer sent per record it set out to change
        sent = sum(sum(reports[s].requests.values()) for s in ("A", "B"))
        return lost, sent / (2 * cells), statuses


def bench_writers(cells: int) -> None:
    for guard in ("live", "once"):
        for apart in (0.0, 3.0):
            lost, per, statuses = _two_writers(cells, apart, guard)
            print(f"two write_backs of the same {cells} cells, {apart:.0f} s apart, "
                  f"guard={guard!r}: lost while reported applied {lost}; requests per "
                  f"record per writer {per:.2f}; {statuses}", flush=True)


# ---- 3. creates among identical creates ----------------------------------------------------
def bench_creates(n: int) -> None:
    with LocalService(demo=True, records=50, **HOSTED, seed=3) as svc:
        client = client_for(svc, rate_limit=10, backoff=0.05)
        frames = read_object(client, OBJ, progress=False, columns="keys")
        add_rows(frames, [{TEXT: f"bench create {i}"} for i in range(n)])
        theirs: list[str] = []
        stop = threading.Event()

        def rival() -> None:
            i = 0
            while not stop.is_set():
                # another user in the application's pages (no API fault reaches them)
                theirs.append(str(svc.pages.create_record(
                    OBJ, {TEXT: f"bench create {i % n}"})["id"]))
                i += 1
                stop.wait(0.25)

        t = threading.Thread(target=rival, daemon=True)
        t.start()
        svc.emulation.fault_methods = ("POST",)
        svc.emulation.faults = ("502", "503", "drop")
        svc.emulation.fault_rate = 0.5
        try:
            report = write_back(client, frames, progress=False)
        finally:
            svc.emulation.fault_rate = 0.0
            stop.set()
            t.join()
        table = report.table
        applied = set(table[table["status"] == "applied"]["record_id"])
        adopted_theirs = len(applied & set(theirs))
        now = read_object(client_for(svc), OBJ, progress=False, columns="keys").main
        dups = 0
        for i in range(n):
            ours = [r for r in now.index[now[TEXT] == f"bench create {i}"]
                    if str(r) not in set(theirs)]
            dups += max(0, len(ours) - 1)
        print(f"{n} creates, 50% faulted before the write, another client creating the "
              f"same values ({len(theirs)} records): adoptions of theirs {adopted_theirs}, "
              f"duplicates {dups}; statuses {report.counts}", flush=True)


# ---- 4. refresh: writers that do not stamp --------------------------------------------------
def bench_refresh(records: int, rounds: int = 10, every: int = 10) -> None:
    from svc_frames.refreshing.policy import refresh

    with LocalService(demo=True, records=records, **HOSTED, seed=4) as svc:
        client = client_for(svc, rate_limit=10)
        frames = read_object(client, OBJ, progress=False, columns="keys")
        ids = [str(i) for i in frames.main.index]
        pending: dict[str, str] = {}     # unstamped changes not yet seen
        found_late: list[int] = []
        stamped_missed = 0
        costs: list[tuple[bool, int]] = []
        for r in range(1, rounds + 1):
            for k in range(3):
                rid = ids[(r * 7 + k) % len(ids)]
                value = f"api {r}.{k}"
                client.update_record(OBJ, rid, {TEXT: value})   # no record rule: no stamp
                pending[rid] = value
            paged = ids[(r * 11) % len(ids)]
            svc.pages.update_record(OBJ, paged, {TEXT: f"pages {r}"})   # stamped
            report = refresh(client, frames, sweep_every=every)
            costs.append((report.swept, report.requests))
            if frames.main.at[paged, TEXT] != f"pages {r}":
                stamped_missed += 1
            for rid, value in list(pending.items()):
                if frames.main.at[rid, TEXT] == value:
                    found_late.append(r)
                    del pending[rid]
        normal = [n for s, n in costs if not s]
        swept = [n for s, n in costs if s]
        print(f"refresh of {records:,} work orders, {rounds} rounds of 3 unstamped API "
              f"updates and 1 stamped page edit, sweep_every={every}: stamped missed "
              f"{stamped_missed}; unstamped found {len(found_late)} of {3 * rounds} (at "
              f"refreshes {sorted(set(found_late))}), {len(pending)} still unseen; "
              f"requests per refresh {sum(normal) / max(1, len(normal)):.1f}, per sweep "
              f"{sum(swept) / max(1, len(swept)):.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--cells", type=int, default=500)
    ap.add_argument("--loads", type=int, default=10)
    ap.add_argument("--part", choices=["loads", "writers", "creates", "refresh"],
                    action="append")
    ap.add_argument("--rates", default="2,10",
                    help="changes a second of the other users, for the loads")
    ap.add_argument("--spread", action="store_true",
                    help="start the loads at moments spread evenly over the service's "
                         "second")
    ap.add_argument("--plain", action="store_true",
                    help="plain HTTP without handshakes (the emulation before HTTPS)")
    args = ap.parse_args()
    if args.plain:
        HOSTED.update(tls=False, handshake_ms=0)
    if args.quick:
        args.records, args.cells, args.loads = 3_000, 60, 3
    parts = args.part or ["loads", "writers", "creates", "refresh"]
    if "loads" in parts:
        bench_loads(args.records, [float(r) for r in args.rates.split(",")], args.loads,
                    args.spread)
    if "writers" in parts:
        bench_writers(args.cells)
    if "creates" in parts:
        bench_creates(40 if not args.quick else 12)
    if "refresh" in parts:
        bench_refresh(min(args.records, 5_000))


if __name__ == "__main__":
    main()
