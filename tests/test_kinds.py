"""Field-kind codecs against the hosted fixtures: render, normalize, decode, encode, infer.

The hooks below stand in for the local service's record and asset tables (what a codec
borrows while normalizing); the fixtures are real hosted responses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from svc_frames.errors import ConfigurationError, InvalidValue, ReadOnlyField
from svc_frames.kinds import (
    KINDS,
    READ_ONLY_KINDS,
    FieldSpec,
    ReadContext,
    codec_for,
    infer_field,
    resolve_timezone,
    values_equal,
)
from svc_frames.kinds.tz import DISPLAY_NAMES
from svc_frames.testing import hosted_sample_dir

FIXTURES = hosted_sample_dir()

APP = json.loads((FIXTURES / "application.json").read_text())["application"]
RECORDS: list[dict[str, Any]] = json.loads((FIXTURES / "records.json").read_text())["records"]
OBJ3 = next(o for o in APP["objects"] if o["key"] == "object_3")
FIELDS = {f["key"]: FieldSpec.from_schema(f, "object_3") for f in OBJ3["fields"]}
CHICAGO = ZoneInfo("America/Chicago")
CTX = ReadContext(timezone=CHICAGO)
IDS = [r["id"] for r in RECORDS]

ASSETS = {r[k + "_raw"]["id"]: r[k + "_raw"] for r in RECORDS for k in ("field_17", "field_18")
          if k + "_raw" in r}


class Hooks:
    """What the local service lends a codec: connected identifiers and placed assets."""

    app_id = "app"
    base_url = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.records = {"5ea46ad2b6ce4b0015000ae8": "Johnny C", "r2": "Ann Lee", "r3": "Bo"}

    def connected(self, object_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        out = []
        for i in ids:
            if i not in self.records:
                # as the local service's store does: it knows no field, the codec names it
                raise InvalidValue(f"unknown record {i} of {object_key}")
            out.append({"id": i, "identifier": self.records[i]})
        return out

    def asset(self, asset_id: str, field_key: str) -> dict[str, Any]:
        if asset_id not in ASSETS:
            raise InvalidValue(f"unknown asset {asset_id}", field=field_key)
        return dict(ASSETS[asset_id], field_key=field_key)


HOOKS = Hooks()


def column(key: str) -> tuple[list[Any], list[Any]]:
    return [r.get(key + "_raw") for r in RECORDS], [r.get(key, "") for r in RECORDS]


def decode(key: str, ctx: ReadContext = CTX) -> dict[str, pd.Series]:
    field = FIELDS[key]
    raws, displays = column(key)
    return codec_for(field).decode(raws, displays, field, ctx)


def spec(kind: str, key: str = "field_1", **fmt: Any) -> FieldSpec:
    return FieldSpec(key=key, kind=kind, format=fmt)


def _stored(key: str, *, empty_lists: bool = False) -> list[tuple[dict[str, Any], Any]]:
    """(record, raw) of the fixture records holding a value of ``key`` (``[]`` is no
    value unless ``empty_lists``)."""
    return [(rec, rec[key + "_raw"]) for rec in RECORDS
            if rec.get(key + "_raw") is not None
            and (empty_lists or rec[key + "_raw"] != [])]


# ---- render: the local service must display exactly what the hosted service does ----------
@pytest.mark.parametrize("key", sorted(FIELDS))
def test_render_equals_every_fixture_display(key: str) -> None:
    field = FIELDS[key]
    codec = codec_for(field)
    checked = 0
    for rec, raw in _stored(key):
        assert codec.render(raw, field) == rec[key], (rec["id"], key)
        checked += 1
    assert checked, f"no fixture value for {key}"


def test_render_details_beyond_the_fixtures() -> None:
    link = spec("link")  # no target in the format: docs/hosted-behaviour.md §7.2's target="_blank"
    assert codec_for(link).render({"url": "https://a.b/c"}, link) == \
        '<a href="https://a.b/c" target="_blank">https://a.b/c</a>'
    assert codec_for(link).render({"url": "https://a.b", "label": "A&B"}, link) == \
        '<a href="https://a.b" target="_blank">A&amp;B</a>'
    name = spec("name", format="First Last")
    assert codec_for(name).render({"first": "Ann", "middle": "M", "last": "Lee"}, name) == \
        "Ann Lee"
    rng = spec("date_time", calendar=True, time_format="Ignore Time")
    raw = codec_for(rng).normalize("09/11/2019 to 09/13/2019", rng)
    assert codec_for(rng).render(raw, rng) == "09/11/2019 to 09/13/2019"
    two_days = spec("date_time", calendar=True)
    raw = codec_for(two_days).normalize("09/11/2019 4:14pm to 09/12/2019 1:00am", two_days)
    assert codec_for(two_days).render(raw, two_days) == "09/11/2019 4:14pm to 09/12/2019 1:00am"
    assert codec_for(spec("password")).render("secret", spec("password")) == "*****"
    cur = spec("currency", format="$")
    assert codec_for(cur).render("1234.5", cur) == "$1,234.50"
    multi = spec("multiple_choice", type="multi")
    assert codec_for(multi).render(["A", "B"], multi) == "A, B"
    conn = FieldSpec(key="f", kind="connection", relationship={"object": "o", "has": "many"})
    both = [{"id": "a1", "identifier": "A"}, {"id": "b2", "identifier": "B"}]
    assert codec_for(conn).render(both, conn) == \
        '<span class="a1">A</span><br /><span class="b2">B</span>'


# ---- normalize: write inputs -> the hosted raw shapes ------------------------------------------
@pytest.mark.parametrize("key", sorted(k for k, f in FIELDS.items()
                                       if f.kind not in READ_ONLY_KINDS))
def test_normalize_of_a_fixture_raw_gives_it_back(key: str) -> None:
    """Every raw shape the hosted service stores is itself an accepted write input."""
    field = FIELDS[key]
    codec = codec_for(field)
    for rec, raw in _stored(key):
        assert codec.normalize(raw, field, HOOKS) == raw, (rec["id"], key)


@pytest.mark.parametrize("key", ["field_12", "field_13", "field_14", "field_15", "field_37"])
def test_date_display_strings_normalize_to_the_fixture_raw(key: str) -> None:
    field = FIELDS[key]
    for rec in RECORDS:
        if key + "_raw" in rec:
            assert codec_for(field).normalize(rec[key], field) == rec[key + "_raw"]


@pytest.mark.parametrize(("kind", "fmt", "value", "expected"), [
    ("short_text", {}, "hi", "hi"),
    ("short_text", {}, 12, "12"),
    ("number", {}, "2,555", 2555),
    ("number", {}, "1.5", 1.5),
    ("number", {}, 7, 7),
    ("currency", {}, 100.43, "100.43"),
    ("currency", {}, "$1,000", "1000.00"),
    ("rating", {"max": "5"}, "4", 4),
    ("boolean", {}, "on", True),
    ("boolean", {}, "No", False),
    ("boolean", {}, False, False),
    ("multiple_choice", {"options": ["A", "B"]}, "A", "A"),
    ("multiple_choice", {"options": ["A", "B"], "type": "multi"}, "B", ["B"]),
    ("multiple_choice", {"type": "multi"}, ["x", "y", "x"], ["x", "y"]),
    ("user_roles", {}, ["profile_1", "profile_12"], ["profile_1", "profile_12"]),
    ("name", {}, {"first": "Ann", "last": "Lee"}, {"first": "Ann", "last": "Lee"}),
    ("name", {}, {"title": "Dr", "first": "A", "middle": "B", "last": "C"},
     {"title": "Dr", "first": "A", "middle": "B", "last": "C"}),
    ("email", {}, "a@b.co", {"email": "a@b.co"}),
    ("email", {}, {"email": "a@b.co", "label": "A"}, {"email": "a@b.co", "label": "A"}),
    ("link", {}, "https://x.org", {"url": "https://x.org"}),
    ("link", {}, {"url": "https://x.org", "label": "X"}, {"url": "https://x.org", "label": "X"}),
    ("phone", {"format": "(999) 999-9999"}, "5125551234",
     {"area": "512", "number": "5551234", "full": "5125551234", "formatted": "(512) 555-1234"}),
    ("phone", {}, "(512) 555-1234 x12", {"area": "512", "number": "5551234",
                                          "full": "5125551234", "formatted": "(512) 555-1234",
                                          "ext": "12"}),
    ("phone", {}, "+1 512 555 1234", {"area": "512", "number": "5551234",
                                       "full": "5125551234", "formatted": "(512) 555-1234"}),
    ("address", {}, {"street": "8700 Cameron Rd", "city": "Austin", "state": "TX",
                     "zip": "78754"},
     {"street": "8700 Cameron Rd", "street2": "", "city": "Austin", "state": "TX",
      "zip": "78754"}),
    ("address", {}, {"latitude": "30.4", "longitude": -97.2},
     {"latitude": 30.4, "longitude": -97.2}),
    ("address", {"format": "international_country"},
     {"street": "1 A St", "city": "London", "country": "United Kingdom", "latitude": 51,
      "longitude": 0},
     {"street": "1 A St", "street2": "", "city": "London", "state": "", "zip": "",
      "country": "United Kingdom", "latitude": 51, "longitude": 0}),
    ("image", {"source": "url"}, "https://x.org/a.png", "https://x.org/a.png"),
    ("signature", {}, "<svg></svg>", {"svg": "<svg></svg>"}),
    ("signature", {}, {"svg": "<svg/>", "base30": "1A"}, {"base30": "1A", "svg": "<svg/>"}),
    ("password", {}, "s3cret!", "s3cret!"),
])
def test_normalize_accepts(kind: str, fmt: dict[str, Any], value: Any, expected: Any) -> None:
    field = spec(kind, **fmt)
    assert codec_for(field).normalize(value, field, HOOKS) == expected


def test_normalize_dates_build_the_full_raw_object() -> None:
    field = FIELDS["field_15"]  # a range with time, "HH:MM am"
    expected = RECORDS[0]["field_15_raw"]
    codec = codec_for(field)
    assert codec.normalize("09/11/2019 4:14pm to 5:14pm", field) == expected
    assert codec.normalize({"date": "09/11/2019", "hours": "4", "minutes": 14, "am_pm": "pm",
                            "to": {"date": "09/11/2019", "hours": 5, "minutes": "14",
                                   "am_pm": "PM"}}, field) == expected
    assert codec.normalize({"date": "09/11/2019", "hours": 16, "minutes": 14,
                            "to": {"hours": 17, "minutes": 14}}, field) == expected
    assert codec.normalize("2019-09-11T16:14:00 to 2019-09-11T17:14", field) == expected
    date_only = FIELDS["field_12"]
    raw = codec_for(date_only).normalize("09/11/2019", date_only)
    assert raw == RECORDS[0]["field_12_raw"]
    assert (raw["hours"], raw["am_pm"], raw["time"]) == ("12", "AM", 720)
    time_only = FIELDS["field_14"]
    assert codec_for(time_only).normalize("4:14pm", time_only) == RECORDS[0]["field_14_raw"]
    dmy = spec("date_time", date_format="dd/mm/yyyy")
    raw = codec_for(dmy).normalize("11/09/2019 4:14pm", dmy)
    assert (raw["date"], raw["unix_timestamp"]) == ("11/09/2019", 1568218440000)


def test_normalize_timer_and_its_total() -> None:
    field = FIELDS["field_16"]
    codec = codec_for(field)
    raw = codec.normalize("09/11/2019 4:14pm to 5:14pm", field)
    assert raw["total_time"] == 3_600_000
    assert codec.render(raw, field) == RECORDS[0]["field_16"]
    two = codec.normalize({"times": [{"from": "09/11/2019 4:00pm", "to": "09/11/2019 4:30pm"},
                                     {"from": "09/12/2019 1:00pm", "to": "3:00pm"}]}, field)
    assert two["total_time"] == 150 * 60_000
    assert codec.render(two, field).endswith(" = 2:30 hours")


def test_normalize_connections_and_assets_use_the_service_hooks() -> None:
    one = FIELDS["field_128"]  # has: one
    codec = codec_for(one)
    assert codec.normalize("5ea46ad2b6ce4b0015000ae8", one, HOOKS) == \
        RECORDS[0]["field_128_raw"]
    assert codec.normalize(["5ea46ad2b6ce4b0015000ae8"], one, HOOKS) == \
        RECORDS[0]["field_128_raw"]
    assert codec.normalize([], one, HOOKS) == []
    assert codec.normalize("", one, HOOKS) == []
    with pytest.raises(InvalidValue, match="field_128.*one record"):
        codec.normalize(["r2", "r3"], one, HOOKS)
    many = FieldSpec(key="field_9", kind="connection",
                     relationship={"object": "object_2", "has": "many"})
    assert codec.normalize(["r2", {"id": "r3"}], many, HOOKS) == [
        {"id": "r2", "identifier": "Ann Lee"}, {"id": "r3", "identifier": "Bo"}]
    file_field = FIELDS["field_17"]
    asset_id = RECORDS[0]["field_17_raw"]["id"]
    assert codec_for(file_field).normalize(asset_id, file_field, HOOKS) == \
        RECORDS[0]["field_17_raw"]
    with pytest.raises(InvalidValue, match="unknown asset"):
        codec_for(file_field).normalize("nope", file_field, HOOKS)


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in READ_ONLY_KINDS])
@pytest.mark.parametrize("empty", ["", None, [], "   "])
def test_empty_input_clears(kind: str, empty: Any) -> None:
    field = FieldSpec(key="field_5", kind=kind, relationship={"object": "object_1"})
    expected = [] if kind == "connection" else None
    assert codec_for(field).normalize(empty, field, HOOKS) == expected


@pytest.mark.parametrize(("kind", "fmt", "value", "why"), [
    ("short_text", {}, {"a": 1}, "expected text"),
    ("number", {}, "12abc", "expected a number"),
    ("number", {}, True, "boolean"),
    ("number", {}, float("inf"), "finite"),
    ("number", {}, "1e400", "finite"),
    ("number", {}, 10**400, "out of range"),
    ("currency", {}, "ten", "expected a number"),
    ("rating", {"max": "3"}, 4, "between 0 and 3"),
    ("rating", {"max": "5"}, 2.5, "multiple of 1"),
    ("boolean", {}, "maybe", "yes/no"),
    ("multiple_choice", {"options": ["A"]}, "Z", "not one of the options"),
    ("multiple_choice", {}, ["A", "B"], "single choice takes one value"),
    ("user_roles", {}, ["admin"], "role keys"),
    ("name", {}, 42, "name object"),
    ("name", {}, {"first": "A", "nick": "B"}, "unknown name parts"),
    ("email", {}, "not-an-email", "not an email"),
    ("email", {}, {"email": "a@b.c", "x": 1}, "unknown email members"),
    ("link", {}, "has spaces in it", "not a URL"),
    ("phone", {}, "12345", "10-digit"),
    ("phone", {}, "call me", "not a phone"),
    ("address", {}, "8700 Cameron Rd", "address object"),
    ("address", {}, {"street": "x", "planet": "Mars"}, "unknown address parts"),
    ("address", {}, {"latitude": 91, "longitude": 0}, "latitude must be"),
    ("address", {}, {"latitude": 10}, "go together"),
    ("date_time", {}, "31/31/2019", "expected a date"),
    ("date_time", {}, "01/01/0001", "outside 1700-2250"),
    ("date_time", {}, "09/11/2019 25:00", "expected a date"),
    ("date_time", {}, "09/11/2019 4pm to 09/10/2019 4pm", "before the start"),
    ("date_time", {}, {"date": "09/11/2019", "hours": "13", "am_pm": "PM"}, "expected a date"),
    ("timer", {}, {"times": [{"from": "09/11/2019 4pm"}]}, "start and an end"),
    ("image", {"source": "url"}, 12, "image URL"),
    ("file", {}, 12, "id of an uploaded file"),
    ("signature", {}, "not svg", "SVG"),
    ("password", {}, 1234, "must be text"),
    ("connection", {}, ["bad id!"], "record ids"),
])
def test_normalize_rejects_naming_the_field(kind: str, fmt: dict[str, Any], value: Any,
                                            why: str) -> None:
    field = FieldSpec(key="field_77", kind=kind, format=fmt,
                      relationship={"object": "object_2", "has": "many"})
    with pytest.raises(InvalidValue, match=why) as info:
        codec_for(field).normalize(value, field, HOOKS)
    assert info.value.field == "field_77"
    assert "field_77" in info.value.message


@pytest.mark.parametrize("kind", sorted(READ_ONLY_KINDS))
def test_read_only_kinds_refuse_writes(kind: str) -> None:
    field = spec(kind, key="field_3")
    codec = codec_for(field)
    with pytest.raises(ReadOnlyField, match="field_3"):
        codec.normalize(5, field, HOOKS)
    with pytest.raises(ReadOnlyField, match="field_3"):
        codec.encode({"field_3": 5}, field, CTX)


# ---- decode: fixture records -> typed columns ----------------------------------------------------
EXPECTED_DTYPES = {
    "short_text": "string", "rich_text": "string", "concatenation": "string",
    "number": "Float64", "currency": "Float64", "equation": "Float64", "rating": "Float64",
    "auto_increment": "Int64", "boolean": "boolean", "email": "string", "phone": "string",
    "link": "string", "signature": "string",
}


@pytest.mark.parametrize("key", sorted(FIELDS))
def test_decode_fixture_columns_and_dtypes(key: str) -> None:
    field = FIELDS[key]
    cols = decode(key)
    assert list(cols) == codec_for(field).columns(field)
    for name, series in cols.items():
        assert len(series) == len(RECORDS)
        dtype = str(series.dtype)
        if field.kind in EXPECTED_DTYPES:
            assert dtype == EXPECTED_DTYPES[field.kind], name
        elif field.kind in ("date_time", "timer") and not name.endswith(".total"):
            assert dtype == "datetime64[ns, America/Chicago]", name
        elif name.endswith(".total"):
            assert dtype == "timedelta64[ns]"
        elif name.endswith((".latitude", ".longitude")):
            assert dtype == "Float64"
        elif name.endswith(".size"):
            assert dtype == "Int64"
        else:
            assert dtype == "string", name
        # an empty fixture value ("" with no raw member) is NA, never "" or None
        for i, rec in enumerate(RECORDS):
            if rec.get(key) == "" and key + "_raw" not in rec:
                assert pd.isna(series.iloc[i]), (name, i)


def test_decode_fixture_values() -> None:
    rec0 = 0
    assert decode("field_21")["field_21.street"].iloc[rec0] == "8700 Cameron Rd"
    assert pd.isna(decode("field_21")["field_21.street2"].iloc[1])  # "" -> NA
    assert decode("field_12")["field_12"].iloc[rec0] == pd.Timestamp("2019-09-11 00:00",
                                                                     tz="America/Chicago")
    f15 = decode("field_15")
    assert f15["field_15"].iloc[rec0] == pd.Timestamp("2019-09-11 16:14", tz=CHICAGO)
    assert f15["field_15.to"].iloc[rec0] == pd.Timestamp("2019-09-11 17:14", tz=CHICAGO)
    assert pd.isna(f15["field_15.to"].iloc[2])
    # winter: -06:00, summer: -05:00 (the wall clock is what the fixture shows)
    assert decode("field_13")["field_13"].iloc[22].utcoffset() == timedelta(hours=-6)
    assert decode("field_14")["field_14"].iloc[rec0] == pd.Timestamp("2012-01-01 16:14",
                                                                     tz=CHICAGO)
    timer = decode("field_16")
    assert timer["field_16.total"].iloc[rec0] == pd.Timedelta(hours=1)
    assert timer["field_16.to"].iloc[rec0] - timer["field_16"].iloc[rec0] == pd.Timedelta(hours=1)
    files = decode("field_17")
    assert files["field_17"].iloc[rec0] == "5d7967132be2bb0010892ce7"
    assert files["field_17.size"].iloc[rec0] == 305741
    assert pd.isna(files["field_17.thumb_url"].iloc[rec0])
    assert decode("field_18")["field_18.thumb_url"].iloc[rec0].endswith("/thumb/my_car_mazda_q.jpg")
    name = decode("field_19")
    assert (name["field_19.first"].iloc[rec0], name["field_19.last"].iloc[rec0]) == \
        ("Pizza", "the Hut")
    assert pd.isna(name["field_19.middle"].iloc[1])
    assert decode("field_20")["field_20"].iloc[rec0] == "pizzathehut@spaceballs.com"
    assert decode("field_22")["field_22"].iloc[rec0] == "(512) 974-3546"
    assert decode("field_24")["field_24"].iloc[1] == "https://google.com"
    assert decode("field_29")["field_29"].iloc[rec0]
    assert not decode("field_38")["field_38"].iloc[rec0]
    assert decode("field_30")["field_30"].iloc[rec0] == 100.43
    assert decode("field_10")["field_10"].iloc[2] == 2555
    assert decode("field_11")["field_11"].iloc[3] == 1217
    assert decode("field_129")["field_129"].iloc[rec0] == pytest.approx(1.33333333)
    assert decode("field_25")["field_25"].iloc[rec0] == 0
    lat = decode("field_44")
    assert (lat["field_44.latitude"].iloc[1], lat["field_44.state"].iloc[1]) == (30.4042, "Texas")
    assert decode("field_50")["field_50"].iloc[rec0] == "google.com"
    assert decode("field_23")["field_23"].iloc[rec0].startswith("<?xml")
    assert decode("field_127")["field_127.country"].iloc[rec0] == "United Kingdom"


def test_decode_without_a_timezone_keeps_the_wall_clock_as_utc() -> None:
    cols = decode("field_12", ReadContext())
    assert str(cols["field_12"].dtype) == "datetime64[ns, UTC]"
    assert cols["field_12"].iloc[0] == pd.Timestamp("2019-09-11", tz="UTC")


def test_connection_table_from_the_fixture() -> None:
    field = FIELDS["field_128"]
    raws, displays = column("field_128")
    codec = codec_for(field)
    assert codec.decode(raws, displays, field, CTX) == {}
    table = codec.tables(IDS, raws, displays, field, CTX)["field_128"]
    assert list(table.columns) == ["record_id", "connected_id", "identifier"]
    assert all(str(t) == "string" for t in table.dtypes)
    linked = [r for r in RECORDS if r["field_128_raw"]]
    assert len(table) == sum(len(r["field_128_raw"]) for r in linked)
    assert table.iloc[0].tolist() == [RECORDS[0]["id"], "5ea46ad2b6ce4b0015000ae8", "Johnny C"]


def test_name_like_connections_take_their_ids_from_the_display_html() -> None:
    """docs/service-interface.md §2.1: raw [{first, last}], ids only in the anchors' spans."""
    field = FieldSpec(key="field_9", kind="connection", relationship={"object": "object_1"})
    raws = [[{"first": "Ann", "last": "Lee"}, {"first": "Bo", "last": "Ek"}], []]
    displays = ['<a href="#view/5f1"><span class="5f1">Ann Lee</span></a><br />'
                '<a href="#view/6a2"><span class="6a2">Bo Ek</span></a>', ""]
    table = codec_for(field).tables(["r1", "r2"], raws, displays, field, CTX)["field_9"]
    assert table.values.tolist() == [["r1", "5f1", "Ann Lee"], ["r1", "6a2", "Bo Ek"]]
    extra_class = ['<span class="kn-value 5ea46ad2b6ce4b0015000ae8">Ann Lee</span>']
    table = codec_for(field).tables(["r1"], raws[:1], extra_class, field, CTX)["field_9"]
    assert table["connected_id"].iloc[0] == "5ea46ad2b6ce4b0015000ae8"


