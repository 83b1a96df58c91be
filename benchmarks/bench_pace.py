"""Pacing benchmarks: the client's pace against a service whose clock is not ours.
Run: ``.venv/bin/python -m benchmarks.bench_pace [--quick]``

Every figure is measured in this one run, on this machine, against the local service in
its own process emulating the hosted one: 10 requests/s per second of *its* clock,
100 ms latency, ``jitter_ms`` more at random, over HTTPS, each new connection's
handshake taking ``--handshake-ms`` (default 200 ms: a hosted connection's TCP and TLS
1.3 handshakes, two round trips), which the client's connect waits out. ``--plain``:
plain HTTP, each new connection's first request held that long instead. ``--book-first``:
the offset table with each request paced before its connection opens (the client's
order before http/connections.py), to show what that order costs.

1. Offset x jitter: the service's clock set -1 ... +1 s from ours, jitter 0 and 50 ms; one
   load of 4,000 records at 100 per page (40 pages), twice per cell, each by a fresh
   limiter (as a new process would have: nothing learned yet): the 429s the service
   answered (both loads), wall time / ceiling (the best load; ceiling: pages / 10 per s;
   goal <= 1.06 when the clocks agree, <= 1.08 otherwise, with zero 429s), when the last
   request was let go / ceiling (the pace alone, without the client's CPU time after
   it, which a busy shared machine stretches), and the offset the limiter learned
   (``client.pace.service_offset``).
2. Two processes loading the same application together (the service's clock 300 ms
   behind): 429s and combined wall (first start to last end) / ceiling of their pages
   together (goal: zero 429s and <= 1.10), once sharing the pace file (the default) and
   once each with a pace of its own (what two processes did before the pace file).

``--quick`` runs small sizes (a smoke run, not the reported figures).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from requests.adapters import HTTPAdapter

from benchmarks.bench_load import biggest_object
from benchmarks.remote import RemoteService
from svc_frames.http.limiter import RateLimiter
from svc_frames.http.paceledger import open_ledger
from svc_frames.loaders import read_object
from svc_frames.records import Client

OFFSETS = (-1.0, -0.5, -0.15, 0.0, 0.15, 0.5, 1.0)
JITTERS = (0, 50)
ROWS_PER_PAGE = 100
LATENCY_MS = 100


class RecordingLimiter(RateLimiter):
    """A limiter that notes when each request was let go (to tell its pace from the
    client's CPU time, which a shared machine stretches)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.starts: list[float] = []

    def acquire(self) -> float:
        waited = super().acquire()
        self.starts.append(time.time())
        return waited


def fresh_client(svc: RemoteService, cell: str, pace_dir: str, book_first: bool = False
                 ) -> Client:
    """A client whose limiter is new (nothing learned, its own pace file): each cell is a
    first load, as a new process's would be. ``book_first``: requests' own adapter, so
    each request is paced before its connection opens (the order before connections.py)."""
    client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=10,
                    max_workers=16, verify=svc.ca_file)
    if book_first:
        for scheme in ("http://", "https://"):
            client.session.mount(scheme, HTTPAdapter(pool_maxsize=16, max_retries=0))
    ledger = open_ledger(f"{svc.base_url}#{cell}", svc.app_id, Path(pace_dir))
    client.limiter = RecordingLimiter(10, ledger=ledger)
    return client


