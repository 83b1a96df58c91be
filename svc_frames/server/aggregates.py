"""Count, sum, average, minimum and maximum over a connection, in either direction.

An aggregate field's ``format.connection`` names a connection field. When the aggregate's
own object holds it, the records aggregated are the ones the record connects to; when
another object holds it (a customer's "Count of Orders", each order connecting to its
customer), they are that object's records that connect to this one. ``format.filters``
(rules as a form's record rules write them, all of which must hold) narrow the records.

Usage::

    over = source_of(app, obj, spec)     # Over(conn_key, holder, other, inbound) or None
    value = aggregate(renderer, spec, over, records)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..kinds.base import FieldSpec
from .query import rule_matches
from .render import Renderer, to_number
from .schema import AppDef, ObjectDef

__all__ = ["Over", "aggregate", "conn_key_of", "source_of"]


@dataclass(frozen=True)
class Over:
    """The records an aggregate runs over: connection ``conn_key`` of object ``holder``;
    ``other`` is the object whose records are aggregated; ``inbound`` when ``other`` holds
    the connection (it points at the aggregate's object)."""

    conn_key: str
    holder: str
    other: str
    inbound: bool


def conn_key_of(spec: FieldSpec) -> str | None:
    """The connection field an aggregate (or any computed field) names in its format."""
    conn = (spec.format or {}).get("connection")
    key = conn.get("key") if isinstance(conn, dict) else conn
    return key if isinstance(key, str) else None


def _field_key(spec: FieldSpec) -> str | None:
    fld = (spec.format or {}).get("field")
    key = fld.get("key") if isinstance(fld, dict) else fld
    return key if isinstance(key, str) else None


def source_of(app: AppDef, obj: ObjectDef, spec: FieldSpec) -> Over | None:
    """Where the aggregate ``spec`` of ``obj`` takes its records; None when its connection
    is neither a connection of ``obj`` nor one pointing at ``obj``."""
    key = conn_key_of(spec)
    if key is None:
        return None
    if obj.has_field(key) and obj.field(key).kind == "connection":
        target = str((obj.field(key).relationship or {}).get("object", ""))
        return Over(key, obj.key, target, False) if target in app.objects else None
    for holder, f in app.iter_fields():
        if f.key == key and f.kind == "connection" \
                and (f.relationship or {}).get("object") == obj.key:
            return Over(key, holder.key, holder.key, True)
    return None


def _passes(renderer: Renderer, other: ObjectDef, raw: Mapping[str, Any],
            rules: Sequence[Mapping[str, Any]]) -> bool:
    pieces = {}
    for rule in rules:
        key = rule.get("field")
        if isinstance(key, str) and other.has_field(key) and key not in pieces:
            pieces[key] = renderer.piece(other.field(key), raw.get(key))
    return all(rule_matches(other, pieces, rule) for rule in rules)


def aggregate(renderer: Renderer, spec: FieldSpec, over: Over | None,
              records: Sequence[Mapping[str, Any]]) -> float | None:
    """The value of aggregate ``spec`` over ``records`` (``{"raw": {...}}`` each, of
    ``over.other``): a count or sum of none is 0; an average, minimum or maximum of no
    number is blank."""
    if over is None:
        return 0.0 if spec.kind in ("count", "sum") else None
    other = renderer.app.objects[over.other]
    rules = [r for r in (spec.format or {}).get("filters") or [] if isinstance(r, Mapping)]
    if rules:
        records = [r for r in records if _passes(renderer, other, r["raw"], rules)]
    if spec.kind == "count":
        return float(len(records))
    fkey = _field_key(spec)
    nums = [n for n in (to_number(r["raw"].get(fkey)) for r in records) if n is not None] \
        if fkey else []
    if spec.kind == "sum":
        return float(sum(nums))
    if not nums:
        return None
    if spec.kind == "average":
        return sum(nums) / len(nums)
    return float(min(nums) if spec.kind == "min" else max(nums))
