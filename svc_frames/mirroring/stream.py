"""A full listing written while it is read: each page's rows go into the target, inside the
run's one transaction, while the next pages are on the wire.

An object a run lists in full for the first time (a first run, an object added) has every
record inserted: its current tables and its history (every row a version ``insert``) are
the pages' rows, in order. ``load`` hands each page's frames over as it decodes them
(``on_frames``); a writer thread turns them into Arrow and appends them to the tables it
created from page 1's columns, in the run's transaction (:class:`RunWrites`, opened at
the first page and committed by ``write_run``), so the writes overlap the paced reads
instead of following the last page. Nothing is visible before the commit: a run killed
while it streams leaves the target as the last run left it.

The frames ``load`` returns are the consistent pass's, each record once. The rows written
are kept only when they are exactly those (one pass, no record on two pages, in the
final order, every page's columns of the types page 1 gave): then ``write_run`` writes the
object's current tables and history no more (``ObjectRun.stream``). Otherwise (a second
pass, records moved by others' edits, a column whose type a later page decides) the
streamed tables are dropped inside the transaction and ``write_run`` writes the frames as
it writes any object: the same rows either way, only later.

Usage::

    with RunWrites(target) as writes:
        run.stream = StreamedObject(writes, run.table, when, run_id)
        run.frames = read_listing(client, run.key, rpp, run.stream)
        write_run(target, plan, writes.writer)
"""

from __future__ import annotations

import datetime as dt
import queue
import threading
from contextlib import ExitStack
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..frames import Frames
from ..read.load import load
from ..records import Client
from ..saved.arrow import frame_to_arrow
from .history import versions
from .state import fit_name, history_name
from .target import MirrorTarget, Writer

__all__ = ["RunWrites", "StreamedObject", "null_free", "read_listing"]


def null_free(schema: pa.Schema) -> pa.Schema:
    """Columns of Arrow's null type (a column empty in every row) as text, which every
    target can declare."""
    return pa.schema([f.with_type(pa.string()) if pa.types.is_null(f.type) else f
                      for f in schema])


class RunWrites:
    """The run's one transaction, opened by the first page written (``writer()``), kept
    open until the block ends: committed when it ends normally, rolled back otherwise.
    ``writer`` is None while nothing opened it (a run that streams nothing opens its
    transaction in ``write_run``, as before)."""

    def __init__(self, target: MirrorTarget) -> None:
        self.target = target
        self.writer: Writer | None = None
        self.streams: list[StreamedObject] = []   # their writer threads use the writer
        self._stack = ExitStack()

    def open(self) -> Writer:
        """The transaction's Writer, opened on first use."""
        if self.writer is None:
            self.writer = self._stack.enter_context(self.target.transaction())
        return self.writer

    def __enter__(self) -> RunWrites:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is not None:
            # a run stopped anywhere (Ctrl-C between two objects, in a finish): no writer
            # thread may still use the connection when it rolls back, or when the
            # interpreter exits under it
            for stream in self.streams:
                stream.abandon()
        self._stack.__exit__(*exc)   # commits, or rolls back and lets the error through


_DONE = object()


