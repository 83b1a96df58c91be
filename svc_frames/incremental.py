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
import math
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .client import Client, Target
from .describe import paused_gc
from .errors import ConsistencyError, DisplayValuesNeeded, ServerError, SvcWarning, UsageError
from .filters import format_filter_date
from .frames import Frames, Source, build_frames, label_map, relabel
from .kinds import codec_for, values_equal
from .kinds.base import FieldSpec
from .paging import Paginator
from .rawpages import parse_json, raw_page_parser
from .schema import Schema

__all__ = ["refresh", "RefreshReport", "RefreshNotice", "modified_field_of",
           "check_modified_field"]

OVERLAP_DAYS = 2
"""When the stamps must be asked for by date (blank stamps sorted first): ``is after`` the
date this many days before the cutoff's, which matches from the day before it on (filter
dates are whole days, docs/hosted-behaviour.md §1.4: a day of slack for timezones)."""


class RefreshNotice(SvcWarning):
    """A refresh or a cache load that fell back to a full listing, and why."""


@dataclass
class RefreshReport:
    """What a refresh did. ``conflicts``: record_id, field, column, loaded, server, local.

    Usage: ``report = refresh(client, frames); report.changed, report.requests``"""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=["record_id", "field", "column", "loaded", "server", "local"]))
    requests: int = 0               # requests sent by this refresh (schema included)
    deletion_requests: int = 0      # of which the listing that found deleted records
    full: bool = False              # everything was listed (no modified field, or asked)
    reason: str = ""                # why the refresh listed everything, if it did
    modified_field: str | None = None
    cursor_field: str | None = None  # the auto-increment field used for new records

    @property
    def counts(self) -> dict[str, int]:
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


# ---- fields ------------------------------------------------------------------------------
def modified_field_of(app: Mapping[str, Any] | None, object_key: str) -> str | None:
    """The date_time field an object's own record rule stamps on every write, from the
    schema: ``objects[].rules.records[]`` with no criteria and a value of type
    ``current_date`` (ARCHITECTURE.md "Incremental refresh"). None when there is none.

    Usage: ``modified_field_of(client.schema(), "object_3")  # "field_46"``"""
    schema = Schema.of(app)
    obj = schema.object(object_key)
    rules = (obj or {}).get("rules")
    if not isinstance(rules, Mapping):
        return None
    kinds = {f.key: f.kind for f in schema.object_fields(object_key) or ()}
    for rule in rules.get("records") or ():
        if not isinstance(rule, Mapping) or rule.get("criteria"):
            continue  # a rule with conditions does not stamp every change
        for value in rule.get("values") or ():
            if not isinstance(value, Mapping):
                continue
            key = str(value.get("field") or "")
            if value.get("type") == "current_date" and kinds.get(key) == "date_time":
                return key
    return None


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


def target_of(source: Source) -> Target:
    if source.kind == "view":
        assert source.scene_key is not None and source.view_key is not None
        return (source.scene_key, source.view_key)
    return source.object_key


def column_names(source: Source) -> tuple[dict[str, str], dict[str, str]]:
    """(main column -> field key, field key -> its bare column or table name) of a source,
    in keys or labels mode."""
    names = label_map(source.fields)
    labels = source.columns == "labels"
    col_field: dict[str, str] = {}
    bare: dict[str, str] = {}
    for f in source.fields:
        for col in codec_for(f).columns(f):
            col_field[relabel(col, names) if labels else col] = f.key
        bare[f.key] = relabel(f.key, names) if labels else f.key
    return col_field, bare


# ---- the refresh ---------------------------------------------------------------------------
def refresh(client: Client, frames: Frames, *, modified_field: str | None = None,
            full: bool = False, rows_per_page: int | None = None) -> RefreshReport:
    """Bring ``frames`` (from ``read_object``/``read_view``) up to date in place.

    ``modified_field``: the date_time field stamped on every change (default: the one the
    schema's record rule stamps, see :func:`modified_field_of`). Without one, changes to
    loaded records cannot be asked for: the whole listing is fetched (``full``), with a
    :class:`RefreshNotice` saying what the object needs. ``full=True`` lists everything
    anyway (also catching values computed from other records, which change without a
    stamp). ``rows_per_page``: default the load's.

    Usage: ``report = refresh(client, orders); print(report)``"""
    source = check_frames(client, frames)
    load = dict(source.load or {})
    if load.get("limit") is not None:
        raise UsageError(f"frames loaded with limit={load['limit']} cannot be refreshed: "
                         "they hold the first records only; load without limit")
    if modified_field is not None:
        check_modified_field(source, modified_field)
    rpp = int(rows_per_page or load.get("rows_per_page") or 1000)
    Paginator(client, target_of(source), rows_per_page=rpp,
              filters=load.get("filters"))  # validates everything before any request
    sent = client.request_count
    started = dt.datetime.now(dt.timezone.utc)
    report = RefreshReport()
    mod = modified_field
    stamps_creates = False  # a field named by the caller may be stamped on updates only
    if mod is None and not full:
        mod = modified_field_of(client.schema(), source.object_key)
        stamps_creates = mod is not None
        if mod is not None and not any(f.key == mod for f in source.fields):
            report.reason = (f"the view does not show {mod}, the field stamped on every "
                             "change: add it to the view's columns, or refresh the object")
            mod = None
        elif mod is None:
            report.reason = (f"{source.object_key} has no date_time field stamped on every "
                             "change (a record rule setting it to the current date on "
                             "every create and update): add one, or pass modified_field=")
    elif full:
        report.reason = "full=True"
    else:  # named: the schema's rule (if it is that one) says it stamps creations too
        stamps_creates = modified_field_of(client.schema(), source.object_key) == mod
    report.modified_field = mod
    merger = Merger(frames)
    if mod is None and not full:
        warnings.warn(f"refresh of {describe(source)}: {report.reason}; listing every "
                      "record instead", RefreshNotice, stacklevel=2)
    with paused_gc():  # the frames' many objects would be walked again and again
        if mod is None or full:
            report.full = True
            records = list_all(client, source, load, rpp)
            merger.merge(decode(records, source), complete=True)
        else:
            incremental(client, frames, source, load, mod, stamps_creates, rpp, merger,
                        report)
        merger.finish()
    report.added, report.changed, report.deleted = merger.added, merger.changed, merger.deleted
    report.conflicts = merger.conflict_frame()
    new_load = {**load, "loaded_at": started.isoformat(timespec="seconds")}
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


