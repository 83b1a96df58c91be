"""Deleted records: found by bisecting auto-increment ranges when few are missing, else
by one listing of ids (``deletions``, ``find_missing``, ``bisect_cost``).

Usage: ``deletions(client, frames, source, load, rpp, merger, total, auto_col, auto)``;
``gone = find_gone(client, source, load, rpp, held, values, missing, auto)``
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pandas as pd

from ..arrowcols import member
from ..frames import Frames, Source
from ..query import Query
from ..records import Client
from .listing import list_all, list_ids, target_of
from .merge import Merger


def deletions(client: Client, frames: Frames, source: Source, load: Mapping[str, Any],
              rpp: int, merger: Merger, total: int, auto_col: str | None,
              auto: str | None) -> None:
    """Find and drop the records the service no longer lists (deleted, or out of the
    load's filter): :func:`find_gone`; records listed that were neither loaded nor stamped
    since (an unstamped change put them in the filter) make it take the whole listing."""
    assert frames.original is not None
    values = frames.original.main[auto_col] if auto_col is not None else None
    gone = find_gone(client, source, load, rpp, frames.original.main.index, values,
                     merger.server_count() - total, auto)
    if gone is None:
        merger.merge(list_all(client, source, load, rpp), complete=True)
    else:
        merger.drop(gone)


def find_gone(client: Client, source: Source, load: Mapping[str, Any], rpp: int,
              held: pd.Index, values: pd.Series | None, missing: int, auto: str | None,
              *, unseen_ok: bool = False) -> pd.Index | None:
    """The held records the service no longer lists (``missing`` of them, as the totals
    say): by bisecting the auto-increment ``values`` (indexed by id) when few are missing
    and that costs fewer requests than a listing (:func:`find_missing`), else by one
    listing of ids. None when the listing holds records that are not held (the caller
    lists everything), unless ``unseen_ok`` (the caller sees them later: records created
    since its stamp window was read are in the next one). Shared by ``refresh`` and the mirror's incremental runs, which
    hold only the ids and the auto-increment values of the records.

    Usage: ``find_gone(client, source, source.load, 1000, held_ids, auto_values, 1,
    "field_24")``"""
    total = len(held) - missing
    listing_cost = -(-max(total, 1) // rpp) + 1  # the pages and page 1 again (verify)
    windows = source.query.also([])
    if (missing > 0 and auto is not None and values is not None and len(windows) == 1
            and bisect_cost(len(held), missing) < listing_cost):
        gone = find_missing(client, source, windows[0], auto, values, missing,
                            budget=listing_cost)
        if gone is not None:
            return gone
    listed = list_ids(client, source, load, rpp)
    unseen = len(listed) - int(member(listed, held).sum())
    if unseen and not unseen_ok:
        return None
    out: pd.Index = held[~member(held, listed)]
    return out


def bisect_cost(held: int, missing: int) -> int:
    """Requests :func:`find_missing` is expected to send for ``missing`` records among
    ``held``: a probe per level of the bisection per missing record, and one to confirm.

    Usage: ``bisect_cost(100_000, 1)  # 19``"""
    if missing <= 0:
        return 0
    levels = max(1, math.ceil(math.log2(max(held, 2) / missing)))
    return missing * (levels + 2)


def find_missing(client: Client, source: Source, query: Query, auto: str,
                 values: pd.Series, missing: int, *, budget: int) -> pd.Index | None:
    """The held records the service no longer lists, found by counting the records of
    auto-increment ranges (one row per request: only ``total_records`` is read) and
    bisecting the ranges that hold fewer than here; None when this cannot be done soundly
    or would cost more than ``budget`` requests (the caller lists instead).

    A range's count is asked for (the lower half) or inferred (the upper half: the parent
    less the lower); a record is dropped only when a range asked for holds none, so a
    record the service still lists is never dropped. None when values are blank or
    repeated, a range holds more than here (a record came in unseen), or the records found
    are not the ``missing`` count (the records changed meanwhile).

    Usage: ``find_missing(client, source, Query(), "field_24",
    frames.original.main["field_24"], 1, budget=101)``"""
    if values.isna().any() or not values.is_unique or not len(values):
        return None
    order = np.argsort(values.to_numpy(dtype="int64"), kind="stable")
    vals = values.to_numpy(dtype="int64")[order]
    ids = values.index[order]
    target = target_of(source)

    def count(lo_val: int, hi_val: int) -> int:
        rules = [{"field": auto, "operator": "higher than", "value": int(lo_val) - 1},
                 {"field": auto, "operator": "lower than", "value": int(hi_val) + 1}]
        page = client.get_page(target, 1, 1, filters=query.also(rules)[0])
        return int(page.get("total_records") or 0)

    # a node: (first, end) positions of held records, its value bounds, its count (None:
    # to be asked), whether the count was asked for; ``pairs`` count a lower half and
    # infer its upper sibling
    Node = tuple[int, int, int, int, "int | None", bool]
    todo: list[tuple[Node, Node | None]] = [((0, len(vals), int(vals[0]), int(vals[-1]),
                                              None, False), None)]
    gone: list[int] = []
    spent = 0
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="svc-bisect") as pool:
        while todo:
            spent += len(todo)
            if spent > budget:
                return None
            counts = list(pool.map(lambda pair: count(pair[0][2], pair[0][3]), todo))
            nodes: list[Node] = []
            for (node, sibling), got in zip(todo, counts, strict=True):
                first, end, lo_val, hi_val, parent, _ = node
                nodes.append((first, end, lo_val, hi_val, got, True))
                if sibling is not None:
                    assert parent is not None
                    low, stop, lo, hi = sibling[:4]
                    nodes.append((low, stop, lo, hi, parent - got, False))
            todo = []
            for first, end, lo_val, hi_val, n, asked in nodes:
                assert n is not None
                here = end - first
                if n == here:
                    continue
                if n > here or n < 0:
                    return None
                if n == 0:
                    if asked:
                        gone.extend(range(first, end))
                    else:  # inferred: asked for before anything is dropped
                        todo.append(((first, end, lo_val, hi_val, None, False), None))
                    continue
                mid = (first + end) // 2
                lower: Node = (first, mid, lo_val, int(vals[mid]) - 1, n, False)
                upper: Node = (mid, end, int(vals[mid]), hi_val, None, False)
                todo.append((lower, upper))
    if len(gone) != missing:
        return None
    return ids[np.asarray(sorted(gone), dtype=np.int64)]
