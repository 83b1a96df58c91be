"""arrowcols.py: the Arrow column helpers agree with pandas' own answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from svc_frames.arrowcols import arrow_backed, concat_rows, locate, member


def chunked(values: list[str | None], size: int) -> pd.Series:
    """A string column of several Arrow chunks, as a load of many pages leaves one."""
    parts = [pd.Series(values[i:i + size], dtype="string") for i in range(0, len(values),
                                                                           size)]
    return pd.concat(parts, ignore_index=True)


def test_member_is_isin_over_chunks() -> None:
    col = chunked(["a", "b", None, "c", "a", "d"], 2)
    got = member(col, ["a", "d", "x"])
    assert got.tolist() == col.isin(["a", "d", "x"]).fillna(False).tolist()
    assert member(col, []).tolist() == [False] * 6
    assert member(pd.Index([1, 2, 3]), [2]).tolist() == [False, True, False]


def test_member_takes_what_its_callers_pass() -> None:
    """The read path, saved frames and write-back ask with a string Index (the loaded
    frame's), a set or a list of ids, of string Series and Indexes with NA: each answer
    is pandas' own ``isin``."""
    values = pd.Index(["r1", "r2", None, "r4", "r2"], dtype="string")
    column = pd.Series(values)
    for ids in (pd.Index(["r2", "r4", "r9"], dtype="string"), {"r2", "r4"}, ["r4"],
                pd.Index(["r1"], dtype=object)):
        for hay in (values, column):
            want = hay.isin(list(ids)).tolist()
            assert member(hay, ids).tolist() == [bool(w) for w in want], (ids, type(hay))


def test_locate_finds_the_first_position_and_counts_repeats() -> None:
    index = pd.Index(["r1", "r2", "r3", "r2"], dtype="string")
    pos, count = locate(index, pd.Index(["r2", "r9", "r1"], dtype="string"))
    assert pos.tolist() == [1, -1, 0]
    assert count.tolist() == [2, 0, 1]
    empty, none = locate(index, pd.Index([], dtype="string"))
    assert len(empty) == 0 and len(none) == 0


def test_arrow_backed_and_concat_rows() -> None:
    assert arrow_backed(pd.StringDtype("pyarrow"))
    assert arrow_backed(pd.ArrowDtype(pa.int64()))
    assert not arrow_backed(pd.StringDtype("python"))
    assert not arrow_backed(np.dtype("int64"))
    a = pd.DataFrame({"x": pd.array([1, 2], dtype="Int64")}, index=["a", "b"])
    b = pd.DataFrame({"x": [3.0]}, index=["c"])
    both = concat_rows(a, b)
    assert both["x"].tolist() == [1, 2, 3] and list(both.index) == ["a", "b", "c"]
    assert both["x"].dtype == "Int64"  # a's dtypes kept
    assert concat_rows(a, None)["x"].tolist() == [1, 2]
