"""Display values and ready JSON fragments, through the field-kind codecs.

Every write renders a record once: each field becomes a ``Piece`` (its JSON members in the
three ``format`` flavours, plus the plain values filters and sorting compare), and the
record's ``frag`` (the ``format=both`` JSON object) is stored as text, so a list request
only splices stored fragments. Computed kinds (equation, concatenation, sum/count/average/
min/max, auto increment) are computed here and rendered through their codecs.

Usage::

    r = Renderer(app)
    piece = r.piece(field, raw)
    frag = assemble(record_id, [piece, ...])
"""

from __future__ import annotations

import ast
import html
import json
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValue
from ..kinds import codec_for
from ..kinds.base import Codec, FieldSpec, ServiceHooks
from .schema import AGGREGATE_KINDS, AppDef, ObjectDef

_TAG = re.compile(r"<[^>]+>")
_BR = re.compile(r"<br\s*/?>", re.I)
_TEMPLATE = re.compile(r"\{(field_\d+)(?:\.(field_\d+))?\}")
NUMERIC_KINDS = frozenset({"number", "currency", "rating", "equation", "auto_increment"}
                          | AGGREGATE_KINDS)
DATE_KINDS = frozenset({"date_time", "timer"})


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact JSON, as the service answers it."""
    return _ENCODER.encode(value)


def text_of(display: Any) -> str:
    """Plain text of a display value (HTML tags dropped, entities decoded)."""
    if display is None:
        return ""
    s = _BR.sub(" ", str(display))
    return html.unescape(_TAG.sub("", s)).strip()


@dataclass(frozen=True)
class Piece:
    """One field of one record, rendered: JSON members for each ``format`` and filter values."""

    key: str
    raw: Any
    display: Any
    both: str
    raw_only: str
    html: str
    text: str          # lower-case plain text (filters, sorting of text kinds)
    number: float | None  # numbers, currency, ratings, dates (ms): filters and sorting
    vals: str = ""     # this field's members of the record's ``vals`` JSON (query.py)


def _vals_members(key: str, text: str, number: float | None, raw: Any) -> str:
    parts = []
    if text:
        parts.append(f"{dumps(key)}:{dumps(text)}")
    if number is not None:
        parts.append(f"{dumps(key + '#n')}:{dumps(number)}")
    if isinstance(raw, dict) and "latitude" in raw and "longitude" in raw:
        try:
            lat, lon = float(raw["latitude"]), float(raw["longitude"])
        except (TypeError, ValueError):
            pass
        else:
            if math.isfinite(lat) and math.isfinite(lon):
                parts.append(f"{dumps(key + '#lat')}:{dumps(lat)},"
                             f"{dumps(key + '#lon')}:{dumps(lon)}")
    return ",".join(parts)


def vals_json(pieces: Iterable[Piece]) -> str:
    """The record's ``vals`` JSON text from its pieces."""
    return "{" + ",".join(p.vals for p in pieces if p.vals) + "}"


def is_empty_raw(raw: Any) -> bool:
    if raw is None:
        return True
    if isinstance(raw, str):
        return raw == ""
    if isinstance(raw, (list, tuple)):
        return all(v is None for v in raw)
    if isinstance(raw, dict):
        return not raw
    return False


def to_number(raw: Any) -> float | None:
    """A number from a numeric raw value (currency strings included); None otherwise."""
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw) if math.isfinite(raw) else None
    if isinstance(raw, str):
        try:
            v = float(raw.replace(",", "").replace("$", "").strip())
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    return None


def date_ms(raw: Any) -> float | None:
    """The start instant (wall-clock ms) of a date_time or timer raw value."""
    if isinstance(raw, dict):
        if isinstance(raw.get("unix_timestamp"), (int, float)):
            return float(raw["unix_timestamp"])
        times = raw.get("times")
        if isinstance(times, list) and times:
            first = times[0].get("from") if isinstance(times[0], dict) else None
            if isinstance(first, dict) and isinstance(first.get("unix_timestamp"), (int, float)):
                return float(first["unix_timestamp"])
    return None


