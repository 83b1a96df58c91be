"""What ``svc-frames undo`` and ``svc-frames restore`` share: the ``--dry-run`` and
``--force`` flags, a plan printed with what cannot come back, then sent (or not:
``--dry-run``, which prints the requests it would send), the old -> new ids and one JSON
summary line."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..undoing.reversal import Reversal


def add_reversal_flags(p: argparse.ArgumentParser, *, changed_after: str) -> None:
    """``--dry-run`` and ``--force``, the flags ``run_reversal`` is given: a cell someone
    changed after ``changed_after`` (the run, the mirror's last run) is a conflict."""
    p.add_argument("--dry-run", action="store_true", help="print the plan, send nothing")
    p.add_argument("--force", action="append", default=[], metavar="ID",
                   help="overwrite this record even where someone changed it after "
                        f"{changed_after} (repeatable)")


def run_reversal(plan: Reversal, sections: Sequence[tuple[str, pd.DataFrame]], *,
                 dry_run: bool, force: Iterable[str], journal: str | os.PathLike[str] | None,
                 summary: Mapping[str, Any]) -> int:
    """Print ``plan`` and its non-empty ``sections`` (title, table); a ``dry_run`` prints
    the changes and the requests ``apply`` would send; else apply it and print its report
    and new ids; last, one JSON line (``summary`` and what was done). 0 when every record
    was applied (or a dry run), 1 otherwise."""
    with pd.option_context("display.width", 160, "display.max_colwidth", 60,
                           "display.max_rows", 200):
        print(repr(plan))
        for title, table in sections:
            if len(table):
                print(title)
                print(table.to_string(index=False))
        if dry_run:
            print(plan.changes.to_string(index=False))
            requests = plan.requests
            print(f"it would send {requests}")
            print(json.dumps({"dry_run": True, **summary,
                              "requests": requests.as_dict()}))
            return 0
        report = plan.apply(force=force, journal=journal)
        print(report.table.to_string(index=False))
    for old, new in plan.id_map.items():
        print(f"{old} -> {new}")
    print(json.dumps({"dry_run": False, **summary, "status": report.counts,
                      "requests": report.requests, "id_map": plan.id_map}))
    return 0 if report.ok else 1
