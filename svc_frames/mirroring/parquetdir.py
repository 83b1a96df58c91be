"""The Parquet directory target: one dataset per table, the history partitioned by run,
read as they are by DuckDB, Polars, Spark, Dask and pyarrow.

Layout of a mirror at ``dir/``::

    dir/work_orders/part-00000.parquet                      the current state
    dir/work_orders__field_41/part-00000.parquet            an exploded table's
    dir/work_orders__history/run=1/part-00000.parquet       the versions a run wrote
    dir/svc_mirror_runs/part-00000.parquet ...              the mirror's own tables

Every file holds all its columns (``run_id`` included, so a reader that ignores the
``run=N`` directories loses nothing; one that reads them as hive partitions gets a
``run`` column beside it). DuckDB: ``read_parquet('dir/work_orders__history/*/*.parquet')``;
Polars: ``pl.scan_parquet('dir/work_orders__history/**/*.parquet')``.

A run is one transaction: the tables it changes are read into memory and changed there
(a history partition by partition: the partitions holding the versions a run closes,
found by reading their id and ``valid_to`` columns, and the run's own; the others are
neither read nor written);
at the end the new files are written to ``dir/.staging-<id>/``, then a journal
(``dir/.commit.json``, written aside and renamed into place: the commit point) lists the
directories to move into place, which are moved and the journal removed. A run killed
before the journal leaves its staging directory, removed by the next run; killed after
it, the next run (or ``as_of``) completes the moves first. A version closed by a run is
rewritten in the partition of the run that wrote it (``valid_to`` is in its file), so a
run rewrites the partitions holding the previous versions of the records it changed. A
reader listing the files during the moves of a commit may see some tables of the new run
and some of the last: read after the run (or through ``as_of``).

Usage::

    with ParquetTarget(Path("mirror/")) as t:
        t.check()
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import UsageError
from ..saved.layout import fsync, fsync_tree
from ..saved.pqfile import write_table
from .history import append_with_versions
from .lock import file_lock

__all__ = ["ParquetTarget"]

JOURNAL = ".commit.json"
PART = "part-00000.parquet"


#: Tables a run only appends to (the mirror's copies of files): a run's rows are written
#: as its own partition without the earlier ones being read.
APPEND_ONLY = ("svc_assets",)


def _history(table: str) -> bool:
    """A table partitioned by run (``run=N/``)."""
    return table.endswith("__history") or table in APPEND_ONLY


class ParquetWriter:
    """The changes of one transaction, made in memory (target.Writer)."""

    def __init__(self, target: ParquetTarget) -> None:
        self.target = target
        self.tables: dict[str, pa.Table | None] = {}   # None: dropped
        self.dirty: dict[str, set[int] | None] = {}     # run ids to rewrite; None: all
        # a history changed partition by partition (versions added and closed): only the
        # partitions holding the versions closed are read, and only they are written
        self.parts: dict[str, dict[int, pa.Table]] = {}

    def _get(self, table: str) -> pa.Table:
        if table not in self.tables:
            parts = self.parts.pop(table, None)
            data = self.target.read(table)
            if parts:   # the partitions changed so far replace theirs
                kept = data.filter(pc.invert(pc.is_in(data.column("run_id"), value_set=pa.array(
                    list(parts), pa.int64()))))
                data = pa.concat_tables([kept, *parts.values()], promote_options="default")
            self.tables[table] = data
            self.dirty.setdefault(table, set())
        data = self.tables[table]
        if data is None:
            raise UsageError(f"{table} was dropped in this run")
        return data

    def _mark(self, table: str, runs: Any) -> None:
        """Note the partitions to write again (a current table: all of it)."""
        if not _history(table):
            self.dirty[table] = None
            return
        have = self.dirty.get(table, set())
        if have is not None:
            have |= {int(r) for r in runs if r is not None}
            self.dirty[table] = have

    def create(self, table: str, schema: pa.Schema, primary_key: Sequence[str] = ()
               ) -> None:
        self.tables[table] = schema.empty_table()
        self.dirty[table] = None

    def drop(self, table: str) -> None:
        self.tables[table] = None
        self.dirty[table] = None

    def add_columns(self, table: str, schema: pa.Schema) -> None:
        data = self._get(table)
        for f in schema:
            data = data.append_column(f, pa.nulls(data.num_rows, f.type))
        self.tables[table] = data
        self.dirty[table] = None

    def rename_column(self, table: str, old: str, new: str) -> None:
        data = self._get(table)
        self.tables[table] = data.rename_columns(
            [new if c == old else c for c in data.column_names])
        self.dirty[table] = None

    def delete(self, table: str, column: str, ids: Sequence[str]) -> None:
        if not len(ids):
            return
        data = self._get(table)
        hit = pc.is_in(data.column(column), value_set=pa.array(list(ids), pa.string()))
        self._mark(table, data.filter(hit).column("run_id").to_pylist()
                   if _history(table) else ())
        self.tables[table] = data.filter(pc.invert(hit))

    def _by_part(self, table: str) -> bool:
        """Whether ``table`` is changed partition by partition: a history this run has
        not read whole (nor created, nor changed the columns of)."""
        return _history(table) and table not in self.tables and table in \
            self.target.tables()

    def _part(self, table: str, run: int) -> pa.Table:
        """One partition of a history, read once (empty, with the table's columns, if the
        run has none yet)."""
        parts = self.parts.setdefault(table, {})
        if run not in parts:
            path = self.target.path / table / f"run={run}" / PART
            parts[run] = (pq.read_table(path) if path.exists()
                          else self.target.schema(table).empty_table())
        return parts[run]

    @staticmethod
    def _fit(data: pa.Table, schema: pa.Schema) -> pa.Table:
        """``data``'s rows with ``schema``'s columns (those it lacks empty)."""
        cols = []
        for f in schema:
            col = (data.column(f.name) if f.name in data.column_names
                   else pa.nulls(data.num_rows, f.type))
            cols.append(col.cast(f.type) if not col.type.equals(f.type) else col)
        return pa.table(cols, schema=schema)

    def insert(self, table: str, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        if self._by_part(table):
            for run in sorted({int(r) for r in data.column("run_id").to_pylist()}):
                rows = data.filter(pc.equal(data.column("run_id"), run))
                have = self._part(table, run)
                self.parts[table][run] = pa.concat_tables([have, self._fit(rows, have.schema)])
                self._mark(table, [run])
            return
        if table in APPEND_ONLY and table not in self.tables:
            self.tables[table] = data   # this run's rows alone: its partition
            self.dirty[table] = {int(r) for r in data.column("run_id").to_pylist()}
            return
        have = self._get(table)
        cols = []
        for f in have.schema:
            col = (data.column(f.name) if f.name in data.column_names
                   else pa.nulls(data.num_rows, f.type))
            cols.append(col.cast(f.type) if not col.type.equals(f.type) else col)
        self.tables[table] = pa.concat_tables([have, pa.table(cols, schema=have.schema)])
        self._mark(table, data.column("run_id").to_pylist() if _history(table) else ())

    def insert_with_versions(self, parts: Sequence[tuple[str, str, pa.Table]],
                             when: dt.datetime, run_id: int) -> None:
        append_with_versions(self.insert, parts, when, run_id)

    def close_versions(self, table: str, column: str, ids: Sequence[str], when: Any
                       ) -> None:
        if not len(ids):
            return
        if self._by_part(table):
            # the partitions holding open versions of these ids: two columns read of each
            wanted = pa.array(list(ids), pa.string())
            loaded = self.parts.setdefault(table, {})
            for path in sorted((self.target.path / table).glob("run=*/" + PART)):
                run = int(path.parent.name.split("=", 1)[1])
                if run in loaded:
                    continue
                keys = pq.read_table(path, columns=[column, "valid_to"])
                hit = pc.and_kleene(pc.is_in(keys.column(column), value_set=wanted),
                                    pc.is_null(keys.column("valid_to")))
                if pc.any(pc.fill_null(hit, False)).as_py():
                    self._part(table, run)
            for run, part in list(loaded.items()):
                closed = _closed(part, column, wanted, when)
                if closed is not None:
                    loaded[run] = closed
                    self._mark(table, [run])
            return
        data = self._get(table)
        hit = pc.and_kleene(pc.is_in(data.column(column),
                                     value_set=pa.array(list(ids), pa.string())),
                            pc.is_null(data.column("valid_to")))
        hit = pc.fill_null(hit, False)
        self._mark(table, data.filter(hit).column("run_id").to_pylist())
        to = data.column("valid_to")
        new = pc.if_else(hit, pa.scalar(when, to.type), to)
        idx = data.column_names.index("valid_to")
        self.tables[table] = data.set_column(idx, data.schema.field(idx), new)

    # ---- commit ------------------------------------------------------------------------
    def commit(self) -> None:
        """Write the changed tables aside, then the journal, then move them in."""
        root = self.target.path
        stage = root / f".staging-{secrets.token_hex(6)}"
        stage.mkdir()
        moves: list[list[str]] = []
        removes: list[str] = []
        try:
            for name, data in self.tables.items():
                dirty = self.dirty.get(name)
                if data is None:
                    removes.append(name)
                    continue
                if dirty is not None and not dirty:
                    continue   # read, not changed

                if not _history(name):
                    (stage / name).mkdir()
                    write_table(data, stage / name / PART)
                    moves.append([f"{stage.name}/{name}", name])
                    continue
                runs = sorted({int(r) for r in data.column("run_id").to_pylist()})
                if dirty is None:   # the whole table: every partition, the old ones gone
                    (stage / name).mkdir()
                    for r in runs or [0]:   # run=0: an empty history keeps its columns
                        self._partition(data, r, stage / name)
                    moves.append([f"{stage.name}/{name}", name])
                    continue
                (stage / name).mkdir()
                for r in sorted(dirty):
                    self._partition(data, r, stage / name)
                    moves.append([f"{stage.name}/{name}/run={r}", f"{name}/run={r}"])
            for name, parts in self.parts.items():   # histories changed part by part
                (stage / name).mkdir()
                for r in sorted(self.dirty.get(name) or ()):
                    (stage / name / f"run={r}").mkdir()
                    write_table(parts[r], stage / name / f"run={r}" / PART)
                    moves.append([f"{stage.name}/{name}/run={r}", f"{name}/run={r}"])
            fsync_tree(stage)
            tmp = root / f"{JOURNAL}.tmp"
            tmp.write_text(json.dumps({"moves": moves, "removes": removes,
                                       "stage": stage.name}))
            fsync(tmp)
            os.replace(tmp, root / JOURNAL)   # the commit point
            fsync(root)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        finish(root)

    @staticmethod
    def _partition(data: pa.Table, run: int, into: Path) -> None:
        part = (data.filter(pc.equal(data.column("run_id"), run)) if data.num_rows
                else data)
        (into / f"run={run}").mkdir(parents=True, exist_ok=True)
        write_table(part, into / f"run={run}" / PART)


def _closed(part: pa.Table, column: str, ids: pa.Array, when: Any) -> pa.Table | None:
    """``part`` with ``valid_to = when`` on the open versions of ``ids``; None: none."""
    hit = pc.fill_null(pc.and_kleene(pc.is_in(part.column(column), value_set=ids),
                                     pc.is_null(part.column("valid_to"))), False)
    if not pc.any(hit).as_py():
        return None
    to = part.column("valid_to")
    idx = part.column_names.index("valid_to")
    return part.set_column(idx, part.schema.field(idx),
                           pc.if_else(hit, pa.scalar(when, to.type), to))


def finish(root: Path) -> None:
    """Complete a committed run's moves (idempotent), or drop an uncommitted staging."""
    journal = root / JOURNAL
    if journal.exists():
        plan = json.loads(journal.read_text())
        for name in plan["removes"]:
            shutil.rmtree(root / name, ignore_errors=True)
        for src, dst in plan["moves"]:
            if (root / src).exists():
                shutil.rmtree(root / dst, ignore_errors=True)
                (root / dst).parent.mkdir(parents=True, exist_ok=True)
                os.replace(root / src, root / dst)
        journal.unlink()
        fsync(root)
    for leftover in root.glob(".staging-*"):
        shutil.rmtree(leftover, ignore_errors=True)


