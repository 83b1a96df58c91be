"""Parquet out and back: whole :class:`Frames`, and a streaming export of any size.

Layout of ``to_parquet(frames, path)`` (a directory)::

    path/main.parquet                 the main frame, ``id`` as a column
    path/tables/<n>.parquet           exploded tables
    path/original/...                 the snapshot ``write_back`` diffs against (same layout)

Layout of ``export(client, target, out_dir)`` (a Parquet dataset and its tables)::

    out_dir/part-00001.parquet ...          main-frame rows, one part per page, one schema;
                                            nothing else in the directory
    out_dir.tables/<n>/part-00001.parquet   each exploded table, its parts matching the
                                            main parts (only when there are tables)

``out_dir`` holds the parts alone because DuckDB reads a directory recursively and Polars
refuses one with other files in it: so ``pyarrow.dataset.dataset(out_dir)``, DuckDB
``read_parquet('out_dir')``, Polars ``scan_parquet(out_dir)``, Dask and Spark all read it
as is, and each table directory likewise. Every file carries the Source as JSON under the
``svc_frames`` key of the Arrow schema metadata, with the exact pandas dtypes.

Usage::

    to_parquet(frames, "out/customers")
    frames2 = read_parquet("out/customers")
    export(client, "object_1", "out/dataset")                 # memory flat in N
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .client import Client, Target, parse_target
from .describe import Columns, check_columns, describe, paused_gc, user_timezone
from .errors import DisplayValuesNeeded, UsageError
from .filters import Filters, validate_filters
from .frames import Frames, Source, build_frames, decodes_raw_alone
from .paging import Page, Paginator, Verify
from .progress import PageProgress, want_progress
from .schema import Schema

META_KEY = b"svc_frames"
_LIST = pa.list_(pa.string())


# ---- one frame <-> one Arrow table ---------------------------------------------------
def _is_list_column(s: pd.Series) -> bool:
    if s.dtype != object:
        return False
    for v in s:
        if v is not None and not (isinstance(v, float) and v != v):
            return isinstance(v, (list, tuple))
    return True  # all empty object column: list kinds are the only object columns


def _arrow_column(s: pd.Series, list_col: bool) -> pa.Array:
    if list_col:
        return pa.array([None if not isinstance(v, (list, tuple)) else
                         [None if x is None else str(x) for x in v] for v in s], type=_LIST)
    if s.dtype == object:  # anything else kept as JSON text, never dropped
        return pa.array([None if v is None or v is pd.NA else
                         (v if isinstance(v, str) else json.dumps(v, default=str))
                         for v in s], type=pa.large_string())
    return pa.array(s, from_pandas=True)


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
        arrays.append(_arrow_column(pd.Series(df.index, dtype=df.index.dtype), False))
        dtypes[index_name] = str(df.index.dtype)
    for col in df.columns:
        s = df[col]
        is_list = (pa.types.is_list(schema.field(str(col)).type) if schema is not None
                   else _is_list_column(s))
        arrays.append(_arrow_column(s, is_list))
        dtypes[str(col)] = "list" if is_list else str(s.dtype)
    info = dict(meta or {})
    info.update({"dtypes": dtypes, "index": index_name})
    table = pa.Table.from_arrays(arrays, names=names)
    if schema is not None:
        return table.cast(schema)
    return table.replace_schema_metadata({META_KEY: json.dumps(info).encode()})


def arrow_to_frame(table: pa.Table) -> pd.DataFrame:
    """Back from :func:`frame_to_arrow`: the exact dtypes from the metadata, lists as lists."""
    info = table_meta(table)
    dtypes: dict[str, str] = info.get("dtypes", {})
    index_name = info.get("index")
    cols: dict[str, Any] = {}
    for name in table.column_names:
        arr = table.column(name)
        want = dtypes.get(name)
        if pa.types.is_list(arr.type) or want == "list":
            cols[name] = pd.Series([None if v is None else list(v) for v in arr.to_pylist()],
                                   dtype=object)
            continue
        s = arr.to_pandas()
        if want and want != str(s.dtype):
            s = s.astype(want)
        cols[name] = s
    df = pd.DataFrame(cols)
    if index_name is not None and index_name in df.columns:
        df = df.set_index(index_name)
    return df


def table_meta(table: pa.Table | pa.Schema) -> dict[str, Any]:
    """The ``svc_frames`` metadata of an Arrow table or schema ({} when absent)."""
    schema = table.schema if isinstance(table, pa.Table) else table
    raw = (schema.metadata or {}).get(META_KEY)
    return json.loads(raw) if raw else {}


# ---- whole frames ---------------------------------------------------------------------
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "_"


def _write_frames(frames: Frames, root: Path, extra: Mapping[str, Any]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for i, name in enumerate(frames.tables):
        files[name] = f"{i:03d}-{_safe(name)}.parquet"
    meta = dict(extra)
    meta.update({"source": frames.source.to_dict() if frames.source else None,
                 "tables": files})
    pq.write_table(frame_to_arrow(frames.main, meta), root / "main.parquet")
    if files:
        (root / "tables").mkdir(exist_ok=True)
    for name, fname in files.items():
        tdf = frames.tables[name]
        pq.write_table(frame_to_arrow(tdf, {"table": name}), root / "tables" / fname)


def _read_frames(root: Path) -> Frames:
    table = pq.read_table(root / "main.parquet")
    meta = table_meta(table)
    if "tables" not in meta:
        raise UsageError(f"{root}: not written by svc_frames.to_parquet (no metadata)")
    main = arrow_to_frame(table)
    tables = {}
    for name, fname in meta["tables"].items():
        tables[name] = arrow_to_frame(pq.read_table(root / "tables" / fname))
    source = Source.from_dict(meta["source"]) if meta.get("source") else None
    return Frames(main, tables, source)


def to_parquet(frames: Frames, path: str | os.PathLike[str]) -> Path:
    """Write frames (main, tables, source, and the ``original`` snapshot) to a directory.

    The directory is replaced as a whole, so a failed write leaves the old one intact.
    Usage: ``to_parquet(frames, "out/orders")``"""
    if not isinstance(frames, Frames):
        raise UsageError(f"to_parquet needs Frames, got {type(frames).__name__}")
    dest = Path(path)
    if dest.exists() and not (dest / "main.parquet").exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} exists and is not an svc_frames parquet directory")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        _write_frames(frames, tmp, {"format": 1})
        if frames.original is not None:
            _write_frames(frames.original, tmp / "original", {"format": 1})
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def read_parquet(path: str | os.PathLike[str]) -> Frames:
    """Frames written by :func:`to_parquet`, equal to the ones written (dtypes, source,
    original). Usage: ``frames = read_parquet("out/orders")``"""
    root = Path(path)
    if not (root / "main.parquet").exists():
        raise UsageError(f"{root}: no main.parquet here (not written by to_parquet)")
    frames = _read_frames(root)
    if (root / "original" / "main.parquet").exists():
        frames.original = _read_frames(root / "original")
    return frames


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


class _PartWriter:
    """Writes one dataset (main or a table) as part files sharing one schema."""

    def __init__(self, root: Path, fmt: str, meta: Mapping[str, Any]) -> None:
        self.root = root
        self.fmt = fmt
        self.meta = meta
        self.schema: pa.Schema | None = None
        self.parts = 0
        root.mkdir(parents=True, exist_ok=True)

    def write(self, df: pd.DataFrame, number: int) -> None:
        table = frame_to_arrow(df, self.meta, self.schema)
        if self.schema is None:
            self.schema = table.schema
        self.parts += 1
        name = self.root / f"part-{number:05d}.{self.fmt}"
        if self.fmt == "parquet":
            pq.write_table(table, name)
        else:
            _write_csv(table, name)


def _write_csv(table: pa.Table, path: Path) -> None:
    import pyarrow.csv as pacsv
    cols = []
    for col in table.columns:
        if pa.types.is_list(col.type):  # CSV has no lists: JSON text
            col = pa.array([None if v is None else json.dumps(v) for v in col.to_pylist()],
                           type=pa.string())
        cols.append(col)
    pacsv.write_csv(pa.Table.from_arrays(cols, names=table.column_names), path)


def export(client: Client, target: Target, out_dir: str | os.PathLike[str], *,
           filters: Filters | None = None, format: Literal["parquet", "csv"] = "parquet",
           sort_field: str | None = None, sort_order: str | None = None,
           limit: int | None = None, columns: Columns = "keys",
           timezone: str | ZoneInfo | None = None, progress: bool | None = None,
           rows_per_page: int = 1000, verify: Verify = "first") -> ExportResult:
    """Stream every page of an object or a view to part files as pages arrive; memory stays
    flat however many records there are. The directory appears only when complete.

    ``target``: ``"object_N"``, ``"scene_N/view_N"`` or a (scene, view) tuple. Exploded
    tables go to ``<out_dir>.tables/<name>/`` (module docstring).
    Usage: ``export(client, "object_1", "out/ds"); pyarrow.dataset.dataset("out/ds")``"""
    kind, a, b = parse_target(target)
    tgt: Target = a if kind == "object" else (a, b)  # type: ignore[assignment]
    if format not in ("parquet", "csv"):
        raise UsageError(f"format must be 'parquet' or 'csv', got {format!r}")
    check_columns(columns)
    validate_filters(filters)
    tz = user_timezone(timezone)
    dest = Path(out_dir)
    dest_tables = tables_dir(dest)
    for d in (dest, dest_tables):
        if d.exists() and (not d.is_dir() or any(d.iterdir())):
            raise UsageError(f"export directory {d} exists and is not empty")
    bar = PageProgress(want_progress(progress), f"export {client.records_path(tgt)[2]}")
    pager = Paginator(client, tgt, rows_per_page=rows_per_page, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit, on_page=bar,
                      verify=verify, max_workers=min(client.max_workers, 3), prefetch=3,
                      keep_ids=False)
    app = client.schema()  # first: every part must share the schema it fixes
    tz = tz or Schema.of(app).timezone
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    tmp_tables = Path(tempfile.mkdtemp(prefix=f".{dest_tables.name}.", dir=dest.parent))
    fields = None
    source: Source | None = None
    main_writer: _PartWriter | None = None
    table_writers: dict[str, _PartWriter] = {}
    count = 0
    in_pass: dict[int, int] = {}
    try:
        # pages are written as they come, without an id set (memory stays flat); a pass
        # that turns out inconsistent is repaired after the loop, from the files
        for page in _gc_paused_iter(pager.iter_pages()):
            new = page.records
            if limit is not None:
                new = new[: max(0, limit - in_pass.get(page.pass_no, 0))]
            in_pass[page.pass_no] = in_pass.get(page.pass_no, 0) + len(new)
            if fields is None or source is None:
                fields, source = describe(client, tgt, app, new, columns, tz)
                meta = {"source": source.to_dict()}
                main_writer = _PartWriter(tmp, format, meta)
                if (app is not None and not source.kinds_inferred
                        and decodes_raw_alone(new, fields)):
                    pager.ask_raw(fields)  # as the loaders do
            if not new:
                continue
            count += len(new)
            try:
                frames = build_frames(new, fields, source, tz=tz, keep_original=False,
                                      raw_format=page.format == "raw")
            except DisplayValuesNeeded:
                if page.format != "raw":
                    raise
                pager.ask_both()  # a name-like connection: ids in the display values
                new = pager.refetch(page).records[: len(new)]
                frames = build_frames(new, fields, source, tz=tz, keep_original=False)
            assert main_writer is not None
            number = main_writer.parts + 1
            main_writer.write(frames.main, number)
            for name, tdf in frames.tables.items():
                if name not in table_writers:
                    table_writers[name] = _PartWriter(tmp_tables / _safe(name), format,
                                                      {"table": name})
                table_writers[name].write(tdf.reset_index(drop=True), number)
        bar.close()
        removed = 0
        if len(pager.passes) > 1 or any(r.duplicates for r in pager.passes):
            assert pager.final_hashes is not None
            # records moved mid-run: keep the first copy of each record of the
            # consistent pass; drop repeats and records deleted meanwhile
            removed = _keep_only(tmp, tmp_tables, pager.final_hashes, format)
            count -= removed
        if source is None:
            fields, source = describe(client, tgt, app, [], columns, tz)
        if main_writer is None or main_writer.parts == 0:
            # no records: one empty part so readers still see the schema
            empty = build_frames([], fields or [], source, tz=tz, keep_original=False)
            _PartWriter(tmp, format, {"source": source.to_dict()}).write(empty.main, 1)
        # the tables first: the main directory appearing says the export is complete
        if table_writers:
            if dest_tables.exists():
                dest_tables.rmdir()
            os.replace(tmp_tables, dest_tables)
        else:
            tmp_tables.rmdir()
        if dest.exists():
            dest.rmdir()
        os.replace(tmp, dest)
    except BaseException:
        bar.close()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(tmp_tables, ignore_errors=True)
        raise
    return ExportResult(dest, count, main_writer.parts if main_writer else 1,
                        list(table_writers), len(pager.passes), removed,
                        dest_tables if table_writers else None)


def tables_dir(out_dir: str | os.PathLike[str]) -> Path:
    """Where :func:`export` puts the exploded tables of ``out_dir``: ``<out_dir>.tables``."""
    path = Path(out_dir)
    return path.with_name(path.name + ".tables")


def _gc_paused_iter(pages: Iterator[Page]) -> Iterator[Page]:
    """The pages, with cyclic GC paused while they are fetched and written."""
    with paused_gc():
        yield from pages


def _read_part(part: Path, fmt: str, key: str) -> pa.Table:
    if fmt == "parquet":
        return pq.read_table(part)
    import pyarrow.csv as pacsv
    return pacsv.read_csv(part, convert_options=pacsv.ConvertOptions(
        column_types={key: pa.string()}))  # ids that look like numbers stay text


def _write_part(table: pa.Table, part: Path, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(table, part)
    else:
        import pyarrow.csv as pacsv
        pacsv.write_csv(table, part)


def _keep_only(root: Path, tables_root: Path, final: np.ndarray, fmt: str) -> int:
    """Repair after records moved mid-run: in part order, keep the first row of each
    record of the consistent pass (``final``: sorted id hashes), drop repeats and records
    deleted meanwhile; table parts follow their main part. Returns main rows removed."""
    seen: set[int] = set()
    removed = 0
    kept_by_part: dict[str, set[str]] = {}
    for part in sorted(root.glob(f"part-*.{fmt}")):
        table = _read_part(part, fmt, "id")
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
            _write_part(table.take(pa.array(keep, type=pa.int64())), part, fmt)
            removed += len(ids) - len(keep)
    for part in sorted(tables_root.glob(f"*/part-*.{fmt}")):
        table = _read_part(part, fmt, "record_id")
        allowed = kept_by_part.get(part.name, set())
        rids = table.column("record_id").to_pylist()
        keep = [i for i, rid in enumerate(rids) if rid in allowed]
        if len(keep) != len(rids):
            _write_part(table.take(pa.array(keep, type=pa.int64())), part, fmt)
    return removed
