"""``export``: an object or a view streamed page by page into a saved-frames directory,
memory flat in the number of records (one part file per batch of pages).

Usage: ``export(client, "object_3", "out/orders")``
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import UsageError
from ..frames import Source, build_frames, warn_skipped
from ..keys import Target
from ..kinds.base import FieldSpec
from ..lookup import target_keys
from ..names import path_names
from ..progress import PageProgress, want_progress
from ..query import Filters
from ..read.gcpause import paused_gc
from ..read.options import Columns, LoadOptions
from ..read.pager import Page, Paginator, Verify
from ..read.pipeline import PagePipeline
from ..read.target import describe
from ..records import Client
from .arrow import arrow_to_frame, frame_to_arrow, table_meta
from .layout import SavedLayout, Staging, check_free, meta_doc, warn_dir_renames, write_meta
from .parquet import column_fields, write_csv
from .pqfile import write_table
from .xlsx import check_openpyxl, write_xlsx


# ---- streaming export ----------------------------------------------------------------
@dataclass
class ExportResult:
    """What :func:`export` wrote."""

    path: Path
    records: int
    parts: int
    tables: list[str]
    passes: int
    repaired_rows: int = 0  # rows taken out after records moved mid-run (repeats, deleted)
    tables_path: Path | None = None  # ``<path>.tables``: one dataset per table, if any
    meta_path: Path | None = None    # ``<path>.svc_frames.json``: what push needs
    loaded_path: Path | None = None  # ``<path>.svc_frames``: the as-loaded copy


class _PartWriter:
    """Writes one dataset (main or a table) as Parquet part files sharing one schema."""

    def __init__(self, root: Path, meta: Mapping[str, Any]) -> None:
        self.root = root
        self.meta = meta
        self.schema: pa.Schema | None = None
        self.parts = 0
        root.mkdir(parents=True, exist_ok=True)

    def write(self, df: pd.DataFrame, number: int) -> None:
        table = frame_to_arrow(df, self.meta, self.schema)
        if self.schema is None:
            self.schema = table.schema
        self.parts += 1
        write_table(table, self.root / f"part-{number:05d}.parquet")


def export(client: Client, target: Target, out_dir: str | os.PathLike[str], *,
           filters: Filters | None = None,
           format: Literal["parquet", "csv", "xlsx"] = "parquet",
           sort_field: str | None = None, sort_order: str | None = None,
           limit: int | None = None, columns: Columns = "labels",
           timezone: str | ZoneInfo | None = None, progress: bool | None = None,
           rows_per_page: int = 1000, verify: Verify = "first",
           overwrite: bool = False) -> ExportResult:
    """Stream every record of an object or a view into saved frames, page by page.

    Writes the layout of :func:`to_parquet` (records in ``out_dir``, tables in
    ``out_dir.tables``, the as-loaded copy and the metadata :func:`push` needs) as pages
    arrive, so memory stays flat however many records there are. The directory appears
    only when complete. Records that moved between pages while paging are repaired (a
    repeat or a record deleted meanwhile is taken out: ``repaired_rows``). Column and
    table names: docs/column-names.md.

    Parameters
    ----------
    client : Client
        The application to read.
    target : str or tuple of str
        An object by key or name (``"object_3"``, ``"Work Orders"``), or a view
        (``"scene_2/view_3"``, a (scene, view) tuple of keys or names, or its name).
    out_dir : str or os.PathLike
        The records' directory; its siblings are named after it.
    filters, sort_field, sort_order, limit, timezone, rows_per_page, verify
        As for :func:`read_object`: which records, in which order, at most how many,
        dates read in which timezone, records per request, and how each pass is
        verified ("first", "full" or "none").
    format : {"parquet", "csv", "xlsx"}, default "parquet"
        The records' files; CSV holds values as the service shows them, xlsx (Excel
        workbooks, needs openpyxl) dates as the application's wall time and numbers as
        numbers; :func:`push` reads each back (the as-loaded copy is Parquet either way).
    columns : {"labels", "keys"} or list of str, default "labels"
        Name columns and tables by field label or by field key; or the fields to save
        (by label or key), named by label (see :func:`read_object`).
    progress : bool, optional
        A progress bar of pages (default: on in notebooks and terminals).
    overwrite : bool, default False
        Replace saved frames (or a directory of data files alone) already there.

    Returns
    -------
    ExportResult
        ``path``, ``records``, ``parts`` (files of records), ``tables`` (their names),
        ``passes`` (paging passes made), ``repaired_rows``, and the paths of the tables,
        the metadata and the as-loaded copy (``tables_path``, ``meta_path``,
        ``loaded_path``).

    Raises
    ------
    UsageError
        Before any request: a bad ``format`` (or ``"xlsx"`` without openpyxl), ``columns``, ``filters`` or ``timezone``,
        something at ``out_dir`` without ``overwrite=True`` (or files that are not saved
        frames), a target that names no object or view or several.
    ConsistencyError
        Records kept moving while paging in a way the repeated passes could not repair.
    ServiceError
        A page request failed after the client's retries (``NotFound``, ``Forbidden``
        for a view behind a login without ``client.login``, ``QuotaExceeded``,
        ``ServerError``...); nothing is left at ``out_dir``.

    Examples
    --------
    >>> result = export(client, "Work Orders", tmp_path / "orders")
    >>> result.records, result.parts, result.tables
    (30, 1, ['Tags', 'Work Time', 'Parts', 'Assignee', 'Created By'])
    >>> read_parquet(result.path).main.shape
    (30, 55)
    >>> export(client, "Parts", tmp_path / "parts", format="csv").records
    40
    >>> book = export(client, "Parts", tmp_path / "book", format="xlsx").path
    >>> sorted(p.name for p in book.iterdir())     # dates as the application's wall time
    ['part-00001.xlsx']
    """
    if format not in ("parquet", "csv", "xlsx"):
        raise UsageError(f"format must be 'parquet', 'csv' or 'xlsx', got {format!r}")
    if format == "xlsx":
        check_openpyxl()
    opts = LoadOptions.of(filters=filters, sort_field=sort_field, sort_order=sort_order,
                          limit=limit, columns=columns, timezone=timezone,
                          rows_per_page=rows_per_page, verify=verify,
                          max_workers=min(client.max_workers, 3))
    layout = SavedLayout.of(out_dir)
    check_free(layout, overwrite)
    tgt = target_keys(client.schema(), target)  # a name, or a key the schema must hold
    # fields by key and the filters prepared, once: the pager sends them as they are
    opts = opts.prepared(client, tgt)
    columns, sort_field, tz = opts.columns, opts.sort_field, opts.timezone
    bar = PageProgress(want_progress(progress), f"export {client.records_path(tgt)[2]}")
    pager = Paginator(client, tgt, opts, on_page=bar, prefetch=3, keep_ids=False,
                      keyset=True)
    app = client.schema()  # first: every part must share the schema it fixes
    tz = tz or app.timezone
    pipe = PagePipeline(pager, tz=tz)
    fields = None
    source: Source | None = None
    main_writer: _PartWriter | None = None
    table_writers: dict[str, _PartWriter] = {}
    count = 0
    in_pass: dict[int, int] = {}
    skipped: dict[str, list[str]] = {}   # column -> records: wall times the timezone skips
    with Staging(layout) as st:
        # pages go to the as-loaded copy as they come, without an id set (memory stays
        # flat); a pass that turns out inconsistent is repaired after the loop, from the
        # files; the records (Parquet or CSV) are then derived from it part by part
        loaded_main, loaded_tables = st.loaded / "main", st.loaded / "tables"
        try:
            for page in _gc_paused_iter(pager.iter_pages()):
                new = page.records
                if limit is not None:
                    new = new[: max(0, limit - in_pass.get(page.pass_no, 0))]
                in_pass[page.pass_no] = in_pass.get(page.pass_no, 0) + len(new)
                if fields is None or source is None:
                    fields, source = describe(client, tgt, app, new, columns, tz)
                    main_writer = _PartWriter(loaded_main, {"source": source.to_dict()})
                    # as the loaders decide it (without a schema: display values stay)
                    pipe.settle(page, fields, source, raw_pages=bool(app))
                if not new:
                    continue
                count += len(new)
                frames = pipe.frames(page, None if len(new) == len(page.records) else new)
                for col, rids in frames.skipped.items():
                    skipped.setdefault(col, []).extend(rids)
                assert main_writer is not None
                number = main_writer.parts + 1
                main_writer.write(frames.main, number)
                for name, tdf in frames.tables.items():
                    if name not in table_writers:
                        # every page has every table (the codecs make one, even empty):
                        # the first page's names are all of them
                        dirs = path_names([*table_writers, *frames.tables])
                        table_writers[name] = _PartWriter(loaded_tables / dirs[name],
                                                          {"table": name})
                    table_writers[name].write(tdf.reset_index(drop=True), number)
        finally:
            bar.close()
        removed = 0
        if len(pager.passes) > 1 or any(r.duplicates for r in pager.passes):
            assert pager.final_hashes is not None
            # records moved mid-run: keep the first copy of each record of the
            # consistent pass; drop repeats and records deleted meanwhile
            removed = _keep_only(loaded_main, loaded_tables, pager.final_hashes)
            count -= removed
        if source is None:
            fields, source = describe(client, tgt, app, [], columns, tz)
        if main_writer is None or main_writer.parts == 0:
            # no records: one empty part so readers still see the schema
            empty = build_frames([], fields or [], source, tz=tz, keep_original=False)
            _PartWriter(loaded_main, {"source": source.to_dict()}).write(empty.main, 1)
        col_fields = column_fields(source)
        parts = _derive(loaded_main, st.data, format, col_fields)
        tables: dict[str, dict[str, Any]] = {}
        for name, w in table_writers.items():
            _derive(w.root, st.tables / w.root.name, format, col_fields)
            assert w.schema is not None
            tables[name] = {"dir": w.root.name, "columns": table_meta(w.schema)["dtypes"]}
        warn_dir_renames(tables)
        warn_skipped(skipped, source.timezone)   # once for the export, as a load warns
        main_schema = pq.read_schema(next(iter(sorted(loaded_main.glob("part-*.parquet")))))
        write_meta(st.meta, meta_doc(source, format, table_meta(main_schema)["dtypes"],
                                       tables, layout.loaded, count, "export",
                                       staged_loaded=st.loaded, skipped=skipped))
        st.install()
    return ExportResult(layout.data, count, parts, list(table_writers), len(pager.passes),
                        removed, layout.tables if table_writers else None, layout.meta,
                        layout.loaded)


def _derive(loaded: Path, dest: Path, fmt: str, fields: Mapping[str, FieldSpec]) -> int:
    """The user's copy of a dataset from the as-loaded parts, one part at a time: the
    same Parquet bytes (copied, never linked: a writer that truncates in place must not
    change the as-loaded copy), or CSV. Returns the parts written."""
    dest.mkdir(parents=True, exist_ok=True)
    parts = sorted(loaded.glob("part-*.parquet"))
    for part in parts:
        if fmt == "parquet":
            shutil.copyfile(part, dest / part.name)
        elif fmt == "xlsx":
            write_xlsx(arrow_to_frame(pq.read_table(part)), (dest / part.name)
                       .with_suffix(".xlsx"), fields)
        else:
            df = arrow_to_frame(pq.read_table(part))
            write_csv(df.reset_index() if df.index.name else df,
                       (dest / part.name).with_suffix(".csv"), fields)
    return len(parts)


def _gc_paused_iter(pages: Iterator[Page]) -> Iterator[Page]:
    """The pages, with cyclic GC paused while they are fetched and written."""
    with paused_gc():
        yield from pages


def _keep_only(root: Path, tables_root: Path, final: np.ndarray) -> int:
    """Repair after records moved mid-run: in part order, keep the first row of each
    record of the consistent pass (``final``: sorted id hashes), drop repeats and records
    deleted meanwhile; table parts follow their main part. Returns main rows removed."""
    seen: set[int] = set()
    removed = 0
    kept_by_part: dict[str, set[str]] = {}
    for part in sorted(root.glob("part-*.parquet")):
        table = pq.read_table(part)
        ids = table.column("id").to_pylist()
        keep: list[int] = []
        for i, rid in enumerate(ids):
            h = hash(rid)
            pos = int(np.searchsorted(final, h))
            if pos < len(final) and final[pos] == h and h not in seen:
                seen.add(h)
                keep.append(i)
        kept_by_part[part.name] = {ids[i] for i in keep}
        if len(keep) != len(ids):
            write_table(table.take(pa.array(keep, type=pa.int64())), part)
            removed += len(ids) - len(keep)
    for part in sorted(tables_root.glob("*/part-*.parquet")):
        table = pq.read_table(part)
        allowed = kept_by_part.get(part.name, set())
        rids = table.column("record_id").to_pylist()
        keep = [i for i, rid in enumerate(rids) if rid in allowed]
        if len(keep) != len(rids):
            write_table(table.take(pa.array(keep, type=pa.int64())), part)
    return removed