def test_html_only_answers_decode_to_clean_text() -> None:
    """A view answering format=html: no raw members, display values only."""
    def only_display(key: str) -> dict[str, pd.Series]:
        field = FIELDS[key]
        _, displays = column(key)
        return codec_for(field).decode([None] * len(displays), displays, field, CTX)

    assert only_display("field_21")["field_21.street"].iloc[0] == "8700 Cameron Rd"
    assert only_display("field_21")["field_21.zip"].iloc[0] == "78754"
    assert only_display("field_127")["field_127.country"].iloc[0] == "United Kingdom"
    assert only_display("field_24")["field_24"].iloc[0].startswith("https://data.austintexas")
    assert only_display("field_20")["field_20"].iloc[0] == "pizzathehut@spaceballs.com"
    assert only_display("field_17")["field_17"].iloc[0] == "5d7967132be2bb0010892ce7"
    assert only_display("field_18")["field_18.url"].iloc[0].endswith("my_car_mazda_q.jpg")
    assert only_display("field_23")["field_23"].iloc[0].startswith("<?xml")
    assert only_display("field_29")["field_29"].iloc[0]
    assert only_display("field_30")["field_30"].iloc[0] == 100.43
    assert only_display("field_15")["field_15.to"].iloc[0] == \
        decode("field_15")["field_15.to"].iloc[0]
    assert only_display("field_16")["field_16.total"].iloc[0] == pd.Timedelta(hours=1)
    assert only_display("field_19")["field_19.last"].iloc[0] == "the Hut"
    link = FieldSpec(key="l", kind="link")
    text = FieldSpec(key="t", kind="short_text")
    assert codec_for(link).decode([None], ['<a href="https://x.org" target="_blank">X</a>'],
                                  link, CTX)["l"].iloc[0] == "https://x.org"
    assert codec_for(text).decode([None], ["a &amp; b<br />c"], text, CTX)["t"].iloc[0] == \
        "a & b\nc"
    field = FIELDS["field_128"]
    _, displays = column("field_128")
    table = codec_for(field).tables(IDS, [None] * len(IDS), displays, field, CTX)["field_128"]
    assert table["connected_id"].tolist()[0] == "5ea46ad2b6ce4b0015000ae8"