class StreamedObject:
    """One object's listing, written page by page by a writer thread (module docstring).

    ``page(pass_no, frames)`` queues a page (load's ``on_frames``); ``finish(frames)``
    waits for the writes, then keeps them (``whole`` True: ``write_run`` writes nothing
    more of the object) or drops the tables made (``whole`` False)."""

    def __init__(self, writes: RunWrites, table: str, when: dt.datetime, run_id: int
                 ) -> None:
        self.writes = writes
        self.table = table
        self.when = when
        self.run_id = run_id
        self.whole = False
        self.pages = 0                       # pages written
        self.schemas: dict[str, pa.Schema] = {}   # table -> its columns (page 1's)
        self._ids: list[np.ndarray] = []     # the main rows written, in order
        self._rows: dict[str, int] = {}      # table -> rows written
        self._passes: set[int] = set()
        self._diverged = ""                  # why the rows written are not kept
        self._error: BaseException | None = None
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="svc-mirror-writer",
                                        daemon=True)
        writes.streams.append(self)
        self._thread.start()

    # ---- the reading side ---------------------------------------------------------------
    def page(self, pass_no: int, frames: Frames) -> None:
        """Queue a page's frames (never waits: a writer behind the reads must not slow
        them; it takes the pages queued meanwhile together)."""
        if self._error is not None:
            self._stop()
            raise self._error
        self._passes.add(pass_no)
        self._queue.put(frames)

    def finish(self, frames: Frames) -> None:
        """Wait for the writes; keep them when they are exactly ``frames`` (the listing's
        consistent pass), else drop the tables they went to."""
        self._stop()
        if self._error is not None:
            raise self._error
        if not self._diverged:
            self._diverged = self._differs(frames)
        self.whole = not self._diverged and self.pages > 0
        if not self.whole and self.schemas:
            w = self.writes.open()
            for name in self.schemas:
                w.drop(name)
                w.drop(history_name(name))
            self.schemas.clear()

    def abandon(self) -> None:
        """Stop the writer thread, the pages queued unwritten (the run failed; its
        transaction rolls back)."""
        self._diverged = "abandoned"
        self._stop()

    @property
    def why_not(self) -> str:
        """Why the rows written were dropped ('' when kept)."""
        return self._diverged

    def _stop(self) -> None:
        if self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()

    def _differs(self, frames: Frames) -> str:
        """Why the rows written are not ``frames``' ('' when they are)."""
        if len(self._passes) > 1:
            return "several passes"
        written = np.concatenate(self._ids) if self._ids else np.array([], dtype=object)
        final = frames.main.index.to_numpy(dtype=object)
        if len(written) != len(final) or not (written == final).all():
            return "records moved between pages"
        for fkey, tdf in frames.tables.items():
            name = fit_name(f"{self.table}__{fkey}")
            if self._rows.get(name, 0) != len(tdf) or (len(tdf) and name not in self.schemas):
                return f"rows of {name}"
        if {fit_name(f"{self.table}__{k}") for k in frames.tables} != set(self.schemas) - {
                self.table}:
            return "exploded tables"
        return ""

    # ---- the writer thread --------------------------------------------------------------
    def _work(self) -> None:
        done = False
        while not done:
            batch = [self._queue.get()]
            while not self._queue.empty():   # the pages queued meanwhile: one insert each
                batch.append(self._queue.get_nowait())
            done = batch[-1] is _DONE
            pages = [f for f in batch if f is not _DONE]
            if not pages or self._error is not None or self._diverged:
                continue   # drained, not written
            try:
                self._write(pages)
            except BaseException as exc:  # noqa: BLE001  # re-raised in the reading thread
                self._error = exc

    def _write(self, pages: list[Frames]) -> None:
        """Pages in order: their main rows and each exploded table's, with their versions,
        one insert per table, all the tables in one call (a writer behind the reads
        catches up in fewer statements)."""
        w = self.writes.open()
        frames_of: dict[str, list[pd.DataFrame]] = {}
        for frames in pages:
            frames_of.setdefault(self.table, []).append(frames.main)
            for k, t in frames.tables.items():
                frames_of.setdefault(fit_name(f"{self.table}__{k}"), []).append(t)
        arrows: dict[str, pa.Table] = {}
        for name, dfs in frames_of.items():
            # the batch's pages joined, then converted once: each Arrow call lets go of
            # the interpreter's lock and waits to take it back from the reading thread
            data = self._fit(name, frame_to_arrow(_joined(dfs, name == self.table)))
            if data is None:
                self._diverged = f"the column types of {name}"
                return
            arrows[name] = data
        writes: list[tuple[str, str, pa.Table]] = []
        for name, data in arrows.items():
            if name not in self.schemas:
                # kept with its metadata: the column dtypes the object's layout records
                schema = null_free(data.schema).with_metadata(data.schema.metadata)
                self.schemas[name] = schema
                w.create(name, null_free(schema), ["id"] if name == self.table else [])
                w.create(history_name(name), null_free(
                    versions(data.slice(0, 0), self.when, self.run_id, "insert").schema))
                data = data.cast(schema)
            writes.append((name, history_name(name), data))
            self._rows[name] = self._rows.get(name, 0) + data.num_rows
        w.insert_with_versions(writes, self.when, self.run_id)
        self._ids += [f.main.index.to_numpy(dtype=object) for f in pages]
        self.pages += len(pages)

    def _fit(self, name: str, data: pa.Table) -> pa.Table | None:
        """``data`` in the table's columns (a column empty in this batch takes the
        table's type); None when a column's type differs (the whole listing decides it
        then)."""
        have = self.schemas.get(name)
        if have is None:
            return data
        if data.column_names != have.names:
            return None
        for i, f in enumerate(have):
            col = data.column(i)
            if col.type.equals(f.type):
                continue
            if col.null_count != len(col):
                return None
            data = data.set_column(i, f, pa.nulls(len(col), f.type))
        return data.replace_schema_metadata(have.metadata)


def _joined(dfs: list[pd.DataFrame], main: bool) -> pd.DataFrame:
    """A batch's pages of one table as one frame: the main table's index (the ids) kept,
    an exploded table's numbered again; a page without rows left out (its columns may be
    of another dtype), unless every page is empty."""
    full = [df for df in dfs if len(df)] or dfs[:1]
    if len(full) == 1:
        return full[0]
    return pd.concat(full, ignore_index=not main)


def read_listing(client: Client, key: str, rows_per_page: int,
                 stream: StreamedObject | None) -> Frames:
    """Every record of an object (``load``), each page written as it comes when
    ``stream`` is given (module docstring)."""
    if stream is None:
        return load(client, key, columns="keys", rows_per_page=rows_per_page,
                    progress=False)
    try:
        frames = load(client, key, columns="keys", rows_per_page=rows_per_page,
                      progress=False, on_frames=stream.page)
    except BaseException:
        stream.abandon()
        raise
    stream.finish(frames)
    return frames