class ParquetTarget:
    """A directory of Parquet datasets as a mirror target (module docstring)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.name = str(path)
        self.readonly = readonly

    def check(self) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise UsageError(f"mirror target {self.path} is a file, not a directory")
        if not self.path.exists():
            if self.readonly:
                raise UsageError(f"{self.path} is not a mirror: no such directory")
            if not self.path.parent.is_dir():
                raise UsageError(f"mirror target {self.path}: the directory "
                                 f"{self.path.parent} does not exist")
            self.path.mkdir()
        if not self.readonly and not os.access(self.path, os.W_OK):
            raise UsageError(f"mirror target {self.path} cannot be written (permissions)")
        others = [p.name for p in self.path.iterdir() if not p.name.startswith(".")
                  and not (p.is_dir() and any(p.rglob("*.parquet")))]
        if others:
            raise UsageError(f"mirror target {self.path} holds other files "
                             f"({', '.join(sorted(others)[:3])}): a mirror needs a "
                             "directory of its own")
        if not self.readonly and (self.path / JOURNAL).exists():
            finish(self.path)

    def lock(self, wait: float) -> AbstractContextManager[None]:
        return file_lock(self.path / ".mirror-lock", wait=wait, what=str(self.path))

    def tables(self) -> set[str]:
        return {p.name for p in self.path.iterdir()
                if p.is_dir() and not p.name.startswith(".")}

    def _files(self, table: str) -> list[Path]:
        return sorted((self.path / table).rglob("*.parquet"),
                      key=lambda p: (len(p.parts), str(p)))

    def read(self, table: str) -> pa.Table:
        files = self._files(table)
        if not files:
            raise UsageError(f"{self.path}: the table {table} has no file")
        parts = [pq.read_table(f) for f in files]
        return pa.concat_tables(parts, promote_options="default")

    def schema(self, table: str) -> pa.Schema:
        files = self._files(table)
        if not files:
            raise UsageError(f"{self.path}: the table {table} has no file")
        return pq.read_schema(files[0])

    def read_rows(self, table: str, column: str, ids: Sequence[str]) -> pa.Table:
        files = self._files(table)
        if not files:
            raise UsageError(f"{self.path}: the table {table} has no file")
        wanted = pa.array(list(ids), pa.string())
        # the key column alone is read first; the other columns of the matching rows only
        parts = []
        for f in files:
            pf = pq.ParquetFile(f)
            for g in range(pf.num_row_groups):
                keys = pf.read_row_group(g, columns=[column]).column(0)
                hit = pc.is_in(keys, value_set=wanted)
                if pc.any(hit).as_py():
                    parts.append(pf.read_row_group(g).filter(hit))
        if not parts:
            return pq.read_schema(files[0]).empty_table()
        return pa.concat_tables(parts, promote_options="default")

    def read_columns(self, table: str, columns: Sequence[str]) -> pa.Table:
        files = self._files(table)
        if not files:
            raise UsageError(f"{self.path}: the table {table} has no file")
        return pa.concat_tables([pq.read_table(f, columns=list(columns)) for f in files],
                                promote_options="default")

    def count(self, table: str) -> int:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in self._files(table))

    @contextmanager
    def _transaction(self) -> Iterator[ParquetWriter]:
        writer = ParquetWriter(self)
        yield writer
        writer.commit()

    def transaction(self) -> AbstractContextManager[ParquetWriter]:
        return self._transaction()

    def close(self) -> None:
        return None

    def __enter__(self) -> ParquetTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
