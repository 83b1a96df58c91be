"""Display values and ready JSON fragments, through the field-kind codecs.

Every write renders a record once: each field becomes a ``Piece`` (its JSON members in the
three ``format`` flavours, plus the plain values filters and sorting compare), and the
record's ``frag`` (the ``format=both`` JSON object) is stored as text, so a list request
only splices stored fragments. Computed kinds are computed by computed.py (aggregates in
aggregates.py, equations and text formulas through formulas.py with the references this
module reads) and rendered here through their codecs.

Usage::

    r = Renderer(app)
    piece = r.piece(field, raw)
    frag = assemble(record_id, [piece, ...])
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValue
from ..kinds import codec_for, is_date_result
from ..kinds.base import Codec, FieldSpec, ServiceHooks
from ..kinds.wallclock import raw_date
from .formulas import Ref, RefLookup, equation, text_formula
from .schema import AGGREGATE_KINDS, AppDef, ObjectDef

_TAG = re.compile(r"<[^>]+>")
_BR = re.compile(r"<br\s*/?>", re.I)
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
            raw = codec.normalize(value, spec, hooks)
            if spec.kind == "user_roles" and raw:
                self.check_roles(spec, raw)
            return raw
        except InvalidValue as exc:
            if not exc.message.startswith(spec.key):  # every refusal names its field
                raise InvalidValue(f"{spec.key} ({spec.kind}): {exc.message}",
                                   field=spec.key) from None
            if exc.field is None:
                exc.field = spec.key
            raise
        except Exception as exc:  # noqa: BLE001
            # a codec that trips over an odd input (deep nesting, odd types) still answers
            # a 400 naming the field: the input is at fault, never a 500
            raise InvalidValue(f"{spec.key}: invalid value ({type(exc).__name__})",
                               field=spec.key) from exc

    def check_roles(self, spec: FieldSpec, roles: Sequence[str]) -> None:
        """InvalidValue naming the field for a role the application does not have (its
        roles: the user objects' profile keys and the document's ``profiles``)."""
        unknown = [r for r in roles if r not in self.app.profiles]
        if unknown:
            have = ", ".join(sorted(self.app.profiles)) or "none"
            raise InvalidValue(f"{spec.key}: {unknown[0]!r} is not a role of this "
                               f"application (its roles: {have})", field=spec.key)

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
        if spec.kind in DATE_KINDS or is_date_result(spec):
            number = date_ms(raw)
        elif spec.kind in NUMERIC_KINDS:
            number = to_number(raw)
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

    # ---- computed kinds (computed.py runs them in order) --------------------------------
    def ref(self, spec: FieldSpec, raw: Any, text: bool = True) -> Ref:
        """A field's value as a formula reads it (formulas.py): display text (unless
        ``text`` is false: an equation reads numbers and dates only), number, date."""
        if spec.kind == "connection":
            return Ref(", ".join(str(c.get("identifier", "")) for c in raw or []
                                 if isinstance(c, dict)))
        shown = "" if not text or is_empty_raw(raw) else text_of(self.display(spec, raw))
        if spec.kind in DATE_KINDS or is_date_result(spec):
            ms = date_ms(raw)
            return Ref(shown, None, None if ms is None else _wall_clock(ms))
        if spec.kind in NUMERIC_KINDS:
            number = to_number(raw)
            return Ref(shown, 0.0 if number is None else number)
        return Ref(shown)

    def lookup(self, obj: ObjectDef, raw: Mapping[str, Any],
               conn_records: Callable[[str], list[dict[str, Any]]],
               text: bool = True) -> RefLookup:
        """The reference lookup of one record: ``{field_N}`` from ``raw``,
        ``{field_C.field_M}`` from the records connection ``field_C`` holds."""
        def lookup(key: str, sub_key: str | None) -> Ref:
            if not obj.has_field(key):
                return Ref("")
            spec = obj.field(key)
            if sub_key is None:
                return self.ref(spec, raw.get(key), text)
            target = self.app.objects.get((spec.relationship or {}).get("object", ""))
            if spec.kind != "connection" or target is None or not target.has_field(sub_key):
                return Ref("")
            sub = target.field(sub_key)
            refs = [self.ref(sub, r["raw"].get(sub_key), text) for r in conn_records(key)]
            if len(refs) == 1:
                return refs[0]
            return Ref(", ".join(r.text for r in refs),
                       0.0 if not refs and sub.kind in NUMERIC_KINDS
                       and not is_date_result(sub) else None)
        return lookup

    def equation(self, obj: ObjectDef, spec: FieldSpec, raw: Mapping[str, Any],
                 conn_records: Callable[[str], list[dict[str, Any]]] | None = None,
                 ) -> float | dict[str, Any] | None:
        """The raw value of an equation field (formulas.equation, in the application's
        timezone and by the service's clock for ``currentTime()``): a number, or for a date result (kinds.is_date_result) the raw date
        object a date_time holds, minutes kept; blank (None) when the result is not the
        kind the field's format says or cannot be evaluated."""
        fmt = spec.format or {}
        value = equation(str(fmt.get("equation") or ""),
                         self.lookup(obj, raw, conn_records or _no_records, text=False),
                         unit=str(fmt.get("date_type") or "days"), zone=self.app.zone,
                         now=self.app.local_now() if "currentTime" in str(
                             fmt.get("equation") or "") else None)
        if not is_date_result(spec):
            return value if isinstance(value, float) else None
        if not isinstance(value, dt.datetime):
            return None
        try:
            return raw_date(value.replace(second=0, microsecond=0), spec)
        except ValueError:  # a year outside what a date column holds: blank, never a 500
            return None

    def concatenate(self, obj: ObjectDef, spec: FieldSpec, raw: Mapping[str, Any],
                    conn_records: Callable[[str], list[dict[str, Any]]]) -> str | None:
        """The text of a text-formula field (formulas.text_formula)."""
        template = str((spec.format or {}).get("equation") or "")
        out = text_formula(template, self.lookup(obj, raw, conn_records))
        return out if out.strip() else None


def _no_records(_key: str) -> list[dict[str, Any]]:
    return []


def _wall_clock(ms: float) -> dt.datetime | None:
    """A stored date's wall-clock time (the service labels local time as UTC)."""
    try:
        return dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None


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
