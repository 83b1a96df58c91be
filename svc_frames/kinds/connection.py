"""connection: links to records of another object (``field.relationship["object"]``).

Raw ``[{id, identifier}]``; docs/service-interface.md §2.1 has name-like ``[{first, last}]`` whose
ids are only in the display HTML (``<span class="<id>">``). No main-frame column: the
exploded table ``tables[field_N]`` (record_id, connected_id, identifier) is the truth.
"""

from __future__ import annotations

import html
import operator
import re
from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidValue
from ._util import TEXT_POOL, invalid, is_blank, is_na, raw_values, string_series
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .rawvalues import ConnectionItem

_SPAN = re.compile(r"""<span[^>]*\bclass\s*=\s*["']([^"']+)["'][^>]*>(.*?)</span>""",
                   re.I | re.S)
_TAG = re.compile(r"<[^>]+>")
_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_HEX_ID = re.compile(r"^[0-9a-f]{24}$")


_NO_ITEMS: list[Any] = []
_id_text = operator.attrgetter("id", "identifier")


def _all_items(lists: Sequence[Any]) -> bool:
    """Whether these values (one per record) are all lists of rawpages' ConnectionItems:
    one parse makes every item of a page one, so a list's first item tells. The types
    are gathered by C maps, cheaper than a generator per record."""
    return any(lists) and _first_item_types(lists) == _ITEMS_ONLY


_ITEMS_ONLY = {ConnectionItem}
_first = operator.itemgetter(0)


def _first_item_types(lists: Sequence[Any]) -> set[type] | None:
    """The types of the non-empty lists' first items; None when a value is not a list."""
    if set(map(type, lists)) - {list}:
        return None
    return set(map(type, map(_first, filter(None, lists))))


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=False)


def identifier_text(item: Any) -> str:
    """The text of a connected record's identifier (a name-like object is "first last")."""
    if isinstance(item, Mapping):
        ident = item.get("identifier", item)
        if isinstance(ident, Mapping):
            return " ".join(str(ident.get(k)) for k in ("title", "first", "middle", "last")
                            if ident.get(k))
        if "identifier" in item:
            return "" if ident is None else str(ident)
        return " ".join(str(item.get(k)) for k in ("title", "first", "middle", "last")
                        if item.get(k))
    return "" if item is None else str(item)


def display_pairs(display: Any) -> list[tuple[str, str]]:
    """(id, text) of each ``<span class="<id>">text</span>`` in a display value."""
    if not isinstance(display, str) or "<span" not in display:
        return []
    return [(_id_of_class(cls), html.unescape(_TAG.sub("", text)).strip())
            for cls, text in _SPAN.findall(display)]


def _id_of_class(cls: str) -> str:
    """The record id among a span's classes (a 24-hex token if any, else the first)."""
    tokens = cls.split()
    return next((t for t in tokens if _HEX_ID.match(t)), tokens[0] if tokens else "")


