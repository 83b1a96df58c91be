"""``load``: every page of an object or a view into typed ``Frames``, one load at a time
(``read_object``, ``read_view``, ``read_app`` and the cache call it).

Kinds come from the application schema when the service exposes it (fetched in parallel
with the first page), otherwise they are inferred from the raw shapes.

Usage: ``frames = load(client, "object_3", LoadOptions.of(filters=f, limit=10))``
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

from ..arrowcols import member
from ..errors import UsageError
from ..frames import Frames, Source, warn_skipped
from ..http.body import Body
from ..keys import Target
from ..kinds.base import FieldSpec
from ..progress import PageProgress, want_progress
from ..query import Query
from ..records import Client
from ..schema import Schema
from .gcpause import gc_paused_call
from .options import LoadOptions
from .pager import Page, Paginator
from .pipeline import PageParts, PagePipeline, decode_helpers, final_frames
from .target import describe
from .workers import PageDecoder


@gc_paused_call
def load(client: Client, target: Target, options: LoadOptions | None = None, *,
         on_page: Callable[[Page], None] | None = None,
         on_frames: Callable[[int, Frames], None] | None = None, **given: Any) -> Frames:
    """read_object / read_view for a target (``"object_N"`` or ``("scene_N", "view_N")``).

    With a schema, each page is decoded as soon as it arrives, while later pages are still
    on the wire; without one, kinds are inferred from all records at the end.

    Page 1 comes with raw and display values (kinds are inferred from both when there is no
    schema). When the schema gives every kind and page 1 shows that raw values alone will
    do, the pages still to come are asked for with ``format=raw`` (``raw_pages=False``
    keeps both): fewer bytes to send, read and parse (docs/benchmarks.md) (the decision and its
    fallback are ``PagePipeline``'s, as for every reader of pages). Raw pages of a large load
    are decoded in ``processes`` helper processes (read/workers.py) while this one fetches;
    by default one on a machine with 3+ cores (``core_idle``), for loads of 8 pages or
    more paced at 20 requests/s or more (or unpaced): at the hosted 10/s one core keeps up.

    ``options`` is the load's ``LoadOptions`` (read_object builds it; a caller without one
    may give its fields as keywords instead: ``LoadOptions.of`` checks them). Its query is
    prepared here, once, before the first page (``LoadOptions.prepared``).
    ``on_page`` replaces the progress bar (read_app: one bar over the pages of every
    object); ``options.max_workers`` bounds this load's requests in flight (default: the
    client's). ``on_frames`` is given each page's frames with its pass number as they are
    decoded, in order, before the next page is taken (the mirror writes them while later
    pages are on the wire); the frames returned are still the consistent pass's, each
    record once, which the pages given need not be (several passes, repeats)."""
    if options is None:
        options = LoadOptions.of(**given)
    elif given:
        raise UsageError(f"load takes LoadOptions or keywords, not both: {sorted(given)}")
    started = dt.datetime.now(dt.timezone.utc)
    bar = PageProgress(want_progress(options.progress) and on_page is None,
                       client.records_path(target)[2])
    opts = options.prepared(client, target)   # the query every page request sends
    columns, tz, processes = opts.columns, opts.timezone, opts.processes
    # the Paginator checks the target before any request
    pager = Paginator(client, target, opts, on_page=on_page or bar, keyset=True)
    asked = load_params(opts)
    asked["loaded_at"] = started.isoformat(timespec="seconds")
    pipe = PagePipeline(pager, tz=tz)
    # what a page keeps once decoded: the key values the keyset pass may still read
    key_names = [pager.key_field, f"{pager.key_field}_raw"] if pager.key_field else []
    parts = PageParts(pager)   # joined while the pager waits for answers
    collected: list[Page] | None = None  # no schema: decode everything at the end
    fields: list[FieldSpec] | None = None
    source: Source | None = None
    app: Schema | None = None
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=1,
                                                      thread_name_prefix="svc-schema"))
        schema_future = pool.submit(client.schema)  # in parallel with the first page

        def settle(page: Page, wait: bool) -> None:
            """Fields, source and the format of the pages to come, from the schema and
            page 1, once. Called by the pager before it requests page 2 (``wait=False``:
            only if the schema is in already, so page 2 on come raw when they may), else
            with page 1 in the loop below."""
            nonlocal app, fields, source, collected, tz
            if fields is not None or collected is not None:
                return
            if not wait and not schema_future.done():
                return  # the schema is slower than page 1: no request waits for it
            app = schema_future.result()
            if not app:   # the service does not expose its schema
                collected = []
                return
            tz = tz or app.timezone
            fields, source = describe(client, target, app, page.records, columns, tz)
            pipe.tz = tz

            def start_decoder() -> Callable[[Body], Any] | None:
                assert fields is not None and source is not None
                helpers = decode_helpers(processes, pager, page)
                decoder = stack.enter_context(
                    PageDecoder(fields, source, tz, helpers=helpers)) if helpers else None
                return decoder.decode if decoder else None
            pipe.settle(page, fields, source, raw_pages=opts.raw_pages,
                        decoder=start_decoder)

        pager.on_first = lambda first: settle(first, wait=False)
        try:
            for page in pager.iter_pages():
                settle(page, wait=True)
                if collected is not None:
                    collected.append(page)
                else:
                    assert fields is not None and source is not None
                    got = parts.add(page, pipe)
                    if page.format == "both":   # page 1, held to the pass's end
                        page.decoded_values_dropped(key_names)
                    if on_frames is not None:
                        on_frames(page.pass_no, got)
        finally:
            bar.close()
    final_ids = pager.final_ids or []
    if collected is not None:
        # no schema: the kinds are inferred from every record of the consistent pass, then
        # its pages are decoded as any load's (one PagePipeline, one final_frames)
        final_pass = pager.passes[-1].pass_no
        records = [r for p in collected if p.pass_no == final_pass for r in p.records]
        tz = tz or (app.timezone if app else None)
        fields, source = describe(client, target, app, records, columns, tz)
        pipe.tz = tz
        pipe.settle(None, fields, source, raw_pages=False)
        for p in collected:
            if p.pass_no == final_pass:
                parts.append(p.pass_no, got := pipe.frames(p))
                if on_frames is not None:
                    on_frames(p.pass_no, got)
    assert source is not None
    source.load = asked
    frames = final_frames(pager, parts, source)
    if len(frames.main) != len(final_ids):  # limit cut the last page
        keep = pd.Index(final_ids, dtype="string")
        frames.main = frames.main.iloc[: len(final_ids)]
        frames.tables = {k: t[member(t[t.columns[0]], keep)].reset_index(drop=True)
                         for k, t in frames.tables.items()}
    frames.original = frames.snapshot()
    warn_skipped(frames.skipped, source.timezone, frames.main.index)
    return frames


def load_params(options: LoadOptions) -> dict[str, Any]:
    """What a load asked for, and when it started (``Source.load``; ``refresh`` repeats it).
    The filters as prepared (``options.query``: dates in the application's timezone) are
    kept twice: ``filters`` the rules, ``query`` the bytes sent, which later requests for
    the same listing send again (``Source.query``).

    Usage: ``source.load = load_params(options.prepared(client, target))``"""
    query = options.query if options.query is not None else Query.of(options.filters)
    return {"filters": query.filters, "query": query.text,
            "sort_field": options.sort_field, "sort_order": options.sort_order,
            "limit": options.limit, "rows_per_page": options.rows_per_page,
            "loaded_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
