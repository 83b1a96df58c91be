"""The repointing after the creates of an undo or a restore (``Reversal.apply``): the
records that connected to a deleted record (of its object or of others) pointed at the
record made again, once its new id is known, through ``write_back`` and its live guard,
one run per object.

Each list's base is what the plan expects on the service (an undo's: the list as the run
left it; a restore's: the list read live just before, ``RestorePlan._relink_lists``),
so a list someone changed since (a link made or removed by another user) is a conflict
of that run, never overwritten; such a list is read again and the new ids added to it as
it is now, through the guard again (``RELINK_ROUNDS``).

Usage::

    for obj, lists in relinks(u.frames, u.id_map).items():
        runs, reads = relink(client, u.frames.source, obj, lists, None, 100, {})
    relink_requests(client, u.frames).total     # before anything is sent
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..errors import SvcError
from ..frames import Frames, Source, build_frames
from ..records import Client
from ..writeback.diff import diff
from ..writeback.plan import NEW_ID_PREFIX, RequestEstimate
from ..writeback.report import Report
from ..writeback.run import write_back
from .build import UndoFrames, frames_of

__all__ = ["relinks", "relink", "relink_requests", "plus", "RELINK_ROUNDS", "Lists"]

#: Rounds of the repointing of one object's records: the first, then a list someone
#: changed meanwhile read again and its new ids added to it as it is now.
RELINK_ROUNDS = 3

#: (record id, connection field) -> (the list expected on the service, the ids to add)
Lists = dict[tuple[str, str], tuple[list[str], list[str]]]


def relinks(frames: UndoFrames, id_map: Mapping[str, str],
            lists: Mapping[tuple[str, str, str], list[str]] | None = None
            ) -> dict[str, Lists]:
    """Per object, the lists to point at re-created records: (record id, connection
    field) -> (the list expected on the service, the new ids to add); ``id_map``: each
    re-created record's old id -> its new one. ``lists``: the lists to start from by
    (object, record id, field) (``Reversal._relink_lists``: a restore's read live just
    before), a record left out of it not repointed (one re-created by the plan is, from
    its list as created); default: the lists as the plan holds them."""
    out: dict[str, Lists] = {}
    for (obj, rid, key), (was, olds) in frames.relinks.items():
        if lists is not None:
            if (obj, rid, key) not in lists and not rid.startswith(NEW_ID_PREFIX):
                continue
            was = lists.get((obj, rid, key), was)
        rid = id_map.get(frames.old_ids.get(rid, rid), rid)
        # a re-created record's list as created: its links to other re-created records
        # carry their new ids (order.py)
        was = [id_map.get(frames.old_ids.get(c, c), c) for c in was]
        new = [id_map[o] for o in olds if o in id_map]
        if rid.startswith(NEW_ID_PREFIX) or not new:
            continue
        held = out.setdefault(obj, {}).get((rid, key))
        out[obj][(rid, key)] = (list(was), new) if held is None \
            else (held[0], held[1] + new)
    return out


def relink_requests(client: Client, frames: UndoFrames) -> RequestEstimate:
    """What the repointing sends (the old ids standing for the new, unknown yet)."""
    out = RequestEstimate(rate=client.limiter.rate)
    same = {old: old for old in frames.old_ids.values()}
    for obj, lists in relinks(frames, same).items():
        plan = diff(lists_frames(client, frames.source, obj, lists))
        out = plus(out, plan.estimate_requests(rate=client.limiter.rate))
    return out


def relink(client: Client, own: Source, obj: str, lists: Lists, journal: str | None,
           reserve: int, options: Mapping[str, Any]) -> tuple[list[Report], int]:
    """Point one object's records at the re-created ones (module docstring): a list in
    conflict is read again (one request per record) and sent again, at most
    ``RELINK_ROUNDS`` times; a list still changing is left a conflict. Returns the runs
    and the reads made."""
    runs: list[Report] = []
    reads = 0
    for round_ in range(RELINK_ROUNDS):
        report = write_back(client, lists_frames(client, own, obj, lists),
                            delete_missing=False, journal=journal,
                            quota_reserve=reserve, **options)
        runs.append(report)
        clashed = set(report.table.loc[report.table["status"] == "conflict",
                                       "record_id"].tolist())
        again = {k: v for k, v in lists.items() if k[0] in clashed}
        if not again or round_ == RELINK_ROUNDS - 1:
            break
        now: dict[str, dict[str, Any]] = {}
        for rid in {k[0] for k in again}:
            try:
                now[rid] = client.get_record(obj, rid)
            except SvcError:    # gone, or not readable: its conflict stands
                continue
            finally:
                reads += 1
        lists = {}
        for (rid, key), (_was, new) in again.items():
            if rid in now:
                raw = now[rid].get(f"{key}_raw") or []
                held = [str(x["id"]) for x in raw if isinstance(x, Mapping) and x.get("id")]
                lists[(rid, key)] = (sorted(held), new)
        if not lists:
            break
        runs[-1] = _without(report, {k[0] for k in lists})
    return runs, reads


def lists_frames(client: Client, own: Source, obj: str, lists: Lists) -> Frames:
    """Frames of ``obj``'s records: each list as expected (``original``) -> with the new
    ids added. ``own``: the plan's source (another object's fields from the schema)."""
    rows: dict[str, dict[str, Any]] = {}
    before: dict[str, list[dict[str, Any]]] = {}
    after: dict[str, list[dict[str, Any]]] = {}
    for (rid, key), (was, new) in lists.items():
        rows[rid] = {}
        before.setdefault(key, []).extend(
            {"record_id": rid, "connected_id": c} for c in was)
        after.setdefault(key, []).extend(
            {"record_id": rid, "connected_id": c} for c in sorted(set(was) | set(new)))
    if obj == own.object_key and {k for _r, k in lists} <= {f.key for f in own.fields}:
        src = own
    # another object, or a field of its own the plan's frames do not hold (a run that
    # loaded some columns): the object's fields from the schema
    else:
        schema = client.schema()
        src = Source("object", obj, schema.object_fields(obj) or [],
                     timezone=own.timezone, app_id=own.app_id, base_url=own.base_url,
                     columns="keys", name=schema.object_name(obj))
    empty = build_frames([], src.fields, src, keep_original=False)
    base = frames_of(src, empty, rows, before, [])
    edited = frames_of(src, empty, rows, after, [])
    edited.original = base
    return edited


def plus(a: RequestEstimate, b: RequestEstimate) -> RequestEstimate:
    """Two runs' estimates, one after the other."""
    return RequestEstimate(writes=a.writes + b.writes, uploads=a.uploads + b.uploads,
                           rereads=a.rereads + b.rereads, lookups=a.lookups + b.lookups,
                           checks=a.checks + b.checks, late=a.late + b.late, rate=a.rate,
                           wait=a.wait + b.wait)


def _without(report: Report, ids: set[str]) -> Report:
    """A repointing run's report without the records sent again (their conflicts were
    merged, not left): the next round's report says what became of them."""
    keep = ~report.table["record_id"].isin(ids)
    conflicts = report.conflicts[~report.conflicts["record_id"].isin(ids)] \
        if len(report.conflicts) else report.conflicts
    return dataclasses.replace(report, table=report.table[keep].reset_index(drop=True),
                               conflicts=conflicts.reset_index(drop=True))
