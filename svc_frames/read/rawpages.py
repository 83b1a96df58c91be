"""Parsing ``format=raw`` pages into records typed by the fields the loader expects.

A page of 1000 wide records is megabytes of JSON, and parsing it is the largest part of a
load's CPU time. Once the fields are known (after page 1), msgspec decodes each record
into a struct with one slot per field instead of a dict: no key strings to build and hash,
less parse time (docs/benchmarks.md), and a column is read with one C-level ``attrgetter``. Nested
values (dates, timers, assets, signatures, connected records: most of a page's objects)
become structs holding only the members their codecs read (``DateValue``, ``TimerValue``,
``AssetValue``, ``SignatureValue``, ``ConnectionItem``: ``kinds/rawvalues.py``, beside
the codecs that read them); the other members are skipped without building a Python
object for them. A record that does not fit (a field the loader
does not expect, an id that is not text, a date that is not an object or has no int
``unix_timestamp``) makes the whole page fall back to the plain parser, so nothing is
dropped.

Usage::

    parse = raw_page_parser(fields, parse_json)   # the FieldSpecs of the load
    env = parse(body)            # {"records": [RawRecord, ...], "total_pages": ..., ...}
    env["records"][0].get("field_1"), env["records"][0]["id"]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..http.body import Body
from ..keys import FIELD_KEY

if TYPE_CHECKING:  # kinds.dates and kinds.timer import this module: no kinds at run time
    from ..kinds.base import FieldSpec
from ..kinds.rawvalues import VALUE_TYPES, RawRecord


def raw_page_parser(fields: Sequence[FieldSpec], fallback: Callable[[Body], Any]
                    ) -> Callable[[Body], Any] | None:
    """A parser of ``format=raw`` list pages whose records hold (some of) these fields;
    None when a key cannot be a struct slot (not ``field_N``). ``fallback`` parses a page
    that does not fit."""
    kinds = {f.key: f.kind for f in fields}
    if not all(FIELD_KEY.fullmatch(k) for k in kinds):
        return None
    record = msgspec.defstruct("Record", [(k, VALUE_TYPES.get(kind, Any), None)
                                          for k, kind in kinds.items()],
                               bases=(RawRecord,), forbid_unknown_fields=True, gc=False)
    page = msgspec.defstruct("Page", [("records", list[record]),  # type: ignore[valid-type]
                                      ("total_pages", Any, None),
                                      ("total_records", Any, None),
                                      ("current_page", Any, None)])
    decode = msgspec.json.Decoder(page).decode

    def parse(body: Body) -> Any:
        try:
            env: Any = decode(body)
        except msgspec.MsgspecError:  # an unexpected field or shape: the plain parser
            return fallback(body)
        return {"records": env.records, "total_pages": env.total_pages,
                "total_records": env.total_records, "current_page": env.current_page}

    return parse
