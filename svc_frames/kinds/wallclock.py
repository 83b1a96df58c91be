"""The application's wall clock, shared by date_time and timer: formats, text and
objects parsed to a wall clock, the raw date object, and instants.

Raw dates are app-local wall clock: ``unix_timestamp`` (ms) and ``iso_timestamp`` label
that wall clock as UTC. The service side builds those raw objects from a wall clock; the
toolkit turns them into true instants in the app timezone (tz_localize on the column) and
back (tz_convert, then the wall clock) when encoding.

Formats (``field.format``): ``date_format`` "mm/dd/yyyy" (default), "M/D/yyyy",
"dd/mm/yyyy", "M D, yyyy", "Ignore Date"; ``time_format`` "HH:MM am" (default),
"HH MM (military)", "Ignore Time"; ``calendar`` true makes a range field (``to``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta, timezone
from typing import Any

import numpy as np
import pandas as pd

from ._util import invalid
from .base import FieldSpec, ReadContext

DUMMY_DATE = date(2012, 1, 1)  # the date a time-only field carries
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
NAT = np.iinfo(np.int64).min
_MIN_MS, _MAX_MS = -9_200_000_000_000, 9_200_000_000_000  # inside datetime64[ns]'s range
_TIME = re.compile(r"^\s*(\d{1,2})(?::(\d{2}))?(?::\d{2}(?:\.\d+)?)?\s*([ap]\.?m\.?)?\s*$", re.I)
_ISO = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::\d{2}(?:\.\d+)?)?)?"
                  r"\s*(Z|[+-]\d{2}:?\d{2})?\s*$", re.I)


# ---- formats -----------------------------------------------------------------------------
def date_format(field: FieldSpec) -> str:
    return str(field.format.get("date_format") or "mm/dd/yyyy")


def time_format(field: FieldSpec) -> str:
    return str(field.format.get("time_format") or "HH:MM am")


def has_date(field: FieldSpec) -> bool:
    return date_format(field).lower() != "ignore date"


def has_time(field: FieldSpec) -> bool:
    return time_format(field).lower() != "ignore time"


def is_range(field: FieldSpec) -> bool:
    return bool(field.format.get("calendar"))


def format_date(d: date, fmt: str) -> str:
    """A date in one of the field's date formats (mm/dd/yyyy when the date is ignored)."""
    f = fmt.lower()
    if f == "dd/mm/yyyy":
        return f"{d.day:02d}/{d.month:02d}/{d.year:04d}"
    if fmt == "M/D/yyyy":
        return f"{d.month}/{d.day}/{d.year:04d}"
    if f == "m d, yyyy":
        return f"{_MONTHS[d.month - 1]} {d.day}, {d.year:04d}"
    return f"{d.month:02d}/{d.day:02d}/{d.year:04d}"


def format_time(dt: datetime, fmt: str) -> str:
    """A time as the display shows it: "4:14pm", or "16:35" for military time."""
    if "military" in fmt.lower():
        return f"{dt.hour:02d}:{dt.minute:02d}"
    hour = dt.hour % 12 or 12
    return f"{hour}:{dt.minute:02d}{'am' if dt.hour < 12 else 'pm'}"


def raw_date(dt: datetime, field: FieldSpec) -> dict[str, Any]:
    """The raw date object of a wall-clock datetime (naive, app-local).

    ValueError outside the years 1700-2250 (what a datetime64[ns] column can hold)."""
    if not 1700 <= dt.year <= 2250:
        raise ValueError(f"year {dt.year} is outside 1700-2250")
    hour12 = dt.hour % 12 or 12
    am_pm = "AM" if dt.hour < 12 else "PM"
    text = format_date(dt.date(), date_format(field)) if has_date(field) \
        else format_date(dt.date(), "mm/dd/yyyy")
    ms = int(dt.replace(tzinfo=timezone.utc).timestamp()) * 1000
    return {
        "date": text,
        "date_formatted": text,
        "hours": f"{hour12:02d}",
        "minutes": f"{dt.minute:02d}",
        "am_pm": am_pm,
        "unix_timestamp": ms,
        "iso_timestamp": dt.strftime("%Y-%m-%dT%H:%M:00.000Z"),
        "timestamp": f"{dt.month:02d}/{dt.day:02d}/{dt.year:04d} {hour12:02d}:{dt.minute:02d} "
                     f"{am_pm.lower()}",
        # as the hosted service counts it: 12 AM is 720, like noon (do not trust it)
        "time": hour12 * 60 + dt.minute + (720 if am_pm == "PM" else 0),
    }


