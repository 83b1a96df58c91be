"""date_time and timer.

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
from itertools import compress
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ._util import html_to_text, invalid, is_blank, is_na, raw_values, string_series
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .celltext import Verdict, instant_verdict, loaded_verdict, value_verdict
from .rawvalues import DateEnd, DateValue, TimerValue

DUMMY_DATE = date(2012, 1, 1)  # the date a time-only field carries
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_NAT = np.iinfo(np.int64).min
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
def _parse_date_text(text: str, field: FieldSpec) -> date:
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


def _parse_time_text(text: str) -> tuple[int, int]:
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
        hour, minute = _parse_time_text(t)
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
            day = _parse_date_text(head, field)
        except ValueError:
            continue
        if not tail:
            return datetime.combine(day, datetime.min.time())
        hour, minute = _parse_time_text(tail)
        return datetime.combine(day, datetime.min.time()).replace(hour=hour, minute=minute)
    raise ValueError(text)


def _parse_object(obj: Mapping[str, Any], field: FieldSpec, base: date | None) -> datetime:
    if obj.get("date") not in (None, ""):
        day = _parse_date_text(str(obj["date"]), field)
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


def _split_range(value: Any) -> tuple[Any, Any]:
    if isinstance(value, str) and " to " in value:
        start, _, end = value.partition(" to ")
        return start, end
    if isinstance(value, Mapping) and value.get("to") not in (None, "", {}):
        rest = {k: v for k, v in value.items() if k != "to"}
        return rest, value["to"]
    return value, None


def _bad_date(field: FieldSpec, value: Any, why: BaseException | None = None) -> Exception:
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


# ---- the codecs ------------------------------------------------------------------------------
class DateTimeCodec(Codec):
    """date_time: raw date object (+ ``to`` for a range); display per the field's format."""

    kinds: ClassVar[tuple[str, ...]] = ("date_time",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        start, end = _split_range(value)
        try:
            wall = parse_wall(start, field)
            raw = raw_date(wall, field)
            to_wall = None
            if end is not None and not is_blank(end):
                to_wall = parse_wall(end, field, base=wall.date())
                raw["to"] = raw_date(to_wall, field)
        except (ValueError, TypeError, OverflowError) as exc:
            raise _bad_date(field, value, exc) from None
        if to_wall is not None and to_wall < wall:
            raise invalid(field, f"the end {end!r} is before the start {start!r}")
        return raw

    def render(self, raw: Any, field: FieldSpec) -> Any:
        start = _wall_of(raw, field)
        if start is None:
            return ""
        text = _display(start, field)
        end = _wall_of(raw.get("to"), field) if isinstance(raw, Mapping) else None
        if end is None:
            return text
        if has_date(field) and has_time(field) and end.date() == start.date():
            return f"{text} to {format_time(end, time_format(field))}"
        return f"{text} to {_display(end, field)}"

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and ("unix_timestamp" in raw or "date" in raw
                                             and "am_pm" in raw)

    def columns(self, field: FieldSpec) -> list[str]:
        return [field.key, f"{field.key}.to"] if is_range(field) else [field.key]

    def same_cell(self, text: str, loaded: Any, column: str, field: FieldSpec,
                  ctx: ReadContext, shown: str = "") -> Verdict:
        """The same instant written any way (another format, another offset, none: the
        application's wall clock); for a field that holds no time of day, the same day."""
        shared = loaded_verdict(text, loaded)
        if shared is not None:
            return shared
        if not isinstance(loaded, (pd.Timestamp, datetime)):
            return value_verdict(text, loaded, ctx.timezone, shown)
        return instant_verdict(text, loaded, ctx.timezone, day_only=not has_time(field))

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        # fast paths: a dict, or a DateValue (a raw page parsed by rawpages), with an int
        # unix_timestamp; anything else goes the slow way
        starts = [ms if ((t := type(r)) is dict and type(ms := r.get("unix_timestamp")) is int)
                  or (t is DateValue and type(ms := r.unix_timestamp) is int)
                  else self._slow(r, d, field)[0] for r, d in zip(raws, displays, strict=False)]
        want_to = is_range(field)
        ends: list[int] = []
        if want_to:
            ends = [ms if ((t := type(r)) is dict and type(to := r.get("to")) is dict
                           and type(ms := to.get("unix_timestamp")) is int)
                    or (t is DateValue and type(to := r.to) is DateEnd
                        and type(ms := to.unix_timestamp) is int)
                    else (_NAT if (t is dict and "to" not in r) or (t is DateValue and r.to is None)
                          else self._slow(r, d, field)[1])
                    for r, d in zip(raws, displays, strict=False)]
        out = {field.key: instants(starts, ctx, field.key)}
        if want_to:
            out[f"{field.key}.to"] = instants(ends, ctx, f"{field.key}.to")
        return out

    @staticmethod
    def _slow(r: Any, d: Any, field: FieldSpec) -> tuple[int, int]:
        if isinstance(r, DateEnd):
            r = r.as_dict()
        if isinstance(r, dict):
            return _ms(r, field), _ms(r.get("to"), field)
        if r is None and isinstance(d, str) and d:
            return _walls_from_display(d, field)
        return _NAT, _NAT

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        start = values.get(field.key)
        if start is None or is_na(start):
            return ""
        payload = _encode_wall(start, field, ctx)
        end = values.get(f"{field.key}.to") if is_range(field) else None
        if end is not None and not is_na(end):
            payload["to"] = _encode_wall(end, field, ctx)
        return payload


class TimerCodec(Codec):
    """timer: ``{total_time (ms), times: [{from, to}]}``; writes like date_time (one
    interval), or ``{times: [{from, to}, ...]}``.

    The main frame holds a summary (first start, last end, total); every interval is in
    the exploded table ``tables[field_N]`` (record_id, from, to), the truth for a timer
    of several intervals: ``encode_times`` writes them all."""

    kinds: ClassVar[tuple[str, ...]] = ("timer",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        if isinstance(value, Mapping) and "times" in value:
            pairs = value.get("times") or []
            if not isinstance(pairs, list):
                raise invalid(field, f"times must be a list of {{from, to}}, got {pairs!r}")
        else:
            start, end = _split_range(value)
            pairs = [{"from": start, "to": end}]
        times: list[dict[str, Any]] = []
        total = 0
        for pair in pairs:
            if not isinstance(pair, Mapping) or is_blank(pair.get("from")) \
                    or is_blank(pair.get("to")):
                raise invalid(field, f"a timer needs a start and an end, got {value!r}")
            try:
                a = parse_wall(pair["from"], field)
                b = parse_wall(pair["to"], field, base=a.date())
                interval = {"from": raw_date(a, field), "to": raw_date(b, field)}
            except (ValueError, TypeError, OverflowError) as exc:
                raise _bad_date(field, value, exc) from None
            if b < a:
                raise invalid(field, f"the end is before the start in {value!r}")
            total += int((b - a).total_seconds() * 1000)
            times.append(interval)
        return {"times": times, "total_time": total} if times else None

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, Mapping):
            return ""
        fmt = time_format(field)
        lines = []
        for pair in raw.get("times") or []:
            a = _wall_of(pair.get("from"), field)
            b = _wall_of(pair.get("to"), field)
            if a is None or b is None:
                continue
            lines.append(f"<span>{a:%m/%d/%y}</span>&nbsp;{format_time(a, fmt)} to "
                         f"{format_time(b, fmt)}")
        if not lines:
            return ""
        minutes = int(raw.get("total_time") or 0) // 60000
        return "<br />".join(lines) + f" = {minutes // 60}:{minutes % 60:02d} hours"

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, Mapping) and "times" in raw

    def columns(self, field: FieldSpec) -> list[str]:
        return [field.key, f"{field.key}.to", f"{field.key}.total"]

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        fast = _timer_fast(raws, displays)
        if fast is not None:
            starts, ends, totals = fast
            out = self._series(starts, ends, totals, field, ctx)
            if ctx.decoded is not None:   # tables() of the same values reuses the instants
                ctx.decoded[field.key] = out
            return out
        # TimerValues (raw pages parsed by rawpages) the fast path did not take: as dicts
        raws = [r.as_dict() if type(r) is TimerValue else r for r in raws]
        starts = []
        ends = []
        totals = []
        for r, d in zip(raws, displays, strict=False):
            try:  # fast path: the shape the service answers
                times = r["times"]
                a_ms = times[0]["from"]["unix_timestamp"]
                b_ms = times[-1]["to"]["unix_timestamp"]
                t_ms = r["total_time"]
                if type(a_ms) is int and type(b_ms) is int and type(t_ms) is int:
                    starts.append(a_ms)
                    ends.append(b_ms)
                    totals.append(t_ms)
                    continue
            except (KeyError, TypeError, IndexError):
                pass
            times = r.get("times") if isinstance(r, dict) else None
            if not times and r is None and isinstance(d, str) and d:
                a_ms, b_ms, t_ms = _timer_from_display(d, field)
                starts.append(a_ms)
                ends.append(b_ms)
                totals.append(t_ms)
                continue
            if not times:
                starts.append(_NAT)
                ends.append(_NAT)
                totals.append(_NAT)
                continue
            a = _ms(times[0].get("from"), field)
            b = _ms(times[-1].get("to"), field)
            starts.append(a)
            ends.append(b)
            total = r.get("total_time")
            if total is None:  # sum the intervals when the total is missing
                total = sum(max(0, _ms(t.get("to"), field) - _ms(t.get("from"), field))
                            for t in times)
            totals.append(int(total))
        return self._series(starts, ends, totals, field, ctx)

    @staticmethod
    def _series(starts: Sequence[int], ends: Sequence[int], totals: Sequence[int],
                field: FieldSpec, ctx: ReadContext) -> dict[str, pd.Series]:
        return {field.key: instants(starts, ctx, field.key),
                f"{field.key}.to": instants(ends, ctx, f"{field.key}.to"),
                f"{field.key}.total": pd.Series(
                    np.array(totals, dtype="int64").view("timedelta64[ms]")
                    .astype("timedelta64[ns]"))}

    def tables(self, ids: Sequence[str], raws: Sequence[Any], displays: Sequence[Any],
               field: FieldSpec, ctx: ReadContext) -> dict[str, pd.DataFrame]:
        raws = raw_values(raws, displays)
        summary = ctx.decoded.get(field.key) if ctx.decoded is not None else None
        if summary is not None and _one_interval_each(raws):
            # the usual page: each timer's one interval is its summary's start and end,
            # decoded already (about two thirds of this table's cost otherwise)
            held = np.fromiter((r is not None for r in raws), dtype=bool, count=len(raws))
            return {field.key: pd.DataFrame(
                {"record_id": string_series(list(compress(ids, held))),
                 "from": summary[field.key].array[held],
                 "to": summary[f"{field.key}.to"].array[held]}, copy=False)}
        spans = _struct_spans(ids, raws)
        if spans is None:
            spans = ([], [], [])
            for rid, r, d in zip(ids, raws, displays, strict=False):
                for a, b in timer_intervals(r, d, field):
                    spans[0].append(rid)
                    spans[1].append(a)
                    spans[2].append(b)
        rec, starts, ends = spans
        return {field.key: pd.DataFrame({"record_id": string_series(rec),
                                         "from": instants(starts, ctx, field.key, rec),
                                         "to": instants(ends, ctx, field.key, rec)})}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        start, end = values.get(field.key), values.get(f"{field.key}.to")
        if start is None or is_na(start):
            return ""
        if end is None or is_na(end):
            raise invalid(field, f"a timer needs an end ({field.key}.to) with its start")
        payload = _encode_wall(start, field, ctx)
        payload["to"] = _encode_wall(end, field, ctx)
        return payload

    def encode_times(self, intervals: Sequence[tuple[Any, Any]], field: FieldSpec,
                     ctx: ReadContext) -> Any:
        """Every interval (start, end) of one record -> ``{times: [{from, to}, ...]}``
        ("" for none); InvalidValue for an interval without both ends or ending first."""
        times = []
        for a, b in intervals:
            if a is None or is_na(a) or b is None or is_na(b):
                raise invalid(field, f"an interval needs a start and an end, got {a!r}, {b!r}")
            if pd.Timestamp(b) < pd.Timestamp(a):
                raise invalid(field, f"an interval ends ({b}) before it starts ({a})")
            times.append({"from": _encode_wall(a, field, ctx), "to": _encode_wall(b, field, ctx)})
        return {"times": times} if times else ""


