"""Keyset paging: a load over ranges of a key that shifts no record.

Page numbers count positions in a list that others change while a load runs: an insert
or a delete before a page's start moves every later record across the page boundary, so
offset paging misses or repeats records, and its consistency passes can only detect
that and try again (under steady edits: again and again). An auto-increment value never
changes and is never reused, so the records whose value lies in a fixed range are the
same records whatever else happens: ranges never shift a record. A load by ranges
returns every record that existed from its start to its end exactly once (records
created during it have values past the plan and may come or not; records deleted during
it may come or not).

The plan: page 1 sorted by the key, ascending (its records are every record up to its
last value), and beside it the largest value (one row, descending); from the density
between them and the total, ranges of the key past page 1 sized to fill
``FILL_MEASURED`` of a page each, the last one open-ended; all fetched side by side within
the pace (each its own filter, sorted by the key). A range holding more than a page (a
dense stretch) goes on from the last value it returned.

Usage::

    keys = key_values(first.records, "field_24")
    for rng in plan_ranges(keys, first.total_records, 1000):
        rules = rng.rules("field_24")        # AND-ed with the load's own filters
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KeyRange", "plan_ranges", "key_values", "key_value", "FILL", "FILL_MEASURED"]

#: Share of a page a range is planned to fill: values are spread unevenly (deleted
#: records leave gaps), and a range that overflows costs one more request, in sequence.
#: With the largest value known, the density past page 1 is measured, not guessed.
FILL = 0.85
FILL_MEASURED = 0.95


@dataclass(frozen=True)
class KeyRange:
    """Records whose key is ``> after`` (None: from the start) and ``<= upto`` (None: no
    end)."""

    after: int | None
    upto: int | None

    def rules(self, key: str) -> list[dict[str, Any]]:
        """The filter rules that select this range (for ``Query.also``)."""
        out: list[dict[str, Any]] = []
        if self.after is not None:
            out.append({"field": key, "operator": "higher than", "value": self.after})
        if self.upto is not None:
            out.append({"field": key, "operator": "lower than", "value": self.upto + 1})
        return out

    def rest(self, last: int) -> KeyRange:
        """The part of this range past ``last`` (a range that filled its page)."""
        return KeyRange(last, self.upto)


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
    out = []
    for rec in records:
        v = key_value(rec, key)
        if v is None:
            return None
        out.append(v)
    return out


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
