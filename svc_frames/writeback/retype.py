"""Edited columns read back as their field's kind, whatever dtype an edit left them in.

An analyst turns a date or a number column to text (``astype(str)`` before a spreadsheet
or a regex), to ``category`` or ``object``, makes an ``Int64`` column ``float64`` or a
``boolean`` one ``bool``, converts dates to another timezone or drops it: the values mean
what they meant, so nothing is to be written. ``diff`` reads such a column as the dtype
it was loaded with before comparing (``read_as_loaded``); a cell that cannot be read so is
a :class:`InvalidValue` (a ``UsageError``) naming the column, the field's kind and the first records with
their values, before any request.

Usage: ``edited = read_as_loaded(edited_col, loaded_col, spec, "field_29")``
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidValue
from ..kinds.base import FieldSpec

__all__ = ["read_as_loaded"]

# what a missing value turns into when a column is written out as text
NA_TEXT = frozenset({"", "nan", "NaN", "<NA>", "NaT", "None", "none", "null", "NULL"})
TRUE_TEXT = frozenset({"true", "yes", "y", "1", "t"})
FALSE_TEXT = frozenset({"false", "no", "n", "0", "f"})
SHOWN = 3  # records named in an error


def _blank(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float) and np.isnan(v):
        return True
    return isinstance(v, str) and v.strip() in NA_TEXT


def _timestamp(v: Any, tz: Any) -> Any:
    """One value as an instant in ``tz``: a naive time is wall time there."""
    if _blank(v):
        return pd.NaT
    ts: Any = pd.Timestamp(v.strip() if isinstance(v, str) else v)
    if pd.isna(ts):
        return pd.NaT
    if ts.tzinfo is None:
        # a naive time means the application's wall clock; a time that does not exist
        # there (a daylight-saving gap) is not guessed at
        return ts.tz_localize(tz, ambiguous="NaT", nonexistent="NaT")
    return ts.tz_convert(tz)


def _boolean(v: Any) -> Any:
    if _blank(v):
        return pd.NA
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float, np.integer, np.floating)) and v in (0, 1):
        return bool(v)
    text = str(v).strip().lower()
    if text in TRUE_TEXT:
        return True
    if text in FALSE_TEXT:
        return False
    raise ValueError(v)


def _each(values: pd.Series, one: Any, dtype: Any) -> tuple[pd.Series, list[int]]:
    """``one`` applied to every value; the positions it could not read."""
    out: list[Any] = []
    bad: list[int] = []
    na = pd.NaT if isinstance(dtype, pd.DatetimeTZDtype) or str(dtype).startswith(
        ("datetime", "timedelta")) else pd.NA
    for i, v in enumerate(values.tolist()):
        try:
            r = one(v)
        except (ValueError, TypeError, OverflowError):
            r, bad = na, [*bad, i]
        if (r is pd.NaT or r is pd.NA) and not _blank(v) and i not in bad:
            bad.append(i)
        out.append(r)
    return pd.Series(out, index=values.index, dtype=object), bad


def read_as_loaded(values: pd.Series, loaded: pd.Series, spec: FieldSpec, column: str
                   ) -> pd.Series:
    """``values`` (an edited column) in ``loaded``'s dtype (the column as loaded), read by
    the field's kind; unchanged when the dtypes already agree or the loaded column holds
    Python objects (lists, mixed values). InvalidValue when a cell cannot be read so."""
    want = loaded.dtype
    if values.dtype == want or pd.api.types.is_object_dtype(want):
        return values
    try:
        if isinstance(want, pd.DatetimeTZDtype):
            if isinstance(values.dtype, pd.DatetimeTZDtype):
                converted: pd.Series = values.dt.tz_convert(want.tz).astype(want)
                return converted
            out, bad = _each(values, lambda v: _timestamp(v, want.tz), want)
        elif str(want).startswith("timedelta"):
            out, bad = _each(values, lambda v: pd.NaT if _blank(v) else pd.Timedelta(v), want)
        elif pd.api.types.is_bool_dtype(want):
            out, bad = _each(values, _boolean, want)
        elif pd.api.types.is_numeric_dtype(want):
            def number(v: Any) -> Any:
                if _blank(v):
                    return pd.NA
                if isinstance(v, (dt.date, dt.timedelta)):
                    raise ValueError(v)
                x = float(v.strip().replace(",", "")) if isinstance(v, str) else float(v)
                if pd.api.types.is_integer_dtype(want) and not x.is_integer():
                    raise ValueError(v)
                return x
            out, bad = _each(values, number, want)
        elif pd.api.types.is_string_dtype(want):
            try:
                return values.astype(want)  # text is text: "" and NA compare equal in diff
            except (ValueError, TypeError, UnicodeError):
                return values  # text no string column holds: diff's own check names it
        else:
            return values
    except (ValueError, TypeError) as exc:  # a whole-column conversion refused
        raise _unreadable(values, list(range(min(SHOWN, len(values)))), spec, column,
                          str(exc)) from None
    if bad:
        why = _wall_hint(values, bad, want.tz) if isinstance(want, pd.DatetimeTZDtype) else ""
        raise _unreadable(values, bad, spec, column, why)
    if pd.api.types.is_integer_dtype(want):
        return out.astype("Float64").astype(want)
    return out.astype(want)


def _wall_hint(values: pd.Series, bad: list[int], tz: Any) -> str:
    """The fix for naive times the timezone skips or repeats (a daylight-saving change),
    when the first unreadable cell is one: they are not guessed at."""
    try:
        ts = pd.Timestamp(values.iloc[bad[0]])
    except (ValueError, TypeError):
        return ""
    if pd.isna(ts) or ts.tzinfo is not None:
        return ""
    return (f"{ts} is a wall time {tz} skips or repeats (a daylight-saving change), so "
            f"which instant is meant is not guessed: give it with its zone, e.g. "
            f"pd.Timestamp({str(ts)!r}).tz_localize({str(tz)!r}, ambiguous=True, "
            f"nonexistent='shift_forward') for the first reading or the next valid time")


def _unreadable(values: pd.Series, bad: list[int], spec: FieldSpec, column: str,
                why: str = "") -> InvalidValue:
    shown = ", ".join(f"{values.index[i]!r}: {values.iloc[i]!r}" for i in bad[:SHOWN])
    more = f" and {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
    return InvalidValue(
        f"column {column!r} ({spec.kind} field {spec.label!r}) holds values that cannot be "
        f"read as a {spec.kind}: {shown}{more}" + (f" ({why})" if why else "")
        + "; give them as that kind (or leave the cells as loaded)",
        field=spec.key, column=column, record_id=str(values.index[bad[0]]) if bad else None)