def _timer_fast(raws: Sequence[Any],
                displays: Sequence[Any]) -> tuple[list[int], list[int], list[int]] | None:
    """(starts, ends, totals) when every value has the service's shape; else None."""
    if any(r is None and d for r, d in zip(raws, displays, strict=False)):
        return None
    try:
        if any(type(r) is TimerValue for r in raws):  # a raw page parsed by rawpages
            starts = [r.times[0].start.unix_timestamp if r is not None else _NAT
                      for r in raws]
            ends = [r.times[-1].to.unix_timestamp if r is not None else _NAT for r in raws]
            totals = [r.total_time if r is not None else _NAT for r in raws]
        else:
            starts = [r["times"][0]["from"]["unix_timestamp"] if r is not None else _NAT
                      for r in raws]
            ends = [r["times"][-1]["to"]["unix_timestamp"] if r is not None else _NAT
                    for r in raws]
            totals = [r["total_time"] if r is not None else _NAT for r in raws]
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
    if not {type(x) for x in starts} | {type(x) for x in ends} | {type(x) for x in totals} \
            <= {int}:
        return None
    return starts, ends, totals


# ---- helpers shared by both codecs ----------------------------------------------------------
def _wall_of(raw: Any, field: FieldSpec) -> datetime | None:
    if not isinstance(raw, Mapping):
        return None
    ms = raw.get("unix_timestamp")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        return datetime(1970, 1, 1) + timedelta(milliseconds=int(ms))
    try:
        return _parse_object(raw, field, None)
    except (ValueError, TypeError):
        return None


