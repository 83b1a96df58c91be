"""``svc-frames undo``: one ``write_back`` run reversed from its journal (``undo``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from ..undoing import undo
from .common import add_credentials, client_from_args, run_client_command


def add_undo(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "undo", help="reverse one write_back run from its journal",
        description="Plan the reversal of the last run JOURNAL records (write_back or push "
                    "with --journal): updates back to their values as loaded, created "
                    "records deleted, deleted records created again (new ids, printed as "
                    "old -> new). What cannot come back is printed before anything is "
                    "sent. The live guard leaves every cell someone else changed after the "
                    "run as it is (a conflict) unless --force names the record. Running "
                    "the same command again with the same --journal resumes an "
                    "interrupted undo; the undo's own journal undoes the undo.")
    p.add_argument("journal", help="the run's journal (JSON lines)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, send nothing")
    p.add_argument("--journal", dest="undo_journal", default=None,
                   help="the undo's own journal (resume an interrupted undo; undo it)")
    p.add_argument("--object", default=None,
                   help="refuse a journal of another object (key or name)")
    p.add_argument("--run", type=int, default=-1,
                   help="which run of a journal holding several (default -1: the last)")
    p.add_argument("--force", action="append", default=[], metavar="ID",
                   help="overwrite this record even where someone changed it after the "
                        "run (repeatable)")
    add_credentials(p)
    return p


def cmd_undo(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        plan = undo(client, args.journal, object=args.object, run=args.run)
        with pd.option_context("display.width", 160, "display.max_colwidth", 60,
                               "display.max_rows", 200):
            print(repr(plan))
            if len(plan.lost):
                print("cannot come back:")
                print(plan.lost.to_string(index=False))
            if len(plan.missing):
                print("not undone (the journal cannot reverse them):")
                print(plan.missing.to_string(index=False))
            if args.dry_run:
                print(plan.changes.to_string(index=False))
                print(f"it would send {plan.requests}")
                print(json.dumps({"dry_run": True, "plan": plan.counts,
                                  "requests": plan.requests.as_dict(),
                                  "lost": len(plan.lost), "missing": len(plan.missing)}))
                return 0
            report = plan.apply(force=args.force, journal=args.undo_journal)
            print(report.table.to_string(index=False))
        for old, new in plan.id_map.items():
            print(f"{old} -> {new}")
        print(json.dumps({"dry_run": False, "plan": plan.counts, "status": report.counts,
                          "requests": report.requests, "id_map": plan.id_map}))
        return 0 if report.ok else 1

    return run_client_command(run)