@pytest.mark.parametrize("key", sorted(FIELDS))
def test_raw_only_answers_decode_like_both(key: str) -> None:
    """format=raw puts the raw value under ``field_N`` and sends no ``field_N_raw``."""
    field = FIELDS[key]
    codec = codec_for(field)
    raws, displays = column(key)
    under_key = [r if r is not None else d for r, d in zip(raws, displays, strict=True)]
    nothing = [None] * len(raws)
    both = codec.decode(raws, displays, field, CTX)
    for name, series in codec.decode(nothing, under_key, field, CTX).items():
        assert all(values_equal(a, b) for a, b in zip(series, both[name], strict=True)), name
    for name, table in codec.tables(IDS, nothing, under_key, field, CTX).items():
        assert table.equals(codec.tables(IDS, raws, displays, field, CTX)[name])


def test_multi_choice_list_column_and_table() -> None:
    field = spec("multiple_choice", type="multi", options=["A", "B", "C"])
    raws = [["A", "C"], None, [None], "B"]
    displays = ["A, C", "", "", "B"]
    codec = codec_for(field)
    col = codec.decode(raws, displays, field, CTX)["field_1"]
    assert col.dtype == object
    assert [col.iloc[0], col.iloc[1], col.iloc[2], col.iloc[3]] == [["A", "C"], None, None, ["B"]]
    table = codec.tables(["r1", "r2", "r3", "r4"], raws, displays, field, CTX)["field_1"]
    assert table.values.tolist() == [["r1", "A"], ["r1", "C"], ["r4", "B"]]
    assert codec.encode({"field_1": ["A", "B"]}, field, CTX) == ["A", "B"]
    assert codec.encode({"field_1": None}, field, CTX) == []


