"""Local-service benchmarks (emulation off): generation speed and 1000-record pages per second.

Figures printed:
* seconds to generate N demo work orders (100,000; 10,000 with ``--quick``);
* pages of 1000 records of the widest demo object (``object_3``, every field kind)
  served per second over loopback HTTP, by one client and by two concurrent clients;
* the same for ``format=raw`` pages (what loads ask for after page 1);
* the size of one such page (each format).

Usage::

    .venv/bin/python -m benchmarks.bench_server [--quick]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from svc_frames.server import LocalService, open_state


def bench_generate(n: int) -> float:
    tmp = tempfile.mkdtemp(prefix="bench_gen_")
    try:
        t0 = time.perf_counter()
        state = open_state(tmp, records=n, seed=0)
        elapsed = time.perf_counter() - t0
        assert state.counts["object_3"] == n
        state.store.close()
        return elapsed
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def bench_pages(records: int, pages: int, fmt: str = "both") -> tuple[float, float, int]:
    with LocalService(demo=True, records=records, rate_limit=0) as svc:
        url = f"{svc.base_url}/v1/objects/object_3/records"
        total_pages = -(-records // 1000)

        def fetch(session: requests.Session, i: int) -> int:
            r = session.get(url, headers=svc.headers(), timeout=60,
                            params={"page": i % total_pages + 1, "rows_per_page": 1000,
                                    "format": fmt})
            r.raise_for_status()
            return len(r.content)

        s = requests.Session()
        size = fetch(s, 0)  # warm up
        t0 = time.perf_counter()
        for i in range(pages):
            fetch(s, i)
        one = pages / (time.perf_counter() - t0)
        sessions = [requests.Session(), requests.Session()]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda i: fetch(sessions[i % 2], i), range(pages)))
        two = pages / (time.perf_counter() - t0)
        return one, two, size


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    quick = "--quick" in args
    n = 10_000 if quick else 100_000
    secs = bench_generate(n)
    print(f"generate {n:,} demo work orders: {secs:.1f} s ({n / secs:,.0f} records/s)")
    for fmt in ("both", "raw"):
        one, two, size = bench_pages(5_000 if quick else 20_000, 10 if quick else 30, fmt)
        print(f"1000-record pages of object_3 (widest), format={fmt}: {one:.1f} pages/s "
              f"(1 client), {two:.1f} pages/s (2 clients); page size {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
