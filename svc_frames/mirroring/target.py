"""The target protocol: what a mirror run needs of a database, and which target a name is.

A target stores tables of Arrow-typed columns and changes them in one transaction:

* ``check()`` before any request to the service: reachable, writable, not someone else's;
* ``lock(wait)`` for the whole run: two runs never interleave;
* ``tables()``, ``read(table)``: what the last run left; ``read_rows(table, column,
  ids)``, ``read_columns(table, columns)`` and ``count(table)``: parts of it, so that an
  incremental run reads the rows of the records that changed, not whole tables;
* ``transaction()``: a :class:`Writer` whose changes are all kept when the block ends, or
  none of them (an exception, Ctrl-C, ``kill -9``).

``open_target`` picks the target from its name: ``postgresql://...`` (or
``postgres://``) is PostgreSQL, a path ending in ``/`` or an existing directory is a
directory of Parquet datasets, any other path a DuckDB file.

Usage::

    with open_target("app.duckdb") as target, target.lock(wait=0):
        with target.transaction() as w:
            w.insert("svc_mirror_runs", rows)
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from ..errors import UsageError
from .report import display_name

__all__ = ["MirrorTarget", "Writer", "open_target"]


class Writer(Protocol):
    """The changes of one transaction."""

    def create(self, table: str, schema: pa.Schema, primary_key: Sequence[str] = ()
               ) -> None:
        """Create ``table`` (replacing one of that name) with ``schema``'s columns."""

    def drop(self, table: str) -> None:
        """Drop ``table`` if it exists."""

    def add_columns(self, table: str, schema: pa.Schema) -> None:
        """Add ``schema``'s columns (empty in every row)."""

    def rename_column(self, table: str, old: str, new: str) -> None:
        """Rename a column."""

    def delete(self, table: str, column: str, ids: Sequence[str]) -> None:
        """Delete the rows whose ``column`` is one of ``ids``."""

    def insert(self, table: str, data: pa.Table) -> None:
        """Append ``data``'s rows, by column name (columns it lacks are empty)."""

    def insert_with_versions(self, parts: Sequence[tuple[str, str, pa.Table]],
                             when: dt.datetime, run_id: int) -> None:
        """For each ``(table, history, data)``: append ``data``'s rows to ``table``, and
        to ``history`` as the run's ``insert`` versions (``history.versions``): a
        listing's pages written as they are read, all their tables at once."""

    def close_versions(self, table: str, column: str, ids: Sequence[str], when: Any
                       ) -> None:
        """``valid_to = when`` where it is empty and ``column`` is one of ``ids``."""


class MirrorTarget(Protocol):
    """A mirror's database (module docstring); not ``keys.Target``, an object or view key."""

    name: str

    def check(self) -> None:
        """UsageError when the target cannot be reached or written."""

    def lock(self, wait: float) -> AbstractContextManager[None]:
        """Held for a whole run; TargetBusy naming the holder after ``wait`` seconds."""

    def tables(self) -> set[str]:
        """The tables the target holds."""

    def read(self, table: str) -> pa.Table:
        """Every row of ``table``."""

    def schema(self, table: str) -> pa.Schema:
        """``table``'s columns, without reading its rows."""

    def read_rows(self, table: str, column: str, ids: Sequence[str]) -> pa.Table:
        """The rows of ``table`` whose ``column`` is one of ``ids`` (every column)."""

    def read_columns(self, table: str, columns: Sequence[str]) -> pa.Table:
        """Every row of ``table``, these columns only."""

    def count(self, table: str) -> int:
        """``table``'s rows, without reading them."""

    def transaction(self) -> AbstractContextManager[Writer]:
        """One transaction: all of the block's changes, or none."""

    def close(self) -> None:
        """Release the connection."""

    def __enter__(self) -> MirrorTarget: ...

    def __exit__(self, *exc: object) -> None: ...


def open_target(spec: Any, *, readonly: bool = False) -> MirrorTarget:
    """The target a name names (module docstring), not yet checked.

    Usage: ``open_target("app.duckdb")``, ``open_target("postgresql://u@host/db")``"""
    if not isinstance(spec, (str, os.PathLike)) and hasattr(spec, "transaction"):
        target: MirrorTarget = spec   # a target object already
        return target
    if not isinstance(spec, (str, os.PathLike)) or not os.fspath(spec):
        raise UsageError(f"a mirror target is a DuckDB path, a directory of Parquet "
                         f"datasets or a postgresql:// URL, got {spec!r}")
    text = os.fspath(spec)
    if text.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresTarget
        return PostgresTarget(text, readonly=readonly)
    if "://" in text:
        raise UsageError(f"a mirror target URL starts with postgresql://, got "
                         f"{display_name(text)}")
    path = Path(text)
    if text.endswith(("/", os.sep)) or path.is_dir():
        from .parquetdir import ParquetTarget
        return ParquetTarget(path, readonly=readonly)
    from .duckdbtarget import DuckDBTarget
    return DuckDBTarget(path, readonly=readonly)
