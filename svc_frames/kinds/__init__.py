"""Field-kind codecs: see base.py for the contract. ``codec_for(field)`` picks one.

Usage::

    from svc_frames.kinds import FieldSpec, codec_for, infer_field
    codec = codec_for(FieldSpec(key="field_21", kind="address"))
    raw = codec.normalize({"street": "8700 Cameron Rd", "city": "Austin"}, field)
    spec = infer_field("field_9", raws, displays)   # None for an all-empty column
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray

from ._util import BLANK, blank_to_none, is_empty_cell, is_na, text_array, unencodable_text
from .assets import AssetCodec, SignatureCodec
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .choices import ChoiceCodec, UserRolesCodec
from .connection import ConnectionCodec
from .contact import AddressCodec, EmailCodec, LinkCodec, NameCodec, PhoneCodec
from .dates import DateTimeCodec
from .equation import EquationCodec, is_date_result
from .numbers import (
    AutoIncrementCodec,
    BooleanCodec,
    ComputedNumberCodec,
    CurrencyCodec,
    NumberCodec,
    RatingCodec,
)
from .text import FormulaTextCodec, PasswordCodec, RichTextCodec, TextCodec, UnknownCodec
from .timer import TimerCodec
from .tz import resolve_timezone

_CODECS: tuple[type[Codec], ...] = (
    TextCodec, RichTextCodec, FormulaTextCodec, PasswordCodec, NumberCodec, ComputedNumberCodec,
    EquationCodec,
    AutoIncrementCodec, CurrencyCodec, RatingCodec, BooleanCodec, ChoiceCodec, UserRolesCodec,
    DateTimeCodec, TimerCodec, NameCodec, EmailCodec, PhoneCodec, LinkCodec, AddressCodec,
    AssetCodec, SignatureCodec, ConnectionCodec, UnknownCodec,
)
REGISTRY: dict[str, Codec] = {kind: cls() for cls in _CODECS for kind in cls.kinds}
KINDS: tuple[str, ...] = tuple(k for k in REGISTRY if k != "unknown")
READ_ONLY_KINDS: frozenset[str] = frozenset(k for k, c in REGISTRY.items() if c.read_only)


def codec_for(field: FieldSpec) -> Codec:
    """The codec of a field's kind; the "unknown" codec (raw JSON text) for any other kind.

    Usage: ``codec_for(field).decode(raws, displays, field, ReadContext(tz))``"""
    return REGISTRY.get(field.kind) or REGISTRY["unknown"]


# ---- inference without a schema --------------------------------------------------------------
_PROFILE = re.compile(r"^profile_\d+$")
_MONEY = re.compile(r"^\s*-?[^\d\s.,-]{1,3}\s?-?[\d,]*\.?\d*\s*$")
_IMG = re.compile(r"^\s*<img\b", re.I)


def _kind_of(raw: Any, display: Any) -> tuple[str, dict[str, Any]]:
    """(kind, format) of one non-empty raw value, with its display as a hint."""
    if isinstance(raw, bool):
        return "boolean", {}
    if isinstance(raw, (int, float)):
        if isinstance(display, str) and re.fullmatch(r"\d+\.\d\d", display.strip()):
            return "rating", {}
        return "number", {}
    if isinstance(raw, str):
        if isinstance(display, str) and _IMG.match(display) and raw in display:
            return "image", {"source": "url"}
        if isinstance(display, str) and display != raw and _MONEY.match(display) \
                and re.fullmatch(r"-?\d+(\.\d+)?", raw.strip()):
            return "currency", {"format": display.strip().lstrip("-")[0]}
        if isinstance(display, str) and re.search(r"<[a-z][^>]*>", display, re.I):
            return "rich_text", {}
        return "short_text", {}
    if isinstance(raw, list):
        if ConnectionCodec.detect(raw):
            return "connection", {}
        if UserRolesCodec.detect(raw):
            return "user_roles", {}
        if ChoiceCodec.detect(raw):
            return "multiple_choice", {"type": "multi"}
        return "unknown", {}
    if isinstance(raw, dict):
        for cls, kind in ((TimerCodec, "timer"), (DateTimeCodec, "date_time"),
                          (AssetCodec, "file"), (SignatureCodec, "signature"),
                          (EmailCodec, "email"), (PhoneCodec, "phone"), (LinkCodec, "link"),
                          (NameCodec, "name"), (AddressCodec, "address")):
            if cls.detect(raw):
                if kind == "file":
                    return ("image" if raw.get("type") == "image" else "file",
                            {"source": "upload"} if raw.get("type") == "image" else {})
                if kind == "date_time":
                    return kind, _date_format_hint(raw, display)
                return kind, {}
    return "unknown", {}


def _date_format_hint(raw: dict[str, Any], display: Any) -> dict[str, Any]:
    fmt: dict[str, Any] = {"calendar": "to" in raw}
    text = display if isinstance(display, str) else ""
    head = text.split(" to ")[0]
    if head and "/" not in head and "," not in head:
        fmt["date_format"] = "Ignore Date"
    if head and ":" not in head:
        fmt["time_format"] = "Ignore Time"
    elif re.search(r"\d:\d\d(?!\s*[ap]m)", head, re.I) and not re.search(r"[ap]m", head, re.I):
        fmt["time_format"] = "HH MM (military)"
    return fmt


def infer_field(key: str, raws: Sequence[Any], displays: Sequence[Any]) -> FieldSpec | None:
    """A FieldSpec guessed from the raw shapes of one column, for answers without a schema.

    None for an all-empty column (never invents a kind); "unknown" when shapes disagree or
    when only display values came (format=html).
    A column of ``[]`` only is a connection (only connections answer ``[]`` when empty).

    Usage: ``infer_field("field_21", [r.get("field_21_raw") for r in recs], ...)``"""
    kinds: dict[str, dict[str, Any]] = {}
    saw_empty_list = False
    saw_display = False
    for raw, display in zip(raws, displays, strict=False):
        if raw is None and display not in (None, ""):
            saw_display = True  # a display without a raw member (format=html)
            if not isinstance(display, str):  # format=raw: the raw value under field_N
                raw, display = display, ""
        if raw is None or (isinstance(raw, str) and raw == "" and display in ("", None)):
            continue
        if isinstance(raw, list) and not [x for x in raw if x is not None]:
            saw_empty_list = saw_empty_list or raw == []
            if raw and display not in ("", None):  # [null] with a display: a multi choice
                kinds.setdefault("multiple_choice", {"type": "multi"})
            continue
        kind, fmt = _kind_of(raw, display)
        if kind in kinds:
            if kind == "date_time":  # a range anywhere makes the field a range
                kinds[kind]["calendar"] = kinds[kind].get("calendar") or fmt.get("calendar")
            continue
        kinds[kind] = fmt
    if not kinds:
        if saw_empty_list:
            return FieldSpec(key=key, kind="connection")
        # displays only: their kind cannot be told; "unknown" keeps their clean text
        return FieldSpec(key=key, kind="unknown") if saw_display else None
    # compatible mixes: ratings shown as 0.00 next to plain numbers, text with or without HTML
    for weak, strong in (("number", "rating"), ("short_text", "rich_text"),
                         ("short_text", "currency"), ("file", "image")):
        if weak in kinds and strong in kinds:
            kinds.pop(weak if weak != "file" else strong)
    if len(kinds) != 1:
        return FieldSpec(key=key, kind="unknown")
    (kind, fmt), = kinds.items()
    return FieldSpec(key=key, kind=kind, format=fmt)


# ---- equality for diffing --------------------------------------------------------------------
def values_equal(a: Any, b: Any) -> bool:
    """Whether two frame cell values mean the same: NA == NA, 1 == 1.0, "" == NA, equal
    lists (order kept), equal instants whatever their timezone.

    Usage: ``values_equal(old, new)`` when diffing edited frames."""
    a_na = _empty(a)
    b_na = _empty(b)
    if a_na or b_na:
        return a_na and b_na
    if _listlike(a) or _listlike(b):
        la, lb = _as_list(a), _as_list(b)
        return len(la) == len(lb) and all(values_equal(x, y) for x, y in zip(la, lb, strict=False))
    a_bool, b_bool = isinstance(a, (bool, np.bool_)), isinstance(b, (bool, np.bool_))
    if a_bool or b_bool:  # numpy's bool is no `bool`; True is not the number 1 here
        return a_bool == b_bool and bool(a) == bool(b)
    if _is_number(a) and _is_number(b):
        fa, fb = float(a), float(b)
        return fa == fb or math.isclose(fa, fb, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, (pd.Timestamp, datetime)) and isinstance(b, (pd.Timestamp, datetime)):
        ta, tb = pd.Timestamp(a), pd.Timestamp(b)
        if (ta.tzinfo is None) != (tb.tzinfo is None):
            return False
        return bool(ta == tb)
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _listlike(value: Any) -> bool:
    return isinstance(value, (list, tuple, np.ndarray, pd.Series, ExtensionArray))


def _empty(value: Any) -> bool:
    if isinstance(value, str):
        return value == ""
    if _listlike(value):
        return len(value) == 0
    return is_na(value)


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist"):
        out = value.tolist()
        return out if isinstance(out, list) else [out]
    return [value]


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iuf" and \
        not hasattr(value, "__len__")


__all__ = [
    "BLANK", "blank_to_none", "is_empty_cell", "text_array", "unencodable_text",
    "Codec", "FieldSpec", "ReadContext", "ServiceHooks", "codec_for", "infer_field",
    "values_equal", "resolve_timezone", "is_date_result", "REGISTRY", "KINDS", "READ_ONLY_KINDS",
]
