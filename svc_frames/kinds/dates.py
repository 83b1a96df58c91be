"""date_time: the raw date object (and ``to`` for a range field), displayed per the
field's format; the wall clock it is read on is kinds/wallclock.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar

import pandas as pd

from ._util import html_to_text, invalid, is_blank, is_na, raw_values
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .celltext import Verdict, instant_verdict, loaded_verdict, value_verdict
from .rawvalues import DateEnd, DateValue
from .wallclock import (
    NAT,
    bad_date,
    display_wall,
    encode_wall,
    format_time,
    has_date,
    has_time,
    instants,
    is_range,
    parse_wall,
    raw_date,
    split_range,
    time_format,
    wall_ms,
    wall_of,
)


class DateTimeCodec(Codec):
    """date_time: raw date object (+ ``to`` for a range); display per the field's format."""

    kinds: ClassVar[tuple[str, ...]] = ("date_time",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        start, end = split_range(value)
        try:
            wall = parse_wall(start, field)
            raw = raw_date(wall, field)
            to_wall = None
            if end is not None and not is_blank(end):
                to_wall = parse_wall(end, field, base=wall.date())
                raw["to"] = raw_date(to_wall, field)
        except (ValueError, TypeError, OverflowError) as exc:
            raise bad_date(field, value, exc) from None
        if to_wall is not None and to_wall < wall:
            raise invalid(field, f"the end {end!r} is before the start {start!r}")
        return raw

    def render(self, raw: Any, field: FieldSpec) -> Any:
        start = wall_of(raw, field)
        if start is None:
            return ""
        text = display_wall(start, field)
        end = wall_of(raw.get("to"), field) if isinstance(raw, Mapping) else None
        if end is None:
            return text
        if has_date(field) and has_time(field) and end.date() == start.date():
            return f"{text} to {format_time(end, time_format(field))}"
        return f"{text} to {display_wall(end, field)}"

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
                    else (NAT if (t is dict and "to" not in r) or (t is DateValue and r.to is None)
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
            return wall_ms(r, field), wall_ms(r.get("to"), field)
        if r is None and isinstance(d, str) and d:
            return _walls_from_display(d, field)
        return NAT, NAT

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        start = values.get(field.key)
        if start is None or is_na(start):
            return ""
        payload = encode_wall(start, field, ctx)
        end = values.get(f"{field.key}.to") if is_range(field) else None
        if end is not None and not is_na(end):
            payload["to"] = encode_wall(end, field, ctx)
        return payload



def _walls_from_display(display: str, field: FieldSpec) -> tuple[int, int]:
    text = html_to_text(display).strip()
    start, _, end = text.partition(" to ")
    try:
        a = parse_wall(start, field)
    except ValueError:
        return NAT, NAT
    epoch = datetime(1970, 1, 1)
    a_ms = int((a - epoch).total_seconds() * 1000)
    if not end:
        return a_ms, NAT
    try:
        b = parse_wall(end, field, base=a.date())
    except ValueError:
        return a_ms, NAT
    return a_ms, int((b - epoch).total_seconds() * 1000)
