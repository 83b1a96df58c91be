"""Incremental refresh: bring loaded frames up to date with a few requests, in place.

The service has no "modified since" (docs/hosted-behaviour.md §1.5): applications that load incrementally
keep a date field that a record rule stamps on every change, and use an auto-increment
field as a cursor for new records. ``refresh`` asks, side by side within the pace, for

* the load's own listing (its filters) sorted by the stamp, newest first, page by page
  until a page holds a stamp older than the last load's start (in the service's clock,
  read from the quota headers) floored to the minute less ``STAMP_MARGIN``: filter dates
  are whole days (§1.4), but each record's stamp has its minute, so one page usually
  suffices. Each record is compared with its loaded values to decide whether it really
  changed, so a change in the same minute as the load is not missed. The first page's
  ``total_records`` is the listing's total, which the deletion check needs (an "or"
  filter is asked rule by rule, and its total from one row of the load's listing). New
  records are in it when the schema's rule stamps creations too; for a field named by the
  caller (which may be stamped on updates only) the records ``higher than`` the largest
  loaded auto-increment value are asked for as well;
* only when the total disagrees with the merged frame (a record was deleted or left the
  load's filter): when few are missing, the auto-increment ranges that hold fewer records
  on the service than here are bisected (one row per request, only the total is read:
  :func:`find_missing`); otherwise, or when that would cost more, one listing of ids.

The as-loaded copy (``frames.original``) moves with the server values, so ``diff`` after a
refresh still sends only the user's own edits. A cell the user edited that also changed on
the server is a conflict: the user's value stays in ``main``, ``original`` keeps the value
as loaded (so ``write_back``'s own guard sees the clash again) and the report lists it.

Usage::

    orders = read_object(client, "object_3")
    report = refresh(client, orders)          # orders.main / .tables / .original updated
    print(report)                             # added, changed, deleted, conflicts, requests
"""

from __future__ import annotations

import datetime as dt
import threading
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import SvcWarning, UsageError
from ..frames import Frames, Source, warn_skipped
from ..kinds.base import FieldSpec
from ..read.gcpause import paused_gc
from ..read.options import LoadOptions
from ..read.pager import Paginator
from ..records import Client
from .deletions import deletions
from .listing import column_maps, list_all, target_name, target_of
from .merge import Merger
from .window import clock_skew, concat_parts, oldest_first, paged, recent, stamp_cutoff

__all__ = ["refresh", "RefreshReport", "RefreshNotice", "check_modified_field",
           "DEFAULT_SWEEP_EVERY", "check_sweep_every", "sweep_due", "stamp_window"]

#: Every Nth refresh of the same frames lists every record (a sweep): the stamp window
#: cannot see a change by a writer that does not stamp (another integration writing
#: through the API sets no record rule's stamp), and a sweep finds it at one listing's
#: pages, so such a change is at most N-1 refreshes late.
DEFAULT_SWEEP_EVERY = 10


class RefreshNotice(SvcWarning):
    """A refresh or a cache load that fell back to a full listing, and why."""


@dataclass
class RefreshReport:
    """What a refresh did: the records it added, changed and deleted, and what it cost.

    ``refresh`` returns it; ``str(report)`` is a one-line summary.

    Attributes
    ----------
    added, changed, deleted : list of str
        The ids of the records added to, changed in and removed from the frames.
    conflicts : pandas.DataFrame
        Cells edited locally that also changed on the service (``record_id``, ``field``,
        ``column``, ``loaded``, ``server``, ``local``); the local edit is kept.
    requests : int
        Requests this refresh sent (the schema's included).
    deletion_requests : int
        Of which the listing that found deleted records.
    full : bool
        Everything was listed (no stamped field, ``full=True``, or a sweep).
    swept : bool
        The periodic sweep (``sweep_every``) listed everything.
    reason : str
        Why everything was listed, if it was.
    modified_field : str or None
        The field stamped on every change that the refresh asked by.
    cursor_field : str or None
        The auto-increment field used to find new records, if any.

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> report = refresh(client, orders)
    >>> print(report)
    refresh: 0 added, 0 changed, 0 deleted, 0 conflicting cells; 1 requests
    >>> report.full, report.modified_field
    (False, 'field_46')
    """

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["record_id", "field", "column", "loaded", "server", "local"]))
    requests: int = 0               # requests sent by this refresh (schema included)
    deletion_requests: int = 0      # of which the listing that found deleted records
    full: bool = False              # everything was listed (no modified field, or asked)
    swept: bool = False             # the periodic sweep listed everything (sweep_every)
    reason: str = ""                # why the refresh listed everything, if it did
    modified_field: str | None = None
    cursor_field: str | None = None  # the auto-increment field used for new records

    @property
    def counts(self) -> dict[str, int]:
        """How many records were added, changed, deleted, the conflicts and the requests.

        Examples
        --------
        >>> refresh(client, read_object(client, "Work Orders")).counts
        {'added': 0, 'changed': 0, 'deleted': 0, 'conflicts': 0, 'requests': 1}
        """
        return {"added": len(self.added), "changed": len(self.changed),
                "deleted": len(self.deleted), "conflicts": len(self.conflicts),
                "requests": self.requests}

    def __str__(self) -> str:
        c = self.counts
        head = (f"refresh: {c['added']} added, {c['changed']} changed, {c['deleted']} "
                f"deleted, {c['conflicts']} conflicting cells; {c['requests']} requests")
        if self.deletion_requests:
            head += f" ({self.deletion_requests} to find deleted records)"
        if self.full:
            head += f"; full listing: {self.reason}"
        return head


