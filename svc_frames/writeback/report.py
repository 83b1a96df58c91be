"""The Report of a write-back run: one Outcome per record and action, request counts,
and the one-line summary printed when a run ends.

Usage::

    report = write_back(client, frames)
    report.table[report.table.status != "applied"]
    summary_line(report)        # "write_back object_3: 12 applied, 1 conflict; 14 requests"
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .plan import Action, Plan, Status

__all__ = ["Report", "Outcome", "Counter", "make_report", "dry_run_report", "summary_line"]

REPORT_COLUMNS = ["record_id", "action", "fields", "status", "message"]


@dataclass
class Report:
    """The outcome of ``write_back``: one row per record and action. A status is the
    truth: ``applied`` was acknowledged or seen on a re-read, ``failed`` was refused or
    provably not applied, ``unknown`` could be neither proven (the message says why and
    names a lost create's candidate records).

    Usage::

        report = write_back(client, frames)
        report.table[report.table.status != "applied"]
        report.requests   # {"writes": 12, "rereads": 1, "uploads": 0, "lookups": 0}
    """

    table: pd.DataFrame
    plan: Plan
    conflicts: pd.DataFrame
    requests: dict[str, int]
    dry_run: bool = False

    @property
    def counts(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.table["status"].value_counts().items()}

    @property
    def ok(self) -> bool:
        """True when every planned change was applied (or only planned, in a dry run)."""
        return bool(self.table["status"].isin(["applied", "planned"]).all())

    def __repr__(self) -> str:
        return f"Report({self.counts}, requests={self.requests})"

    def _repr_html_(self) -> str:
        return f"<p>{self!r}</p>" + self.table.head(50).to_html()


@dataclass
class Outcome:
    """How one record's write ended (a row of ``Report.table``)."""

    record_id: str
    action: Action
    fields: list[str]
    status: Status
    message: str = ""
    record: dict[str, Any] | None = None     # the server's record after the write
    new_id: str | None = None                # for creates


class Counter:
    """Requests of a run by purpose (thread-safe): writes, rereads, uploads, lookups."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.n: dict[str, int] = {"writes": 0, "rereads": 0, "uploads": 0, "lookups": 0}

    def add(self, what: str, k: int = 1) -> None:
        with self._lock:
            self.n[what] += k


def make_report(rows: Sequence[Outcome], plan: Plan, conflicts: list[dict[str, Any]],
                counter: Counter, dry_run: bool = False) -> Report:
    """The Report of ``rows`` (in plan order) with the run's conflicts and counts."""
    table = pd.DataFrame(
        [(o.new_id or o.record_id if o.action == "create" else o.record_id, o.action,
          ", ".join(o.fields), o.status, o.message) for o in rows],
        columns=REPORT_COLUMNS).astype("string")
    conf = pd.DataFrame(conflicts, columns=["record_id", "field", "loaded", "server", "new"])
    return Report(table, plan, conf, dict(counter.n), dry_run)


def dry_run_report(plan: Plan, delete_missing: bool) -> Report:
    """Every planned record as ``planned`` (deletes not asked for say so); nothing sent."""
    rows = [Outcome(rid, act, list(plan.payloads.get(rid, {})), "planned",
                    "" if act != "delete" or delete_missing
                    else "delete_missing=False: would be skipped")
            for rid, act in plan.actions.items()]
    return make_report(rows, plan, [], Counter(), dry_run=True)


def summary_line(report: Report, name: str) -> str:
    """One line for the end of a run: statuses by count, then the requests sent."""
    counts = ", ".join(f"{n} {status}" for status, n in sorted(report.counts.items())) \
        or "nothing to write"
    if report.dry_run:
        return f"write_back {name} (dry run): {counts}; nothing sent"
    sent = sum(report.requests.values())
    return f"write_back {name}: {counts}; {sent} request{'s' if sent != 1 else ''}"
