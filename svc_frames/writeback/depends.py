"""Creates that connect to other creates of the same run: a new row's connection list may
name another new row by its temporary id (``new:N``). The record linked to is created
first and the create linking to it carries its new id at once (one write each), so the
creates go in waves: those that link to no other create, then those whose links are all
created, and so on (``create_waves``). A cycle cannot be ordered: ``diff`` refuses it (an
undo or a restore breaks its cycles itself: one link of each made after the creates).

Usage::

    levels = create_levels(creates, plan.payloads, layout)     # UsageError on a cycle
    body, missing = with_new_ids(layout, payload, {"new:0": "5f0c..."})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import UsageError
from .plan import NEW_ID_PREFIX, Action, ColumnMap, Plan
from .state import RunState

__all__ = ["new_links", "create_levels", "depth_first", "create_waves", "with_new_ids",
           "plan_with_new_ids", "wanted_with_new_ids", "link_new_ids"]


def _is_new(x: Any) -> bool:
    return isinstance(x, str) and x.startswith(NEW_ID_PREFIX)


def new_links(layout: ColumnMap, payload: Mapping[str, Any]) -> list[str]:
    """The temporary ids a create's payload connects to (its connection fields')."""
    out: list[str] = []
    for key, val in payload.items():
        f = layout.fields.get(key)
        if f is not None and f.kind == "connection" and isinstance(val, list):
            out.extend(x for x in val if _is_new(x) and x not in out)
    return out


def create_levels(creates: Iterable[str], payloads: Mapping[str, Mapping[str, Any]],
                  layout: ColumnMap) -> dict[str, int]:
    """Each create's wave: 0 when it links to no other create of ``creates``, else one
    more than the deepest it links to; {} when no create links to another (the common
    case: one wave). A temporary id outside ``creates`` is not waited for (created by an
    earlier run, or never: the create is then not sent, ``apply`` says why).

    Raises
    ------
    UsageError
        Creates that link to each other in a cycle, named: none can be created first.
    """
    ids = list(creates)
    known = set(ids)
    deps = {t: [d for d in new_links(layout, payloads.get(t, {})) if d in known] for t in ids}
    if not any(deps.values()):
        return {}
    post, back = depth_first(deps)
    if back:
        cycle = back[0][2]
        raise UsageError(f"new rows connect to each other in a cycle ({' -> '.join(cycle)}"
                         f" -> {cycle[0]}): none can be created first; leave one link out "
                         "and add it with a second write_back once they exist")
    level: dict[str, int] = {}
    for node in post:       # a node after every node it links to
        level[node] = 1 + max((level[d] for d in deps[node]), default=-1)
    return level


def depth_first(graph: Mapping[str, Sequence[str]]
                ) -> tuple[list[str], list[tuple[str, int, list[str]]]]:
    """The nodes of ``graph`` (node -> the nodes it links to) in post-order
    (a node after every node it links to, but across a cycle), and the links that close a
    cycle: (node, the link's index, the cycle's nodes from the one linked to). Iterative:
    a chain may be thousands long."""
    post: list[str] = []
    back: list[tuple[str, int, list[str]]] = []
    done: set[str] = set()
    for start in graph:
        if start in done:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        on_path = {start}
        while stack:
            node, i = stack[-1]
            out = graph.get(node, ())
            if i == len(out):
                stack.pop()
                on_path.discard(node)
                done.add(node)
                post.append(node)
                continue
            stack[-1] = (node, i + 1)
            to = out[i]
            if to in on_path:
                path = [n for n, _ in stack]
                back.append((node, i, path[path.index(to):]))
            elif to not in done:
                on_path.add(to)
                stack.append((to, 0))
    return post, back


def create_waves(batch: Sequence[str], todo: Mapping[str, Action],
                 level: Mapping[str, int]) -> list[list[str]]:
    """A batch of ``apply`` cut into waves written one after the other: a create goes in
    its level's wave, an update in the first, a delete in the last."""
    depth = max((level.get(r, 0) for r in batch if todo.get(r) == "create"), default=0)
    if not depth:
        return [list(batch)]
    out: list[list[str]] = [[] for _ in range(depth + 1)]
    for r in batch:
        act = todo.get(r)
        out[level.get(r, 0) if act == "create" else (depth if act == "delete" else 0)
            ].append(r)
    return [w for w in out if w]


def with_new_ids(layout: ColumnMap, payload: Mapping[str, Any],
                 new_ids: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The payload with each temporary id it connects to replaced by its record's new id,
    and the temporary ids ``new_ids`` does not know (their records were not created)."""
    missing: list[str] = []
    out = dict(payload)
    for key, val in payload.items():
        f = layout.fields.get(key)
        if f is None or f.kind != "connection" or not isinstance(val, list) \
                or not any(_is_new(x) for x in val):
            continue
        out[key] = [new_ids.get(x, x) for x in val]
        missing.extend(x for x in val if _is_new(x) and x not in new_ids
                       and x not in missing)
    return out, missing


def wanted_with_new_ids(layout: ColumnMap, wanted: Mapping[str, Mapping[str, Any]],
                        new_ids: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """A create's wanted values (field -> its columns) with its links' new ids in place
    (what a lookup of a create whose answer was lost compares)."""
    out = {k: dict(v) for k, v in wanted.items()}
    for key, cols in out.items():
        f = layout.fields.get(key)
        if f is not None and f.kind == "connection" and isinstance(cols.get(key), list):
            cols[key] = sorted(new_ids.get(x, x) for x in cols[key])
    return out


def plan_with_new_ids(plan: Plan, new_ids: Mapping[str, str]) -> Plan:
    """``plan`` with the temporary ids of records created already (by an earlier run of
    the same frames: ``new_ids``, temporary id -> new id) replaced in its creates' links."""
    layout = ColumnMap.of(plan.source)
    payloads = dict(plan.payloads)
    wanted = dict(plan.wanted)
    for rid, act in plan.actions.items():
        if act != "create" or not any(t in new_ids
                                      for t in new_links(layout, payloads.get(rid, {}))):
            continue
        payloads[rid] = with_new_ids(layout, payloads[rid], new_ids)[0]
        if rid in wanted:
            wanted[rid] = wanted_with_new_ids(layout, wanted[rid], new_ids)
    return dataclasses.replace(plan, payloads=payloads, wanted=wanted)


def link_new_ids(run: RunState, tmp: str) -> list[str]:
    """A create's links to other creates of the run given their new ids (its payload and
    what a lookup compares); the temporary ids not created (their creates failed, or
    were not sent), for which it is not sent."""
    known: dict[str, str] = {}
    for t in new_links(run.layout, run.payloads[tmp]):
        o = run.answered.get(t) or run.outcomes.get(t)
        if o is not None and o.status == "applied" and o.new_id:
            known[t] = str(o.new_id)
    run.payloads[tmp], missing = with_new_ids(run.layout, run.payloads[tmp], known)
    if not missing:
        run.wanted[tmp] = wanted_with_new_ids(run.layout, run.plan.wanted.get(tmp, {}),
                                              known)
    return missing