def check_modified_field(source: Source, key: str) -> FieldSpec:
    """The FieldSpec of ``modified_field=``; UsageError naming it unless it is a date_time
    field the frames hold (for a view: one the view shows). Usage: ``check_modified_field(
    frames.source, "field_46")``"""
    what = (f"view {source.scene_key}/{source.view_key}" if source.kind == "view"
            else f"object {source.object_key}")
    try:
        spec = source.field(key)
    except KeyError:
        raise UsageError(f"modified_field {key!r} is not a field of {what}"
                         + (" (the view must show it)" if source.kind == "view" else ""),
                         field=key) from None
    if spec.kind != "date_time":
        raise UsageError(f"modified_field {key!r} of {what} is a {spec.kind} field, not a "
                         "date_time field", field=key)
    if (spec.format or {}).get("calendar"):
        raise UsageError(f"modified_field {key!r} of {what} is a date range", field=key)
    return spec


# ---- the refresh ---------------------------------------------------------------------------
def check_sweep_every(value: Any) -> int:
    """``sweep_every`` checked: a whole number >= 0 (0: never sweep); UsageError naming it.

    Usage: ``check_sweep_every(10)``"""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"sweep_every must be a whole number of refreshes >= 0 (0: never "
                         f"list everything), got {value!r}", field="sweep_every")
    return value


def sweep_due(load: Mapping[str, Any], every: int) -> tuple[int, bool]:
    """(this refresh's number since the load, whether it is the periodic sweep): every
    ``every``-th refresh lists everything (0: never). Shared with the mirror's runs.

    Usage: ``count, swept = sweep_due(frames.source.load, 10)``"""
    count = int(load.get("refreshes") or 0) + 1
    return count, bool(every and count % every == 0)


