"""Page plan, concurrent fetch within the client's pace, and consistency checks.

Page-number paging can skip or repeat a record inserted, deleted or re-sorted while a run
is under way (docs/hosted-behaviour.md §1.1), so a :class:`Paginator` treats ``total_records`` and
``total_pages`` as estimates and checks every *pass* over the pages:

* stop conditions: an empty page ends a pass; after the planned pages a full last page
  means the data grew, so the next page is fetched too; ``limit`` stops early;
* a pass is *consistent* when every page reported the same ``total_records``, no id came
  twice, and the pass holds ``total_records`` distinct ids (or ``limit`` of them);
* what that sees: every page reports the total at the moment it is answered, so an
  insert or a delete between two page answers shows as a changed total; a re-sorted
  record (its sort field edited) shows as an id seen twice or a pass short of the total;
* what it cannot see: an insert and a delete landing between the same two page answers
  (tens of milliseconds apart while pages come in parallel) keep every count right but
  may shift a record past a page boundary. So, when a pass looks consistent, page 1 is
  fetched once more (``verify="first"``, the default), which catches such a pair when it
  touches page 1; ``verify="full"`` wants two passes that agree, the full guarantee, at
  twice the requests; ``verify="none"`` trusts the counts;
* a load the daily quota cannot finish is refused after page 1, before any other page
  request (:class:`QuotaInsufficient`: needed vs left), when the service reports the quota;
* an inconsistent pass is fetched again (``max_passes`` in all); if none is consistent,
  :class:`ConsistencyError` is raised: a pass that shows records moved is never used.

Usage::

    pager = Paginator(client, "object_1", rows_per_page=1000, limit=None)
    records = pager.records()           # the last consistent pass, de-duplicated, in order
    for page in Paginator(client, ("scene_1", "view_2")).iter_pages():  # streaming
        ...                             # page.records; consumers de-duplicate by id
"""

from __future__ import annotations

import math
import operator
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConsistencyError, QuotaInsufficient, ServerError, UsageError
from ..filters import prepare_query
from ..http.body import parse_json
from ..kinds.rawvalues import RawRecord
from ..query import Query, needs_schema, validate_filters
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
from .rawpages import raw_page_parser

if TYPE_CHECKING:
    from zoneinfo import ZoneInfo

    from ..filters import Filters
    from ..frames import Frames
    from ..keys import Target
    from ..kinds.base import FieldSpec
    from ..records import Client


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


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


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


class _Seen:
    """The ids a keyset pass has taken, in order and each once (with ``keep_ids=False``
    their 64-bit hashes: flat memory), and what it hands the pager at the end."""

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

    def finish(self, report: PassReport, pager: Paginator) -> None:
        """The pass's ids (or sorted hashes) on ``pager``, its distinct count on ``report``."""
        if self.keep_ids:
            pager.final_ids = self.ids
            report.distinct = len(self.ids)
            return
        order = np.concatenate(self.hashes) if self.hashes else np.empty(0, np.int64)
        uniq = np.unique(order)
        report.duplicates = len(order) - len(uniq)
        report.distinct = len(uniq)
        pager.final_hashes = np.sort(uniq)


