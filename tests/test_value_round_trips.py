"""Property: a value the service stores decodes into a frame cell that encodes back to
the same stored value, for every writable kind (texts with control characters, numbers to
the range of a double, wall times of any day in a daylight-saving timezone, timers of
several intervals, multi choices), and a CSV cell reads back as the value it was written
from. Offline (the codecs are the service's own rules: docs/hosted-behaviour.md §7)."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from svc_frames.kinds import FieldSpec, ReadContext, codec_for, timer, values_equal
from svc_frames.saved.csvtext import csv_text, format_column, parse_column

TZ = ZoneInfo("America/New_York")
CTX = ReadContext(TZ)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)


def _stored(kind: str, value: Any, **fmt: Any) -> tuple[FieldSpec, Any]:
    f = FieldSpec("field_1", kind, "X", format=fmt)
    return f, codec_for(f).normalize(value, f)


def _cells(f: FieldSpec, raw: Any) -> dict[str, Any]:
    codec = codec_for(f)
    cols = codec.decode([raw], [codec.render(raw, f) if raw is not None else ""], f, CTX)
    return {k: s.iloc[0] for k, s in cols.items()}


@settings(max_examples=150, deadline=None)
@given(TEXT)
def test_text_round_trips(text: str) -> None:
    f, raw = _stored("paragraph_text", text)
    assume(raw is not None)
    cells = _cells(f, raw)
    assert cells["field_1"] == raw
    assert codec_for(f).normalize(codec_for(f).encode(cells, f, CTX), f) == raw


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                 st.integers(-(2**53), 2**53)))
def test_numbers_round_trip_to_float_range(number: float) -> None:
    f, raw = _stored("number", number)
    cells = _cells(f, raw)
    assert values_equal(cells["field_1"], raw)
    back = codec_for(f).normalize(codec_for(f).encode(cells, f, CTX), f)
    assert back == raw or float(back) == float(raw)


def _exists(wall: dt.datetime) -> bool:
    """Whether the wall time is a real instant in TZ (not skipped by daylight saving)."""
    aware = wall.replace(tzinfo=TZ)
    return aware.astimezone(dt.timezone.utc).astimezone(TZ).replace(tzinfo=None) == wall


WALLS = st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2249, 12, 31)).map(
    lambda d: d.replace(second=0, microsecond=0))


def _wall_members(raw: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(raw[k] for k in ("date", "hours", "minutes", "am_pm"))


@settings(max_examples=150, deadline=None)
@given(WALLS, st.integers(0, 3000))
def test_date_ranges_round_trip_in_a_daylight_saving_zone(start: dt.datetime,
                                                         minutes: int) -> None:
    end = start + dt.timedelta(minutes=minutes)
    assume(end.year <= 2249 and _exists(start) and _exists(end))  # gaps: writeback/walls.py
    f, raw = _stored("date_time", {"date": start.strftime("%m/%d/%Y"),
                                   "hours": start.strftime("%I"), "minutes": start.strftime("%M"),
                                   "am_pm": start.strftime("%p"),
                                   "to": end.strftime("%m/%d/%Y %I:%M %p")}, calendar=True)
    cells = _cells(f, raw)
    back = codec_for(f).normalize(codec_for(f).encode(cells, f, CTX), f)
    assert _wall_members(back) == _wall_members(raw)
    assert _wall_members(back["to"]) == _wall_members(raw["to"])


@settings(max_examples=100, deadline=None)
@given(WALLS, st.lists(st.integers(1, 600), min_size=2, max_size=8))
def test_timers_keep_every_interval(start: dt.datetime, steps: list[int]) -> None:
    walls = [start]
    for s in steps:
        walls.append(walls[-1] + dt.timedelta(minutes=s))
    assume(walls[-1].year <= 2249 and all(_exists(w) for w in walls))
    pairs = [{"from": a.strftime("%m/%d/%Y %I:%M %p"), "to": b.strftime("%m/%d/%Y %I:%M %p")}
             for a, b in zip(walls[0::2], walls[1::2], strict=False)]
    f, raw = _stored("timer", {"times": pairs})
    codec = codec_for(f)
    table = codec.tables(["r1"], [raw], [codec.render(raw, f)], f, CTX)["field_1"]
    assert len(table) == len(pairs)
    back = codec.normalize(codec.encode_times(  # type: ignore[attr-defined]
        list(zip(table["from"], table["to"], strict=True)), f, CTX), f)
    assert back == raw


OPTIONS = ["a, b", "a", "b", "[x]", "c,d", "plain"]


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXT, min_size=1,
                max_size=6),
       st.lists(st.lists(st.sampled_from(OPTIONS), unique=True, max_size=4), min_size=1,
                max_size=6))
def test_csv_cells_read_back_as_written(texts: list[str], choices: list[list[str]]) -> None:
    n = min(len(texts), len(choices))
    texts, choices = texts[:n], choices[:n]
    f_text = FieldSpec("t", "paragraph_text", "T")
    f_multi = FieldSpec("m", "multiple_choice", "M", format={"type": "multi",
                                                             "options": OPTIONS})
    text_col = format_column(pd.Series(texts, dtype="string"), f_text)
    multi_col = format_column(pd.Series(choices, dtype=object), f_multi)
    csv = csv_text(["t", "m"], [text_col, multi_col])
    read = pd.read_csv(io.StringIO(csv), dtype=str, keep_default_na=False, na_filter=False)
    assert len(read) == n
    assert parse_column(read["t"].tolist(), "string", f_text) == texts
    got = parse_column(read["m"].tolist(), "list", f_multi)
    assert [g or [] for g in got] == choices


def test_timer_tables_read_from_raw_page_structs_equal_the_dict_path() -> None:
    from svc_frames.kinds.rawvalues import DateEnd, TimerSpan, TimerValue

    f = FieldSpec("field_1", "timer", "T")
    ms = 1_772_900_000_000
    structs = [TimerValue(total_time=1, times=[
        TimerSpan(start=DateEnd(unix_timestamp=ms + i), to=DateEnd(unix_timestamp=ms + 2 * i))
        for i in range(k)]) if k else None for k in (2, 0, 1, 3)]
    ids = ["a", "b", "c", "d"]
    codec = codec_for(f)
    fast = codec.tables(ids, structs, [None] * 4, f, CTX)["field_1"]
    slow = codec.tables(ids, [s.as_dict() if s else None for s in structs], [None] * 4, f,
                        CTX)["field_1"]
    assert fast.equals(slow) and fast["record_id"].tolist() == ["a", "a", "c", "d", "d", "d"]


def test_timer_tables_after_decode_equal_the_tables_read_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """In a load, ``tables`` reuses what ``decode`` built when each timer has one interval
    (``ReadContext.decoded``); the table must be the one read from the values alone, for
    struct and dict values, with blanks, and with several intervals (no reuse)."""
    from svc_frames.kinds.rawvalues import DateEnd, TimerSpan, TimerValue

    f = FieldSpec("field_1", "timer", "T")
    ms = 1_772_900_000_000

    def page(counts: list[int]) -> list[TimerValue | None]:
        return [TimerValue(total_time=1, times=[
            TimerSpan(start=DateEnd(unix_timestamp=ms + 60_000 * i + j),
                      to=DateEnd(unix_timestamp=ms + 60_000 * i + 2 * j + 1))
            for j in range(k)]) if k else None for i, k in enumerate(counts)]

    codec = codec_for(f)
    for counts in ([1, 0, 1, 1], [1, 1], [0, 0], [2, 0, 1, 3]):
        structs = page(counts)
        ids = [f"r{i}" for i in range(len(counts))]
        for raws in (structs, [s.as_dict() if s else None for s in structs]):
            alone = codec.tables(ids, raws, [None] * len(raws), f, CTX)["field_1"]
            ctx = ReadContext(TZ, ids=ids, skipped={}, decoded={})
            codec.decode(raws, [None] * len(raws), f, ctx)
            with monkeypatch.context() as m:
                if max(counts) <= 1:   # reused: the intervals are not read again
                    m.setattr(timer, "_struct_spans", _must_not_run)
                    m.setattr(timer, "timer_intervals", _must_not_run)
                reused = codec.tables(ids, raws, [None] * len(raws), f, ctx)["field_1"]
            pd.testing.assert_frame_equal(reused, alone)
            assert len(reused) == sum(counts)


def _must_not_run(*args: Any) -> Any:
    raise AssertionError("the intervals were read again")
