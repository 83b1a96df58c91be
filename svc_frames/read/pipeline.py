"""Pages to frames: the decisions every reader of pages shares, in one place.

A :class:`Paginator` owns the page plan, the request window, the consistency passes, the
quota check and the caller's stop condition; :class:`PagePipeline` owns what turns its
pages into frames: the raw/display format decision (``settle``, once, from page 1), the
decoding (in a helper process already, or here), and the fallback to display values for
a raw page that needs them (``frames``). Loads, exports, the cache and the refresh's
listings are callers with their own stop conditions; ``collect`` is the whole listing
as one Frames. Also here: when helper processes pay (``decode_helpers``) and joining
the frames of many pages (``PageParts``, ``concat_frames``).

Usage::

    pipe = PagePipeline(pager, fields, source, tz)
    pipe.settle(first_page)                    # raw pages from now on, when they will do
    parts = [pipe.frames(page) for page in pager.iter_pages()]
"""

from __future__ import annotations

import math
import os
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from ..arrowcols import member
from ..errors import DisplayValuesNeeded
from ..frames import Frames, Source, build_frames, decodes_raw_alone
from ..http.body import Body
from ..kinds.base import FieldSpec
from .pagecolumns import PageColumns, PageRows, Span
from .pager import Page, Paginator, record_ids


class PagePipeline:
    """The pages of one Paginator run turned into frames of ``source`` (``fields`` decoded
    in ``tz``): the format decision and its fallback kept with the pager whose pages they
    change. ``fields``/``source`` may be given later (``settle``: a load learns them from
    the schema and page 1)."""

    def __init__(self, pager: Paginator, fields: Sequence[FieldSpec] | None = None,
                 source: Source | None = None, tz: ZoneInfo | None = None) -> None:
        self.pager = pager
        self.fields = list(fields) if fields is not None else None
        self.source = source
        self.tz = tz

    def settle(self, first: Page | None, fields: Sequence[FieldSpec] | None = None,
               source: Source | None = None, *, raw_pages: bool = True,
               decoder: Callable[[], Callable[[Body], Any] | None] | None = None) -> bool:
        """Decide, once, the format of the pages still to come: ``format=raw`` (about 40%
        fewer bytes) when the schema gave every kind and ``first`` (raw and display values;
        None: nothing to look at, the kinds alone decide) shows that raw values alone will
        do. ``decoder`` is asked only then, for a helper's decode function (None: parse
        here). Returns whether raw pages come."""
        if fields is not None:
            self.fields = list(fields)
        if source is not None:
            self.source = source
        assert self.fields is not None and self.source is not None
        if not raw_pages or self.source.kinds_inferred:
            return False
        if first is not None and not decodes_raw_alone(first.records, self.fields):
            return False
        # pages answered ahead of the decoder only wait, in memory: a few cover the round
        # trip, more only raise the load's peak
        self.pager.prefetch = min(self.pager.prefetch, pages_ahead(self.pager.client.limiter.rate))
        self.pager.ask_raw(self.fields, decoder() if decoder is not None else None)
        return True

    def frames(self, page: Page, records: Sequence[Any] | None = None,
               into: PageRows | None = None) -> Frames:
        """The frames of ``page`` (or of ``records``, some of its records in page order):
        decoded already (PageDecoder), or decoded here (its columns ``into`` a pass's
        arrays: ``PageParts.add``). A raw page that needs display values (a name-like
        connection: its ids are only in the display HTML) is fetched again with them, as
        are the pages still to come."""
        assert self.fields is not None and self.source is not None
        if page.decoded and page.frames is not None and records is None:
            return page.frames
        wanted = page.records if records is None else records
        if not page.decoded:
            try:
                return build_frames(wanted, self.fields, self.source, tz=self.tz,
                                    keep_original=False, raw_format=page.format == "raw",
                                    into=into if records is None else None)
            except DisplayValuesNeeded:
                if page.format != "raw":
                    raise
        if into is not None:
            into.abandon()
        self.pager.ask_both()
        again = self.pager.refetch(page).records
        if records is not None:
            keep = set(record_ids(records))
            again = [r for r in again if r["id"] in keep]
        return build_frames(again, self.fields, self.source, tz=self.tz, keep_original=False)

    def collect(self) -> Frames:
        """Every page of the listing (the pager's stop condition and passes) decoded, as
        one Frames of the consistent pass, each record once, in order.

        Usage: ``PagePipeline(pager, source.fields, source, tz).collect()``"""
        assert self.source is not None
        parts = PageParts(self.pager)
        for page in self.pager.iter_pages():
            parts.add(page, self)
        if not any(n == self.pager.passes[-1].pass_no for n, _ in parts):
            parts.append(self.pager.passes[-1].pass_no, build_frames(
                [], self.fields or [], self.source, tz=self.tz, keep_original=False))
        return final_frames(self.pager, parts, self.source)


