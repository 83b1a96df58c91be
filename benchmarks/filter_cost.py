"""What long filters cost the local service: values x records -> seconds (best of 3), run
once by hand for the table in docs/local-service.md (not part of ``make bench``).

Each filter is written as a client sends it (``requests`` percent-encodes it) and made as
long as the 8 KiB request line allows. The demo data directory is made on the first run
(100,000 records take a few minutes) and reused.

Usage::

    python -m benchmarks.filter_cost 100000 /tmp/filter-cost-100k [conn unknown single multi rules]
"""

from __future__ import annotations

import json
import secrets
import sys
import time
import urllib.parse
from typing import Any

import requests

from svc_frames.server import LocalService
from svc_frames.server.protocol import MAX_REQUEST_LINE_BYTES


def line_length(path: str, filters: Any) -> int:
    query = urllib.parse.urlencode({"filters": json.dumps(filters, separators=(",", ":")),
                                    "rows_per_page": 25})
    return len(f"GET {path}?{query} HTTP/1.1")


def longest(path: str, make: Any, values: list[Any]) -> list[Any]:
    """The longest head of ``values`` that fits in the request line (bisected)."""
    lo, hi = 0, len(values)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if line_length(path, make(values[:mid])) <= MAX_REQUEST_LINE_BYTES:
            lo = mid
        else:
            hi = mid - 1
    return values[:lo]


def main(records: int, data_dir: str, cases: list[str]) -> None:
    with LocalService(demo=True, records=records, data_dir=data_dir) as svc:
        path = "/v1/objects/object_3/records"
        people = [r[0] for r in svc.store.reader.execute(
            "SELECT id FROM records WHERE obj = 'object_1'").fetchall()]

        def run(label: str, filters: Any, n: int) -> None:
            text = json.dumps(filters, separators=(",", ":"))
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                r = requests.get(svc.base_url + path, headers=svc.headers(), timeout=600,
                                 params={"filters": text, "rows_per_page": 25})
                best = min(best, time.perf_counter() - t)
                if r.status_code != 200 or best > 5:
                    break
            print(f"{label:8} values={n:5} records={svc.store.count('object_3'):6} "
                  f"line={line_length(path, filters):5} -> {r.status_code} {best:.3f}s",
                  flush=True)

        def conn(ids: list[Any]) -> Any:
            return [{"field": "field_42", "operator": "is", "value": ids}]

        def choice(field: str) -> Any:
            return lambda vals: [{"field": field, "operator": "is any", "value": vals}]

        def rules(vals: list[Any]) -> Any:
            return {"match": "or", "rules": [{"field": "field_12", "operator": "contains",
                                              "value": v} for v in vals]}

        for want in (1, 100, 10_000):
            if "conn" in cases:  # ids of records: the links' index
                ids = longest(path, conn, people[:min(want, len(people))])
                run("conn", conn(ids), len(ids))
            if "unknown" in cases:  # ids of no record: compared with the shown text
                ids = longest(path, conn, [secrets.token_hex(12) for _ in range(want)])
                run("unknown", conn(ids), len(ids))
        for want in (5, 100, 10_000):
            if "single" in cases:
                vals = longest(path, choice("field_27"),
                               ["Open", "Done", *[f"x{i}" for i in range(want - 2)]])
                run("single", choice("field_27")(vals), len(vals))
            if "multi" in cases:
                vals = longest(path, choice("field_28"),
                               ["Safety", "HVAC", *[f"x{i}" for i in range(want - 2)]])
                run("multi", choice("field_28")(vals), len(vals))
        for want in (1, 10, 50, 200):
            if "rules" in cases:
                vals = longest(path, rules, [f"q{i}" for i in range(want)])
                run("rules", rules(vals), len(vals))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2],
         sys.argv[3:] or ["conn", "unknown", "single", "multi", "rules"])