def refresh(client: Client, frames: Frames, *, modified_field: str | None = None,
            full: bool = False, rows_per_page: int | None = None,
            sweep_every: int = DEFAULT_SWEEP_EVERY) -> RefreshReport:
    """Bring frames from ``read_object``/``read_view`` up to date in place, with few requests.

    Only the records changed since the load are asked for (sorted by the field stamped on
    every change, newest first), then the deleted ones are found; the load's filters and
    sort are sent again as they were. Local edits are kept: a cell edited here that also
    changed on the service is reported in ``conflicts``. Both ``frames.main`` and
    ``frames.original`` (what ``diff`` compares with) take the service's new values.

    Parameters
    ----------
    client : Client
        The application the frames were loaded from.
    frames : Frames
        What ``read_object``/``read_view`` returned (or a ``to_parquet`` copy of it),
        loaded without ``limit``.
    modified_field : str, optional
        The date_time field stamped on every change (default: the one the schema's record
        rule stamps). Without one, changes cannot be asked for: everything is listed,
        with a ``RefreshNotice`` saying what the object needs.
    full : bool, default False
        List everything anyway (also catching values computed from other records, which
        change without a stamp).
    rows_per_page : int, optional
        Records per request (default: the load's).
    sweep_every : int, default 10
        Every Nth refresh of these frames lists everything (0: never), which finds
        changes by writers that do not stamp; between sweeps those are not seen.

    Returns
    -------
    RefreshReport
        What was added, changed, deleted, the conflicts, and the requests sent.

    Raises
    ------
    UsageError
        Before any request: frames not from a load, loaded with ``limit`` or without the
        schema, from another application, a ``modified_field`` that is not a date_time
        field of the frames, or a bad ``sweep_every``/``rows_per_page``.
    ServiceError
        A request failed (see ``Client.request``).

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> rid = orders.main.index[0]
    >>> _ = client.update_record("object_3", rid, {"field_12": "Fix the door"})
    >>> report = refresh(client, orders)
    >>> report.changed == [rid], orders.main.loc[rid, "Title"]
    (True, 'Fix the door')
    """
    source = check_frames(client, frames)
    load = dict(source.load or {})
    if load.get("limit") is not None:
        raise UsageError(f"frames loaded with limit={load['limit']} cannot be refreshed: "
                         "they hold the first records only; load without limit")
    if modified_field is not None:
        check_modified_field(source, modified_field)
    every = check_sweep_every(sweep_every)
    count, swept = sweep_due(load, every)
    swept = swept and not full
    full = full or swept
    rpp = int(rows_per_page or load.get("rows_per_page") or 1000)
    # validates target and rows_per_page before any request; the filters are the load's
    # query, prepared once when it was loaded (the same bytes are sent again)
    Paginator(client, target_of(source), LoadOptions.of(rows_per_page=rpp,
                                                        filters=source.query))
    sent = client.request_count
    started = dt.datetime.now(dt.timezone.utc)
    report = RefreshReport()
    mod = modified_field
    stamps_creates = False  # a field named by the caller may be stamped on updates only
    if mod is None and not full:
        mod = client.schema().stamped_field(source.object_key)
        stamps_creates = mod is not None
        if mod is not None and not any(f.key == mod for f in source.fields):
            report.reason = (f"the view does not show {mod}, the field stamped on every "
                             "change: add it to the view's columns, or refresh the object")
            mod = None
        elif mod is None:
            report.reason = (f"{source.object_key} has no date_time field stamped on every "
                             "change (a record rule setting it to the current date on "
                             "every create and update): add one, or pass modified_field=")
    elif swept:
        report.reason = (f"the periodic sweep (every {every}th refresh): finds changes by "
                         "writers that do not stamp")
    elif full:
        report.reason = "full=True"
    else:  # named: the schema's rule (if it is that one) says it stamps creations too
        stamps_creates = client.schema().stamped_field(source.object_key) == mod
    report.modified_field = mod
    report.swept = swept
    merger = Merger(frames)
    if mod is None and not full:
        warnings.warn(f"refresh of {target_name(source)}: {report.reason}; listing every "
                      "record instead", RefreshNotice, stacklevel=2)
    with paused_gc():  # the frames' many objects would be walked again and again
        if mod is None or full:
            report.full = True
            merger.merge(list_all(client, source, load, rpp), complete=True)
        else:
            incremental(client, frames, source, load, mod, stamps_creates, rpp, merger,
                        report)
        merger.finish()
    warn_skipped(merger.skipped, source.timezone, frames.main.index)
    report.added, report.changed, report.deleted = merger.added, merger.changed, merger.deleted
    report.conflicts = merger.conflict_frame()
    new_load = {**load, "loaded_at": started.isoformat(timespec="seconds"),
                "refreshes": count}
    for src in (frames.source, frames.original.source if frames.original else None):
        if src is not None:
            src.load = dict(new_load)
    report.requests = client.request_count - sent
    return report


def check_frames(client: Client, frames: Any) -> Source:
    """The source of refreshable frames; UsageError naming what is missing."""
    if not isinstance(frames, Frames):
        raise UsageError(f"refresh needs Frames from read_object/read_view, got "
                         f"{type(frames).__name__}")
    source = frames.source
    if source is None or source.load is None:
        raise UsageError("these frames have no load source (source.load): refresh needs "
                         "frames from read_object/read_view (or a to_parquet copy of them)")
    if frames.original is None:
        raise UsageError("these frames have no as-loaded copy (frames.original): refresh "
                         "needs frames from read_object/read_view")
    if source.app_id and client.app_id and source.app_id != client.app_id:
        raise UsageError(f"these frames come from application {source.app_id}, the client "
                         f"is for {client.app_id}")
    if source.kinds_inferred:
        raise UsageError("these frames were loaded without the application schema (kinds "
                         "inferred): refresh needs the schema's kinds to decode alike")
    return source