class PageParts:
    """The frames of a run's pages, in order, each with its pass number, joined as they
    come in while the reader would wait anyway: set as the pager's ``on_idle``, so that the
    join after the last answer is short (it was most of a load's time past its last
    answer but the round trip: docs/pacing.md).

    Adjacent parts of the current pass holding as many pages each are joined, pair by
    pair while the next page is still on its way (a binary counter: about log2(pages)
    parts are left, and each page is copied about log2(pages) times, in time otherwise
    spent waiting). A reader that never waits (its decoding is the bottleneck) joins
    nothing early. Once the pass has seen a record twice, a join keeps such a record on
    the later part only (``latest_only``): a joined part still holds each record once, as
    ``latest_only`` needs at the end (a live application's ordered pages repeat a few
    records in most loads, and stopping the joins left 40 parts to join after the last
    answer).

    A page decoded through ``add`` has the columns a join would copy in arrays made for
    its whole pass (read/pagecolumns.py): parts whose rows follow each other there join
    without copying them, and the last join holds them once, not twice.

    Usage: ``parts = PageParts(pager); frames = parts.add(page, pipe)``"""

    def __init__(self, pager: Paginator) -> None:
        self.pager = pager
        # pass, frames, pages in them, their rows in self.columns (None: none or not all)
        self._parts: list[tuple[int, Frames, int, Span | None]] = []
        self.columns = PageColumns()
        pager.on_idle = self.join_some

    def add(self, page: Page, pipe: PagePipeline) -> Frames:
        """``page`` decoded by ``pipe`` (its columns in the arrays of its pass), after the
        others; returns its frames."""
        # the records its pass is expected to hold: the pass's total (a keyset page's own
        # total is its range's), or the load's limit
        expected = max(self.pager.total_records or 0, page.total_records)
        if self.pager.limit is not None:
            expected = min(expected, self.pager.limit)
        rows = self.columns.rows(page.pass_no, expected)
        frames = pipe.frames(page, into=rows)
        self._parts.append((page.pass_no, frames, 1, rows.span(frames.main.shape)))
        return frames

    def append(self, pass_no: int, frames: Frames) -> None:
        """One more page's frames, after the others."""
        self._parts.append((pass_no, frames, 1, None))

    def __iter__(self) -> Iterator[tuple[int, Frames]]:
        return ((n, f) for n, f, _, _ in self._parts)

    def spans(self) -> Iterator[tuple[int, Frames, Span | None]]:
        """The parts, each with its rows in ``columns`` (None: not there, or not all)."""
        return ((n, f, s) for n, f, _, s in self._parts)

    def __len__(self) -> int:
        return len(self._parts)

    def join_some(self, waiting: Callable[[], bool] = lambda: True) -> None:
        """Join pairs of adjacent parts of the current pass holding as many pages each,
        the latest first, while ``waiting()`` (the next page is not in)."""
        while waiting() and self._join_one():
            pass

    def _join_one(self) -> bool:
        """Join the latest such pair; whether there was one."""
        passes = self.pager.passes
        # without ids kept (keep_ids=False) a pass counts its repeats only at its end
        if not passes or not self.pager.keep_ids:
            return False
        current = passes[-1].pass_no
        for i in range(len(self._parts) - 1, 0, -1):
            (n1, f1, k1, s1), (n2, f2, k2, s2) = self._parts[i - 1], self._parts[i]
            if n2 != current:
                return False
            if n1 == current and k1 == k2:
                assert f1.source is not None
                # a record on both (the pass has seen one twice) is kept on the later
                pair = latest_only([f1, f2], passes[-1].repeated or None) \
                    if passes[-1].duplicates else [f1, f2]
                spans = [s if p is f else None for p, f, s in zip(pair, (f1, f2), (s1, s2),
                                                                 strict=True)]
                self._parts[i - 1: i + 1] = [(current, concat_frames(pair, f1.source,
                                                                     spans=spans),
                                              k1 + k2, Span.joined(spans))]
                return True
        return False


def final_frames(pager: Paginator, parts: Iterable[tuple[int, Frames]], source: Source
                 ) -> Frames:
    """The page frames ``(pass number, frames)`` of the pager's consistent pass as one
    Frames, each record once: a record on two pages of the pass (pages shifted under a
    pass that allows it: ordered pages fetched side by side while others delete) is kept
    on its later page only.

    Usage: ``final_frames(pager, parts, source)``"""
    final = pager.passes[-1]
    listed = parts.spans() if isinstance(parts, PageParts) else \
        ((n, f, None) for n, f in parts)
    held = [(f, s) for n, f, s in listed if n == final.pass_no]
    kept = [f for f, _ in held]
    if final.duplicates:
        kept = latest_only(kept, final.repeated or None)
    spans = [s if k is f else None for k, (f, s) in zip(kept, held, strict=True)]
    # records a keyset gap check found go where their key puts them (pager.reordered)
    return concat_frames(kept, source, order=pager.final_ids if pager.reordered else None,
                         spans=spans)