def _display(dt: datetime, field: FieldSpec) -> str:
    parts = [format_date(dt.date(), date_format(field))] if has_date(field) else []
    if has_time(field):
        parts.append(format_time(dt, time_format(field)))
    return " ".join(parts)


def _ms(raw: Any, field: FieldSpec) -> int:
    """Wall-clock milliseconds of a raw date object (NaT sentinel when absent)."""
    if not isinstance(raw, dict):
        return _NAT
    ms = raw.get("unix_timestamp")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        return int(ms)
    wall = _wall_of(raw, field)
    return _NAT if wall is None else int((wall - datetime(1970, 1, 1)).total_seconds() * 1000)


def _walls_from_display(display: str, field: FieldSpec) -> tuple[int, int]:
    text = html_to_text(display).strip()
    start, _, end = text.partition(" to ")
    try:
        a = parse_wall(start, field)
    except ValueError:
        return _NAT, _NAT
    epoch = datetime(1970, 1, 1)
    a_ms = int((a - epoch).total_seconds() * 1000)
    if not end:
        return a_ms, _NAT
    try:
        b = parse_wall(end, field, base=a.date())
    except ValueError:
        return a_ms, _NAT
    return a_ms, int((b - epoch).total_seconds() * 1000)


_TIMER_LINE = re.compile(r"(\d{1,2}/\d{1,2}/\d{2,4})\s*(.+?)\s+to\s+(.+?)\s*(?:=|$)")
_TIMER_TOTAL = re.compile(r"=\s*(\d+):(\d{2})\s*hours")