def describe(source: Source) -> str:
    return (f"{source.scene_key}/{source.view_key}" if source.kind == "view"
            else source.object_key)


def decode(records: Sequence[Any], source: Source, *, raw: bool = False) -> Frames:
    """Records (dicts, or ``format=raw`` structs with ``raw``) -> frames of the source."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    return build_frames(list(records), source.fields, source, tz=tz, keep_original=False,
                        raw_format=raw)


def list_all(client: Client, source: Source, load: Mapping[str, Any], rpp: int
             ) -> list[dict[str, Any]]:
    """Every record of the load's listing (its filters and sort), consistent."""
    return Paginator(client, target_of(source), rows_per_page=rpp, filters=load.get("filters"),
                     sort_field=load.get("sort_field"), sort_order=load.get("sort_order"),
                     verify="first").records()


def list_ids(client: Client, source: Source, load: Mapping[str, Any], rpp: int
             ) -> pd.Index:
    """The ids of every record of the load's listing: pages asked for with ``format=raw``
    and parsed for their ids alone (the cheapest listing the service offers: it has no
    field selection, so each page still carries whole records)."""
    pager = Paginator(client, target_of(source), rows_per_page=rpp,
                      filters=load.get("filters"), sort_field=load.get("sort_field"),
                      sort_order=load.get("sort_order"), verify="first")
    pager.ask_raw([])
    for _page in pager.iter_pages():
        pass
    ids: pd.Index = pd.Index(np.asarray(pager.final_ids or [], dtype=object))
    return ids


def with_rules(filters: Mapping[str, Any] | None, extra: list[dict[str, Any]]
               ) -> list[dict[str, Any]]:
    """Filters = the load's filters AND ``extra``: one filter for an "and" (or no) filter;
    for an "or" filter, one per rule (A or B) and X == (A and X) or (B and X), since the
    service's filters are flat."""
    if not filters or not filters.get("rules"):
        return [{"match": "and", "rules": list(extra)}]
    if filters.get("match", "and") == "and" or len(filters["rules"]) == 1:
        return [{"match": "and", "rules": [*filters["rules"], *extra]}]
    return [{"match": "and", "rules": [rule, *extra]} for rule in filters["rules"]]


def incremental(client: Client, frames: Frames, source: Source, load: Mapping[str, Any],
                mod: str, stamps_creates: bool, rpp: int, merger: Merger,
                report: RefreshReport) -> None:
    """The few-requests path (module docstring): the load's listing sorted by the stamp,
    newest first, page by page until a page reaches the cutoff (and, when the stamp may
    miss creations, the records past the cursor), side by side; then deleted records.

    ``stamps_creates``: the schema's rule stamps every create too, so new records are in
    the window; a field named by the caller may be stamped on updates only."""
    assert frames.original is not None
    target = target_of(source)
    _, bare = column_names(source)
    auto = next((f.key for f in source.fields if f.kind == "auto_increment"), None)
    cursor = None
    top: int | None = None
    if not stamps_creates and auto is not None:
        loaded = frames.original.main[bare[auto]].dropna()
        top = int(loaded.max()) if len(loaded) else None
        cursor = auto if top is not None else None
    report.cursor_field = cursor
    stamps = frames.original.main[bare[mod]]

    def cutoff() -> pd.Timestamp:  # after the first answer: it tells the service's clock
        return stamp_cutoff(load.get("loaded_at"), stamps, clock_skew(client))
    filters = load.get("filters")
    # the load's own listing, newest stamps first: its first page also gives the total
    # the deletion check needs; an "or" filter is asked rule by rule (with_rules), so its
    # total comes from one row of the load's listing (no sort: none is needed for it)
    windows = with_rules(filters, [])
    single = len(windows) == 1
    lock = threading.Lock()


    def update(part: Frames) -> None:
        # the records held are merged as each page is decoded, while the next page is on
        # its way; new records are appended at the end, once, in their order (pages come
        # newest first: appending page by page would put them in reverse)
        with lock:
            merger.update(part)
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="svc-refresh") as pool:
        head_future = (None if single else
                       pool.submit(client.get_page, target, 1, 1, filters=filters))
        futures = [pool.submit(recent, client, source, rpp, flt, mod, cutoff, update)
                   for flt in windows]
        if cursor is not None:
            futures += [pool.submit(lambda flt: (paged(client, source, rpp, flt), 0), flt)
                        for flt in with_rules(filters, [{"field": cursor,
                                                         "operator": "higher than",
                                                         "value": top}])]
        results = [f.result() for f in futures]
        total = (results[0][1] if head_future is None
                 else int(head_future.result().get("total_records") or 0))
    # the windows' records held are merged already; the cursor's listing holds new ones
    for part, _ in results[len(windows):]:
        merger.update(part)
    parts = [p for p, _ in results if len(p.main)] or [results[0][0]]
    server = concat_parts(parts)
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


