"""Values as the engine tests compare them: instants as epoch microseconds, durations as
nanoseconds, lists as lists, booleans and numbers as Python values, missing as None, so a
zone, a unit or a nullable dtype that differs only in representation is no difference."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def norm(v: Any) -> Any:
    """One cell as plain comparable Python."""
    if isinstance(v, (list, tuple, np.ndarray)):
        return [norm(x) for x in v]
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, (pd.Timestamp, dt.datetime)):
        assert v.tzinfo is not None, f"a naive timestamp {v!r}: which instant?"
        return int(pd.Timestamp(v).value // 1000)
    if isinstance(v, (pd.Timedelta, dt.timedelta)):
        return int(pd.Timedelta(v).value)
    if isinstance(v, np.generic):
        return norm(v.item())
    if isinstance(v, float) and v.is_integer():
        return int(v)  # Int64 in pandas, bigint or double elsewhere: the same number
    return v


def rows_of_frame(df: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    return sorted(repr(tuple(norm(v) for v in row))
                  for row in df[list(columns)].itertuples(index=False, name=None))


def spark_rows(spark: Any, path: Path, columns: Sequence[str]) -> list[str]:
    """The rows Spark reads at ``path``, its timestamps as epoch microseconds."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    sdf = spark.read.parquet(str(path))
    types = {f.name: f.dataType for f in sdf.schema.fields}
    cols = [F.unix_micros(F.col(f"`{c}`")) if isinstance(types[c], TimestampType)
            else F.col(f"`{c}`") for c in columns]
    return sorted(repr(tuple(norm(v) for v in row)) for row in sdf.select(*cols).collect())


def dask_rows(path: Path, columns: Sequence[str]) -> list[str]:
    import dask.dataframe as dd

    return rows_of_frame(dd.read_parquet(str(path)).compute(), columns)
