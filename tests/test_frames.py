"""Records -> Frames on real hosted shapes (the fixture), with and without a schema."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from svc_frames.frames import (
    DisplayValuesNeeded,
    Frames,
    Source,
    build_frames,
    decodes_raw_alone,
    label_map,
    record_field_keys,
    resolve_fields,
)
from svc_frames.kinds import resolve_timezone
from svc_frames.kinds.base import FieldSpec
from svc_frames.schema import Schema
from svc_frames.testing import hosted_sample_dir

FIXTURES = hosted_sample_dir()

NUMERIC = {"number", "currency", "equation", "sum", "count", "average", "min", "max", "rating"}
TEXT = {"short_text", "paragraph_text", "rich_text", "concatenation", "email", "phone", "link",
        "signature"}


@pytest.fixture(scope="module")
def app() -> dict[str, Any]:
    return json.loads((FIXTURES / "application.json").read_text())["application"]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "records.json").read_text())["records"]


def load(app: dict[str, Any] | None, records: list[dict[str, Any]],
         columns: str = "keys") -> Frames:
    tz = resolve_timezone("Central Time (US & Canada)")
    known = Schema.of(app).all_fields() if app else None
    fields, inferred = resolve_fields(records, known, Schema.of(app).object_fields("object_3"))
    source = Source("object", "object_3", fields, timezone=tz.key, columns=columns,  # type: ignore[arg-type]
                    kinds_inferred=inferred)
    return build_frames(records, fields, source, tz=tz)


def check_dtypes(frames: Frames) -> None:
    main = frames.main
    assert frames.source is not None
    for f in frames.source.fields:
        if f.kind in NUMERIC:
            assert main[f.key].dtype == "Float64", f.key
        elif f.kind in TEXT or (f.kind == "multiple_choice"
                                and (f.format or {}).get("type") != "multi"):
            assert main[f.key].dtype == "string", f.key
        elif f.kind == "boolean":
            assert main[f.key].dtype == "boolean", f.key
        elif f.kind == "auto_increment":
            assert main[f.key].dtype == "Int64", f.key
        elif f.kind == "date_time":
            assert isinstance(main[f.key].dtype, pd.DatetimeTZDtype), f.key
            assert str(main[f.key].dt.tz) == "America/Chicago"
        elif f.kind == "address":
            assert main[f"{f.key}.city"].dtype == "string"
            assert main[f"{f.key}.latitude"].dtype == "Float64"
        elif f.kind == "name":
            assert main[f"{f.key}.last"].dtype == "string"
        elif f.kind == "connection":
            assert f.key not in main.columns
            assert list(frames.tables[f.key].columns) == ["record_id", "connected_id",
                                                          "identifier"]


def test_schema_kinds_give_their_dtypes(app: dict[str, Any],
                                        records: list[dict[str, Any]]) -> None:
    frames = load(app, records)
    assert frames.main.index.name == "id" and frames.main.index.dtype == "string"
    assert len(frames.main) == len(records) and frames.main.index.is_unique
    assert frames.source is not None and not frames.source.kinds_inferred
    check_dtypes(frames)
    # password never shows; empties are NA, never "" or None mixed in
    for col in frames.main.columns:
        s = frames.main[col]
        if s.dtype == "string":
            assert not (s == "").any(), col


def test_inferred_kinds_without_schema(app: dict[str, Any],
                                       records: list[dict[str, Any]]) -> None:
    with_schema = load(app, records)
    inferred = load(None, records)
    assert inferred.source is not None and inferred.source.kinds_inferred
    check_dtypes(inferred)
    # the values agree with the schema load wherever the kinds agree
    assert with_schema.source is not None
    for f in inferred.source.fields:
        if f.kind == with_schema.source.field(f.key).kind and f.key in inferred.main:
            pd.testing.assert_series_equal(inferred.main[f.key], with_schema.main[f.key])


def test_empty_column_gets_no_made_up_kind() -> None:
    recs = [{"id": f"r{i}", "field_1": "", "field_2": "x", "field_2_raw": "x"}
            for i in range(3)]
    fields, _ = resolve_fields(recs, None)
    kinds = {f.key: f.kind for f in fields}
    assert kinds["field_1"] == "unknown" and kinds["field_2"] != "unknown"
    frames = build_frames(recs, fields, Source("object", "object_1", fields))
    assert frames.main["field_1"].isna().all()


def test_connection_id_identifier_shape(records: list[dict[str, Any]],
                                        app: dict[str, Any]) -> None:
    frames = load(app, records)
    table = frames.tables["field_128"]
    expected = {(r["id"], c["id"]) for r in records for c in r.get("field_128_raw") or []}
    assert set(zip(table["record_id"], table["connected_id"], strict=True)) == expected
    assert expected  # the fixture does hold connections


def test_connection_name_like_shape() -> None:
    """docs/service-interface.md §2.1: raw ``[{first, last}]``, the id only in the display span."""
    recs = [{"id": "r1",
             "field_5": '<a href="#"><span class="5ea46ad2b6ce4b0015000ae8">Ann Lee</span></a>'
                        '<br /><a href="#"><span class="5ea46ad2b6ce4b0015000ae9">Bo Ng</span></a>',
             "field_5_raw": [{"first": "Ann", "last": "Lee"}, {"first": "Bo", "last": "Ng"}]},
            {"id": "r2", "field_5": "", "field_5_raw": []}]
    fields, _ = resolve_fields(recs, None)
    assert fields[0].kind == "connection"
    table = build_frames(recs, fields, Source("view", "", fields)).tables["field_5"]
    assert list(table["connected_id"]) == ["5ea46ad2b6ce4b0015000ae8", "5ea46ad2b6ce4b0015000ae9"]
    assert list(table["identifier"]) == ["Ann Lee", "Bo Ng"]
    assert list(table["record_id"]) == ["r1", "r1"]


def as_raw_format(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as a ``format=raw`` answer gives them (the local service's own rule)."""
    from svc_frames.server.render import format_record
    return [format_record(r, "raw") for r in records]


