"""What an undo needs of a write-back run, kept as the run goes: each applied update's
fields as loaded and as written, each created record as the service made it, each
deleted record whole (its cells, its exploded tables, and the records of the same frames
that connected to it). ``Report.kept`` holds it in memory; a journal keeps it in its
``ack`` lines (``"undo"``) and opens each run with a ``run`` line naming the application,
the object and the source, so an undo in another process reads it back
(``svc_frames/undoing/``).

Values are the frames' cells, keyed by keys-mode column, as JSON: a time as
``{"$ts": iso}``, a duration as ``{"$td": nanoseconds}``, a pair as ``{"$tuple": [...]}``;
``from_json`` reads them back.

Usage::

    keeper = Keeper(run)                # a RunState after triage
    jr.keep = keeper.entry              # each ack carries its entry
    kept = keeper.finish()              # every applied record's entry -> Report.kept
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import SvcError
from ..frames import Source
from ..query import rules_within
from ..records import Client
from ..schema import Connection
from .plan import PAGE_ROWS, REREAD_CHUNK
from .report import Kept
from .rereads import LINK_CHUNK
from .state import RunState

__all__ = ["Keeper", "to_json", "from_json", "run_header", "KEPT_VERSION"]

#: The shape of the kept entries (a journal line's ``"undo"``); an undo refuses a newer one.
KEPT_VERSION = 1


def to_json(v: Any) -> Any:
    """A frame cell (or a list, tuple or mapping of them) as JSON-ready data."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(float(v)) else float(v)
    if isinstance(v, str):
        return v
    if isinstance(v, (pd.Timestamp, dt.datetime, np.datetime64)):
        ts = pd.Timestamp(v)
        return None if pd.isna(ts) else {"$ts": ts.isoformat()}
    if isinstance(v, (pd.Timedelta, dt.timedelta, np.timedelta64)):
        td = pd.Timedelta(v)
        return None if pd.isna(td) else {"$td": int(td.value)}
    if isinstance(v, tuple):
        return {"$tuple": [to_json(x) for x in v]}
    if isinstance(v, (list, np.ndarray, pd.api.extensions.ExtensionArray)):
        return [to_json(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): to_json(x) for k, x in v.items()}
    return str(v)