def bench_offsets(svc: RemoteService, object_key: str, n: int, offsets: tuple[float, ...],
                  pace_dir: str, repeat: int, handshake_ms: float, book_first: bool = False
                  ) -> list[dict[str, Any]]:
    """``repeat`` loads per (offset, jitter) cell: the best wall time (the machine is
    shared), the 429s of all of them."""
    pages = math.ceil(n / ROWS_PER_PAGE)
    ceiling = pages / 10
    rows = []
    for jitter in JITTERS:
        for offset in offsets:
            svc.set(rate_limit=10, latency_ms=LATENCY_MS, jitter_ms=jitter,
                    clock_offset_ms=offset * 1000, handshake_ms=handshake_ms)
            svc.clear()
            walls, last_starts, learned = [], [], []
            for i in range(repeat):
                time.sleep(1.1)  # the setup's requests out of the service's second
                client = fresh_client(svc, f"{offset}-{jitter}-{i}", pace_dir, book_first)
                t0 = time.time()
                frames = read_object(client, object_key, progress=False,
                                     rows_per_page=ROWS_PER_PAGE, columns="keys")
                walls.append(time.time() - t0)
                assert len(frames.main) == n, (len(frames.main), n)
                assert isinstance(client.limiter, RecordingLimiter)
                last_starts.append(client.limiter.starts[-1] - t0)
                learned.append(client.pace.service_offset)
            best = min(range(repeat), key=lambda k: walls[k])
            rows.append({"offset_s": offset, "jitter_ms": jitter, "pages": pages,
                         "requests": client.request_count, "loads": repeat,
                         "429s": svc.count(status=429),
                         "wall_s": [round(w, 2) for w in walls], "ceiling_s": ceiling,
                         "ratio": round(walls[best] / ceiling, 3),
                         "last_start_ratio": round(last_starts[best] / ceiling, 3),
                         "learned_offset_s": [None if x is None else round(x, 3)
                                              for x in learned]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _loader(base_url: str, app_id: str, api_key: str, ca_file: str | None, object_key: str,
            pace_dir: str, ready: Any, go: Any, out: Any) -> None:
    """Child process: one load when told to go; (start, end, 429s seen, rows) back."""
    os.environ["SVC_PACE_DIR"] = pace_dir
    client = Client(app_id, api_key=api_key, base_url=base_url, rate_limit=10,
                    max_workers=16, verify=ca_file)
    # the pace file every client of this application uses, with the starts noted
    limiter = client.limiter = RecordingLimiter(10, ledger=open_ledger(base_url, app_id))
    ready.set()
    go.wait()
    t0 = time.time()
    frames = read_object(client, object_key, progress=False, rows_per_page=ROWS_PER_PAGE, columns="keys")
    out.put((t0, time.time(), client.status_counts[429], len(frames.main),
             str(client.pace.shared_file), limiter.starts[-1]))


def bench_two(svc: RemoteService, object_key: str, n: int, shared: bool,
              pace_dir: str, handshake_ms: float) -> dict[str, Any]:
    """Two processes loading ``object_key`` together, sharing the pace or not."""
    svc.set(rate_limit=10, latency_ms=LATENCY_MS, jitter_ms=30, clock_offset_ms=-300,
            handshake_ms=handshake_ms)
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    dirs = ([pace_dir] * 2 if shared else
            [tempfile.mkdtemp(prefix="pace-own-", dir=pace_dir) for _ in range(2)])
    readies = [ctx.Event() for _ in range(2)]
    kids = [ctx.Process(target=_loader, args=(svc.base_url, svc.app_id, svc.api_key,
                                              svc.ca_file, object_key, d, r, go, out))
            for d, r in zip(dirs, readies, strict=True)]
    for kid in kids:
        kid.start()
    for r in readies:
        r.wait(300)
    time.sleep(1.1)
    svc.clear()
    go.set()
    results = [out.get(timeout=600) for _ in kids]
    for kid in kids:
        kid.join(60)
    pages = 2 * math.ceil(n / ROWS_PER_PAGE)
    ceiling = pages / 10
    wall = max(r[1] for r in results) - min(r[0] for r in results)
    assert all(r[3] == n for r in results), results
    return {"shared_pace": shared, "pages_together": pages,
            "429s": svc.count(status=429), "429s_seen": sum(r[2] for r in results),
            "wall_s": round(wall, 2), "ceiling_s": ceiling, "ratio": round(wall / ceiling, 3),
            "last_start_ratio": round((max(r[5] for r in results)
                                       - min(r[0] for r in results)) / ceiling, 3),
            "pace_files": sorted({r[4] for r in results})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--part", choices=("all", "offsets", "two"), default="all",
                        help="the offset x jitter table, the two processes, or both")
    parser.add_argument("--handshake-ms", type=float, default=2 * LATENCY_MS,
                        help="how long a new connection's handshake takes (default: twice "
                             "the latency, as a hosted one's TCP and TLS 1.3 handshakes)")
    parser.add_argument("--book-first", action="store_true",
                        help="the offset table with each request paced before its "
                             "connection opens (the client's order before connections.py)")
    parser.add_argument("--plain", action="store_true",
                        help="plain HTTP: a new connection's first request is held for the "
                             "handshake (by default HTTPS, the server's side of the TLS "
                             "handshake held, so the client's connect waits as on a hosted "
                             "service)")
    args = parser.parse_args(argv)
    n = 1000 if args.quick else 4000
    offsets = (-0.5, 0.0, 1.0) if args.quick else OFFSETS
    pace_dir = tempfile.mkdtemp(prefix="svc-frames-bench-pace-")
    os.environ["SVC_PACE_DIR"] = pace_dir  # never the developer's own cache
    with open("/proc/loadavg", encoding="ascii") as f:
        load_before = f.read().split()[:3]
    print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "machine": f"{platform.machine()} {os.cpu_count()} CPUs, "
                                 f"{platform.system()} {platform.release()}",
                      "python": platform.python_version(), "load_avg": load_before,
                      "tls": not args.plain, "handshake_ms": args.handshake_ms,
                      "book_first": args.book_first}),
          flush=True)
    with RemoteService(n, seed=0, tls=not args.plain) as svc:
        svc.set(rate_limit=0, latency_ms=0)
        probe = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                       rate_limit=0, verify=svc.ca_file)
        object_key, total = biggest_object(probe)
        assert total == n, (total, n)
        table = (bench_offsets(svc, object_key, n, offsets, pace_dir, 1 if args.quick else 2,
                               args.handshake_ms, args.book_first)
                 if args.part != "two" else [])
        two = ([bench_two(svc, object_key, n, shared, pace_dir, args.handshake_ms)
                for shared in (True, False)] if args.part != "offsets" else [])
        for row in two:
            print(json.dumps(row), flush=True)
    with open("/proc/loadavg", encoding="ascii") as f:
        load_after = f.read().split()[:3]
    agree = [r["ratio"] for r in table if r["offset_s"] == 0.0]
    other = [r["ratio"] for r in table if r["offset_s"] != 0.0]
    print(json.dumps({"load_avg_after": load_after,
                      "total_429s": sum(r["429s"] for r in table),
                      "worst_ratio_clocks_agree": max(agree, default=None),
                      "worst_ratio_offset": max(other, default=None),
                      "two_processes_shared": two[0] if two else None}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
