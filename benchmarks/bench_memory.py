"""A load's memory. Run: ``.venv/bin/python -m benchmarks.bench_memory [--quick]``

The peak a load adds to its process's memory, against the size of what it returns:
``read_object`` of the demo's work orders (100,000; ``--quick``: 20,000) with a default
client, unpaced (service limit off, no latency), the service in its own process (``remote.py``), beside the naive
loader (``naive.py``: sequential requests, then ``pd.json_normalize``). Goal: added peak
<= 1.5x the frames.

Method: each load runs in a fresh child process that imports everything first, then
resets the kernel's peak-RSS mark (``VmHWM``, by writing ``5`` to
``/proc/self/clear_refs``), notes its RSS, loads, and reads the mark again: added peak =
peak RSS during the load - RSS before it. The frames' size is
``memory_usage(deep=True)`` of the main frame (index included) and of every table. The
ratio is added peak / frames size (the frames themselves are part of what is added: 1.0
is a load with no memory beyond its result). Limits: RSS counts pages, not Python
objects (the allocator keeps freed memory it may reuse, and counts it); ``deep=True``
counts Python strings of object columns at their ``sys.getsizeof`` and Arrow buffers at
their size, which is what they hold. Where ``clear_refs`` cannot be written (not Linux,
or refused), a thread samples the RSS every millisecond instead, which may miss a peak
shorter than that (the method used is printed with each figure).

``--before REV`` measures an earlier revision's client too (a ``git worktree`` of it,
removed at the end), loads alternating, against the same service.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.remote import RemoteService

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import gc, json, os, resource, sys, threading, time
loader, app_id, api_key, base_url, obj = sys.argv[1:6]
import pandas as pd
if loader == "naive":
    from benchmarks.naive import naive_load
else:
    try:
        from svc_frames.records import Client
    except ImportError:   # a revision before the records layer
        from svc_frames.records import Client
    from svc_frames.loaders import read_object

def status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key + ":"))

def rss():
    if sys.platform == "linux":
        return status("VmRSS")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # the best there is

class Svc:
    pass
svc = Svc()
svc.app_id, svc.api_key, svc.base_url = app_id, api_key, base_url
gc.collect()
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")   # the peak-RSS mark (VmHWM) starts again from the RSS now
    method = "VmHWM reset"
except OSError:
    method = "sampler 1 ms"
before = rss()
peak = [before]
done = threading.Event()
def sample():
    while not done.wait(0.001):
        peak[0] = max(peak[0], rss())
if method != "VmHWM reset":
    threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
u0 = resource.getrusage(resource.RUSAGE_SELF)
if loader == "naive":
    df = naive_load(svc, obj)
    size = int(df.memory_usage(deep=True).sum())
    rows = len(df)
else:
    client = Client(app_id, api_key=api_key, base_url=base_url, rate_limit=0)
    frames = read_object(client, obj, progress=False, columns="keys")
    size = int(frames.main.memory_usage(deep=True).sum()) + sum(
        int(t.memory_usage(deep=True).sum()) for t in frames.tables.values())
    rows = len(frames.main)
wall = time.perf_counter() - t0
u1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = u1.ru_utime - u0.ru_utime + u1.ru_stime - u0.ru_stime
done.set()
top = status("VmHWM") if method == "VmHWM reset" else peak[0]
top = max(top, rss())
print(json.dumps({"rows": rows, "wall_s": wall, "cpu_s": cpu, "before": before, "peak": top,
                  "frames": size, "method": method}))
"""


def run_child(src: Path, loader: str, svc: RemoteService, obj: str) -> dict[str, Any]:
    """One load in a fresh interpreter importing the client from ``src``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(ROOT)]))
    proc = subprocess.run([sys.executable, "-c", _CHILD, loader, svc.app_id, svc.api_key,
                           svc.base_url, obj], capture_output=True, text=True, env=env,
                          cwd=src, check=False)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def biggest_object(svc: RemoteService) -> str:
    """The demo's work orders: the object holding the generated records."""
    from svc_frames.records import Client
    client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
    app = client.schema()
    assert app is not None
    sizes = {o["key"]: client.get_page(o["key"], rows_per_page=1)["total_records"]
             for o in app["objects"]}
    return str(max(sizes, key=lambda k: sizes[k]))


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median figures of a loader's runs (MB: 10**6 bytes)."""
    added = [(r["peak"] - r["before"]) / 1e6 for r in runs]
    return {"rows": runs[0]["rows"], "frames_MB": round(runs[0]["frames"] / 1e6, 1),
            "rss_before_MB": round(statistics.median(r["before"] for r in runs) / 1e6),
            "added_peak_MB": [round(a) for a in added],
            "peak_MB": round(statistics.median(r["peak"] for r in runs) / 1e6),
            "ratio": round(statistics.median(added) / (runs[0]["frames"] / 1e6), 2),
            "wall_s": [round(r["wall_s"], 2) for r in runs],
            "cpu_s": [round(r["cpu_s"], 2) for r in runs],
            "method": runs[0]["method"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="20,000 records (a smoke run)")
    ap.add_argument("--records", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=None, help="loads per loader (default 3)")
    ap.add_argument("--before", default=None, help="an earlier revision, measured too")
    args = ap.parse_args()
    n = args.records or (20_000 if args.quick else 100_000)
    rounds = args.rounds or (1 if args.quick else 3)
    arms: dict[str, tuple[Path, str]] = {"read_object": (ROOT, "ours")}
    tmp = None
    if args.before:
        tmp = Path(tempfile.mkdtemp(prefix="svc-before-"))
        subprocess.run(["git", "worktree", "add", "--detach", str(tmp / "src"), args.before],
                       cwd=ROOT, check=True, capture_output=True)
        arms = {f"read_object@{args.before}": (tmp / "src", "ours"), **arms}
    arms["naive"] = (ROOT, "naive")
    print(f"building a demo service with {n} records ... (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)", flush=True)
    try:
        with RemoteService(n) as svc:
            svc.set(rate_limit=0, latency_ms=0)
            obj = biggest_object(svc)
            runs: dict[str, list[dict[str, Any]]] = {k: [] for k in arms}
            for _ in range(rounds):
                for name, (src, loader) in arms.items():
                    runs[name].append(run_child(src, loader, svc, obj))
            print(f"object {obj}; load average now {os.getloadavg()[0]:.1f}", flush=True)
            for name, rs in runs.items():
                goal = "  goal ratio <= 1.5" if name == "read_object" else ""
                print(f"{name}: {summary(rs)}{goal}", flush=True)
    finally:
        if tmp is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "src")],
                           cwd=ROOT, check=False, capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