def _one_interval_each(raws: Sequence[Any]) -> bool:
    """Whether every timer value held (not None) has exactly one interval."""
    try:
        return all(len((r.times if type(r) is TimerValue else r["times"]) or ()) == 1
                   for r in raws if r is not None)
    except (KeyError, TypeError):
        return False


def _struct_spans(ids: Sequence[str], raws: Sequence[Any]
                  ) -> tuple[list[str], list[int], list[int]] | None:
    """(record ids, starts, ends) of every interval when the values are rawpages'
    TimerValues (or None) with int timestamps: the common case, read without dicts."""
    rec: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    try:
        for rid, r in zip(ids, raws, strict=False):
            if r is None:
                continue
            if type(r) is not TimerValue:
                return None
            for t in r.times or ():
                a, b = t.start.unix_timestamp, t.to.unix_timestamp  # type: ignore[union-attr]
                if type(a) is not int or type(b) is not int:
                    return None
                rec.append(rid)
                starts.append(a)
                ends.append(b)
    except AttributeError:   # an end that is text, not a DateEnd
        return None
    return rec, starts, ends


def timer_intervals(raw: Any, display: Any, field: FieldSpec) -> list[tuple[int, int]]:
    """Every interval of one timer value as wall-clock ms (start, end), in order."""
    if type(raw) is TimerValue:
        raw = raw.as_dict()
    if isinstance(raw, Mapping):
        return [(_ms(t.get("from"), field), _ms(t.get("to"), field))
                for t in raw.get("times") or [] if isinstance(t, Mapping)]
    if raw is None and isinstance(display, str) and display:
        return _display_intervals(display, field)
    return []