# ---- encode: frame values -> write values, and the round trip --------------------------------
def _row(cols: dict[str, pd.Series], i: int) -> dict[str, Any]:
    return {name: s.iloc[i] for name, s in cols.items()}


def _round_trip(field: FieldSpec, raw: Any, ctx: ReadContext = CTX) -> Any:
    """normalized raw -> decode -> encode -> JSON -> normalize."""
    codec = codec_for(field)
    display = codec.render(raw, field) if raw not in (None, []) else ""
    if field.kind == "connection":
        table = codec.tables(["r"], [raw], [display], field, ctx)[field.key]
        values: dict[str, Any] = {field.key: table["connected_id"].tolist()}
    else:
        values = _row(codec.decode([raw], [display], field, ctx), 0)
    payload = json.loads(json.dumps(codec.encode(values, field, ctx)))
    return codec.normalize(payload, field, HOOKS)


@pytest.mark.parametrize("key", sorted(k for k, f in FIELDS.items()
                                       if f.kind not in READ_ONLY_KINDS))
def test_every_fixture_value_round_trips(key: str) -> None:
    field = FIELDS[key]
    codec = codec_for(field)
    for rec, raw in _stored(key, empty_lists=True):
        normalized = codec.normalize(raw, field, HOOKS)
        back = _round_trip(field, normalized)
        if field.kind == "signature":  # base30 is a second encoding the frame does not keep
            normalized = {"svg": normalized["svg"]}
        assert back == normalized, (rec["id"], key)


