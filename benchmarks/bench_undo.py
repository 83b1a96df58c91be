"""Undo benchmark. Run: ``.venv/bin/python -m benchmarks.bench_undo``

A 2,000-record bulk edit (a title overwritten) is undone after another user changed 50 of
those records on the application's pages; the service emulates 50 requests/s and the
undo's client keeps that pace (as ``bench_writeback``'s apply benchmark does).

Figures: records reverted (goal 1,950), conflicts (goal 50), the other user's values
overwritten, by the report and by a clean re-read (goal 0); requests per reverted record
besides the guard's re-reads and checks (goal <= 1.05; the undo's planning included);
the guard's requests; wall time / ceiling, the ceiling being every request the undo sent
at 50 requests/s (goal <= 1.15).

``--quick`` runs 200 records and 5 changes by the other user (a smoke run, not the
reported figures).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

OBJ = "object_3"   # the demo's work orders
TITLE = "field_12"


def bench_undo(records: int = 2000, theirs: int = 50, rate: float = 50.0) -> dict[str, Any]:
    from svc_frames.loaders import read_object
    from svc_frames.records import Client
    from svc_frames.server import LocalService
    from svc_frames.undoing import undo
    from svc_frames.writeback import write_back

    with LocalService(demo=True, records=records + 100, rate_limit=0, seed=5) as svc:
        fast = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
        frames = read_object(fast, OBJ, columns="keys", progress=False)
        ids = frames.main.index[:records].tolist()
        loaded = frames.main.loc[ids, TITLE].copy()
        frames.main.loc[ids, TITLE] = "bulk edit gone wrong"
        report = write_back(fast, frames, progress=False)
        assert (report.table["status"] == "applied").sum() == records, report
        other = ids[::max(1, records // theirs)][:theirs]
        for rid in other:
            svc.pages.update_record(OBJ, rid, {TITLE: f"fixed by hand {rid[-6:]}"})

        svc.emulation.rate_limit = rate
        paced = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                       rate_limit=rate)
        svc.request_log.clear()
        t0 = time.perf_counter()
        u = undo(paced, report)
        planned = svc.request_log.count()
        out = u.apply(max_workers=16, progress=False)
        wall = time.perf_counter() - t0
        sent = svc.request_log.count()

        now = read_object(fast, OBJ, columns="keys", progress=False).main
        status = out.table.set_index("record_id")["status"]
        reverted = int((status == "applied").sum())
        held_theirs = sum(now.at[r, TITLE] == f"fixed by hand {r[-6:]}" for r in other)
        back = sum(now.at[r, TITLE] == loaded.at[r] for r in ids if r not in set(other))
    guard = sum(out.requests.get(k, 0) for k in ("rereads", "checks", "late"))
    ceiling = sent / rate
    return {"records": records, "changed_by_another_user": theirs,
            "reverted": reverted, "conflicts": int((status == "conflict").sum()),
            "overwritten_reported": int((status == "overwritten").sum()),
            "overwritten_on_server": len(other) - held_theirs,
            "reverted_on_server": back,
            "requests": sent, "planning_requests": planned, "report_requests": out.requests,
            "requests_per_reverted_besides_guard": round((sent - guard) / max(reverted, 1), 4),
            "guard_requests": guard, "rate_limit": rate, "wall_s": round(wall, 2),
            "ceiling_s": round(ceiling, 2), "ratio": round(wall / ceiling, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    args = ap.parse_args()
    result = bench_undo(200, 5) if args.quick else bench_undo()
    print("undo of a bulk edit after another user's edits:")
    for k, v in result.items():
        print(f"   {k:38} {v}")


if __name__ == "__main__":
    main()
