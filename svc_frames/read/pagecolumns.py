"""The columns of a pass's pages that a join would copy, each made once for the whole pass
and filled page by page as the pages are decoded.

Joining page frames chunks their Arrow columns (text: no copy) but copies every other
column (masked numbers, instants, durations, lists) into one new array while the parts
are still held, so the last join of a large load held its numeric columns twice (the
peak of a load's memory: docs/benchmarks.md, "A load's memory"). Here each page's such
columns are copied once, as the page is decoded, into the rows a :class:`Block` keeps for
it, and its frames hold views of those rows: the page's own arrays are freed at once
(their memory goes to the next page), and parts whose rows follow each other in one block
join by taking the block's rows (:meth:`Span.arrays`), with no copy. The blocks are made
with ``np.empty``: rows not yet filled cost no memory.

Usage::

    store = PageColumns()
    rows = store.rows(page.pass_no, expected=total)    # where one page's columns go
    frames = build_frames(records, fields, source, into=rows)
    span = rows.span(frames.main.shape)                # its rows, or None
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

MASKED = (pd.arrays.IntegerArray, pd.arrays.FloatingArray, pd.arrays.BooleanArray)

GROWTH = 8
"""Pages' rows a block holds at least, when the pass has more records than it expected
(records added during the load)."""


def joins_by_copy(column: Any) -> bool:
    """Whether joining ``column`` with others copies it (all but Arrow's, which chunk)."""
    return not isinstance(column, pd.arrays.ArrowExtensionArray)


def empty_like(column: Any, n: int) -> Any:
    """An array of ``column``'s type and dtype for ``n`` rows, its memory not yet touched
    (a masked dtype's own ``empty`` fills its values)."""
    dtype = column.dtype
    if isinstance(column, np.ndarray):
        return np.empty(n, dtype=dtype)
    if isinstance(column, MASKED):
        return type(column)(np.empty(n, dtype=dtype.numpy_dtype), np.empty(n, dtype=bool))
    if isinstance(dtype, np.dtype):   # instants without a timezone, durations
        return pd.array(np.empty(n, dtype=dtype), copy=False)
    return dtype.empty(n)


class Block:
    """Rows of one pass's pages, in the order the pages were decoded: per column position
    (of the main frame), one array of ``capacity`` rows, the first ``used`` filled."""

    def __init__(self, pass_no: int, capacity: int) -> None:
        self.pass_no, self.capacity, self.used = pass_no, capacity, 0
        self.columns: dict[int, Any] = {}

    def put(self, at: int, column: Any, start: int) -> Any | None:
        """``column`` copied into rows ``start:`` of column ``at``: a view of those rows,
        or None when the block's column is of another type or dtype (nothing copied)."""
        mine = self.columns.get(at)
        if mine is None:
            mine = self.columns[at] = empty_like(column, self.capacity)
        if type(mine) is not type(column) or mine.dtype != column.dtype:
            return None
        stop = start + len(column)
        mine[start:stop] = column
        return mine[start:stop]


@dataclass(frozen=True)
class Span:
    """Rows ``start:stop`` of a block, holding the columns at positions ``kept`` of the
    main frame of a part (one page's, or pages' joined in order)."""

    block: Block
    start: int
    stop: int
    kept: tuple[int, ...]

    def arrays(self) -> dict[int, Any]:
        """The part's kept columns, by position: views of the block's rows."""
        return {at: self.block.columns[at][self.start:self.stop] for at in self.kept}

    @staticmethod
    def joined(spans: Sequence[Span | None]) -> Span | None:
        """The span of parts joined in this order, when each one's rows follow the one
        before's in the same block with the same columns kept (else None: a join copies)."""
        if not spans or spans[0] is None:
            return None
        first = last = spans[0]
        for s in spans[1:]:
            if s is None or s.block is not last.block or s.start != last.stop \
                    or s.kept != last.kept:
                return None
            last = s
        return Span(first.block, first.start, last.stop, first.kept)


class PageRows:
    """Where one page's columns go, given to ``build_frames`` (``into``): called with each
    column of the main frame in order, it returns the column the page's frame holds (a
    view of the block's rows, or the column itself, an Arrow one)."""

    def __init__(self, store: PageColumns, pass_no: int, expected: int) -> None:
        self.store, self.pass_no, self.expected = store, pass_no, expected
        self.block: Block | None = None
        self.start = self.stop = 0
        self.position = 0
        self.kept: list[int] = []
        self.whole = True   # every column that joins by copy went to the block

    def __call__(self, column: Any) -> Any:
        at = self.position
        self.position += 1
        if not self.whole or not joins_by_copy(column):
            return column
        if self.block is None:
            self.block, self.start = self.store.reserve(self.pass_no, len(column),
                                                         self.expected)
            self.stop = self.start + len(column)
        view = self.block.put(at, column, self.start) \
            if len(column) == self.stop - self.start else None
        if view is None:
            self.whole = False
            return column
        self.kept.append(at)
        return view

    def abandon(self) -> None:
        """The page's frames were made otherwise (fetched again): no span."""
        self.whole = False

    def span(self, shape: tuple[int, int]) -> Span | None:
        """The page's span once its main frame (of ``shape``) is made from the columns
        given here, if every column that joins by copy is in the block."""
        if not self.whole or self.block is None or shape != (self.stop - self.start,
                                                             self.position):
            return None
        return Span(self.block, self.start, self.stop, tuple(self.kept))


class PageColumns:
    """The blocks of a run's pages (see the module docstring): one at a time, made for the
    records its pass expects, a new one for a new pass or when it is full."""

    def __init__(self) -> None:
        self.block: Block | None = None
        self.pass_rows: dict[int, int] = {}   # rows given out per pass

    def rows(self, pass_no: int, expected: int) -> PageRows:
        """Where the columns of a page of pass ``pass_no`` go; ``expected``: the records
        the pass is expected to hold in all (its total, or the load's limit)."""
        return PageRows(self, pass_no, expected)

    def reserve(self, pass_no: int, n: int, expected: int) -> tuple[Block, int]:
        """The block and first row of ``n`` rows of pass ``pass_no``."""
        block = self.block
        done = self.pass_rows.get(pass_no, 0)
        if block is None or block.pass_no != pass_no or block.used + n > block.capacity:
            block = self.block = Block(pass_no, max(expected - done, GROWTH * n if done else n))
        start = block.used
        block.used += n
        self.pass_rows[pass_no] = done + n
        return block, start
