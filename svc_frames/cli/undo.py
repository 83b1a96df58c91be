"""``svc-frames undo``: one ``write_back`` run reversed from its journal (``undo``)."""

from __future__ import annotations

import argparse
from typing import Any

from ..undoing import undo
from .common import add_credentials, client_from_args, run_client_command
from .reversal import add_reversal_flags, run_reversal


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
    p.add_argument("--journal", dest="undo_journal", default=None,
                   help="the undo's own journal (resume an interrupted undo; undo it)")
    p.add_argument("--object", default=None,
                   help="refuse a journal of another object (key or name)")
    p.add_argument("--run", type=int, default=-1,
                   help="which run of a journal holding several (default -1: the last)")
    add_reversal_flags(p, changed_after="the run")
    add_credentials(p)
    return p


def cmd_undo(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        plan = undo(client, args.journal, object=args.object, run=args.run)
        return run_reversal(
            plan, [("cannot come back:", plan.lost),
                   ("not undone (the journal cannot reverse them):", plan.missing)],
            dry_run=args.dry_run, force=args.force, journal=args.undo_journal,
            summary={"plan": plan.counts, "lost": len(plan.lost),
                     "missing": len(plan.missing)})

    return run_client_command(run)
