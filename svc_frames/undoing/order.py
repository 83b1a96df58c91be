"""The creates' order in an undo or a restore: a re-created record that connected to
another re-created record of its object is created after it, with its new id in its list
at once (``write_back`` sends the creates in that order: writeback/depends.py), rather
than created without the link and repointed after. Only a cycle (records that connected
to each other, a record to itself) cannot be ordered: one link of each cycle stays a
repointing after the creates.

Usage::

    link_creates(relinks, "object_3", {"5d7a...": "new:0"}, edit_tables)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..writeback.depends import depth_first
from ..writeback.plan import NEW_ID_PREFIX

__all__ = ["link_creates"]

#: (object, record id, connection field) -> (its list expected, the old ids to add)
Relinks = dict[tuple[str, str, str], tuple[list[str], list[str]]]


def link_creates(relinks: Relinks, own: str, tmp_of: Mapping[str, str],
                 edit_tables: dict[str, list[dict[str, Any]]]) -> None:
    """Move the links from a re-created record of ``own`` to another (``tmp_of``: old id
    -> temporary id) out of ``relinks`` into the creates' lists (``edit_tables``: a row
    ``record_id`` -> the other's temporary id), but for one link of each cycle, found
    depth-first in the plan's order: it stays in ``relinks``."""
    edges: dict[str, list[tuple[str, str, str]]] = {}     # tmp -> (field, old, its tmp)
    for (obj, rid, key), (_was, olds) in relinks.items():
        if obj == own and rid.startswith(NEW_ID_PREFIX):
            edges.setdefault(rid, []).extend(
                (key, old, tmp_of[old]) for old in olds if old in tmp_of)
    if not edges:
        return
    _post, back = depth_first({rid: [to for _k, _o, to in out]
                               for rid, out in edges.items()})
    # (tmp, field, old): the links closing a cycle, made after the creates
    kept = {(rid, edges[rid][i][0], edges[rid][i][1]) for rid, i, _cycle in back}
    for rid, out in edges.items():
        for key, old, to in out:
            if (rid, key, old) in kept:
                continue
            edit_tables.setdefault(key, []).append({"record_id": rid, "connected_id": to})
            was, olds = relinks[(own, rid, key)]
            left = [o for o in olds if o != old]
            if left:
                relinks[(own, rid, key)] = (was, left)
            else:
                del relinks[(own, rid, key)]
