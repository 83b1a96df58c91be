"""Frames <-> Arrow: one conversion for every writer of Parquet (saved frames, the cache,
the DuckDB snapshot), keeping the column dtypes in the schema metadata.

Usage: ``table = frame_to_arrow(frames.main); df = arrow_to_frame(table)``
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

META_KEY = b"svc_frames"


_LIST = pa.list_(pa.string())


# the row index pandas and Dask write beside the columns: not data
PANDAS_INDEX = re.compile(r"^(__index_level_\d+__|__null_dask_index__)$")


# ---- one frame <-> one Arrow table ---------------------------------------------------
def _is_list_column(s: pd.Series) -> bool:
    if s.dtype != object:
        return False
    for v in s:
        if v is not None and not (isinstance(v, float) and v != v):
            return isinstance(v, (list, tuple))
    return True  # all empty object column: list kinds are the only object columns


def arrow_column(s: pd.Series, list_col: bool) -> pa.Array:
    """A column as every Parquet writer and the mirror write it (``list_col``: a list
    kind's column, its members as text)."""
    if list_col:
        return pa.array([None if not isinstance(v, (list, tuple)) else
                         [None if x is None else str(x) for x in v] for v in s], type=_LIST)
    if s.dtype == object:  # anything else kept as JSON text, never dropped
        return pa.array([None if v is None or v is pd.NA else
                         (v if isinstance(v, str) else json.dumps(v, default=str))
                         for v in s], type=pa.large_string())
    if isinstance(s.dtype, pd.DatetimeTZDtype):
        return pa.array(s, from_pandas=True, type=_timestamp_type(s.dtype.unit, s.dtype.tz))
    return pa.array(s, from_pandas=True)


@functools.lru_cache(maxsize=64)
def _timestamp_type(unit: str, tz: Any) -> pa.DataType:
    """Arrow's type of a time zone's timestamps, made once: made from a ``tzinfo``, Arrow
    tries ``import pytz`` each time (a search of every import path where pytz is not
    installed: a millisecond per column, per page a mirror writes as it reads)."""
    return pa.timestamp(unit, tz)


def frame_to_arrow(df: pd.DataFrame, meta: Mapping[str, Any] | None = None,
                   schema: pa.Schema | None = None) -> pa.Table:
    """A frame (index included as a column) -> an Arrow table; its dtypes and ``meta``
    go into the schema metadata. With ``schema``, the table is cast to it (export parts)."""
    plain = (isinstance(df.index, pd.RangeIndex) and df.index.start == 0
             and df.index.step == 1 and df.index.name is None)
    index_name = None if plain else str(df.index.name or "id")
    names = [str(c) for c in df.columns]
    arrays: list[pa.Array] = []
    dtypes: dict[str, str] = {}
    if index_name is not None:
        names.insert(0, index_name)
        arrays.append(arrow_column(pd.Series(df.index, dtype=df.index.dtype), False))
        dtypes[index_name] = str(df.index.dtype)
    for col in df.columns:
        s = df[col]
        is_list = (pa.types.is_list(schema.field(str(col)).type) if schema is not None
                   else _is_list_column(s))
        arrays.append(arrow_column(s, is_list))
        dtypes[str(col)] = "list" if is_list else str(s.dtype)
    info = dict(meta or {})
    info.update({"dtypes": dtypes, "index": index_name})
    table = pa.Table.from_arrays(arrays, names=names)
    if schema is not None:
        return table.cast(schema)
    return table.replace_schema_metadata({META_KEY: json.dumps(info).encode()})


def arrow_to_frame(table: pa.Table, dtypes: Mapping[str, str] | None = None,
                   index: str | None = None) -> pd.DataFrame:
    """Back from :func:`frame_to_arrow`: the exact dtypes (from ``dtypes``, else the
    table's metadata), lists as lists, ``index`` (else the metadata's) as the index."""
    info = table_meta(table)
    if dtypes is None:
        dtypes = info.get("dtypes", {})
        index = info.get("index")
    assert dtypes is not None
    cols: dict[str, Any] = {}
    for name in table.column_names:
        arr = table.column(name)
        want = dtypes.get(name)
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type):
            cols[name] = pd.Series(arr.to_pylist(), dtype=object)   # lists and None
            continue
        if want == "list":
            cols[name] = pd.Series([None if v is None else list(v) for v in arr.to_pylist()],
                                   dtype=object)
            continue
        s = arr.to_pandas()
        if want and want != str(s.dtype):
            s = s.astype(want)
        cols[name] = s
    df = pd.DataFrame(cols)
    if index is not None and index in df.columns:
        df = df.set_index(index)
    return df


