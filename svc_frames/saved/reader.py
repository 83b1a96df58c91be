"""read_saved: the records of saved frames as one DataFrame in the dtypes they were saved
with, for editing with pandas without any guessing.

``pd.read_csv`` guesses each column's type from its text (a zip code column with blanks
becomes floats, ``01234`` the number 1234), ``pd.read_parquet`` gives datetimes without
the nullable dtypes; ``read_saved`` reads every data file (CSV or Parquet) by the dtype
map of the JSON file beside them (``<dir>.svc_frames.json``, its ``columns``), checks them
as ``push`` does, and gives the records with their ``id`` as the first column, so
``to_csv(index=False)`` or ``to_parquet(index=False)`` writes them back as found.

Usage::

    df = read_saved("out/orders")
    df.loc[df["Status"] == "Open", "Status"] = "On Hold"
    df.to_csv("out/orders/part-00001.csv", index=False)
"""

from __future__ import annotations

import os

import pandas as pd

from ..errors import UsageError
from .layout import read_meta
from .parquet import read_parquet


def read_saved(path: str | os.PathLike[str], *, table: str | None = None) -> pd.DataFrame:
    """Read the records of saved frames with the dtypes they were saved with.

    The no-guessing reader of what :func:`export` or :func:`to_parquet` wrote, CSV or
    Parquet: every column has the dtype of the saved dtype map (the ``columns`` of the
    JSON file beside the data, ``<path>.svc_frames.json``: ``string`` for text such as zip
    codes, ``Float64``/``Int64`` for numbers, ``boolean``, ``datetime64[ns, <timezone>]``,
    ``timedelta64[ns]``, ``list`` for multiple choices), where ``pd.read_csv`` guesses
    from the text (``01234`` becomes 1234.0). Written back with ``to_csv(index=False)``
    or ``to_parquet(index=False)`` in ``path``, the records push exactly what was edited.

    Parameters
    ----------
    path : str or os.PathLike
        The records' directory of saved frames.
    table : str, optional
        Read this exploded table (a multiple choice, a connection, a timer's intervals:
        a key of the metadata's ``tables``) instead of the records.

    Returns
    -------
    pandas.DataFrame
        The records (``id`` first, then the saved columns in their order and dtypes,
        then any column the analyst added, as the files hold it), or the rows of
        ``table``.

    Raises
    ------
    UsageError
        What :func:`read_parquet` refuses (no saved frames at ``path``, missing or corrupt
        metadata, a data file that no longer fits, naming the file and the column), or a
        ``table`` the saved frames do not have.

    Examples
    --------
    >>> saved = export(client, "Work Orders", tmp_path / "orders", format="csv",
    ...                columns="keys", progress=False)
    >>> df = read_saved(saved.path)
    >>> str(df["field_34.zip"].dtype), str(df["field_25"].dtype), df.columns[0]
    ('string', 'Float64', 'id')
    >>> df.loc[0, "field_12"] = "Replace the pump"
    >>> df.to_csv(saved.path / "part-00001.csv", index=False)
    >>> push(client, saved.path, dry_run=True).counts
    {'planned': 1}
    """
    frames = read_parquet(path)
    if table is not None:
        if table not in frames.tables:
            raise UsageError(f"{path}: no table {table!r} in these saved frames (tables: "
                             f"{', '.join(map(repr, frames.tables)) or 'none'})", field=table)
        return frames.tables[table]
    index = read_meta(path).index
    main = frames.main.reset_index()
    return main.rename(columns={"index": index}) if index not in main.columns else main
