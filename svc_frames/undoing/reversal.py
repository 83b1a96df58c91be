"""What undo and restore share: a plan of frames (the records as they should be, and as
they are expected on the service) sent through ``write_back`` and its live guard, deletes
included; the records re-created get new ids (``id_map``), a re-created record that
connected to another created after it with its new id (``order.py``), then the records
that connected to them are pointed at the new ids (``relink.py``: one more
``write_back`` per object, a list changed meanwhile read again; a cycle's one link).

Usage::

    class UndoPlan(Reversal): ...          # adds what it reverses and how it reads
    plan.apply(force=[ids], journal="x.jsonl")
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import pandas as pd

from ..errors import UsageError
from ..frames import Frames, Source
from ..records import Client
from ..writeback.budget import DEFAULT_QUOTA_RESERVE, check_reserve
from ..writeback.depends import plan_with_new_ids
from ..writeback.diff import diff
from ..writeback.gate import QuotaGate
from ..writeback.kept import inbound_connections
from ..writeback.plan import Plan, RequestEstimate
from ..writeback.report import Kept, Outcome, Report, RequestCounter, make_report
from ..writeback.run import write_back
from .build import LOST_COLUMNS, UndoFrames
from .relink import Lists, lists_frames, plus, relink, relink_requests, relinks
from .runs import journal_runs

__all__ = ["Reversal", "write_back_nothing"]


@dataclass
class Reversal:
    """A plan of frames sent through ``write_back`` (``UndoPlan``, ``RestorePlan``):
    nothing is sent until ``apply``.

    Attributes
    ----------
    client : Client
        Where ``apply`` sends.
    frames : UndoFrames
        The frames, what cannot come back and the links to repoint.
    plan : Plan
        The write-back plan (``plan.changes``, ``plan.requests``); ``review(p.plan,
        client, p.edited, delete_missing=True)`` shows it in a notebook.
    edited, base : Frames
        The records as they should be (what is written) and as they are expected on the
        service (what the guard compares with), keys-mode columns.
    id_map : dict
        After ``apply``: each re-created record's old id -> its new id.
    reports : list of Report
        The ``write_back`` runs ``apply`` made.
    """

    #: what the plan is called in messages, and the column of ``changes`` naming the old
    #: id a re-created record's row stands for
    WHAT: ClassVar[str] = "undo"
    OLD_ID_COLUMN: ClassVar[str] = "undoes"

    client: Client
    frames: UndoFrames
    plan: Plan
    id_map: dict[str, str] = field(default_factory=dict)
    reports: list[Report] = field(default_factory=list)

    @property
    def edited(self) -> Frames:
        """The records as they should be: what the plan writes.

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
        """The records as expected on the service: what the live guard compares with.

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
        """One row per cell the plan writes (``diff``'s ``changes``).

        A re-created record's row is named by its temporary id; the ``OLD_ID_COLUMN``
        column (an undo's ``undoes``, a restore's ``restores``) gives the old id.

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
        ch[self.OLD_ID_COLUMN] = pd.array(
            [old.get(str(r), str(r)) for r in ch["record_id"].tolist()], dtype="string")
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
    def counts(self) -> dict[str, int]:
        """Records by the action the plan sends: ``{"update": n, "create": n, "delete": n}``.

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> parts.main.loc[parts.main.index[:3], "field_10"] = 0.0
        >>> _ = add_rows(parts, [{"field_8": "made by mistake"}])
        >>> undo(client, write_back(client, parts)).counts
        {'update': 3, 'create': 0, 'delete': 1}
        """
        return self.plan.counts

    @property
    def requests(self) -> RequestEstimate:
        """The requests ``apply`` sends, by purpose (the live guard at the client's pace).

        The write-back plan, its deletes and the reads of other objects' links to the
        records it deletes included (``plan.requests`` counts none of its deletes, since
        ``write_back`` sends them only with ``delete_missing=True``), and the repointing
        of the records connected to re-created ones (one ``write_back`` per object: a
        write per record, the guard's re-reads and checks). Upper bounds as
        ``plan.requests``'s are; a list someone changes while the plan runs adds a read
        and a write for that record (a restore also reads the lists it repoints just
        before: ``lookups``).

        Examples
        --------
        >>> parts = read_object(client, "Parts", columns="keys")
        >>> _ = add_rows(parts, [{"field_8": "made by mistake"}])
        >>> u = undo(client, write_back(client, parts))
        >>> est = u.requests        # its delete, and the read of the links to that part
        >>> est.writes, est.lookups
        (1, 1)
        """
        links = self.plan.link_fields
        if links is None and "delete" in self.plan.actions.values():
            links = len(inbound_connections(self.client, self.frames.source.object_key))
        est = self.plan.estimate_requests(delete_missing=True, link_fields=links,
                                          rate=self.client.limiter.rate)
        est = plus(est, relink_requests(self.client, self.frames))
        reads = self._relink_read_requests()
        return dataclasses.replace(est, lookups=est.lookups + reads) if reads else est

    def apply(self, *, force: Iterable[str] = (), journal: str | os.PathLike[str] | None = None,
              **write_options: Any) -> Report:
        """Send the plan through ``write_back``, then point links at re-created records.

        The plan goes through ``write_back`` (deletes included); then the records that
        connected to a re-created record are pointed at its new id (``relink.py``: from
        the lists ``_relink_lists`` gives, a list changed meanwhile read again).

        Parameters
        ----------
        force : iterable of str
            Records (ids in ``plan.record_ids``) to write even where someone else changed
            them after the run (``on_conflict="overwrite"`` for them alone); every other
            record in conflict is left as it is and reported ``conflict``.
        journal : str or os.PathLike, optional
            ``write_back``'s journal: calling ``apply`` again (in this process, or the
            same plan made again and applied with this journal in another) resumes an
            interrupted run without sending anything twice (what any run of the journal
            already wrote is skipped, a re-created record included); the journal is also
            what an undo of this run reads. The repointing of links to re-created
            records is journaled beside it (the same path + ``.links``): an undo of the
            undo needs none of it (deleting a re-created record drops the links made to
            it).
        **write_options
            Other options of ``write_back`` (``guard``, ``guard_window``, ``progress``,
            ``max_workers``, ``quota_reserve``: the plan's own writes stop at the reserve
            plus what the repointing will need, which stops at the reserve).

        Returns
        -------
        Report
            One row per record of the runs made (the plan, then any repointing), the
            conflicts, the requests summed; ``report.kept`` is what an undo of it
            needs. ``id_map`` holds the new ids.

        Raises
        ------
        UsageError
            A ``force`` id not in the plan, or an option ``write_back`` refuses
            (``on_conflict``, ``delete_missing``, ``plan`` are the plan's own).

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
                raise UsageError(f"{type(self).__name__}.apply sets {opt} itself: pass "
                                 "force=[ids] to overwrite records in conflict")
        forced = list(dict.fromkeys(force))
        remaining = self.plan if not self.reports else diff(self.edited)
        unknown = [r for r in forced if r not in self.plan.actions]
        if unknown:
            raise UsageError(f"force: {unknown[:5]} are not records of the {self.WHAT} plan "
                             f"(its record_ids)")
        runs: list[Report] = []
        header, done = self._journaled(journal) if journal is not None else ({}, {})
        if any(r in done for r in remaining.record_ids):
            # an apply cut short after a run of its journal: those records are done
            runs.append(self._done_report(header, done, remaining))
            remaining = remaining.select([r for r in remaining.record_ids if r not in done])
        reserve = check_reserve(write_options.pop("quota_reserve", DEFAULT_QUOTA_RESERVE))
        # the repointing after the creates is kept room for: the plan's own runs stop at
        # the reserve plus what the repointing will need
        kept_back = relink_requests(self.client, self.frames).total
        reads = self._relink_read_requests()    # the live lists read before it (restore)
        # a create is in no conflict: it goes with the rest, in its order (order.py)
        over = [r for r in forced if remaining.actions.get(r) != "create"]
        rest = [r for r in remaining.record_ids if r not in set(over)]
        sends: list[tuple[list[str], Literal["skip", "overwrite"]]] = [
            (rest, "skip"), (over, "overwrite")]
        for r in runs:
            self._learn_ids(r)
        for ids, on_conflict in sends:
            part = remaining.select(ids) if len(ids) != len(remaining.actions) else remaining
            if part.empty:
                continue
            made = {tmp: self.id_map[old] for tmp, old in self.frames.old_ids.items()
                    if old in self.id_map}
            if made:    # created by an earlier run: the links to them carry their ids
                part = plan_with_new_ids(part, made)
            runs.append(write_back(self.client, self.edited, plan=part,
                                   delete_missing=True, on_conflict=on_conflict,
                                   journal=journal,
                                   quota_reserve=reserve + kept_back + reads,
                                   **write_options))
            self._learn_ids(runs[-1])
        undone = len(runs)
        links = None if journal is None else os.fspath(journal) + ".links"
        reread = 0
        why = self._claim_reads(reads, reserve + kept_back) if self.id_map else None
        if why:     # no room for the live lists' reads above the reserve: none is sent
            runs += [_unsent(self.client, self.frames.source, obj, lists, why)
                     for obj, lists in relinks(self.frames, self.id_map).items()]
        elif self.id_map:
            for obj, lists in relinks(self.frames, self.id_map,
                                      self._relink_lists()).items():
                got, n = relink(self.client, self.frames.source, obj, lists, links, reserve,
                                write_options)
                runs += got
                reread += n
        self.reports.extend(runs)
        out = _combined(runs, self.plan, undone)
        if reread:
            out.requests["rereads"] = out.requests.get("rereads", 0) + reread
        return out

    def _claim_reads(self, reads: int, reserve: int) -> str | None:
        """The live lists' reads before the repointing (``_relink_read_requests``) claimed
        of the quota like every other request: None when they may go with the
        repointing's writes still above ``reserve`` (the reserve plus those writes),
        else why not (what is left, named)."""
        if not reads:
            return None
        gate = QuotaGate(self.client, reserve)
        why = gate.claim(reads)
        gate.release(reads)
        return why

    def _journaled(self, journal: str | os.PathLike[str]
                   ) -> tuple[Mapping[str, Any], dict[str, dict[str, Any]]]:
        """The records of this plan that a run of its journal wrote (an apply cut short
        after a run settled, as the repointing's or a second send's, in this process or
        another): the header of the last such run, and record id -> the entry its
        acknowledgement kept. A run is this plan's when each record it wrote is one of
        the plan's, with the plan's action (a re-created record by its temporary id,
        made in the same order from the same plan) and, for an update, only fields the
        plan sends."""
        path = Path(journal)
        if not path.is_file():
            return {}, {}
        own = self.frames.source
        header: Mapping[str, Any] = {}
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
                header = run.header
                out.update(run.entries)
        return header, out

    def _done_report(self, header: Mapping[str, Any], done: Mapping[str, Mapping[str, Any]],
                     plan: Plan) -> Report:
        """The Report of the records a run of the journal wrote already (none sent)."""
        rows = [Outcome(rid, plan.actions[rid], list(plan.payloads.get(rid, {})),
                        "applied", "already applied (journal)", None,
                        str(done[rid].get("new_id")) if done[rid].get("new_id") else None)
                for rid in plan.record_ids if rid in done]
        kept = Kept(dict(header), {r: dict(done[r]) for r in plan.record_ids if r in done})
        report = make_report(rows, plan, [], RequestCounter(), kept=kept)
        self._learn_ids(report)
        return report

    def _learn_ids(self, report: Report) -> None:
        entries = report.kept.entries if report.kept is not None else {}
        for tmp, old in self.frames.old_ids.items():
            new = (entries.get(tmp) or {}).get("new_id")
            if new:
                self.id_map[old] = str(new)

    def _relink_read_requests(self) -> int:
        """The requests ``_relink_lists`` sends (none: the plan's lists)."""
        return 0

    def _relink_lists(self) -> dict[tuple[str, str, str], list[str]]:
        """The connection lists the repointing starts from, by (object, record id,
        field): the plan's (``frames.relinks``: as the run left them). A subclass may
        read them live instead; a record left out of the answer is not repointed."""
        return {k: was for k, (was, _olds) in self.frames.relinks.items()}


def _combined(runs: list[Report], plan: Plan, undone: int) -> Report:
    """One Report of a plan's runs: their rows, conflicts and requests; what an undo of
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


def _unsent(client: Client, own: Source, obj: str, lists: Lists, why: str) -> Report:
    """The Report of a repointing not sent (``why``): each record ``not_applied``."""
    plan = diff(lists_frames(client, own, obj, lists))
    rows = [Outcome(rid, plan.actions[rid], list(plan.payloads.get(rid, {})),
                    "not_applied", why) for rid in plan.record_ids]
    return make_report(rows, plan, [], RequestCounter())


def write_back_nothing(plan: Plan) -> Report:
    """The Report of a plan with nothing left to send."""
    return make_report([], plan, [], RequestCounter(), kept=None)
