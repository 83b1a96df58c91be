"""Restore benchmark. Run: ``.venv/bin/python -m benchmarks.bench_restore``

500 work orders, each connected to 1-3 parts, an assignee and (from the third on) the one
or two orders before it, and 1,000 visits of another object pointing at 1-2 of them
(tests/fixtures/works_app.py), are mirrored to DuckDB; a "delete all" of the work
orders follows, then a second mirror run; then ``restore`` plans and applies bringing
them back, the service emulating 50 requests/s and the restore's client keeping that pace
(as ``bench_undo``).

Figures: work orders created again (goal 500), their own connections back and the
visits' links back (goal: every pair of ``as_of(when)``, new ids mapped to old), the
object equal to ``as_of(when)`` but for the new ids (the title, quantity and status of
every record), requests by purpose (planning, the restore's writes, the repointing, the
guard's), wall time and wall / ceiling (every request at 50 per s).

``--quick`` runs 50 work orders and 100 visits (a smoke run, not the reported figures).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _pairs(frames: Any, key: str, back: dict[str, str]) -> set[tuple[str, str]]:
    t = frames.tables[key]
    return {(back.get(r, r), back.get(c, c)) for r, c in
            zip(t["record_id"].astype(str), t["connected_id"].astype(str), strict=True)}


def bench_restore(orders: int = 500, visits: int = 1000, rate: float = 50.0
                  ) -> dict[str, Any]:
    import pandas as pd
    from fixtures.works_app import (
        ASSIGNEE,
        FOLLOWS,
        ORDER_PARTS,
        ORDERS,
        QTY,
        STATUS,
        TITLE,
        VISIT_ORDERS,
        VISITS,
        fill_works,
        works_document,
    )

    from svc_frames import as_of, mirror, restore
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService

    with LocalService(demo=False, app=works_document(), records=0, rate_limit=0) as svc, \
            tempfile.TemporaryDirectory() as tmp:
        fill_works(svc, orders=orders, visits=visits, people=20, parts=40)
        fast = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
        target = os.path.join(tmp, "app.duckdb")
        mirror(fast, target)
        time.sleep(0.05)
        when = pd.Timestamp.now(tz="UTC")
        time.sleep(0.05)
        for rid in read_object(fast, ORDERS, columns="keys", progress=False).main.index:
            fast.delete_record(ORDERS, str(rid))            # "Delete All"
        mirror(fast, target)
        then = as_of(target, when)

        svc.emulation.rate_limit = rate
        paced = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                       rate_limit=rate)
        svc.request_log.clear()
        t0 = time.perf_counter()
        plan = restore(paced, target, when, ORDERS)
        planned = svc.request_log.count()
        out = plan.apply(max_workers=16, progress=False)
        wall = time.perf_counter() - t0
        sent = svc.request_log.count()

        back = {new: old for old, new in plan.id_map.items()}
        now = read_object(fast, ORDERS, columns="keys", progress=False)
        was = then[ORDERS]
        own = {k: _pairs(now, k, back) == _pairs(was, k, {})
               for k in (ORDER_PARTS, ASSIGNEE, FOLLOWS)}
        visits_now = read_object(fast, VISITS, columns="keys", progress=False)
        want = _pairs(then[VISITS], VISIT_ORDERS, {})
        got = _pairs(visits_now, VISIT_ORDERS, back)
        mine = now.main.rename(index=back).sort_index()[[TITLE, QTY, STATUS]]
        same = mine.equals(was.main.sort_index()[[TITLE, QTY, STATUS]]) \
            if set(mine.index) == set(was.main.index) else False
    status = out.table["status"].value_counts().to_dict()
    return {"work_orders": orders, "visits_pointing": visits,
            "visit_links_at_when": len(want),
            "created_again": len(plan.id_map), "status": status,
            "own_connections_back": own,
            "visit_links_back": f"{len(want & got)} of {len(want)}",
            "visit_links_extra": len(got - want),
            "object_equals_as_of_but_ids": same,
            "lost": plan.lost["why"].str.split(":").str[0].value_counts().to_dict(),
            "planning_requests": planned, "report_requests": out.requests,
            "requests": sent, "rate_limit": rate, "wall_s": round(wall, 2),
            "ceiling_s": round(sent / rate, 2), "ratio": round(wall / (sent / rate), 3),
            "load_average": os.getloadavg()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    result = bench_restore(50, 100) if args.quick else bench_restore()
    print("restore of a delete-all of work orders from a DuckDB mirror:")
    for k, v in result.items():
        print(f"   {k:34} {v}")


if __name__ == "__main__":
    main()