def deletions(client: Client, frames: Frames, source: Source, load: Mapping[str, Any],
              rpp: int, merger: Merger, total: int, auto_col: str | None,
              auto: str | None) -> None:
    """Find and drop the records the service no longer lists (deleted, or out of the
    load's filter): by bisecting the auto-increment values when few are missing and that
    costs fewer requests than a listing (:func:`find_missing`), else by one listing of ids.
    Records listed that were neither loaded nor stamped since (an unstamped change put
    them in the filter) make it take the whole listing."""
    assert frames.original is not None
    held = frames.original.main.index
    missing = merger.server_count() - total
    listing_cost = -(-max(total, 1) // rpp) + 1  # the pages and page 1 again (verify)
    filters = load.get("filters")
    windows = with_rules(filters, [])
    if (missing > 0 and auto is not None and auto_col is not None and len(windows) == 1
            and bisect_cost(len(held), missing) < listing_cost):
        values = frames.original.main[auto_col]
        gone = find_missing(client, source, windows[0], auto, values, missing,
                            budget=listing_cost)
        if gone is not None:
            merger.drop(gone)
            return
    listed = list_ids(client, source, load, rpp)
    held = frames.original.main.index
    unseen = len(listed) - int(member(listed, held).sum())
    if unseen:
        merger.merge(decode(list_all(client, source, load, rpp), source), complete=True)
    else:
        merger.drop(held[~member(held, listed)])


def bisect_cost(held: int, missing: int) -> int:
    """Requests :func:`find_missing` is expected to send for ``missing`` records among
    ``held``: a probe per level of the bisection per missing record, and one to confirm.

    Usage: ``bisect_cost(100_000, 1)  # 19``"""
    if missing <= 0:
        return 0
    levels = max(1, math.ceil(math.log2(max(held, 2) / missing)))
    return missing * (levels + 2)


def find_missing(client: Client, source: Source, filters: Mapping[str, Any], auto: str,
                 values: pd.Series, missing: int, *, budget: int) -> pd.Index | None:
    """The held records the service no longer lists, found by counting the records of
    auto-increment ranges (one row per request: only ``total_records`` is read) and
    bisecting the ranges that hold fewer than here; None when this cannot be done soundly
    or would cost more than ``budget`` requests (the caller lists instead).

    A range's count is asked for (the lower half) or inferred (the upper half: the parent
    less the lower); a record is dropped only when a range asked for holds none, so a
    record the service still lists is never dropped. None when values are blank or
    repeated, a range holds more than here (a record came in unseen), or the records found
    are not the ``missing`` count (the records changed meanwhile).

    Usage: ``find_missing(client, source, {"match": "and", "rules": []}, "field_24",
    frames.original.main["field_24"], 1, budget=101)``"""
    if values.isna().any() or not values.is_unique or not len(values):
        return None
    order = np.argsort(values.to_numpy(dtype="int64"), kind="stable")
    vals = values.to_numpy(dtype="int64")[order]
    ids = values.index[order]
    target = target_of(source)

    def count(lo_val: int, hi_val: int) -> int:
        rules = [{"field": auto, "operator": "higher than", "value": int(lo_val) - 1},
                 {"field": auto, "operator": "lower than", "value": int(hi_val) + 1}]
        page = client.get_page(target, 1, 1, filters=with_rules(filters, rules)[0])
        return int(page.get("total_records") or 0)

    # a node: (first, end) positions of held records, its value bounds, its count (None:
    # to be asked), whether the count was asked for; ``pairs`` count a lower half and
    # infer its upper sibling
    Node = tuple[int, int, int, int, "int | None", bool]
    todo: list[tuple[Node, Node | None]] = [((0, len(vals), int(vals[0]), int(vals[-1]),
                                              None, False), None)]
    gone: list[int] = []
    spent = 0
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="svc-bisect") as pool:
        while todo:
            spent += len(todo)
            if spent > budget:
                return None
            counts = list(pool.map(lambda pair: count(pair[0][2], pair[0][3]), todo))
            nodes: list[Node] = []
            for (node, sibling), got in zip(todo, counts, strict=True):
                first, end, lo_val, hi_val, parent, _ = node
                nodes.append((first, end, lo_val, hi_val, got, True))
                if sibling is not None:
                    assert parent is not None
                    low, stop, lo, hi = sibling[:4]
                    nodes.append((low, stop, lo, hi, parent - got, False))
            todo = []
            for first, end, lo_val, hi_val, n, asked in nodes:
                assert n is not None
                here = end - first
                if n == here:
                    continue
                if n > here or n < 0:
                    return None
                if n == 0:
                    if asked:
                        gone.extend(range(first, end))
                    else:  # inferred: asked for before anything is dropped
                        todo.append(((first, end, lo_val, hi_val, None, False), None))
                    continue
                mid = (first + end) // 2
                lower: Node = (first, mid, lo_val, int(vals[mid]) - 1, n, False)
                upper: Node = (mid, end, int(vals[mid]), hi_val, None, False)
                todo.append((lower, upper))
    if len(gone) != missing:
        return None
    return ids[np.asarray(sorted(gone), dtype=np.int64)]


STAMP_MARGIN = dt.timedelta(seconds=30)
"""How far before the last load's start (in the service's clock) stamps are read: stamps
are to the minute (floored first), and the clock's reading from the quota headers may be
off by the time an answer takes (see :func:`stamp_cutoff`)."""
UNKNOWN_CLOCK_MARGIN = dt.timedelta(minutes=2)
"""The margin when the service's clock is unknown (no quota headers)."""
MAX_WINDOW_PASSES = 3


def clock_skew(client: Client) -> dt.timedelta | None:
    """How far the client's clock runs ahead of the service's, from the last answer's
    ``X-PlanLimit-Reset`` (ms until the next UTC day, docs/hosted-behaviour.md §4): the
    reset time in the client's clock less the UTC midnight it stands for, never below 0.
    It counts the answer's way back too, so it errs early. None when no answer told it,
    or it is more than an hour (a reset that is not midnight).

    Usage: ``clock_skew(client)  # timedelta(microseconds=2300)``"""
    quota = client.quota
    if quota is None:
        return None
    at = pd.Timestamp(quota.reset_at)
    skew = at - (at + pd.Timedelta(hours=12)).floor("D")
    if abs(skew) > pd.Timedelta(hours=1):
        return None
    # a client behind the service needs no correction (its start is early already), and
    # a reset that is not quite midnight must not move the cutoff later
    return max(skew, pd.Timedelta(0)).to_pytimedelta()


def stamp_cutoff(loaded_at: Any, stamps: pd.Series, skew: dt.timedelta | None = None
                 ) -> pd.Timestamp:
    """The oldest stamp a change since the last load can carry: the load's start in the
    service's clock (the client's less ``skew``), floored to the minute, less
    ``STAMP_MARGIN``. With ``skew`` unknown: the load's start or, if earlier, the newest
    stamp the load holds (the service's own clock, which a load that saw no change while
    it ran cannot pass), less ``UNKNOWN_CLOCK_MARGIN``. Since ever when the load's time is
    unknown.

    Usage: ``stamp_cutoff(source.load["loaded_at"], frames.original.main["field_46"])``"""
    try:
        when = pd.Timestamp(dt.datetime.fromisoformat(str(loaded_at)))
    except (TypeError, ValueError):
        return pd.Timestamp("1900-01-01", tz="UTC")
    if when.tzinfo is None:
        when = when.tz_localize("UTC")
    if skew is not None:
        return (when - skew).tz_convert("UTC").floor("min") - STAMP_MARGIN
    newest = stamps.max() if len(stamps) and stamps.notna().any() else pd.NaT
    if isinstance(newest, pd.Timestamp) and newest.tzinfo is not None and newest < when:
        when = newest
    return when.tz_convert("UTC").floor("min") - UNKNOWN_CLOCK_MARGIN


