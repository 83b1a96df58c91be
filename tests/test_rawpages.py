"""rawpages: format=raw pages parsed into typed structs decode exactly like dicts."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from svc_frames.frames import Source, build_frames, resolve_fields
from svc_frames.http.body import parse_json
from svc_frames.kinds import codec_for, resolve_timezone
from svc_frames.kinds.base import FieldSpec, ReadContext
from svc_frames.kinds.rawvalues import (
    AssetValue,
    ConnectionItem,
    DateValue,
    SignatureValue,
    TimerValue,
)
from svc_frames.read.rawpages import RawRecord, raw_page_parser
from svc_frames.schema import Schema
from svc_frames.server.render import format_record
from svc_frames.testing import hosted_sample_dir

FIXTURES = hosted_sample_dir()
TZ = resolve_timezone("Central Time (US & Canada)")


@pytest.fixture(scope="module")
def hosted() -> tuple[list[FieldSpec], Source, list[dict[str, Any]]]:
    app = json.loads((FIXTURES / "application.json").read_text())["application"]
    records = json.loads((FIXTURES / "records.json").read_text())["records"]
    fields, _ = resolve_fields(records, Schema.of(app).all_fields(), Schema.of(app).object_fields("object_3"))
    return fields, Source("object", "object_3", fields, timezone=TZ.key), records


def page(records: list[dict[str, Any]]) -> bytes:
    return json.dumps({"total_pages": 1, "current_page": 1, "total_records": len(records),
                       "records": records}).encode()


def same(a: Any, b: Any) -> None:
    pd.testing.assert_frame_equal(a.main, b.main)
    assert a.tables.keys() == b.tables.keys()
    for name, table in a.tables.items():
        pd.testing.assert_frame_equal(table, b.tables[name])


def test_hosted_records_through_the_parser_decode_like_both(hosted: Any) -> None:
    """Every kind of the hosted sample, dates of every format and timers included."""
    fields, source, records = hosted
    parse = raw_page_parser(fields, parse_json)
    assert parse is not None
    parsed = parse(page([format_record(r, "raw") for r in records]))["records"]
    assert all(isinstance(r, RawRecord) for r in parsed)
    kinds = {f.key: f.kind for f in fields}
    dates = [r.get(k) for r in parsed for k, kind in kinds.items() if kind == "date_time"]
    assert any(isinstance(v, DateValue) for v in dates)
    timers = [r.get(k) for r in parsed for k, kind in kinds.items() if kind == "timer"]
    assert any(isinstance(v, TimerValue) for v in timers)
    for kind, struct in (("file", AssetValue), ("image", AssetValue),
                         ("signature", SignatureValue)):
        values = [r.get(k) for r in parsed for k, kd in kinds.items() if kd == kind]
        assert any(isinstance(v, struct) for v in values), kind
    links = [r.get(k) for r in parsed for k, kd in kinds.items() if kd == "connection"]
    assert any(v and isinstance(v[0], ConnectionItem) for v in links if isinstance(v, list))
    both = build_frames(records, fields, source, tz=TZ)
    raw = build_frames(parsed, fields, source, tz=TZ, raw_format=True)
    same(raw, both)


def test_a_page_that_does_not_fit_is_parsed_plainly(hosted: Any) -> None:
    fields, _, records = hosted
    parse = raw_page_parser(fields, parse_json)
    assert parse is not None
    odd = [format_record(r, "raw") for r in records[:3]]
    odd[1]["field_999"] = "a field the loader does not know"
    assert all(type(r) is dict for r in parse(page(odd))["records"])
    date_key = next(f.key for f in fields if f.kind == "date_time")
    odd = [format_record(r, "raw") for r in records[:3]]
    odd[0][date_key] = ["not", "a", "date"]
    assert all(type(r) is dict for r in parse(page(odd))["records"])
    with pytest.raises(ValueError):  # not JSON: the plain parser's error, as before
        parse(b"<html>")


def test_dates_without_a_timestamp_take_the_general_path() -> None:
    """A date without an int ``unix_timestamp`` does not fit the structs (they keep that
    member alone): its page is parsed as plain dicts and decodes through the general path,
    as a page of dicts would."""
    fields = [FieldSpec("field_1", "date_time", format={"date_format": "mm/dd/yyyy",
                                                        "time_format": "HH:MM am"}),
              FieldSpec("field_2", "timer")]
    start = {"date": "09/11/2019", "hours": "04", "minutes": "14", "am_pm": "PM"}
    end = {"date": "09/11/2019", "hours": "05", "minutes": "00", "am_pm": "PM"}
    raw = [{"id": "a", "field_1": start, "field_2": {"times": [{"from": start, "to": end}]}},
           {"id": "b", "field_1": {**start, "unix_timestamp": 1568218440000}, "field_2": ""}]
    parse = raw_page_parser(fields, parse_json)
    assert parse is not None
    parsed = parse(page(raw))["records"]
    assert all(type(r) is dict for r in parsed)
    source = Source("object", "object_1", fields, timezone=TZ.key)
    same(build_frames(parsed, fields, source, tz=TZ, raw_format=True),
         build_frames(raw, fields, source, tz=TZ, raw_format=True))
    main = build_frames(parsed, fields, source, tz=TZ, raw_format=True).main
    assert main["field_1"].iloc[0] == pd.Timestamp("2019-09-11 16:14", tz=TZ)
    assert main["field_2.total"].iloc[0] == pd.Timedelta(minutes=46)
    assert pd.isna(main["field_2"].iloc[1])


def test_a_name_like_connection_item_makes_its_page_plain() -> None:
    """A connected record without an id in its raw value (its id is only in the display
    HTML) does not fit ``ConnectionItem``: the page is parsed as dicts, so the loader sees
    that its raw values need their displays."""
    fields = [FieldSpec("field_1", "connection")]
    raw = [{"id": "a", "field_1": [{"id": "65000000629f6fbed82c07cd", "identifier": "Ann"}]},
           {"id": "b", "field_1": [{"first": "Bo", "last": "Li"}]}]
    parse = raw_page_parser(fields, parse_json)
    assert parse is not None
    parsed = parse(page(raw))["records"]
    assert all(type(r) is dict for r in parsed)
    assert not codec_for(fields[0]).decodes_raw_alone([r["field_1"] for r in parsed])
    fine = parse(page(raw[:1]))["records"]
    assert isinstance(fine[0].get("field_1")[0], ConnectionItem)
    assert codec_for(fields[0]).decodes_raw_alone([r.get("field_1") for r in fine])


def test_connection_items_make_the_table_dicts_make() -> None:
    """The connection table from ConnectionItems (the C-speed path, and the general one
    a "" among them takes) equals the table from the same items as dicts."""
    field = FieldSpec("field_1", "connection")
    codec = codec_for(field)
    items = [[{"id": "65000000629f6fbed82c07cd", "identifier": "A"}], None, [],
             [{"id": "65000000629f6fbed82c07ce", "identifier": "B"},
              {"id": "65000000629f6fbed82c07cf", "identifier": "C"}]]
    structs = [None if v is None else [ConnectionItem(**i) for i in v] for v in items]
    ids = ["r1", "r2", "r3", "r4"]
    want = codec.tables(ids, items, [None] * 4, field, ReadContext())["field_1"]
    assert list(want["connected_id"]) == ["65000000629f6fbed82c07cd",
                                          "65000000629f6fbed82c07ce",
                                          "65000000629f6fbed82c07cf"]
    for raws in (structs, [*structs[:2], "", structs[3]]):
        got = codec.tables(ids, raws, [None] * 4, field, ReadContext())["field_1"]
        pd.testing.assert_frame_equal(got, want)
