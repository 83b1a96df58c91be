"""timer: intervals of the wall clock, ``{total_time (ms), times: [{from, to}]}``; a
summary in the main frame and every interval in a table of its own."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from itertools import compress
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ._util import html_to_text, invalid, is_blank, is_na, raw_values, string_series
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .rawvalues import TimerValue
from .wallclock import (
    NAT,
    bad_date,
    encode_wall,
    format_time,
    instants,
    parse_date_text,
    parse_time_text,
    parse_wall,
    raw_date,
    split_range,
    time_format,
    wall_ms,
    wall_of,
)


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
            start, end = split_range(value)
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
                raise bad_date(field, value, exc) from None
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
            a = wall_of(pair.get("from"), field)
            b = wall_of(pair.get("to"), field)
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
                starts.append(NAT)
                ends.append(NAT)
                totals.append(NAT)
                continue
            a = wall_ms(times[0].get("from"), field)
            b = wall_ms(times[-1].get("to"), field)
            starts.append(a)
            ends.append(b)
            total = r.get("total_time")
            if total is None:  # sum the intervals when the total is missing
                total = sum(max(0, wall_ms(t.get("to"), field) - wall_ms(t.get("from"), field))
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
        payload = encode_wall(start, field, ctx)
        payload["to"] = encode_wall(end, field, ctx)
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
            times.append({"from": encode_wall(a, field, ctx), "to": encode_wall(b, field, ctx)})
        return {"times": times} if times else ""


def _timer_fast(raws: Sequence[Any],
                displays: Sequence[Any]) -> tuple[list[int], list[int], list[int]] | None:
    """(starts, ends, totals) when every value has the service's shape; else None."""
    if any(r is None and d for r, d in zip(raws, displays, strict=False)):
        return None
    try:
        if any(type(r) is TimerValue for r in raws):  # a raw page parsed by rawpages
            starts = [r.times[0].start.unix_timestamp if r is not None else NAT
                      for r in raws]
            ends = [r.times[-1].to.unix_timestamp if r is not None else NAT for r in raws]
            totals = [r.total_time if r is not None else NAT for r in raws]
        else:
            starts = [r["times"][0]["from"]["unix_timestamp"] if r is not None else NAT
                      for r in raws]
            ends = [r["times"][-1]["to"]["unix_timestamp"] if r is not None else NAT
                    for r in raws]
            totals = [r["total_time"] if r is not None else NAT for r in raws]
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
    if not {type(x) for x in starts} | {type(x) for x in ends} | {type(x) for x in totals} \
            <= {int}:
        return None
    return starts, ends, totals



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
        return [(wall_ms(t.get("from"), field), wall_ms(t.get("to"), field))
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
            day = parse_date_text(m.group(1), FieldSpec(key=field.key, kind="date_time"))
            h1, m1 = parse_time_text(m.group(2))
            h2, m2 = parse_time_text(m.group(3))
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
        return NAT, NAT, NAT
    total = _TIMER_TOTAL.search(display)
    total_ms = ((int(total.group(1)) * 60 + int(total.group(2))) * 60000 if total
                else sum(b - a for a, b in spans))
    return spans[0][0], spans[-1][1], total_ms
