"""A record's computed fields, computed in order: aggregates (aggregates.py), then
equations, then text formulas (formulas.py through render.py's references), so an equation
may use an aggregate and a text formula either.

The records a computation reads come from two lookups the caller gives: ``connected``
(records by id: what a record's own connections hold) and ``inbound`` (records of another
object whose connection holds this record), so the store computes from SQLite and the
generator from the records it has just made.

Usage::

    compute(renderer, obj, raw, connected, inbound, record_id)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .aggregates import Over, aggregate, source_of
from .render import Renderer
from .schema import AGGREGATE_KINDS, AppDef, ObjectDef

__all__ = ["Connected", "Inbound", "compute", "inbound_aggregated", "sources"]

Connected = Callable[[str, Sequence[str]], list[dict[str, Any]]]
"""``connected(object_key, ids)`` -> ``[{"id", "raw", "display"}]`` (unknown ids left out)."""
Inbound = Callable[[str, str, str], list[dict[str, Any]]]
"""``inbound(holder_object, connection_key, record_id)`` -> the holder's records whose
connection holds ``record_id`` (as ``Connected`` gives them)."""

_SOURCES: dict[int, tuple[ObjectDef, dict[str, Over | None]]] = {}


def sources(app: AppDef, obj: ObjectDef) -> dict[str, Over | None]:
    """{aggregate field key: where it takes its records} for ``obj`` (kept per object)."""
    hit = _SOURCES.get(id(obj))
    if hit is None or hit[0] is not obj:
        if len(_SOURCES) > 4096:
            _SOURCES.clear()
        hit = (obj, {f.key: source_of(app, obj, f) for f in obj.fields
                     if f.kind in AGGREGATE_KINDS})
        _SOURCES[id(obj)] = hit
    return hit[1]


def inbound_aggregated(app: AppDef) -> dict[tuple[str, str], set[str]]:
    """{(holder object, connection key): objects with an aggregate over that connection
    from the other side}: a write to a holder's record changes those objects' records it
    connects to (before and after the write)."""
    out: dict[tuple[str, str], set[str]] = {}
    for obj in app.objects.values():
        for over in sources(app, obj).values():
            if over is not None and over.inbound:
                out.setdefault((over.holder, over.conn_key), set()).add(obj.key)
    return out


def compute(renderer: Renderer, obj: ObjectDef, raw: dict[str, Any], connected: Connected,
            inbound: Inbound | None = None, record_id: str | None = None) -> None:
    """Fill the computed fields of ``raw`` in place (auto increment is set at create).
    Without ``inbound`` (or a ``record_id``), aggregates over another object's connection
    count no records."""
    cache: dict[str, list[dict[str, Any]]] = {}

    def conn_records(conn_key: str) -> list[dict[str, Any]]:
        if conn_key not in cache:
            cache[conn_key] = []
            if obj.has_field(conn_key) and obj.field(conn_key).kind == "connection":
                spec = obj.field(conn_key)
                ids = [str(c["id"]) for c in (raw.get(conn_key) or [])
                       if isinstance(c, dict) and "id" in c]
                target = (spec.relationship or {}).get("object", "")
                cache[conn_key] = connected(target, ids) if ids else []
        return cache[conn_key]

    where = sources(renderer.app, obj)
    for spec in obj.fields:
        if spec.kind in AGGREGATE_KINDS:
            over = where.get(spec.key)
            if over is None:
                records: list[dict[str, Any]] = []
            elif over.inbound:
                records = inbound(over.holder, over.conn_key, record_id) \
                    if inbound is not None and record_id is not None else []
            else:
                records = conn_records(over.conn_key)
            raw[spec.key] = aggregate(renderer, spec, over, records)
    for spec in obj.fields:
        if spec.kind == "equation":
            raw[spec.key] = renderer.equation(obj, spec, raw, conn_records)
    for spec in obj.fields:
        if spec.kind == "concatenation":
            raw[spec.key] = renderer.concatenate(obj, spec, raw, conn_records)
