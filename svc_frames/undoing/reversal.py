"""What undo and restore share: a plan of frames (the records as they should be, and as
they are expected on the service) sent through ``write_back`` and its live guard, deletes
included; the records re-created get new ids (``id_map``), then the records that
connected to them are pointed at the new ids (one more ``write_back`` per object).

Usage::

    class UndoPlan(Reversal): ...          # adds what it reverses and how it reads
    plan.apply(force=[ids], journal="x.jsonl")
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import pandas as pd

from ..errors import UsageError
from ..frames import Frames, Source, build_frames
from ..records import Client
from ..writeback.diff import diff
from ..writeback.plan import NEW_ID_PREFIX, Plan
from ..writeback.report import Kept, Report, RequestCounter, make_report
from ..writeback.run import write_back
from .build import LOST_COLUMNS, UndoFrames, frames_of

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
        return self.frames.edited

    @property
    def base(self) -> Frames:
        return self.frames.base

    @property
    def changes(self) -> pd.DataFrame:
        """One row per cell the plan writes (``diff``'s ``changes``): a re-created
        record's row is named by its temporary id; the ``OLD_ID_COLUMN`` column gives
        the old id."""
        ch = self.plan.changes.copy()
        old = self.frames.old_ids
        ch[self.OLD_ID_COLUMN] = pd.array([old.get(str(r), str(r)) for r in ch["record_id"].tolist()],
                                dtype="string")
        return ch

    @property
    def lost(self) -> pd.DataFrame:
        """What cannot come back (``record_id, action, field, why``), listed before any
        write."""
        return pd.DataFrame([(x.record_id, x.action, x.field, x.why)
                             for x in self.frames.lost], columns=LOST_COLUMNS).astype("string")

    @property
    def counts(self) -> dict[str, int]:
        return self.plan.counts

    def apply(self, *, force: Iterable[str] = (), journal: str | os.PathLike[str] | None = None,
              **write_options: Any) -> Report:
        """Send the plan through ``write_back`` (deletes included), then point the
        records that connected to a re-created record at its new id.

        Parameters
        ----------
        force : iterable of str
            Records (ids in ``plan.record_ids``) to write even where someone else changed
            them after the run (``on_conflict="overwrite"`` for them alone); every other
            record in conflict is left as it is and reported ``conflict``.
        journal : str or os.PathLike, optional
            ``write_back``'s journal: calling ``apply`` again (in this process, or the
            same plan made again and applied with this journal in another) resumes an
            interrupted run without sending anything twice; the journal is also what an
            undo of this run reads. The repointing of links to re-created records is journaled
            beside it (the same path + ``.links``): an undo of the undo needs none of it
            (deleting a re-created record drops the links made to it).
        **write_options
            Other options of ``write_back`` (``guard``, ``guard_window``, ``progress``,
            ``max_workers``, ``quota_reserve``).

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
        """
        for opt in ("on_conflict", "delete_missing", "plan", "base", "dry_run"):
            if opt in write_options:
                raise UsageError(f"{type(self).__name__}.apply sets {opt} itself: pass force=[ids] to "
                                 "overwrite records in conflict")
        forced = list(dict.fromkeys(force))
        remaining = self.plan if not self.reports else diff(self.edited)
        unknown = [r for r in forced if r not in self.plan.actions]
        if unknown:
            raise UsageError(f"force: {unknown[:5]} are not records of the {self.WHAT} plan "
                             f"(its record_ids)")
        runs: list[Report] = []
        rest = [r for r in remaining.record_ids if r not in set(forced)]
        sends: list[tuple[list[str], Literal["skip", "overwrite"]]] = [
            (rest, "skip"), (forced, "overwrite")]
        for ids, on_conflict in sends:
            part = remaining.select(ids) if len(ids) != len(remaining.actions) else remaining
            if part.empty:
                continue
            runs.append(write_back(self.client, self.edited, plan=part,
                                   delete_missing=True, on_conflict=on_conflict,
                                   journal=journal, **write_options))
        for r in runs:
            self._learn_ids(r)
        undone = len(runs)
        links = None if journal is None else os.fspath(journal) + ".links"
        for relink in self._relink_frames(self.relink_lists()):
            runs.append(write_back(self.client, relink, delete_missing=False,
                                   journal=links, **write_options))
        self.reports.extend(runs)
        return _combined(runs, self.plan, undone)

    def _learn_ids(self, report: Report) -> None:
        entries = report.kept.entries if report.kept is not None else {}
        for tmp, old in self.frames.old_ids.items():
            new = (entries.get(tmp) or {}).get("new_id")
            if new:
                self.id_map[old] = str(new)

    def relink_lists(self) -> dict[tuple[str, str, str], list[str]]:
        """The connection lists the repointing starts from, by (object, record id,
        field): the plan's (``frames.relinks``: as the run left them). A subclass may
        read them live instead; a record left out of the answer is not repointed."""
        return {k: was for k, (was, _olds) in self.frames.relinks.items()}

    def _relink_frames(self, lists: Mapping[tuple[str, str, str], list[str]]
                       ) -> list[Frames]:
        """Frames pointing the records that connected to re-created records at the new
        ids (``lists`` -> with the new ids), one per object."""
        rows: dict[str, dict[str, dict[str, Any]]] = {}
        before: dict[str, dict[str, list[dict[str, Any]]]] = {}
        after: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for (obj, rid, key), (was, olds) in self.frames.relinks.items():
            if (obj, rid, key) not in lists and not rid.startswith(NEW_ID_PREFIX):
                continue
            was = lists.get((obj, rid, key), was)
            rid = self.id_map.get(self.frames.old_ids.get(rid, rid), rid)
            new = [self.id_map[o] for o in olds if o in self.id_map]
            if rid.startswith(NEW_ID_PREFIX) or not new:
                continue
            rows.setdefault(obj, {})[rid] = {}
            before.setdefault(obj, {}).setdefault(key, []).extend(
                {"record_id": rid, "connected_id": c} for c in was)
            after.setdefault(obj, {}).setdefault(key, []).extend(
                {"record_id": rid, "connected_id": c} for c in sorted(set(was) | set(new)))
        out: list[Frames] = []
        own = self.frames.source
        schema = self.client.schema() if set(rows) - {own.object_key} else None
        for obj, recs in rows.items():
            if obj == own.object_key:
                src = own
            else:
                assert schema is not None
                src = Source("object", obj, schema.object_fields(obj) or [],
                             timezone=own.timezone, app_id=own.app_id,
                             base_url=own.base_url, columns="keys",
                             name=schema.object_name(obj))
            empty = build_frames([], src.fields, src, keep_original=False)
            base = frames_of(src, empty, recs, before[obj], [])
            edited = frames_of(src, empty, recs, after[obj], [])
            edited.original = base
            out.append(edited)
        return out


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


def write_back_nothing(plan: Plan) -> Report:
    """The Report of a plan with nothing left to send."""
    return make_report([], plan, [], RequestCounter(), kept=None)