class ConnectionCodec(Codec):
    """connection: a write takes one record id or a list of them (``has: "one"``: at most
    one); the service resolves identifiers through ``hooks.connected``."""

    kinds: ClassVar[tuple[str, ...]] = ("connection",)

    def _ids(self, value: Any, field: FieldSpec) -> list[str]:
        if is_blank(value):
            return []
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        ids: list[str] = []
        for item in items:
            if isinstance(item, Mapping):
                item = item.get("id")
            if is_blank(item):
                continue
            if not isinstance(item, str) or not _ID.match(item.strip()):
                raise invalid(field, f"expected connected record ids, got {item!r}")
            if item.strip() not in ids:
                ids.append(item.strip())
        return ids

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        ids = self._ids(value, field)
        rel = field.relationship or {}
        if len(ids) > 1 and str(rel.get("has") or "many") == "one":
            raise invalid(field, f"connects to one record only, got {len(ids)} ids")
        if not ids:
            return []
        if hooks is None:
            raise invalid(field, "connections can only be resolved by the service")
        try:
            return hooks.connected(str(rel.get("object") or ""), ids)
        except InvalidValue as exc:   # an id of no record: this field is the culprit
            raise invalid(field, exc.message) from None

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, list):
            return ""
        return "<br />".join(
            f'<span class="{_esc(item.get("id"))}">{_esc(identifier_text(item))}</span>'
            for item in raw if isinstance(item, Mapping))

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, list) and all(
            isinstance(x, Mapping) and ("id" in x or "first" in x or "last" in x) for x in raw)

    def columns(self, field: FieldSpec) -> list[str]:
        return []

    def decodes_raw_alone(self, raws: Sequence[Any]) -> bool:
        # a name-like item ({first, last}) has its id only in the display HTML; rawpages'
        # ConnectionItems all have one (an item without does not parse), and a list holds
        # items of one parse: its first tells
        lists = [r for r in raws if type(r) is list]
        if _all_items(lists):
            return True
        return all(type(r[0]) is ConnectionItem
                   or all(type(item) is dict and "id" in item for item in r)
                   for r in lists if r)

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        return {}

    def tables(self, ids: Sequence[str], raws: Sequence[Any], displays: Sequence[Any],
               field: FieldSpec, ctx: ReadContext) -> dict[str, pd.DataFrame]:
        raws = raw_values(raws, displays)
        lists = [_NO_ITEMS if r is None else r for r in raws]
        if _all_items(lists):
            # rawpages' ConnectionItems: the members at C speed, and the record ids
            # repeated per item by Arrow
            items = list(chain.from_iterable(lists))
            conn_ids: list[Any] = []
            conn_texts: list[Any] = []
            if items:
                conn_ids, conn_texts = (list(c) for c in zip(*map(_id_text, items),
                                                             strict=True))
            rows = pc.take(pa.array(ids, type=pa.large_string(), memory_pool=TEXT_POOL),
                           np.repeat(np.arange(len(lists)), list(map(len, lists))),
                           memory_pool=TEXT_POOL)
            return {field.key: pd.DataFrame({
                "record_id": pd.Series(pd.arrays.ArrowStringArray(rows)),
                "connected_id": string_series(conn_ids),
                "identifier": string_series(conn_texts),
            }, copy=False)}
        if all(type(r) is list for r in raws):  # fast path: every item has id + text
            # one flat list per column (no per-item tuples to build and take apart)
            try:
                ids_to = [item["id"] for r in raws for item in r]
                texts = [item["identifier"] for r in raws for item in r]
            except (KeyError, TypeError):
                texts = None
            if texts is not None and set(map(type, texts)) <= {str}:
                rids = [rid for rid, r in zip(ids, raws, strict=False) for _ in r]
                return {field.key: pd.DataFrame({
                    "record_id": string_series(rids),
                    "connected_id": string_series(ids_to),
                    "identifier": string_series(texts),
                }, copy=False)}
        rec: list[str] = []
        conn: list[str | None] = []
        ident: list[str | None] = []
        for rid, r, d in zip(ids, raws, displays, strict=False):
            if type(r) is list:
                pairs: list[tuple[str, str]] | None = None
                for i, item in enumerate(r):
                    if type(item) is not dict and type(item) is not ConnectionItem:
                        continue
                    cid = item.get("id")
                    text = item.get("identifier")
                    if cid is None:  # name-like: the id is only in the display HTML
                        if pairs is None:
                            pairs = display_pairs(d)
                        cid = pairs[i][0] if i < len(pairs) else None
                    if type(text) is not str:
                        text = identifier_text(item)
                    rec.append(rid)
                    conn.append(cid)
                    ident.append(text)
            elif r is None and d:  # a display-only answer (format=html)
                for cid, text in display_pairs(d):
                    rec.append(rid)
                    conn.append(cid)
                    ident.append(text)
        return {field.key: pd.DataFrame({
            "record_id": string_series(rec),
            "connected_id": string_series(conn),
            "identifier": string_series(ident),
        })}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        """``values[field_N]``: the connected ids of the record (a list, one id, or NA) ->
        the list of ids to send."""
        value = values.get(field.key)
        if value is None or (not isinstance(value, (list, tuple, str)) and is_na(value)):
            return []
        if hasattr(value, "tolist") and not isinstance(value, str):
            value = value.tolist()
        ids = self._ids(value, field)
        rel = field.relationship or {}
        if len(ids) > 1 and str(rel.get("has") or "many") == "one":
            raise invalid(field, f"connects to one record only, got {len(ids)} ids")
        return ids