def test_encode_shapes() -> None:
    date_field = FIELDS["field_15"]
    values = _row(decode("field_15"), 0)
    assert codec_for(date_field).encode(values, date_field, CTX) == {
        "date": "09/11/2019", "hours": "04", "minutes": "14", "am_pm": "PM",
        "to": {"date": "09/11/2019", "hours": "05", "minutes": "14", "am_pm": "PM"}}
    # an instant given in another zone is written as the app's wall clock
    utc = pd.Timestamp("2019-09-11 21:14", tz="UTC")
    assert codec_for(date_field).encode({"field_15": utc}, date_field, CTX)["hours"] == "04"
    addr = FIELDS["field_44"]
    assert codec_for(addr).encode(_row(decode("field_44"), 0), addr, CTX) == {
        "state": "Bauchi", "country": "Nigeria", "latitude": 10, "longitude": 10}
    name = FIELDS["field_19"]
    assert codec_for(name).encode(_row(decode("field_19"), 1), name, CTX) == {
        "first": "Sally", "last": "Lognestnameeverprobableimnotsure"}
    file_field = FIELDS["field_17"]
    assert codec_for(file_field).encode(_row(decode("field_17"), 0), file_field, CTX) == \
        "5d7967132be2bb0010892ce7"
    conn = FIELDS["field_128"]
    assert codec_for(conn).encode({"field_128": ["r2"]}, conn, CTX) == ["r2"]
    with pytest.raises(InvalidValue, match="field_128"):
        codec_for(conn).encode({"field_128": ["r2", "r3"]}, conn, CTX)
    assert codec_for(FIELDS["field_29"]).encode({"field_29": pd.NA}, FIELDS["field_29"],
                                                CTX) == ""


