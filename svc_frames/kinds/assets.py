"""Asset kinds: file, image (uploaded, or a URL when ``format["source"] == "url"``),
signature."""

from __future__ import annotations

import base64
import binascii
import html
import operator
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from ..errors import InvalidValue
from ._util import get_value, int_series, invalid, is_blank, is_na, raw_values, string_series
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .rawvalues import AssetValue, RawValue, SignatureValue

ASSET_KEYS = ("id", "application_id", "s3", "type", "filename", "url", "thumb_url", "size",
              "field_key")
_MEMBERS = (dict, RawValue)  # a raw value as a dict, or as rawpages' struct of its members
_ASSET_MEMBERS = ("id", "filename", "url", "thumb_url", "size")
_members = operator.attrgetter(*_ASSET_MEMBERS)
_NO_ASSET = (None,) * len(_ASSET_MEMBERS)


def _asset_row(raw: Any, display: Any) -> tuple[Any, ...]:
    """The asset members of a raw dict, or of the display HTML when the raw is missing."""
    if isinstance(raw, _MEMBERS):
        return tuple(map(raw.get, _ASSET_MEMBERS))
    if raw is None and isinstance(display, str) and display:
        return tuple(map(_parse_asset_html(display).get, _ASSET_MEMBERS))
    return _NO_ASSET


_ATTR = re.compile(r"""([\w-]+)\s*=\s*["']([^"']*)["']""")
_IMG_SRC = re.compile(r"""<img[^>]*\bsrc\s*=\s*["']([^"']*)["']""", re.I)


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def is_url_source(field: FieldSpec) -> bool:
    return field.kind == "image" and str(field.format.get("source") or "upload") == "url"


class AssetCodec(Codec):
    """file and image. Uploaded: raw is the asset object, a write takes the asset id of an
    upload (the service places it through ``hooks.asset``). URL source: raw is the URL."""

    kinds: ClassVar[tuple[str, ...]] = ("file", "image")

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        if is_url_source(field):
            if isinstance(value, Mapping):
                value = value.get("url")
            if not isinstance(value, str) or re.search(r"\s", value.strip()):
                raise invalid(field, f"expected an image URL, got {value!r}")
            return value.strip()
        if isinstance(value, Mapping):  # a raw asset object, or an upload answer
            value = value.get("id")
        if not isinstance(value, str) or not value.strip():
            raise invalid(field, f"expected the id of an uploaded {field.kind}, got {value!r}")
        if hooks is None:
            raise invalid(field, "assets can only be placed by the service")
        try:
            return hooks.asset(value.strip(), field.key)
        except InvalidValue as exc:  # an unknown or misplaced asset: this field's refusal
            if exc.message.startswith(field.key):
                raise
            raise invalid(field, exc.message) from None

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if isinstance(raw, str):
            return f'<img src="{_esc(raw)}" />'
        if not isinstance(raw, Mapping):
            return ""
        url = str(raw.get("url") or "")
        if field.kind == "image" or raw.get("type") == "image":
            return f'<img src="{_esc(url)}" />'
        name = str(raw.get("filename") or "")
        key = _esc(raw.get("field_key") or field.key)
        return (f'<a class="kn-view-asset" data-field-key="{key}"'
                f' data-asset-id="{_esc(raw.get("id") or "")}" data-file-name="{_esc(name)}"'
                f' href="{_esc(url)}">{_esc(name)}</a>')

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and "url" in raw and ("filename" in raw
                                                              or "field_key" in raw)

    def columns(self, field: FieldSpec) -> list[str]:
        if is_url_source(field):
            return [field.key]
        k = field.key
        return [k, f"{k}.filename", f"{k}.url", f"{k}.thumb_url", f"{k}.size"]

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        if is_url_source(field):
            urls = [(r if isinstance(r, str) else r.get("url") if isinstance(r, _MEMBERS)
                     else None) if r is not None else _url_of_display(d)
                    for r, d in zip(raws, displays, strict=False)]
            return {field.key: string_series(urls)}
        # one tuple of the members per record: at C speed for rawpages' structs
        rows = [_members(r) if type(r) is AssetValue else _asset_row(r, d)
                for r, d in zip(raws, displays, strict=False)]
        ids, names, urls, thumbs, sizes = (list(c) for c in zip(*rows, strict=True)) \
            if rows else ([], [], [], [], [])
        k = field.key
        return {
            k: string_series(ids),
            f"{k}.filename": string_series(names),
            f"{k}.url": string_series(urls),
            f"{k}.thumb_url": string_series(thumbs),
            # int_series takes ints and None in one Arrow pass (text sizes: per value)
            f"{k}.size": int_series(sizes),
        }

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = get_value(values, field.key)
        if value is None or (isinstance(value, str) and not value.strip()):
            return ""
        if not isinstance(value, str):
            raise invalid(field, f"expected an asset id (or URL) as text, got {value!r}")
        return value.strip()


def _url_of_display(display: Any) -> str | None:
    """The URL of an ``<img>`` display, or a bare URL (format=raw puts it under field_N)."""
    if not isinstance(display, str) or not display:
        return None
    return _img_src(display) or (display if "<" not in display else None)


def _img_src(display: str) -> str | None:
    m = _IMG_SRC.search(display)
    return html.unescape(m.group(1)) if m else None


def _parse_asset_html(display: str) -> dict[str, Any]:
    """A file anchor (``data-asset-id``, ``data-file-name``, ``href``) or an ``<img>``."""
    src = _img_src(display)
    if src is not None:
        return {"url": src}
    attrs = {k.lower(): html.unescape(v) for k, v in _ATTR.findall(display)}
    text = re.sub(r"<[^>]+>", "", display).strip()
    return {"id": attrs.get("data-asset-id"), "filename": attrs.get("data-file-name") or text
            or None, "url": attrs.get("href")}


class SignatureCodec(Codec):
    """signature: raw ``{svg, base30?}``; display an ``<img>`` with the SVG as a data URI."""

    kinds: ClassVar[tuple[str, ...]] = ("signature",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        base30 = None
        if isinstance(value, Mapping):
            unknown = set(value) - {"svg", "base30"}
            if unknown:
                raise invalid(field, f"unknown signature members {sorted(unknown)}")
            base30 = value.get("base30")
            value = value.get("svg")
        if not isinstance(value, str) or "<svg" not in value:
            raise invalid(field, "expected an SVG document (text containing <svg) or "
                                 f"{{svg, base30}}, got {str(value)[:60]!r}")
        out: dict[str, Any] = {}
        if isinstance(base30, str) and base30:
            out["base30"] = base30
        out["svg"] = value
        return out

    def render(self, raw: Any, field: FieldSpec) -> Any:
        svg = raw.get("svg") if isinstance(raw, Mapping) else raw if isinstance(raw, str) else ""
        if not svg:
            return ""
        data = base64.b64encode(str(svg).encode("utf-8")).decode("ascii")
        return f'<img src="data:image/svg+xml;base64,{data}" />'

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and "svg" in raw

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        out = [r.svg if type(r) is SignatureValue
               else (r.get("svg") if isinstance(r, _MEMBERS) else str(r)) if r is not None
               else (_svg_of(d) if isinstance(d, str) and d else None)
               for r, d in zip(raws, displays, strict=False)]
        return {field.key: string_series(out)}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = get_value(values, field.key)
        if value is None or is_na(value) or (isinstance(value, str) and not value.strip()):
            return ""
        return {"svg": str(value)}


def _svg_of(display: str) -> str | None:
    src = _img_src(display)
    if not src or "base64," not in src:
        return None
    try:
        return base64.b64decode(src.split("base64,", 1)[1]).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
