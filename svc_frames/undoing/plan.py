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
from dataclasses import dataclass

import pandas as pd

from ..errors import UsageError
from ..frames import Source
from ..lookup import object_key
from ..records import Client
from ..writeback.diff import diff
from ..writeback.kept import inbound_connections
from ..writeback.report import Report
from .build import UndoFrames
from .reversal import Reversal
from .runs import KeptRun

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
    inbound = inbound_connections(client, obj)
    built = UndoFrames.build(kept, fields, inbound, _object_records(client, obj))
    plan = diff(built.edited, built.base)
    # the records it deletes: other objects' links to them are read first (plan.requests)
    plan.link_fields = len(inbound)
    return UndoPlan(client, built, plan, run=kept)


def _object_records(client: Client, obj: str) -> int:
    """The object's records now, with room for those created before the undo runs: the
    guard's re-reads list as many ids per request as the service's filter limit allows
    over an object of that size (``plan.reread_chunk``), not the few it allows over one
    of unknown size. One request."""
    total = client.get_page(obj, rows_per_page=1).get("total_records")
    n = int(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else 0
    return int(n * 1.25) + 100


@dataclass(kw_only=True)
class UndoPlan(Reversal):
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

    run: KeptRun

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

    def __repr__(self) -> str:
        c = self.plan.counts
        lost = f"{len(self.frames.lost)} lost" if self.frames.lost else "nothing lost"
        miss = f"{len(self.run.missing)} missing" if self.run.missing else "nothing missing"
        relink = f", {len(self.frames.relinks)} to point at new ids" \
            if self.frames.relinks else ""
        return (f"UndoPlan({self.frames.source.object_key}: {c['update']} update, "
                f"{c['create']} create, {c['delete']} delete{relink}; {lost}, {miss})")
