"""``svc-frames restore``: records of one object brought back to their state at a past
time from a mirror's history (``restore``)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import add_credentials, client_from_args, run_client_command
from .reversal import add_reversal_flags, run_reversal


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
    p.add_argument("--journal", default=None,
                   help="the restore's journal (resume an interrupted restore; undo it)")
    add_reversal_flags(p, changed_after="the mirror's last run")
    add_credentials(p)
    return p


def cmd_restore(args: argparse.Namespace) -> int:
    from ..restoring import restore
    from ..restoring.plan import as_mapping

    def run() -> int:
        client = client_from_args(args)
        plan = restore(client, args.mirror, args.when, args.object, args.ids,
                       delete_created=args.delete_created)
        made = f"created after {plan.when.isoformat()}" + (
            " (deleted):" if plan.delete_created else ":")
        return run_reversal(plan, [("cannot come back:", plan.lost),
                                   (made, plan.created_after)],
                            dry_run=args.dry_run, force=args.force, journal=args.journal,
                            summary=as_mapping(plan))

    return run_client_command(run)