class Renderer:
    """Normalizes, computes and renders the fields of one application."""

    def __init__(self, app: AppDef) -> None:
        self.app = app
        self._codecs: dict[str, Codec] = {}

    def codec(self, spec: FieldSpec) -> Codec:
        if spec.key not in self._codecs:
            self._codecs[spec.key] = codec_for(spec)  # unknown kinds get the raw-JSON codec
        return self._codecs[spec.key]

    # ---- writes -------------------------------------------------------------------------
    def normalize(self, spec: FieldSpec, value: Any, hooks: ServiceHooks | None) -> Any:
        """An accepted write input -> raw (None = empty); InvalidValue naming the field."""
        codec = self.codec(spec)
        try:
            return codec.normalize(value, spec, hooks)
        except InvalidValue as exc:
            if exc.field is None:
                exc.field = spec.key
            raise
        except Exception as exc:  # noqa: BLE001
            # a codec that trips over an odd input (deep nesting, odd types) still answers
            # a 400 naming the field: the input is at fault, never a 500
            raise InvalidValue(f"{spec.key}: invalid value ({type(exc).__name__})",
                               field=spec.key) from exc

    # ---- rendering ----------------------------------------------------------------------
    def display(self, spec: FieldSpec, raw: Any) -> Any:
        if raw is None:
            return ""
        if spec.kind == "password":
            return "*****"
        try:
            return self.codec(spec).render(raw, spec)
        except Exception:  # noqa: BLE001 - a rendering bug must not turn a list into a 500
            return text_of(raw) if isinstance(raw, str) else dumps(raw)

    def piece(self, spec: FieldSpec, raw: Any) -> Piece:
        """Render one field of one record."""
        k = dumps(spec.key)
        if spec.kind == "connection":
            raw = list(raw or [])
            disp = self.display(spec, raw) if raw else ""
            dj = dumps(disp)
            rj = dumps(raw)
            text = " ".join(str(c.get("identifier", "")) for c in raw if isinstance(c, dict))
            text = text.lower()
            return Piece(spec.key, raw, disp, f"{k}:{dj},{dumps(spec.key + '_raw')}:{rj}",
                         f"{k}:{rj}", f"{k}:{dj}", text, None,
                         _vals_members(spec.key, text, None, None))
        if spec.kind == "password" or is_empty_raw(raw):
            disp = "*****" if (spec.kind == "password" and raw) else ""
            dj = dumps(disp)
            return Piece(spec.key, None, disp, f"{k}:{dj}", f"{k}:{dj}", f"{k}:{dj}", "", None)
        disp = self.display(spec, raw)
        dj = dumps(disp)
        rj = dumps(raw)
        number: float | None = None
        if spec.kind in NUMERIC_KINDS:
            number = to_number(raw)
        elif spec.kind in DATE_KINDS:
            number = date_ms(raw)
        if spec.kind == "multiple_choice" and isinstance(raw, list):
            text = "|" + "|".join(str(v).lower() for v in raw if v is not None) + "|"
        elif spec.kind == "boolean":
            text = "yes" if raw is True else "no"
        elif spec.kind == "email" and isinstance(raw, dict):
            text = str(raw.get("email", "")).lower()
        elif spec.kind == "link" and isinstance(raw, dict):
            text = str(raw.get("url", "")).lower()
        elif spec.kind == "image" and isinstance(raw, str):
            text = raw.lower()
        elif spec.kind in ("file", "image") and isinstance(raw, dict):
            text = str(raw.get("filename", "")).lower()
        elif spec.kind == "signature":
            text = "signed"
        else:
            text = text_of(disp).lower()
        text = text[:500]
        return Piece(spec.key, raw, disp, f"{k}:{dj},{dumps(spec.key + '_raw')}:{rj}",
                     f"{k}:{rj}", f"{k}:{dj}", text, number,
                     _vals_members(spec.key, text, number, raw))

    # ---- computed kinds -----------------------------------------------------------------
    def compute(self, obj: ObjectDef, raw: dict[str, Any],
                connected: Callable[[str, Sequence[str]], list[dict[str, Any]]]) -> None:
        """Fill the computed fields of ``raw`` in place (auto increment is set at create).

        ``connected(object_key, ids)`` -> the connected records as ``{"id", "raw": {...},
        "display": {...}}`` (unknown ids left out)."""
        cache: dict[str, list[dict[str, Any]]] = {}

        def conn_records(conn_key: str) -> list[dict[str, Any]]:
            if conn_key not in cache:
                try:
                    spec = obj.field(conn_key)
                except KeyError:
                    cache[conn_key] = []
                    return cache[conn_key]
                ids = [c["id"] for c in (raw.get(conn_key) or []) if isinstance(c, dict)
                       and "id" in c]
                target = (spec.relationship or {}).get("object", "")
                cache[conn_key] = connected(target, ids) if ids else []
            return cache[conn_key]

        # aggregates first, equations may use them; then equations, then text formulas
        for spec in obj.fields:
            if spec.kind in AGGREGATE_KINDS:
                raw[spec.key] = self._aggregate(spec, conn_records)
        for spec in obj.fields:
            if spec.kind == "equation":
                raw[spec.key] = self.equation(obj, spec, raw)
        for spec in obj.fields:
            if spec.kind == "concatenation":
                raw[spec.key] = self.concatenate(obj, spec, raw, conn_records)

    def _aggregate(self, spec: FieldSpec,
                   conn_records: Callable[[str], list[dict[str, Any]]]) -> float | None:
        fmt = spec.format or {}
        conn = fmt.get("connection")
        conn_key = conn.get("key") if isinstance(conn, dict) else conn
        if not isinstance(conn_key, str):
            return None
        recs = conn_records(conn_key)
        if spec.kind == "count":
            return float(len(recs))
        fld = fmt.get("field")
        fkey = fld.get("key") if isinstance(fld, dict) else fld
        nums = [n for n in (to_number(r["raw"].get(fkey)) for r in recs) if n is not None]
        if spec.kind == "sum":
            return float(sum(nums))
        if not nums:
            return None
        if spec.kind == "average":
            return sum(nums) / len(nums)
        return float(min(nums) if spec.kind == "min" else max(nums))

    def equation(self, obj: ObjectDef, spec: FieldSpec, raw: Mapping[str, Any]) -> float | None:
        """The value of a numeric equation field from the record's raw values."""
        expr = str((spec.format or {}).get("equation") or "")
        names: dict[str, float] = {}

        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            val = to_number(raw.get(key)) if obj.has_field(key) else None
            names[f"v_{key}"] = 0.0 if val is None else val
            return f"v_{key}"

        try:
            result = safe_eval(_TEMPLATE.sub(sub, expr), names)
        except (ValueError, ZeroDivisionError, OverflowError):
            return None
        return result if math.isfinite(result) else None

    def concatenate(self, obj: ObjectDef, spec: FieldSpec, raw: Mapping[str, Any],
                    conn_records: Callable[[str], list[dict[str, Any]]]) -> str | None:
        """The text of a text-formula field (``{field_N}``, ``{field_C.field_M}``)."""
        template = str((spec.format or {}).get("equation") or "")

        def sub(m: re.Match[str]) -> str:
            key, sub_key = m.group(1), m.group(2)
            if not obj.has_field(key):
                return ""
            if sub_key is None:
                if obj.field(key).kind == "connection":
                    return ", ".join(str(c.get("identifier", "")) for c in raw.get(key) or []
                                     if isinstance(c, dict))
                return text_of(self.display(obj.field(key), raw.get(key)))
            return ", ".join(text_of(r["display"].get(sub_key, "")) for r in conn_records(key))

        out = _TEMPLATE.sub(sub, template)
        return out if out.strip() else None


