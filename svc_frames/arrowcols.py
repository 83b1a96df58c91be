"""Arrow-backed column helpers: whether a dtype is Arrow-backed, data compared without
pandas' object paths, ids probed in Arrow, chunks joined. Below every reader and writer of
frames (the read path, write-back, saved frames, the refresh's merge): pandas' string
dtype answers ``isin`` by walking its values in Python (half a second for 50,000 ids
against 50,000), which ``member`` does in Arrow.

Usage: ``mask = member(frame.index, ids)``; ``arrow_backed(series.dtype)``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


def arrow_backed(dtype: Any) -> bool:
    """Whether a column of this dtype holds its values in Arrow (``ArrowDtype``, or the
    pyarrow-stored "string" dtype). Usage: ``arrow_backed(frame[col].dtype)``"""
    return isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow")


def equal_data(a: Any, b: Any) -> np.ndarray | None:
    """Where two arrays of one dtype hold equal values, their NA cells aside (any answer
    there); None for an array kind not told here."""
    dtype = a.dtype
    if arrow_backed(dtype):
        eq = pc.equal(a.__arrow_array__(), b.__arrow_array__())
        return np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False),
                          dtype=bool)
    if isinstance(a, (pd.arrays.DatetimeArray, pd.arrays.TimedeltaArray)):
        return np.asarray(np.asarray(a.view("i8")) == np.asarray(b.view("i8")), dtype=bool)
    numpy_dtype = getattr(dtype, "numpy_dtype", None)  # a masked array (Int64, Float64...)
    if isinstance(a, (pd.arrays.IntegerArray, pd.arrays.FloatingArray,
                      pd.arrays.BooleanArray)) and numpy_dtype is not None:
        fill = False if numpy_dtype == np.bool_ else 0
        return np.asarray(a.to_numpy(dtype=numpy_dtype, na_value=fill)
                          == b.to_numpy(dtype=numpy_dtype, na_value=fill), dtype=bool)
    return None


def id_array(values: Any) -> pa.Array | pa.ChunkedArray:
    """Ids as Arrow text: a text column's or index's own Arrow data, chunks and all (no
    copy, no Python strings), else converted. ArrowInvalid/ArrowTypeError for ids that are
    not text. Usage: ``id_array(frames.main.index)``"""
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        data: pa.Array | pa.ChunkedArray = values.array.__arrow_array__()
        return data
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    return pa.array(np.asarray(values, dtype=object), type=pa.large_string(),
                    from_pandas=True)


def id_needles(ids: Any) -> pa.Array | list[Any]:
    """A few ids to look up, as one Arrow text array (made once, probed in many tables);
    as a list when they are not text. Usage: ``rows_by_record(t, id_needles(changed))``"""
    try:
        arr = id_array(ids if isinstance(ids, (pd.Index, pd.Series, np.ndarray))
                       else np.asarray(list(ids), dtype=object))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return list(ids)
    return combined(arr)


def probe(hay: Any, needles: Any, function: str) -> pa.ChunkedArray | pa.Array:
    """``pc.is_in``/``pc.index_in`` of ``hay`` (many, chunked as they are) in ``needles``
    (few: the hash is built over them)."""
    h = id_array(hay)
    n = combined(needles if isinstance(needles, (pa.Array, pa.ChunkedArray))
                 else id_array(needles))
    if n.type != h.type:
        n = n.cast(h.type)
    if function == "is_in":
        return pc.is_in(h, value_set=n, skip_nulls=True)
    return pc.index_in(h, value_set=n, skip_nulls=True)


ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def member(values: pd.Index | pd.Series, ids: Any) -> np.ndarray:
    """``values.isin(ids)`` as a bool array, in Arrow's compute over the values' own
    chunks (the string dtype's own ``isin`` walks its values in Python: seconds on
    100,000-record frames). ``ids`` may be :func:`id_needles`.

    Usage: ``rows = table[member(table["record_id"], changed_ids)]``"""
    keys = ids if isinstance(ids, (pd.Index, pd.Series, np.ndarray, pa.Array)) else list(ids)
    if not len(keys) or not len(values):
        return np.zeros(len(values), dtype=bool)
    try:
        hit = probe(values, keys, "is_in")
        return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)
    except ARROW_ERRORS:  # ids that are not text
        index = pd.Index(np.asarray(keys, dtype=object)).drop_duplicates()
        return np.asarray(index.get_indexer(np.asarray(values, dtype=object)) >= 0)


def locate(index: pd.Index, ids: pd.Index) -> tuple[np.ndarray, np.ndarray]:
    """(the position in ``index`` of each of ``ids``, -1 when absent, the first when it
    repeats; how many times each is in ``index``). ``ids`` (unique, the few) are hashed and
    ``index`` (the many) is probed in Arrow: no hash of a 100,000-record index per call.

    Usage: ``pos, count = locate(orig.main.index, server.main.index)``"""
    pos = np.full(len(ids), -1, dtype=np.int64)
    if not len(ids) or not len(index):
        return pos, np.zeros(len(ids), dtype=np.int64)
    try:
        hits = probe(index, ids, "index_in")
        rows = np.flatnonzero(np.asarray(hits.is_valid().to_numpy(zero_copy_only=False),
                                         dtype=bool))
        which = np.asarray(hits.drop_null().to_numpy(zero_copy_only=False), dtype=np.int64)
    except ARROW_ERRORS:  # ids that are not text
        found = pd.Index(np.asarray(ids, dtype=object)).get_indexer(
            np.asarray(index, dtype=object))
        rows = np.flatnonzero(found >= 0)
        which = found[rows].astype(np.int64)
    pos[which[::-1]] = rows[::-1]  # the last write wins: reversed, the first occurrence
    return pos, np.bincount(which, minlength=len(ids)).astype(np.int64)


def combined(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One Arrow array of a chunked one (a value set must be one array)."""
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def concat_rows(a: pd.DataFrame, b: pd.DataFrame | None, *, ignore_index: bool = False
                ) -> pd.DataFrame:
    """Rows of ``a`` then ``b`` with ``a``'s dtypes (an empty side adds nothing)."""
    if b is None or not len(b):
        return a
    if not len(a):
        out = b.reindex(columns=a.columns) if len(a.columns) else b.copy()
    else:
        out = pd.concat([a, b.reindex(columns=a.columns)], ignore_index=ignore_index)
    for col in a.columns:
        if out[col].dtype != a[col].dtype:
            try:
                out[col] = out[col].astype(a[col].dtype)
            except (TypeError, ValueError):
                pass
    if not ignore_index:
        out.index.name = a.index.name
    return out
