"""The fetch window of one pass: its pages handed out in order while the next ones are on
their way, side by side within the client's pace.

The window opens slowly (four pages more per page handed out, up to ``prefetch``): a
service renders concurrent requests side by side, so a burst would delay page 2 until all
of them are done and leave the consumer idle. After the announced pages a full last page
means the data grew, so the next page is fetched too; an empty page or ``limit`` ends the
pass. A fetcher's ``ahead`` pages are asked right behind page 1 of the first pass, before
its answer (a caller that expects them saves that round trip). With ``verify="first"``
page 1 is asked again right behind the last page request (``early``): the verification
costs no round trip of its own.

Usage::

    window = FetchWindow(fetcher, PassReport(1))
    for page in window.pages():
        ...
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from .fetch import PageFetcher
from .page import Page, PassReport

__all__ = ["FetchWindow", "Submit"]

Submit = Callable[[ThreadPoolExecutor, int], "Future[Page]"]
"""Asks for page ``number`` of a pass in a pool (default: by its number)."""


class FetchWindow:
    """The pages of one pass, in order (``first``: its page 1, fetched already).

    ``on_all_in`` is called once, with the pages not yet handed out, when the consumer
    asks for a page and every page the pass planned has been answered: a consumer slower
    than the pages learns what they hold before it has decoded them (the keyset pass
    sends its gap check then). ``submit`` replaces the request of a page by number.
    Once every page the pass planned is in, the fetcher's buffers are released
    (``PageFetcher.pages_in``), not held through the decode of the last pages."""

    def __init__(self, fetcher: PageFetcher, report: PassReport, first: Page | None = None,
                 on_all_in: Callable[[list[Page]], None] | None = None,
                 submit: Submit | None = None) -> None:
        self.fetcher = fetcher
        self.report = report
        self.pass_no = report.pass_no
        self.first = first
        self.on_all_in = on_all_in
        self.submit = submit
        self.pending: dict[int, Future[Page]] = {}   # requested, not yet handed out
        self.next_submit = 2
        self.wanted = 0          # the pages the pass plans (the data may grow past them)
        self.pool: ThreadPoolExecutor | None = None
        # page 1 again, asked right behind the last page request (verify="first"), and
        # whether the pass went past its plan since (then it is asked again at the end)
        self.early: Future[Page] | None = None
        self.early_stale = False

    def pages(self) -> Iterator[Page]:
        """Yield the pass's pages in order."""
        f = self.fetcher
        if self.first is not None or self.pass_no != 1 or not f.ahead:
            yield from self._pages(self.first or f.fetch(1, self.pass_no))
            return
        # the fetcher's ``ahead`` pages asked beside page 1, before its answer: they join
        # the window's requests; unused, they are waited for (their requests are counted)
        with ThreadPoolExecutor(max_workers=1 + f.ahead,
                                thread_name_prefix="svc-page") as side:
            first = side.submit(f.fetch, 1, self.pass_no)
            for n in range(2, 2 + f.ahead):   # each behind the one before for the pace
                self.pending[n] = side.submit(self._behind, [first, *self.pending.values()],
                                              n, True)
            self.next_submit = 2 + f.ahead
            try:
                yield from self._pages(first.result())
            finally:
                for fut in self.pending.values():
                    fut.cancel()

    def _pages(self, first: Page) -> Iterator[Page]:
        """The pass's pages in order, from its page 1 (answered)."""
        f = self.fetcher
        if self.pass_no == 1:
            f.total_records, f.total_pages = first.total_records, first.total_pages
        if f.stopped(first, self.report) or (not first.records or f.limit == 0
                or (f.limit is not None and len(first.records) >= f.limit)):
            yield first
            return
        self.wanted = f.pages_wanted(first)
        if self.pass_no == 1 and f.stop is None:
            f.check_quota(self.wanted)
            if f.on_first is not None:
                f.on_first(first)
        first_out = False  # page 1 is handed out once the next pages are on their way
        with ThreadPoolExecutor(max_workers=f.max_workers,
                                thread_name_prefix="svc-page") as pool:
            self.pool = pool
            number = 2
            got = len(first.records)
            last_full = len(first.records) >= f.rows_per_page
            top_total = first.total_records
            try:
                while True:
                    self._top_up(number)
                    if not first_out:
                        first_out = True
                        yield first
                    if number > self.wanted:
                        # past the announced pages: go on only while the last page was full
                        # and some page announced more records than we have
                        if (not last_full or got >= top_total
                                or (f.limit is not None and got >= f.limit)):
                            break
                        self.wanted = number  # total was an estimate: the data grew
                        self.early_stale = True
                        continue
                    if self.on_all_in is not None and self.next_submit > self.wanted and all(
                            fut.done() and fut.exception() is None
                            for fut in self.pending.values()):
                        self.on_all_in([self.pending[n].result() for n in sorted(self.pending)])
                        self.on_all_in = None
                    page = f.answer(self.pending.pop(number))
                    f.pages_in(self.next_submit <= self.wanted, self.pending.values())
                    if f.stopped(page, self.report):
                        yield page
                        break
                    if (len(page.records) >= f.rows_per_page and number < self.wanted
                            and (f.limit is None or got + len(page.records) < f.limit)):
                        # the window opens as the page is handed out, not once the
                        # consumer is done with it: the next requests overlap its decode
                        self._top_up(number + 1)
                    yield page
                    got += len(page.records)
                    last_full = len(page.records) >= f.rows_per_page
                    top_total = max(top_total, page.total_records)
                    if not page.records and page.key_range is None:
                        break   # stop on an empty page (a range may hold none)
                    if f.limit is not None and got >= f.limit:
                        break
                    number += 1
            finally:
                for fut in self.pending.values():
                    fut.cancel()

    def _top_up(self, number: int) -> None:
        """Requests up to the window of page ``number`` being the next one out: the
        announced pages, then one more while the last was full."""
        f, pool = self.fetcher, self.pool
        assert pool is not None
        window = min(f.prefetch, 4 * (number - 1))
        while self.next_submit <= self.wanted and len(self.pending) < window:
            self.pending[self.next_submit] = (
                self.submit(pool, self.next_submit) if self.submit
                else pool.submit(f.fetch, self.next_submit, self.pass_no))
            self.next_submit += 1
        if (self.next_submit > self.wanted and self.early is None and self.wanted > 1
                and f.verify == "first" and f.key_field is None):
            # the verification request right behind the last page request (it takes the
            # next slot), not after its answer: no extra round trip
            self.early = pool.submit(self._behind, list(self.pending.values()), 1, False)

    def _behind(self, futures: list[Future[Page]], number: int, notify: bool) -> Page:
        """Page ``number`` (page 1 again: ``notify=False``), sent once every request of
        ``futures`` has started (so it queues for its pace slot behind them)."""
        while not all(fut.running() or fut.done() for fut in futures):
            time.sleep(0.002)
        time.sleep(0.005)  # each has reserved its slot by now (the first thing it does)
        return self.fetcher.fetch(number, self.pass_no, notify=notify)
