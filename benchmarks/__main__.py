"""Run every benchmark module in this folder and print its figures: ``python -m benchmarks``.

Each ``bench_*.py`` runs in its own process (so one's memory or threads cannot skew
another's figures); extra arguments (``--quick``) are passed to each.

Usage::

    python -m benchmarks               # all, full sizes (make bench)
    python -m benchmarks --quick       # all, small sizes
    python -m benchmarks load --quick  # only bench_load
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    names = [a for a in args if not a.startswith("-")]
    flags = [a for a in args if a.startswith("-")]
    here = Path(__file__).resolve().parent
    modules = sorted(p.stem for p in here.glob("bench_*.py"))
    if names:
        modules = [m for m in modules if m in names or m.removeprefix("bench_") in names]
    failed = []
    for mod in modules:
        print(f"=== {mod} ===", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", f"benchmarks.{mod}", *flags],
                             cwd=here.parent)
        print(f"=== {mod}: {'ok' if rc == 0 else f'FAILED ({rc})'} in "
              f"{time.perf_counter() - t0:.1f}s ===\n", flush=True)
        if rc:
            failed.append(mod)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