def from_json(v: Any) -> Any:
    """The cell ``to_json`` wrote (None stands for a missing value)."""
    if isinstance(v, list):
        return [from_json(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (tag, x), = v.items()
            if tag == "$ts":
                return pd.Timestamp(x)
            if tag == "$td":
                return pd.Timedelta(int(x), unit="ns")
            if tag == "$tuple":
                return tuple(from_json(y) for y in x)
        return {k: from_json(x) for k, x in v.items()}
    return v


def run_header(run: RunState) -> dict[str, Any]:
    """What a journal's ``run`` line says of the run: the application, the object, the
    target and the source (keys-mode columns), so an undo can check and rebuild it."""
    source = run.source
    return {"version": KEPT_VERSION, "app_id": run.client.app_id,
            "object_key": source.object_key, "object_name": source.name,
            "target": run.tgt.name, "source": keys_source(source).to_dict()}


def keys_source(source: Source) -> Source:
    """The source with keys-mode columns, without its load (what undo frames carry)."""
    data = source.to_dict()
    data["columns"] = "keys"
    data["load"] = None
    return Source.from_dict(data)


def inbound_connections(client: Client, obj: str) -> list[Connection]:
    """The connection fields into ``obj`` (whose links to a deleted record the service
    drops): other objects', and ``obj``'s own (its records outside the run's frames, or
    fields the frames did not load, are known only by reading them).
    Usage: ``inbound_connections(client, "object_3")``"""
    return [c for c in client.schema().connections() if c.to_object == obj]


class Keeper:
    """Entries of one run's applied records, made once each (a journal's ack or the end
    of the run, whichever comes first)."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.kept = Kept(run_header(run))
        self._tables: dict[str, dict[str, list[dict[str, Any]]]] | None = None
        self._inbound: dict[str, dict[str, dict[str, list[str]]]] | None = None
        self._cols = [c for c in (run.plan.base.main.columns if run.plan.base is not None
                                  else []) if c in run.layout.col_key]
        # the field the guard re-reads records by (auto increment, unique), kept with each
        # update so the undo's guard re-reads by it too
        self._key = run.layout.key_field(run.plan.base)
        # record to delete -> "object_N.field_N" of another object -> its records
        # connected to it -> their whole lists (None: the field could not be read)
        self.links: dict[str, dict[str, dict[str, list[str]] | None]] = {}
        self._conns: list[Connection] | None = None   # other objects' fields into it
        self._chunks: dict[str, int] = {}              # connecting object -> ids a read

    def link_fields(self) -> list[Connection]:
        """The connection fields into the run's object, its own included (the schema's,
        read once; none through a view: its user may not read other objects)."""
        if self._conns is None:
            self._conns = [] if self.run.tgt.is_view else inbound_connections(
                self.run.client, self.run.source.object_key)
        return self._conns

    def keep_links(self, ids: Sequence[str]) -> bool:
        """Just before a batch of deletes (``ids``; after the live guard's re-read): the
        records connected to each (of other objects, and of the object itself: those
        outside the frames), with their whole connection lists
        (the service drops those links at the delete; an undo points them at the
        re-created record). Read per batch, so a link made while the run went is known
        unless it lands within the moment between this read and the delete. One list
        request per connection field into the object and chunk of ids
        (``rereads.link_requests``), counted as ``lookups`` and claimed of the quota's
        gate like the writes: False when the gate is shut (nothing read; the deletes
        are then not sent). A field that cannot be read is kept as unknown (the deletes
        still go)."""
        run = self.run
        deletes = [rid for rid in ids if run.todo.get(rid) == "delete"]
        conns = self.link_fields() if deletes else []
        if not conns:
            return True
        gate = run.gate
        chunks = {c.from_object: self._chunk(c.from_object, len(deletes)) for c in conns}
        if gate is not None and gate.stopped:
            return False
        cost = sum(-(-len(deletes) // chunks[c.from_object]) for c in conns)
        if gate is not None and gate.claim(cost):
            return False
        try:
            for c in conns:
                self._keep(c, deletes, chunks[c.from_object])
        finally:
            if gate is not None:
                gate.release(cost)
        return True

    def _keep(self, c: Connection, deletes: list[str], chunk: int) -> None:
        """One connection field's links to ``deletes``, read ``chunk`` ids at a time."""
        name = f"{c.from_object}.{c.field}"
        for rid in deletes:
            self.links.setdefault(rid, {})[name] = {}
        for i in range(0, len(deletes), chunk):
            part = deletes[i:i + chunk]
            try:
                found = self._linked(c.from_object, c.field, part)
            except SvcError:
                for rid in part:
                    self.links[rid][name] = None
                continue
            for other, linked in found.items():
                for rid in set(part) & set(linked):
                    held = self.links[rid][name]
                    if held is not None:
                        held[other] = linked

    def _chunk(self, obj: str, deletes: int) -> int:
        """Ids one read of ``obj``'s links lists: as many as the service's filter limit
        allows over an object of unknown size (``LINK_CHUNK``) while a batch holds no
        more; else as many as it allows over its records, counted once (one request,
        claimed of the quota's gate; with room for some created meanwhile)."""
        if obj in self._chunks:
            return self._chunks[obj]
        if deletes <= LINK_CHUNK:
            return LINK_CHUNK
        gate = self.run.gate
        total = None
        if gate is None or not gate.claim(1):
            try:
                self.run.counter.add("lookups")
                total = self.run.client.get_page(obj, rows_per_page=1).get("total_records")
            except SvcError:
                total = None
            finally:
                if gate is not None:
                    gate.release(1)
        if not isinstance(total, int) or isinstance(total, bool):
            return LINK_CHUNK
        self._chunks[obj] = rules_within(int(total * 1.25) + 100, REREAD_CHUNK)
        return self._chunks[obj]

    def _linked(self, obj: str, field_key: str, ids: list[str]) -> dict[str, list[str]]:
        """The records of ``obj`` whose connection ``field_key`` holds any of ``ids``:
        record id -> its whole list."""
        client, counter = self.run.client, self.run.counter
        query = {"match": "or", "rules": [{"field": field_key, "operator": "is", "value": r}
                                          for r in ids]}
        out: dict[str, list[str]] = {}
        page, pages = 1, 1
        while page <= pages:
            counter.add("lookups")
            got = client.get_page(obj, page=page, rows_per_page=PAGE_ROWS, filters=query)
            pages = int(got.get("total_pages") or 1)
            for rec in got.get("records") or []:
                raw = rec.get(f"{field_key}_raw") or []
                out[str(rec["id"])] = [str(x["id"]) for x in raw
                                       if isinstance(x, Mapping) and x.get("id")]
            page += 1
        return out

    def entry(self, info: Mapping[str, Any]) -> dict[str, Any] | None:
        """The entry of a journal ack (``action``, ``record_id``, ``new_id``, ``record``),
        kept in memory too; None when nothing of it can be undone."""
        act, rid = info.get("action"), str(info.get("record_id"))
        if rid in self.kept.entries:
            return self.kept.entries[rid]
        e: dict[str, Any] | None
        if act == "update":
            e = self._update(rid)
        elif act == "create":
            e = self._create(rid, info.get("new_id"), info.get("record"))
        elif act == "delete":
            e = self._delete(rid)
        else:
            return None
        if e is not None:
            self.kept.entries[rid] = e
        return e

    def finish(self) -> Kept:
        """Every applied record's entry: from an earlier process's journal when it acked
        the record, else made now."""
        run = self.run
        for rid, o in run.outcomes.items():
            if o.status != "applied" or rid in self.kept.entries:
                continue
            ack = run.jr.acks.get(run.keys.get(rid, "")) if run.jr else None
            if ack is not None and isinstance(ack.get("undo"), dict):
                self.kept.entries[rid] = ack["undo"]
                continue
            self.entry({"action": o.action, "record_id": rid, "new_id": o.new_id,
                        "record": o.record})
        return self.kept

    # ---- one entry per action ---------------------------------------------------------
    def _update(self, rid: str) -> dict[str, Any]:
        plan = self.run.plan
        keys = list(self.run.payloads.get(rid) or plan.payloads.get(rid, {}))
        loaded = plan.loaded.get(rid, {})
        wanted = plan.wanted.get(rid, {})
        entry = {"action": "update", "record_id": rid,
                 "loaded": {k: to_json(loaded[k]) for k in keys if k in loaded},
                 "written": {k: to_json(wanted[k]) for k in keys if k in wanted}}
        if self._key is not None:
            key, values = self._key
            col = self.run.layout.field_cols[key][0]
            if rid in values.index:
                entry["key"] = {self.run.layout.col_key[col]: to_json(values.at[rid])}
        return entry

    def _create(self, tmp: str, new_id: Any, record: Any) -> dict[str, Any]:
        wanted = self.run.wanted_of(tmp)
        return {"action": "create", "record_id": tmp,
                "new_id": str(new_id) if new_id else None,
                "record": record if isinstance(record, Mapping) else None,
                "written": {k: to_json(v) for k, v in wanted.items()}}

    def _delete(self, rid: str) -> dict[str, Any] | None:
        base = self.run.plan.base
        if base is None or rid not in base.main.index:
            return None
        col_key = self.run.layout.col_key
        row = base.main.loc[[rid], self._cols].to_numpy(dtype=object)[0].tolist()
        cells = {col_key[c]: to_json(v) for c, v in zip(self._cols, row, strict=True)}
        tables, inbound = self._grouped()
        return {"action": "delete", "record_id": rid, "row": cells,
                "tables": {k: rows.get(rid, []) for k, rows in tables.items()
                           if rows.get(rid)},
                "inbound": {k: by[rid] for k, by in inbound.items() if rid in by},
                "links": self.links.get(rid, {})}

    def _grouped(self) -> tuple[dict[str, dict[str, list[dict[str, Any]]]],
                                dict[str, dict[str, dict[str, list[str]]]]]:
        """The base's connection and timer tables by record (keys-mode names, without
        ``record_id``), and, for each connection, the records listing each id with their
        whole list as loaded (the records to point at a re-created one). Made once."""
        if self._tables is not None and self._inbound is not None:
            return self._tables, self._inbound
        base, layout = self.run.plan.base, self.run.layout
        tables: dict[str, dict[str, list[dict[str, Any]]]] = {}
        inbound: dict[str, dict[str, dict[str, list[str]]]] = {}
        named = {**layout.tables, **layout.intervals}
        for name, table in (base.tables.items() if base is not None else []):
            key = named.get(name)
            if key is None or "record_id" not in table.columns:
                continue
            cols = [c for c in table.columns if c != "record_id"]
            by: dict[str, list[dict[str, Any]]] = {}
            for r, *vals in zip(table["record_id"].astype(object).tolist(),
                                *(table[c].tolist() for c in cols), strict=True):
                by.setdefault(str(r), []).append(
                    {c: to_json(v) for c, v in zip(cols, vals, strict=True)})
            tables[key] = by
            if key in layout.tables.values() and "connected_id" in cols:
                lists = {r: [str(x["connected_id"]) for x in rows] for r, rows in by.items()}
                into: dict[str, dict[str, list[str]]] = {}
                for r, ids in lists.items():
                    for c in ids:
                        into.setdefault(c, {})[r] = ids
                inbound[key] = into
        self._tables, self._inbound = tables, inbound
        return tables, inbound

