"""The requests of one listing: its options checked and its query prepared once, the
format of the pages still to come, a page fetched and checked, the quota a pass needs.

``PageFetcher`` is the state the paging strategies share (the fetch window, the verifier
and the keyset pass read it; ``Paginator`` is one); it holds no pass and no result.

Usage::

    fetcher = PageFetcher(client, "object_3", LoadOptions.of(rows_per_page=1000))
    page = fetcher.fetch(1, pass_no=1)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..errors import QuotaInsufficient, ServerError, UsageError
from ..http.body import Body, BodyBuffers, parse_json
from ..kinds.rawvalues import RawRecord
from ..lookup import target_keys
from ..query import Query
from .keyset import KeyRange, KeyValues, key_values
from .options import LoadOptions
from .page import Page, PageFormat, PassReport
from .rawpages import raw_page_parser

if TYPE_CHECKING:
    from ..keys import Target
    from ..kinds.base import FieldSpec
    from ..records import Client

__all__ = ["PageFetcher"]


class PageFetcher:
    """The request side of a listing, shared by the paging strategies: ``Paginator``
    is one, and its docstring says what the options (``on_first``, ``on_idle``, ``stop``,
    ...) do.

    ``options`` is the listing's ``LoadOptions`` (filters, sort, limit, rows per page,
    verify, workers), checked once by ``LoadOptions.of``; a caller without one gives its
    fields as keywords instead (``**given``: ``LoadOptions.of`` checks them). Prepared
    options (``LoadOptions.prepared``: the loaders, export) send their ``query`` as it
    is, and their target is checked against the schema once it is in; otherwise the
    filters are encoded without the application (a ``Query`` given as filters, as a
    refresh does, is sent as it is). The other keywords are this listing's own, not a
    load's options."""

    def __init__(self, client: Client, target: Target, options: LoadOptions | None = None,
                 *, max_passes: int = 3, prefetch: int | None = None, keep_ids: bool = True,
                 on_page: Callable[[Page], None] | None = None,
                 on_first: Callable[[Page], None] | None = None,
                 stop: Callable[[Page], bool] | None = None, keyset: bool = False,
                 ahead: int = 0, **given: Any) -> None:
        if options is None:
            options = LoadOptions.of(**given)
        elif given:
            raise UsageError(f"a listing takes LoadOptions or keywords, not both: "
                             f"{sorted(given)}")
        if max_passes < 1:
            raise UsageError(f"max_passes must be >= 1, got {max_passes!r}")
        limit, rows_per_page = options.limit, options.rows_per_page
        sort_field, sort_order = options.sort_field, options.sort_order
        self.client = client
        self.target = target
        self.options = options
        self.limit = limit
        self.rows_per_page = rows_per_page
        if limit is not None and 0 < limit < rows_per_page:
            self.rows_per_page = limit  # smaller pages: no bytes fetched to be dropped
        # validates target, rows_per_page and sort before any request
        client.records_path(target)
        self.params = client.page_params(1, rows_per_page, None, sort_field, sort_order)
        self.params["rows_per_page"] = self.rows_per_page
        self.max_workers = options.max_workers or client.max_workers
        # pages requested ahead of the one being consumed: bounds memory (a parsed page of
        # 1000 wide records is tens of MB), so a streaming consumer stays flat
        self.prefetch = max(1, prefetch or self.max_workers * 2)
        self.max_passes = max_passes
        self.verify = options.verify
        # read when each request is sent, so a consumer that learns after page 1 that it
        # can decode raw values alone (the loaders) switches the pages still to come
        self.page_format: PageFormat = "both"
        self.raw_parser: Callable[[Body], Any] | None = None
        # raw pages are read into these, reused page after page (``ask_raw``)
        self.buffers: BodyBuffers | None = None
        self.on_page = on_page
        self.on_first = on_first
        self.on_idle: Callable[[Callable[[], bool]], None] | None = None
        self.stop = stop
        # pages after page 1 asked beside it, before its answer tells whether they exist
        # (a caller that expects them: a stamp window that will likely need two pages)
        self.ahead = max(0, ahead)
        # the reports of the passes made (the strategies append theirs)
        self.passes: list[PassReport] = []
        # keep_ids=False (streaming export): ids are tracked as 64-bit hashes in numpy
        self.keep_ids = keep_ids
        self.total_records: int | None = None
        self.total_pages: int | None = None
        # the filters every page request of this pager sends: prepared once, before
        # (options.query), or checked once (LoadOptions.of) and encoded here
        filters = options.filters
        self.query = options.query if options.query is not None else \
            filters if isinstance(filters, Query) else Query.of_checked(filters)
        if self.query.text is not None:
            self.params["filters"] = self.query.text
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
            self.params.update(sort_field=self.key_field, sort_order="asc")
        if options.query is not None and client.schema_read:
            # a prepared listing (the loaders, export), the schema in (read above, or
            # before): a key it does not hold is refused here, listing what exists, not
            # by the service after a record request
            target_keys(client.schema(), target)

    # ---- fetching ------------------------------------------------------------------------
    def fetch(self, number: int, pass_no: int, notify: bool = True,
              key_range: KeyRange | KeyValues | None = None) -> Page:
        """Page ``number`` of pass ``pass_no`` in the current ``page_format`` (a keyset
        page: page 1 of ``key_range``'s own listing), checked; ``on_page`` told."""
        fmt = self.page_format
        params = dict(self.params, page=number)
        if key_range is not None:   # page 1 of the range's own listing
            assert self.key_field is not None
            params["page"] = 1
            params["filters"] = key_range.query(self.query, self.key_field).text
            if isinstance(key_range, KeyRange):
                params["rows_per_page"] = key_range.rows(self.rows_per_page)
        if fmt != "both":
            params["format"] = fmt
        raw = fmt == "raw"
        env = self.client.get_page(self.target, page=number, params=params,
                                   parse=self.raw_parser if raw else None,
                                   into=self.buffers if raw else None)
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
                decode: Callable[[Body], Any] | None = None) -> None:
        """Request the pages still to come with ``format=raw``, parsed into records with
        a slot per field (rawpages), or decoded as they arrive by ``decode`` (a
        PageDecoder's), each read into a buffer reused page after page (as many as the
        pages in flight: ``prefetch``, and two beside the window's: page 1 verified,
        a keyset gap check). Usage: ``pager.ask_raw(fields)``"""
        self.raw_parser = decode or raw_page_parser(fields, parse_json)
        self.page_format = "raw"
        if self.buffers is None:
            self.buffers = BodyBuffers(self.prefetch + 2)

    def release_buffers(self) -> None:
        """Unmap the buffers raw pages were read into (the listing's pages are in):
        pages fetched after this are read as bytes."""
        buffers, self.buffers = self.buffers, None
        if buffers is not None:
            buffers.close()

    def pages_in(self, more: bool, pending: Iterable[Future[Any]]) -> None:
        """A pass's pages received (none ``more`` to ask, every ``pending`` one answered):
        the buffers are released now, not after the consumer has decoded those pages (a
        body read from now on, as page 1 verified, a refetch, a gap check or a next pass,
        is read as bytes). Usage: ``pager.pages_in(bool(todo), pending)``"""
        if not more and all(fut.done() for fut in pending):
            self.release_buffers()

    def ask_both(self) -> None:
        """Request the pages still to come with raw and display values (the default)."""
        self.page_format = "both"

    def pages_wanted(self, first: Page) -> int:
        """The pages a pass plans after its first page (the estimate, capped by ``limit``)."""
        n = first.total_pages
        if n == 0 and first.records:
            n = 1
        if self.limit is not None:
            n = min(n, math.ceil(self.limit / self.rows_per_page)) if self.limit else 0
        return max(n, 1)

    def stopped(self, page: Page, report: PassReport) -> bool:
        """Whether the caller's stop condition ends the pass at ``page`` (noted in its
        ``report``: a stopped pass is not expected to hold every record)."""
        if self.stop is None or not self.stop(page):
            return False
        report.stopped = True
        return True

    def answer(self, pending: Future[Any], idle: bool = True) -> Any:
        """A requested page; while it is still on its way, the consumer's ``on_idle``
        (``idle=False``: a side thread's wait, which must not run the consumer's work)."""
        if idle and self.on_idle is not None and not pending.done():
            self.on_idle(lambda: not pending.done())
        return pending.result()

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
            f"{self.what()}: this load needs {needed} more requests ({wanted - 1} pages "
            f"after page 1, {verify} to verify) but only {left} are left of the daily "
            f"quota (limit {quota.limit if quota else '?'}{reset}); nothing more was sent. "
            "Narrow it (filters, limit), or run it after the reset",
            needed=needed, remaining=left, reset_at=quota.reset_at if quota else None,
            limit=quota.limit if quota else None)

    def what(self) -> str:
        """The target as messages name it."""
        return self.client.records_path(self.target)[2]