# ---- parsing inputs ------------------------------------------------------------------------
def parse_date_text(text: str, field: FieldSpec) -> date:
    t = text.strip()
    m = _ISO.match(t)
    if m:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    fmt = date_format(field).lower()
    m = re.match(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{2,4})$", t)
    if m:
        a, b, y = int(m.group(1)), int(m.group(2)), int(m.group(3))
        y = y + 2000 if len(m.group(3)) <= 2 else y
        return date(y, b, a) if fmt == "dd/mm/yyyy" else date(y, a, b)
    m = re.match(r"^([A-Za-z]{3})[a-z]*\.?\s+(\d{1,2}),?\s+(\d{4})$", t)
    if m and m.group(1).title() in _MONTHS:
        return date(int(m.group(3)), _MONTHS.index(m.group(1).title()) + 1, int(m.group(2)))
    raise ValueError(text)


def _hour24(hours: Any, am_pm: Any) -> int:
    h = int(str(hours).strip())
    if am_pm is None or str(am_pm).strip() == "":
        if not 0 <= h <= 23:
            raise ValueError(hours)
        return h
    ap = str(am_pm).strip().lower().replace(".", "")
    if ap not in ("am", "pm") or not 1 <= h <= 12:
        raise ValueError(hours)
    return (h % 12) + (12 if ap == "pm" else 0)


def parse_time_text(text: str) -> tuple[int, int]:
    m = _TIME.match(text)
    if not m:
        raise ValueError(text)
    hour = _hour24(m.group(1), m.group(3))
    minute = int(m.group(2) or 0)
    if not 0 <= minute <= 59:
        raise ValueError(text)
    return hour, minute


def _parse_text(text: str, field: FieldSpec, base: date | None = None) -> datetime:
    """One date/time string in the field's format (or ISO) -> a wall-clock datetime."""
    t = text.strip()
    m = _ISO.match(t)
    if m:  # ISO: its wall clock as written (an offset, if any, is not applied)
        return datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)),
                        int(m.group(4) or 0), int(m.group(5) or 0))
    try:
        hour, minute = parse_time_text(t)
        day = base or (DUMMY_DATE if not has_date(field) else None)
        if day is None:
            raise ValueError("a time without a date")
        return datetime.combine(day, datetime.min.time()).replace(hour=hour, minute=minute)
    except ValueError:
        pass
    # "<date> <time>" or "<date>": the time is the trailing tokens that parse as one
    parts = t.split()
    for cut in range(len(parts), 0, -1):
        head, tail = " ".join(parts[:cut]), " ".join(parts[cut:])
        try:
            day = parse_date_text(head, field)
        except ValueError:
            continue
        if not tail:
            return datetime.combine(day, datetime.min.time())
        hour, minute = parse_time_text(tail)
        return datetime.combine(day, datetime.min.time()).replace(hour=hour, minute=minute)
    raise ValueError(text)


def _parse_object(obj: Mapping[str, Any], field: FieldSpec, base: date | None) -> datetime:
    if obj.get("date") not in (None, ""):
        day = parse_date_text(str(obj["date"]), field)
    elif obj.get("iso_timestamp") or obj.get("unix_timestamp") is not None:
        ms = obj.get("unix_timestamp")
        if ms is not None:
            return datetime(1970, 1, 1) + timedelta(milliseconds=int(ms))
        return _parse_text(str(obj["iso_timestamp"]), field)
    elif base is not None:
        day = base
    elif not has_date(field):
        day = DUMMY_DATE
    else:
        raise ValueError("no date")
    hours, minutes = obj.get("hours"), obj.get("minutes")
    if hours in (None, "") and minutes in (None, ""):
        return datetime.combine(day, datetime.min.time())
    hour = _hour24(hours if hours not in (None, "") else 0, obj.get("am_pm"))
    minute = int(str(minutes).strip() or 0) if minutes not in (None, "") else 0
    if not 0 <= minute <= 59:
        raise ValueError(minutes)
    return datetime.combine(day, datetime.min.time()).replace(hour=hour, minute=minute)


def parse_wall(value: Any, field: FieldSpec, base: date | None = None) -> datetime:
    """A date input (string, {date, hours, minutes, am_pm}, datetime) -> wall clock."""
    if isinstance(value, pd.Timestamp):
        value = value.tz_localize(None) if value.tzinfo else value
        wall: datetime = value.to_pydatetime()
        return wall.replace(second=0, microsecond=0)
    if isinstance(value, datetime):
        return value.replace(tzinfo=None, second=0, microsecond=0)
    if isinstance(value, date):
        return datetime.combine(value, datetime.min.time())
    if isinstance(value, str):
        return _parse_text(value, field, base)
    if isinstance(value, Mapping):
        return _parse_object(value, field, base)
    raise ValueError(repr(value))


def split_range(value: Any) -> tuple[Any, Any]:
    if isinstance(value, str) and " to " in value:
        start, _, end = value.partition(" to ")
        return start, end
    if isinstance(value, Mapping) and value.get("to") not in (None, "", {}):
        rest = {k: v for k, v in value.items() if k != "to"}
        return rest, value["to"]
    return value, None


