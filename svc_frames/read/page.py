"""What a listing's pages are: a fetched ``Page``, the ``PassReport`` of a pass over them,
and the ids of a page's records read at C speed.

Usage::

    page.records, page.total_records, page.key_range   # a Page
    record_ids(page.records)                           # ["5f...", ...]
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..kinds.rawvalues import RawRecord

if TYPE_CHECKING:
    from ..frames import Frames
    from .keyset import KeyRange, KeyValues

__all__ = ["Page", "PageFormat", "PassReport", "Verify", "id_hashes", "record_ids"]

Verify = Literal["first", "full", "none"]
"""How a pass is verified: page 1 again (default), a second agreeing pass, or not at all."""

PageFormat = Literal["both", "raw"]
"""What page requests ask for: raw and display values (the default), or raw values only
(each under ``field_N``: about 40% fewer bytes to send and parse)."""


_ITEM_ID = operator.itemgetter("id")
_ATTR_ID = operator.attrgetter("id")


def record_ids(records: Sequence[Any]) -> list[Any]:
    """The ids of a page's records, in order, read at C speed (a page holds dicts, or
    struct records from rawpages). Usage: ``record_ids(page.records)``"""
    kinds = set(map(type, records))
    if kinds == {dict}:
        return list(map(_ITEM_ID, records))
    if all(issubclass(k, RawRecord) for k in kinds):
        return list(map(_ATTR_ID, records))
    return [r["id"] for r in records]


def id_hashes(records: list[dict[str, Any]]) -> np.ndarray:
    """64-bit hashes of record ids (stable within this process; collisions negligible)."""
    return np.fromiter(map(hash, record_ids(records)), dtype=np.int64, count=len(records))


@dataclass
class Page:
    """One fetched page: its records and the envelope's (estimated) totals."""

    number: int
    records: list[dict[str, Any]]
    total_pages: int
    total_records: int
    pass_no: int = 1
    format: PageFormat = "both"
    decoded: bool = False  # decoded while fetched (PageDecoder): ``frames`` holds the page
    frames: Frames | None = None  # its frames; None when the page needs display values
    # a keyset page (keyset.py): the range or values it asked for, so a refetch asks again
    key_range: KeyRange | KeyValues | None = None

    def decoded_values_dropped(self, keep: Sequence[str] = ()) -> None:
        """Once its frames are made: the records keep their id and the values of ``keep``
        alone (a pass may still read a page's ids and key values: the keyset pass, page
        1's verification). Page 1, parsed with raw and display values, is held by the
        paging strategies to the end of the pass: then with a few values per record,
        not every field's.

        Usage: ``page.decoded_values_dropped([pager.key_field])``"""
        if self.records and not (isinstance(self.records[0], RawRecord)
                                 and set(type(self.records[0]).__struct_fields__)
                                 <= {"id", *keep}):
            names = [k for k in keep if k != "id"]
            self.records = [{"id": r["id"], **{k: r.get(k) for k in names}}
                            for r in self.records]


@dataclass
class PassReport:
    """What one pass over the pages saw."""

    pass_no: int
    pages: int = 0
    records: int = 0
    distinct: int = 0
    totals: set[int] = field(default_factory=set)
    duplicates: int = 0
    repeated: set[str] = field(default_factory=set)   # the ids that came twice or more
    consistent: bool = False
    reason: str = ""
    stopped: bool = False  # the caller's stop condition ended it (see Paginator)
