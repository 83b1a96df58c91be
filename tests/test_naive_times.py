"""A naive time given to a date column, every way an analyst gives one, over the local
service: written, then read back, the instant on the server is the application-timezone
wall time (docs/bulk-editing.md, "Dates and naive times").

pandas refuses a naive ``Timestamp`` put into one cell of a tz-aware column itself
(``TypeError: Invalid value '...' for dtype 'datetime64[..., America/Chicago]'``), before
any code of ours runs: the documented fixes (a string, or the time given its zone) are
tested here, and so is the error text the documentation quotes so a search finds it.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable, Iterator

import pandas as pd
import pytest
from fixtures.guard import FAST_GUARD

from svc_frames import Client, add_rows, diff, read_object, write_back
from svc_frames.frames import Frames
from svc_frames.server import LocalService

WALL = "2026-03-02 09:00"          # a wall time in the application's timezone


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=12, rate_limit=0, seed=3) as service:
        yield service


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)


def _load(client: Client) -> Frames:
    return read_object(client, "object_3", columns="labels", progress=False)


def _wall(frames: Frames, text: str = WALL) -> pd.Timestamp:
    assert frames.source is not None and frames.source.timezone
    return pd.Timestamp(text, tz=frames.source.timezone)


def test_pandas_refuses_a_naive_timestamp_in_one_cell_and_the_documented_fixes_work(
        svc: LocalService) -> None:
    client = _client(svc)
    orders = _load(client)
    tz = orders.source.timezone if orders.source else None
    first, second, third = orders.main.index[:3]
    # pandas' own refusal, the text docs/bulk-editing.md quotes
    with pytest.raises(TypeError, match=r"Invalid value '.*' for dtype 'datetime64\[.*, "
                                        + str(tz)):
        orders.main.loc[first, "Due"] = pd.Timestamp(WALL)
    orders.main.loc[first, "Due"] = WALL                                  # a string
    orders.main.loc[second, "Due"] = pd.Timestamp(WALL, tz=tz)            # with its zone
    orders.main.loc[third, "Due"] = pd.Timestamp("2026-03-03 09:00").tz_localize(tz)
    assert write_back(client, orders, progress=False, **FAST_GUARD).counts == {"applied": 3}
    back = _load(client).main
    assert back.loc[first, "Due"] == back.loc[second, "Due"] == _wall(orders)
    assert back.loc[third, "Due"] == _wall(orders, "2026-03-03 09:00")
    assert str(back.loc[first, "Due"].tz) == tz


def _whole_column(frames: Frames) -> None:
    frames.main["Due"] = pd.Series(pd.Timestamp(WALL), index=frames.main.index)


def _whole_column_text(frames: Frames) -> None:
    frames.main["Due"] = WALL


def _add_rows_dicts(frames: Frames) -> None:
    add_rows(frames, [{"Title": "naive", "Due": dt.datetime(2026, 3, 2, 9, 0)}])


def _add_rows_frame(frames: Frames) -> None:
    add_rows(frames, pd.DataFrame({"Title": ["naive"], "Due": [pd.Timestamp(WALL)]}))


def _concat(frames: Frames) -> None:
    new = pd.DataFrame({"Title": ["naive"], "Due": [pd.Timestamp(WALL)]})
    frames.main = pd.concat([frames.main, new])


def _concat_text(frames: Frames) -> None:
    frames.main = pd.concat([frames.main, pd.DataFrame({"Title": ["naive"], "Due": [WALL]})])


def _loc_new_label_text(frames: Frames) -> None:
    frames.main.loc["new1", "Title"] = "naive"
    frames.main.loc["new1", "Due"] = WALL


def _loc_new_row(frames: Frames) -> None:
    # a whole row: pandas enlarges the frame (the date column becomes object, and text
    # columns empty in every row become null[pyarrow], which holds no server value)
    with warnings.catch_warnings():       # pandas: the date column's upcast to object
        warnings.simplefilter("ignore")
        frames.main.loc["new1"] = pd.Series({"Title": "naive", "Due": pd.Timestamp(WALL)})


PATHS: dict[str, Callable[[Frames], None]] = {
    "whole column": _whole_column, "whole column text": _whole_column_text,
    "add_rows dicts": _add_rows_dicts, "add_rows frame": _add_rows_frame,
    "concat": _concat, "concat text": _concat_text,
    "loc new label text": _loc_new_label_text, "loc new row": _loc_new_row,
}


@pytest.mark.parametrize("path", list(PATHS))
def test_a_naive_time_is_the_applications_wall_time_on_the_server(
        svc: LocalService, path: str) -> None:
    client = _client(svc)
    orders = _load(client)
    PATHS[path](orders)
    report = write_back(client, orders, progress=False, **FAST_GUARD)
    assert set(report.counts) == {"applied"}, report.table
    back = _load(client).main
    if path.startswith("whole"):
        assert (back["Due"] == _wall(orders)).all()
    else:
        assert list(back.loc[back["Title"] == "naive", "Due"]) == [_wall(orders)]
    assert diff(orders).empty                       # the frames followed the server
    # and the next edit of the same column is no conflict: what the frames remember
    # as loaded is the server's instant, not the naive time
    rid = back.index[0] if path.startswith("whole") else orders.main.index[-1]
    orders.main.loc[rid, "Due"] = "2026-04-01 10:00"
    assert write_back(client, orders, progress=False, **FAST_GUARD).counts == {"applied": 1}
    assert _load(client).main.loc[rid, "Due"] == _wall(orders, "2026-04-01 10:00")
