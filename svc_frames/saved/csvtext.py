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
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from ..arrowcols import member
from ..errors import SvcError, UsageError
from ..kinds import codec_for
from ..kinds.base import Codec, FieldSpec, ReadContext
from ..kinds.celltext import NA_TEXT, Verdict, list_items, meant_text, whole_numbers
from ..kinds.choices import MULTI_JOIN
from ..kinds.tz import resolve_timezone
from .arrow import TZ_DTYPE

COMPUTED_NUMBERS = frozenset({"equation", "sum", "count", "average", "min", "max"})
_DURATION = re.compile(r"^(-)?(\d+):([0-5]\d)(?::([0-5]\d(?:\.\d+)?))?$")
_NUMBER_JUNK = re.compile(r"[,$\s]")  # thousands separators and a currency sign
_QUOTE = re.compile('[",\x00-\x1f\x7f\x85\u2028\u2029]')  # separators, quotes, controls
_TRUE = {"true", "yes", "on", "1", "y", "t", "1.0"}
_FALSE = {"false", "no", "off", "0", "n", "f", "0.0"}
SHOWN = 3  # cells named in an error


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
        items = list_items(text)   # JSON, or a list as pandas or numpy writes one
        if items is not None:
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
        if text == "" or (skip is not None and skip[row]) or (not plain and text in NA_TEXT):
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


def as_loaded(cells: Sequence[str], was: Sequence[Any], shown: Sequence[str],
              known: Sequence[bool], field: FieldSpec | None, column: str,
              ctx: ReadContext) -> tuple[list[bool], list[int], list[Any]]:
    """Which ``cells`` of ``column`` stand for the loaded values ``was`` (the export
    showed them as ``shown``) although a tool rewrote them (pandas' ``78742.0``, a
    spreadsheet's ``TRUE``, another way to write the same instant: ``Codec.same_cell``),
    and the rows the file cannot tell (``01234`` loaded, ``1234.0`` in the file), and
    the cells as meant (an edited or new ``99999.0`` where whole numbers were loaded as
    text is ``99999``: ``celltext.meant_text``). A row not ``known`` (a new row) is
    neither the same nor unsure.

    Usage: ``same, unsure, cells = as_loaded(cells, was, shown, known, field, "Site.zip",
    ctx)``"""
    codec: Codec = codec_for(field) if field is not None else Codec()
    spec = field if field is not None else FieldSpec(column, "unknown")
    whole = whole_numbers(was)
    same: list[bool] = []
    unsure: list[int] = []
    meant: list[Any] = []
    for row, (cell, old, text, ours) in enumerate(zip(cells, was, shown, known, strict=True)):
        verdict: Verdict = "edit"
        if ours:
            cell = "" if _empty(cell) else str(cell)
            verdict = ("same" if cell == text and cell != ""
                       else codec.same_cell(cell, old, column, spec, ctx, text))
        if verdict == "edit" and isinstance(cell, str):
            cell = meant_text(cell, whole)
        same.append(verdict == "same")
        meant.append(cell)
        if verdict == "unsure":
            unsure.append(row)
    return same, unsure, meant


def unsure_cells(where: str, column: str, rows: Sequence[int], cells: Sequence[str],
                 shown: Sequence[str], ids: Sequence[str], others: Sequence[str] = ()
                 ) -> UsageError:
    """The refusal of cells a tool rewrote so that the file cannot tell the loaded value
    from an edit: the column, how many, a few of them, and the two ways out."""
    examples = "; ".join(f"record {ids[r]!r}: loaded {shown[r]!r}, now {cells[r]!r}"
                         for r in rows[:SHOWN])
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    also = f" (also in column(s) {', '.join(map(repr, others))})" if others else ""
    return UsageError(
        f"{where}: column {column!r}: {len(rows)} cell(s) were rewritten by the tool that "
        f"wrote this file, and their text no longer tells the loaded value from an edit "
        f"({examples}{more}){also}: pandas' read_csv and read_excel read text of digits "
        "as numbers (01234 -> 1234.0) and texts such as NA or None as empty. Either export "
        "again and read the records without guessing (svc_frames.read_saved(dir), or "
        "pd.read_csv(..., dtype=str, keep_default_na=False)) before making the edits, or put the loaded text back in "
        "those cells; nothing was sent", field=column)


def read_cells(where: str, texts: Mapping[str, list[Any]], columns: Mapping[str, str],
               fields: Mapping[str, FieldSpec], index: str, tz: str | None,
               loaded: pd.DataFrame | None) -> pd.DataFrame:
    """Columns of text (a CSV file, or text columns of a Parquet file written by
    ``astype(str)``) as the saved column types. A cell that still stands for its loaded
    value (the export's text, or what pandas or a spreadsheet made of it:
    ``csvtext.as_loaded``) is that exact value, not parsed (CSV rounds computed numbers
    and seconds of a duration); cells the file cannot tell from an edit are refused,
    every column checked before any is read. ``texts``: column -> cells (the ``index``
    column among them to match rows with ``loaded``, the as-loaded records by id);
    ``columns``: the columns to read -> their saved dtype; ``where``: the file, for errors.

    Usage: ``read_cells("a.csv", texts, {"field_29": dtype}, fields, "id", tz, loaded)``"""
    ctx = ReadContext(timezone=resolve_timezone(tz) if tz else None)
    n = len(next(iter(texts.values()), []))
    base = None
    known: list[bool] = [False] * n
    ids: list[str] = [""] * n
    if loaded is not None and index in texts:
        ids = ["" if v is None else str(v) for v in texts[index]]
        by_id = pd.Index(ids, dtype="string")
        mask = member(by_id, loaded.index)
        base = loaded.reindex(by_id.where(mask))
        known = [bool(k) for k in np.asarray(mask)]
    sames: dict[str, list[bool]] = {}
    meant: dict[str, list[Any]] = {}
    unsure: dict[str, tuple[list[int], list[str]]] = {}
    for name in columns:
        if base is not None and name in base.columns and name != index:
            shown = format_column(base[name], fields.get(name))
            sames[name], rows, meant[name] = as_loaded(texts[name], base[name].tolist(),
                                                       shown, known, fields.get(name), name,
                                                       ctx)
            if rows:
                unsure[name] = (rows, shown)
    if unsure:
        first, (rows, shown) = next(iter(unsure.items()))
        cells = ["" if v is None else str(v) for v in texts[first]]
        raise unsure_cells(where, first, rows, cells, shown, ids,
                           [c for c in unsure if c != first])
    cols: dict[str, Any] = {}
    for name, dtype in columns.items():
        kept = sames.get(name)
        values = parse_column(meant.get(name, texts[name]), dtype, fields.get(name), column=name,
                              where=where, timezone=tz, skip=kept)
        if kept is not None:
            assert base is not None
            values = [w if k else v for v, w, k in zip(values, base[name].tolist(), kept,
                                                        strict=True)]
        cols[name] = typed_series(values, dtype)
    return pd.DataFrame(cols, columns=list(columns))


def typed_series(values: list[Any], dtype: str) -> pd.Series:
    """Parsed cells as a column of the saved ``dtype`` (a pandas dtype name, or "list")."""
    if dtype == "list" or dtype == "object":
        return pd.Series(values, dtype=object)
    want = pd.api.types.pandas_dtype(dtype)
    m = TZ_DTYPE.match(dtype)
    if m:
        s = pd.to_datetime(pd.Series(values, dtype=object), utc=True)
        return s.dt.tz_convert(m.group(2)).astype(want)
    return pd.Series(values, dtype=object).astype(want)
