"""Structured contact kinds: name, email, phone, link, address."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from ._util import (
    as_text,
    float_series,
    get_value,
    html_lines,
    html_to_text,
    invalid,
    is_blank,
    is_na,
    raw_values,
    string_series,
    to_number,
)
from .base import Codec, FieldSpec, ReadContext, ServiceHooks

_HREF = re.compile(r"""href\s*=\s*["']([^"']*)["']""", re.I)


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _text_or_none(value: Any) -> str | None:
    if value is None or is_na(value):
        return None
    text = str(value).strip()
    return text or None


# ---- name ------------------------------------------------------------------------------------
_NAME_PARTS = ("title", "first", "middle", "last")


class NameCodec(Codec):
    """name: raw ``{title?, first, middle?, last}``; display per ``format["format"]``
    ("First Last" default, "Last, First", "Last, First Middle", "Title First Middle Last"...)."""

    kinds: ClassVar[tuple[str, ...]] = ("name",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        if isinstance(value, str):
            value = _split_name(value)
        if not isinstance(value, Mapping):
            raise invalid(field, f"expected a name object {{first, last}}, got {value!r}")
        unknown = set(value) - set(_NAME_PARTS)
        if unknown:
            raise invalid(field, f"unknown name parts {sorted(unknown)}; use {_NAME_PARTS}")
        parts = {k: ("" if is_blank(value.get(k)) else as_text(value.get(k), field).strip())
                 for k in _NAME_PARTS}
        if not any(parts.values()):
            return None
        out: dict[str, str] = {}
        if parts["title"]:
            out["title"] = parts["title"]
        out["first"] = parts["first"]
        if parts["middle"]:
            out["middle"] = parts["middle"]
        out["last"] = parts["last"]
        return out

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, Mapping):
            return "" if raw is None else str(raw)
        fmt = str(field.format.get("format") or "First Last")
        t, f, m, la = (str(raw.get(k) or "") for k in _NAME_PARTS)
        if fmt.startswith("Last"):
            given = " ".join(x for x in (f, m if "Middle" in fmt else "") if x)
            return ", ".join(x for x in (la, given) if x)
        words = [t if "Title" in fmt else "", f, m if "Middle" in fmt else "", la]
        return " ".join(x for x in words if x)

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and bool(raw) and set(raw) <= set(_NAME_PARTS) \
            and ("first" in raw or "last" in raw)

    def columns(self, field: FieldSpec) -> list[str]:
        return [f"{field.key}.{p}" for p in _NAME_PARTS]

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        fmt = str(field.format.get("format") or "First Last")
        rows = [r if isinstance(r, dict)
                else (_split_name(html_to_text(d), fmt) if r is None and isinstance(d, str)
                      and d else {}) for r, d in zip(raws, displays, strict=False)]
        return {f"{field.key}.{p}": string_series([row.get(p) for row in rows])
                for p in _NAME_PARTS}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        parts = {p: _text_or_none(values.get(f"{field.key}.{p}")) for p in _NAME_PARTS}
        if not any(parts.values()):
            return ""
        return {p: v for p, v in parts.items() if v is not None}


def _split_name(text: str, fmt: str = "") -> dict[str, str]:
    text = text.strip()
    if "," in text:
        last, _, given = text.partition(",")
        words = given.split()
        return {"first": words[0] if words else "", "middle": " ".join(words[1:]),
                "last": last.strip()}
    words = text.split()
    if not words:
        return {}
    if len(words) == 1:
        return {"first": words[0], "last": ""}
    if "Title" in fmt and len(words) > 2:
        return {"title": words[0], "first": words[1], "middle": " ".join(words[2:-1]),
                "last": words[-1]}
    return {"first": words[0], "middle": " ".join(words[1:-1]), "last": words[-1]}


# ---- email and link: {member, label?}, written as an object or a plain string ---------------
_EMAIL = re.compile(r"^[^@\s<>\"]+@[^@\s<>\"]+$")


class _AnchorCodec(Codec):
    """Shared by email and link: raw ``{<member>, label?}``, displayed as an anchor. The
    frame holds the member's text in ``field_N`` and the label in ``field_N.label`` (NA
    when none); a write sends a plain string, or ``{<member>, label}`` when there is a
    label, so editing the address keeps the label."""

    member: ClassVar[str]
    what: ClassVar[str]  # for messages: "an email address", "a URL"

    @staticmethod
    def accepts(text: str) -> bool:
        raise NotImplementedError

    @staticmethod
    def from_display(display: str) -> str:
        raise NotImplementedError

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        label = None
        if isinstance(value, Mapping):
            unknown = set(value) - {self.member, "label"}
            if unknown:
                raise invalid(field, f"unknown {field.kind} members {sorted(unknown)}")
            label = _text_or_none(value.get("label"))
            value = value.get(self.member)
            if is_blank(value):
                return None
        if not isinstance(value, str) or not self.accepts(value.strip()):
            raise invalid(field, f"not {self.what}: {value!r}")
        out = {self.member: value.strip()}
        if label:
            out["label"] = label
        return out

    def columns(self, field: FieldSpec) -> list[str]:
        return [field.key, f"{field.key}.label"]

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        m = self.member
        out = [(r.get(m) if isinstance(r, dict) else str(r)) if r is not None
               else (self.from_display(d) if isinstance(d, str) and d else None)
               for r, d in zip(raws, displays, strict=False)]
        # a display-only answer (format=html) shows the label as the anchor's text
        labels = [r.get("label") if isinstance(r, dict) else None if r is not None
                  else _anchor_label(d, v) for r, d, v in zip(raws, displays, out, strict=False)]
        return {field.key: string_series(out), f"{field.key}.label": string_series(labels)}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = _text_or_none(get_value(values, field.key))
        label = _text_or_none(get_value(values, f"{field.key}.label"))
        if value is None:
            if label:  # the service keeps no label without an address: say so, not drop it
                raise invalid(field, f"a label needs {self.what} in {field.key} beside it")
            return ""
        return {self.member: value, "label": label} if label else value


class EmailCodec(_AnchorCodec):
    """email: raw ``{email, label?}``; display ``<a href="mailto:x">x</a>``."""

    kinds: ClassVar[tuple[str, ...]] = ("email",)
    member = "email"
    what = "an email address"

    @staticmethod
    def accepts(text: str) -> bool:
        return bool(_EMAIL.match(text))

    @staticmethod
    def from_display(display: str) -> str:
        return _email_of(display)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, Mapping):
            return "" if raw is None else str(raw)
        address = str(raw.get("email") or "")
        text = raw.get("label") or address
        return f'<a href="mailto:{_esc(address)}">{_esc(text)}</a>'

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and "email" in raw


def _anchor_label(display: Any, member: str | None) -> str | None:
    """The text of a display anchor when it is not the address itself (a label)."""
    if not isinstance(display, str) or not display:
        return None
    text = html_to_text(display).strip()
    return text if text and text != member else None


def _email_of(display: str) -> str:
    m = re.search(r"""href\s*=\s*["']mailto:([^"']*)["']""", display, re.I)
    return html.unescape(m.group(1)) if m else html_to_text(display).strip()


# ---- phone -----------------------------------------------------------------------------------
_EXT = re.compile(r"\s*(?:x|ext\.?|extension|#)\s*(\d+)\s*$", re.I)


class PhoneCodec(Codec):
    """phone: raw ``{area, number, full, formatted, ext?, country?}``; display formatted.
    The US format "(999) 999-9999" takes 10 digits (11 with a leading 1); other formats
    take 7 to 15 digits and keep the text as written."""

    kinds: ClassVar[tuple[str, ...]] = ("phone",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        ext = None
        if isinstance(value, Mapping):
            ext = _text_or_none(value.get("ext"))
            value = value.get("formatted") or value.get("full") or value.get("number")
            if is_blank(value):
                return None
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise invalid(field, f"expected a phone number as text, got {value!r}")
        text = value.strip()
        m = _EXT.search(text)
        if m:
            ext, text = m.group(1), text[: m.start()]
        if re.search(r"[A-Za-z]", text):
            raise invalid(field, f"not a phone number: {value!r}")
        digits = re.sub(r"\D", "", text)
        fmt = str(field.format.get("format") or "(999) 999-9999")
        out: dict[str, Any]
        if fmt == "(999) 999-9999":
            if len(digits) == 11 and digits.startswith("1"):
                digits = digits[1:]
            if len(digits) != 10:
                raise invalid(field, f"expected a 10-digit phone number, got {value!r}")
            out = {"area": digits[:3], "number": digits[3:], "full": digits,
                   "formatted": f"({digits[:3]}) {digits[3:6]}-{digits[6:]}"}
        else:
            if not 7 <= len(digits) <= 15:
                raise invalid(field, f"expected a phone number of 7 to 15 digits, got {value!r}")
            out = {"area": "", "number": digits, "full": digits, "formatted": text.strip()}
        if ext:
            out["ext"] = ext
        return out

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, Mapping):
            return "" if raw is None else str(raw)
        text = str(raw.get("formatted") or raw.get("full") or "")
        return f"{text} x{raw['ext']}" if raw.get("ext") else text

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and ("formatted" in raw or "area" in raw) \
            and "full" in raw

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        # fast path: the service's shape (formatted text, no extension) without a call
        out = [f if type(r) is dict and type(f := r.get("formatted")) is str and f
               and "ext" not in r
               else (self.render(r, field) if isinstance(r, dict) else str(r)) if r is not None
               else (html_to_text(d).strip() if isinstance(d, str) else d)
               for r, d in zip(raws, displays, strict=False)]
        return {field.key: string_series(out)}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = _text_or_none(get_value(values, field.key))
        return "" if value is None else value


# ---- link ------------------------------------------------------------------------------------
class LinkCodec(_AnchorCodec):
    """link: raw ``{url, label?}``; display ``<a href="url" target="_blank">url</a>``.

    The target attribute follows ``format["target"]``: absent or "_blank" gives
    ``target="_blank"`` (docs/hosted-behaviour.md §7); "_self" gives none, as the fixtures show."""

    kinds: ClassVar[tuple[str, ...]] = ("link",)
    member = "url"
    what = "a URL"

    @staticmethod
    def accepts(text: str) -> bool:
        return not re.search(r"\s", text)

    @staticmethod
    def from_display(display: str) -> str:
        return _href_of(display)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, Mapping):
            return "" if raw is None else str(raw)
        url = str(raw.get("url") or "")
        text = raw.get("label") or url
        target = str(field.format.get("target") or "_blank")
        attr = f' target="{_esc(target)}"' if target != "_self" else ""
        return f'<a href="{_esc(url)}"{attr}>{_esc(text)}</a>'

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and "url" in raw and set(raw) <= {"url", "label"}


def _href_of(display: str) -> str:
    m = _HREF.search(display)
    return html.unescape(m.group(1)) if m else html_to_text(display).strip()


# ---- address ---------------------------------------------------------------------------------
ADDRESS_TEXT = ("street", "street2", "city", "state", "zip", "country")
ADDRESS_PARTS = (*ADDRESS_TEXT, "latitude", "longitude")
_CITY_LINE = re.compile(r"^(?:(?P<city>.*?),\s*)?(?P<state>.*?)\s*(?P<zip>\S*\d\S*)?\s*$")


class AddressCodec(Codec):
    """address: raw ``{street, street2, city, state, zip, country?, latitude?, longitude?}``;
    display ``street<br />street2<br />city, state zip`` (+ ``<br />country``)."""

    kinds: ClassVar[tuple[str, ...]] = ("address",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        if not isinstance(value, Mapping):
            raise invalid(field, "expected an address object {street, street2, city, state, "
                                 f"zip, country?, latitude?, longitude?}}, got {value!r}")
        unknown = set(value) - set(ADDRESS_PARTS)
        if unknown:
            raise invalid(field, f"unknown address parts {sorted(unknown)}; use "
                                 f"{list(ADDRESS_PARTS)}")
        text = {k: ("" if is_blank(value.get(k)) else as_text(value.get(k), field).strip())
                for k in ADDRESS_TEXT}
        out: dict[str, Any] = {}
        if str(field.format.get("input") or "") == "lat_long":
            # a geocoded (latitude/longitude input) field keeps the parts it was given
            out = {k: text[k] for k in ADDRESS_TEXT if text[k]}
        elif any(text[k] for k in ADDRESS_TEXT):
            out = {k: text[k] for k in ADDRESS_TEXT[:5]}
            if text["country"]:
                out["country"] = text["country"]
        lat, lon = value.get("latitude"), value.get("longitude")
        if is_blank(lat) != is_blank(lon):
            raise invalid(field, "latitude and longitude go together: give both or neither")
        if not is_blank(lat):
            lat_n, lon_n = to_number(lat, field), to_number(lon, field)
            if not -90 <= lat_n <= 90:
                raise invalid(field, f"latitude must be between -90 and 90, got {lat!r}")
            if not -180 <= lon_n <= 180:
                raise invalid(field, f"longitude must be between -180 and 180, got {lon!r}")
            out["latitude"], out["longitude"] = lat_n, lon_n
        return out or None

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, Mapping):
            return "" if raw is None else str(raw)
        part = {k: str(raw.get(k) or "") for k in ADDRESS_TEXT}
        if not any(part.values()):  # coordinates only
            if raw.get("latitude") is None:
                return ""
            return f"{raw.get('latitude')}, {raw.get('longitude')}"
        lines = [part["street"], part["street2"]]
        city_line = (f"{part['city']}, " if part["city"] else "") + f"{part['state']} {part['zip']}"
        lines.append(city_line)
        # the fixtures show the country only for the "international_country" format
        if part["country"] and str(field.format.get("format") or "") not in ("US",
                                                                              "international"):
            lines.append(part["country"])
        return "<br />".join(_esc(x) if "<" in x or "&" in x else x for x in lines if x)

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and bool(raw) and set(raw) <= set(ADDRESS_PARTS) \
            and bool(set(raw) & {"street", "city", "zip", "latitude", "state"})

    def columns(self, field: FieldSpec) -> list[str]:
        return [f"{field.key}.{p}" for p in ADDRESS_PARTS]

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        rows = [r if isinstance(r, dict)
                else (_parse_address(d) if r is None and isinstance(d, str) and d else {})
                for r, d in zip(raws, displays, strict=False)]
        out = {f"{field.key}.{p}": string_series([row.get(p) for row in rows])
               for p in ADDRESS_TEXT}
        for p in ("latitude", "longitude"):
            out[f"{field.key}.{p}"] = float_series([row.get(p) for row in rows])
        return out

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        out: dict[str, Any] = {}
        for p in ADDRESS_TEXT:
            text = _text_or_none(values.get(f"{field.key}.{p}"))
            if text is not None:
                out[p] = text
        for p in ("latitude", "longitude"):
            num = values.get(f"{field.key}.{p}")
            if num is not None and not is_na(num):
                out[p] = to_number(num.item() if hasattr(num, "item") else num, field)
        return out or ""


def _parse_address(display: str) -> dict[str, Any]:
    lines = [x for x in html_lines(display) if x]
    if not lines:
        return {}
    idx = next((i for i in range(len(lines) - 1, -1, -1) if "," in lines[i]), None)
    if idx is None:
        idx = len(lines) - 1
    m = _CITY_LINE.match(lines[idx])
    out: dict[str, Any] = {}
    if m:
        out.update({k: v for k, v in m.groupdict().items() if v})
    before = lines[:idx]
    if before:
        out["street"] = before[0]
        if len(before) > 1:
            out["street2"] = " ".join(before[1:])
    if idx + 1 < len(lines):
        out["country"] = " ".join(lines[idx + 1:])
    return out
