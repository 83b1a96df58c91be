"""The client of an earlier revision against this checkout's, loads alternating in fresh
processes: ``.venv/bin/python -m benchmarks.compare_revisions [--before REV]``.

Single benchmark runs of two revisions a few minutes apart say little on a shared VM (the
same work took 30-50% longer within minutes here), so this runs both clients in turn,
round after round, against one local service of this checkout in its own process
(``remote.py``), and reports the mean, median and least of each figure:

- ``cold_s``: a fresh interpreter importing the client and loading every record of the
  demo's work orders, unpaced (service limit off, 100 ms latency), default settings;
- ``load_s`` / ``cpu_load_s``: that load alone, its wall and process time;
- ``warm_s`` / ``cpu_warm_s``: a second load in the same process with a new client
  (``max_workers=16``, as ``bench_load``'s unpaced load);
- ``paced_s`` and ``paced_ratio``: in a second phase, the same load paced at the hosted
  10 requests/s (the service limiting too), wall and wall / (pages / 10 per s).

``--instructions RECORDS`` counts instead of timing: the instructions each client's
interpreter executes (valgrind's cachegrind) for its imports, a first load and a second,
unpaced without latency. Those counts repeat to a few tenths of a per cent where CPU
times here move by tens, so they tell a CPU difference of a few per cent that timing
cannot.

A third arm, ``now-by-number``, is this checkout with paging in the auto-increment
field's order switched off (the loader's Paginator asked for ``keyset=False``): the read
path alone, without the live-application guarantee's round trip for the schema before
page 1 (docs/live-application.md).

The earlier revision is checked out with ``git worktree`` in a temporary directory and
removed at the end; its client is imported from there (``svc_frames.client`` before the
read path was split into ``http/``, ``svc_frames.http.client`` after, and
``svc_frames.records`` once the records layer was split from the transport).
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
import json, sys, time
t0 = time.perf_counter()
try:
    from svc_frames.records import Client
except ImportError:   # a revision before the records layer
    try:
        from svc_frames.http.client import Client
    except ImportError:   # a revision before the read path was split
        from svc_frames.client import Client
from svc_frames.loaders import read_object
import_s = time.perf_counter() - t0
app_id, key, url, obj, arm, phase = sys.argv[1:7]
if arm == "now-by-number":
    import svc_frames.read.load as load_module
    class ByNumber(load_module.Paginator):   # however load builds it (of() or not)
        def __init__(self, *args, **kwargs):
            kwargs["keyset"] = False
            super().__init__(*args, **kwargs)
    load_module.Paginator = ByNumber
out = {}
def timed(name, **client_options):
    c = Client(app_id, api_key=key, base_url=url, **client_options)
    w, p = time.perf_counter(), time.process_time()
    frames = read_object(c, obj, progress=False)
    out[name + "_s"] = time.perf_counter() - w
    out["cpu_" + name + "_s"] = time.process_time() - p
    out[name + "_requests"] = c.request_count
    out["rows"] = len(frames.main)
if phase == "unpaced":
    timed("load", rate_limit=0)
    out["cold_s"] = import_s + out["load_s"]
    timed("warm", rate_limit=0, max_workers=16)
elif phase == "paced":
    timed("paced", rate_limit=10, max_workers=16)
else:   # "loads=N": N loads, counted from outside (valgrind)
    for _ in range(int(phase.split("=")[1])):
        read_object(Client(app_id, api_key=key, base_url=url, rate_limit=0, max_workers=4),
                    obj, progress=False)
print(json.dumps(out))
"""


def run_child(arm: str, path: Path, svc: RemoteService, phase: str) -> dict[str, Any]:
    """One fresh interpreter of ``arm``'s client (imported from ``path``)."""
    env = dict(os.environ, PYTHONPATH=str(path))
    proc = subprocess.run([sys.executable, "-c", _CHILD, svc.app_id, svc.api_key,
                           svc.base_url, "object_3", arm, phase],
                          capture_output=True, text=True, cwd=path, env=env, check=False)
    if proc.returncode:
        raise RuntimeError(f"{arm}: {proc.stderr[-1500:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def instructions(arm: str, path: Path, svc: RemoteService, loads: int) -> int:
    """The instructions a fresh interpreter of ``arm``'s client executes to import it and
    make ``loads`` loads (valgrind's cachegrind, no cache simulation): exact to a few
    tenths of a per cent from run to run, where this VM's CPU time varies by tens."""
    env = dict(os.environ, PYTHONPATH=str(path))
    proc = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", sys.executable, "-c", _CHILD,
                           svc.app_id, svc.api_key, svc.base_url, "object_3", arm,
                           f"loads={loads}"],
                          capture_output=True, text=True, cwd=path, env=env, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
    if proc.returncode or found is None:
        raise RuntimeError(f"{arm}: {proc.stderr[-1500:]}")
    return int(found.group(1).replace(",", ""))


