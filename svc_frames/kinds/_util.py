"""Small helpers shared by the kind codecs: emptiness, HTML to text, numbers, column builders.

Decoding is column-wise over plain Python lists; these helpers build each Series once.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidValue
from .base import FieldSpec

_TAG = re.compile(r"<[^>]+>")
_BR = re.compile(r"<br\s*/?>", re.I)
_TEXT_TYPES = {str, type(None)}
_ARROW_STRINGS = pd.StringDtype().storage == "pyarrow"
_NUMERIC_JUNK = re.compile(r"[^0-9eE.+\-]")

BLANK = "(blank)"
"""The one word a person reads for a missing value (an empty cell, a record without a
connection, a record without an identifier): plots' categories and bars, the review
widget's cells, printed tables of the demo and the notebooks. Display text only: the
frames keep NA (``pd.NA``, ``NaT``), which ``is_empty_cell`` recognises."""


def is_na(value: Any) -> bool:
    """True for None, pd.NA, NaT and float NaN (scalars only; lists are never NA)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    try:
        return bool(pd.isna(value)) if not isinstance(value, (list, tuple, dict, str)) else False
    except (TypeError, ValueError):
        return False


def unencodable_text(value: Any) -> str | None:
    """The first text in ``value`` (a str, or one in a list, array or dict) that UTF-8 cannot
    encode (a lone surrogate such as ``"\\ud800"``, e.g. from a badly decoded file), else
    None. Usage: ``unencodable_text(["ok", "\\ud800"])  # '\\ud800'``"""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
        return None
    if isinstance(value, Mapping):
        value = [*value.keys(), *value.values()]
    if isinstance(value, np.ndarray) and value.dtype == object:
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        for v in value:
            bad = unencodable_text(v)
            if bad is not None:
                return bad
    return None


def is_empty_cell(value: Any) -> bool:
    """An empty frame cell: None, NA/NaT/NaN, "" or b"", or an empty list, tuple, dict, set
    or array (a path or a file object never is). Unlike ``is_blank``, "  " is a value."""
    if value is None:
        return True
    if isinstance(value, (list, tuple, dict, set, np.ndarray, bytes, bytearray)):
        return len(value) == 0
    if isinstance(value, os.PathLike):
        return False
    try:
        return bool(pd.isna(value)) or (isinstance(value, str) and value == "")
    except (TypeError, ValueError):
        return False


def is_blank(value: Any) -> bool:
    """An empty write input: NA, "", whitespace only, [] or {} (or [None])."""
    if is_na(value):
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (list, tuple)):
        return all(is_blank(v) for v in value)
    if isinstance(value, dict):
        return not value
    return False


def invalid(field: FieldSpec, message: str) -> InvalidValue:
    """An InvalidValue whose message starts with the field key and kind."""
    return InvalidValue(f"{field.key} ({field.kind}): {message}", field=field.key)


def html_to_text(value: str) -> str:
    """Display HTML -> plain text: ``<br />`` becomes a newline, tags go, entities decode."""
    if "<" not in value and "&" not in value:
        return value
    return html.unescape(_TAG.sub("", _BR.sub("\n", value.replace("&nbsp;", " "))))


def html_lines(value: str) -> list[str]:
    """Display HTML split on ``<br />`` (or newlines) into clean text lines."""
    return [html.unescape(_TAG.sub("", part)).strip()
            for part in re.split(r"<br\s*/?>|\n", value, flags=re.I)]


def to_number(value: Any, field: FieldSpec) -> int | float:
    """A number, or a numeric string ("1,234.5", "$3"), as int when integral else float."""
    if isinstance(value, bool):
        raise invalid(field, f"expected a number, got a boolean {value!r}")
    if isinstance(value, int):
        if abs(value) > 2**63:   # past a 64-bit integer: stored as a double, like 1e19
            try:
                return float(value)
            except OverflowError:
                raise invalid(field, f"number out of range (beyond a double): "
                                     f"{str(value)[:30]}...") from None
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise invalid(field, f"expected a finite number, got {value!r}")
        return value
    if isinstance(value, (Decimal,)) or hasattr(value, "__float__") and not isinstance(value, str):
        return to_number(float(value), field)
    if isinstance(value, str):
        text = value.strip().replace(",", "")
        text = re.sub(r"^[^\d+\-.]+", "", text)  # a leading currency symbol
        try:
            dec = Decimal(text)
        except InvalidOperation:
            raise invalid(field, f"expected a number, got {value!r}") from None
        if not dec.is_finite():
            raise invalid(field, f"expected a finite number, got {value!r}")
        if dec == dec.to_integral_value() and "e" not in text.lower() and "." not in text:
            return to_number(int(dec), field)
        return to_number(float(dec), field)
    raise invalid(field, f"expected a number, got {type(value).__name__} {value!r}")


