"""Keyset paging: a load over a key that shifts no record.

Page numbers count positions in a list that others change while a load runs: an insert
or a delete before a page's start moves every later record across the page boundary, so
offset paging misses or repeats records, and its consistency passes can only detect
that and try again (under steady edits: again and again). An auto-increment value never
changes and is never reused, and a new record's value is larger than every value given
before. Two plans use that; both return every record that existed from the load's start
to its end exactly once (records created or deleted during it may come or not).

**Ordered pages** (a load with no filter of its own, whose page 1 shows the values dense,
``DENSE``): the pages by number, sorted by the key ascending, side by side within the
pace as any load's pages, then one check of the *gaps* between them. Sorted so, an insert
lands past every page and only a delete moves records, and only towards the front: a
record that existed throughout and that no page returned was moved from the start of a
page to the end of the one before after that one was answered, so its value lies
strictly between one page's last value and the next page's first (``page_gaps``). The
values in those gaps are asked for at the end, ``VALUES_PER_CHECK`` to a request (an "or"
of ``is`` rules), a wide gap as a range of its own (``gap_checks``). When nothing moved
and the values have no holes, there is nothing to check: the pages alone. In a paced
load the page before the last is asked for last, as the range between its neighbours'
values when both are answered by its turn in the pace: nothing lies between it and
them, so the check of the other gaps goes beside it (``page_span``, ``span_gaps``: what
each page answered for, and the holes between). Proof and costs: ARCHITECTURE.md,
"Keyset paging".

**Ranges** (a filtered load, or values spread thin): page 1 sorted by the key, ascending
(its records are every record up to its last value), and beside it the largest value
(one row, descending); from the density between them and the total, ranges of the key
past page 1 sized to fill ``FILL_MEASURED`` of a page each, the last one open-ended; all
fetched side by side within the pace (each its own filter, sorted by the key). A range
holding more than a page (a dense stretch) goes on from the last value it returned. The
records whose value lies in a fixed range are the same whatever else happens.

Usage::

    keys = key_values(first.records, "field_24")
    for rng in plan_ranges(keys, first.total_records, 1000):
        query = rng.query(load_query, "field_24")   # AND-ed with the load's own filters
    checks = gap_checks(page_gaps([[1, 2, 3], [5, 6], [9]]))   # values 4, 7 and 8
    checks = gap_checks(span_gaps([(0, 3), (3, 6), (8, 9)]))    # 7 and 8: (3, 6] a range
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ..kinds.rawvalues import RawRecord
from ..query import Query, rules_within

__all__ = ["KeyRange", "KeyValues", "Span", "plan_ranges", "key_values", "key_value",
           "page_gaps", "page_span", "span_gaps", "gap_checks", "check_tests", "dense",
           "FILL", "FILL_MEASURED", "DENSE", "VALUES_PER_CHECK"]

#: Share of a page a range is planned to fill: values are spread unevenly (deleted
#: records leave gaps), and a range that overflows costs one more request, in sequence.
#: With the largest value known, the density past page 1 is measured, not guessed.
FILL = 0.85
FILL_MEASURED = 0.95

#: Records per key value on page 1 from which ordered pages are chosen for a load with no
#: filter: the gaps between 40 pages then hold about 40 values or fewer, one check request
#: (values spread thinner: ranges, whose cost does not grow with the holes)
DENSE = 0.5

#: Values one gap check lists ("is" rules, OR-ed): about 90 bytes each once URL-encoded, so
#: 40 keep the request line near 4 KB, half the common 8 KB limit
VALUES_PER_CHECK = 40


def check_tests(records: int) -> int:
    """Rules a gap check over a list of ``records`` records may hold (the service's filter
    limit, ``query.rules_within``): 20 at 50,000 records, 1 past 500,000.
    Usage: ``check_tests(50_000)`` is ``20``"""
    return rules_within(records, VALUES_PER_CHECK)


@dataclass(frozen=True)
class KeyRange:
    """Records whose key is ``> after`` (None: from the start) and ``<= upto`` (None: no
    end). ``seek``: asked for by its start alone (one rule, whatever the object's size:
    ``higher than after``, sorted by the key, as many rows as the range has values): a
    gap check's wide gap. Records past ``upto`` may come with it; they are other pages'
    and the pass keeps each record once."""

    after: int | None
    upto: int | None
    seek: bool = False

    def rules(self, key: str) -> list[dict[str, Any]]:
        """The filter rules that select this range (for ``Query.also``)."""
        out: list[dict[str, Any]] = []
        if self.after is not None:
            out.append({"field": key, "operator": "higher than", "value": self.after})
        if self.upto is not None and not self.seek:
            out.append({"field": key, "operator": "lower than", "value": self.upto + 1})
        return out

    def rows(self, page_rows: int) -> int:
        """Rows to ask for: a page's, or no more than a seek's range has values."""
        if self.seek and self.after is not None and self.upto is not None:
            return max(1, min(page_rows, self.upto - self.after))
        return page_rows

    def rest(self, last: int) -> KeyRange:
        """The part of this range past ``last`` (a range that filled its page)."""
        return KeyRange(last, self.upto, self.seek)

    def query(self, base: Query, key: str) -> Query:
        """``base`` (an "and" or no filter) AND this range: what its request sends."""
        return base.also(self.rules(key))[0]


@dataclass(frozen=True)
class KeyValues:
    """Records whose key is one of ``values`` (a gap check of ordered pages)."""

    values: tuple[int, ...]

    def rules(self, key: str) -> list[dict[str, Any]]:
        """One ``is`` rule per value (OR-ed by ``query``)."""
        return [{"field": key, "operator": "is", "value": v} for v in self.values]

    def rest(self, last: int) -> KeyValues:
        """The values past ``last`` (a check that filled its page)."""
        return KeyValues(tuple(v for v in self.values if v > last))

    def query(self, base: Query, key: str) -> Query:
        """What its request sends: the values OR-ed; ``base`` must hold no filter (ordered
        pages are only chosen for a load without one: an "or" cannot be AND-ed with it)."""
        if base.text is not None:
            raise ValueError("a gap check by values needs a listing without filters")
        return Query.encode({"match": "or", "rules": self.rules(key)})


def key_value(record: Any, key: str) -> int | None:
    """A record's key value as an int (raw pages hold it under the key, pages with
    display values under ``<key>_raw`` too); None when blank or not a number."""
    for name in (f"{key}_raw", key):
        raw = record.get(name)
        if raw is None or raw == "":
            continue
        try:
            return int(float(str(raw).replace(",", "")))
        except ValueError:
            continue
    return None


def key_values(records: Sequence[Any], key: str) -> list[int] | None:
    """The key values of a page's records, or None when one is blank or not a number
    (ranges could then miss it: the caller pages by number instead)."""
    # raw pages (struct records, or the ids and values a helper kept) hold ints under the
    # key: read at C speed; anything else (display pages: "1,234") value by value
    try:
        raws = list(map(attrgetter(key), records)) \
            if all(issubclass(k, RawRecord) for k in set(map(type, records))) \
            else [rec.get(key) for rec in records]
    except AttributeError:   # a struct without that slot
        raws = [rec.get(key) for rec in records]
    if set(map(type, raws)) <= {int}:
        return raws
    out = []
    for rec in records:
        v = key_value(rec, key)
        if v is None:
            return None
        out.append(v)
    return out


def ordered_key_values(records: Sequence[Any], key: str) -> list[int] | None:
    """``key_values`` of a page asked for in the key's order, or None when one is blank or
    they are not strictly ascending (the service ignored the sort, or a value repeats).
    Usage: ``ordered_key_values(page.records, "field_24")``"""
    keys = key_values(records, key)
    return keys if keys is not None and keys == sorted(set(keys)) else None


def plan_ranges(first_keys: Sequence[int], total: int, rows_per_page: int,
                top: int | None = None) -> list[KeyRange]:
    """The ranges past page 1 (whose values, ascending, are ``first_keys``) for a list of
    ``total`` records whose largest value is ``top`` (None: unknown): each expected to
    fill ``FILL_MEASURED`` of a page at the density between page 1's last value and
    ``top`` (without it: ``FILL`` at page 1's own density), the last open-ended (it also
    takes records created since, which a load may or may not hold).
    Usage: ``plan_ranges([1, 2, 4], 9, 3, top=12)``"""
    if not first_keys:
        return []
    lo = first_keys[-1]
    remaining = max(0, total - len(first_keys))
    if top is not None and top > lo and remaining:
        per_range = max(1, int(rows_per_page * FILL_MEASURED))
        density = min(1.0, remaining / (top - lo))
        width = max(1, math.ceil(per_range / density))
        n = max(1, math.ceil((top - lo) / width))
        return [KeyRange(lo + i * width, lo + (i + 1) * width if i < n - 1 else None)
                for i in range(n)]
    per_range = max(1, int(rows_per_page * FILL))
    n = max(1, math.ceil(remaining / per_range))
    span = max(1, lo - first_keys[0] + 1)
    density = min(1.0, len(first_keys) / span)     # records per key value
    width = max(1, math.ceil(per_range / density))
    return [KeyRange(lo + i * width, lo + (i + 1) * width if i < n - 1 else None)
            for i in range(n)]


def dense(first_keys: Sequence[int]) -> bool:
    """Whether page 1's values (ascending) are dense enough for ordered pages (``DENSE``).
    Usage: ``dense([1, 2, 4])``"""
    if not first_keys:
        return False
    return len(first_keys) / (first_keys[-1] - first_keys[0] + 1) >= DENSE


Span = tuple[int, "int | None"]
"""The key values a page answered for: every record whose value ``v`` has ``after < v <=
upto`` (``upto`` None: no end) at the time of its answer came on it."""


def page_span(keys: Sequence[int], key_range: KeyRange | KeyValues | None = None,
              complete: bool = True) -> Span | None:
    """What an ordered page answered for (``Span``): a page by number its first value to
    its last (None when it came empty: where the list ended is not known); a page asked
    for as the range between two pages by number (``key_range``) that range, or up to
    its last value when it held more than a page (``complete`` False).
    Usage: ``page_span([5, 6, 8])`` is ``(4, 8)``"""
    if isinstance(key_range, KeyRange) and key_range.after is not None:
        if complete or not keys:
            return (key_range.after, key_range.upto)
        return (key_range.after, keys[-1])
    if not keys:
        return None
    return (keys[0] - 1, keys[-1])


def span_gaps(spans: Sequence[Span | None]) -> list[tuple[int, int | None]]:
    """The gaps between consecutive spans of ordered pages (``page_span``, in page
    order), as ``page_gaps`` gives them: ``(last, first)`` when values lie between a
    span's end and the next one's start, ``(last, None)`` when an empty page follows.
    Usage: ``span_gaps([(0, 3), (3, 6), (8, 9)])`` is ``[(6, 9)]``"""
    out: list[tuple[int, int | None]] = []
    for span, after in zip(spans, spans[1:], strict=False):
        if span is None or span[1] is None:
            continue
        if after is None:
            out.append((span[1], None))
        elif after[0] > span[1]:
            out.append((span[1], after[0] + 1))
    return out


def page_gaps(pages_keys: Sequence[Sequence[int]]) -> list[tuple[int, int | None]]:
    """The gaps between consecutive ordered pages (each page's values, ascending, in page
    order): ``(last, first)`` when the next page's first value is more than one past the
    page's last, ``(last, None)`` when an empty page follows (the list ended earlier than
    it did when planned: anything past ``last`` may have moved before it). A record that
    existed throughout and that no page returned has its value strictly inside one of
    them (keyset.py's docstring; ARCHITECTURE.md has the proof).
    Usage: ``page_gaps([[1, 2, 3], [5, 6], []])`` is ``[(3, 5), (6, None)]``"""
    return span_gaps([page_span(keys) for keys in pages_keys])


def gap_checks(gaps: Sequence[tuple[int, int | None]], per_check: int = VALUES_PER_CHECK
               ) -> list[KeyRange | KeyValues]:
    """The requests that return every record whose value lies strictly inside one of
    ``gaps``: narrow gaps listed value by value, ``per_check`` to a request (at most
    ``VALUES_PER_CHECK``; the loader passes the fewer of its page size and the rules a
    request over the object may hold, ``check_tests``); a gap wider than that as a seek
    of its own (one rule), an open one as a range.
    Usage: ``gap_checks([(3, 5), (6, 9)])`` is ``[KeyValues((4, 7, 8))]``"""
    per_check = max(1, min(per_check, VALUES_PER_CHECK))
    values: list[int] = []
    out: list[KeyRange | KeyValues] = []
    for lo, hi in gaps:
        if hi is None:
            out.append(KeyRange(lo, None))
        elif hi - lo - 1 > per_check:
            out.append(KeyRange(lo, hi - 1, seek=True))
        else:
            values.extend(range(lo + 1, hi))
    out.extend(KeyValues(tuple(values[i:i + per_check]))
               for i in range(0, len(values), per_check))
    return out
