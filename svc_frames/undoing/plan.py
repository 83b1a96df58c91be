"""undo: the plan reversing one write-back run, and its application through
``write_back`` (its live guard, plan, report and journal: no second writer).

Usage::

    u = undo(client, "push.jsonl")        # or undo(client, report); nothing sent
    u.changes; u.lost; u.missing          # what it would send, and what cannot come back
    report = u.apply(journal="undo.jsonl")
    u.id_map                              # deleted record's old id -> its new id
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..errors import UsageError
from ..frames import Frames, Source
from ..lookup import object_key
from ..records import Client
from ..writeback.budget import DEFAULT_QUOTA_RESERVE, check_reserve
from ..writeback.diff import diff
from ..writeback.plan import Plan, RequestEstimate
from ..writeback.report import Counter, Kept, Outcome, Report, make_report
from ..writeback.run import write_back
from .build import LOST_COLUMNS, UndoFrames
from .relink import plus, relink, relink_requests, relinks
from .runs import KeptRun, journal_runs

__all__ = ["undo", "UndoPlan"]


def undo(client: Client, report_or_journal: Report | str | os.PathLike[str], *,
         object: str | None = None, run: int = -1) -> UndoPlan:
    """Plan the reversal of one ``write_back`` run; nothing is sent.

    Each applied update goes back to its value as loaded, each created record is
    deleted, each deleted record is created again (a new id: ``UndoPlan.id_map`` after
    ``apply``; records of the object that connected to it are pointed at the new one).
    ``UndoPlan.apply`` sends it through ``write_back`` and its live guard: a cell someone
    else changed after the run is a ``conflict``, reported and left as it is unless
    forced for that record. What cannot come back is listed before any write
    (``UndoPlan.lost``: computed fields, auto-increment numbers, passwords, fields no
    longer in the schema, files), and so are the run's writes the report or journal
    cannot reverse (``UndoPlan.missing``: a journal cut short, an outcome never known,
    a journal of an older svc_frames). An undo is a run like any other: it can be undone.

    Parameters
    ----------
    client : Client
        The application the run wrote to.
    report_or_journal : Report or str or os.PathLike
        The run's Report (``write_back``'s return), or its journal file
        (``write_back(..., journal=...)``), read in this or any other process.
    object : str, optional
        The object the run is expected to have written (key or name): a journal of
        another object is refused.
    run : int, default -1
        Which run of a journal holding several (runs end where ``write_back`` settled
        them): -1 the last.

    Returns
    -------
    UndoPlan
        ``plan`` (a write-back Plan), ``changes``, ``lost``, ``missing``, ``apply()``.

    Raises
    ------
    UsageError
        Before any write: a journal or report of another application or object (naming
        both), a journal that is not there, holds no write, or was written by an older
        svc_frames that kept no values as loaded (naming its writes), a dry run's report;
        the object no longer in the application.

    Examples
    --------
    >>> parts = read_object(client, "Parts", columns="keys")
    >>> ids = parts.main.index[:3]
    >>> was = parts.main.loc[ids, "field_10"].tolist()
    >>> parts.main.loc[ids, "field_10"] = 0.0          # a mistaken bulk edit
    >>> report = write_back(client, parts)
    >>> u = undo(client, report)
    >>> u
    UndoPlan(object_2: 3 update, 0 create, 0 delete; nothing lost, nothing missing)
    >>> u.changes[["field", "old", "new"]].iloc[0].tolist() == ["field_10", 0.0, was[0]]
    True
    >>> u.apply().counts
    {'applied': 3}
    >>> read_object(client, "Parts", columns="keys").main.loc[ids, "field_10"].tolist() == was
    True
    """
    kept = KeptRun.of(report_or_journal, run)
    header = kept.header
    app, obj = str(header.get("app_id") or ""), str(header.get("object_key") or "")
    name = header.get("object_name") or obj
    if app and app != client.app_id:
        raise UsageError(f"{kept.where} is of application {app} (object {name}), not of "
                         f"the client's application {client.app_id}: nothing was sent")
    schema = client.schema()
    if object is not None:
        want = object_key(schema, object)
        if want != obj:
            raise UsageError(f"{kept.where} wrote to {obj} ({name}), not to {want} "
                             f"({schema.object_name(want) or want}): nothing was sent")
    fields = schema.object_fields(obj) if schema.available else None
    if fields is None and schema.available:
        raise UsageError(f"{kept.where} wrote to {obj} ({name}), which is no longer in the "
                         "application: nothing can be undone")
    if fields is None:   # no schema to check against: the fields the run knew
        fields = Source.from_dict(header["source"]).fields
    inbound = [c for c in schema.connections() if c.to_object == obj and c.from_object != obj]
    built = UndoFrames.build(kept, fields, inbound, _object_records(client, obj))
    plan = diff(built.edited, built.base)
    # the records it deletes: other objects' links to them are read first (plan.requests)
    plan.link_fields = len(inbound)
    return UndoPlan(client, kept, built, plan)


def _object_records(client: Client, obj: str) -> int:
    """The object's records now, with room for those created before the undo runs: the
    guard's re-reads list as many ids per request as the service's filter limit allows
    over an object of that size (``plan.reread_chunk``), not the few it allows over one
    of unknown size. One request."""
    total = client.get_page(obj, rows_per_page=1).get("total_records")
    n = int(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else 0
    return int(n * 1.25) + 100


@dataclass
class UndoPlan:
    """The reversal of one write-back run, made by ``undo``: nothing is sent until ``apply``.

    Attributes
    ----------
    client : Client
        Where ``apply`` sends.
    run : KeptRun
        The run reversed, as the report or journal kept it (``run.missing``).
    frames : UndoFrames
        The undo's frames, what cannot come back and the links to repoint.
    plan : Plan
        The write-back plan (``plan.changes``, ``plan.requests``); ``review(u.plan,
        client, u.edited, delete_missing=True)`` shows it in a notebook, and
        ``write_back(client, u.edited, plan=u.plan, delete_missing=True)`` sends it.
    edited, base : Frames
        The records as they were before the run (what the undo writes) and as the run
        left them (what the guard expects on the service), keys-mode columns.
    id_map : dict
        After ``apply``: each re-created record's old id -> its new id.
    reports : list of Report
        The ``write_back`` runs ``apply`` made.

    Examples
    --------
    >>> parts = read_object(client, "Parts", columns="keys")
    >>> ids = parts.main.index[:2]
    >>> parts.main.loc[ids, "field_10"] = 0.0              # a mistaken bulk edit
    >>> u = undo(client, write_back(client, parts))
    >>> isinstance(u, UndoPlan), u.counts
    (True, {'update': 2, 'create': 0, 'delete': 0})
    >>> u.requests.writes, u.apply().counts
    (2, {'applied': 2})
    """

    client: Client
    run: KeptRun
    frames: UndoFrames
    plan: Plan
    id_map: dict[str, str] = field(default_factory=dict)
    reports: list[Report] = field(default_factory=list)

    @property
    def edited(self) -> Frames:
        """The records as they were before the run: what the undo writes.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> ids = parts.main.index[:2]
        >>> names = parts.main.loc[ids, "field_8"].tolist()
        >>> parts.main.loc[ids, "field_8"] = ["renamed by mistake 1", "renamed by mistake 2"]
        >>> u = undo(client, write_back(client, parts))
        >>> u.edited.main.loc[ids, "field_8"].tolist() == names
        True
        """
        return self.frames.edited

    @property
    def base(self) -> Frames:
        """The records as the run left them: what the live guard expects on the service.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> rid = parts.main.index[0]
        >>> parts.main.at[rid, "field_10"] = 99.0
        >>> u = undo(client, write_back(client, parts))
        >>> u.base.main.at[rid, "field_10"]
        np.float64(99.0)
        """
        return self.frames.base

    @property
    def changes(self) -> pd.DataFrame:
        """One row per cell the undo writes (``diff``'s ``changes``).

        A re-created record's row is named by its temporary id; ``undoes`` gives the old id.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> gone = parts.main.index[-1]
        >>> parts.main = parts.main.drop([gone])            # a record deleted
        >>> u = undo(client, write_back(client, parts, delete_missing=True))
        >>> created = u.changes[u.changes["action"] == "create"]
        >>> set(created["undoes"]) == {gone}
        True
        """
        ch = self.plan.changes.copy()
        old = self.frames.old_ids
        ch["undoes"] = pd.array([old.get(str(r), str(r)) for r in ch["record_id"].tolist()],
                                dtype="string")
        return ch

    @property
    def lost(self) -> pd.DataFrame:
        """What cannot come back (``record_id, action, field, why``), said before any write.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> gone = parts.main.index[-1]
        >>> parts.main = parts.main.drop([gone])
        >>> u = undo(client, write_back(client, parts, delete_missing=True))
        >>> u.lost[["field", "why"]].iloc[0].tolist()
        ['field_11', 'an auto-increment number: the re-created record gets a new one']
        """
        return pd.DataFrame([(x.record_id, x.action, x.field, x.why)
                             for x in self.frames.lost], columns=LOST_COLUMNS).astype("string")

    @property
    def missing(self) -> pd.DataFrame:
        """The run's writes the report or journal cannot reverse (``record_id, action, why``).

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> parts.main.loc[parts.main.index[:2], "field_10"] = 0.0
        >>> undo(client, write_back(client, parts)).missing.empty   # a whole report
        True
        """
        return pd.DataFrame([(m.record_id, m.action, m.why) for m in self.run.missing],
                            columns=["record_id", "action", "why"]).astype("string")

    @property
    def counts(self) -> dict[str, int]:
        """Records by the action the undo sends: ``{"update": n, "create": n, "delete": n}``.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> parts.main.loc[parts.main.index[:3], "field_10"] = 0.0
        >>> _ = add_rows(parts, [{"field_8": "made by mistake"}])
        >>> undo(client, write_back(client, parts)).counts
        {'update': 3, 'create': 0, 'delete': 1}
        """
        return self.plan.counts

    def __repr__(self) -> str:
        c = self.plan.counts
        lost = f"{len(self.frames.lost)} lost" if self.frames.lost else "nothing lost"
        miss = f"{len(self.run.missing)} missing" if self.run.missing else "nothing missing"
        relink = f", {len(self.frames.relinks)} to point at new ids" \
            if self.frames.relinks else ""
        return (f"UndoPlan({self.frames.source.object_key}: {c['update']} update, "
                f"{c['create']} create, {c['delete']} delete{relink}; {lost}, {miss})")

    def apply(self, *, force: Iterable[str] = (), journal: str | os.PathLike[str] | None = None,
              **write_options: Any) -> Report:
        """Send the undo through ``write_back``, then point links at re-created records.

        The undo's plan goes through ``write_back`` (deletes included); then the records
        that connected to a re-created record are pointed at its new id.

        Parameters
        ----------
        force : iterable of str
            Records (ids in ``plan.record_ids``) to write even where someone else changed
            them after the run (``on_conflict="overwrite"`` for them alone); every other
            record in conflict is left as it is and reported ``conflict``.
        journal : str or os.PathLike, optional
            ``write_back``'s journal: calling ``apply`` again (in this process, or
            ``undo(...).apply(journal=...)`` in another) resumes an interrupted undo
            without sending anything twice; the journal is also what an undo of this
            undo reads. The repointing of links to re-created records is journaled
            beside it (the same path + ``.links``): an undo of the undo needs none of it
            (deleting a re-created record drops the links made to it).
        **write_options
            Other options of ``write_back`` (``guard``, ``guard_window``, ``progress``,
            ``max_workers``, ``quota_reserve``: the undo's own writes stop at the reserve
            plus what the repointing will need, which stops at the reserve).

        Returns
        -------
        Report
            One row per record of the runs made (the undo, then any repointing), the
            conflicts, the requests summed; ``report.kept`` is what an undo of the undo
            needs. ``id_map`` holds the new ids.

        Raises
        ------
        UsageError
            A ``force`` id not in the plan, or an option ``write_back`` refuses
            (``on_conflict``, ``delete_missing``, ``plan`` are the undo's own).

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> rid = parts.main["field_10"].dropna().index[0]
        >>> was = parts.main.at[rid, "field_10"]
        >>> parts.main.at[rid, "field_10"] = was + 1
        >>> u = undo(client, write_back(client, parts))
        >>> u.apply(journal=tmp_path / "undo.jsonl").counts
        {'applied': 1}
        >>> bool(read_object(client, "Parts", columns="keys").main.at[rid, "field_10"] == was)
        True
        """
        for opt in ("on_conflict", "delete_missing", "plan", "base", "dry_run"):
            if opt in write_options:
                raise UsageError(f"UndoPlan.apply sets {opt} itself: pass force=[ids] to "
                                 "overwrite records in conflict")
        forced = list(dict.fromkeys(force))
        remaining = self.plan if not self.reports else diff(self.edited)
        unknown = [r for r in forced if r not in self.plan.actions]
        if unknown:
            raise UsageError(f"force: {unknown[:5]} are not records of the undo plan "
                             f"(its record_ids)")
        runs: list[Report] = []
        done = self._journaled(journal) if journal is not None else {}
        if any(r in done for r in remaining.record_ids):
            # an apply cut short after a run of its journal: those records are done
            runs.append(self._done_report(done, remaining))
            remaining = remaining.select([r for r in remaining.record_ids if r not in done])
        reserve = check_reserve(write_options.pop("quota_reserve", DEFAULT_QUOTA_RESERVE))
        # the repointing after the creates is kept room for: the undo's own runs stop at
        # the reserve plus what the repointing will need
        kept_back = relink_requests(self.client, self.frames).total
        rest = [r for r in remaining.record_ids if r not in set(forced)]
        sends: list[tuple[list[str], Literal["skip", "overwrite"]]] = [
            (rest, "skip"), (forced, "overwrite")]
        for ids, on_conflict in sends:
            part = remaining.select(ids) if len(ids) != len(remaining.actions) else remaining
            if part.empty:
                continue
            runs.append(write_back(self.client, self.edited, plan=part,
                                   delete_missing=True, on_conflict=on_conflict,
                                   journal=journal, quota_reserve=reserve + kept_back,
                                   **write_options))
        for r in runs:
            self._learn_ids(r)
        undone = len(runs)
        links = None if journal is None else os.fspath(journal) + ".links"
        reads = 0
        for obj, lists in relinks(self.frames, self.id_map).items():
            got, n = relink(self.client, self.frames.source, obj, lists, links, reserve,
                            write_options)
            runs += got
            reads += n
        self.reports.extend(runs)
        out = _combined(runs, self.plan, undone)
        if reads:
            out.requests["rereads"] = out.requests.get("rereads", 0) + reads
        return out

    @property
    def requests(self) -> RequestEstimate:
        """The requests ``apply`` sends, by purpose (the live guard at the client's pace).

        The undo's write-back plan, its deletes and the reads of other objects' links to
        the records it deletes included (``plan.requests`` counts none of its deletes,
        since ``write_back`` sends them only with ``delete_missing=True``), and the
        repointing of the records connected to re-created ones (one ``write_back`` per
        object: a write per record, the guard's re-reads and checks). Upper bounds as
        ``plan.requests``'s are; a list someone changes while the undo runs adds a read
        and a write for that record.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> _ = add_rows(parts, [{"field_8": "made by mistake"}])
        >>> u = undo(client, write_back(client, parts))
        >>> est = u.requests        # its delete, and the read of the links to that part
        >>> est.writes, est.lookups
        (1, 1)
        """
        est = self.plan.estimate_requests(delete_missing=True,
                                          rate=self.client.limiter.rate)
        return plus(est, relink_requests(self.client, self.frames))

    def _journaled(self, journal: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
        """The records of this undo that a run of its journal wrote (an apply cut short
        after a run settled, as the repointing's or a second send's, in this process or
        another): record id -> the entry its acknowledgement kept. A run is this undo's
        when each record it wrote is one of the plan's, with the plan's action (a
        re-created record by its temporary id, made in the same order from the same
        run) and, for an update, only fields the plan sends."""
        path = Path(journal)
        if not path.is_file():
            return {}
        own = self.frames.source
        out: dict[str, dict[str, Any]] = {}
        for run in journal_runs(path):
            if (run.header.get("app_id"), run.header.get("object_key")) != (
                    self.client.app_id, own.object_key):
                continue
            mine = all(self.plan.actions.get(rid) == e.get("action") and (
                e.get("action") != "update"
                or set(e.get("written") or {}) <= set(self.plan.payloads.get(rid, {})))
                for rid, e in run.entries.items())
            if mine:
                out.update(run.entries)
        return out

    def _done_report(self, done: Mapping[str, Mapping[str, Any]], plan: Plan) -> Report:
        """The Report of the records a run of the journal wrote already (none sent)."""
        rows = [Outcome(rid, plan.actions[rid], list(plan.payloads.get(rid, {})),
                        "applied", "already applied (journal)", None,
                        str(done[rid].get("new_id")) if done[rid].get("new_id") else None)
                for rid in plan.record_ids if rid in done]
        kept = Kept(dict(self.run.header), {r: dict(done[r]) for r in plan.record_ids
                                            if r in done})
        report = make_report(rows, plan, [], Counter(), kept=kept)
        self._learn_ids(report)
        return report

    def _learn_ids(self, report: Report) -> None:
        entries = report.kept.entries if report.kept is not None else {}
        for tmp, old in self.frames.old_ids.items():
            new = (entries.get(tmp) or {}).get("new_id")
            if new:
                self.id_map[old] = str(new)


def _combined(runs: list[Report], plan: Plan, undone: int) -> Report:
    """One Report of the undo's runs: their rows, conflicts and requests; what an undo of
    it needs is the first ``undone`` runs' (the repointing runs need no reversal: deleting
    a re-created record drops the links made to it)."""
    if not runs:
        return write_back_nothing(plan)
    if len(runs) == 1:
        return runs[0]
    table = pd.concat([r.table for r in runs], ignore_index=True)
    conflicts = pd.concat([r.conflicts for r in runs], ignore_index=True)
    requests: dict[str, int] = {}
    for r in runs:
        for k, n in r.requests.items():
            requests[k] = requests.get(k, 0) + n
    entries: dict[str, dict[str, Any]] = {}
    header: Mapping[str, Any] = {}
    for r in runs[:undone]:
        if r.kept is not None:
            header = header or r.kept.header
            entries.update(r.kept.entries)
    kept = Kept(dict(header), entries) if header else None
    return Report(table, plan, conflicts, requests, False, runs[-1].quota, kept)


def write_back_nothing(plan: Plan) -> Report:
    """The Report of an undo with nothing left to send."""
    return make_report([], plan, [], Counter(), kept=None)
