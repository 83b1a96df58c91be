"""Parquet: frames round-trip exactly; a streaming export is a dataset readers take as is."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.dataset as ds
import pytest

from svc_frames.errors import UsageError
from svc_frames.frames import Frames, Source, all_schema_fields, build_frames, resolve_fields
from svc_frames.frames import schema_fields as object_fields
from svc_frames.kinds import resolve_timezone
from svc_frames.parquet import read_parquet, table_meta, to_parquet

FIXTURES = Path("/work/shared/fixtures/hosted-sample")
if not FIXTURES.exists():
    FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hosted-sample"


def assert_frames_equal(a: Frames, b: Frames) -> None:
    pd.testing.assert_frame_equal(a.main, b.main)
    assert list(a.tables) == list(b.tables)
    for name in a.tables:
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert a.source == b.source


@pytest.fixture(scope="module")
def fixture_frames() -> Frames:
    app = json.loads((FIXTURES / "application.json").read_text())["application"]
    recs = json.loads((FIXTURES / "records.json").read_text())["records"]
    tz = resolve_timezone(app["settings"]["timezone"])
    fields, _ = resolve_fields(recs, all_schema_fields(app), object_fields(app, "object_3"))
    return build_frames(recs, fields, Source("object", "object_3", fields, timezone=tz.key),
                        tz=tz)


def test_roundtrip_fixture_every_kind(fixture_frames: Frames, tmp_path: Path) -> None:
    to_parquet(fixture_frames, tmp_path / "out")
    back = read_parquet(tmp_path / "out")
    assert_frames_equal(back, fixture_frames)
    assert back.original is not None and fixture_frames.original is not None
    assert_frames_equal(back.original, fixture_frames.original)


def test_roundtrip_keeps_edits_apart_from_original(fixture_frames: Frames,
                                                   tmp_path: Path) -> None:
    edited = Frames(fixture_frames.main.copy(), dict(fixture_frames.tables),
                    fixture_frames.source, fixture_frames.original)
    edited.main.loc[edited.main.index[0], "field_7"] = "changed"
    to_parquet(edited, tmp_path / "e")
    back = read_parquet(tmp_path / "e")
    assert back.main["field_7"].iloc[0] == "changed"
    assert back.original is not None and back.original.main["field_7"].iloc[0] != "changed"


def test_list_columns_roundtrip(tmp_path: Path) -> None:
    from svc_frames.kinds import FieldSpec
    f = FieldSpec(key="field_1", kind="multiple_choice", format={"type": "multi"})
    recs = [{"id": "a", "field_1": "x, y", "field_1_raw": ["x", "y"]},
            {"id": "b", "field_1": ""}]
    frames = build_frames(recs, [f], Source("object", "object_1", [f]))
    to_parquet(frames, tmp_path / "l")
    back = read_parquet(tmp_path / "l")
    assert_frames_equal(back, frames)
    assert back.main["field_1"].iloc[0] == ["x", "y"]


def test_main_file_is_plain_parquet_with_metadata(fixture_frames: Frames,
                                                  tmp_path: Path) -> None:
    to_parquet(fixture_frames, tmp_path / "m")
    table = ds.dataset(tmp_path / "m" / "main.parquet").to_table()
    meta = table_meta(table.schema)
    assert meta["source"]["object_key"] == "object_3"
    assert meta["source"]["timezone"] == "America/Chicago"
    assert table.num_rows == len(fixture_frames.main)


def test_read_parquet_of_a_foreign_dir(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="main.parquet"):
        read_parquet(tmp_path)


def test_to_parquet_refuses_foreign_nonempty_dir(fixture_frames: Frames,
                                                 tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not an svc_frames"):
        to_parquet(fixture_frames, tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "mine"


