"""Which records a restore covers: all, a list of ids (each one the mirror saw), or a
filter (the toolkit's filter conditions) matched against the records as they were at
``when`` and as the mirror last saw them: a record matching either is restored.

The service evaluates filters for live records only, and the records a restore brings
back are not live: the rules are matched here, on the mirror's frames, for the operators
that need no clock or map: ``is``, ``is not``, ``contains``, ``does not contain``,
``starts with``, ``ends with``, ``is blank``, ``is not blank``, ``higher than``, ``lower
than``, ``is any``, ``is before``, ``is after`` (dates compared by day in the
application's timezone). Others are refused, naming them.

Usage::

    ids = selected_ids(Field("Status").is_("Open"), then, last, seen, "object_3")
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pandas as pd

from ..errors import UsageError
from ..frames import Frames
from ..query import read_filter_date, validate_filters

__all__ = ["selected_ids", "LOCAL_OPERATORS"]

LOCAL_OPERATORS = frozenset({"is", "is not", "contains", "does not contain", "starts with",
                             "ends with", "is blank", "is not blank", "higher than",
                             "lower than", "is any", "is before", "is after"})


def selected_ids(records: Any, then: Frames, last: Frames, seen: Collection[str],
                 key: str) -> set[str] | None:
    """The ids ``records`` names (None: every record); UsageError for ids the mirror never
    saw (``seen``: every id of the object's history) or a filter it cannot match."""
    if records is None:
        return None
    if isinstance(records, str):
        records = [records]
    if isinstance(records, Mapping) or (
            isinstance(records, Sequence) and records and all(
                isinstance(r, Mapping) for r in records)):
        flt = validate_filters(records)
        assert flt is not None
        return _matching(flt, then) | _matching(flt, last)
    if isinstance(records, (Sequence, pd.Index, set, frozenset)):
        ids = [str(r) for r in records]
        unseen = [r for r in ids if r not in seen]
        if unseen:
            raise UsageError(f"{len(unseen)} id{'s' if len(unseen) != 1 else ''} the mirror "
                             f"never saw in {key}: {', '.join(unseen[:5])}"
                             f"{', ...' if len(unseen) > 5 else ''}: nothing was sent")
        return set(ids)
    raise UsageError(f"records must be None, a list of ids or a filter, got "
                     f"{type(records).__name__}")


def _matching(flt: Mapping[str, Any], frames: Frames) -> set[str]:
    mask = _mask(flt, frames)
    return {str(i) for i in frames.main.index[mask.to_numpy()]}


def _mask(flt: Mapping[str, Any], frames: Frames) -> pd.Series:
    parts = [(_mask(r, frames) if "rules" in r else _rule(r, frames))
             for r in flt.get("rules") or []]
    idx = frames.main.index
    if not parts:
        return pd.Series(True, index=idx)
    out = parts[0]
    for p in parts[1:]:
        out = (out | p) if flt.get("match") == "or" else (out & p)
    return out


def _column(name: str, frames: Frames) -> tuple[str, pd.Series]:
    assert frames.source is not None
    fields = frames.source.fields
    by_label = {f.name: f.key for f in fields}
    key = name if any(f.key == name for f in fields) else by_label.get(name)
    if key is None:
        raise UsageError(f"filter: {name!r} is no field of {frames.source.object_key} at "
                         "that time (name it by key or label)")
    main = frames.main
    if key in main.columns:
        return key, main[key]
    t = frames.tables.get(key)
    if t is not None and "connected_id" in t.columns:   # a connection: its ids joined
        joined = t.groupby("record_id")["connected_id"].agg(lambda s: " ".join(map(str, s)))
        return key, pd.Series([joined.get(i) for i in main.index], index=main.index,
                              dtype=object)
    raise UsageError(f"filter: the field {name!r} has no column restore can match "
                     "against the mirror")


def _rule(rule: Mapping[str, Any], frames: Frames) -> pd.Series:
    op = str(rule.get("operator"))
    if op not in LOCAL_OPERATORS:
        raise UsageError(f"filter: the operator {op!r} cannot be matched against the "
                         f"mirror (restore matches {', '.join(sorted(LOCAL_OPERATORS))}); "
                         "pass the ids instead")
    _key, col = _column(str(rule.get("field")), frames)
    value = rule.get("value")
    blank = col.isna() | (col.astype(str) == "")
    if op == "is blank":
        return blank
    if op == "is not blank":
        return ~blank
    if op == "is any":
        opts = {str(v).casefold() for v in value or []}
        return col.map(lambda v: not _na(v) and str(v).casefold() in opts).astype(bool)
    if op in ("is before", "is after", "higher than", "lower than") and \
            pd.api.types.is_datetime64_any_dtype(col):
        day = _day(value)
        days = col.map(lambda v: None if _na(v) else v.date())
        cmp = (lambda d: d is not None and d < day) if op in ("is before", "lower than") \
            else (lambda d: d is not None and d > day)
        return days.map(cmp).astype(bool)
    if op in ("higher than", "lower than"):
        num = pd.to_numeric(col, errors="coerce")
        try:
            x = float(str(value))
        except (TypeError, ValueError):
            raise UsageError(f"filter: {op} needs a number, got {value!r}") from None
        return ((num > x) if op == "higher than" else (num < x)).fillna(False).astype(bool)
    if op in ("is before", "is after"):
        raise UsageError(f"filter: {op} applies to dates; {rule.get('field')!r} is not one")
    text = col.map(lambda v: "" if _na(v) else str(v).casefold())
    want = "" if value is None else str(value).casefold()
    if op in ("is", "is not"):
        num = pd.to_numeric(col, errors="coerce")
        try:
            hit: pd.Series = (num == float(str(value))).fillna(False) | (text == want)
        except (TypeError, ValueError):
            hit = text == want
        hit = hit.astype(bool)
        return hit if op == "is" else ~hit
    if op == "contains":
        return text.map(lambda s: want in s).astype(bool)
    if op == "does not contain":
        return text.map(lambda s: want not in s).astype(bool)
    if op == "starts with":
        return text.map(lambda s: s.startswith(want)).astype(bool)
    return text.map(lambda s: s.endswith(want)).astype(bool)     # ends with


def _na(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _day(value: Any) -> dt.date:
    try:
        d = read_filter_date(value)
    except ValueError as exc:
        raise UsageError(f"filter: {exc}") from None
    return d.date() if isinstance(d, dt.datetime) else d
