"""The stamp window: records stamped since the last load (newest first, down to the
cutoff: ``recent``, an ordinary run of the Paginator whose stop condition is
:class:`StampWindow`), the service's clock read from its headers (``clock_skew``), and the
cutoff itself (``stamp_cutoff``).

Usage: ``cutoff = stamp_cutoff(frames.source.loaded_at, stamps, clock_skew(client))``
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from ..arrowcols import member
from ..errors import ConsistencyError
from ..frames import Frames, Source, build_frames
from ..kinds.base import FieldSpec
from ..query import Query, format_filter_date
from ..read.options import LoadOptions
from ..read.pager import Page, Paginator
from ..read.pipeline import PagePipeline
from ..records import Client
from .listing import OVERLAP_DAYS, decode, target_name, target_of

STAMP_MARGIN = dt.timedelta(seconds=30)
"""How far before the last load's start (in the service's clock) stamps are read: stamps
are to the minute (floored first), and the clock's reading from the quota headers may be
off by the time an answer takes (see :func:`stamp_cutoff`)."""


UNKNOWN_CLOCK_MARGIN = dt.timedelta(minutes=2)
"""The margin when the service's clock is unknown (no quota headers)."""


MAX_WINDOW_PASSES = 3


def clock_skew(client: Client) -> dt.timedelta | None:
    """How far the client's clock runs ahead of the service's, from the last answer's
    ``X-PlanLimit-Reset`` (ms until the next UTC day, docs/hosted-behaviour.md §4): the
    reset time in the client's clock less the UTC midnight it stands for, never below 0.
    It counts the answer's way back too, so it errs early. None when no answer told it,
    or it is more than an hour (a reset that is not midnight).

    Usage: ``clock_skew(client)  # timedelta(microseconds=2300)``"""
    quota = client.quota
    if quota is None:
        return None
    at = pd.Timestamp(quota.reset_at)
    skew = at - (at + pd.Timedelta(hours=12)).floor("D")
    if abs(skew) > pd.Timedelta(hours=1):
        return None
    # a client behind the service needs no correction (its start is early already), and
    # a reset that is not quite midnight must not move the cutoff later
    return max(skew, pd.Timedelta(0)).to_pytimedelta()


def stamp_cutoff(loaded_at: Any, stamps: pd.Series, skew: dt.timedelta | None = None
                 ) -> pd.Timestamp:
    """The oldest stamp a change since the last load can carry: the load's start in the
    service's clock (the client's less ``skew``), floored to the minute, less
    ``STAMP_MARGIN``. With ``skew`` unknown: the load's start or, if earlier, the newest
    stamp the load holds (the service's own clock, which a load that saw no change while
    it ran cannot pass), less ``UNKNOWN_CLOCK_MARGIN``. Since ever when the load's time is
    unknown.

    Usage: ``stamp_cutoff(source.load["loaded_at"], frames.original.main["field_46"])``"""
    try:
        when = pd.Timestamp(dt.datetime.fromisoformat(str(loaded_at)))
    except (TypeError, ValueError):
        return pd.Timestamp("1900-01-01", tz="UTC")
    if when.tzinfo is None:
        when = when.tz_localize("UTC")
    if skew is not None:
        return (when - skew).tz_convert("UTC").floor("min") - STAMP_MARGIN
    newest = stamps.max() if len(stamps) and stamps.notna().any() else pd.NaT
    if isinstance(newest, pd.Timestamp) and newest.tzinfo is not None and newest < when:
        when = newest
    return when.tz_convert("UTC").floor("min") - UNKNOWN_CLOCK_MARGIN


class StampWindow:
    """The stop condition of the stamp window: the state of one refresh's walk down the
    listing, newest stamp first (a small state object; the Paginator runs the loop).

    A page ends the walk when it holds a stamp older than the cutoff (every later page is
    older still) or ends in blanks after a stamp (blanks sort last there). A first page of
    blanks alone (blanks sort first, as they may on the hosted service) ends it too, and
    asks for ``switch``: the stamped records alone, ``is after`` the cutoff's day. The
    cutoff is asked for (``cutoff_of``) once the first page is in: that answer tells the
    service's clock."""

    def __init__(self, source: Source, spec: FieldSpec,
                 cutoff_of: Callable[[], pd.Timestamp]) -> None:
        self.source = source
        self.spec = spec
        self.cutoff_of = cutoff_of
        self.cutoff: pd.Timestamp | None = None
        self.switch = False        # a first page of blanks: ask for the stamped alone
        self.may_switch = True     # False once the listing is the stamped records alone
        self.stamps: dict[tuple[int, int], pd.Series] = {}

    def reached(self, page: Page) -> bool:
        """The Paginator's ``stop``: whether this page is the last one wanted."""
        stamps = decode_stamps(page.records, self.source, self.spec,
                               raw=page.format == "raw")
        self.stamps[page.pass_no, page.number] = stamps
        if self.cutoff is None:
            self.cutoff = self.cutoff_of()
        seen = stamps.notna().to_numpy(dtype=bool)
        if page.number == 1 and len(seen) and not seen.any() and self.may_switch:
            self.switch = True
            return True
        return bool(seen.any() and (bool((stamps[seen] < self.cutoff).any())
                                    or not seen[-1]))

    def recent(self, page: Page) -> list[Any]:
        """The records of ``page`` stamped at or after the cutoff, or blank: the others
        were last written before the last load began, which read them as they are."""
        stamps = self.stamps.pop((page.pass_no, page.number))
        assert self.cutoff is not None
        older = (stamps < self.cutoff).to_numpy(dtype=bool)  # NaT: False, kept
        if not older.any():
            return list(page.records)
        return [r for r, old in zip(page.records, older, strict=True) if not old]


