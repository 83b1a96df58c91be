"""``svc-frames restore``: records of one object brought back to their state at a past
time from a mirror's history (``restore``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from .common import add_credentials, client_from_args, run_client_command


def add_restore(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "restore", help="bring records of one object back to their state at a past time, "
                        "from a mirror",
        description="Plan, from the mirror's history, bringing the records of OBJECT back "
                    "to their state at TIME: changed cells reverted, deleted records "
                    "created again (new ids, printed as old -> new) with their "
                    "connections in both directions, records created since listed "
                    "(deleted with --delete-created). What cannot come back is printed "
                    "before anything is sent. The live guard leaves every cell someone "
                    "changed after the mirror's last run as it is (a conflict) unless "
                    "--force names the record. The same command again with the same "
                    "--journal resumes an interrupted restore (docs/restore.md). Exit 0 "
                    "done, 2 bad input (nothing sent), 1 conflicts or failures.")
    p.add_argument("--mirror", required=True, metavar="TARGET",
                   help="the mirror: a DuckDB file, a directory (dir/) or postgresql://...")
    p.add_argument("--object", required=True, help="the object, by key or name")
    p.add_argument("--when", required=True, metavar="TIME",
                   help="the time to go back to (ISO; a naive time is UTC)")
    p.add_argument("--ids", nargs="+", default=None, metavar="ID",
                   help="only these records (default: every record)")
    p.add_argument("--delete-created", action="store_true",
                   help="delete the records created after TIME")
    p.add_argument("--dry-run", action="store_true", help="print the plan, send nothing")
    p.add_argument("--journal", default=None,
                   help="the restore's journal (resume an interrupted restore; undo it)")
    p.add_argument("--force", action="append", default=[], metavar="ID",
                   help="overwrite this record even where someone changed it after the "
                        "mirror's last run (repeatable)")
    add_credentials(p)
    return p


def cmd_restore(args: argparse.Namespace) -> int:
    from ..restoring import restore
    from ..restoring.plan import as_mapping

    def run() -> int:
        client = client_from_args(args)
        plan = restore(client, args.mirror, args.when, args.object, args.ids,
                       delete_created=args.delete_created)
        with pd.option_context("display.width", 160, "display.max_colwidth", 60,
                               "display.max_rows", 200):
            print(repr(plan))
            if len(plan.lost):
                print("cannot come back:")
                print(plan.lost.to_string(index=False))
            if len(plan.created_after):
                print(f"created after {plan.when.isoformat()}"
                      f"{' (deleted)' if plan.delete_created else ''}:")
                print(plan.created_after.to_string(index=False))
            if args.dry_run:
                print(plan.changes.to_string(index=False))
                print(json.dumps({"dry_run": True, **as_mapping(plan)}))
                return 0
            report = plan.apply(force=args.force, journal=args.journal)
            print(report.table.to_string(index=False))
        for old, new in plan.id_map.items():
            print(f"{old} -> {new}")
        print(json.dumps({"dry_run": False, **as_mapping(plan), "status": report.counts,
                          "requests": report.requests, "id_map": plan.id_map}))
        return 0 if report.ok else 1

    return run_client_command(run)
