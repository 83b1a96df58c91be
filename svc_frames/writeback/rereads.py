"""rereads: the arithmetic of the guard's re-reads and the creates' lookups, written once:
how many identifying values one filtered request lists, how many pages the whole list
takes, which way a re-read of some records goes (the whole list, OR-filters on an
identifying value, one GET per record), and which filters look up the creates.
``guard.reread`` follows ``RereadRoute`` and ``apply.take_baseline`` follows
``LookupRoute``; ``plan.reread_requests`` and ``plan.baseline_requests`` count the same
routes, so the estimate and the requests cannot drift.

Usage::

    route = RereadRoute.of(plan.source, plan.base, len(ids))
    route.list_first, route.chunk
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..frames import Frames, Source
from ..kinds import is_empty_cell
from ..query import rules_within

REREAD_CHUNK = 50     # values per filtered re-read (the guard): keeps the URL near 4 KB
# Records assumed of an object whose size the frames do not show (a filtered, limited or
# view load): its re-reads list fewer values (``reread_chunk``).
UNSEEN_RECORDS = 100_000
PAGE_ROWS = 1000      # rows per page of a whole-list re-read


#: Ids of records to delete one read of another object's links to them lists, that
#: object's size unknown (``query.rules_within`` over ``UNSEEN_RECORDS``); past it, the
#: object's records are counted first (one request) and the chunk sized by them.
LINK_CHUNK = rules_within(UNSEEN_RECORDS, REREAD_CHUNK)


def link_requests(batches: Sequence[int], fields: int) -> int:
    """The reads of other objects' links to the records a run deletes (``Keeper.
    keep_links``, just before each batch of deletes): per connection field into the
    object, one list request per ``LINK_CHUNK`` ids of each batch (``batches``: the
    batches' sizes), and a count of the connecting object's records once a batch holds
    more. An upper bound for connecting objects of up to ``UNSEEN_RECORDS`` records (a
    counted object allows as many ids or more) answered in one page each.

    Usage: ``link_requests([15, 15, 3], 2)`` is ``2 * (2 + 2 + 1 + 1)``"""
    if not fields or not any(batches):
        return 0
    reads = sum(-(-b // LINK_CHUNK) for b in batches if b)
    counts = 1 if max(batches) > LINK_CHUNK else 0
    return fields * (reads + counts)


def list_pages(n_records: int) -> int:
    """Pages of a whole-list read of ``n_records`` (``PAGE_ROWS`` a page)."""
    return -(-n_records // PAGE_ROWS)


def object_records(source: Source, base: Frames | None) -> int:
    """The records of the object behind ``base``, as far as the frames show: all of them
    for a load of the whole object, the count ``source.load["object_records"]`` holds
    when one was taken (frames an undo builds of some records), else at least
    ``UNSEEN_RECORDS``.

    Usage: ``object_records(plan.source, plan.base)``"""
    n = len(base.main) if base is not None else 0
    load = source.load
    counted = (load or {}).get("object_records")
    if isinstance(counted, int) and not isinstance(counted, bool):
        return max(n, counted)
    whole = (source.kind == "object" and base is not None and load is not None
             and not load.get("filters") and load.get("limit") is None)
    return n if whole else max(n, UNSEEN_RECORDS)


def reread_chunk(source: Source, base: Frames | None) -> int:
    """Values one filtered re-read or lookup lists ("is" rules, OR-ed): ``REREAD_CHUNK``,
    fewer over a large object (the service's filter limit, ``query.rules_within``: 20 at
    50,000 records).

    Usage: ``reread_chunk(plan.source, plan.base)``"""
    return rules_within(object_records(source, base), REREAD_CHUNK)


@dataclass(frozen=True)
class RereadRoute:
    """The way the guard re-reads ``n_ids`` records of ``source`` (loaded as ``base``),
    when the server still holds the loaded records."""

    kind: str            # the source's kind: "object" or "view"
    chunk: int           # identifying values per OR-filter request (``reread_chunk``)
    n_chunks: int        # filtered requests the ids would take
    pages: int | None    # pages of the whole list as loaded (at least 1); None: unknown

    @classmethod
    def of(cls, source: Source, base: Frames | None, n_ids: int) -> RereadRoute:
        """The route of a re-read of ``n_ids`` records."""
        chunk = reread_chunk(source, base)
        pages = max(1, list_pages(len(base.main))) if base is not None else None
        return cls(source.kind, chunk, -(-n_ids // chunk), pages)

    @property
    def list_first(self) -> bool:
        """Many records to check: the whole list paged takes fewer requests than the
        filtered chunks (more than two of them)."""
        return self.n_chunks > 2 and self.pages is not None and self.pages < self.n_chunks

    def key_values(self, keyed: tuple[str, pd.Series], ids: Sequence[str]) -> list[Any]:
        """The loaded identifying values of ``ids`` (``ColumnMap.key_field``), empty ones
        left out: each ``chunk`` of them is one filtered request."""
        _key, values = keyed
        vals = values.reindex(pd.Index(list(ids), dtype=values.index.dtype))
        return [v for v in vals.tolist() if not is_empty_cell(v)]

    def rest_pages(self, n_rest: int) -> int:
        """Pages of the whole list, for ``n_rest`` records without an identifying value
        (when the frames do not show it: one per record)."""
        return self.pages if self.pages is not None else n_rest

    def one_get_each(self, n_rest: int) -> bool:
        """``n_rest`` records without an identifying value are read by one GET each (an
        object's, no more of them than the whole list's pages), else by the whole list."""
        return self.kind == "object" and n_rest <= self.rest_pages(n_rest)


# Without an identifying value, a lookup pages the whole list: only worth it for small objects.
LOOKUP_SCAN_LIMIT = 5000


@dataclass(frozen=True)
class LookupRoute:
    """The reads before the creates (``apply.take_baseline``): which creates can be
    looked up (by their lookup rules, ``ColumnMap.lookup_rules``, or by paging a list of at
    most ``LOOKUP_SCAN_LIMIT`` records) and the OR-filters that find them, ``chunk``
    distinct rules each (None: the whole list)."""

    provable: list[int]                           # positions of the creates looked up
    filters: list[list[dict[str, Any]]] | None    # OR-filters; None: the whole list
    known: int                                    # records of the list as loaded

    @classmethod
    def of(cls, rules: Sequence[Sequence[dict[str, Any]]], known: int,
           chunk: int) -> LookupRoute:
        """The route for creates whose lookup rules are ``rules`` (one list each)."""
        provable = [i for i, r in enumerate(rules) if r or known <= LOOKUP_SCAN_LIMIT]
        if not provable or not all(rules[i] for i in provable):
            return cls(provable, None, known)
        distinct = list({json.dumps(rules[i][0], sort_keys=True, default=str): rules[i][0]
                         for i in provable}.values())
        return cls(provable, [distinct[i:i + chunk] for i in range(0, len(distinct), chunk)],
                   known)

    @property
    def requests(self) -> int:
        """What the lookups send when fewer than a page of records match each filter."""
        if not self.provable:
            return 0
        if self.filters is not None:
            return len(self.filters)
        return max(1, list_pages(self.known))