def table_meta(table: pa.Table | pa.Schema) -> dict[str, Any]:
    """The ``svc_frames`` metadata of an Arrow table or schema ({} when absent)."""
    schema = table.schema if isinstance(table, pa.Table) else table
    raw = (schema.metadata or {}).get(META_KEY)
    try:
        out = json.loads(raw) if raw else {}
    except ValueError:
        return {}  # a writer's leftovers: the JSON file beside the data is what counts
    return out if isinstance(out, dict) else {}


TZ_DTYPE = re.compile(r"^datetime64\[(\w+), (.+)\]$")


def arrow_type(dtype: str) -> pa.DataType | None:
    """The Arrow type saved frames hold for a pandas dtype name (None: not checked).

    Usage: ``arrow_type("Float64") == pa.float64()``"""
    if dtype == "list":
        return _LIST
    if dtype in ("string", "str", "object", "string[python]", "string[pyarrow]"):
        return pa.large_string()
    if dtype.lower() == "float64":
        return pa.float64()
    if dtype.lower() == "int64":
        return pa.int64()
    if dtype in ("boolean", "bool"):
        return pa.bool_()
    m = TZ_DTYPE.match(dtype)
    if m:
        return pa.timestamp(m.group(1), m.group(2))
    if dtype.startswith("timedelta64["):
        return pa.duration(dtype[len("timedelta64["):-1])
    return None


def is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or getattr(pa.types, "is_string_view", lambda _: False)(t))


def conform(arr: pa.ChunkedArray, want: pa.DataType, tz: str | None) -> pa.ChunkedArray:
    """``arr`` as ``want`` when the change is only one of representation (what other
    writers do: large vs plain strings, microseconds, UTC instead of the app's zone, a
    nullable integer column written as floats, an all-empty column); ValueError else."""
    t = arr.type
    if t == want:
        return arr
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if pa.types.is_null(t):
        return arr.cast(want)
    if is_text(want) and is_text(t):
        return arr.cast(want)
    if pa.types.is_list(want):
        if ((pa.types.is_list(t) or pa.types.is_large_list(t)
             or getattr(pa.types, "is_list_view", lambda _: False)(t))
                and (is_text(t.value_type) or pa.types.is_null(t.value_type))):
            return arr.cast(want)
        raise ValueError
    if pa.types.is_floating(want) and (pa.types.is_floating(t) or pa.types.is_integer(t)
                                       or pa.types.is_decimal(t)):
        return arr.cast(want, safe=False)
    if pa.types.is_integer(want) and (pa.types.is_integer(t) or pa.types.is_floating(t)
                                      or pa.types.is_decimal(t)):
        return arr.cast(want)  # safe: a fraction is refused
    if pa.types.is_boolean(want) and pa.types.is_boolean(t):
        return arr
    if pa.types.is_timestamp(want) and pa.types.is_timestamp(t):
        if t.tz is None:  # a naive wall clock: the application's time
            arr = pc.assume_timezone(arr.cast(pa.timestamp(want.unit)), tz or "UTC",
                                     ambiguous="earliest", nonexistent="earliest")
        return arr.cast(want)
    if pa.types.is_duration(want):
        if pa.types.is_duration(t):
            return arr.cast(want)
        if pa.types.is_integer(t):  # DuckDB reads a duration as its count of units
            return arr.cast(pa.int64()).cast(want)
    raise ValueError
