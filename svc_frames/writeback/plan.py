"""The Plan of a write-back, the statuses a write can end in, and a source's column layout.

Usage::

    plan = diff(frames)            # writeback.diff builds it
    plan.changes                   # record_id, action, field, column, old, new
    plan.requests                  # RequestEstimate(writes=12, uploads=0, rereads=1, ...)
    ColumnMap.of(plan.source).field_cols["field_21"]   # the frame columns of a field
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pandas as pd

from ..arrowcols import member
from ..assets import PendingUpload
from ..errors import SvcError
from ..frames import Frames, Source
from ..kinds import codec_for
from ..kinds.assets import is_url_source
from ..kinds.base import Codec, FieldSpec, ReadContext
from ..labels import column_names, label_map, relabel
from .guardmode import DEFAULT_GUARD_WINDOW, HOSTED_RATE, GuardMode, live_batches
from .rereads import (
    LOOKUP_SCAN_LIMIT,
    PAGE_ROWS,
    REREAD_CHUNK,
    UNSEEN_RECORDS,
    LookupRoute,
    RereadRoute,
    link_requests,
    list_pages,
    object_records,
    reread_chunk,
)

__all__ = ["Plan", "ColumnMap", "Action", "Status", "NEW_ID_PREFIX", "CHANGE_COLUMNS",
           "RequestEstimate", "REREAD_CHUNK", "LOOKUP_KINDS", "LOOKUP_SCAN_LIMIT",
           "list_pages", "reread_requests", "baseline_requests", "guard_requests",
           "live_batches", "batch_rereads",
           "object_records", "reread_chunk", "UNSEEN_RECORDS", "PAGE_ROWS"]

#: Index labels starting with this prefix (or NA) mark rows to create; connection-table
#: rows may use the same temporary id to connect a new record.
NEW_ID_PREFIX = "new:"

Action = Literal["update", "create", "delete"]
Status = Literal["applied", "conflict", "failed", "skipped", "unknown", "not_applied",
                 "planned", "overwritten"]

# Kinds whose uploaded asset is placed by id; an image whose source is a URL is plain text.
ASSET_KINDS = ("file", "image")
CHANGE_COLUMNS = ["record_id", "action", "field", "column", "old", "new"]
# Kinds a created record can be looked up by (an "is" filter) when its outcome is unknown.
LOOKUP_KINDS = ("short_text", "paragraph_text", "number")



@dataclass
class ColumnMap:
    """Which frame column belongs to which field, for one source.

    Usage: ``ColumnMap.of(source).col_field["field_21.latitude"]  # -> "field_21"``"""

    fields: dict[str, FieldSpec]
    codecs: dict[str, Codec]
    field_cols: dict[str, list[str]]        # field key -> frame column names
    col_field: dict[str, str]               # frame column name -> field key
    col_key: dict[str, str]                 # frame column name -> keys-mode column name
    tables: dict[str, str]                  # table name -> connection field key
    ctx: ReadContext
    intervals: dict[str, str] = dc_field(default_factory=dict)  # table name -> timer key
    # field key -> how the frames name the field (its label, or its key), for messages
    names: dict[str, str] = dc_field(default_factory=dict)

    @classmethod
    def of(cls, source: Source) -> ColumnMap:
        fields: dict[str, FieldSpec] = {}
        codecs: dict[str, Codec] = {}
        field_cols: dict[str, list[str]] = {}
        col_field: dict[str, str] = {}
        col_key: dict[str, str] = {}
        tables: dict[str, str] = {}
        intervals: dict[str, str] = {}
        labels = source.columns == "labels"
        names = label_map(source.fields)
        for f in source.fields:
            codec = codec_for(f)
            fields[f.key] = f
            codecs[f.key] = codec
            cols: list[str] = []
            for key_col in codec.columns(f):
                col = relabel(key_col, names) if labels else key_col
                cols.append(col)
                col_field[col] = f.key
                col_key[col] = key_col
            field_cols[f.key] = cols
            if f.kind in ("connection", "timer"):
                named = intervals if f.kind == "timer" else tables
                named[f.key] = f.key
                if labels:
                    named[relabel(f.key, names)] = f.key
        tz = ZoneInfo(source.timezone) if source.timezone else None
        return cls(fields, codecs, field_cols, col_field, col_key, tables, ReadContext(tz),
                   intervals, column_names(source.fields, source.columns))

    def table_of(self, key: str, frames: Frames) -> pd.DataFrame | None:
        """The exploded table of field ``key`` in ``frames`` (keys or labels name)."""
        for name, k in {**self.tables, **self.intervals}.items():
            if k == key and name in frames.tables:
                return frames.tables[name]
        return None

    def is_upload(self, key: str) -> bool:
        f = self.fields[key]
        return f.kind in ASSET_KINDS and not is_url_source(f)  # the codec's rule

    def lookup_rules(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """"is" rules on a create's values a list request can filter on (at most 5), with
        each value as the service stores it (its kind's rule: e.g. trimmed text), so a
        record that is there is not missed (a miss would pass for absent and be sent
        again). Usage: ``layout.lookup_rules(plan.payloads["new:0"])``"""
        rules = []
        for key, val in body.items():
            f = self.fields[key]
            if f.kind in LOOKUP_KINDS and isinstance(
                    val, (str, int, float)) and not isinstance(val, bool):
                try:
                    stored = self.codecs[key].normalize(val, f, None)
                except (SvcError, TypeError, ValueError):
                    stored = val
                if isinstance(stored, (str, int, float)) and stored != "":
                    rules.append({"field": key, "operator": "is", "value": stored})
        return rules[:5]

    def key_field(self, base: Frames | None) -> tuple[str, pd.Series] | None:
        """A field whose loaded value identifies a record (auto increment, or unique), with
        the values by record id: list requests cannot filter on the record id itself.

        Usage: ``key, values = layout.key_field(plan.base) or (None, None)``"""
        if base is None:
            return None
        ranked = sorted(self.fields.values(),
                        key=lambda f: (f.kind != "auto_increment", not f.unique))
        for f in ranked:
            if f.kind not in ("auto_increment", "short_text", "number", "email") or not (
                    f.kind == "auto_increment" or f.unique):
                continue
            cols = self.field_cols.get(f.key) or []
            if len(cols) == 1 and cols[0] in base.main.columns:
                return f.key, base.main[cols[0]]
        return None


def reread_requests(source: Source, layout: ColumnMap, base: Frames | None,
                    ids: Sequence[str]) -> int:
    """The requests the guard's ``reread(ids)`` sends when the server still holds the
    loaded records (the same rules, in the same order): the whole list when it has fewer
    pages than the filtered chunks would take, else OR-filters of ``reread_chunk``
    identifying values (one page each), then one GET per record without such a value (or
    the whole list, when that is fewer). A record deleted on the server since, or whose
    identifying value changed, costs more (at most the whole list's pages again).

    Usage: ``reread_requests(plan.source, layout, plan.base, ["5d79..."])``"""
    if not ids:
        return 0
    route = RereadRoute.of(source, base, len(ids))
    if route.list_first:
        return route.pages or 0
    rest = len(ids)
    sent = 0
    keyed = layout.key_field(base)
    if keyed is not None:
        usable = len(route.key_values(keyed, ids))
        sent += -(-usable // route.chunk)
        rest -= usable
    if rest:
        sent += rest if route.one_get_each(rest) else route.rest_pages(rest)
    return sent


def batch_rereads(source: Source, layout: ColumnMap, base: Frames | None, action: Action,
                  batch: Sequence[str]) -> int:
    """The requests the live guard's re-read of one batch sends just before its writes
    (``reread_requests``; none for creates): what ``apply`` sends and claims of the
    quota, and what ``guard_requests`` counts, so the two cannot drift.

    Usage: ``batch_rereads(plan.source, layout, plan.base, "update", ids)``"""
    return 0 if action == "create" else reread_requests(source, layout, base, batch)


def guard_requests(source: Source, layout: ColumnMap, base: Frames | None,
                   updated: Sequence[str], deleted: Sequence[str], mode: GuardMode,
                   rate: float | None = None, *, upfront: bool = False
                   ) -> tuple[int, int, int]:
    """(re-reads, late re-reads, checks) the guard sends for the ``updated`` and
    ``deleted`` records, by ``guard.reread``'s rules: ``once``, one re-read of them all;
    ``live``, one per batch of ``live_batches`` (as ``apply`` cuts them, at
    ``batch_rereads`` each), and as many again at most for the records the pace kept
    past the window (``apply`` never sends more: see ``RequestEstimate.late``), and the
    check of every update after its write. ``upfront``: the live guard also re-reads
    them all before the first write (``on_conflict="raise"``).

    Usage: ``guard_requests(plan.source, layout, plan.base, ids, [], GuardMode())``"""
    checked = list(updated) + list(deleted)
    if not mode.rereads or not checked:
        return 0, 0, 0
    everything = reread_requests(source, layout, base, checked)
    if not mode.live:
        return everything, 0, 0
    order: list[tuple[str, Action]] = [(rid, "update") for rid in updated]
    order += [(rid, "delete") for rid in deleted]
    pre = sum(batch_rereads(source, layout, base, act, batch)
              for act, batch in live_batches(order, mode.batch(rate)))
    return (pre + (everything if upfront else 0), pre,
            reread_requests(source, layout, base, list(updated)))


def baseline_requests(source: Source, layout: ColumnMap, base: Frames | None,
                      bodies: Sequence[Mapping[str, Any]]) -> int:
    """The requests of ``apply.take_baseline`` before the creates ``bodies`` (the same
    rules): one OR-filter per ``reread_chunk`` distinct lookup values (a page each, when
    fewer than a page of records match), or the whole list's pages when a create has no
    such value and the object is small; none when no create can be looked up.

    Usage: ``baseline_requests(plan.source, layout, plan.base, [plan.payloads["new:0"]])``"""
    known = len(base.main) if base is not None else 0
    return LookupRoute.of([layout.lookup_rules(b) for b in bodies], known,
                          reread_chunk(source, base)).requests


@dataclass(frozen=True)
class RequestEstimate:
    """The requests a ``write_back`` of a plan sends (``plan.requests``), by purpose.

    In a run without faults, against a server that still holds the loaded records, the
    run sends at most ``total``: ``writes`` (one per record) and ``uploads`` (one per file
    to place) are upper bounds, since the guard drops conflicts and values already on the
    server and a journal remembers uploads; ``rereads`` are the guard's, by its own rules
    (exact then; the live guard re-reads each batch of records just before writing it);
    ``late`` are the live guard's re-reads of records the pace kept waiting longer than
    the window after their batch's re-read (other clients sharing the pace): batched like
    the batch re-reads, at most as many as those in a run (a record still late when they
    are spent is ``not_applied``, not sent), none when the pace keeps up; ``checks`` are
    the live guard's re-reads after the writes (is the server's value still ours?); ``lookups`` are the list reads taken before the creates (so that a
    create whose answer is lost can be proven ours), by the same rules, and the reads of
    other objects' links to the records deleted, before each batch of deletes (kept for
    an undo: ``rereads.link_requests``; counted when the plan knows ``link_fields``); each lost answer
    adds a lookup or a re-read, and retries after faults come on top of everything.

    Usage: ``plan.requests.total``; ``plan.estimate_requests(delete_missing=True)``"""

    writes: int = 0
    uploads: int = 0
    rereads: int = 0
    lookups: int = 0
    checks: int = 0
    late: int = 0
    # the pace the estimate assumes (requests/s; 0: unpaced) and the live guard's wait
    # before its check after the writes (seconds): what ``seconds`` adds up
    rate: float = dc_field(default=HOSTED_RATE, repr=False)
    wait: float = dc_field(default=0.0, repr=False)

    @property
    def total(self) -> int:
        return (self.writes + self.uploads + self.rereads + self.lookups + self.checks
                + self.late)

    @property
    def seconds(self) -> float | None:
        """About how long the run takes at ``rate``: its requests (``late`` aside, which a
        run alone does not send) one after another at the pace, and the live guard's
        wait before its check; None when unpaced (then the answers' latency decides).

        Usage: ``plan.estimate_requests(rate=client.limiter.rate).seconds``"""
        if not self.rate:
            return None
        return (self.total - self.late) / self.rate + self.wait

    def duration(self) -> str:
        """``"about 18 s at 10 requests/s"`` (``""`` when unpaced).

        Usage: ``print(plan.requests.duration())``"""
        secs = self.seconds
        if secs is None:
            return ""
        rate = f"{self.rate:g} request{'s' if self.rate != 1 else ''}/s"
        return f"about {_spoken(secs)} at {rate}"

    def as_dict(self) -> dict[str, int]:
        """The same keys as ``Report.requests``."""
        return {"writes": self.writes, "rereads": self.rereads, "uploads": self.uploads,
                "lookups": self.lookups, "checks": self.checks, "late": self.late}

    def __str__(self) -> str:
        parts = [f"{n} {what}" for what, n in (("writes", self.writes),
                                               ("uploads", self.uploads),
                                               ("re-reads", self.rereads),
                                               ("lookups", self.lookups),
                                               ("checks", self.checks)) if n]
        if self.late:
            parts.append(f"up to {self.late} late re-reads")
        took = f", {self.duration()}" if self.duration() and self.total else ""
        return f"{self.total} requests" + (f" ({', '.join(parts)})" if parts else "") + took


def _spoken(seconds: float) -> str:
    """``"4 s"``, ``"12 min"``, ``"3.2 h"``: a duration as a person says it."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


@dataclass
class Plan:
    """What ``write_back`` would send: one entry per record, shown as ``changes``.

    :func:`diff` makes it; nothing in it has been sent. Pass it (or a ``select`` of it)
    to ``write_back(client, frames, plan=...)`` to send exactly that.

    Attributes
    ----------
    changes : pandas.DataFrame
        One row per changed cell: ``record_id``, ``action`` ("update", "create",
        "delete"), ``field`` (the field key), ``column`` (the frame column, named as the
        frames name it), ``old`` (as loaded) and ``new``.
    payloads : dict
        Record id -> the field values to send (by field key, as the service takes them).
    actions : dict
        Record id -> its action.
    source : Source
        The frames' source (object or view, fields, column naming).
    edited, base : Frames, optional
        The frames the plan was made from and the values they were compared with.
    loaded, wanted : dict
        Record id -> field key -> the field's columns as loaded / as edited (what the
        guard compares with the server).
    create_rows : dict
        Temporary id of a create -> the position of its row in ``edited.main``.
    walls_reread : list of str
        Updates whose unedited date part may be a wall time the timezone skips: re-read
        before the write even with ``guard="off"``, so that part goes as the server has it.
    left_out : list
        Columns of the edited frame that are no field's (analysis columns): never sent.
    link_fields : int, optional
        Connection fields of other objects into the object: before each batch of
        deletes, ``write_back`` reads their records connected to the records it deletes
        (kept for an undo; counted as ``lookups``). None: not known to the plan
        (``write_back`` counts them from the schema).

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> frames.main.loc[frames.main.index[:2], "Status"] = "Done"
    >>> plan = diff(frames)
    >>> plan
    Plan(2 update, 0 create, 0 delete; 2 changed cells; 5 requests (2 writes, 1 re-reads, 1 checks, up to 1 late re-reads), about 2 s at 10 requests/s)
    >>> plan.changes["new"].tolist()
    ['Done', 'Done']
    """

    changes: pd.DataFrame
    payloads: dict[str, dict[str, Any]]
    actions: dict[str, Action]
    source: Source
    edited: Frames | None = dc_field(default=None, repr=False)
    base: Frames | None = dc_field(default=None, repr=False)
    # record id -> field key -> the field's base column values {keys-mode column: value}
    loaded: dict[str, dict[str, dict[str, Any]]] = dc_field(default_factory=dict, repr=False)
    # record id -> field key -> edited column values (for conflict / "already applied")
    wanted: dict[str, dict[str, dict[str, Any]]] = dc_field(default_factory=dict, repr=False)
    # temporary id of a create -> position of its row in ``edited.main``
    create_rows: dict[str, int] = dc_field(default_factory=dict, repr=False)
    # updates sending an unedited date part that may stand for a wall time the timezone
    # skips (writeback/walls.py): without the guard they are re-read for it alone
    walls_reread: list[str] = dc_field(default_factory=list, repr=False)
    # columns of the edited frame that are no field's (analysis columns): never sent
    left_out: list[Any] = dc_field(default_factory=list, repr=False)
    # connection fields of other objects into this one (None: unknown to the plan)
    link_fields: int | None = dc_field(default=None, repr=False)

    @property
    def counts(self) -> dict[str, int]:
        """Records by action: ``{"update": n, "create": n, "delete": n}``.

        Examples
        --------
        >>> frames = read_object(client, "Parts")
        >>> frames.main = frames.main.iloc[1:]        # a row removed: a delete
        >>> diff(frames).counts
        {'update': 0, 'create': 0, 'delete': 1}
        """
        out = {"update": 0, "create": 0, "delete": 0}
        for a in self.actions.values():
            out[a] += 1
        return out

    @property
    def empty(self) -> bool:
        """True when there is nothing to send (the frames equal what was loaded).

        Examples
        --------
        >>> diff(read_object(client, "Parts")).empty
        True
        """
        return not self.actions

    @property
    def record_ids(self) -> list[str]:
        """The ids of the records in the plan, in plan order (``new:N`` for creates).

        Examples
        --------
        >>> frames = read_object(client, "Parts")
        >>> frames.main.loc[frames.main.index[0], "In Stock"] = 5.0
        >>> diff(frames).record_ids == [frames.main.index[0]]
        True
        """
        return list(self.actions)

    @property
    def requests(self) -> RequestEstimate:
        """The requests ``write_back(client, frames)`` would send, by purpose.

        With the default options: the live guard, deletes not asked for, the hosted pace
        (10 requests/s). Writes and uploads are upper bounds (the guard drops conflicts
        and values already on the server), and so is ``late``: the live guard's allowance
        for records whose turn comes after the window (a pace shared with other writers),
        which a run never exceeds; a clean run alone sends ``total - late``. Retries after
        faults come on top.

        Examples
        --------
        >>> frames = read_object(client, "Work Orders")
        >>> frames.main.loc[frames.main.index[:3], "Priority"] = 5.0
        >>> plan = diff(frames)
        >>> plan.requests
        RequestEstimate(writes=3, uploads=0, rereads=1, lookups=0, checks=1, late=1)
        >>> plan.requests.total
        6
        """
        return self.estimate_requests()

    def estimate_requests(self, *, guard: bool | str = "live",
                          delete_missing: bool = False,
                          guard_window: float = DEFAULT_GUARD_WINDOW,
                          rate: float | None = None,
                          on_conflict: str = "skip",
                          link_fields: int | None = None) -> RequestEstimate:
        """The requests ``write_back`` would send with the given options, by purpose.

        Parameters
        ----------
        guard : {"live", "once", "off"} or bool, default "live"
            ``write_back``'s ``guard``.
        delete_missing : bool, default False
            ``write_back``'s ``delete_missing`` (without it deletes are not sent).
        guard_window : float, default 2.0
            ``write_back``'s ``guard_window`` (seconds, 0.5 to 60).
        rate : float, optional
            The client's pace in requests per second (``client.limiter.rate``), which
            sizes the live guard's batches; default: the hosted 10.
        on_conflict : {"skip", "overwrite", "raise"}, default "skip"
            ``write_back``'s ``on_conflict``: ``"raise"`` with the live guard adds its
            re-read of every record before the first write.
        link_fields : int, optional
            Connection fields of other objects into the object, whose links to the
            records deleted are read before each batch of deletes (``lookups``);
            default: the plan's ``link_fields`` (none when unknown).

        Returns
        -------
        RequestEstimate
            ``writes``, ``uploads``, ``rereads``, ``lookups``, ``checks``, ``late`` (the
            live guard's allowance for records re-read again because their turn came
            after the window) and ``total``.

        Raises
        ------
        UsageError
            An unknown ``guard`` or a ``guard_window`` outside 0.5-60 seconds.

        Examples
        --------
        >>> frames = read_object(client, "Work Orders")
        >>> frames.main.loc[frames.main.index[:3], "Priority"] = 5.0
        >>> plan = diff(frames)
        >>> plan.estimate_requests(guard="once").total, plan.estimate_requests(guard="off").total
        (4, 3)
        """
        mode = GuardMode.of(guard, guard_window)
        sent = [rid for rid, act in self.actions.items()
                if act != "delete" or delete_missing]
        uploads = sum(isinstance(v, PendingUpload)
                      for rid in sent for v in self.payloads.get(rid, {}).values())
        checked = [rid for rid in sent if self.actions[rid] != "create"]
        layout = ColumnMap.of(self.source)
        updated = [rid for rid in checked if self.actions[rid] == "update"]
        deleted = [rid for rid in checked if self.actions[rid] == "delete"]
        rereads, late, checks = guard_requests(self.source, layout, self.base, updated,
                                               deleted, mode, rate,
                                               upfront=on_conflict == "raise")
        if not mode.rereads:
            walls = [rid for rid in self.walls_reread if rid in set(updated)]
            rereads = reread_requests(self.source, layout, self.base, walls) if walls else 0
        creates = [self.payloads.get(rid, {}) for rid in sent if self.actions[rid] == "create"]
        links = link_fields if link_fields is not None else self.link_fields or 0
        size = max(1, mode.batch(rate) if mode.live else len(deleted))
        batches = [min(size, len(deleted) - i) for i in range(0, len(deleted), size)]
        return RequestEstimate(writes=len(sent), uploads=uploads, rereads=rereads,
                               lookups=baseline_requests(self.source, layout, self.base,
                                                         creates)
                               + link_requests(batches, links),
                               checks=checks, late=late,
                               rate=HOSTED_RATE if rate is None else rate,
                               wait=mode.window if checks else 0.0)

    def select(self, ids: Iterable[str]) -> Plan:
        """The same plan restricted to the records ``ids``.

        What the review widget sends for its ticked records:
        ``write_back(client, frames, plan=plan.select(ids))``.

        Parameters
        ----------
        ids : iterable of str
            Record ids (temporary ``new:N`` ids for creates); ids not in the plan are
            ignored.

        Returns
        -------
        Plan
            A plan of those records alone, in the order ``ids`` gives them.

        Examples
        --------
        >>> frames = read_object(client, "Work Orders")
        >>> frames.main.loc[frames.main.index[:3], "Priority"] = 5.0
        >>> plan = diff(frames)
        >>> plan.select(plan.record_ids[:1]).counts
        {'update': 1, 'create': 0, 'delete': 0}
        """
        keep = [i for i in ids if i in self.actions]
        wanted = set(keep)
        ch = self.changes[member(self.changes["record_id"], wanted)].reset_index(drop=True)
        return Plan(ch, {i: self.payloads[i] for i in keep if i in self.payloads},
                    {i: self.actions[i] for i in keep}, self.source, self.edited, self.base,
                    {i: self.loaded[i] for i in keep if i in self.loaded},
                    {i: self.wanted[i] for i in keep if i in self.wanted},
                    {i: p for i, p in self.create_rows.items() if i in wanted},
                    [i for i in self.walls_reread if i in wanted], list(self.left_out),
                    self.link_fields)

    def summary(self) -> pd.DataFrame:
        """One row per record: ``record_id``, ``action`` and the ``fields`` it sends.

        Returns
        -------
        pandas.DataFrame
            Text columns; ``fields`` lists the fields sent, comma separated, named as the
            frames name them (labels, or keys in frames named by key).

        Examples
        --------
        >>> frames = read_object(client, "Work Orders")
        >>> frames.main.loc[frames.main.index[0], ["Priority", "Status"]] = [5.0, "Done"]
        >>> diff(frames).summary()[["action", "fields"]]
           action            fields
        0  update  Priority, Status
        """
        names = column_names(self.source.fields, self.source.columns)
        rows = [(rid, act, ", ".join(names.get(k, k) for k in self.payloads.get(rid, {})))
                for rid, act in self.actions.items()]
        return pd.DataFrame(rows, columns=["record_id", "action", "fields"]).astype("string")

    def __repr__(self) -> str:
        c = self.counts
        left = (f"; left out (no field): {', '.join(map(str, self.left_out))}"
                if self.left_out else "")
        return (f"Plan({c['update']} update, {c['create']} create, {c['delete']} delete; "
                f"{len(self.changes)} changed cells; {self.requests}{left})")

    def _repr_html_(self) -> str:
        return f"<p>{self!r}</p>" + self.changes.head(50).to_html()
