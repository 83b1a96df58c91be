"""What a tool's text of a loaded value means, kind by kind (kinds/celltext.py and each
codec's ``same_cell``): the same value, an edit, or text the file cannot tell apart."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from svc_frames.kinds import codec_for
from svc_frames.kinds.base import FieldSpec, ReadContext
from svc_frames.kinds.celltext import (
    list_items,
    meant_text,
    text_verdict,
    value_verdict,
    whole_numbers,
)

TZ = ZoneInfo("America/Chicago")
CTX = ReadContext(timezone=TZ)


@pytest.mark.parametrize(("text", "loaded", "verdict"), [
    ("78742.0", "78742", "same"),        # pandas read the zip codes as floats
    ("78742", "78742", "same"),
    ("78743.0", "78742", "edit"),
    ("1234.0", "01234", "unsure"),       # the leading zero is gone: an edit to 1234?
    ("1234", "01234", "unsure"),
    ("1.5", "1.50", "unsure"),
    ("1.5", "1.5", "same"),
    ("5125550123.0", "5125550123", "same"),
    ("True", "true", "unsure"),          # a text "true" read as a yes/no by pandas
    ("Austin", "Austin ", "edit"),
    ("abc", "78742", "edit"),
    ("", "", "same"),
    ("nan", "", "same"),                 # astype(str) of an empty cell
    ("", "Austin", "edit"),              # cleared
    ("", "NA", "unsure"),                # pandas reads the text NA as empty
    ("NA", "NA", "same"),
    ("nan", "Austin", "unsure"),         # astype(str)'s empty, or the word?
])
def test_text_cells(text: str, loaded: str, verdict: str) -> None:
    assert value_verdict(text, loaded, TZ) == verdict
    if text and loaded and text not in ("nan",):
        assert text_verdict(text, loaded) == verdict


@pytest.mark.parametrize(("text", "loaded", "verdict"), [
    ("3.0", 3.0, "same"), ("3", 3, "same"), ("842.85", 842.8499999999999, "same"),
    ("1,234.50", 1234.5, "same"), ("3.5", 3.0, "edit"), ("", 3.0, "edit"),
    ("nan", float("nan"), "same"), ("x", 3.0, "edit"),
])
def test_number_cells(text: str, loaded: float, verdict: str) -> None:
    assert codec_for(FieldSpec("field_16", "number")).same_cell(
        text, loaded, "field_16", FieldSpec("field_16", "number"), CTX) == verdict


def test_computed_numbers_are_the_same_when_they_show_the_same() -> None:
    spec = FieldSpec("field_21", "average", format={"precision": 2})
    codec = codec_for(spec)
    assert codec.same_cell("842.85", 842.8473, spec.key, spec, CTX) == "same"
    assert codec.same_cell("842.86", 842.8473, spec.key, spec, CTX) == "edit"


@pytest.mark.parametrize(("text", "loaded", "verdict"), [
    ("TRUE", True, "same"), ("True", True, "same"), ("true", True, "same"),
    ("1.0", True, "same"), ("Yes", True, "same"), ("On", False, "edit"),
    ("Off", False, "same"), ("FALSE", True, "edit"), ("", True, "edit"),
    ("<NA>", pd.NA, "same"),
])
def test_boolean_cells_in_the_fields_own_words(text: str, loaded: Any, verdict: str) -> None:
    spec = FieldSpec("field_26", "boolean", format={"format": "on_off"})
    assert codec_for(spec).same_cell(text, loaded, spec.key, spec, CTX) == verdict


def test_times_written_another_way_are_the_same_instant() -> None:
    spec = FieldSpec("field_29", "date_time")
    codec = codec_for(spec)
    loaded = pd.Timestamp("2026-03-04 09:30", tz=TZ)
    for text in ("2026-03-04T09:30:00-06:00", "2026-03-04 09:30:00-06:00",
                 "2026-03-04 09:30:00", "03/04/2026 9:30 AM", "2026-03-04T15:30:00Z"):
        assert codec.same_cell(text, loaded, spec.key, spec, CTX) == "same", text
    assert codec.same_cell("2026-03-04 09:31", loaded, spec.key, spec, CTX) == "edit"
    assert codec.same_cell("not a time", loaded, spec.key, spec, CTX) == "edit"
    assert codec.same_cell("NaT", pd.NaT, spec.key, spec, CTX) == "same"


def test_a_field_without_time_of_day_is_the_same_day() -> None:
    spec = FieldSpec("field_9", "date_time", format={"time_format": "Ignore Time"})
    codec = codec_for(spec)
    loaded = pd.Timestamp("2026-03-04 00:00", tz=TZ)
    assert codec.same_cell("2026-03-04", loaded, spec.key, spec, CTX) == "same"
    assert codec.same_cell("03/04/2026 12:00", loaded, spec.key, spec, CTX) == "same"
    assert codec.same_cell("2026-03-05", loaded, spec.key, spec, CTX) == "edit"


def test_durations_and_lists() -> None:
    td = pd.Timedelta(hours=27, minutes=5)
    for text in ("27:05:00", "1 days 03:05:00"):
        assert value_verdict(text, td, TZ) == "same"
    assert value_verdict("27:06:00", td, TZ) == "edit"
    tags = np.array(["Electrical", "Safety"], dtype=object)
    for text in ("Electrical, Safety", "['Electrical' 'Safety']", "['Electrical', 'Safety']",
                 '["Electrical", "Safety"]'):
        assert value_verdict(text, tags, TZ, "Electrical, Safety") == "same", text
    assert value_verdict("['Safety' 'Electrical']", tags, TZ, "Electrical, Safety") == "edit"


@pytest.mark.parametrize(("text", "items"), [
    ('["a, b", "c"]', ["a, b", "c"]), ("['a' 'b']", ["a", "b"]), ("['a', 'b']", ["a", "b"]),
    ("['a' 'b'\n 'c']", ["a", "b", "c"]), ("[]", []), ('["it\'s" \'x\']', ["it's", "x"]),
    ("a, b", None), ("['a', 'b' 'c']", None), ("['a'] x", None), ("[1, 2]", None),
])
def test_list_texts(text: str, items: list[str] | None) -> None:
    assert list_items(text) == items


def test_an_edit_pandas_wrote_as_a_float_is_the_text_meant() -> None:
    assert whole_numbers(["78742", None, "", "60638"])
    assert not whole_numbers(["78742", "TX-1"]) and not whole_numbers(["01234", "78742"])
    assert not whole_numbers([None, ""])
    assert meant_text("99999.0", True) == "99999"
    assert meant_text("99999.0", False) == "99999.0"   # not a column of whole numbers
    assert meant_text("2.5", True) == "2.5"
