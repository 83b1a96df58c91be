"""The Report of a write-back run: one Outcome per record and action, request counts,
and the one-line summary printed when a run ends.

Usage::

    report = write_back(client, frames)
    report.table[report.table.status != "applied"]
    summary_line(report)        # "write_back object_3: 12 applied, 1 conflict; 14 requests"
    print(report.resume)        # how to finish a run the daily quota stopped ("" if none)
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

import pandas as pd

from ..labels import column_names
from .plan import Action, Plan, Status

__all__ = ["Report", "Outcome", "RequestCounter", "QuotaNote", "Kept", "make_report",
           "dry_run_report", "summary_line"]

REPORT_COLUMNS = ["record_id", "action", "fields", "status", "message"]


@dataclass(frozen=True)
class QuotaNote:
    """A run's requests beside the daily quota (``Report.quota``): ``needed`` (the plan's
    estimate, ``plan.requests``), ``remaining`` when the run started (None: unknown, no
    answer had told it; ``learned``: unknown before the first request, told by the
    guard's first re-read), the ``reserve`` kept, and ``stopped``: why the run stopped
    sending (None: it did not).

    Usage: ``report.quota.fits``; ``str(report.quota)``"""

    needed: int
    reserve: int
    remaining: int | None = None
    learned: bool = False
    limit: int | None = None
    reset_at: dt.datetime | None = None
    stopped: str | None = None

    @property
    def fits(self) -> bool | None:
        """Whether the plan fits above the reserve (None: the quota is not known)."""
        if self.remaining is None:
            return None
        return self.remaining - self.needed >= self.reserve

    def __str__(self) -> str:
        need = f"needs {self.needed:,} request{'s' if self.needed != 1 else ''}"
        if self.remaining is None:
            return f"{need}; the daily quota left is not known yet (the first answer tells it)"
        limit = f"limit {self.limit:,}; " if self.limit is not None else ""
        told = " (unknown before the first request; the guard's re-read told it)" \
            if self.learned else ""
        left = (f"{self.remaining:,} left of the daily quota{told} ({limit}reserve "
                f"{self.reserve:,})")
        if self.fits:
            return f"{need}; {left}: fits"
        can = max(self.remaining - self.reserve, 0)
        return (f"{need}; {left}: does not fit, about {can:,} can be sent before the "
                f"reserve, the rest waits for {when_reset(self.reset_at)}")


def when_reset(reset_at: dt.datetime | None) -> str:
    """``"the reset at 2026-11-24 00:00:00 UTC"`` (or ``"the daily reset"``)."""
    return (f"the reset at {reset_at.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
            if reset_at else "the daily reset")


@dataclass
class Kept:
    """What a run kept for an undo (``Report.kept``): ``header`` (``kept.run_header``)
    and ``entries``, record id (a create's temporary id) -> its entry."""

    header: dict[str, Any]
    entries: dict[str, dict[str, Any]] = dc_field(default_factory=dict)

    def __repr__(self) -> str:
        acts: dict[str, int] = {}
        for e in self.entries.values():
            acts[e["action"]] = acts.get(e["action"], 0) + 1
        return f"Kept({self.header.get('object_key')}: {acts})"


@dataclass
class Report:
    """The outcome of ``write_back`` (and ``push``): one row per record and action.

    A status is the truth: ``applied`` was acknowledged or seen on a re-read, ``failed``
    was refused or provably not applied, ``unknown`` could be neither proven (the message
    says why and names a lost create's candidate records); ``conflict`` (changed on the
    service since it was loaded), ``overwritten`` (another editor's value replaced ours
    after the write), ``skipped``, ``not_applied`` (not sent: the quota, a field the
    view does not take) and, in a dry run, ``planned``.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per record and action: ``record_id`` (a create's new id once created),
        ``action``, ``fields`` (the fields sent, comma separated, named as the frames
        name them: labels, or keys), ``status`` and
        ``message`` (why, when it is not ``applied``).
    plan : Plan
        The plan the run sent.
    conflicts : pandas.DataFrame
        One row per conflicting field: ``record_id``, ``field`` (its key), ``column`` (the
        field as the frames name it: its label, or its key; the stem of part columns),
        ``loaded``, ``server``, ``new``.
    requests : dict
        Requests sent by purpose: ``writes``, ``rereads``, ``uploads``, ``lookups``,
        ``checks``.
    dry_run : bool
        True when nothing was sent (``write_back(..., dry_run=True)``).
    quota : QuotaNote, optional
        The plan's requests beside the daily quota left when the run started, and why
        the run stopped sending, if it did.
    kept : Kept, optional
        What ``undo(client, report)`` needs: each applied update's fields as loaded and
        as written, each created record, each deleted record whole (a journal keeps the
        same, for an undo in another process). None for a dry run.
    field_keys : list of list of str, optional
        The keys of the fields of each row of ``table``, in its order (the table names
        them as the frames do).

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> frames.main.loc[frames.main.index[:2], "Status"] = "Done"
    >>> report = write_back(client, frames, dry_run=True)
    >>> report.counts, report.ok, report.requests["writes"]
    ({'planned': 2}, True, 0)
    >>> report.table[["action", "fields", "status"]]
       action  fields   status
    0  update  Status  planned
    1  update  Status  planned
    """

    table: pd.DataFrame
    plan: Plan
    conflicts: pd.DataFrame
    requests: dict[str, int]
    dry_run: bool = False
    quota: QuotaNote | None = None
    kept: Kept | None = None
    field_keys: list[list[str]] = dc_field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """Records by status; a run with nothing to send shows a zero, not nothing.

        ``{"applied": 0}``, or ``{"planned": 0}`` for a dry run.

        Examples
        --------
        >>> write_back(client, read_object(client, "Parts"), dry_run=True).counts
        {'planned': 0}
        """
        counts = {str(k): int(v) for k, v in self.table["status"].value_counts().items()}
        return counts or {"planned" if self.dry_run else "applied": 0}

    @property
    def nothing_to_send(self) -> str:
        """Why nothing was to be sent ("" when something was).

        The frames equal what was loaded, or no planned record was selected.

        Examples
        --------
        >>> write_back(client, read_object(client, "Parts"), dry_run=True).nothing_to_send
        'nothing to send: the frames equal what was loaded'
        """
        if len(self.table):
            return ""
        if self.plan.empty:
            return "nothing to send: the frames equal what was loaded"
        return "nothing to send: no planned record was selected"

    @property
    def ok(self) -> bool:
        """True when every planned change was applied (or only planned, in a dry run).

        Examples
        --------
        >>> frames = read_object(client, "Parts")
        >>> frames.main.loc[frames.main.index[0], "In Stock"] = 7.0
        >>> write_back(client, frames, dry_run=True).ok
        True
        """
        return bool(self.table["status"].isin(["applied", "planned"]).all())

    @property
    def resume(self) -> str:
        """How to finish a run the daily quota stopped ("" when it was not stopped).

        Examples
        --------
        >>> write_back(client, read_object(client, "Parts"), dry_run=True).resume
        ''
        """
        q = self.quota
        if q is None or not q.stopped:
            return ""
        status = self.table["status"]
        left = int((status == "not_applied").sum() + (status == "unknown").sum())
        return (f"{left} record{'s' if left != 1 else ''} not written: {q.stopped}. To "
                f"resume after {when_reset(q.reset_at)}, call write_back again with the "
                "same frames (they now hold what was applied, so only the rest is sent; "
                "the guard checks what is already there), or push(client, dir) of frames "
                "saved with to_parquet (push saves them after each run). Nothing was "
                "half-written: each record was sent whole or not at all.")

    @property
    def left_out(self) -> list[Any]:
        """The frame's columns that are no field's (analysis columns): never sent.

        Examples
        --------
        >>> frames = read_object(client, "Parts", columns="keys")
        >>> frames.main["double"] = frames.main["field_10"] * 2
        >>> write_back(client, frames, dry_run=True).left_out
        ['double']
        """
        return list(self.plan.left_out)

    def __repr__(self) -> str:
        quota = f", quota: {self.quota}" if self.quota is not None else ""
        why = f"{self.nothing_to_send}; " if self.nothing_to_send else ""
        left = f", left out (no field): {self.left_out}" if self.left_out else ""
        return f"Report({why}{self.counts}, requests={self.requests}{quota}{left})"

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


class RequestCounter:
    """Requests of a run by purpose (thread-safe): writes, rereads, uploads, lookups,
    checks, late (the live guard's re-reads of records the pace kept past the window)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.n: dict[str, int] = {"writes": 0, "rereads": 0, "uploads": 0, "lookups": 0,
                                  "checks": 0, "late": 0}

    def add(self, what: str, k: int = 1) -> None:
        with self._lock:
            self.n[what] += k


def make_report(rows: Sequence[Outcome], plan: Plan, conflicts: list[dict[str, Any]],
                counter: RequestCounter, dry_run: bool = False,
                quota: QuotaNote | None = None, kept: Kept | None = None) -> Report:
    """The Report of ``rows`` (in plan order) with the run's conflicts and counts."""
    # the fields as the frames name them (labels, or keys for frames named by key)
    names = column_names(plan.source.fields, plan.source.columns)
    table = pd.DataFrame(
        [(o.new_id or o.record_id if o.action == "create" else o.record_id, o.action,
          ", ".join(names.get(k, k) for k in o.fields), o.status, o.message) for o in rows],
        columns=REPORT_COLUMNS).astype("string")
    conf = pd.DataFrame(conflicts, columns=["record_id", "field", "loaded", "server", "new"])
    # beside the key, the field as the frames name it, as a refresh's conflicts have it
    conf.insert(2, "column", [names.get(k, k) for k in conf["field"]])
    return Report(table, plan, conf, dict(counter.n), dry_run, quota, kept,
                  [list(o.fields) for o in rows])


def dry_run_report(plan: Plan, delete_missing: bool,
                   quota: QuotaNote | None = None) -> Report:
    """Every planned record as ``planned`` (deletes not asked for say so); nothing sent.
    ``quota``: the plan's requests beside the quota left, when known."""
    rows = [Outcome(rid, act, list(plan.payloads.get(rid, {})), "planned",
                    "" if act != "delete" or delete_missing
                    else "delete_missing=False: would be skipped")
            for rid, act in plan.actions.items()]
    return make_report(rows, plan, [], RequestCounter(), dry_run=True, quota=quota)


def summary_line(report: Report, name: str) -> str:
    """One line for the end of a run: statuses by count, then the requests sent."""
    counts = report.nothing_to_send or ", ".join(
        f"{n} {status}" for status, n in sorted(report.counts.items()))
    left = report.plan.left_out
    if left:   # analysis columns: said, so a misnamed field column is not missed
        counts += f"; left out (no field): {', '.join(map(str, left))}"
    if report.dry_run:
        quota = f"; {report.quota}" if report.quota is not None else ""
        return f"write_back {name} (dry run): {counts}; nothing sent{quota}"
    sent = sum(report.requests.values())
    line = f"write_back {name}: {counts}; {sent} request{'s' if sent != 1 else ''}"
    if report.quota is not None and report.quota.stopped:
        line += (f"; stopped at the daily quota: resume after "
                 f"{when_reset(report.quota.reset_at)} (report.resume)")
    return line