def _display_intervals(display: str, field: FieldSpec) -> list[tuple[int, int]]:
    epoch = datetime(1970, 1, 1)
    out: list[tuple[int, int]] = []
    for line in re.split(r"<br\s*/?>", display, flags=re.I):
        m = _TIMER_LINE.search(html_to_text(line).replace("\xa0", " "))
        if not m:
            continue
        try:
            day = _parse_date_text(m.group(1), FieldSpec(key=field.key, kind="date_time"))
            h1, m1 = _parse_time_text(m.group(2))
            h2, m2 = _parse_time_text(m.group(3))
        except ValueError:
            continue
        base = datetime.combine(day, datetime.min.time())
        a, b = base.replace(hour=h1, minute=m1), base.replace(hour=h2, minute=m2)
        out.append((int((a - epoch).total_seconds() * 1000),
                    int((b - epoch).total_seconds() * 1000)))
    return out


def _timer_from_display(display: str, field: FieldSpec) -> tuple[int, int, int]:
    """(first start, last end, total) in ms from a timer's display HTML."""
    spans = _display_intervals(display, field)
    if not spans:
        return _NAT, _NAT, _NAT
    total = _TIMER_TOTAL.search(display)
    total_ms = ((int(total.group(1)) * 60 + int(total.group(2))) * 60000 if total
                else sum(b - a for a, b in spans))
    return spans[0][0], spans[-1][1], total_ms


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
    ms[(ms != _NAT) & ((ms < _MIN_MS) | (ms > _MAX_MS))] = _NAT
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
    moved = np.flatnonzero(local.isna() & (ms != _NAT))
    if len(moved):
        local = idx.tz_localize(tz, ambiguous=daylight, nonexistent="shift_forward")
        if ctx.skipped is not None:
            who = ids if ids is not None else ctx.ids
            ctx.skipped.setdefault(column, []).extend(
                str(who[i]) if who is not None else str(i) for i in moved.tolist())
    return pd.Series(local)


def _encode_wall(value: Any, field: FieldSpec, ctx: ReadContext) -> dict[str, Any]:
    """A frame value (tz-aware Timestamp, naive = wall clock, or text) -> the write object
    {date, hours, minutes, am_pm} in the app's wall clock."""
    if isinstance(value, str):
        try:
            value = parse_wall(value, field)
        except ValueError:
            raise _bad_date(field, value) from None
    if isinstance(value, (pd.Timestamp, datetime)) and value.tzinfo is not None:
        value = pd.Timestamp(value).tz_convert(ctx.timezone or "UTC").tz_localize(None)
    try:
        wall = parse_wall(value, field)
    except ValueError:
        raise _bad_date(field, value) from None
    return {"date": format_date(wall.date(), date_format(field)) if has_date(field)
            else format_date(wall.date(), "mm/dd/yyyy"),
            "hours": f"{wall.hour % 12 or 12:02d}", "minutes": f"{wall.minute:02d}",
            "am_pm": "AM" if wall.hour < 12 else "PM"}
