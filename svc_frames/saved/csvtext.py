"""CSV cells as an analyst reads them, and back to typed columns.

A CSV of saved frames (``export(..., format="csv")``) shows values the way the service
shows them, so a spreadsheet or a plain ``pd.read_csv`` reads what the console shows:

- timestamps as ISO 8601 with their offset (``2026-03-04T09:30:00-06:00``);
- durations (timer totals) as ``H:MM:SS`` (``27:05:00``);
- numbers without float noise: currency with two decimals, computed numbers rounded as
  the service rounds them, other numbers to 15 significant digits (``842.85``, never
  ``842.8499999999999``); integers without a decimal point;
- yes/no fields in the field's own words (``Yes``/``No``, ``On``/``Off`` ...);
- multi choices and user roles joined as the service displays them (``A, B``), or, when
  an item holds a comma or starts with ``[``, as a JSON array (``["a, b", "c"]``), so an
  option holding the separator comes back as one option;
- an empty cell for an empty value.

Cells are quoted as RFC 4180 says, and also whenever they hold any control character
(a lone carriage return, a form feed, ...), so no reader takes one record for two; records
end in CRLF (:func:`csv_text`).

:func:`parse_column` reads such text back (and what a spreadsheet makes of it: naive
times in the application's timezone, ``TRUE``/``FALSE``, ``1,234.50``) into the values of
the saved column type, naming the column, row and file of a value it cannot read.

Usage::

    texts = format_column(frames.main["field_29"], field)          # list of str
    values = parse_column(texts, "datetime64[ns, America/Chicago]", field, where="f.csv")
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

import pandas as pd

from ..errors import SvcError, UsageError
from ..kinds import codec_for
from ..kinds.base import FieldSpec
from ..kinds.choices import MULTI_JOIN

COMPUTED_NUMBERS = frozenset({"equation", "sum", "count", "average", "min", "max"})
_DURATION = re.compile(r"^(-)?(\d+):([0-5]\d)(?::([0-5]\d(?:\.\d+)?))?$")
_NUMBER_JUNK = re.compile(r"[,$\s]")  # thousands separators and a currency sign
_QUOTE = re.compile('[",\x00-\x1f\x7f\x85\u2028\u2029]')  # separators, quotes, controls
_TRUE = {"true", "yes", "on", "1", "y", "t"}
_FALSE = {"false", "no", "off", "0", "n", "f"}


def _empty(v: Any) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v))


def number_text(v: float, field: FieldSpec | None = None) -> str:
    """A number as the service shows it, without float noise.

    Usage: ``number_text(842.8499999999999) == "842.85"``"""
    kind = field.kind if field is not None else ""
    if kind == "currency":
        return f"{v:.2f}"
    if field is not None and kind in COMPUTED_NUMBERS:
        shown = codec_for(field).render(v, field)  # the service's own rounding
        if isinstance(shown, (int, float)) and not isinstance(shown, bool):
            v = float(shown)
    text = repr(float(f"{v:.15g}"))  # 15 digits: what a double holds without noise
    return text[:-2] if text.endswith(".0") else text


def duration_text(v: pd.Timedelta | timedelta) -> str:
    """``H:MM:SS`` (hours past 24 kept), seconds with a fraction only when there is one.

    Usage: ``duration_text(pd.Timedelta(minutes=90)) == "1:30:00"``"""
    total = pd.Timedelta(v).total_seconds()
    sign = "-" if total < 0 else ""
    total = abs(total)
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    sec = f"{int(seconds):02d}" if seconds == int(seconds) else f"{seconds:09.6f}".rstrip("0")
    return f"{sign}{int(hours)}:{int(minutes):02d}:{sec}"


def format_column(values: pd.Series, field: FieldSpec | None) -> list[str]:
    """The CSV text of one frame column (``field``: the field it belongs to, if any).

    Usage: ``format_column(frames.main["field_16"], source.field("field_16"))``"""
    dtype = values.dtype
    out: list[str] = []
    if isinstance(dtype, pd.DatetimeTZDtype) or pd.api.types.is_datetime64_any_dtype(dtype):
        return ["" if _empty(v) else pd.Timestamp(v).isoformat() for v in values]
    if pd.api.types.is_timedelta64_dtype(dtype):
        return ["" if _empty(v) else duration_text(v) for v in values]
    if pd.api.types.is_bool_dtype(dtype):
        codec = codec_for(field) if field is not None and field.kind == "boolean" else None
        for v in values:
            if _empty(v):
                out.append("")
            elif codec is not None and field is not None:
                out.append(str(codec.render(bool(v), field)))
            else:
                out.append("true" if v else "false")
        return out
    if pd.api.types.is_integer_dtype(dtype):
        return ["" if _empty(v) else str(int(v)) for v in values]
    if pd.api.types.is_float_dtype(dtype):
        return ["" if _empty(v) else number_text(float(v), field) for v in values]
    for v in values:
        if isinstance(v, (list, tuple)) or hasattr(v, "tolist") and not isinstance(v, str):
            items = v.tolist() if hasattr(v, "tolist") else list(v)
            out.append(list_text([str(x) for x in items if not _empty(x)]))
        elif _empty(v):
            out.append("")
        else:
            out.append(str(v))
    return out


def list_text(items: Sequence[str]) -> str:
    """A list cell: ``A, B`` as the service displays it, or a JSON array when an item
    holds a comma or starts with ``[`` (so the items come back as they were).

    Usage: ``list_text(["a, b", "c"]) == '["a, b", "c"]'``"""
    if any("," in x or x.startswith("[") for x in items):
        return json.dumps(list(items), ensure_ascii=False)
    return MULTI_JOIN.join(items)


def csv_text(header: Sequence[str], columns: Sequence[Sequence[str]]) -> str:
    """CSV text (RFC 4180: CRLF, quotes doubled) of cells already formatted; a cell is
    quoted when it holds a separator, a quote or any control character.

    Usage: ``csv_text(["id", "a"], [["1", "2"], ["x\rz", ""]])``"""
    def cell(text: str) -> str:
        return f'"{text.replace(chr(34), chr(34) * 2)}"' if _QUOTE.search(text) else text

    lines: Iterable[Sequence[str]] = zip(*columns, strict=True) if columns else ()
    rows = [",".join(map(cell, header))]
    rows.extend(",".join(map(cell, row)) for row in lines)
    return "\r\n".join(rows) + "\r\n"


def _split_choices(text: str, options: Sequence[str]) -> list[str]:
    """``"A, B"`` -> ["A", "B"], matching the field's options first, so an option that
    itself holds ", " is kept whole; a JSON array (``list_text``) is read as one."""
    if text.startswith("["):
        try:
            items = json.loads(text)
        except ValueError:
            items = None
        if isinstance(items, list) and all(isinstance(x, str) for x in items):
            return [x for x in items if x]
    parts = [p.strip() for p in text.split(MULTI_JOIN.strip())]
    if not options or all(p in options for p in parts):
        return [p for p in parts if p]
    out: list[str] = []
    rest = text.strip()
    by_length = sorted(options, key=len, reverse=True)
    while rest:
        for o in by_length:
            if rest == o or rest.startswith(o + MULTI_JOIN):
                out.append(o)
                rest = rest[len(o) + len(MULTI_JOIN):].strip()
                break
        else:
            return [p for p in parts if p]  # not all options: validation names the bad one
    return out


def _bad(where: str, column: str, row: int, text: str, what: str) -> UsageError:
    return UsageError(f"{where}: column {column!r}, row {row + 1}: cannot read {text!r} as "
                      f"{what}", field=column)


def parse_column(texts: Sequence[str], dtype: str, field: FieldSpec | None, *,
                 column: str = "", where: str = "", timezone: str | None = None,
                 skip: Sequence[bool] | None = None) -> list[Any]:
    """Values of the saved column type ``dtype`` (a pandas dtype name, or ``"list"``) from
    CSV text; ``""`` is empty. ``timezone`` places times written without an offset;
    cells whose ``skip`` is true are not read (None: the caller knows their value).

    Usage: ``parse_column(["1:30:00", ""], "timedelta64[ns]", None, column="t", where="a.csv")``"""
    out: list[Any] = []
    plain = not dtype.startswith(("datetime64", "timedelta64", "bool", "float", "Float",
                                  "int", "Int", "list"))
    for row, raw in enumerate(texts):
        text = "" if _empty(raw) else str(raw)
        if not plain:   # a text's own spaces and controls are its value: kept
            text = text.strip()
        if text == "" or (skip is not None and skip[row]):
            out.append(None)
            continue
        try:
            out.append(_parse_one(text, dtype, field, timezone))
        except (ValueError, TypeError, OverflowError, SvcError) as exc:
            raise _bad(where, column, row, text, _what(dtype)) from exc
    return out


def _what(dtype: str) -> str:
    if dtype.startswith("datetime64"):
        return "a timestamp (ISO 8601, e.g. 2026-03-04T09:30:00-06:00)"
    if dtype.startswith("timedelta64"):
        return "a duration (H:MM:SS)"
    if dtype in ("boolean", "bool"):
        return "yes/no"
    if dtype.lower().startswith(("float", "int")):
        return "a number"
    return dtype


def _parse_one(text: str, dtype: str, field: FieldSpec | None, timezone: str | None) -> Any:
    if dtype.startswith("datetime64"):
        ts = pd.Timestamp(text)
        if pd.isna(ts):
            raise ValueError("not a time")
        if ts.tzinfo is None and timezone:
            ts = ts.tz_localize(timezone)  # a spreadsheet dropped the offset: app time
        return ts
    if dtype.startswith("timedelta64"):
        m = _DURATION.match(text)
        if m:
            sign, h, mi, s = m.groups()
            td = pd.Timedelta(hours=int(h), minutes=int(mi), seconds=float(s or 0))
            return -td if sign else td
        return pd.Timedelta(text)
    if dtype in ("boolean", "bool"):
        word = text.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError("not yes/no")
    if dtype.lower().startswith("float"):
        return float(_NUMBER_JUNK.sub("", text))
    if dtype.lower().startswith("int"):
        number = float(_NUMBER_JUNK.sub("", text))
        if not number.is_integer():
            raise ValueError("not a whole number")
        return int(number)
    if dtype == "list":
        options: list[str] = []
        if field is not None:
            opts = field.format.get("options") or []
            options = [str(o) for o in opts] if isinstance(opts, (list, tuple)) else []
        return _split_choices(text, options) or None
    return text