def recent(client: Client, source: Source, rpp: int, filters: Mapping[str, Any], mod: str,
           cutoff_of: Callable[[], pd.Timestamp],
           on_part: Callable[[Frames], None] | None = None) -> tuple[Frames, int]:
    """(decoded records stamped at or after ``cutoff``, or blank; the listing's
    ``total_records``): the listing sorted by ``mod``, newest first, paged until a page
    holds a stamp older than the cutoff (every later page is older still). Records stamped
    before the cutoff were last written before the last load began, which read them as
    they are: they are not decoded. ``cutoff_of`` is asked once the first page is in (it
    may read the service's clock). ``on_part`` is given each page's decoded records as
    they come (while the next page is on its way): the caller may merge them meanwhile.

    Blank stamps (records no rule has stamped since it was added) are sorted first or last
    as the service sorts blanks: a page that ends in blanks after a stamp ends the paging;
    a first page of blanks alone switches to the stamps ``is after`` the cutoff's day (a
    day early: filter dates are whole days, §1.4). A pass whose pages report different
    totals (a record inserted or deleted while paging may shift another past a page
    boundary) is fetched again; after ``MAX_WINDOW_PASSES`` a ConsistencyError."""
    tz: dt.tzinfo = ZoneInfo(source.timezone) if source.timezone else dt.timezone.utc
    cutoff: pd.Timestamp | None = None
    after: dict[str, Any] | None = None
    passes_left = MAX_WINDOW_PASSES
    listing = dict(filters)
    total = -1
    spec = next(f for f in source.fields if f.key == mod)
    parser = raw_page_parser(source.fields, parse_json)
    ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-window")
    try:
        while True:
            parts: list[Frames] = []
            totals: set[int] = set()
            number = 1
            records, page_total, pages = stamp_page(client, source, rpp, listing, mod, 1,
                                                    parser=parser)
            while True:
                totals.add(page_total)
                if cutoff is None:
                    cutoff = cutoff_of()
                    since = cutoff.tz_convert(tz).date() - dt.timedelta(days=OVERLAP_DAYS)
                    after = with_rules(filters, [{
                        "field": mod, "operator": "is after",
                        "value": format_filter_date(since, with_time=False)}])[0]
                # the stamps alone decide whether the next page is wanted; it is asked
                # for while this page is decoded
                stamps = decode_stamps(records, source, spec)
                seen = stamps.notna().to_numpy(dtype=bool)
                if number == 1 and len(seen) and not seen.any() and listing is not after:
                    # blanks sort first here: ask for the stamped records alone
                    assert after is not None
                    total = page_total
                    listing = after
                    break
                last = (len(records) < rpp or number >= pages or bool(
                    seen.any() and (bool((stamps[seen] < cutoff).any()) or not seen[-1])))
                following = None if last else ahead.submit(
                    stamp_page, client, source, rpp, listing, mod, number + 1,
                    parser=parser)
                older = (stamps < cutoff).to_numpy(dtype=bool)  # NaT: False, kept
                part = decode_page(client, source, rpp, listing, mod, number, records
                                   if not older.any() else
                                   [r for r, old in zip(records, older, strict=True)
                                    if not old])
                parts.append(part)
                if on_part is not None:
                    on_part(part)
                if following is None:
                    break
                records, page_total, pages = following.result()
                number += 1
            if not parts:  # switched to the stamped records alone
                continue
            if len(totals) == 1:
                break
            passes_left -= 1
            if passes_left <= 0:
                raise ConsistencyError(
                    f"the records of {describe(source)} changed while the recently stamped "
                    f"ones were paged ({MAX_WINDOW_PASSES} times): refresh again")
    finally:
        ahead.shutdown(wait=True)
    if listing is not after:
        total = totals.pop()
    return concat_parts(parts), total


def stamp_page(client: Client, source: Source, rpp: int, filters: Mapping[str, Any],
               mod: str, number: int, *, raw: bool = True,
               parser: Callable[[bytes], Any] | None = None
               ) -> tuple[list[Any], int, int]:
    """(records, total_records, total_pages) of one page sorted by ``mod``, newest first,
    in ``format=raw`` (parsed per field by ``parser``, default rawpages') unless ``raw``
    is False."""
    params = client.page_params(number, rpp, dict(filters) or None, mod, "desc")
    if raw:
        params["format"] = "raw"
        parser = parser or raw_page_parser(source.fields, parse_json)
    env = client.get_page(target_of(source), number, params=params,
                          parse=parser if raw else None)
    try:
        return (list(env["records"]), int(env.get("total_records") or 0),
                int(env.get("total_pages") or 0))
    except (TypeError, ValueError):
        raise ServerError(f"page {number} of {describe(source)}: total_pages/total_records "
                          "are not numbers") from None