def recent(client: Client, source: Source, rpp: int, query: Query, mod: str,
           cutoff_of: Callable[[], pd.Timestamp],
           on_part: Callable[[Frames], None] | None = None, ahead: int = 0
           ) -> tuple[Frames, int]:
    """(decoded records stamped at or after the cutoff, or blank; the listing's
    ``total_records``): the load's listing (``query``) sorted by ``mod``, newest first, as
    one run of the Paginator that stops where :class:`StampWindow` says, one page ahead
    while a page is decoded. ``on_part`` is given each page's decoded records as they come
    (while the next page is on its way): the caller may merge them meanwhile.

    A first page of blanks alone switches to the stamps ``is after`` the cutoff's day (a
    day early: filter dates are whole days, §1.4), a second run. A pass whose pages report
    different totals (a record inserted or deleted while paging may shift another past a
    page boundary) is fetched again; after ``MAX_WINDOW_PASSES`` a ConsistencyError.
    ``ahead``: pages after page 1 asked beside it (the Paginator's), in the first run."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    window = StampWindow(source, source.field(mod), cutoff_of)
    listing = query
    total: int | None = None
    while True:
        pager = Paginator(client, target_of(source), LoadOptions.of(
            rows_per_page=rpp, filters=listing, sort_field=mod, sort_order="desc",
            verify="none", max_workers=1), prefetch=1, max_passes=MAX_WINDOW_PASSES,
            stop=window.reached, ahead=ahead if window.may_switch else 0)
        pipe = PagePipeline(pager, source.fields, source, tz)
        pipe.settle(None)  # the frames' kinds are the schema's: raw pages from page 1
        parts: list[tuple[int, Frames]] = []
        try:
            for page in pager.iter_pages():
                if window.switch:
                    break
                part = pipe.frames(page, window.recent(page))
                parts.append((page.pass_no, part))
                if on_part is not None:
                    on_part(part)
        except ConsistencyError:
            if len(pager.passes) < MAX_WINDOW_PASSES:
                raise  # a page fetched again with display values changed meanwhile
            raise ConsistencyError(
                f"the records of {target_name(source)} changed while the recently stamped "
                f"ones were paged ({MAX_WINDOW_PASSES} times): refresh again") from None
        if window.switch:
            # blanks sort first here: the listing's total is the first page's, and the
            # stamped records alone are asked for
            assert window.cutoff is not None
            total = pager.passes[-1].totals.pop()
            since = window.cutoff.tz_convert(tz or dt.timezone.utc).date() \
                - dt.timedelta(days=OVERLAP_DAYS)
            listing = query.also([{"field": mod, "operator": "is after",
                                   "value": format_filter_date(since, with_time=False)}])[0]
            window.switch, window.may_switch = False, False
            continue
        final = pager.passes[-1]
        if total is None:
            total = min(final.totals) if final.totals else 0
        kept = [f for n, f in parts if n == final.pass_no]
        if not kept:
            kept = [decode([], source, raw=True)]
        return concat_parts(kept), total


def decode_stamps(records: Sequence[Any], source: Source, spec: FieldSpec, *,
                  raw: bool = True) -> pd.Series:
    """The decoded stamps of a page (that field alone), in page order: a ``format=raw``
    page, or one with raw and display values (``raw=False``)."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    got = build_frames(list(records), [spec], source, tz=tz, keep_original=False,
                       raw_format=raw)
    # the field's first column is its date (a label alone may be named otherwise than
    # among all the fields, where labels that repeat are told apart)
    return got.main.iloc[:, 0] if len(got.main.columns) else \
        pd.Series([pd.NaT] * len(records), dtype="datetime64[ns, UTC]")


def oldest_first(ids: pd.Index) -> np.ndarray:
    """Positions of records listed newest stamp first, in creation order as far as the
    ids tell it (the service's ids begin with their creation time; ties keep the reverse
    of the listing), for an object without an auto-increment field to order new rows by."""
    reverse = np.arange(len(ids))[::-1]
    keys = np.asarray(ids, dtype=object)[reverse].astype(str)
    return reverse[np.argsort(keys, kind="stable")]


def concat_parts(parts: list[Frames]) -> Frames:
    """Decoded parts as one Frames; a record in several keeps its last (freshest) copy."""
    if len(parts) == 1:
        return parts[0]
    main = pd.concat([p.main for p in parts])
    keep = ~main.index.duplicated(keep="last")
    main = main[keep]
    names = {n for p in parts for n in p.tables}
    tables: dict[str, pd.DataFrame] = {}
    for name in names:
        # a table's rows of a record come from the part its main row was kept from
        pieces = []
        for i, p in enumerate(parts):
            if name not in p.tables:
                continue
            later = [q.main.index for q in parts[i + 1:]]
            t = p.tables[name]
            if later:
                t = t[~member(t["record_id"], pd.Index(np.concatenate(
                    [np.asarray(x, dtype=object) for x in later])))]
            pieces.append(t)
        tables[name] = pd.concat(pieces, ignore_index=True)
    return Frames(main, tables, parts[0].source)


def paged(client: Client, source: Source, rpp: int, query: Query) -> Frames:
    """The decoded records of a filtered listing (the pipeline: ``format=raw`` pages, fewer
    bytes, again with display values when a raw value needs its display)."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    pager = Paginator(client, target_of(source), LoadOptions.of(
        rows_per_page=rpp, filters=query, verify="none"))
    pipe = PagePipeline(pager, source.fields, source, tz)
    pipe.settle(None)
    return pipe.collect()