def latest_only(parts: list[Frames], repeated: Collection[str] | None = None
                ) -> list[Frames]:
    """Page frames with a record listed on several pages (pages shifted while a pass
    without verification ran) kept on its last page only; its tables' rows follow it.
    ``repeated``: the ids that may be on several (the pass's ``repeated``; None: found
    here).

    Usage: ``concat_frames(latest_only(parts, report.repeated), source)``"""
    # only the repeated ids are looked for (a few, usually): walking every id in Python
    # after the last answer grows with the load
    if repeated is None:
        every = pd.Index(np.concatenate([f.main.index.to_numpy(dtype=object)
                                         for f in parts]) if parts else [])
        needles = list(every[every.duplicated(keep=False)].unique())
    else:
        needles = list(repeated)
    if not needles:
        return parts
    later: set[str] = set()   # repeated ids on a part after the one at hand
    out: list[Frames] = []
    for f in reversed(parts):
        ids = f.main.index
        hits = member(ids, needles)
        if hits.any():
            here = ids[hits]
            drop = np.zeros(len(ids), dtype=bool)
            drop[np.flatnonzero(hits)] = [i in later for i in here]
            later.update(here)
            if drop.any():
                gone = set(ids[drop])
                f = Frames(f.main[~drop], {k: t[~member(t[t.columns[0]], gone)]
                                           .reset_index(drop=True)
                                           for k, t in f.tables.items()}, f.source,
                           skipped={c: [i for i in kept if i not in gone]
                                    for c, kept in f.skipped.items()})
        out.append(f)
    out.reverse()
    return out


PAGES_AHEAD = 4
"""Pages requested ahead of the one being decoded, at most, once an unpaced load decodes
raw pages as they come. It decodes slower than the service answers (a wide 1000-record
page takes ~30-50 ms), so every page asked ahead waits in memory, parsed (~6 MB); a few
cover the round trip. The fetch window's default (twice the client's workers) held two
dozen at once, and 8 still raised the peak (docs/benchmarks.md, "A load's memory")."""

PACED_TRIP = 0.8
"""Seconds of its requests a paced load asks ahead (``pages_ahead``). Its pages come at
the pace, which one process decodes faster: they are requests in flight, not pages
waiting, and at the hosted 10/s 8 of them keep a round trip of up to 0.8 s from ever
holding the pace back."""

PACED_AHEAD = 8
"""Pages a paced load asks ahead at most (a fast pace outruns the decoder: pages wait)."""


def pages_ahead(rate: float) -> int:
    """Pages asked ahead of the one being decoded at ``rate`` requests/s (0: unpaced):
    :data:`PAGES_AHEAD` unpaced; paced, :data:`PACED_TRIP` seconds of its requests,
    between :data:`PAGES_AHEAD` and :data:`PACED_AHEAD`."""
    if not rate:
        return PAGES_AHEAD
    return max(PAGES_AHEAD, min(PACED_AHEAD, math.ceil(rate * PACED_TRIP)))


DECODER_MIN_PAGES = 8
"""Loads with fewer pages decode in process: a helper takes about half a second to start."""


DECODER_MIN_RATE = 20.0
"""Below this pace (requests/s) one process decodes pages faster than they arrive (a wide
1000-record page takes ~30-50 ms), so a helper would only cost memory."""


def decode_helpers(processes: int | None, pager: Paginator, first: Page) -> int:
    """How many helper processes decode the pages of this load (see ``load``): by default
    one, for a load of 8+ pages whose pace (0: unpaced) outruns one core, on a machine
    with a core to spare for it (:func:`core_idle`)."""
    if processes is not None:
        return processes
    rate = pager.client.limiter.rate
    fast = not rate or rate >= DECODER_MIN_RATE
    pages = pager.pages_wanted(first)
    return 1 if fast and pages >= DECODER_MIN_PAGES and core_idle() else 0


HELPER_CORES = 3
"""Cores a helper needs the machine to have: one for this process, one for the service and
one for the helper. A load faster than the hosted pace is a load from the local service
(the hosted one answers 10 requests/s), which runs on this machine. On 2 cores the helper
shares the service's core and does not pay even when it looks idle (the rounds measured:
docs/benchmark-history.md, "no decoder helper process on 2 cores")."""