def decode_stamps(records: Sequence[Any], source: Source, spec: FieldSpec) -> pd.Series:
    """The decoded stamps of a raw page (that field alone), in page order."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    got = build_frames(list(records), [spec], source, tz=tz, keep_original=False,
                       raw_format=True)
    # the field's first column is its date (a label alone may be named otherwise than
    # among all the fields, where labels that repeat are told apart)
    return got.main.iloc[:, 0] if len(got.main.columns) else \
        pd.Series([pd.NaT] * len(records), dtype="datetime64[ns, UTC]")


def decode_page(client: Client, source: Source, rpp: int, filters: Mapping[str, Any],
                mod: str, number: int, records: list[Any]) -> Frames:
    """A raw page decoded; asked again with display values when a raw value needs them
    (a name-like connection: its ids are only in the display HTML)."""
    try:
        return decode(records, source, raw=True)
    except DisplayValuesNeeded:
        again, _, _ = stamp_page(client, source, rpp, filters, mod, number, raw=False)
        return decode(again, source)


def oldest_first(ids: pd.Index) -> np.ndarray:
    """Positions of records listed newest stamp first, in creation order as far as the
    ids tell it (the service's ids begin with their creation time; ties keep the reverse
    of the listing), for an object without an auto-increment field to order new rows by."""
    reverse = np.arange(len(ids))[::-1]
    keys = np.asarray(ids, dtype=object)[reverse].astype(str)
    return reverse[np.argsort(keys, kind="stable")]


def concat_parts(parts: list[Frames]) -> Frames:
    """Decoded parts as one Frames; a record in several keeps its last (freshest) copy."""
    if len(parts) == 1:
        return parts[0]
    main = pd.concat([p.main for p in parts])
    keep = ~main.index.duplicated(keep="last")
    main = main[keep]
    names = {n for p in parts for n in p.tables}
    tables: dict[str, pd.DataFrame] = {}
    for name in names:
        # a table's rows of a record come from the part its main row was kept from
        pieces = []
        for i, p in enumerate(parts):
            if name not in p.tables:
                continue
            later = [q.main.index for q in parts[i + 1:]]
            t = p.tables[name]
            if later:
                t = t[~member(t["record_id"], pd.Index(np.concatenate(
                    [np.asarray(x, dtype=object) for x in later])))]
            pieces.append(t)
        tables[name] = pd.concat(pieces, ignore_index=True)
    return Frames(main, tables, parts[0].source)


def paged(client: Client, source: Source, rpp: int, filters: Mapping[str, Any]) -> Frames:
    """The decoded records of a filtered listing, asked for with ``format=raw`` (~40% fewer
    bytes); again with display values when a raw value needs its display (a name-like
    connection: its ids are only in the display HTML)."""
    pager = Paginator(client, target_of(source), rows_per_page=rpp, filters=dict(filters),
                      verify="none")
    pager.ask_raw(source.fields)
    try:
        return decode(pager.records(), source, raw=True)
    except DisplayValuesNeeded:
        return decode(Paginator(client, target_of(source), rows_per_page=rpp,
                                filters=dict(filters), verify="none").records(), source)


# ---- merging server values into the frames -----------------------------------------------
def same(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Cell by cell, by position: do two columns hold the same values (NA == NA).
    Columns of one dtype are compared on their data (Arrow's equal, the integers of
    instants, a masked array's values): a few calls, not a pandas operation each."""
    if a.dtype == object or b.dtype == object:
        return np.fromiter(map(cell_same, a, b), dtype=bool, count=len(a))
    if a.dtype == b.dtype:
        eq = equal_data(a.array, b.array)
        if eq is not None:
            na_a = np.asarray(a.isna(), dtype=bool)
            na_b = np.asarray(b.isna(), dtype=bool)
            out: np.ndarray = (eq & ~na_a & ~na_b) | (na_a & na_b)
            return out
    x, y = pd.Series(a.array, copy=False), pd.Series(b.array, copy=False)
    try:
        eq = (x == y).fillna(False).to_numpy(dtype=bool)
    except (TypeError, ValueError):
        return np.fromiter(map(cell_same, a, b), dtype=bool, count=len(a))
    return eq | (x.isna().to_numpy() & y.isna().to_numpy())


def arrow_backed(dtype: Any) -> bool:
    """Whether a column of this dtype holds its values in Arrow (``ArrowDtype``, or the
    pyarrow-stored "string" dtype). Usage: ``arrow_backed(frame[col].dtype)``"""
    return isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow")


def equal_data(a: Any, b: Any) -> np.ndarray | None:
    """Where two arrays of one dtype hold equal values, their NA cells aside (any answer
    there); None for an array kind not told here."""
    dtype = a.dtype
    if arrow_backed(dtype):
        eq = pc.equal(a.__arrow_array__(), b.__arrow_array__())
        return np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False),
                          dtype=bool)
    if isinstance(a, (pd.arrays.DatetimeArray, pd.arrays.TimedeltaArray)):
        return np.asarray(np.asarray(a.view("i8")) == np.asarray(b.view("i8")), dtype=bool)
    numpy_dtype = getattr(dtype, "numpy_dtype", None)  # a masked array (Int64, Float64...)
    if isinstance(a, (pd.arrays.IntegerArray, pd.arrays.FloatingArray,
                      pd.arrays.BooleanArray)) and numpy_dtype is not None:
        fill = False if numpy_dtype == np.bool_ else 0
        return np.asarray(a.to_numpy(dtype=numpy_dtype, na_value=fill)
                          == b.to_numpy(dtype=numpy_dtype, na_value=fill), dtype=bool)
    return None


def cell_same(x: Any, y: Any) -> bool:
    """``values_equal``, with equal lists (a multiple choice's cells) told at once."""
    if type(x) is list and type(y) is list:
        try:
            if x == y:
                return True
        except (TypeError, ValueError):  # elements that do not compare (arrays)
            pass
    return values_equal(x, y)


def _short(value: Any) -> str:
    if isinstance(value, float) and np.isnan(value):
        return ""
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    text = str(list(value) if isinstance(value, (list, tuple, np.ndarray)) else value)
    return text if len(text) <= 80 else text[:77] + "..."


