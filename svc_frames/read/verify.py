"""Passes over a listing paged by number, verified: the ids each pass took, and whether
it is consistent (see read/pager.py's docstring for what a pass can and cannot see).

Usage::

    verifier = Verifier(fetcher, passes)
    for page in verifier.pages():      # every page of every pass, until one is consistent
        ...
    verifier.final_ids                 # or final_hashes (keep_ids=False)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ConsistencyError
from .fetch import PageFetcher
from .page import Page, PassReport, id_hashes, record_ids
from .window import FetchWindow

__all__ = ["SeenIds", "Verifier"]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


class SeenIds:
    """The ids a pass has taken, in order and each once (with ``keep_ids=False`` their
    64-bit hashes: flat memory)."""

    def __init__(self, keep_ids: bool) -> None:
        self.keep_ids = keep_ids
        self.ids: list[str] = []
        self.seen: set[str] = set()
        self.hashes: list[np.ndarray] = []

    def take(self, report: PassReport, page: Page) -> list[str]:
        """Count ``page`` in ``report`` and note its ids (a repeated one is dropped);
        returns the page's ids (none when only hashes are kept)."""
        report.pages += 1
        report.records += len(page.records)
        report.totals.add(page.total_records)
        if not self.keep_ids:
            self.hashes.append(id_hashes(page.records))
            return []
        page_ids = record_ids(page.records)
        if self.seen.isdisjoint(page_ids) and len(set(page_ids)) == len(page_ids):
            self.seen.update(page_ids)  # the usual page: all new, in C
            self.ids.extend(page_ids)
            return page_ids
        for rid in page_ids:
            if rid in self.seen:
                report.duplicates += 1
                report.repeated.add(rid)
            else:
                self.seen.add(rid)
                self.ids.append(rid)
        return page_ids

    def finish(self, report: PassReport) -> tuple[list[str] | None, np.ndarray | None]:
        """The pass's ids (or sorted hashes), its distinct count on ``report``."""
        if self.keep_ids:
            report.distinct = len(self.ids)
            return self.ids, None
        order = np.concatenate(self.hashes) if self.hashes else np.empty(0, np.int64)
        uniq = np.unique(order)
        report.duplicates = len(order) - len(uniq)
        report.distinct = len(uniq)
        return None, np.sort(uniq)


class Verifier:
    """Passes by page number until one is consistent (``max_passes`` in all); their
    reports go to ``passes``, the consistent pass's ids to ``final_ids`` (or its sorted
    hashes to ``final_hashes``)."""

    def __init__(self, fetcher: PageFetcher, passes: list[PassReport]) -> None:
        self.fetcher = fetcher
        self.passes = passes
        self.final_ids: list[str] | None = None
        self.final_hashes: np.ndarray | None = None
        # the previous pass's ids (or hashes) in order, and its totals
        self.previous: tuple[Any, set[int]] | None = None

    def pages(self) -> Iterator[Page]:
        """Every page of every pass, in order; ConsistencyError when no pass is."""
        f = self.fetcher
        for pass_no in range(1, f.max_passes + 1):
            report = PassReport(pass_no)
            self.passes.append(report)
            window = FetchWindow(f, report)
            seen = SeenIds(f.keep_ids)
            head: list[str] = []
            for page in window.pages():
                page_ids = seen.take(report, page)
                if report.pages == 1:  # page 1's ids, for verify="first" (hashes or not)
                    head = page_ids if f.keep_ids else record_ids(page.records)
                yield page
            if self._judge_pass(report, seen, window, head):
                return
        raise ConsistencyError(
            f"records of {f.what()} kept moving while paging: {f.max_passes} passes, "
            f"none consistent (last: {self.passes[-1].reason}); try again, or sort by a "
            "field that does not change")

    def _judge_pass(self, report: PassReport, seen: SeenIds, window: FetchWindow,
                    head: list[str]) -> bool:
        """Whether the pass just made is consistent (then its ids are the result)."""
        f = self.fetcher
        ids = seen.ids
        order: Any = ids
        if not f.keep_ids:
            order = np.concatenate(seen.hashes) if seen.hashes else np.empty(0, np.int64)
            _, first = np.unique(order, return_index=True)
            report.duplicates = len(order) - len(first)
            order = order[np.sort(first)]
        report.distinct = len(order)
        report.consistent, report.reason = self._judge(report)
        if report.consistent and f.verify == "first" and report.pages > 1:
            report.consistent, report.reason = self._recheck_first(window, head, report)
        previous = self.previous
        same = previous is not None and _same(previous[0], order)
        if report.consistent and f.verify == "full" and not same:
            report.consistent, report.reason = False, "full verification: another pass"
        if (not report.consistent and not report.duplicates and same
                and previous is not None and previous[1] == report.totals):
            # two passes saw exactly the same records: nothing moved, the service's
            # total is just an estimate that does not match (it is allowed to be)
            report.consistent = True
        self.previous = (order, report.totals)
        if not report.consistent:
            return False
        if f.keep_ids:
            self.final_ids = ids if f.limit is None else ids[: f.limit]
        else:
            kept = order if f.limit is None else order[: f.limit]
            self.final_hashes = np.sort(kept)
        return True

    def _recheck_first(self, window: FetchWindow, head: list[str],
                       r: PassReport) -> tuple[bool, str]:
        """One more request: page 1 again. An insert and a delete that cancel out leave the
        count right but shift pages; if they touched the first page, this sees it."""
        if window.early is not None and not window.early_stale:
            again = window.early.result()
        else:
            again = self.fetcher.fetch(1, window.pass_no, notify=False)
        first_ids = record_ids(again.records)
        if again.total_records not in r.totals or first_ids != head:
            return False, "page 1 changed during the pass"
        return True, ""

    def _judge(self, r: PassReport) -> tuple[bool, str]:
        if len(r.totals) > 1:
            return False, f"total_records changed during the pass ({sorted(r.totals)})"
        if r.duplicates:
            return False, f"{r.duplicates} record(s) came twice (pages shifted)"
        total = next(iter(r.totals))
        limit = self.fetcher.limit
        expected = total if limit is None else min(total, limit)
        if r.distinct < expected and not r.stopped:
            return False, f"{r.distinct} distinct records for total_records {total}"
        return True, ""
