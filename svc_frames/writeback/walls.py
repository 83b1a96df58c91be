"""Date parts a write did not edit are sent as the server stores them.

A frame holds instants; a wall time the application's timezone skips (a daylight-saving
gap, 2:30 am on the day clocks go forward) has no instant, so it loads as the first valid
one (3:00) and would be written back as that. Once the guard has re-read a record, the
parts of a date_time (start, ``to``) or of a timer's intervals whose frame values were
not edited are replaced by the server's own wall-clock members: editing a range's end
never rewrites its start. Without the guard (``write_back(guard=False)``) nothing is
re-read, and such a part goes as the frame holds it.

Usage::

    body[key] = keep_stored_parts(field, body[key], record.get(key + "_raw"), was, want)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..kinds import values_equal
from ..kinds.base import FieldSpec
from .values import intervals_key

__all__ = ["keep_stored_parts"]

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