class Merger:
    """Merges decoded server records into frames and their ``original`` (see module)."""

    def __init__(self, frames: Frames) -> None:
        assert frames.original is not None and frames.source is not None
        self.frames = frames
        self.col_field, self.bare = column_names(frames.source)
        self.table_field = {self.bare[f.key]: f.key for f in frames.source.fields}
        self.added: list[str] = []
        self.changed: list[str] = []
        self.deleted: list[str] = []
        self.conflicts: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self.touched: set[str] = set()  # tables whose rows moved: re-ordered at the end

    def server_count(self) -> int:
        """Records the server holds, as far as the merged ``original`` knows."""
        assert self.frames.original is not None
        return len(self.frames.original.main)

    def merge(self, server: Frames, *, complete: bool, order_by: str | None = None) -> None:
        """Take ``server``'s records; ``complete``: it is the whole listing, so loaded
        records absent from it are gone. ``order_by``: new rows are appended in the order
        of this column (the cursor), else as listed."""
        self.update(server)
        if complete:
            om = self.frames.original.main if self.frames.original is not None else None
            assert om is not None
            self.drop(om.index[~member(om.index, server.main.index)])
        self.add(server, order_by=order_by)

    def update(self, server: Frames) -> None:
        """Take the server's values of the records held (cells and exploded tables); the
        records not held are left to :meth:`add`. A record updated twice (listed again on
        a later page) takes its later values.

        Its cost follows the server's records, not the frames': rows are found by hashing
        the server's ids and probing the held ones in Arrow (:func:`locate`), and only the
        rows in question are taken and compared."""
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        main, om, sm = frames.main, orig.main, server.main
        s_to_o, _ = locate(om.index, sm.index)
        in_orig = s_to_o >= 0
        if not in_orig.any():
            return
        common = sm.index[in_orig]
        o_pos = s_to_o[in_orig]
        m_pos, m_count = locate(main.index, common)
        present = m_pos >= 0
        # cells are put by position, by label where the user's index repeats one of these
        # labels (rows added under it): every row under the label then takes the value
        by_label = bool((m_count > 1).any())
        changed_rows = np.zeros(len(common), dtype=bool)
        main_cols: dict[str, pd.Series] = {}
        orig_cols: dict[str, pd.Series] = {}
        # the rows in question (the server's rows are few: taken at once)
        cols = [c for c in om.columns if c in sm.columns]
        s_rows = sm.iloc[np.flatnonzero(in_orig)][cols]
        o_pick = Picker(o_pos, len(om))
        m_pick = Picker(np.where(present, m_pos, 0), len(main))
        for col in cols:
            s_val, o_val = s_rows[col], o_pick.take(om[col])
            srv = ~same(s_val, o_val)
            if not srv.any():
                continue
            changed_rows |= srv
            m_col = main[col] if col in main.columns else None
            # a row the user deleted: its cells are the user's (a delete) too
            usr = ~present
            agree = np.zeros(len(common), dtype=bool)
            m_val = None
            if m_col is not None and present.any():
                # the user's rows of the columns the server changed only
                m_val = m_pick.take(m_col)
                usr = usr | (present & ~same(m_val, o_val))
                agree = usr & present & same(m_val, s_val)
            clash = srv & usr & ~agree
            take_main = srv & ~usr & present
            take_orig = srv & ~clash
            for i in map(int, np.flatnonzero(clash)):
                self.conflicts.append({
                    "record_id": common[i], "field": self.col_field.get(col, col),
                    "column": col, "loaded": _short(o_val.iloc[i]),
                    "server": _short(s_val.iloc[i]),
                    "local": ("<deleted>" if not present[i] or m_val is None
                              else _short(m_val.iloc[i]))})
            if take_main.any() and m_col is not None:
                main_cols[col] = put(m_col, None if by_label else m_pos[take_main],
                                     common[take_main], s_val[take_main])
            if take_orig.any():
                orig_cols[col] = put(om[col], o_pos[take_orig], common[take_orig],
                                     s_val[take_orig])
        for col, values in main_cols.items():
            main[col] = values
        for col, values in orig_cols.items():
            om[col] = values
        table_changed = self._merge_tables(server, common, present)
        changed_ids = set(common[changed_rows]) | table_changed
        for rid in common:
            if rid in changed_ids and rid not in self._seen:
                self._seen.add(rid)
                self.changed.append(rid)

    def add(self, server: Frames, *, order_by: str | None = None) -> None:
        """Append the server's records not held (in the order of ``order_by``, else as
        listed), to the main frame, its ``original`` and the exploded tables."""
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        sm = server.main
        s_to_o, _ = locate(orig.main.index, sm.index)
        fresh = sm.iloc[np.flatnonzero(s_to_o < 0)]
        if not len(fresh):
            return
        if order_by is not None and order_by in fresh.columns:
            fresh = fresh.sort_values(order_by, kind="stable")
        self.added.extend(str(r) for r in fresh.index)
        # both frames copied side by side: appending rows copies every numeric column,
        # tens of MB into fresh pages, and the copies run without the GIL
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="svc-append") as pool:
            later = pool.submit(concat_rows, orig.main, fresh)
            frames.main = concat_rows(frames.main, fresh)
            orig.main = later.result()
        self._tables_add_drop(server, list(fresh.index), [])

    def drop(self, gone: pd.Index) -> None:
        """Remove records gone from the server (main, original, tables); a record the user
        edited is reported as a conflict."""
        if not len(gone):
            return
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        main, om = frames.main, orig.main
        for rid in gone:
            if rid in main.index and not self._row_same(main, om, rid):
                self.conflicts.append({"record_id": rid, "field": "", "column": "",
                                       "loaded": "", "server": "<deleted>",
                                       "local": "<edited>"})
        self.deleted.extend(str(r) for r in gone)
        frames.main = main[~member(main.index, gone)]
        orig.main = om[~member(om.index, gone)]
        self._tables_add_drop(Frames(om.iloc[:0]), [], list(gone))

    def _row_same(self, main: pd.DataFrame, om: pd.DataFrame, rid: str) -> bool:
        cols = [c for c in om.columns if c in main.columns]
        return all(values_equal(main.at[rid, c], om.at[rid, c]) for c in cols)

    def _merge_tables(self, server: Frames, common: pd.Index, present: np.ndarray
                      ) -> set[str]:
        """Exploded tables of records in both: per record, the server's rows unless the
        user changed that record's rows too (a conflict). Returns ids whose rows changed.
        Only the rows of ``common`` are read (one Arrow probe of each table)."""
        frames, orig = self.frames, self.frames.original
        assert orig is not None
        changed: set[str] = set()
        ids = id_needles(common)
        here = set(common[present])
        for name, ot in orig.tables.items():
            st = server.tables.get(name)
            if st is None or "record_id" not in ot.columns:
                continue
            o_sub, s_sub = ot[member(ot["record_id"], ids)], st[member(st["record_id"], ids)]
            differ = records_differing(o_sub, s_sub)
            if not differ:
                continue
            o_rows, s_rows = rows_by_record(o_sub, differ), rows_by_record(s_sub, differ)
            mt = frames.tables.get(name, ot.iloc[:0])
            m_rows = rows_by_record(mt, differ)
            take_main: set[str] = set()
            take_orig: set[str] = set()
            for rid in differ:
                o, s = o_rows.get(rid, ()), s_rows.get(rid, ())
                changed.add(rid)
                m = m_rows.get(rid, ()) if rid in here else None
                user = m is None or m != o
                if user and m != s:
                    self.conflicts.append({
                        "record_id": rid, "field": self.table_field.get(name, name),
                        "column": f"tables[{name!r}]", "loaded": _short(len(o)) + " rows",
                        "server": _short(len(s)) + " rows",
                        "local": "<deleted>" if m is None else f"{len(m)} rows"})
                    continue
                take_orig.add(rid)
                if not user:
                    take_main.add(rid)
            if take_orig:
                self.touched.add(name)
                orig.tables[name] = replace_rows(ot, st, take_orig)
            if take_main:
                frames.tables[name] = replace_rows(mt, st, take_main)
        return changed

    def _tables_add_drop(self, server: Frames, new: list[str], gone: list[str]) -> None:
        orig = self.frames.original
        assert orig is not None
        for holder in (self.frames, orig):
            for name, t in list(holder.tables.items()):
                if "record_id" not in t.columns:
                    continue
                st = server.tables.get(name)
                add = in_order(st, new) if st is not None and new else None
                keep = t[~member(t["record_id"], gone)] if gone else t
                out = concat_rows(keep, add, ignore_index=True) if add is not None else keep
                holder.tables[name] = out.reset_index(drop=True)
        # a table the load had none of (no record had a row) but new records bring
        for name, st in server.tables.items():
            for holder in (self.frames, orig):
                if name not in holder.tables and "record_id" in st.columns:
                    holder.tables[name] = in_order(st, new)

    def finish(self) -> None:
        """Tables in the order of the main frame (as a load builds them)."""
        orig = self.frames.original
        assert orig is not None
        for holder in (self.frames, orig):
            for name, t in list(holder.tables.items()):
                if name in self.touched:
                    holder.tables[name] = order_rows(t, holder.main.index)

    def conflict_frame(self) -> pd.DataFrame:
        """The conflicts, one per record and column (a record merged twice, listed again
        on a later page, keeps its last)."""
        cols = ["record_id", "field", "column", "loaded", "server", "local"]
        last = {(c["record_id"], c["column"]): c for c in self.conflicts}
        return pd.DataFrame(list(last.values()), columns=cols).astype("string")


