"""The stamp window: records stamped since the last load (newest first, down to the
cutoff), the service's clock read from its headers (``clock_skew``), and the cutoff
itself (``stamp_cutoff``).

Usage: ``cutoff = stamp_cutoff(frames.source.loaded_at, stamps, clock_skew(client))``
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from ..errors import ConsistencyError, DisplayValuesNeeded, ServerError
from ..filters import format_filter_date
from ..frames import Frames, Source, build_frames
from ..http.body import parse_json
from ..http.client import Client
from ..kinds.base import FieldSpec
from ..read.pager import Paginator
from ..read.rawpages import raw_page_parser
from .arrowcols import member
from .listing import OVERLAP_DAYS, decode, describe, target_of, with_rules

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


def recent(client: Client, source: Source, rpp: int, filters: Mapping[str, Any], mod: str,
           cutoff_of: Callable[[], pd.Timestamp],
           on_part: Callable[[Frames], None] | None = None) -> tuple[Frames, int]:
    """(decoded records stamped at or after ``cutoff``, or blank; the listing's
    ``total_records``): the listing sorted by ``mod``, newest first, paged until a page
    holds a stamp older than the cutoff (every later page is older still). Records stamped
    before the cutoff were last written before the last load began, which read them as
    they are: they are not decoded. ``cutoff_of`` is asked once the first page is in (it
    may read the service's clock). ``on_part`` is given each page's decoded records as
    they come (while the next page is on its way): the caller may merge them meanwhile.

    Blank stamps (records no rule has stamped since it was added) are sorted first or last
    as the service sorts blanks: a page that ends in blanks after a stamp ends the paging;
    a first page of blanks alone switches to the stamps ``is after`` the cutoff's day (a
    day early: filter dates are whole days, §1.4). A pass whose pages report different
    totals (a record inserted or deleted while paging may shift another past a page
    boundary) is fetched again; after ``MAX_WINDOW_PASSES`` a ConsistencyError."""
    tz: dt.tzinfo = ZoneInfo(source.timezone) if source.timezone else dt.timezone.utc
    cutoff: pd.Timestamp | None = None
    after: dict[str, Any] | None = None
    passes_left = MAX_WINDOW_PASSES
    listing = dict(filters)
    total = -1
    spec = next(f for f in source.fields if f.key == mod)
    parser = raw_page_parser(source.fields, parse_json)
    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-window")
    try:
        while True:
            parts: list[Frames] = []
            totals: set[int] = set()
            number = 1
            records, page_total, pages = stamp_page(client, source, rpp, listing, mod, 1,
                                                    parser=parser)
            while True:
                totals.add(page_total)
                if cutoff is None:
                    cutoff = cutoff_of()
                    since = cutoff.tz_convert(tz).date() - dt.timedelta(days=OVERLAP_DAYS)
                    after = with_rules(filters, [{
                        "field": mod, "operator": "is after",
                        "value": format_filter_date(since, with_time=False)}])[0]
                # the stamps alone decide whether the next page is wanted; it is asked
                # for while this page is decoded
                stamps = decode_stamps(records, source, spec)
                seen = stamps.notna().to_numpy(dtype=bool)
                if number == 1 and len(seen) and not seen.any() and listing is not after:
                    # blanks sort first here: ask for the stamped records alone
                    assert after is not None
                    total = page_total
                    listing = after
                    break
                last = (len(records) < rpp or number >= pages or bool(
                    seen.any() and (bool((stamps[seen] < cutoff).any()) or not seen[-1])))
                following = None if last else ahead.submit(
                    stamp_page, client, source, rpp, listing, mod, number + 1,
                    parser=parser)
                older = (stamps < cutoff).to_numpy(dtype=bool)  # NaT: False, kept
                part = decode_page(client, source, rpp, listing, mod, number, records
                                   if not older.any() else
                                   [r for r, old in zip(records, older, strict=True)
                                    if not old])
                parts.append(part)
                if on_part is not None:
                    on_part(part)
                if following is None:
                    break
                records, page_total, pages = following.result()
                number += 1
            if not parts:  # switched to the stamped records alone
                continue
            if len(totals) == 1:
                break
            passes_left -= 1
            if passes_left <= 0:
                raise ConsistencyError(
                    f"the records of {describe(source)} changed while the recently stamped "
                    f"ones were paged ({MAX_WINDOW_PASSES} times): refresh again")
    finally:
        ahead.shutdown(wait=True)
    if listing is not after:
        total = totals.pop()
    return concat_parts(parts), total


def stamp_page(client: Client, source: Source, rpp: int, filters: Mapping[str, Any],
               mod: str, number: int, *, raw: bool = True,
               parser: Callable[[bytes], Any] | None = None
               ) -> tuple[list[Any], int, int]:
    """(records, total_records, total_pages) of one page sorted by ``mod``, newest first,
    in ``format=raw`` (parsed per field by ``parser``, default rawpages') unless ``raw``
    is False."""
    params = client.page_params(number, rpp, dict(filters) or None, mod, "desc")
    if raw:
        params["format"] = "raw"
        parser = parser or raw_page_parser(source.fields, parse_json)
    env = client.get_page(target_of(source), number, params=params,
                          parse=parser if raw else None)
    try:
        return (list(env["records"]), int(env.get("total_records") or 0),
                int(env.get("total_pages") or 0))
    except (TypeError, ValueError):
        raise ServerError(f"page {number} of {describe(source)}: total_pages/total_records "
                          "are not numbers") from None


def decode_stamps(records: Sequence[Any], source: Source, spec: FieldSpec) -> pd.Series:
    """The decoded stamps of a raw page (that field alone), in page order."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    got = build_frames(list(records), [spec], source, tz=tz, keep_original=False,
                       raw_format=True)
    # the field's first column is its date (a label alone may be named otherwise than
    # among all the fields, where labels that repeat are told apart)
    return got.main.iloc[:, 0] if len(got.main.columns) else \
        pd.Series([pd.NaT] * len(records), dtype="datetime64[ns, UTC]")


def decode_page(client: Client, source: Source, rpp: int, filters: Mapping[str, Any],
                mod: str, number: int, records: list[Any]) -> Frames:
    """A raw page decoded; asked again with display values when a raw value needs them
    (a name-like connection: its ids are only in the display HTML)."""
    try:
        return decode(records, source, raw=True)
    except DisplayValuesNeeded:
        again, _, _ = stamp_page(client, source, rpp, filters, mod, number, raw=False)
        return decode(again, source)


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


def paged(client: Client, source: Source, rpp: int, filters: Mapping[str, Any]) -> Frames:
    """The decoded records of a filtered listing, asked for with ``format=raw`` (~40% fewer
    bytes); again with display values when a raw value needs its display (a name-like
    connection: its ids are only in the display HTML)."""
    pager = Paginator(client, target_of(source), rows_per_page=rpp, filters=dict(filters),
                      verify="none")
    pager.ask_raw(source.fields)
    try:
        return decode(pager.records(), source, raw=True)
    except DisplayValuesNeeded:
        return decode(Paginator(client, target_of(source), rows_per_page=rpp,
                                filters=dict(filters), verify="none").records(), source)
