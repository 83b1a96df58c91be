"""Paginator: every page of an object or a view, fetched within the client's pace and verified.

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

The Paginator is a thin facade over the request side it shares with its strategies
(``fetch.py``: options, query, a page fetched, the quota check), the fetch window of a pass
(``window.py``), the verification of passes by number (``verify.py``) and the keyset pass
in an auto-increment field's order (``keysetpass.py``).

Usage::

    pager = Paginator(client, "object_1", LoadOptions.of(rows_per_page=1000))
    records = pager.records()           # the last consistent pass, de-duplicated, in order
    for page in Paginator(client, ("scene_1", "view_2")).iter_pages():  # streaming
        ...                             # page.records; consumers de-duplicate by id
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ConsistencyError
from .fetch import PageFetcher
from .keyset import KeyRange, key_values
from .keysetpass import KeysetPass
from .page import Page, PageFormat, PassReport, Verify, id_hashes, record_ids
from .verify import Verifier

if TYPE_CHECKING:
    import numpy as np


__all__ = ["Page", "PageFormat", "Paginator", "PassReport", "Verify", "id_hashes",
           "record_ids"]


class Paginator(PageFetcher):
    """Fetch every page of an object or a view (see the module docstring).

    Options prepared (``LoadOptions.prepared``: the loaders and export) carry the filters
    checked against the schema, aware times in the application's timezone: ``query``,
    which a refresh passes back as ``filters`` to send the same bytes.

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
    newest first, down to the cutoff).

    ``ahead``: pages after page 1 that the first pass asks for beside it, before page 1's
    answer says whether they exist: a round trip saved when they do, a request spent (and
    its answer waited for) when they do not."""

    final_ids: list[str] | None = None
    # keep_ids=False (streaming export): the consistent pass's ids as sorted 64-bit hashes
    final_hashes: np.ndarray | None = None
    # the final ids are in another order than the pages came: records a keyset gap check
    # found, put where their key belongs (the loader orders its frame so)
    reordered = False

    def iter_pages(self) -> Iterator[Page]:
        """Every page of every pass, in order; passes repeat until one is consistent.

        Consumers de-duplicate by id; after the loop, ``final_ids`` (or, with
        ``keep_ids=False``, the sorted ``final_hashes``) says which records the consistent
        pass holds (records seen earlier but not there were deleted mid-run)."""
        try:
            if self.key_field is not None:
                keyset = KeysetPass(self, self.passes)
                yield from keyset.pages()
                if keyset.done:
                    self.final_ids, self.final_hashes = keyset.final_ids, keyset.final_hashes
                    self.reordered = keyset.reordered
                    return
                # page 1 showed it cannot be done: paging by number follows
                self.key_field = None
                self.params.pop("sort_field", None)
                self.params.pop("sort_order", None)
            verifier = Verifier(self, self.passes)
            yield from verifier.pages()
            self.final_ids, self.final_hashes = verifier.final_ids, verifier.final_hashes
        finally:
            self.release_buffers()   # released once a pass's pages are in; else here

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
        again = self.fetch(page.number, page.pass_no, notify=False, key_range=rng)
        before = record_ids(page.records)
        if rng is not None:
            held = set(before)
            again.records = [r for r in again.records if r["id"] in held]
        now = record_ids(again.records)
        kept = set(now)
        if now != (before if rng is None else [i for i in before if i in kept]):
            raise ConsistencyError(
                f"page {page.number} of {self.what()} changed while it was fetched again "
                "with display values; try again, or sort by a field that does not change")
        return again

    def records(self) -> list[dict[str, Any]]:
        """All records of the consistent pass, in order, each id once (``limit`` applied).

        Usage: ``recs = Paginator(client, "object_1").records()``"""
        latest: dict[str, dict[str, Any]] = {}
        for page in self.iter_pages():
            for rec in page.records:
                latest[rec["id"]] = rec  # a later pass holds the fresher version
        assert self.final_ids is not None
        return [latest[rid] for rid in self.final_ids]

    @property
    def refetched(self) -> bool:
        """Whether more than one pass was needed."""
        return len(self.passes) > 1