def count_instructions(arms: dict[str, Path], records: int) -> None:
    """Per arm: the instructions of the imports, of a first load and of a second load
    (a new client; unpaced, no latency), from runs of 0, 1 and 2 loads."""
    if shutil.which("valgrind") is None:
        print("instructions: skipped (valgrind is not installed)", flush=True)
        return
    with RemoteService(records) as svc:
        svc.set(rate_limit=0, latency_ms=0)
        for arm, path in arms.items():
            n0, n1, n2 = (instructions(arm, path, svc, k) for k in (0, 1, 2))
            print(f"instructions {arm:<22} imports {n0 / 1e6:,.0f} M | first load "
                  f"{(n1 - n0) / 1e6:,.0f} M | another load {(n2 - n1) / 1e6:,.0f} M",
                  flush=True)


def rotations(arms: list[str], rounds: int) -> list[list[str]]:
    """Each round's order: rotated and reversed in turn, so no arm always runs first or
    after the same other (a VM that drifts, a page cache that warms)."""
    out = []
    for r in range(rounds):
        order = arms[r % len(arms):] + arms[:r % len(arms)]
        out.append(order[::-1] if r % 2 else order)
    return out


def summary(results: dict[str, list[dict[str, Any]]], keys: list[str]) -> None:
    for key in keys:
        cells = []
        for arm, rows in results.items():
            vals = [r[key] for r in rows if key in r]
            if vals:
                cells.append(f"{arm}: mean {statistics.mean(vals):.2f} median "
                             f"{statistics.median(vals):.2f} least {min(vals):.2f}")
        print(f"{key:<16}", " | ".join(cells), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="a235685",
                    help="the earlier revision (default: before the read path was one)")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of each phase (6)")
    ap.add_argument("--records", type=int, default=50_000, help="work orders (50,000)")
    ap.add_argument("--instructions", type=int, default=0, metavar="RECORDS",
                    help="instead of timing: count each client's instructions (valgrind) "
                         "for loads of RECORDS work orders (10,000: about 5 minutes)")
    args = ap.parse_args()
    if args.rounds < 1 or args.records < 1 or args.instructions < 0:
        ap.error("--rounds and --records must be positive, --instructions not negative")
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                        str(before), args.before], check=True)
        # bytecode for both, as an installed package has (with PYTHONDONTWRITEBYTECODE set,
        # as on this machine, each child would otherwise compile the new worktree again)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(before / "svc_frames"),
                        str(ROOT / "svc_frames")], check=True, capture_output=True)
        try:
            arms = {f"before ({args.before})": before, "now": ROOT, "now-by-number": ROOT}
            if args.instructions:
                count_instructions(arms, args.instructions)
                return
            results: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
            print(f"{args.records} work orders, {args.rounds} rounds; load average "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
            with RemoteService(args.records) as svc:
                for phase, knobs in (("unpaced", {"rate_limit": 0}),
                                     ("paced", {"rate_limit": 10})):
                    svc.set(latency_ms=100, **knobs)
                    for order in rotations(list(arms), args.rounds):
                        for arm in order:
                            row = run_child(arm, arms[arm], svc, phase)
                            if "paced_s" in row:
                                pages = -(-args.records // 1000)
                                row["paced_ratio"] = row["paced_s"] / (pages / 10)
                            results[arm].append(row)
                            print(phase, arm, {k: round(v, 3) if isinstance(v, float)
                                               else v for k, v in row.items()}, flush=True)
                    if phase == "unpaced":
                        summary(results, ["cold_s", "load_s", "cpu_load_s", "warm_s",
                                          "cpu_warm_s"])
            summary(results, ["paced_s", "paced_ratio", "cpu_paced_s", "paced_requests"])
            print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(before)], check=False)


if __name__ == "__main__":
    main()
