"""Pages to frames: the decisions every reader of pages shares.

A page's frames (decoded in a helper process already, or here), the fallback to display
values for a raw page that needs them, when helper processes pay (``decode_helpers``), and
joining the frames of many pages into one (``concat_frames``).

Usage: ``parts = [page_frames(pager, page, fields, source, tz) for page in pager]``
"""

from __future__ import annotations

import os
from zoneinfo import ZoneInfo

import pandas as pd

from ..errors import DisplayValuesNeeded
from ..frames import Frames, Source, build_frames
from ..kinds.base import FieldSpec
from .pager import Page, Paginator


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