@pytest.mark.parametrize("key", sorted(k for k, f in FIELDS.items()
                                       if f.kind not in READ_ONLY_KINDS
                                       and f.kind not in ("connection", "password")))
def test_encode_of_empty_values_clears(key: str) -> None:
    field = FIELDS[key]
    values = {name: pd.NA for name in codec_for(field).columns(field)}
    out = codec_for(field).encode(values, field, CTX)
    assert out in ("", [])
    assert codec_for(field).normalize(out, field, HOOKS) is None


# ---- property tests ---------------------------------------------------------------------------
def _exists(wall: datetime, tz: ZoneInfo) -> bool:
    """Whether a wall-clock time exists in tz (not in a skipped daylight-saving hour)."""
    aware = wall.replace(tzinfo=tz)
    back = aware.astimezone(ZoneInfo("UTC")).astimezone(tz).replace(tzinfo=None)
    return back == wall


walls = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2060, 12, 31)) \
    .map(lambda d: d.replace(second=0, microsecond=0))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=walls, minutes=st.integers(0, 60 * 24 * 40),
       tz=st.sampled_from(["America/Chicago", "Europe/London", "Australia/Sydney", "UTC"]),
       fmt=st.sampled_from([{}, {"time_format": "HH MM (military)"},
                            {"date_format": "dd/mm/yyyy"}, {"time_format": "Ignore Time"}]))
def test_dates_round_trip(start: datetime, minutes: int, tz: str, fmt: dict[str, str]) -> None:
    zone = ZoneInfo(tz)
    end = start + timedelta(minutes=minutes)
    assume(_exists(start, zone) and _exists(end, zone))
    field = spec("date_time", calendar=True, **fmt)
    raw = codec_for(field).normalize({"date": start.strftime("%m/%d/%Y") if "date_format"
                                      not in fmt else start.strftime("%d/%m/%Y"),
                                      "hours": start.hour, "minutes": start.minute,
                                      "to": {"date": end.strftime("%m/%d/%Y") if "date_format"
                                             not in fmt else end.strftime("%d/%m/%Y"),
                                             "hours": end.hour, "minutes": end.minute}}, field)
    assert raw["unix_timestamp"] == int((start - datetime(1970, 1, 1)).total_seconds()) * 1000
    ctx = ReadContext(timezone=zone)
    assert _round_trip(field, raw, ctx) == raw
    decoded = codec_for(field).decode([raw], [""], field, ctx)["field_1"].iloc[0]
    assert decoded.tz_localize(None) == pd.Timestamp(start)


text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1,
               max_size=20).map(str.strip).filter(bool)


@settings(max_examples=60, deadline=None)
@given(parts=st.fixed_dictionaries({}, optional={
    "street": text, "street2": text, "city": text, "state": text, "zip": text, "country": text}),
       coords=st.one_of(st.none(), st.tuples(st.floats(-90, 90), st.floats(-180, 180))))
def test_address_round_trip(parts: dict[str, str], coords: tuple[float, float] | None) -> None:
    value: dict[str, Any] = dict(parts)
    if coords:
        value["latitude"], value["longitude"] = coords
    assume(value)
    for fmt in ({"input": "address"}, {"input": "lat_long"}):
        field = spec("address", **fmt)
        raw = codec_for(field).normalize(value, field)
        assert _round_trip(field, raw) == raw


@settings(max_examples=60, deadline=None)
@given(amount=st.decimals(min_value=-10**9, max_value=10**9, places=2, allow_nan=False,
                          allow_infinity=False),
       number=st.one_of(st.integers(-10**12, 10**12),
                        st.floats(-1e12, 1e12, allow_nan=False, allow_infinity=False)),
       name=st.fixed_dictionaries({"first": text, "last": text}, optional={"middle": text,
                                                                           "title": text}),
       choices=st.lists(st.sampled_from(["A", "B", "C", "D"]), min_size=1, unique=True),
       phone=st.from_regex(r"\A[2-9]\d{9}\Z"))
def test_scalar_kinds_round_trip(amount: Any, number: Any, name: dict[str, str],
                                 choices: list[str], phone: str) -> None:
    cases: list[tuple[FieldSpec, Any]] = [
        (spec("currency"), str(amount)), (spec("number"), number), (spec("name"), name),
        (spec("multiple_choice", type="multi"), choices), (spec("phone"), phone),
        (spec("multiple_choice"), choices[0]), (spec("user_roles"), [f"profile_{len(c)}"
                                                                     for c in choices[:1]]),
        (spec("short_text"), name["first"]), (spec("boolean"), len(choices) % 2 == 0),
    ]
    for field, value in cases:
        raw = codec_for(field).normalize(value, field)
        assert _round_trip(field, raw) == raw, field.kind


date_texts = st.from_regex(r"\A\d{1,2}/\d{1,2}/\d{1,4}( \d{1,2}:\d{2}( ?[ap]m)?)?( to \d{1,2}:\d{2})?\Z")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=30) | date_texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["date", "hours", "minutes", "am_pm", "to", "times", "from", "id",
                         "email", "url", "street", "city", "latitude", "longitude", "first",
                         "last", "svg", "label", "x"]), inner, max_size=5),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
# an id of no record: the store's InvalidValue names no field, the codec names its own
@example(kind="connection", value="0", fmt={})
@given(kind=st.sampled_from(list(KINDS)), value=json_values,
       fmt=st.sampled_from([{}, {"type": "multi"}, {"source": "url"}, {"calendar": True},
                            {"date_format": "Ignore Date"}, {"input": "lat_long"}]))
