"""read_object / read_view: every page of an object or a view into typed :class:`Frames`.

Usage::

    frames = read_object(client, "object_1", filters=[...], limit=500)
    frames = read_view(client, "scene_1", "view_2", columns="labels")
    frames.main.dtypes          # string, Float64, boolean, datetime64[ns, America/Chicago] ...
    frames.tables["field_9"]    # connections: record_id, connected_id, identifier

Kinds come from the application schema when the service exposes it (fetched in parallel
with the first page), otherwise they are inferred from the raw shapes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd

from .client import Client, Target, parse_target
from .decoder import PageDecoder
from .describe import Columns, check_columns, describe, paused_gc, user_timezone
from .errors import DisplayValuesNeeded, UsageError
from .filters import Filters, validate_filters
from .frames import Frames, Source, build_frames, decodes_raw_alone
from .kinds.base import FieldSpec
from .paging import Page, Paginator, Verify
from .progress import PageProgress, want_progress
from .schema import Schema

__all__ = ["read_object", "read_view", "load", "page_frames", "concat_frames",
           "decode_helpers",
           # settled in describe.py; kept importable from here for existing callers
           "Columns", "check_columns", "describe", "paused_gc", "user_timezone"]


def read_object(client: Client, object_key: str, *, filters: Filters | None = None,
                sort_field: str | None = None, sort_order: str | None = None,
                limit: int | None = None, columns: Columns = "keys",
                timezone: str | ZoneInfo | None = None, progress: bool | None = None,
                rows_per_page: int = 1000, verify: Verify = "first",
                processes: int | None = None, cache: str | os.PathLike[str] | None = None,
                modified_field: str | None = None) -> Frames:
    """All records of an object (object requests: app id + API key) as typed frames.

    ``processes``: helper processes that decode pages of a large load on other cores
    (default: one on a machine with 3+ cores, one of them idle, for loads of 8+ pages paced
    at 20+ requests/s or unpaced; 0 for none).

    ``cache``: a directory; the frames come from it, refreshed with a few requests (see
    ``svc_frames.cache`` and ``refresh``; ``modified_field`` names the field stamped on
    every change when the schema does not show one), and are written back to it.

    Usage: ``read_object(client, "object_1", limit=100).main``"""
    if cache is not None:
        return cached(client, object_key, cache, modified_field, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      columns=columns, timezone=timezone, progress=progress,
                      rows_per_page=rows_per_page, verify=verify, processes=processes)
    return load(client, object_key, filters=filters, sort_field=sort_field,
                sort_order=sort_order, limit=limit, columns=columns, timezone=timezone,
                progress=progress, rows_per_page=rows_per_page, verify=verify,
                processes=processes)


def read_view(client: Client, scene_key: str | tuple[str, str], view_key: str | None = None,
              *, filters: Filters | None = None,
              sort_field: str | None = None, sort_order: str | None = None,
              limit: int | None = None, columns: Columns = "keys",
              timezone: str | ZoneInfo | None = None, progress: bool | None = None,
              rows_per_page: int = 1000, verify: Verify = "first",
              processes: int | None = None, cache: str | os.PathLike[str] | None = None,
              modified_field: str | None = None) -> Frames:
    """The records a view shows (only its fields; as the logged-in user when the view sits
    behind a login: call ``client.login`` first) as typed frames. The view is named as
    two keys, or as one ``"scene_N/view_N"`` like the CLI and ``export`` take it.
    ``cache``: as for ``read_object`` (the view must show the stamped field to refresh
    incrementally).

    Usage: ``read_view(client, "scene_1", "view_2").main`` or
    ``read_view(client, "scene_1/view_2")``"""
    if view_key is None:
        kind, scene, view = parse_target(scene_key)  # UsageError names a bad one
        if kind != "view":
            raise UsageError(f"read_view needs a view ('scene_N', 'view_N' or "
                             f"'scene_N/view_N'), got {scene_key!r}: use read_object for "
                             "an object")
    else:
        scene, view = scene_key, view_key  # type: ignore[assignment]
    assert scene is not None and view is not None
    if cache is not None:
        return cached(client, (scene, view), cache, modified_field, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      columns=columns, timezone=timezone, progress=progress,
                      rows_per_page=rows_per_page, verify=verify, processes=processes)
    return load(client, (scene, view), filters=filters, sort_field=sort_field,
                sort_order=sort_order, limit=limit, columns=columns, timezone=timezone,
                progress=progress, rows_per_page=rows_per_page, verify=verify,
                processes=processes)


CachedLoad = Callable[..., tuple[Frames, Any]]
CACHED_LOADS: list[CachedLoad] = []
"""Where ``svc_frames.cache`` registers its loader when imported (the package registers a
stand-in that imports it on the first ``cache=``): the cache sits above this module (it
writes parquet, which reads through the loaders), so ``cache=`` is handed over through
this seam rather than an import. The last one registered is used."""


def cached(client: Client, target: Target, cache: str | os.PathLike[str],
           modified_field: str | None, **options: Any) -> Frames:
    """``read_object``/``read_view`` through an on-disk cache (svc_frames/cache.py)."""
    if not CACHED_LOADS:
        raise UsageError("cache= needs svc_frames.cache: import svc_frames (the package) "
                         "rather than svc_frames.loaders alone")
    return CACHED_LOADS[-1](client, target, cache, modified_field=modified_field,
                            **options)[0]


def load(client: Client, target: Target, *, filters: Filters | None = None,
         sort_field: str | None = None, sort_order: str | None = None,
         limit: int | None = None, columns: Columns = "keys",
         timezone: str | ZoneInfo | None = None, progress: bool | None = None,
         rows_per_page: int = 1000, verify: Verify = "first",
         raw_pages: bool = True, processes: int | None = None,
         on_page: Callable[[Page], None] | None = None,
         max_workers: int | None = None) -> Frames:
    """read_object / read_view for a target (``"object_N"`` or ``("scene_N", "view_N")``).

    With a schema, each page is decoded as soon as it arrives, while later pages are still
    on the wire; without one, kinds are inferred from all records at the end.

    Page 1 comes with raw and display values (kinds are inferred from both when there is no
    schema). When the schema gives every kind and page 1 shows that raw values alone will
    do, the pages still to come are asked for with ``format=raw`` (``raw_pages=False``
    keeps both): about 40% fewer bytes to send, read and parse. Raw pages of a large load
    are decoded in ``processes`` helper processes (decoder.py) while this one fetches;
    by default one on a machine with 3+ cores (``core_idle``), for loads of 8 pages or
    more paced at 20 requests/s or more (or unpaced): at the hosted 10/s one core keeps up.

    ``on_page`` replaces the progress bar (read_app: one bar over the pages of every
    object); ``max_workers`` bounds this load's requests in flight (default: the
    client's)."""
    check_columns(columns)
    if processes is not None and (not isinstance(processes, int) or processes < 0):
        raise UsageError(f"processes must be a non-negative integer, got {processes!r}")
    tz = user_timezone(timezone)
    asked = load_params(filters, sort_field, sort_order, limit, rows_per_page)
    bar = PageProgress(want_progress(progress) and on_page is None,
                       client.records_path(target)[2])
    # the Paginator checks target, filters, sort and limit, before any request
    pager = Paginator(client, target, rows_per_page=rows_per_page, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      on_page=on_page or bar, verify=verify, schema_checks=True, timezone=tz,
                      max_workers=max_workers)
    parts: list[tuple[int, Frames]] = []
    collected: list[Page] | None = None  # no schema: decode everything at the end
    fields: list[FieldSpec] | None = None
    source: Source | None = None
    app: dict[str, Any] | None = None
    with paused_gc(), contextlib.ExitStack() as stack:
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
            if app is None:
                collected = []
                return
            tz = tz or Schema.of(app).timezone
            fields, source = describe(client, target, app, page.records, columns, tz)
            if (raw_pages and not source.kinds_inferred
                    and decodes_raw_alone(page.records, fields)):
                helpers = decode_helpers(processes, pager, page)
                decoder = stack.enter_context(
                    PageDecoder(fields, source, tz, helpers=helpers)) if helpers else None
                pager.ask_raw(fields, decoder.decode if decoder else None)

        pager.on_first = lambda first: settle(first, wait=False)
        try:
            for page in pager.iter_pages():
                settle(page, wait=True)
                if collected is not None:
                    collected.append(page)
                else:
                    assert fields is not None and source is not None
                    parts.append((page.pass_no, page_frames(pager, page, fields, source, tz)))
        finally:
            bar.close()
    final_pass = pager.passes[-1].pass_no
    final_ids = pager.final_ids or []
    if collected is not None:
        latest = {r["id"]: r for p in collected if p.pass_no == final_pass for r in p.records}
        records = [latest[rid] for rid in final_ids]
        tz = tz or Schema.of(app).timezone
        fields, source = describe(client, target, app, records, columns, tz)
        source.load = asked
        return build_frames(records, fields, source, tz=tz)
    assert source is not None
    source.load = asked
    frames = concat_frames([f for n, f in parts if n == final_pass], source)
    if len(frames.main) != len(final_ids):  # limit cut the last page
        keep = pd.Index(final_ids, dtype="string")
        frames.main = frames.main.iloc[: len(final_ids)]
        frames.tables = {k: t[t[t.columns[0]].isin(keep)].reset_index(drop=True)
                         for k, t in frames.tables.items()}
    frames.original = frames.snapshot()
    return frames