def put(column: pd.Series, positions: np.ndarray | None, labels: pd.Index,
        values: pd.Series) -> pd.Series:
    """A copy of ``column`` with ``values`` (in the order of ``labels``) at ``positions``
    (by ``labels`` when None)."""
    if positions is not None and len(positions):
        spliced = put_chunks(column, positions, values)
        if spliced is not None:
            return spliced
    out = column.copy(deep=False)  # copy-on-write: the first change copies, once
    data = values.to_numpy() if out.dtype == object else values.array
    if positions is None:
        out.loc[labels] = data
    else:
        out.iloc[positions] = data
    return out


def put_chunks(column: pd.Series, positions: np.ndarray, values: pd.Series
               ) -> pd.Series | None:
    """``put`` into an Arrow column of many chunks: only the chunks holding ``positions``
    (unique) are rewritten, the others kept as they are (pandas' own setitem concatenates
    the whole column first, then copies it again). None for another kind of column."""
    if not arrow_backed(column.dtype):
        return None
    arrow = column.array.__arrow_array__()
    if not isinstance(arrow, pa.ChunkedArray) or arrow.num_chunks <= 1:
        return None
    try:
        new = combined(values.array.__arrow_array__() if arrow_backed(values.dtype) else
                       pa.array(values.to_numpy(dtype=object), from_pandas=True)
                       ).cast(arrow.type)
    except ARROW_ERRORS:
        return None
    order = np.argsort(positions, kind="stable")
    where = positions[order]
    new = new.take(pa.array(order))
    starts = np.concatenate([[0], np.cumsum([len(c) for c in arrow.chunks])])
    chunks = list(arrow.chunks)
    which = np.searchsorted(starts, where, side="right") - 1
    cuts = np.flatnonzero(np.diff(which)) + 1
    for lo, hi in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(where)]]),
                      strict=True):
        c = int(which[lo])
        mask = np.zeros(len(chunks[c]), dtype=bool)
        mask[where[lo:hi] - starts[c]] = True
        chunks[c] = pc.replace_with_mask(chunks[c], pa.array(mask), new.slice(lo, hi - lo))
    return pd.Series(pd.array(pa.chunked_array(chunks, type=arrow.type), dtype=column.dtype),
                     index=column.index, name=column.name, copy=False)


class Picker:
    """Takes the cells at some positions of long columns. An Arrow column of many chunks
    (a load leaves one per page) is filtered chunk by chunk and the few cells put in
    order: Arrow's take concatenates every chunk of a text column first, megabytes per
    column for a thousand cells (and, memory freshly mapped, milliseconds each).

    Usage: ``pick = Picker(positions, len(frame)); cells = pick.take(frame[col])``"""

    def __init__(self, positions: np.ndarray, length: int) -> None:
        self.positions = positions
        self.length = length
        self._mask: pa.Array | None = None
        self._order: pa.Array | None = None

    def take(self, column: pd.Series) -> pd.Series:
        """``column.iloc[positions]`` with a new RangeIndex."""
        arrow = column.array.__arrow_array__() if arrow_backed(column.dtype) else None
        if (not isinstance(arrow, pa.ChunkedArray) or arrow.num_chunks <= 1
                or not len(self.positions) or len(column) != self.length):
            return pd.Series(column.array.take(self.positions), copy=False)
        if self._mask is None:
            unique, order = np.unique(self.positions, return_inverse=True)
            mask = np.zeros(self.length, dtype=bool)
            mask[unique] = True
            self._mask, self._order = pa.array(mask), pa.array(order)
        picked = combined(pc.filter(arrow, self._mask)).take(self._order)
        return pd.Series(pd.array(picked, dtype=column.dtype), copy=False)


def id_array(values: Any) -> pa.Array | pa.ChunkedArray:
    """Ids as Arrow text: a text column's or index's own Arrow data, chunks and all (no
    copy, no Python strings), else converted. ArrowInvalid/ArrowTypeError for ids that are
    not text. Usage: ``id_array(frames.main.index)``"""
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        data: pa.Array | pa.ChunkedArray = values.array.__arrow_array__()
        return data
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return pa.array(np.asarray(values, dtype=object), type=pa.large_string(),
                    from_pandas=True)


def id_needles(ids: Any) -> pa.Array | list[Any]:
    """A few ids to look up, as one Arrow text array (made once, probed in many tables);
    as a list when they are not text. Usage: ``rows_by_record(t, id_needles(changed))``"""
    try:
        arr = id_array(ids if isinstance(ids, (pd.Index, pd.Series, np.ndarray))
                       else np.asarray(list(ids), dtype=object))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return list(ids)
    return combined(arr)


def probe(hay: Any, needles: Any, function: str) -> pa.ChunkedArray | pa.Array:
    """``pc.is_in``/``pc.index_in`` of ``hay`` (many, chunked as they are) in ``needles``
    (few: the hash is built over them)."""
    h = id_array(hay)
    n = combined(needles if isinstance(needles, (pa.Array, pa.ChunkedArray))
                 else id_array(needles))
    if n.type != h.type:
        n = n.cast(h.type)
    if function == "is_in":
        return pc.is_in(h, value_set=n, skip_nulls=True)
    return pc.index_in(h, value_set=n, skip_nulls=True)


ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def member(values: pd.Index | pd.Series, ids: Any) -> np.ndarray:
    """``values.isin(ids)`` as a bool array, in Arrow's compute over the values' own
    chunks (the string dtype's own ``isin`` walks its values in Python: seconds on
    100,000-record frames). ``ids`` may be :func:`id_needles`.

    Usage: ``rows = table[member(table["record_id"], changed_ids)]``"""
    keys = ids if isinstance(ids, (pd.Index, pd.Series, np.ndarray, pa.Array)) else list(ids)
    if not len(keys) or not len(values):
        return np.zeros(len(values), dtype=bool)
    try:
        hit = probe(values, keys, "is_in")
        return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)
    except ARROW_ERRORS:  # ids that are not text
        index = pd.Index(np.asarray(keys, dtype=object)).drop_duplicates()
        return np.asarray(index.get_indexer(np.asarray(values, dtype=object)) >= 0)