class Paginator:
    """Fetch every page of an object or a view (see module docstring).

    ``schema_checks=True`` (the loaders and export) checks filters against the schema and
    puts aware times in the application's timezone (``timezone``, else the schema's); the
    result is ``query``, which a refresh passes back as ``filters`` to send the same bytes.

    ``on_first`` is called with page 1 of the first pass (one of several pages) before any
    other page is requested: a consumer that learns from it that raw values will do
    (``ask_raw``) gets every later page in that format, not only those requested after it
    has seen page 1.

    ``on_idle`` is called when the next page is asked for and its answer is not in yet,
    with a function that tells whether it is still on its way: the consumer's chance to
    do work that would otherwise wait for the end (the loaders join their page frames
    there), in the time it would spend waiting anyway, and to stop when the page is in.

    ``stop`` is the caller's own stop condition: asked with each page of a pass (in order,
    before the next page is requested), True ends the pass after that page. A stopped pass
    holds the pages it needed: it is judged by its totals and repeats alone, and no quota
    check is made for pages it will not ask for (a refresh's stamp window: the listing
    newest first, down to the cutoff)."""

    def __init__(self, client: Client, target: Target, *, rows_per_page: int = 1000,
                 filters: Filters | Query | None = None, sort_field: str | None = None,
                 sort_order: str | None = None, limit: int | None = None,
                 max_workers: int | None = None, max_passes: int = 3,
                 verify: Verify = "first", prefetch: int | None = None,
                 keep_ids: bool = True, schema_checks: bool = False,
                 timezone: ZoneInfo | None = None,
                 on_page: Callable[[Page], None] | None = None,
                 on_first: Callable[[Page], None] | None = None,
                 stop: Callable[[Page], bool] | None = None, keyset: bool = False) -> None:
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                                  or limit < 0):
            raise UsageError(f"limit must be a non-negative integer, got {limit!r}")
        if max_passes < 1:
            raise UsageError(f"max_passes must be >= 1, got {max_passes!r}")
        self.client = client
        self.target = target
        self.limit = limit
        self.rows_per_page = rows_per_page
        if limit is not None and 0 < limit < rows_per_page:
            self.rows_per_page = limit  # smaller pages: no bytes fetched to be dropped
        # validates target, rows_per_page, filters and sort before any request
        client.records_path(target)
        self._params = client.page_params(1, rows_per_page, None, sort_field, sort_order)
        # a Query was prepared already (a refresh, a cache load: the load's own bytes)
        checked = None if isinstance(filters, Query) else validate_filters(filters)
        self._params["rows_per_page"] = self.rows_per_page
        self.max_workers = max_workers or client.max_workers
        # pages requested ahead of the one being consumed: bounds memory (a parsed page of
        # 1000 wide records is tens of MB), so a streaming consumer stays flat
        self.prefetch = max(1, prefetch or self.max_workers * 2)
        if verify not in ("first", "full", "none"):
            raise UsageError(f"verify must be 'first', 'full' or 'none', got {verify!r}")
        self.max_passes = max_passes
        self.verify = verify
        # read when each request is sent, so a consumer that learns after page 1 that it
        # can decode raw values alone (the loaders) switches the pages still to come
        self.page_format: PageFormat = "both"
        self._raw_parser: Callable[[bytes], Any] | None = None
        self.on_page = on_page
        self.on_first = on_first
        self.on_idle: Callable[[Callable[[], bool]], None] | None = None
        self.stop = stop
        self.passes: list[PassReport] = []
        self.final_ids: list[str] | None = None
        # keep_ids=False (streaming export): ids are tracked as 64-bit hashes in numpy
        self.keep_ids = keep_ids
        self.final_hashes: np.ndarray | None = None
        # the final ids are in another order than the pages came: records a keyset gap
        # check found, put where their key belongs (the loader orders its frame so)
        self.reordered = False
        self.total_records: int | None = None
        self.total_pages: int | None = None
        self._lock = threading.Lock()
        self._early: Future[Page] | None = None
        self._early_stale = False
        # schema_checks (the loaders, export; not internal re-reads), last, once everything
        # else is checked: a rule with a value is checked against the schema (a request),
        # its dates put in the application's timezone (``timezone`` or the schema's)
        if isinstance(filters, Query):
            self.query = filters
        elif schema_checks and needs_schema(checked):
            schema = client.schema()
            # labels and unknown keys are looked up among the target's own fields first
            own, where = schema.target_fields(target)
            self.query = prepare_query(checked, schema.all_fields(),
                                       timezone or schema.timezone, own=own, where=where)
        else:
            self.query = Query.of(checked)
        # the filters every page request of this pager sends, prepared once
        if self.query.text is not None:
            self._params["filters"] = self.query.text
        # keyset paging (keyset.py) over the object's auto-increment field, when asked
        # for (the loaders) and the listing has no cut of its own, and no order other
        # than that field's, ascending (the order keyset paging returns); a sorted load
        # asks only a schema already read (else it would wait for one before page 1 for
        # a sort by any other field)
        self.key_field: str | None = None
        if keyset and limit is None and stop is None and isinstance(target, str) \
                and (sort_field is None or ((sort_order or "asc") == "asc"
                                            and client.schema_read)) \
                and len(self.query.also([])) == 1:
            fields = client.schema().object_fields(target) or []
            key = next((f.key for f in fields if f.kind == "auto_increment"), None)
            if sort_field is None or sort_field == key:
                self.key_field = key
        if self.key_field is not None:
            self._params.update(sort_field=self.key_field, sort_order="asc")

    # ---- fetching ------------------------------------------------------------------------
    def _fetch(self, number: int, pass_no: int, notify: bool = True,
               key_range: KeyRange | KeyValues | None = None) -> Page:
        fmt = self.page_format
        params = dict(self._params, page=number)
        if key_range is not None:   # page 1 of the range's own listing
            assert self.key_field is not None
            params["page"] = 1
            params["filters"] = key_range.query(self.query, self.key_field).text
            if isinstance(key_range, KeyRange):
                params["rows_per_page"] = key_range.rows(self.rows_per_page)
        if fmt != "both":
            params["format"] = fmt
        env = self.client.get_page(self.target, page=number, params=params,
                                   parse=self._raw_parser if fmt == "raw" else None)
        try:
            total_pages = int(env.get("total_pages") or 0)
            total_records = int(env.get("total_records") or 0)
        except (TypeError, ValueError):
            raise ServerError(f"page {number}: total_pages/total_records are not numbers: "
                              f"{env.get('total_pages')!r}/{env.get('total_records')!r}"
                              ) from None
        records = env["records"]
        for rec in records:
            if type(rec) is not dict:
                if isinstance(rec, RawRecord):
                    continue  # its id was checked by the parser
                raise ServerError(f"page {number}: a record that is not an object")
            if not isinstance(rec.get("id"), str):
                raise ServerError(f"page {number}: a record without a string id")
        if isinstance(key_range, KeyRange) and key_range.seek:
            # a seek's total counts every record past its start: it goes on only while
            # its page came full and ended inside the range (the records past the range
            # that came with it are another page's: the pass keeps each record once)
            last = key_values(records[-1:], self.key_field or "") or []
            full = len(records) >= int(params["rows_per_page"])
            upto = key_range.upto
            total_records = len(records) + int(full and upto is not None
                                               and any(v < upto for v in last))
        page = Page(number, records, total_pages, total_records, pass_no, fmt,
                    "frames" in env, env.get("frames"), key_range)
        if notify and self.on_page is not None:
            self.on_page(page)
        return page

    def ask_raw(self, fields: Sequence[FieldSpec],
                decode: Callable[[bytes], Any] | None = None) -> None:
        """Request the pages still to come with ``format=raw``, parsed into records with
        a slot per field (rawpages), or decoded as they arrive by ``decode`` (a
        PageDecoder's). Usage: ``pager.ask_raw(fields)``"""
        self._raw_parser = decode or raw_page_parser(fields, parse_json)
        self.page_format = "raw"

    def ask_both(self) -> None:
        """Request the pages still to come with raw and display values (the default)."""
        self.page_format = "both"

    def refetch(self, page: Page) -> Page:
        """``page`` again, in the current ``page_format`` (its pass and number); raises
        ConsistencyError if it no longer holds the same records. A keyset page is asked
        for by its own values (an ordered page: the range from its first value to its
        last), so others' edits move nothing in or out of it but deletes, and a record
        deleted meanwhile is simply left out (one deleted during the load may come or not).

        Usage: ``page = pager.refetch(page)``"""
        rng = page.key_range
        if rng is None and self.key_field is not None:
            keys = key_values(page.records, self.key_field)
            if keys:
                rng = KeyRange(keys[0] - 1, keys[-1])
        again = self._fetch(page.number, page.pass_no, notify=False, key_range=rng)
        before = record_ids(page.records)
        if rng is not None:
            held = set(before)
            again.records = [r for r in again.records if r["id"] in held]
        now = record_ids(again.records)
        kept = set(now)
        if now != (before if rng is None else [i for i in before if i in kept]):
            raise ConsistencyError(
                f"page {page.number} of {self._what()} changed while it was fetched again "
                "with display values; try again, or sort by a field that does not change")
        return again

    def pages_wanted(self, first: Page) -> int:
        """The pages a pass plans after its first page (the estimate, capped by ``limit``)."""
        n = first.total_pages
        if n == 0 and first.records:
            n = 1
        if self.limit is not None:
            n = min(n, math.ceil(self.limit / self.rows_per_page)) if self.limit else 0
        return max(n, 1)

    def _one_pass(self, pass_no: int, first: Page | None = None,
                  on_all_in: Callable[[list[Page]], None] | None = None,
                  submit: Callable[[ThreadPoolExecutor, int], Future[Page]] | None = None
                  ) -> Iterator[Page]:
        """Yield the pages of one pass, in order, fetched concurrently within the pace
        (``first``: its page 1, fetched already). ``on_all_in`` is called once, with the
        pages not yet handed out, when the consumer asks for a page and every page the
        pass planned has been answered: a consumer slower than the pages learns what
        they hold before it has decoded them (the keyset pass sends its gap check then).
        ``submit(pool, number)`` asks for page ``number`` (default: by its number)."""
        first = first or self._fetch(1, pass_no)
        if pass_no == 1:
            self.total_records, self.total_pages = first.total_records, first.total_pages
        if self._stopped(first) or (not first.records or self.limit == 0
                or (self.limit is not None and len(first.records) >= self.limit)):
            yield first
            return
        wanted = self.pages_wanted(first)
        if pass_no == 1 and self.stop is None:
            self.check_quota(wanted)
            if self.on_first is not None:
                self.on_first(first)
        first_out = False  # page 1 is handed out once the next pages are on their way
        with ThreadPoolExecutor(max_workers=self.max_workers,
                                thread_name_prefix="svc-page") as pool:
            pending: dict[int, Future[Page]] = {}
            next_submit = 2
            number = 2
            got = len(first.records)
            last_full = len(first.records) >= self.rows_per_page
            top_total = first.total_records

            def top_up(number: int) -> None:
                """Requests up to the window of page ``number`` being the next one out."""
                nonlocal next_submit
                # plan: the announced pages, then one more while the last was full
                # slow start: a service renders concurrent requests side by side, so a
                # burst of ``prefetch`` requests would delay page 2 until all of them are
                # done and leave the consumer idle; the window opens by four pages per
                # page handed out
                window = min(self.prefetch, 4 * (number - 1))
                while next_submit <= wanted and len(pending) < window:
                    pending[next_submit] = submit(pool, next_submit) if submit else \
                        pool.submit(self._fetch, next_submit, pass_no)
                    next_submit += 1
                if (next_submit > wanted and self._early is None and wanted > 1
                        and self.verify == "first" and self.key_field is None):
                    # the verification request right behind the last page request (it
                    # takes the next slot), not after its answer: no extra round trip
                    self._early = pool.submit(self._first_after, list(pending.values()),
                                              pass_no)

            try:
                while True:
                    top_up(number)
                    if not first_out:
                        first_out = True
                        yield first
                    if number > wanted:
                        # past the announced pages: go on only while the last page was full
                        # and some page announced more records than we have
                        if (not last_full or got >= top_total
                                or (self.limit is not None and got >= self.limit)):
                            break
                        wanted = number  # total was an estimate: the data grew
                        self._early_stale = True
                        continue
                    if on_all_in is not None and next_submit > wanted and all(
                            f.done() and f.exception() is None for f in pending.values()):
                        on_all_in([pending[n].result() for n in sorted(pending)])
                        on_all_in = None
                    page = self._answer(pending.pop(number))
                    if self._stopped(page):
                        yield page
                        break
                    if (len(page.records) >= self.rows_per_page and number < wanted
                            and (self.limit is None
                                 or got + len(page.records) < self.limit)):
                        # the window opens as the page is handed out, not once the
                        # consumer is done with it: the next requests overlap its decode
                        top_up(number + 1)
                    yield page
                    got += len(page.records)
                    last_full = len(page.records) >= self.rows_per_page
                    top_total = max(top_total, page.total_records)
                    if not page.records and page.key_range is None:
                        break   # stop on an empty page (a range may hold none)
                    if self.limit is not None and got >= self.limit:
                        break
                    number += 1
            finally:
                for fut in pending.values():
                    fut.cancel()

    def _stopped(self, page: Page) -> bool:
        """Whether the caller's stop condition ends the pass at ``page`` (noted in its
        report: a stopped pass is not expected to hold every record)."""
        if self.stop is None or not self.stop(page):
            return False
        self.passes[-1].stopped = True
        return True

    def _answer(self, pending: Future[Any], idle: bool = True) -> Any:
        """A requested page; while it is still on its way, the consumer's ``on_idle``
        (``idle=False``: a side thread's wait, which must not run the consumer's work)."""
        if idle and self.on_idle is not None and not pending.done():
            self.on_idle(lambda: not pending.done())
        return pending.result()

    def iter_pages(self) -> Iterator[Page]:
        """Every page of every pass, in order; passes repeat until one is consistent.

        Consumers de-duplicate by id; after the loop, ``final_ids`` (or, with
        ``keep_ids=False``, the sorted ``final_hashes``) says which records the consistent
        pass holds (records seen earlier but not there were deleted mid-run)."""
        if self.key_field is not None:
            yield from self._keyset_run()
            if self.key_field is not None:   # else page 1 showed it cannot be done
                return
        previous: tuple[Any, set[int]] | None = None
        for pass_no in range(1, self.max_passes + 1):
            self._early, self._early_stale = None, False
            report = PassReport(pass_no)
            self.passes.append(report)
            seen = _Seen(self.keep_ids)
            head: list[str] = []
            for page in self._one_pass(pass_no):
                page_ids = seen.take(report, page)
                if report.pages == 1:  # page 1's ids, for verify="first" (hashes or not)
                    head = page_ids if self.keep_ids else record_ids(page.records)
                yield page
            ids = seen.ids
            order: Any = ids
            if not self.keep_ids:
                order = np.concatenate(seen.hashes) if seen.hashes else np.empty(0, np.int64)
                _, first = np.unique(order, return_index=True)
                report.duplicates = len(order) - len(first)
                order = order[np.sort(first)]
            report.distinct = len(order)
            report.consistent, report.reason = self._judge(report)
            if report.consistent and self.verify == "first" and report.pages > 1:
                report.consistent, report.reason = self._recheck_first(pass_no, head,
                                                                       report)
            same = previous is not None and _same(previous[0], order)
            if report.consistent and self.verify == "full" and not same:
                report.consistent, report.reason = False, "full verification: another pass"
            if (not report.consistent and not report.duplicates and same
                    and previous is not None and previous[1] == report.totals):
                # two passes saw exactly the same records: nothing moved, the service's
                # total is just an estimate that does not match (it is allowed to be)
                report.consistent = True
            previous = (order, report.totals)
            if report.consistent:
                if self.keep_ids:
                    self.final_ids = ids if self.limit is None else ids[: self.limit]
                else:
                    kept = order if self.limit is None else order[: self.limit]
                    self.final_hashes = np.sort(kept)
                return
        raise ConsistencyError(
            f"records of {self._what()} kept moving while paging: {self.max_passes} passes, "
            f"none consistent (last: {self.passes[-1].reason}); try again, or sort by a "
            "field that does not change")

    def _keyset_run(self) -> Iterator[Page]:
        """One pass over ``key_field`` (keyset.py): page 1 sorted by it, then ordered pages
        and a check of their gaps (no filter of the load's own, dense values) or ranges
        past page 1 (else). Consistent by construction; a repeated id is dropped. Page 1
        with a blank or repeated value: ``key_field`` is set to None and nothing is
        yielded (page-number paging follows)."""
        report = PassReport(1)
        key = self.key_field or ""
        unfiltered = self.query.text is None
        if unfiltered:   # ordered pages need no largest value; thin values plan without it
            first, top = self._fetch(1, 1), None
        else:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-top") as side:
                top_future = side.submit(self._top_key)   # beside page 1: no round trip more
                first = self._fetch(1, 1)
                top = top_future.result() if first.total_records > len(first.records) \
                    else None
        keys = ordered_key_values(first.records, key)
        if keys is None:
            self.key_field = None
            self._params.pop("sort_field", None)
            self._params.pop("sort_order", None)
            return
        self.passes.append(report)
        self.total_records, self.total_pages = first.total_records, first.total_pages
        seen = _Seen(self.keep_ids)
        if unfiltered and dense(keys) and first.total_records > len(first.records):
            pages_keys: list[list[int]] = []
            pages_ids: list[list[str]] = []
            spans: list[Span | None] = []   # what each page answered for (keyset.py)
            # the gap checks, sent as soon as the gaps are known: their own and their pages
            early: Future[tuple[list[KeyRange | KeyValues], list[Page]]] | None = None
            side = ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-gaps")
            wanted = self.pages_wanted(first)
            # the page before the last is asked for last, as the records between its
            # neighbours when they are in by its turn in the pace (``_fetch_between``):
            # the gap check then leaves beside it, not one round trip after it
            between = wanted - 1 if wanted >= 3 else None
            # values a check lists: a page's at most, and the rules a request over a
            # list this long may hold (the service's filter limit)
            per_check = min(self.rows_per_page, check_tests(first.total_records))
            # what each page by number answered for, noted as it is answered (a page
            # not in the key's order, or failed, in ``unsorted``); the pages themselves
            # are not kept here, so each is freed once the consumer has decoded it
            answered: dict[int, Span | None] = {1: page_span(keys)}
            unsorted: set[int] = set()
            noted = threading.Condition()
            before: list[Future[Page]] = [Future()]   # the latest page by number asked
            before[0].set_result(first)
            held: dict[int, Future[Page]] = {}   # the last page, asked ahead of its turn

            def note(number: int, fut: Future[Page]) -> None:
                try:
                    k = ordered_key_values(fut.result().records, key)
                except BaseException:   # noqa: BLE001 - failed or cancelled: the pass raises
                    k = None
                with noted:
                    if k is None:
                        unsorted.add(number)
                    else:
                        answered[number] = page_span(k)
                    noted.notify_all()

            def by_number(pool: ThreadPoolExecutor, number: int) -> Future[Page]:
                fut = pool.submit(self._fetch, number, 1)
                if number <= wanted:
                    fut.add_done_callback(partial(note, number))
                return fut

            def submit(pool: ThreadPoolExecutor, number: int) -> Future[Page]:
                if number in held:
                    return held.pop(number)
                if number == between:
                    held[number + 1] = by_number(pool, number + 1)
                    return pool.submit(self._fetch_between, number, before[0],
                                       held[number + 1], checks_beside)
                before[0] = by_number(pool, number)
                return before[0]

            def run_checks(checks: list[KeyRange | KeyValues], number: int
                           ) -> tuple[list[KeyRange | KeyValues], list[Page]]:
                return checks, list(self._ranged(checks, number, None, idle=False))

            def checks_beside(covered: Span) -> None:
                """The page between two others goes as a range (``covered``): the gaps
                of the pages by number are checked beside it, once they are all in."""
                nonlocal early
                numbers = [n for n in range(1, wanted + 1) if n != between]

                def check() -> tuple[list[KeyRange | KeyValues], list[Page]]:
                    with noted:
                        noted.wait_for(lambda: all(n in answered or n in unsorted
                                                   for n in numbers))
                        if unsorted:
                            return [], []   # the pass raises when it reaches that page
                        spans_ = [answered[n] for n in numbers]
                    spans_.insert(wanted - 2, covered)
                    return run_checks(gap_checks(span_gaps(spans_), per_check), wanted)
                early = side.submit(check)

            def all_in(rest: list[Page]) -> None:
                """Every page answered, the consumer still decoding: the gap check goes
                now, its answer in while the consumer catches up (the gaps are those of
                the pages as answered, whenever the check is made)."""
                nonlocal early
                if early is not None:
                    return   # sent beside the page between two others
                rest_spans: list[Span | None] = []
                for p in rest:
                    k = ordered_key_values(p.records, key)
                    if k is None:
                        return   # the pass raises when it reaches that page
                    rest_spans.append(_span_of(p, k))
                checks = gap_checks(span_gaps(spans + rest_spans), per_check)
                if checks:
                    early = side.submit(run_checks, checks, len(spans) + len(rest))

            try:
                for page in self._one_pass(1, first, on_all_in=all_in, submit=submit):
                    page_keys = ordered_key_values(page.records, key)
                    if page_keys is None:
                        raise ConsistencyError(
                            f"page {page.number} of {self._what()} is not sorted by {key} "
                            "as asked (or a value is blank): which records moved cannot "
                            "be told; try again, or load with a sort of your own")
                    pages_keys.append(page_keys)
                    spans.append(_span_of(page, page_keys))
                    pages_ids.append(seen.take(report, page))
                    yield page
                checks = gap_checks(span_gaps(spans), per_check)
                report.reason = (f"ordered pages by {key}, {len(checks)} gap check(s)")
                ran: tuple[list[KeyRange | KeyValues], list[Page]] | None = None
                if early is not None:
                    try:
                        ran = self._answer(early)
                    except Exception:   # noqa: BLE001 - the checks are sent again below
                        ran = None
                found: Iterable[Page]
                if ran is not None and ran[0] == checks:
                    found = ran[1]
                else:   # the pass went past its plan (the list grew): check it all again
                    found = self._ranged(checks, report.pages, None)
                found_any = False
                for page in found:
                    page.number = report.pages + 1
                    pages_keys.append(key_values(page.records, key) or [])
                    pages_ids.append(seen.take(report, page))
                    found_any = found_any or bool(pages_ids[-1])
                    yield page
            finally:
                side.shutdown(wait=True, cancel_futures=True)
            if found_any:
                # what the checks found lies between pages: the ids in the key's order
                # (the loader puts its frame in it: a load sorted by the key stays so)
                seen.ids[:] = _in_key_order(seen.ids, pages_keys, pages_ids)
                self.reordered = True
        else:
            ranges = plan_ranges(keys, first.total_records, self.rows_per_page, top) \
                if first.total_records > len(first.records) else []
            if ranges:
                self.check_quota(len(ranges) + 1)
                if self.on_first is not None:
                    self.on_first(first)
            seen.take(report, first)
            for page in self._ranged(ranges, 1, first):
                if page is not first:
                    seen.take(report, page)
                yield page
            report.reason = f"keyset: {report.pages} ranges of {key}"
        seen.finish(report, self)
        report.consistent = True

    def _fetch_between(self, number: int, before: Future[Page], after: Future[Page],
                       on_range: Callable[[Span], None]) -> Page:
        """Ordered page ``number``, asked for after the pages on either side of it: when
        both are in by the time the pace would let it go, the records whose key lies
        strictly between them (a ``KeyRange``: no gap on either side of it, and
        ``on_range`` learns so before it is sent), else the page by its number, no later
        than that (unpaced: by its number). Nothing lies between them: no request."""
        key = self.key_field or ""
        limiter = self.client.limiter
        if not limiter.rate:
            return self._fetch(number, 1)   # unpaced: nothing to wait out, by its number
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
            return self._fetch(number, 1)
        rng = KeyRange(lo[-1], hi[0] - 1 if hi else None)
        on_range((lo[-1], rng.upto))
        if rng.upto is not None and rng.upto <= lo[-1]:
            page = Page(number, [], 0, 0, 1, self.page_format, key_range=rng)
            if self.on_page is not None:
                self.on_page(page)
            return page
        return self._fetch(number, 1, key_range=rng)

    def _ranged(self, ranges: Sequence[KeyRange | KeyValues], number: int,
                lead: Page | None, idle: bool = True) -> Iterator[Page]:
        """The pages of ``ranges`` (each page 1 of its own filter), side by side within
        the pace and the slow-start window, in order, numbered after ``number``; a range
        whose answer says it holds more than the page goes on from its last value, next
        in order. ``lead`` (page 1) is yielded first, once the first window is sent: the
        consumer's decode of it overlaps their trips instead of preceding them."""
        key = self.key_field or ""
        with ThreadPoolExecutor(max_workers=self.max_workers,
                                thread_name_prefix="svc-range") as pool:
            todo = list(reversed(ranges))
            pending: list[Future[Page]] = []
            sent = number

            def send() -> None:
                window = min(self.prefetch, 4 * sent)
                while todo and len(pending) < window:
                    pending.append(pool.submit(self._fetch, 0, 1, True, todo.pop()))

            try:
                send()
                if lead is not None:
                    yield lead
                while todo or pending:
                    send()
                    page = self._answer(pending.pop(0), idle)
                    number += 1
                    sent += 1
                    page.number = number
                    rng = page.key_range
                    if page.total_records > len(page.records) and page.records \
                            and rng is not None:
                        last = key_values(page.records[-1:], key)
                        if not last:
                            raise ConsistencyError(
                                f"{self._what()}: a page of records by {key} whose last "
                                f"value is blank: where its range goes on cannot be told")
                        pending.insert(0, pool.submit(self._fetch, 0, 1, True,
                                                      rng.rest(last[0])))
                    yield page
            finally:
                for fut in pending:
                    fut.cancel()

    def _top_key(self) -> int | None:
        """The largest value of ``key_field`` in the listing (one row, sorted descending);
        None when it cannot be read (the plan then guesses from page 1)."""
        # in page 1's format: a load that asked for display values gets no raw page
        params = dict(self._params, page=1, rows_per_page=1, sort_order="desc")
        try:
            env = self.client.get_page(self.target, params=params)
        except ServerError:
            return None
        recs = env.get("records") or []
        vals = key_values(recs[:1], self.key_field or "") if recs else None
        return vals[0] if vals else None

    def check_quota(self, wanted: int) -> None:
        """QuotaInsufficient when the requests still needed after page 1 (the other
        ``wanted - 1`` pages, plus page 1 again for ``verify="first"`` or a whole second
        pass for ``"full"``) exceed what is surely left of the daily quota
        (``client.quota_left()``, which counts requests still in flight, the schema
        included). Every view-based call counts too, with a user token or without
        (docs/hosted-behaviour.md §4). No quota reported: no check.

        Usage: ``pager.check_quota(pager.pages_wanted(first))``"""
        left = self.client.quota_left()
        if left is None:
            return
        verify = {"first": 1 if wanted > 1 else 0, "full": wanted, "none": 0}[self.verify]
        needed = wanted - 1 + verify
        if needed <= left:
            return
        quota = self.client.quota
        reset = (f", resets {quota.reset_at.isoformat(timespec='seconds')}" if quota
                 else "")
        raise QuotaInsufficient(
            f"{self._what()}: this load needs {needed} more requests ({wanted - 1} pages "
            f"after page 1, {verify} to verify) but only {left} are left of the daily "
            f"quota (limit {quota.limit if quota else '?'}{reset}); nothing more was sent. "
            "Narrow it (filters, limit), or run it after the reset",
            needed=needed, remaining=left, reset_at=quota.reset_at if quota else None,
            limit=quota.limit if quota else None)

    def _first_after(self, futures: list[Future[Page]], pass_no: int) -> Page:
        """Page 1 again, sent once every page request of the pass has started (so it
        queues for its pace slot behind them)."""
        while not all(f.running() or f.done() for f in futures):
            time.sleep(0.002)
        time.sleep(0.005)  # each has reserved its slot by now (the first thing it does)
        return self._fetch(1, pass_no, notify=False)

    def _recheck_first(self, pass_no: int, head: list[str],
                       r: PassReport) -> tuple[bool, str]:
        """One more request: page 1 again. An insert and a delete that cancel out leave the
        count right but shift pages; if they touched the first page, this sees it."""
        if self._early is not None and not self._early_stale:
            again = self._early.result()
        else:
            again = self._fetch(1, pass_no, notify=False)
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
        expected = total if self.limit is None else min(total, self.limit)
        if r.distinct < expected and not r.stopped:
            return False, f"{r.distinct} distinct records for total_records {total}"
        return True, ""

    def records(self) -> list[dict[str, Any]]:
        """All records of the consistent pass, in order, each id once (``limit`` applied).

        Usage: ``recs = Paginator(client, "object_1").records()``"""
        latest: dict[str, dict[str, Any]] = {}
        for page in self.iter_pages():
            for rec in page.records:
                latest[rec["id"]] = rec  # a later pass holds the fresher version
        assert self.final_ids is not None
        return [latest[rid] for rid in self.final_ids]

    def _what(self) -> str:
        return self.client.records_path(self.target)[2]

    @property
    def refetched(self) -> bool:
        """Whether more than one pass was needed."""
        return len(self.passes) > 1