def load_params(filters: Filters | None, sort_field: str | None, sort_order: str | None,
                limit: int | None, rows_per_page: int) -> dict[str, Any]:
    """What a load asked for, and when it started (``Source.load``; ``refresh`` repeats it).

    Usage: ``source.load = load_params(filters, None, None, None, 1000)``"""
    checked = validate_filters(filters)
    return {"filters": dict(checked) if checked and checked["rules"] else None,
            "sort_field": sort_field, "sort_order": sort_order, "limit": limit,
            "rows_per_page": rows_per_page,
            "loaded_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def page_frames(pager: Paginator, page: Page, fields: list[FieldSpec], source: Source,
                tz: ZoneInfo | None) -> Frames:
    """The frames of one page: decoded already (PageDecoder), or decoded here; a raw page
    that needs display values (a name-like connection: its ids are only in the display
    HTML) is fetched again with them, as are the pages still to come."""
    if page.decoded and page.frames is not None:
        return page.frames
    if not page.decoded:
        try:
            return build_frames(page.records, fields, source, tz=tz, keep_original=False,
                                raw_format=page.format == "raw")
        except DisplayValuesNeeded:
            if page.format != "raw":
                raise
    pager.ask_both()
    page = pager.refetch(page)
    return build_frames(page.records, fields, source, tz=tz, keep_original=False)


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
shares the service's core and does not pay even when it looks idle: measured 2026-11-23 on
2 cores (cold 50,000-record loads, four rounds interleaved), median 2.71 s without a
helper, 2.80 s with one, 3.09 s with two."""


def core_idle() -> bool:
    """Whether a core is free for a helper: :data:`HELPER_CORES` or more, and a load
    average (last minute) leaving one beyond this process and the service. On a busy
    machine a helper only competes for the cores this process and the service need:
    measured on 2 busy cores (load average 7), a cold 50,000-record load took 13.6 s with
    a helper against 5.4 s without (warm: 15 s against 9-11 s)."""
    cores = os.cpu_count() or 1
    if cores < HELPER_CORES:
        return False
    try:
        busy = os.getloadavg()[0]
    except (OSError, AttributeError):  # no load average (Windows): trust the core count
        return True
    return busy <= cores - (HELPER_CORES - 1)


def concat_frames(parts: list[Frames], source: Source) -> Frames:
    """Page frames -> one Frames (same columns and dtypes in every part)."""
    if not parts:
        raise ValueError("no pages")
    if len(parts) == 1:
        return Frames(parts[0].main, dict(parts[0].tables), source)
    main = pd.concat([p.main for p in parts])
    names: list[str] = []
    for p in parts:
        names.extend(n for n in p.tables if n not in names)
    tables = {n: pd.concat([p.tables[n] for p in parts if n in p.tables], ignore_index=True)
              for n in names}
    return Frames(main, tables, source)
