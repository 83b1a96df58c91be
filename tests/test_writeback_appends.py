"""An analyst's own columns and rows: columns that are no field's are left out (never
sent, named in the plan and the report), columns that look like fields are refused; rows
appended by pd.concat, .loc[new label] or add_rows with a DataFrame are creates, and an
append that is refused names the forms that work. Over real HTTP on the local service."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import pandas as pd
import pytest
from fixtures.guard import FAST_GUARD

from svc_frames.errors import InvalidValue, UsageError
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import add_rows, diff, write_back

OBJ = "object_3"   # Work Orders: Title (field_12, required), Priority (field_25)


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=20, rate_limit=0, seed=21) as s:
        yield s


def _load(svc: LocalService, columns: Literal["keys", "labels"] = "labels") -> Frames:
    return read_object(client_for(svc), OBJ, columns=columns, progress=False)


def _writes(svc: LocalService) -> int:
    return sum(svc.request_log.count(method=m) for m in ("PUT", "POST", "DELETE"))


def _refused(svc: LocalService, frames: Frames, exc: type[Exception], *words: str) -> None:
    before = _writes(svc)
    with pytest.raises(exc) as err:
        write_back(client_for(svc), frames, progress=False)
    for w in words:
        assert w in str(err.value), (w, str(err.value))
    assert _writes(svc) == before


# ---- analysis columns ---------------------------------------------------------------------
@pytest.mark.parametrize("columns,title,priority", [("labels", "Title", "Priority"),
                                                    ("keys", "field_12", "field_25")])
def test_an_analysis_column_is_left_out_and_named(svc: LocalService, columns: Literal[
        "keys", "labels"], title: str, priority: str) -> None:
    o = _load(svc, columns)
    o.main["my_calc"] = o.main[priority] * 2
    plan = diff(o)
    assert plan.empty and plan.left_out == ["my_calc"]
    assert "my_calc" in repr(plan)
    rid = o.main.index[0]
    o.main.loc[rid, title] = f"Edited beside an analysis column ({columns})"
    plan = diff(o)
    assert plan.counts == {"update": 1, "create": 0, "delete": 0}
    assert list(plan.payloads[rid]) == ["field_12"]
    report = write_back(client_for(svc), o, progress=False, **FAST_GUARD)
    assert report.counts == {"applied": 1}
    assert report.left_out == ["my_calc"] and "my_calc" in repr(report)
    assert "my_calc" in o.main.columns            # the analyst's column stays
    assert o.original is not None and "my_calc" not in o.original.main.columns
    assert diff(o).empty
    assert _load(svc, columns).main.loc[rid, title] == \
        f"Edited beside an analysis column ({columns})"


def test_the_summary_line_names_the_columns_left_out(
        svc: LocalService, capsys: pytest.CaptureFixture[str]) -> None:
    o = _load(svc)
    o.main["ratio"] = o.main["Quantity"] / 2
    write_back(client_for(svc), o, dry_run=True, progress=True)
    assert "left out (no field): ratio" in capsys.readouterr().out


@pytest.mark.parametrize("columns,name,says", [
    ("keys", "field_99", ["'field_99' looks like a field key", "rename it"]),
    ("keys", "field_34.lat", ["'field_34.lat' looks like a field key"]),
    ("labels", "field_25", ["'field_25'", "write to 'Priority'"]),
    ("keys", "Priority", ["'Priority'", "write to 'field_25'"]),
    ("labels", "priority", ["'priority'", "only in case", "'Priority'"]),
    ("labels", "Due_Date", []),      # no field is named so: an analysis column
])
def test_a_column_that_looks_like_a_field_is_refused(
        svc: LocalService, columns: Literal["keys", "labels"], name: str,
        says: list[str]) -> None:
    o = _load(svc, columns)
    o.main[name] = 4.0
    if not says:
        assert diff(o).left_out == [name]
        return
    _refused(svc, o, UsageError, *says, "nothing was sent")


def test_a_misspelt_field_in_appended_rows_is_refused(svc: LocalService) -> None:
    o = _load(svc)
    o.main = pd.concat([o.main, pd.DataFrame({"Title": ["A"], "Priorty": [3.0]})])
    _refused(svc, o, UsageError, "'Priorty'", "only in new rows")


# ---- appends the pandas ways --------------------------------------------------------------
def test_pd_concat_appends_are_created(svc: LocalService) -> None:
    o = _load(svc)
    loaded = len(o.main)
    new = pd.DataFrame({"Title": ["Concat A", "Concat B"], "Priority": [3.0, 4.0]})
    o.main = pd.concat([o.main, new])
    assert o.main.index.name is None          # what pandas makes of it
    plan = diff(o)
    assert plan.counts == {"update": 0, "create": 2, "delete": 0}
    report = write_back(client_for(svc), o, progress=False)
    assert report.counts == {"applied": 2}
    assert o.main.index.name == "id" and len(o.main) == loaded + 2
    made = o.main.index[-2:].tolist()
    server = _load(svc)
    assert server.main.loc[made, "Title"].tolist() == ["Concat A", "Concat B"]
    assert server.main.loc[made, "Priority"].tolist() == [3.0, 4.0]
    assert diff(o).empty


def test_loc_with_a_new_label_is_created(svc: LocalService) -> None:
    o = _load(svc, "keys")
    o.main.loc["new1", "field_12"] = "Made by .loc"
    plan = diff(o)
    assert plan.counts == {"update": 0, "create": 1, "delete": 0}
    assert plan.record_ids == ["new:new1"]
    report = write_back(client_for(svc), o, progress=False)
    assert report.counts == {"applied": 1}
    rid = o.main.index[-1]
    assert rid != "new1" and len(rid) == 24
    assert _load(svc, "keys").main.loc[rid, "field_12"] == "Made by .loc"
    assert diff(o).empty


def test_add_rows_takes_a_dataframe_and_a_series(svc: LocalService) -> None:
    o = _load(svc)
    ids = add_rows(o, pd.DataFrame({"Title": ["DF row 1", "DF row 2"]}, index=[7, 8]))
    ids += add_rows(o, pd.Series({"Title": "Series row", "Priority": 2.0}))
    assert ids == ["new:0", "new:1", "new:2"]
    assert write_back(client_for(svc), o, progress=False).counts == {"applied": 3}
    titles = set(_load(svc).main["Title"])
    assert {"DF row 1", "DF row 2", "Series row"} <= titles


@pytest.mark.parametrize("rows,says", [
    ({"Title": "one dict"}, "got one dict"),
    ("text", "got a str"),
    ([1, 2], "row 0 is a int"),
])
def test_add_rows_refusals_name_the_forms_that_work(svc: LocalService, rows: object,
                                                     says: str) -> None:
    o = _load(svc)
    with pytest.raises(UsageError) as err:
        add_rows(o, rows)  # type: ignore[arg-type]
    assert says in str(err.value)
    assert "add_rows(frames, [{column: value}])" in str(err.value)
    assert "add_rows(frames, new_df)" in str(err.value)


def test_an_unknown_record_id_is_refused_naming_the_append_forms(svc: LocalService) -> None:
    o = _load(svc)
    o.main.loc["0123456789abcdef01234567", "Title"] = "a record of another load?"
    _refused(svc, o, UsageError, "unknown record ids", "pd.concat([frames.main, new_rows])",
             ".loc['new1', column]", "add_rows(frames, new_rows)")


def test_an_appended_row_without_a_required_field_is_refused(svc: LocalService) -> None:
    o = _load(svc)
    o.main = pd.concat([o.main, pd.DataFrame({"Priority": [3.0]})])
    _refused(svc, o, InvalidValue, "required", "Title")


def test_a_reset_index_is_still_refused(svc: LocalService) -> None:
    o = _load(svc)
    o.main = o.main.reset_index()
    _refused(svc, o, UsageError, "set_index")