def parse_number_text(text: Any) -> float | None:
    """Best effort number from a display value ("$1,234.50", "4.00", 12); None if not one."""
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text)
    if not isinstance(text, str):
        return None
    cleaned = _NUMERIC_JUNK.sub("", html_to_text(text))
    if not cleaned:
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def as_text(value: Any, field: FieldSpec) -> str:
    """A write input that must be text (numbers are accepted and written as text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(field, f"expected text, got {type(value).__name__} {value!r}")
    return str(value)


def blank_to_none(values: Sequence[Any]) -> Sequence[Any]:
    """``values`` with every "" as None (a new list), or ``values`` itself when none is "".

    The one "" -> None pass of raw pages (``build_frames``) and text columns
    (``string_series``). Counted and found by ``count`` and ``index``, C scans; profiled
    in a cold load it costs about what the Python comparison per value it replaced did:
    the comparisons of values that are not text dominate either way.

    Usage: ``raws = blank_to_none(raws)``"""
    try:
        blanks = values.count("")
    except (TypeError, ValueError):  # a value whose == is not a bool (pd.NA, arrays)
        return [None if isinstance(v, str) and v == "" else v for v in values]
    if not blanks:
        return values
    out = list(values)
    at = -1
    for _ in range(blanks):
        at = out.index("", at + 1)
        out[at] = None
    return out


TEXT_POOL = pa.system_memory_pool()
"""The allocator of the Arrow arrays decoded page by page (text columns, ids, numbers read
through Arrow): the C library's. ``pa.array`` grows a column's buffer by doubling and
shrinks it when done; the C library takes the excess back, where Arrow's default
allocator (mimalloc) kept it: a large load's text columns held about twice their bytes
in the process. The rest (a page's ids, its connections' record ids) went to mimalloc
too, which then held its own memory beside the C library's free memory
(docs/benchmarks.md, "A load's memory")."""


def text_array(values: Sequence[str]) -> pd.arrays.ArrowStringArray:
    """``pd.array(values, dtype="string")`` (every value text, none blank), in
    :data:`TEXT_POOL`. Usage: ``pd.Index(text_array(ids), name="id")``"""
    return pd.arrays.ArrowStringArray(pa.array(values, type=pa.large_string(),
                                               memory_pool=TEXT_POOL))


def string_series(values: Iterable[Any]) -> pd.Series:
    """A nullable "string" Series; None and "" become NA. Built straight from an Arrow
    array when every value is text (several times faster than pd.Series(..., "string"))."""
    vals = blank_to_none(values if isinstance(values, (list, tuple)) else list(values))
    if _ARROW_STRINGS:
        try:
            arr = pa.array(vals, type=pa.large_string(), memory_pool=TEXT_POOL)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        else:
            return pd.Series(pd.arrays.ArrowStringArray(arr))
    return pd.Series(vals, dtype="string")


def float_values(values: Sequence[Any]) -> np.ndarray:
    """The float64 array of ``float_series`` (NaN where it holds NA), for a caller that
    checks the numbers before wrapping them (pandas' ``to_numpy`` copies them again)."""
    try:
        return np.array([np.nan if v is None else v for v in values], dtype="float64")
    except (TypeError, ValueError, OverflowError):
        return np.array([_float_or_none(v) for v in values], dtype="float64")


def float_series(values: Sequence[Any] | np.ndarray) -> pd.Series:
    """A Float64 Series; None is NA, numeric text is parsed, anything else is NA (an
    array from ``float_values`` is taken as it is)."""
    arr = values if isinstance(values, np.ndarray) else float_values(values)
    return pd.Series(pd.arrays.FloatingArray(arr, np.isnan(arr)))


def _float_or_none(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def int_series(values: Sequence[Any]) -> pd.Series:
    """An Int64 Series; None is NA."""
    try:
        arr = pa.array(values, type=pa.int64(), memory_pool=TEXT_POOL)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pd.Series(pd.array([_int_or_none(v) for v in values], dtype="Int64"))
    return pd.Series(pd.arrays.IntegerArray(
        pc.coalesce(arr, pa.scalar(0, pa.int64()), memory_pool=TEXT_POOL).to_numpy(),
        pc.is_null(arr, memory_pool=TEXT_POOL).to_numpy(zero_copy_only=False)))


def _int_or_none(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        out = int(float(value))
    except (TypeError, ValueError, OverflowError):
        return None
    return out if abs(out) < 2**63 else None


def object_series(values: Sequence[Any]) -> pd.Series:
    """An object Series whose cells may be lists (built element-wise so lists stay lists)."""
    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        arr[i] = v
    return pd.Series(arr, dtype=object)


def raw_values(raws: Sequence[Any], displays: Sequence[Any]) -> Sequence[Any]:
    """raws, with a structured value found under ``field_N`` (a ``format=raw`` answer puts
    the raw value there) taking the place of a missing raw. The same list when none."""
    try:
        if None not in raws:  # a C-speed scan: nothing is missing
            return raws
    except (TypeError, ValueError):  # a value whose == is not a bool (pd.NA, arrays)
        pass
    try:
        if not any(displays):  # C speed too: no display to stand in (format=raw pages)
            return raws
    except (TypeError, ValueError):
        pass
    missing = {type(d) for r, d in zip(raws, displays, strict=False) if r is None}
    if missing <= _TEXT_TYPES:
        return raws
    return [d if r is None and d is not None and type(d) is not str else r
            for r, d in zip(raws, displays, strict=False)]


def na_to_none(value: Any) -> Any:
    return None if is_na(value) else value


def get_value(values: Any, key: str) -> Any:
    """values[key] with NA (and missing) as None."""
    try:
        got = values[key]
    except (KeyError, IndexError, TypeError):
        return None
    return na_to_none(got) if not isinstance(got, (list, tuple, dict)) else got
