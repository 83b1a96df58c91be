"""Date parts a write did not edit are sent as the server stores them.

A frame holds instants; a wall time the application's timezone skips (a daylight-saving
gap, 2:30 am on the day clocks go forward) has no instant, so it loads as the first valid
one (3:00) and would be written back as that. Once the guard has re-read a record, the
parts of a date_time (start, ``to``) or of a timer's intervals whose frame values were
not edited are replaced by the server's own wall-clock members: editing a range's end
never rewrites its start. Without the guard (``write_back(guard=False)``) only the records
with an unedited part that may be such a time (:func:`may_be_skipped`: an instant just
after a gap, as a skipped wall time loads) are re-read for it.

Usage::

    body[key] = keep_stored_parts(field, body[key], record.get(key + "_raw"), was, want)
    may_be_skipped(field, sent, was, want)    # re-read the record without the guard?
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..kinds import values_equal
from ..kinds.base import FieldSpec
from .values import intervals_key

__all__ = ["keep_stored_parts", "may_be_skipped"]

_WALL = ("date", "hours", "minutes", "am_pm")


def _stored(raw: Any) -> dict[str, Any] | None:
    """The write members of a stored raw date object, or None when it lacks them."""
    if not isinstance(raw, Mapping) or any(raw.get(k) in (None, "") for k in _WALL):
        return None
    return {k: raw[k] for k in _WALL}


def keep_stored_parts(field: FieldSpec, sent: Any, raw: Any, was: Mapping[str, Any],
                      want: Mapping[str, Any]) -> Any:
    """``sent`` with each unedited date part (equal in ``was`` and ``want``) taken from
    the server's stored ``raw`` value; ``sent`` itself when nothing applies."""
    if not isinstance(sent, dict) or not isinstance(raw, Mapping):
        return sent
    key = field.key
    out = dict(sent)
    if "times" in out:
        spans_was: Sequence[Any] = was.get(intervals_key(key)) or []
        spans_want: Sequence[Any] = want.get(intervals_key(key)) or []
        stored = raw.get("times") or []
        times = [dict(t) for t in out["times"]]
        for i, t in enumerate(times):
            if i >= min(len(spans_was), len(spans_want), len(stored)) \
                    or not isinstance(stored[i], Mapping):
                continue
            for j, part in enumerate(("from", "to")):
                keep = _stored(stored[i].get(part))
                if keep is not None and values_equal(spans_was[i][j], spans_want[i][j]):
                    t[part] = keep
        out["times"] = times
        return out
    if "times" in raw:   # a timer of one interval, written like a range
        first = (raw.get("times") or [None])[0]
        raw = {**first["from"], "to": first["to"]} if isinstance(first, Mapping) \
            and isinstance(first.get("from"), Mapping) else {}
    for col, member in ((key, None), (f"{key}.to", "to")):
        if col not in want or not values_equal(was.get(col), want.get(col)):
            continue
        keep = _stored(raw if member is None else raw.get(member))
        if keep is None:
            continue
        if member is None:
            out.update(keep)
        elif "to" in out:
            out["to"] = keep
    return out


def _after_gap(value: Any) -> bool:
    """Whether ``value`` is the first instant after a gap in its timezone's wall clock:
    where a skipped wall time (2:30 on the day clocks go forward) is held."""
    if not isinstance(value, pd.Timestamp) or value.tzinfo is None:
        return False
    # a minute earlier the wall clock read more than a minute less: the gap lies between
    before = value - pd.Timedelta(minutes=1)
    return bool(value.tz_localize(None) - before.tz_localize(None) > pd.Timedelta(minutes=1))


def may_be_skipped(field: FieldSpec, sent: Any, was: Mapping[str, Any],
                   want: Mapping[str, Any]) -> bool:
    """Whether the write ``sent`` for ``field`` carries an unedited date part whose frame
    value may stand for a wall time the timezone skips: only the server's own members
    say which wall time it is (:func:`keep_stored_parts`)."""
    if not isinstance(sent, dict):
        return False
    key = field.key
    if "times" in sent:
        spans_was: Sequence[Any] = was.get(intervals_key(key)) or []
        spans_want: Sequence[Any] = want.get(intervals_key(key)) or []
        return any(values_equal(a[j], b[j]) and _after_gap(a[j])
                   for a, b in zip(spans_was, spans_want, strict=False) for j in (0, 1))
    return any(col in want and values_equal(was.get(col), want.get(col))
               and _after_gap(want.get(col)) for col in (key, f"{key}.to"))