def locate(index: pd.Index, ids: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """(the position in ``index`` of each of ``ids``, -1 when absent, the first when it
    repeats; how many times each is in ``index``). ``ids`` (unique, the few) are hashed and
    ``index`` (the many) is probed in Arrow: no hash of a 100,000-record index per call.

    Usage: ``pos, count = locate(orig.main.index, server.main.index)``"""
    pos = np.full(len(ids), -1, dtype=np.int64)
    if not len(ids) or not len(index):
        return pos, np.zeros(len(ids), dtype=np.int64)
    try:
        hits = probe(index, ids, "index_in")
        rows = np.flatnonzero(np.asarray(hits.is_valid().to_numpy(zero_copy_only=False),
                                         dtype=bool))
        which = np.asarray(hits.drop_null().to_numpy(zero_copy_only=False), dtype=np.int64)
    except ARROW_ERRORS:  # ids that are not text
        found = pd.Index(np.asarray(ids, dtype=object)).get_indexer(
            np.asarray(index, dtype=object))
        rows = np.flatnonzero(found >= 0)
        which = found[rows].astype(np.int64)
    pos[which[::-1]] = rows[::-1]  # the last write wins: reversed, the first occurrence
    return pos, np.bincount(which, minlength=len(ids)).astype(np.int64)


def rows_by_record(table: pd.DataFrame, ids: Any) -> dict[str, tuple[Any, ...]]:
    """record id -> its rows (as tuples, in table order) for the given ids (a list or
    :func:`id_needles`); only their rows are read."""
    if not len(table) or "record_id" not in table.columns:
        return {}
    sub = table[member(table["record_id"], ids)]
    out: dict[str, list[tuple[Any, ...]]] = {}
    cols = []
    for c in sub.columns:
        if c != "record_id":
            values = sub[c].to_numpy(dtype=object)  # a copy: NA cells become None below
            values[sub[c].isna().to_numpy(dtype=bool)] = None
            cols.append(values)
    for rid, *vals in zip(sub["record_id"].to_numpy(dtype=object), *cols, strict=True):
        out.setdefault(str(rid), []).append(tuple(vals))
    return {k: tuple(v) for k, v in out.items()}


def records_differing(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """The record ids whose rows (in order) differ between two tables of a few records.
    Both sorted by record (stably): when the ids then match row for row, the cells are
    compared column by column; else record by record (:func:`rows_by_record`).

    Usage: ``records_differing(orig_rows, server_rows)  # ["6503..."]``"""
    o_ids = old["record_id"].to_numpy(dtype=object)
    s_ids = new["record_id"].to_numpy(dtype=object)
    if len(o_ids) == len(s_ids):
        o_order = np.argsort(o_ids, kind="stable")
        s_order = np.argsort(s_ids, kind="stable")
        if (o_ids[o_order] == s_ids[s_order]).all():
            bad = np.zeros(len(o_ids), dtype=bool)
            for col in old.columns:
                if col != "record_id":
                    other = (new[col] if col in new.columns
                             else pd.Series(pd.NA, index=new.index, dtype=object))
                    bad |= ~same(old[col].iloc[o_order], other.iloc[s_order])
            return list(dict.fromkeys(str(r) for r in o_ids[o_order][bad]))
    ids = list(dict.fromkeys(str(r) for r in (*o_ids, *s_ids)))
    o_rows, s_rows = rows_by_record(old, ids), rows_by_record(new, ids)
    return [rid for rid in ids if o_rows.get(rid, ()) != s_rows.get(rid, ())]


def in_order(table: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    """The rows of ``ids``, grouped in the order of ``ids`` (as appended to the frame)."""
    rows = table[member(table["record_id"], ids)]
    return order_rows(rows, pd.Index(ids, dtype=object)).reset_index(drop=True)


def replace_rows(table: pd.DataFrame, server: pd.DataFrame, ids: set[str]) -> pd.DataFrame:
    """``table`` with the rows of ``ids`` replaced by the server's (put in place by
    :func:`order_rows` at the end)."""
    needles = id_needles(sorted(ids))
    keep = table[~member(table["record_id"], needles)]
    add = server[member(server["record_id"], needles)]
    return concat_rows(keep, add, ignore_index=True).reset_index(drop=True)


def order_rows(table: pd.DataFrame, index: pd.Index) -> pd.DataFrame:
    """Rows grouped in the order of ``index`` (stable within a record); rows of records
    not in it (new rows the user added) keep their place at the end. Each row's place is
    probed in Arrow, and the stable sort of rows already nearly in order is quick."""
    if not len(table) or "record_id" not in table.columns:
        return table
    key = None
    if len(index):
        try:
            # the index's first occurrence of each id: the hash is built over the index
            found = pc.index_in(id_array(table["record_id"]),
                                value_set=combined(id_array(index)), skip_nulls=True)
            key = np.asarray(found.fill_null(len(index)).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
        except ARROW_ERRORS:
            key = None
    if key is None:
        where = pd.Index(np.asarray(index, dtype=object))
        if not where.is_unique:
            where = where.drop_duplicates()
        key = where.get_indexer(np.asarray(table["record_id"], dtype=object))
        key[key < 0] = len(where)
    if (np.diff(key) >= 0).all():
        return table
    return table.iloc[np.argsort(key, kind="stable")].reset_index(drop=True)


def combined(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One Arrow array of a chunked one (a value set must be one array)."""
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def concat_rows(a: pd.DataFrame, b: pd.DataFrame | None, *, ignore_index: bool = False
                ) -> pd.DataFrame:
    """Rows of ``a`` then ``b`` with ``a``'s dtypes (an empty side adds nothing)."""
    if b is None or not len(b):
        return a
    if not len(a):
        out = b.reindex(columns=a.columns) if len(a.columns) else b.copy()
    else:
        out = pd.concat([a, b.reindex(columns=a.columns)], ignore_index=ignore_index)
    for col in a.columns:
        if out[col].dtype != a[col].dtype:
            try:
                out[col] = out[col].astype(a[col].dtype)
            except (TypeError, ValueError):
                pass
    if not ignore_index:
        out.index.name = a.index.name
    return out