def incremental(client: Client, frames: Frames, source: Source, load: Mapping[str, Any],
                mod: str, stamps_creates: bool, rpp: int, merger: Merger,
                report: RefreshReport) -> None:
    """The few-requests path (module docstring): the load's listing sorted by the stamp,
    newest first, page by page until a page reaches the cutoff (and, when the stamp may
    miss creations, the records past the cursor), side by side; then deleted records.

    ``stamps_creates``: the schema's rule stamps every create too, so new records are in
    the window; a field named by the caller may be stamped on updates only."""
    assert frames.original is not None
    _, bare = column_maps(source)
    auto = next((f.key for f in source.fields if f.kind == "auto_increment"), None)
    cursor = None
    top: int | None = None
    if not stamps_creates and auto is not None:
        loaded = frames.original.main[bare[auto]].dropna()
        top = int(loaded.max()) if len(loaded) else None
        cursor = auto if top is not None else None
    report.cursor_field = cursor
    lock = threading.Lock()

    def update(part: Frames) -> None:
        # the records held are merged as each page is decoded, while the next page is on
        # its way; new records are appended at the end, once, in their order (pages come
        # newest first: appending page by page would put them in reverse)
        with lock:
            merger.update(part)
    server, extra, total = stamp_window(client, source, load, mod, frames.original.main[
        bare[mod]], rpp, cursor=cursor, top=top, on_part=update)
    # the windows' records held are merged already; the cursor's listing holds new ones
    for part in extra:
        merger.update(part)
    if auto is None:
        server = Frames(server.main.iloc[oldest_first(server.main.index)], server.tables,
                        server.source)
    merger.add(server, order_by=bare[auto] if auto else None)
    # 3. deleted records (or records that left the filter): the total disagrees
    if total != merger.server_count():
        before = client.request_count
        deletions(client, frames, source, load, rpp, merger, total,
                  bare[auto] if auto else None, auto)
        report.deletion_requests = client.request_count - before


def stamp_window(client: Client, source: Source, load: Mapping[str, Any], mod: str,
                 stamps: pd.Series, rpp: int, *, cursor: str | None = None,
                 top: int | None = None, on_part: Callable[[Frames], None] | None = None,
                 ahead: int = 0) -> tuple[Frames, list[Frames], int]:
    """The records stamped since the last load (module docstring), asked side by side:
    (every record listed, decoded, each once; the cursor's listings' parts alone; the
    load's listing's total). ``stamps``: the stamps held (the cutoff needs their newest
    only when the service's clock is unknown); ``cursor``/``top``: also the records whose
    auto-increment value is higher than ``top``; ``on_part``: given each page of the
    window as it is decoded; ``ahead``: pages after page 1 asked beside it (a caller that
    expects a window of several pages). Shared by ``refresh`` and the mirror's incremental
    runs.

    Usage: ``server, _, total = stamp_window(client, source, source.load, "field_46",
    stamps, 1000)``"""
    target = target_of(source)

    def cutoff() -> pd.Timestamp:  # after the first answer: it tells the service's clock
        return stamp_cutoff(load.get("loaded_at"), stamps, clock_skew(client))
    query = source.query
    # the load's own listing, newest stamps first: its first page also gives the total
    # the deletion check needs; an "or" filter is asked rule by rule (Query.also), so its
    # total comes from one row of the load's listing (no sort: none is needed for it)
    windows = query.also([])
    single = len(windows) == 1
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="svc-refresh") as pool:
        head_future = (None if single else
                       pool.submit(client.get_page, target, 1, 1, filters=query))
        futures = [pool.submit(recent, client, source, rpp, flt, mod, cutoff, on_part, ahead)
                   for flt in windows]
        if cursor is not None:
            futures += [pool.submit(lambda flt: (paged(client, source, rpp, flt), 0), flt)
                        for flt in query.also([{"field": cursor, "operator": "higher than",
                                                "value": top}])]
        results = [f.result() for f in futures]
        total = (results[0][1] if head_future is None
                 else int(head_future.result().get("total_records") or 0))
    parts = [p for p, _ in results if len(p.main)] or [results[0][0]]
    return concat_parts(parts), [p for p, _ in results[len(windows):]], total