def test_raw_format_decodes_like_both(app: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """The hosted records, re-shaped as format=raw (empties have no raw member: their ""
    display stands in), decode to the same frames as raw + display values."""
    both = load(app, records)
    assert both.source is not None
    fields = both.source.fields
    assert decodes_raw_alone(records, fields)
    raw = build_frames(as_raw_format(records), fields, both.source,
                       tz=resolve_timezone("Central Time (US & Canada)"), raw_format=True)
    pd.testing.assert_frame_equal(raw.main, both.main)
    assert raw.tables.keys() == both.tables.keys()
    for name, table in both.tables.items():
        pd.testing.assert_frame_equal(raw.tables[name], table)


def test_name_like_connection_needs_display_values() -> None:
    recs = [{"id": "r1", "field_5": '<span class="5ea46ad2b6ce4b0015000ae8">Ann Lee</span>',
             "field_5_raw": [{"first": "Ann", "last": "Lee"}]}]
    fields, _ = resolve_fields(recs, None)
    assert not decodes_raw_alone(recs, fields)
    with pytest.raises(DisplayValuesNeeded, match="field_5"):  # a raw page showing one
        build_frames(as_raw_format(recs), fields, Source("view", "", fields), raw_format=True)
    recs[0]["field_5_raw"] = [{"id": "5ea46ad2b6ce4b0015000ae8", "identifier": "Ann Lee"}]
    assert decodes_raw_alone(recs, fields)
    unknown = [FieldSpec(key="field_5", kind="unknown")]
    assert not decodes_raw_alone(recs, unknown)


def test_labels(app: dict[str, Any], records: list[dict[str, Any]]) -> None:
    frames = load(app, records, columns="labels")
    assert frames.source is not None
    labels = label_map(frames.source.fields)
    assert labels["field_7"] in frames.main.columns
    assert f"{labels['field_21']}.city" in frames.main.columns
    assert not any(c.startswith("field_") for c in frames.main.columns)


def test_original_is_an_independent_snapshot(app: dict[str, Any],
                                             records: list[dict[str, Any]]) -> None:
    frames = load(app, records)
    assert frames.original is not None
    frames.main.loc[frames.main.index[0], "field_7"] = "edited"
    assert frames.original.main["field_7"].iloc[0] != "edited"


def test_no_edit_of_either_side_of_a_snapshot_reaches_the_other(
        app: dict[str, Any], records: list[dict[str, Any]]) -> None:
    # with copy-on-write the snapshot shares the data until a side writes: every way of
    # writing must still leave the other side as it was, in both directions
    frames = load(app, records)
    edits = [
        lambda m: m.loc.__setitem__((m.index[0], "field_7"), "edited"),
        lambda m: m.iloc.__setitem__((1, m.columns.get_loc("field_7")), "edited"),
        lambda m: m.__setitem__("field_7", "all edited"),
        lambda m: m.fillna({"field_7": "filled"}, inplace=True),
        lambda m: m.update(m[["field_7"]].iloc[:1].assign(field_7="updated")),
    ]
    for edit in edits:
        for writer in ("frames", "snapshot"):
            base = frames.snapshot()
            copied = base.snapshot()
            before = base.main.copy(deep=True)
            edit(base.main if writer == "frames" else copied.main)
            untouched = copied.main if writer == "frames" else base.main
            pd.testing.assert_frame_equal(untouched, before)
    tables = frames.snapshot()
    name, table = next(iter(tables.tables.items()))
    copied = tables.snapshot()
    table.iloc[0, 0] = "changed"
    assert copied.tables[name].iloc[0, 0] != "changed"


def test_field_keys_in_first_seen_order() -> None:
    recs = [{"id": "a", "field_2": "", "field_1": "x", "field_1_raw": "x"},
            {"id": "b", "field_2": "", "field_1": "y", "field_1_raw": "y", "field_3": ""}]
    assert record_field_keys(recs) == ["field_2", "field_1", "field_3"]


def test_no_records_keeps_schema_columns(app: dict[str, Any]) -> None:
    frames = load(app, [])
    assert len(frames.main) == 0 and "field_7" in frames.main.columns
    check_dtypes(frames)