# ---- a small safe arithmetic evaluator (no eval) ------------------------------------------
_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_FUNCS: dict[str, Callable[..., float]] = {
    "abs": abs, "round": round, "min": min, "max": max, "sqrt": math.sqrt,
    "floor": math.floor, "ceil": math.ceil,
}


def safe_eval(expr: str, names: Mapping[str, float]) -> float:
    """Evaluate arithmetic over numbers and ``names``; ValueError for anything else.

    Usage: ``safe_eval("v_a * 2 + 1", {"v_a": 3.0}) == 7.0``"""
    try:
        tree = ast.parse(expr.strip() or "0", mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"bad equation {expr!r}") from exc

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in names:
            return float(names[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponent too large")
            return float(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _FUNCS and not node.keywords:
            return float(_FUNCS[node.func.id](*[ev(a) for a in node.args]))
        raise ValueError(f"unsupported element in equation {expr!r}")

    return ev(tree)


def assemble(record_id: str, members: Iterable[str]) -> str:
    """The JSON text of one record from its id and ready ``"key":value`` members."""
    parts = [f'"id":{dumps(record_id)}']
    parts.extend(members)
    return "{" + ",".join(parts) + "}"


RecordRow = tuple[str, str, str, str, str, "str | None"]
"""A stored record: (object key, id, ``format=both`` JSON, ``format=raw`` JSON, vals JSON,
secrets JSON or None)."""


def record_row(obj_key: str, record_id: str, pieces: Sequence[Piece],
               secret: str | None = None) -> RecordRow:
    """The stored row of a rendered record (both formats ready to splice into pages)."""
    return (obj_key, record_id, assemble(record_id, (p.both for p in pieces)),
            assemble(record_id, (p.raw_only for p in pieces)), vals_json(pieces), secret)


def format_record(rec: Mapping[str, Any], fmt: str) -> dict[str, Any]:
    """A parsed ``format=both`` record in another format (``raw``: each raw value under
    ``field_N``, the display where a field has no raw; ``html``: displays only)."""
    out: dict[str, Any] = {"id": rec.get("id")}
    for k, v in rec.items():
        if k == "id" or k.endswith("_raw"):
            continue
        out[k] = rec.get(k + "_raw", v) if fmt == "raw" else v
    return out