def core_idle() -> bool:
    """Whether a core is free for a helper: :data:`HELPER_CORES` or more, and a load
    average (last minute) leaving one beyond this process and the service. On a busy
    machine a helper only competes for the cores this process and the service need
    (a cold load on 2 busy cores took more than twice as long with a helper:
    docs/benchmark-history.md, "no decoder helper process on 2 cores")."""
    cores = os.cpu_count() or 1
    if cores < HELPER_CORES:
        return False
    try:
        busy = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average (Windows): trust the core count
        return True
    return busy <= cores - (HELPER_CORES - 1)


def concat_frames(parts: list[Frames], source: Source,
                  order: Sequence[str] | None = None,
                  spans: Sequence[Span | None] | None = None) -> Frames:
    """Page frames -> one Frames (same columns and dtypes in every part); ``order``: the
    ids the main frame's rows follow (rows of no id in it are left out); ``spans``: each
    part's rows in a pass's arrays (``PageParts``): when they follow each other, the
    columns there are those rows, not copied."""
    if not parts:
        raise ValueError("no pages")
    skipped: dict[str, list[str]] = {}
    for p in parts:
        for col, ids in p.skipped.items():
            skipped.setdefault(col, []).extend(ids)
    mains = [p.main for p in parts] if order is None else \
        in_order([p.main for p in parts], order)
    if len(parts) == 1:
        return Frames(mains[0] if len(mains) == 1 else pd.concat(mains),
                      dict(parts[0].tables), source, skipped=skipped)
    joined = Span.joined(spans) if spans is not None and order is None else None
    main = pd.concat(mains) if joined is None else join_rest(mains, joined.arrays())
    names: list[str] = []
    for p in parts:
        names.extend(n for n in p.tables if n not in names)
    tables = {n: pd.concat([p.tables[n] for p in parts if n in p.tables], ignore_index=True)
              for n in names}
    return Frames(main, tables, source, skipped=skipped)


def join_rest(mains: list[pd.DataFrame], kept: dict[int, Any]) -> pd.DataFrame:
    """``mains`` joined, the columns at the positions of ``kept`` (already joined) taken
    from it: the others alone are concatenated (Arrow columns chunk: no copy)."""
    width = mains[0].shape[1]
    rest = [i for i in range(width) if i not in kept]
    slim = pd.concat([m.take(rest, axis=1) for m in mains])   # take: half iloc's time
    arrays = dict(kept)
    arrays.update((i, slim.iloc[:, j].array) for j, i in enumerate(rest))
    main = pd.DataFrame({i: arrays[i] for i in range(width)}, index=slim.index, copy=False)
    main.columns = mains[0].columns
    return main


MAX_PIECES = 256
"""``in_order`` cuts at most this many row slices; past that one take is cheaper."""


def in_order(mains: list[pd.DataFrame], order: Sequence[str]) -> list[pd.DataFrame]:
    """Row slices of ``mains`` whose concatenation holds the rows of the ids in ``order``,
    in that order: the few records a gap check found move between slices, and the one
    concat that follows copies each column once, where a take after it would copy every
    column again (a tenth of a second and more at 50,000 wide rows, after the last
    answer). A part that stays whole is passed as it is (slicing one costs a millisecond
    per part); ids are found with a dict, not the string index's hash table (several
    times slower). Many moved rows: one take, as one piece.

    Usage: ``pd.concat(in_order([f.main for f in parts], pager.final_ids))``"""
    ids = list(chain.from_iterable(m.index.tolist() for m in mains))
    where = dict(zip(ids, range(len(ids)), strict=True))
    at = np.array(list(map(where.get, order, repeat(-1))), dtype=np.intp)
    at = at[at >= 0]
    if not len(at):
        return [mains[0].iloc[:0]]
    cuts = np.flatnonzero(np.diff(at) != 1) + 1
    if len(cuts) >= MAX_PIECES:
        whole = pd.concat(mains) if len(mains) > 1 else mains[0]
        return [whole.take(at)]
    bounds = np.cumsum([0] + [len(m) for m in mains]).tolist()
    pieces: list[pd.DataFrame] = []
    for run in np.split(at, cuts):
        lo, hi = int(run[0]), int(run[-1]) + 1    # a run of rows, consecutive overall
        i = bisect_right(bounds, lo) - 1
        while lo < hi:                             # cut where one part ends
            stop = min(hi, bounds[i + 1])
            entire = lo == bounds[i] and stop == bounds[i + 1]
            pieces.append(mains[i] if entire else mains[i].iloc[lo - bounds[i]: stop - bounds[i]])
            lo, i = stop, i + 1
    return pieces
