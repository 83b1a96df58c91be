"""``svc-frames push``: the edits of a saved Parquet directory written back (``push``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pandas as pd

from ..saved.push import push
from .common import add_credentials, client_from_args, run_client_command


def add_push(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "push", help="write the edits of a saved Parquet directory back to the service",
        description="Diff PATH (saved frames: written by export or to_parquet, then edited "
                    "with any tool: pandas, pyarrow, DuckDB, Polars, a spreadsheet through "
                    "CSV or xlsx) against the values it was loaded with, and send only the changes "
                    "(write_back). PATH is checked against the metadata beside it "
                    "(PATH.svc_frames.json) before any request. After a run, the as-loaded "
                    "copy follows the server, so pushing again sends nothing; PATH itself is "
                    "rewritten (new ids, server values) only with --overwrite, which new rows "
                    "need.")
    p.add_argument("path", help="directory written by export or to_parquet")
    p.add_argument("--dry-run", action="store_true", help="print the plan, send nothing")
    p.add_argument("--on-conflict", choices=["skip", "overwrite", "raise"], default="skip",
                   help="a record changed on the server since it was loaded (default: skip)")
    p.add_argument("--delete-missing", action="store_true",
                   help="delete records whose rows were removed")
    p.add_argument("--journal", default=None,
                   help="JSON-lines journal of acknowledged writes (resume a cut run)")
    p.add_argument("--view", default=None,
                   help="write through a form or inline-editing view: scene_N/view_N")
    p.add_argument("--overwrite", action="store_true",
                   help="rewrite PATH with the server's values and new ids after the run "
                        "(needed to create new rows)")
    add_credentials(p)
    return p


def cmd_push(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        target = tuple(args.view.split("/", 1)) if args.view else None
        report = push(client, args.path, dry_run=args.dry_run, on_conflict=args.on_conflict,
                      delete_missing=args.delete_missing, journal=args.journal,
                      target=target, overwrite=args.overwrite)
        estimate = report.plan.estimate_requests(
            rate=client.limiter.rate, delete_missing=args.delete_missing,
            on_conflict=args.on_conflict)
        with pd.option_context("display.width", 160, "display.max_colwidth", 60,
                               "display.max_rows", 200):
            if report.nothing_to_send:
                print(report.nothing_to_send)
            elif args.dry_run:
                print(report.plan.changes.to_string(index=False))
                # what the run would take, up front: requests and time at the pace
                print(f"{', '.join(f'{n} {a}' for a, n in report.plan.counts.items())}: "
                      f"{estimate}")
            else:
                print(report.table.to_string(index=False))
        if report.plan.left_out:
            print("left out (no field, never sent): "
                  + ", ".join(map(str, report.plan.left_out)))
        print(json.dumps({"dry_run": args.dry_run, "plan": report.plan.counts,
                          "status": report.counts, "requests": report.requests,
                          "estimate": {"requests": estimate.total,
                                       "seconds": None if estimate.seconds is None
                                       else round(estimate.seconds, 1)}}))
        return 0 if report.ok else 1

    return run_client_command(run)
