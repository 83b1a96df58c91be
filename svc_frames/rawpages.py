"""Parsing ``format=raw`` pages into records typed by the fields the loader expects.

A page of 1000 wide records is megabytes of JSON, and parsing it is the largest part of a
load's CPU time. Once the fields are known (after page 1), msgspec decodes each record
into a struct with one slot per field instead of a dict: no key strings to build and hash,
about 30% less parse time, and a column is read with one C-level ``attrgetter``. A record
that does not fit (a field the loader does not expect, an id that is not text) makes the
whole page fall back to the plain parser, so nothing is dropped.

Usage::

    parse = raw_page_parser(["field_1", "field_2"])
    env = parse(body)            # {"records": [RawRecord, ...], "total_pages": ..., ...}
    env["records"][0].get("field_1"), env["records"][0]["id"]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from .filters import FIELD_KEY


class RawRecord(msgspec.Struct, gc=False):
    """One record of a ``format=raw`` page; read like a dict (``rec["id"]``, ``rec.get``).

    ``gc=False``: parsed values never form reference cycles, so the cyclic collector need
    not track (and walk) millions of them."""

    id: str

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None


def raw_page_parser(keys: Sequence[str], fallback: Callable[[bytes], Any]
                    ) -> Callable[[bytes], Any] | None:
    """A parser of ``format=raw`` list pages whose records hold (some of) ``keys``; None
    when a key cannot be a struct slot (not ``field_N``). ``fallback`` parses a page that
    does not fit."""
    keys = list(dict.fromkeys(keys))
    if not all(FIELD_KEY.fullmatch(k) for k in keys):
        return None
    record = msgspec.defstruct("Record", [(k, Any, None) for k in keys], bases=(RawRecord,),
                               forbid_unknown_fields=True, gc=False)
    page = msgspec.defstruct("Page", [("records", list[record]),  # type: ignore[valid-type]
                                      ("total_pages", Any, None),
                                      ("total_records", Any, None),
                                      ("current_page", Any, None)])
    decode = msgspec.json.Decoder(page).decode

    def parse(body: bytes) -> Any:
        try:
            env: Any = decode(body)
        except msgspec.MsgspecError:  # an unexpected field or shape: the plain parser
            return fallback(body)
        return {"records": env.records, "total_pages": env.total_pages,
                "total_records": env.total_records, "current_page": env.current_page}

    return parse


def column_getter(records: Sequence[Any], names: Sequence[str]
                  ) -> Callable[[Any], tuple[Any, ...]] | None:
    """A C-level getter of ``names`` (as a tuple) for struct records that have them all;
    None for dict records (use ``map(rec.get, names)``)."""
    if len(names) < 2 or not records or not isinstance(records[0], RawRecord):
        return None
    slots = set(type(records[0]).__struct_fields__)
    if not set(names) <= slots:
        return None
    return operator.attrgetter(*names)
