"""The keyset pass: one pass over a listing in the order of an auto-increment field
(``key_field``), which shifts no record (keyset.py holds its arithmetic).

Page 1 is asked sorted by the field. Without a filter of the load's own and with dense
values, the pages by number follow as *ordered pages*, and a *gap check* asks for the
records whose values lie between the pages (a record moved past a boundary meanwhile); the
page before the last goes as the records between its neighbours when they are in by its
turn in the pace, so the check leaves beside it. Otherwise the pass asks for *ranges* of
values planned from page 1 (and the largest value, asked beside it). Consistent by
construction; a repeated id is dropped. Page 1 with a blank or repeated value: the pass
yields nothing and ``done`` stays False (paging by number follows).

Usage::

    keyset = KeysetPass(fetcher, passes)
    for page in keyset.pages():
        ...
    if keyset.done: keyset.final_ids, keyset.reordered
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from itertools import chain

import numpy as np

from ..errors import ConsistencyError, ServerError
from .fetch import PageFetcher
from .keyset import (
    KeyRange,
    KeyValues,
    Span,
    check_tests,
    dense,
    gap_checks,
    key_values,
    ordered_key_values,
    page_span,
    plan_ranges,
    span_gaps,
)
from .page import Page, PassReport
from .verify import SeenIds
from .window import FetchWindow

__all__ = ["KeysetPass"]

Checks = list[KeyRange | KeyValues]


def _in_key_order(ids: list[str], pages_keys: Sequence[Sequence[int]],
                  pages_ids: Sequence[Sequence[str]]) -> list[str]:
    """``ids`` (each once) in the order of their key values, read from the pages' values
    and ids side by side (a record on two pages has one value: it comes once). A page
    without its values (``[]``) puts its ids last, in page order."""
    if all(len(k) == len(i) for k, i in zip(pages_keys, pages_ids, strict=True)):
        keys = np.fromiter(chain.from_iterable(pages_keys), dtype=np.int64)
        _, first = np.unique(keys, return_index=True)   # ascending, a repeat once
        every = list(chain.from_iterable(pages_ids))
        ordered = [every[i] for i in first.tolist()]
        if len(ordered) == len(ids):   # one value per record, as an auto-increment field
            return ordered
    order = {rid: k for keys_, ids_ in zip(pages_keys, pages_ids, strict=True)
             for k, rid in zip(keys_, ids_, strict=False)}
    return sorted(ids, key=lambda rid: order.get(rid, math.inf))


def _span_of(page: Page, keys: Sequence[int]) -> Span | None:
    """What an ordered page (its key values ``keys``) answered for (``page_span``)."""
    return page_span(keys, page.key_range, page.total_records <= len(page.records))


class KeysetPass:
    """One pass over ``fetcher.key_field`` (see the module docstring); its report goes to
    ``passes``, its ids to ``final_ids`` (or ``final_hashes``)."""

    def __init__(self, fetcher: PageFetcher, passes: list[PassReport]) -> None:
        self.fetcher = fetcher
        self.passes = passes
        self.key = fetcher.key_field or ""
        self.report = PassReport(1)
        self.seen = SeenIds(fetcher.keep_ids)
        self.done = False            # the pass was made (else paging by number follows)
        # the final ids are in another order than the pages came: records a gap check
        # found, put where their key belongs (the loader orders its frame so)
        self.reordered = False
        self.final_ids: list[str] | None = None
        self.final_hashes: np.ndarray | None = None
        # ordered pages: what each page handed out holds and answered for
        self.pages_keys: list[list[int]] = []
        self.pages_ids: list[list[str]] = []
        self.spans: list[Span | None] = []   # what each page answered for (keyset.py)
        # the gap checks, sent as soon as the gaps are known: their own and their pages
        self.early: Future[tuple[Checks, list[Page]]] | None = None
        self.side: ThreadPoolExecutor | None = None
        self.wanted = 0
        self.between: int | None = None
        self.per_check = 0
        # what each page by number answered for, noted as it is answered (a page not in
        # the key's order, or failed, in ``unsorted``); the pages themselves are not kept
        # here, so each is freed once the consumer has decoded it
        self.answered: dict[int, Span | None] = {}
        self.unsorted: set[int] = set()
        self.noted = threading.Condition()
        self.before: Future[Page] = Future()   # the latest page by number asked
        self.held: dict[int, Future[Page]] = {}   # the last page, asked ahead of its turn

    def pages(self) -> Iterator[Page]:
        """The pass's pages, in order (none when page 1 shows it cannot be made)."""
        f, key = self.fetcher, self.key
        unfiltered = f.query.text is None
        if unfiltered:   # ordered pages need no largest value; thin values plan without it
            first, top = f.fetch(1, 1), None
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-top") as side:
                top_future = side.submit(self._top_key)   # beside page 1: no round trip more
                first = f.fetch(1, 1)
                top = top_future.result() if first.total_records > len(first.records) \
                    else None
        keys = ordered_key_values(first.records, key)
        if keys is None:
            return
        self.done = True
        self.passes.append(self.report)
        f.total_records, f.total_pages = first.total_records, first.total_pages
        if unfiltered and dense(keys) and first.total_records > len(first.records):
            yield from self._ordered(first, keys)
        else:
            yield from self._ranges(first, keys, top)
        self.final_ids, self.final_hashes = self.seen.finish(self.report)
        self.report.consistent = True

    # ---- ordered pages and their gap check -------------------------------------------
    def _ordered(self, first: Page, keys: list[int]) -> Iterator[Page]:
        f, key, report, seen = self.fetcher, self.key, self.report, self.seen
        self.side = ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-gaps")
        self.wanted = f.pages_wanted(first)
        # the page before the last is asked for last, as the records between its
        # neighbours when they are in by its turn in the pace (``_fetch_between``): the
        # gap check then leaves beside it, not one round trip after it
        self.between = self.wanted - 1 if self.wanted >= 3 else None
        # values a check lists: a page's at most, and the rules a request over a list
        # this long may hold (the service's filter limit)
        self.per_check = min(f.rows_per_page, check_tests(first.total_records))
        self.answered[1] = page_span(keys)
        self.before.set_result(first)
        found_any = False
        try:
            window = FetchWindow(f, report, first, on_all_in=self._all_in,
                                 submit=self._submit)
            for page in window.pages():
                page_keys = ordered_key_values(page.records, key)
                if page_keys is None:
                    raise ConsistencyError(
                        f"page {page.number} of {f.what()} is not sorted by {key} "
                        "as asked (or a value is blank): which records moved cannot "
                        "be told; try again, or load with a sort of your own")
                self.pages_keys.append(page_keys)
                self.spans.append(_span_of(page, page_keys))
                self.pages_ids.append(seen.take(report, page))
                yield page
            checks = gap_checks(span_gaps(self.spans), self.per_check)
            report.reason = f"ordered pages by {key}, {len(checks)} gap check(s)"
            ran: tuple[Checks, list[Page]] | None = None
            if self.early is not None:
                try:
                    ran = f.answer(self.early)
                except Exception:   # noqa: BLE001 - the checks are sent again below
                    ran = None
            found: Iterable[Page]
            if ran is not None and ran[0] == checks:
                found = ran[1]
            else:   # the pass went past its plan (the list grew): check it all again
                found = self._ranged(checks, report.pages, None)
            for page in found:
                page.number = report.pages + 1
                self.pages_keys.append(key_values(page.records, key) or [])
                self.pages_ids.append(seen.take(report, page))
                found_any = found_any or bool(self.pages_ids[-1])
                yield page
        finally:
            self.side.shutdown(wait=True, cancel_futures=True)
        if found_any:
            # what the checks found lies between pages: the ids in the key's order (the
            # loader puts its frame in it: a load sorted by the key stays so)
            seen.ids[:] = _in_key_order(seen.ids, self.pages_keys, self.pages_ids)
            self.reordered = True

    def _note(self, number: int, fut: Future[Page]) -> None:
        """What page ``number`` by number answered for, once it is in."""
        try:
            k = ordered_key_values(fut.result().records, self.key)
        except BaseException:   # noqa: BLE001 - failed or cancelled: the pass raises
            k = None
        with self.noted:
            if k is None:
                self.unsorted.add(number)
            else:
                self.answered[number] = page_span(k)
            self.noted.notify_all()

    def _by_number(self, pool: ThreadPoolExecutor, number: int) -> Future[Page]:
        fut = pool.submit(self.fetcher.fetch, number, 1)
        if number <= self.wanted:
            fut.add_done_callback(partial(self._note, number))
        return fut

    def _submit(self, pool: ThreadPoolExecutor, number: int) -> Future[Page]:
        """The window's request of page ``number``: by number, but the page between two
        others (asked after the last) and the last (asked ahead of its turn)."""
        if number in self.held:
            return self.held.pop(number)
        if number == self.between:
            self.held[number + 1] = self._by_number(pool, number + 1)
            return pool.submit(self._fetch_between, number, self.before,
                               self.held[number + 1])
        self.before = self._by_number(pool, number)
        return self.before

    def _run_checks(self, checks: Checks, number: int) -> tuple[Checks, list[Page]]:
        return checks, list(self._ranged(checks, number, None, idle=False))

    def _checks_beside(self, covered: Span) -> None:
        """The page between two others goes as a range (``covered``): the gaps of the
        pages by number are checked beside it, once they are all in."""
        assert self.side is not None
        self.early = self.side.submit(self._check_beside, covered)

    def _check_beside(self, covered: Span) -> tuple[Checks, list[Page]]:
        numbers = [n for n in range(1, self.wanted + 1) if n != self.between]
        with self.noted:
            self.noted.wait_for(lambda: all(n in self.answered or n in self.unsorted
                                            for n in numbers))
            if self.unsorted:
                return [], []   # the pass raises when it reaches that page
            spans = [self.answered[n] for n in numbers]
        spans.insert(self.wanted - 2, covered)
        return self._run_checks(gap_checks(span_gaps(spans), self.per_check), self.wanted)

    def _all_in(self, rest: list[Page]) -> None:
        """Every page answered, the consumer still decoding: the gap check goes now, its
        answer in while the consumer catches up (the gaps are those of the pages as
        answered, whenever the check is made)."""
        if self.early is not None:
            return   # sent beside the page between two others
        rest_spans: list[Span | None] = []
        for p in rest:
            k = ordered_key_values(p.records, self.key)
            if k is None:
                return   # the pass raises when it reaches that page
            rest_spans.append(_span_of(p, k))
        checks = gap_checks(span_gaps(self.spans + rest_spans), self.per_check)
        if checks:
            assert self.side is not None
            self.early = self.side.submit(self._run_checks, checks,
                                          len(self.spans) + len(rest))

    def _fetch_between(self, number: int, before: Future[Page], after: Future[Page]) -> Page:
        """Ordered page ``number``, asked for after the pages on either side of it: when
        both are in by the time the pace would let it go, the records whose key lies
        strictly between them (a ``KeyRange``: no gap on either side of it, and the gap
        check learns so before it is sent), else the page by its number, no later than
        that (unpaced: by its number). Nothing lies between them: no request."""
        f, key = self.fetcher, self.key
        limiter = f.client.limiter
        if not limiter.rate:
            return f.fetch(number, 1)   # unpaced: nothing to wait out, by its number
        # the pace's next slot, asked again as the wait goes: the neighbour asked just
        # before this page may book its own start meanwhile, and this one's comes after
        while not (before.done() and after.done()):
            hold = limiter.next_start() - limiter.now()
            if hold <= 0:
                break
            wait((before, after), timeout=min(hold, 0.05))
        lo = hi = None
        if before.done() and after.done() and before.exception() is None \
                and after.exception() is None:
            lo = ordered_key_values(before.result().records, key)
            hi = ordered_key_values(after.result().records, key)
        if not lo or hi is None:
            return f.fetch(number, 1)
        rng = KeyRange(lo[-1], hi[0] - 1 if hi else None)
        self._checks_beside((lo[-1], rng.upto))
        if rng.upto is not None and rng.upto <= lo[-1]:
            page = Page(number, [], 0, 0, 1, f.page_format, key_range=rng)
            if f.on_page is not None:
                f.on_page(page)
            return page
        return f.fetch(number, 1, key_range=rng)

    # ---- ranges ------------------------------------------------------------------------
    def _ranges(self, first: Page, keys: list[int], top: int | None) -> Iterator[Page]:
        f, report, seen = self.fetcher, self.report, self.seen
        ranges = plan_ranges(keys, first.total_records, f.rows_per_page, top) \
            if first.total_records > len(first.records) else []
        if ranges:
            f.check_quota(len(ranges) + 1)
            if f.on_first is not None:
                f.on_first(first)
        seen.take(report, first)
        for page in self._ranged(ranges, 1, first):
            if page is not first:
                seen.take(report, page)
            yield page
        report.reason = f"keyset: {report.pages} ranges of {self.key}"

    def _ranged(self, ranges: Sequence[KeyRange | KeyValues], number: int,
                lead: Page | None, idle: bool = True) -> Iterator[Page]:
        """The pages of ``ranges`` (each page 1 of its own filter), side by side within
        the pace and the slow-start window, in order, numbered after ``number``; a range
        whose answer says it holds more than the page goes on from its last value, next
        in order. ``lead`` (page 1) is yielded first, once the first window is sent: the
        consumer's decode of it overlaps their trips instead of preceding them."""
        f, key = self.fetcher, self.key
        with ThreadPoolExecutor(max_workers=f.max_workers,
                                thread_name_prefix="svc-range") as pool:
            todo = list(reversed(ranges))
            pending: list[Future[Page]] = []
            sent = number
            try:
                self._send_ranges(pool, todo, pending, sent)
                if lead is not None:
                    yield lead
                while todo or pending:
                    self._send_ranges(pool, todo, pending, sent)
                    page = f.answer(pending.pop(0), idle)
                    number += 1
                    sent += 1
                    page.number = number
                    rng = page.key_range
                    if page.total_records > len(page.records) and page.records \
                            and rng is not None:
                        last = key_values(page.records[-1:], key)
                        if not last:
                            raise ConsistencyError(
                                f"{f.what()}: a page of records by {key} whose last "
                                f"value is blank: where its range goes on cannot be told")
                        pending.insert(0, pool.submit(f.fetch, 0, 1, True,
                                                      rng.rest(last[0])))
                    if lead is not None:   # the pass's own ranges (not a gap check's)
                        f.pages_in(bool(todo), pending)
                    yield page
            finally:
                for fut in pending:
                    fut.cancel()

    def _send_ranges(self, pool: ThreadPoolExecutor, todo: list[KeyRange | KeyValues],
                     pending: list[Future[Page]], sent: int) -> None:
        """Ranges of ``todo`` asked for up to the slow-start window (``sent``: the page
        number reached so far)."""
        window = min(self.fetcher.prefetch, 4 * sent)
        while todo and len(pending) < window:
            pending.append(pool.submit(self.fetcher.fetch, 0, 1, True, todo.pop()))

    def _top_key(self) -> int | None:
        """The largest value of ``key_field`` in the listing (one row, sorted descending);
        None when it cannot be read (the plan then guesses from page 1)."""
        f = self.fetcher
        # in page 1's format: a load that asked for display values gets no raw page
        params = dict(f.params, page=1, rows_per_page=1, sort_order="desc")
        try:
            env = f.client.get_page(f.target, params=params)
        except ServerError:
            return None
        recs = env.get("records") or []
        vals = key_values(recs[:1], self.key) if recs else None
        return vals[0] if vals else None