def bad_date(field: FieldSpec, value: Any, why: BaseException | None = None) -> Exception:
    if why is not None and "outside" in str(why):
        return invalid(field, f"{why}: {value!r}")
    return invalid(field, f"expected a date like {_example(field)!r} or "
                          f"{{date, hours, minutes, am_pm}}, got {value!r}")


def _example(field: FieldSpec) -> str:
    sample = datetime(2019, 9, 11, 16, 14)
    parts = [format_date(sample.date(), date_format(field))] if has_date(field) else []
    if has_time(field):
        parts.append(format_time(sample, time_format(field)))
    return " ".join(parts)




# ---- a raw date object's wall clock --------------------------------------------------------
def wall_of(raw: Any, field: FieldSpec) -> datetime | None:
    if not isinstance(raw, Mapping):
        return None
    ms = raw.get("unix_timestamp")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        return datetime(1970, 1, 1) + timedelta(milliseconds=int(ms))
    try:
        return _parse_object(raw, field, None)
    except (ValueError, TypeError):
        return None


def display_wall(dt: datetime, field: FieldSpec) -> str:
    parts = [format_date(dt.date(), date_format(field))] if has_date(field) else []
    if has_time(field):
        parts.append(format_time(dt, time_format(field)))
    return " ".join(parts)


def wall_ms(raw: Any, field: FieldSpec) -> int:
    """Wall-clock milliseconds of a raw date object (NaT sentinel when absent)."""
    if not isinstance(raw, dict):
        return NAT
    ms = raw.get("unix_timestamp")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        return int(ms)
    wall = wall_of(raw, field)
    return NAT if wall is None else int((wall - datetime(1970, 1, 1)).total_seconds() * 1000)


def instants(wall_ms: Sequence[int], ctx: ReadContext, column: str = "",
             ids: Sequence[str] | None = None) -> pd.Series:
    """Wall-clock ms (app-local, NaT sentinel for empty) -> tz-aware instants, ns.

    Ambiguous wall times (the repeated hour) take the first (daylight) reading; wall times
    that do not exist (the skipped hour) move forward to the first valid instant, and the
    records holding them (``ids``, else ``ctx.ids``, by position) are noted under
    ``column`` in ``ctx.skipped`` for the load's warning. A write sends the parts it did
    not edit as the server stores them (writeback/walls.py), so neither changes on the
    server unless edited."""
    ms = np.array(wall_ms, dtype="int64")
    # outside what nanoseconds hold (about 1678-2261): NaT rather than a wrapped value
    ms[(ms != NAT) & ((ms < _MIN_MS) | (ms > _MAX_MS))] = NAT
    arr = ms.view("datetime64[ms]").astype("datetime64[ns]")
    idx = pd.DatetimeIndex(arr)
    tz = ctx.timezone
    if tz is None:
        return pd.Series(idx.tz_localize("UTC"))
    daylight = np.ones(len(idx), dtype=bool)
    # the skipped wall times come out NaT; they are rare, so the shift (and the second
    # localisation it costs) is paid only when there is one: a third of this function's
    # time otherwise went to finding them by converting back
    local = idx.tz_localize(tz, ambiguous=daylight, nonexistent="NaT")
    moved = np.flatnonzero(local.isna() & (ms != NAT))
    if len(moved):
        local = idx.tz_localize(tz, ambiguous=daylight, nonexistent="shift_forward")
        if ctx.skipped is not None:
            who = ids if ids is not None else ctx.ids
            ctx.skipped.setdefault(column, []).extend(
                str(who[i]) if who is not None else str(i) for i in moved.tolist())
    return pd.Series(local)


def encode_wall(value: Any, field: FieldSpec, ctx: ReadContext) -> dict[str, Any]:
    """A frame value (tz-aware Timestamp, naive = wall clock, or text) -> the write object
    {date, hours, minutes, am_pm} in the app's wall clock."""
    if isinstance(value, str):
        try:
            value = parse_wall(value, field)
        except ValueError:
            raise bad_date(field, value) from None
    if isinstance(value, (pd.Timestamp, datetime)) and value.tzinfo is not None:
        value = pd.Timestamp(value).tz_convert(ctx.timezone or "UTC").tz_localize(None)
    try:
        wall = parse_wall(value, field)
    except ValueError:
        raise bad_date(field, value) from None
    return {"date": format_date(wall.date(), date_format(field)) if has_date(field)
            else format_date(wall.date(), "mm/dd/yyyy"),
            "hours": f"{wall.hour % 12 or 12:02d}", "minutes": f"{wall.minute:02d}",
            "am_pm": "AM" if wall.hour < 12 else "PM"}
