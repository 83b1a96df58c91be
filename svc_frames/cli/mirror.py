"""``svc-frames mirror``: a DuckDB file, PostgreSQL database or Parquet directory brought
up to date with the application (``mirror``), cron-friendly."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import add_credentials, client_from_args, run_client_command


def add_mirror(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "mirror", help="bring a DuckDB file, PostgreSQL database or Parquet directory up "
                       "to date with the application, every version of every record kept",
        description="Mirror the application into TARGET (a DuckDB file path, a directory "
                    "of Parquet datasets, or postgresql://...): the current state as tables, and every version "
                    "of every record in <table>__history; deletions and schema changes "
                    "followed (docs/mirror.md). Prints one summary line (--json: the "
                    "report as JSON); exit 0 on success, 2 on bad input, 1 when the "
                    "service or the target failed, 130 when interrupted (nothing half-"
                    "written). Cron-friendly.")
    p.add_argument("--to", required=True, dest="to", metavar="TARGET",
                   help="a DuckDB file, a directory (dir/) or postgresql://user@host/db")
    p.add_argument("--objects", nargs="+", default=None, metavar="OBJECT",
                   help="the objects to mirror, by key or name (default: all)")
    p.add_argument("--schema", choices=["stop", "evolve"], default="stop",
                   help="a field of another kind: refuse the run (stop, default) or keep "
                        "both kinds in the history (evolve)")
    p.add_argument("--sweep-every", type=int, default=10,
                   help="every Nth run lists every record of an object (default 10; 0: "
                        "never)")
    p.add_argument("--wait", type=float, default=0.0,
                   help="seconds to wait for another run holding the target (default 0)")
    p.add_argument("--repair", action="store_true",
                   help="write again tables edited by hand (from the service)")
    p.add_argument("--assets", action="store_true",
                   help="keep a copy of every file and image in the target (svc_assets)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON line")
    add_credentials(p)
    return p


def cmd_mirror(args: argparse.Namespace) -> int:
    from ..mirroring.past import last_run
    from ..mirroring.run import mirror

    def run() -> int:
        client = client_from_args(args)
        try:
            report = mirror(client, args.to, args.objects, schema=args.schema,
                            sweep_every=args.sweep_every, wait=args.wait, repair=args.repair,
                            assets=args.assets)
        except KeyboardInterrupt:
            # the run's one transaction was rolled back, or had committed just before
            print(f"mirror interrupted: {args.to} holds run {last_run(args.to)} whole; "
                  "nothing half-written", file=sys.stderr)
            return 130
        print(report.to_json() if args.json else str(report))
        return 0

    return run_client_command(run)