def test_normalize_never_fails_otherwise_than_invalid_value(kind: str, value: Any,
                                                            fmt: dict[str, Any]) -> None:
    """Whatever JSON a client sends, the service gets a raw value or an InvalidValue (a
    400 naming the field), never another exception (a 500); and the raw renders."""
    field = FieldSpec(key="field_8", kind=kind, format=fmt,
                      relationship={"object": "object_2", "has": "many"})
    codec = codec_for(field)
    try:
        raw = codec.normalize(value, field, HOOKS)
    except InvalidValue as exc:
        assert exc.field == "field_8"
        return
    json.dumps(raw, allow_nan=False)
    if raw not in (None, []):
        codec.render(raw, field)
        codec.decode([raw], [codec.render(raw, field)], field, CTX)


cell_values = st.one_of(
    st.none(), st.just(pd.NA), st.just(pd.NaT), st.booleans(), st.integers(-10**20, 10**20),
    st.floats(allow_nan=True), st.text(max_size=20),
    st.lists(st.text(max_size=8), max_size=3),
    st.datetimes(min_value=datetime(1600, 1, 1), max_value=datetime(2400, 1, 1)).map(
        pd.Timestamp),
    st.datetimes(min_value=datetime(1800, 1, 1), max_value=datetime(2200, 1, 1)).map(
        lambda d: pd.Timestamp(d, tz="America/Chicago")))


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from([k for k in KINDS if k not in READ_ONLY_KINDS]),
       cells=st.lists(cell_values, min_size=8, max_size=8),
       fmt=st.sampled_from([{}, {"type": "multi"}, {"source": "url"}, {"calendar": True}]))
def test_encode_of_any_edit_is_a_write_value_or_invalid_value(kind: str, cells: list[Any],
                                                              fmt: dict[str, Any]) -> None:
    """Whatever a user typed into a frame cell, encode answers a JSON write value that
    normalize accepts, or an InvalidValue naming the field (never another exception)."""
    field = FieldSpec(key="field_6", kind=kind, format=fmt,
                      relationship={"object": "object_2", "has": "many"})
    codec = codec_for(field)
    values = dict(zip(codec.columns(field) or [field.key], cells, strict=False))
    try:
        out = codec.encode(values, field, CTX)
        json.dumps(out, allow_nan=False)
        if kind not in ("file", "image", "connection"):  # those need the service's records
            codec.normalize(out, field, None)
    except InvalidValue as exc:
        assert exc.field == "field_6"


# ---- inference without a schema ---------------------------------------------------------------
@pytest.mark.parametrize("key", sorted(FIELDS))
def test_infer_field_from_fixture_shapes(key: str) -> None:
    field = FIELDS[key]
    raws, displays = column(key)
    inferred = infer_field(key, raws, displays)
    assert inferred is not None
    # kinds that share a raw shape are inferred as their plain sibling
    same_shape = {"auto_increment": "number", "equation": "number", "concatenation":
                  "short_text", "multiple_choice": "short_text"}
    assert inferred.kind == same_shape.get(field.kind, field.kind)
    if field.kind == "date_time":
        for name, series in codec_for(inferred).decode(raws, displays, inferred, CTX).items():
            assert series.equals(decode(key)[name]), name
    if field.kind == "image":
        assert inferred.format.get("source") == field.format.get("source")


def test_infer_field_never_invents_a_kind() -> None:
    assert infer_field("field_1", [None, None], ["", ""]) is None
    assert infer_field("field_1", [], []) is None
    assert infer_field("field_1", [None, "", None], ["", "", ""]) is None
    # only connections answer [] when empty
    assert infer_field("field_1", [[], []], ["", ""]).kind == "connection"  # type: ignore[union-attr]
    assert infer_field("field_1", [1, "x"], ["1", "x"]).kind == "unknown"  # type: ignore[union-attr]
    multi = infer_field("field_1", [["a", "b"], None], ["a, b", ""])
    assert multi is not None and multi.kind == "multiple_choice" and multi.format["type"] == "multi"
    roles = infer_field("field_1", [["profile_1"]], ["profile_1"])
    assert roles is not None and roles.kind == "user_roles"
    named = infer_field("field_1", [[{"first": "A", "last": "B"}]], ['<span class="x">A B</span>'])
    assert named is not None and named.kind == "connection"
    # format=html: displays only, whose kind cannot be told; format=raw: raw under field_N
    assert infer_field("field_1", [None], ["<b>x</b>"]).kind == "unknown"  # type: ignore[union-attr]
    assert infer_field("field_1", [None], [{"street": "a", "city": "b"}]).kind == "address"  # type: ignore[union-attr]


def test_unknown_kinds_keep_the_raw_json() -> None:
    field = FieldSpec(key="field_5", kind="hologram")
    codec = codec_for(field)
    col = codec.decode([{"a": [1, 2]}, None], ['x', ""], field, CTX)["field_5"]
    assert col.iloc[0] == '{"a": [1, 2]}' and pd.isna(col.iloc[1])
    assert codec.encode({"field_5": col.iloc[0]}, field, CTX) == {"a": [1, 2]}
    shown = codec.decode([None], ["a &amp; b<br />c"], field, CTX)["field_5"]
    assert shown.iloc[0] == "a & b\nc"  # a display-only value: clean text
    assert codec.encode({"field_5": shown.iloc[0]}, field, CTX) == "a & b\nc"


# ---- helpers ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b", "equal"), [
    (pd.NA, None, True), (pd.NA, "", True), (float("nan"), pd.NA, True), (pd.NaT, None, True),
    (1, 1.0, True), (1, 2, False), ("a", "a", True), ("a", pd.NA, False),
    (["a", "b"], ["a", "b"], True), (["a"], ["b"], False), ([], None, True),
    (True, 1, False), (True, True, True), (np.False_, False, True), (np.True_, False, False),
    (pd.Timestamp("2020-01-01 06:00", tz="UTC"), pd.Timestamp("2020-01-01", tz=CHICAGO), True),
    (pd.Timestamp("2020-01-01"), pd.Timestamp("2020-01-01", tz="UTC"), False),
])
def test_values_equal(a: Any, b: Any, equal: bool) -> None:
    assert values_equal(a, b) is equal
    assert values_equal(b, a) is equal


