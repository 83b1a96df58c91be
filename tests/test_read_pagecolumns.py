"""read/pagecolumns.py: a pass's page columns copied into arrays made for the pass, and
parts whose rows follow each other there joined without copying them, equal to the
plain join (values, dtypes, index, column order)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from svc_frames.frames import Frames, Source
from svc_frames.read.pagecolumns import GROWTH, PageColumns, PageRows, Span, empty_like
from svc_frames.read.pipeline import concat_frames

SOURCE = Source("object", "object_1", [])


def columns(ids: list[str], k: int) -> dict[str, object]:
    """One column of each kind a page frame holds; ``k`` varies the values."""
    n = len(ids)
    return {
        "text": pd.array([f"t{k}-{i}" for i in range(n)], dtype="string"),
        "number": pd.array([k + i / 2 if i % 3 else None for i in range(n)], dtype="Float64"),
        "count": pd.array([k * 10 + i if i % 2 else None for i in range(n)], dtype="Int64"),
        "flag": pd.array([bool(i % 2) if i else None for i in range(n)], dtype="boolean"),
        "when": pd.date_range("2026-01-01", periods=n, freq="h", tz="America/Chicago")
        .array,
        "took": pd.to_timedelta(np.arange(n) + k, unit="s").array,
        "tags": pd.Series([[f"a{k}", i] for i in range(n)], dtype=object).array,
    }


def page(rows: PageRows | None, ids: list[str], k: int) -> tuple[Frames, PageRows | None]:
    """A page's frames as build_frames makes them: each column given to ``rows``."""
    cols = {name: (rows(c) if rows is not None else c) for name, c in columns(ids, k).items()}
    main = pd.DataFrame(cols, index=pd.Index(pd.array(ids, dtype="string"), name="id"),
                        copy=False)
    return Frames(main, {}, SOURCE), rows


def test_pages_fill_one_block_and_join_as_its_rows() -> None:
    store = PageColumns()
    sizes = [3, 4, 2]
    parts, spans = [], []
    start = 0
    for k, n in enumerate(sizes):
        ids = [f"{k}-{i}" for i in range(n)]
        frames, rows = page(store.rows(1, expected=sum(sizes)), ids, k)
        assert rows is not None
        span = rows.span(frames.main.shape)
        assert span is not None and (span.start, span.stop) == (start, start + n)
        start += n
        parts.append(frames)
        spans.append(span)
    assert store.block is not None and store.block.capacity == sum(sizes)
    # text (Arrow) joins by chunks: only the others are in the block
    assert spans[0].kept == (1, 2, 3, 4, 5, 6)
    plain = [page(None, [f"{k}-{i}" for i in range(n)], k)[0] for k, n in enumerate(sizes)]
    want = concat_frames(plain, SOURCE).main
    got = concat_frames(parts, SOURCE, spans=spans).main
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert list(got.dtypes) == list(want.dtypes) and got.columns.equals(want.columns)
    # the joined columns are the block's rows, not a copy
    block = store.block.columns
    assert np.shares_memory(got["when"].array.asi8, block[4].asi8)
    # a join of parts out of order, or with a gap, copies (and is still right)
    assert Span.joined([spans[1], spans[0]]) is None
    assert Span.joined([spans[0], spans[2]]) is None
    assert Span.joined([spans[0], None]) is None
    swapped = concat_frames([parts[1], parts[0]], SOURCE, spans=[spans[1], spans[0]]).main
    pd.testing.assert_frame_equal(swapped, concat_frames([plain[1], plain[0]], SOURCE).main)
    # an order given (records moved by a gap check) takes the plain path too
    order = list(want.index[::-1])
    pd.testing.assert_frame_equal(
        concat_frames(parts, SOURCE, order=order, spans=spans).main,
        concat_frames(plain, SOURCE, order=order).main)


def test_a_new_pass_or_a_full_block_starts_another_block() -> None:
    store = PageColumns()
    a, _ = page(rows_a := store.rows(1, expected=4), ["1", "2", "3"], 0)
    b, _ = page(rows_b := store.rows(1, expected=4), ["4", "5"], 1)   # past the total
    first, second = rows_a.span(a.main.shape), rows_b.span(b.main.shape)
    assert first is not None and second is not None
    assert second.block is not first.block and second.block.capacity == GROWTH * 2
    assert Span.joined([first, second]) is None
    c, _ = page(rows_c := store.rows(2, expected=10), ["1"], 2)
    third = rows_c.span(c.main.shape)
    assert third is not None and third.block.pass_no == 2 and third.block.capacity == 10


def test_a_column_of_another_dtype_leaves_the_page_out_of_the_block() -> None:
    store = PageColumns()
    page(store.rows(1, expected=4), ["1", "2"], 0)
    rows = store.rows(1, expected=4)
    odd = pd.array([1, 2], dtype="Int32")
    assert rows(pd.array(["x", "y"], dtype="string")) is not None
    assert rows(odd) is odd          # the block's column 1 is Float64: kept as it is
    assert rows.span((2, 2)) is None
    abandoned = store.rows(1, expected=4)
    frames, _ = page(abandoned, ["3"], 1)
    abandoned.abandon()               # made otherwise (fetched again): no span
    assert abandoned.span(frames.main.shape) is None


@pytest.mark.parametrize("name", list(columns(["x"], 0)))
def test_empty_like_keeps_type_and_dtype(name: str) -> None:
    column = columns(["x", "y"], 0)[name]
    empty = empty_like(column, 5)
    assert type(empty) is type(column) and empty.dtype == column.dtype and len(empty) == 5
