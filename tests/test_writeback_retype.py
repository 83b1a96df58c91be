"""diff reads an edited column by its field's kind whatever dtype an edit left it in
(svc_frames/writeback/retype.py): a value that means what it meant is no change."""

from __future__ import annotations

import pandas as pd
import pytest

from svc_frames import Client, diff, read_object
from svc_frames.errors import InvalidValue, UsageError
from svc_frames.server import LocalService

DUE, QTY, STATUS, URGENT, SCHEDULED = "field_29", "field_16", "field_27", "field_26", "field_30"


@pytest.fixture(scope="module")
def orders() -> pd.DataFrame:
    with LocalService(demo=True, records=300) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
        yield read_object(client, "object_3", progress=False, columns="keys")


def test_dates_and_numbers_turned_to_text_plan_nothing(orders) -> None:
    frames = orders.snapshot()
    frames.original = orders.original
    frames.main[DUE] = frames.main[DUE].astype(str)
    frames.main[QTY] = frames.main[QTY].astype(str)
    assert diff(frames).counts["update"] == 0          # was 298 updates sending the same values
    rid = frames.main.index[7]
    frames.main.loc[rid, QTY] = "12345"
    plan = diff(frames)
    assert plan.counts["update"] == 1
    assert plan.changes.loc[0, "record_id"] == rid and plan.changes.loc[0, "new"] == 12345


@pytest.mark.parametrize("retype", [
    lambda m: m.assign(**{STATUS: m[STATUS].astype("category")}),
    lambda m: m.assign(**{STATUS: m[STATUS].astype(object)}),
    lambda m: m.assign(**{QTY: m[QTY].astype("float64")}),
    lambda m: m.assign(**{URGENT: m[URGENT].astype(object)}),
    lambda m: m.assign(**{URGENT: m[URGENT].astype(str)}),
    lambda m: m.assign(**{DUE: m[DUE].dt.tz_convert("Asia/Tokyo")}),
    lambda m: m.assign(**{DUE: m[DUE].dt.tz_localize(None)}),     # naive: the app's wall time
    lambda m: m.assign(**{SCHEDULED: m[SCHEDULED].dt.tz_convert("UTC").astype(str)}),
], ids=["category", "object", "float64", "bool-object", "bool-text", "other-tz", "naive",
        "utc-text"])
def test_retyped_columns_that_mean_the_same_plan_nothing(orders, retype) -> None:
    frames = orders.snapshot()
    frames.original = orders.original
    frames.main = retype(frames.main)
    assert diff(frames).counts["update"] == 0


def test_a_cell_that_cannot_be_read_as_its_kind_is_named(orders) -> None:
    frames = orders.snapshot()
    frames.original = orders.original
    frames.main[DUE] = frames.main[DUE].astype(str)
    rid = frames.main.index[4]
    frames.main.loc[rid, DUE] = "next Tuesday"
    with pytest.raises(InvalidValue, match=rf"'{DUE}' \(date_time field 'Due'\).*"
                                           rf"'{rid}': 'next Tuesday'") as raised:
        diff(frames)
    assert isinstance(raised.value, UsageError) and raised.value.record_id == rid


def test_the_whole_frame_turned_to_text_plans_only_the_edit(orders) -> None:
    """``main.astype(str)``: every kind as text (``nan``, ``<NA>``, ``NaT``, numpy's
    ``['A' 'B']`` for a multiple choice) means what it meant; a list edited in numpy's
    notation is read as its options. Columns found by kind, whatever their naming."""
    from svc_frames.saved.parquet import column_fields

    frames = orders.snapshot()
    frames.original = orders.original
    frames.main = frames.main.astype(str)
    assert diff(frames).counts["update"] == 0
    fields = column_fields(frames.source)
    tags = next(c for c in frames.main.columns if c in fields
                and fields[c].kind == "multiple_choice" and fields[c].format.get("type") == "multi")
    rid = frames.main.index[4]
    frames.main.loc[rid, tags] = "['Safety' 'Outdoor']"
    plan = diff(frames)
    assert plan.counts["update"] == 1
    assert list(plan.changes["new"].iloc[0]) == ["Safety", "Outdoor"]