def test_resolve_timezone() -> None:
    assert resolve_timezone("Central Time (US & Canada)") == ZoneInfo("America/Chicago")
    assert resolve_timezone(APP["settings"]["timezone"]) == CHICAGO
    assert resolve_timezone("(GMT-05:00) Eastern Time (US & Canada)") == \
        ZoneInfo("America/New_York")
    assert resolve_timezone("Europe/Paris") == ZoneInfo("Europe/Paris")
    assert resolve_timezone("UTC") == ZoneInfo("UTC")
    for bad in ("Middle Earth", "", "Nowhere/Land"):
        with pytest.raises(ConfigurationError, match="timezone"):
            resolve_timezone(bad)
    for display, iana in DISPLAY_NAMES.items():  # every entry names a real IANA zone
        assert resolve_timezone(display) == ZoneInfo(iana)


def test_daylight_saving_edges_decode_and_encode() -> None:
    field = spec("date_time")
    codec = codec_for(field)
    repeated = codec.normalize("11/03/2019 1:30am", field)  # the hour that happens twice
    skipped = codec.normalize("03/10/2019 2:30am", field)  # the hour that never happens
    col = codec.decode([repeated, skipped], ["", ""], field, CTX)["field_1"]
    assert col.notna().all()
    assert codec.encode({"field_1": col.iloc[0]}, field, CTX)["hours"] == "01"
    assert col.iloc[1] == pd.Timestamp("2019-03-10 03:00", tz=CHICAGO)


@pytest.mark.parametrize(("kind", "raw", "edited"), [
    ("email", {"email": "ann@b.co", "label": "Ann Lee"}, "ann.lee@b.co"),
    ("link", {"url": "https://x.org/a", "label": "X & Y"}, "https://x.org/b")])
def test_email_and_link_labels_round_trip(kind: str, raw: dict[str, str],
                                          edited: str) -> None:
    """The label has its own column; editing the address keeps it, clearing it drops it."""
    field = spec(kind)
    codec = codec_for(field)
    member = "email" if kind == "email" else "url"
    assert _round_trip(field, raw) == raw
    cols = codec.decode([raw], [codec.render(raw, field)], field, CTX)
    assert list(cols) == [field.key, f"{field.key}.label"]
    assert cols[f"{field.key}.label"].iloc[0] == raw["label"]
    # a display-only answer (format=html): the anchor's text is the label
    shown = codec.decode([None], [codec.render(raw, field)], field, CTX)
    assert shown[f"{field.key}.label"].iloc[0] == raw["label"]
    plain = codec.decode([None], [codec.render({member: edited}, field)], field, CTX)
    assert pd.isna(plain[f"{field.key}.label"].iloc[0])
    values = {field.key: edited, f"{field.key}.label": raw["label"]}
    assert codec.normalize(codec.encode(values, field, CTX), field) == {
        member: edited, "label": raw["label"]}
    values[f"{field.key}.label"] = pd.NA
    assert codec.normalize(codec.encode(values, field, CTX), field) == {member: edited}
    with pytest.raises(InvalidValue, match=f"{field.key}.*label"):  # a label alone
        codec.encode({field.key: pd.NA, f"{field.key}.label": "Desk"}, field, CTX)


def test_blank_to_none_replaces_every_blank_and_nothing_else() -> None:
    """The raw-page decoder's "" -> None pass (kinds._util.blank_to_none): every blank,
    first and last included; a sequence without one comes back as it is; values whose ==
    is not a bool (pd.NA, arrays) take the per-value path."""
    from svc_frames.kinds import blank_to_none

    assert blank_to_none(["", "a", "", "", "b", ""]) == [None, "a", None, None, "b", None]
    values = ["a", None, {"x": ""}]
    assert blank_to_none(values) is values
    assert blank_to_none(("", {"x": 1})) == [None, {"x": 1}]
    odd = blank_to_none([pd.NA, "", np.array([1, 2]), "c", ""])
    assert odd[1] is None and odd[4] is None and odd[3] == "c" and odd[0] is pd.NA


def test_equation_with_a_date_result_decodes_as_a_date_and_others_as_numbers() -> None:
    """A date equation whose result is a date (``date_result`` "date") renders and reads
    as a date_time does: its raw date object, or its display alone (``format=html``), in
    its own date and time formats; every other equation stays a Float64 number."""
    from svc_frames.kinds import codec_for, is_date_result
    from svc_frames.kinds.wallclock import raw_date

    zone = ZoneInfo("America/Chicago")
    fmt = {"equation_type": "date", "date_result": "date", "equation": "{field_1} + 30",
           "date_format": "dd/mm/yyyy", "time_format": "HH MM (military)"}
    spec = FieldSpec("field_9", "equation", "Due", format=fmt)
    codec = codec_for(spec)
    assert is_date_result(spec) and codec.read_only
    raw = raw_date(datetime(2024, 3, 10, 23, 0), spec)
    assert codec.render(raw, spec) == "10/03/2024 23:00"
    ctx = ReadContext(zone)
    for raws, displays in (([raw, None], ["10/03/2024 23:00", ""]),
                           ([None, None], ["10/03/2024 23:00", ""])):
        col = codec.decode(raws, displays, spec, ctx)["field_9"]
        assert str(col.dtype) == "datetime64[ns, America/Chicago]"
        assert col[0] == pd.Timestamp("2024-03-10 23:00", tz=zone) and pd.isna(col[1])
    for other in ({**fmt, "date_result": "number"}, {**fmt, "equation_type": "numeric"}):
        number = FieldSpec("field_9", "equation", "Days", format=other)
        assert not is_date_result(number)
        col = codec_for(number).decode([26.5, None], ["27", ""], number, ctx)["field_9"]
        assert str(col.dtype) == "Float64" and col[0] == 26.5 and pd.isna(col[1])
    with pytest.raises(ReadOnlyField):
        codec.normalize(raw, spec)
