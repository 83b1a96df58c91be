"""Saved frames: one directory layout that ``to_parquet`` and ``export`` write, that any
Parquet reader takes as is, and that ``read_parquet`` and ``push`` read back after an
edit with any tool.

Layout of saved frames at ``orders`` (``to_parquet(frames, "orders")`` or
``export(client, "object_3", "orders")``)::

    orders/part-00001.parquet ...        the records: one row per record, ``id`` column,
                                         one schema; nothing else in the directory
    orders.tables/<name>/part-00001...   each exploded table (connections, multi choices)
    orders.svc_frames.json               what push needs: object or view, fields and kinds,
                                         timezone, each column's type, the tables
    orders.svc_frames/main/, /tables/    the as-loaded copy push diffs against (Parquet)

``orders`` holds the record parts alone because DuckDB reads a directory recursively and
Polars refuses one with other files in it: ``pd.read_parquet("orders")``,
``pyarrow.dataset.dataset("orders")``, DuckDB ``read_parquet('orders/*.parquet')``,
Polars ``scan_parquet("orders")``, Dask and Spark give each record once. With
``format="csv"`` the record parts are CSV written as the service shows values
(:mod:`svc_frames.csvtext`); the as-loaded copy stays Parquet.

The edited records may be re-written by any tool (pandas, pyarrow, DuckDB ``COPY ... TO``,
Polars, a spreadsheet through CSV) under any file name in ``orders/``: what a writer drops
(the Parquet schema metadata) is not needed, since the JSON file beside the data says
what each column must hold. A file that no longer fits (a column dropped or added, a type
that does not convert, an id that was not loaded, a record twice) is refused naming the
column and the file, before any request. svc_frames never replaces anything that exists
without ``overwrite=True``.

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
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .client import Client, Target, parse_target
from .csvtext import format_column, parse_column
from .describe import Columns, check_columns, describe, paused_gc, user_timezone
from .errors import DisplayValuesNeeded, UsageError
from .filters import Filters, validate_filters
from .frames import Frames, Source, build_frames, decodes_raw_alone, label_map, relabel
from .kinds import codec_for
from .kinds.base import FieldSpec
from .paging import Page, Paginator, Verify
from .progress import PageProgress, want_progress
from .schema import Schema

META_KEY = b"svc_frames"
META_VERSION = 2
DATA_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".csv": "csv"}
NEW_ID_PREFIX = "new:"  # rows to create (writeback's convention)
_LIST = pa.list_(pa.string())
_PANDAS_INDEX = re.compile(r"^__index_level_\d+__$")
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
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or want == "list":
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


# ---- the saved layout -----------------------------------------------------------------
def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "_"


@dataclass(frozen=True)
class SavedLayout:
    """Where each part of saved frames lives: everything sits beside ``data``.

    Usage: ``SavedLayout.of("out/orders").meta  # out/orders.svc_frames.json``"""

    data: Path

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> SavedLayout:
        p = Path(path)
        if p.name in ("", ".", ".."):
            p = p.resolve()  # "." has no name to put the siblings beside
        return cls(p)

    def _sibling(self, suffix: str) -> Path:
        return self.data.with_name(self.data.name + suffix)

    @property
    def tables(self) -> Path:
        """``<data>.tables/<name>/``: the exploded tables, one dataset each."""
        return self._sibling(".tables")

    @property
    def meta(self) -> Path:
        """``<data>.svc_frames.json``: what push needs to read the data back."""
        return self._sibling(".svc_frames.json")

    @property
    def loaded(self) -> Path:
        """``<data>.svc_frames/``: the as-loaded copy (``main/``, ``tables/<name>/``)."""
        return self._sibling(".svc_frames")

    def parts(self) -> list[Path]:
        return [self.data, self.tables, self.meta, self.loaded]


def tables_dir(out_dir: str | os.PathLike[str]) -> Path:
    """Where saved frames keep the exploded tables of ``out_dir``: ``<out_dir>.tables``."""
    return SavedLayout.of(out_dir).tables


def _data_files(root: Path) -> list[Path]:
    """The data files of a dataset directory, as Parquet readers list them: any depth,
    names starting with "." or "_" skipped (editor locks, ``_SUCCESS``)."""
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if (p.is_file() and p.suffix.lower() in DATA_SUFFIXES
                and not any(x.startswith((".", "_", "~$")) for x in rel)):
            out.append(p)
    return out


def _is_ours_or_data(layout: SavedLayout) -> bool:
    """May ``overwrite=True`` replace ``layout.data``? Only saved frames (their JSON file
    beside, or the old ``main.parquet`` layout) or a directory of data files alone."""
    d = layout.data
    if not d.exists() or layout.meta.exists() or (d / "main.parquet").exists():
        return True
    if not d.is_dir():
        return False
    return all(p.is_dir() or p.suffix.lower() in DATA_SUFFIXES for p in d.rglob("*"))


def _check_free(layout: SavedLayout, overwrite: bool) -> None:
    """Nothing of the user's is replaced without ``overwrite=True``, and even then only
    saved frames or bare data directories (never a directory of other files)."""
    for p in layout.parts():
        if not p.exists() or (p.is_dir() and not any(p.iterdir())):
            continue
        if not overwrite:
            raise UsageError(f"{p} exists: pass overwrite=True (CLI: --overwrite) to "
                             "replace it; nothing was written")
    if overwrite and not _is_ours_or_data(layout):
        raise UsageError(f"{layout.data} holds files that are not saved frames: not replaced "
                         "(choose another directory)")


class _Staging:
    """Temporary siblings of each destination, moved into place together at the end
    (the record directory last: its appearing says the rest is complete); removed if
    anything fails, so nothing is left half-written."""

    def __init__(self, layout: SavedLayout) -> None:
        self.layout = layout
        self.parent = layout.data.parent
        self.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{layout.data.name}.", dir=self.parent))
        self.data = self.tmp / "data"
        self.tables = self.tmp / "tables"
        self.loaded = self.tmp / "loaded"
        self.meta = self.tmp / "meta.json"
        self.data.mkdir()

    def install(self, which: tuple[str, ...] = ("loaded", "tables", "meta", "data")) -> None:
        """Move the staged parts named in ``which`` into place; a destination part that
        was not staged (no tables now, no as-loaded copy) is removed."""
        trash = self.tmp / "old"
        trash.mkdir()
        for i, name in enumerate(which):
            staged: Path = getattr(self, name)
            dest: Path = getattr(self.layout, name)
            if dest.exists() or dest.is_symlink():
                os.replace(dest, trash / f"{i}-{uuid.uuid4().hex}")
            if staged.exists():
                os.replace(staged, dest)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, *exc: Any) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---- writing --------------------------------------------------------------------------
def _column_fields(source: Source | None) -> dict[str, FieldSpec]:
    """Frame column name -> the field it belongs to (keys or labels, as the source)."""
    if source is None:
        return {}
    names = label_map(source.fields)
    out: dict[str, FieldSpec] = {}
    for f in source.fields:
        for col in codec_for(f).columns(f):
            out[relabel(col, names) if source.columns == "labels" else col] = f
        if f.kind in ("multiple_choice", "connection", "user_roles"):
            table = relabel(f.key, names) if source.columns == "labels" else f.key
            out.setdefault(table, f)
    return out


def _write_part(df: pd.DataFrame, path: Path, fmt: str, meta: Mapping[str, Any],
                fields: Mapping[str, FieldSpec], schema: pa.Schema | None = None) -> pa.Table:
    """One part file of a dataset (Parquet, or CSV as the service shows values)."""
    table = frame_to_arrow(df, meta, schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        _write_csv(arrow_to_frame(table, table_meta(table)["dtypes"], None), path, fields)
    return table


def _write_csv(df: pd.DataFrame, path: Path, fields: Mapping[str, FieldSpec]) -> None:
    texts = {str(c): format_column(df[c], fields.get(str(c))) for c in df.columns}
    pd.DataFrame(texts, columns=list(texts), dtype=object).to_csv(path, index=False)


def _dataset_columns(table: pa.Table) -> dict[str, str]:
    return dict(table_meta(table)["dtypes"])


def _write_frames(frames: Frames, data: Path, tables: Path, fmt: str
                  ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Main and tables of ``frames`` as one part each. Returns (main columns -> dtype,
    table name -> {dir, columns})."""
    fields = _column_fields(frames.source)
    meta = {"source": frames.source.to_dict() if frames.source else None}
    main = _write_part(frames.main, data / f"part-00001.{fmt}", fmt, meta, fields)
    out_tables: dict[str, dict[str, Any]] = {}
    for name, tdf in frames.tables.items():
        sub = _safe(name)
        t = _write_part(tdf.reset_index(drop=True), tables / sub / f"part-00001.{fmt}", fmt,
                        {"table": name}, fields)
        out_tables[name] = {"dir": sub, "columns": _dataset_columns(t)}
    return _dataset_columns(main), out_tables


def _meta_doc(source: Source | None, fmt: str, columns: Mapping[str, str],
              tables: Mapping[str, Mapping[str, Any]], loaded: Path | None, records: int,
              written_by: str) -> dict[str, Any]:
    return {"svc_frames": META_VERSION, "written_by": written_by, "format": fmt,
            "source": source.to_dict() if source else None, "index": "id",
            "columns": dict(columns), "tables": {k: dict(v) for k, v in tables.items()},
            "loaded": loaded.name if loaded is not None else None, "records": records}


def _write_meta(path: Path, doc: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=1) + "\n")


def renamed_columns(frames: Frames, columns: Columns) -> Frames:
    """The same frames with columns (and tables) named by field key or by field label;
    the as-loaded copy follows, so they diff and push as before.

    Usage: ``renamed_columns(frames, "labels").main.columns  # Title, Due, Site.city ...``"""
    check_columns(columns)
    src = frames.source
    if src is None or src.columns == columns:
        return frames
    names = label_map(src.fields)
    by_key: dict[str, str] = {}
    for f in src.fields:
        for col in [*codec_for(f).columns(f), f.key]:
            by_key[col] = relabel(col, names)
    mapping = by_key if columns == "labels" else {v: k for k, v in by_key.items()}
    source = replace(src, columns=columns)

    def one(fr: Frames) -> Frames:
        return Frames(fr.main.rename(columns=lambda c: mapping.get(str(c), str(c))),
                      {mapping.get(k, k): v for k, v in fr.tables.items()}, source)

    out = one(frames)
    out.original = one(frames.original) if frames.original is not None else None
    return out


def to_parquet(frames: Frames, path: str | os.PathLike[str], *,
               overwrite: bool = False, columns: Columns | None = None) -> Path:
    """Save frames: the records in ``path`` (a Parquet dataset any reader takes), the
    exploded tables in ``path.tables``, the as-loaded copy and the metadata push needs
    beside them (module docstring). Something already there is replaced only with
    ``overwrite=True``; a failed write leaves the old one intact. ``columns="labels"``
    names the saved columns by field label (``"keys"``: by key; default: as the frames).

    Usage: ``to_parquet(frames, "out/orders")``"""
    if not isinstance(frames, Frames):
        raise UsageError(f"to_parquet needs Frames, got {type(frames).__name__}")
    if columns is not None:
        frames = renamed_columns(frames, columns)
    layout = SavedLayout.of(path)
    _check_free(layout, overwrite)
    with _Staging(layout) as st:
        dtypes, tables = _write_frames(frames, st.data, st.tables, "parquet")
        if frames.original is not None:
            _write_frames(frames.original, st.loaded / "main", st.loaded / "tables", "parquet")
        _write_meta(st.meta, _meta_doc(frames.source, "parquet", dtypes, tables,
                                       layout.loaded if frames.original is not None else None,
                                       len(frames.main), "to_parquet"))
        st.install()
    return layout.data


# ---- reading --------------------------------------------------------------------------
@dataclass
class SavedMeta:
    """The JSON file beside saved frames, checked."""

    path: Path
    source: Source | None
    format: str
    columns: dict[str, str]
    tables: dict[str, dict[str, Any]]
    loaded: str | None
    index: str = "id"
    extra: dict[str, Any] = field(default_factory=dict)


def _corrupt(path: Path, what: str) -> UsageError:
    return UsageError(f"{path}: corrupt svc_frames metadata: {what} (write the frames again "
                      "with to_parquet or export)")


def read_meta(path: str | os.PathLike[str]) -> SavedMeta:
    """The metadata of saved frames at ``path`` (the data directory), checked: a missing,
    unreadable or inconsistent file is refused naming it and what is wrong.

    Usage: ``read_meta("out/orders").source.object_key``"""
    layout = SavedLayout.of(path)
    f = layout.meta
    if not f.exists():
        raise UsageError(f"{f} is missing: {layout.data} was not saved by svc_frames "
                         "(to_parquet or export), or that file was moved; it must stay "
                         "beside the data for read_parquet and push")
    try:
        doc = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _corrupt(f, f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise _corrupt(f, f"a JSON object was expected, found {type(doc).__name__}")
    if doc.get("svc_frames") != META_VERSION:
        raise _corrupt(f, f"'svc_frames' is {doc.get('svc_frames')!r}, expected "
                          f"{META_VERSION} (the format version)")
    for key, kind in (("columns", dict), ("tables", dict), ("format", str)):
        if not isinstance(doc.get(key), kind):
            raise _corrupt(f, f"{key!r} is missing or not a {kind.__name__}")
    if doc["format"] not in ("parquet", "csv"):
        raise _corrupt(f, f"'format' is {doc['format']!r}, expected 'parquet' or 'csv'")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in doc["columns"].items()):
        raise _corrupt(f, "'columns' must map column names to type names")
    index = doc.get("index") or "id"
    if index not in doc["columns"]:
        raise _corrupt(f, f"the index column {index!r} is not among 'columns'")
    for name, t in doc["tables"].items():
        if (not isinstance(t, dict) or not isinstance(t.get("dir"), str)
                or not isinstance(t.get("columns"), dict) or "/" in t["dir"]
                or t["dir"] in ("", ".", "..")):
            raise _corrupt(f, f"table {name!r} needs a 'dir' name and 'columns'")
    loaded = doc.get("loaded")
    if loaded is not None and loaded != layout.loaded.name:
        raise _corrupt(f, f"'loaded' is {loaded!r}, expected {layout.loaded.name!r} "
                          "(was the directory renamed without its companions?)")
    source = None
    if doc.get("source") is not None:
        try:
            source = Source.from_dict(doc["source"])
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise _corrupt(f, f"'source' does not describe an object or view ({exc!r})"
                           ) from None
        if source.kind not in ("object", "view") or not source.object_key and \
                source.kind == "object":
            raise _corrupt(f, f"'source' names kind {source.kind!r} / object "
                              f"{source.object_key!r}")
    return SavedMeta(f, source, doc["format"], dict(doc["columns"]), dict(doc["tables"]),
                     loaded, index, doc)


_TZ_DTYPE = re.compile(r"^datetime64\[(\w+), (.+)\]$")


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
    m = _TZ_DTYPE.match(dtype)
    if m:
        return pa.timestamp(m.group(1), m.group(2))
    if dtype.startswith("timedelta64["):
        return pa.duration(dtype[len("timedelta64["):-1])
    return None


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t)
                or getattr(pa.types, "is_string_view", lambda _: False)(t))


def _conform(arr: pa.ChunkedArray, want: pa.DataType, tz: str | None) -> pa.ChunkedArray:
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
    if _is_text(want) and _is_text(t):
        return arr.cast(want)
    if pa.types.is_list(want):
        if ((pa.types.is_list(t) or pa.types.is_large_list(t)
             or getattr(pa.types, "is_list_view", lambda _: False)(t))
                and (_is_text(t.value_type) or pa.types.is_null(t.value_type))):
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


def _same_target(a: Source, b: Source) -> bool:
    return (a.kind, a.object_key, a.scene_key, a.view_key) == \
        (b.kind, b.object_key, b.scene_key, b.view_key)


def _target_name(s: Source) -> str:
    return s.object_key if s.kind == "object" else f"{s.scene_key}/{s.view_key}"


def _read_file(path: Path, columns: Mapping[str, str], meta: SavedMeta,
               fields: Mapping[str, FieldSpec], loaded: pd.DataFrame | None) -> pd.DataFrame:
    """One data file as a frame of the saved column types, or UsageError naming the file
    and the column that no longer fits. ``loaded``: the as-loaded records (by id), whose
    exact values a CSV cell stands for when it still reads as they were written."""
    tz = meta.source.timezone if meta.source else None
    if DATA_SUFFIXES[path.suffix.lower()] == "csv":
        try:
            text = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: not a readable CSV file ({exc})") from None
        _check_names(path, [str(c) for c in text.columns], columns)
        base = None
        if loaded is not None and meta.index in text.columns:
            ids = pd.Index(text[meta.index].tolist(), dtype="string")
            base = loaded.reindex(ids.where(ids.isin(loaded.index)))
        cols: dict[str, Any] = {}
        for name, dtype in columns.items():
            cells = text[name].tolist()
            same: list[bool] | None = None
            if base is not None and name in base.columns:
                # a cell unchanged since export stands for the exact value loaded (CSV
                # rounds: computed numbers, seconds of a duration), so it is no edit, and
                # is not parsed at all
                was = base[name].tolist()
                same = [c == b and c != "" for c, b in zip(
                    cells, format_column(base[name], fields.get(name)), strict=True)]
            values = parse_column(cells, dtype, fields.get(name), column=name,
                                  where=str(path), timezone=tz, skip=same)
            if same is not None:
                values = [w if k else v for v, w, k in zip(values, was, same, strict=True)]
            cols[name] = _typed_series(values, dtype)
        return pd.DataFrame(cols, columns=list(columns))
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"{path}: not a readable Parquet file ({exc})") from None
    own = table_meta(table).get("source")
    if own and meta.source is not None:
        try:
            theirs = Source.from_dict(own)
        except (TypeError, KeyError, ValueError, AttributeError):
            theirs = None
        if theirs is not None and not _same_target(theirs, meta.source):
            raise UsageError(f"the metadata ({meta.path}: {_target_name(meta.source)}) and "
                             f"the frame ({path}: {_target_name(theirs)}) disagree: this "
                             "file was saved from another object or view")
    keep = [c for c in table.column_names if not _PANDAS_INDEX.match(c)]
    _check_names(path, keep, columns)
    arrays = []
    for name, dtype in columns.items():
        want = arrow_type(dtype)
        arr = table.column(name)
        if want is not None:
            try:
                arr = _conform(arr, want, tz)
            except (ValueError, pa.ArrowException):
                raise UsageError(f"{path}: column {name!r} holds {arr.type} but was saved as "
                                 f"{dtype}: its type changed (convert it back, or export "
                                 "again)", field=name) from None
        arrays.append(arr)
    return arrow_to_frame(pa.table(arrays, names=list(columns)), columns, None)


def _typed_series(values: list[Any], dtype: str) -> pd.Series:
    if dtype == "list" or dtype == "object":
        return pd.Series(values, dtype=object)
    want = pd.api.types.pandas_dtype(dtype)
    m = _TZ_DTYPE.match(dtype)
    if m:
        s = pd.to_datetime(pd.Series(values, dtype=object), utc=True)
        return s.dt.tz_convert(m.group(2)).astype(want)
    return pd.Series(values, dtype=object).astype(want)


def _check_names(path: Path, names: list[str], columns: Mapping[str, str]) -> None:
    missing = [c for c in columns if c not in names]
    if missing:
        raise UsageError(f"{path}: column {missing[0]!r} is missing (dropped or renamed?); "
                         f"saved frames need every column they were saved with"
                         + (f", also missing: {missing[1:]}" if len(missing) > 1 else ""),
                         field=missing[0])
    extra = [c for c in names if c not in columns]
    if extra:
        raise UsageError(f"{path}: column {extra[0]!r} was not saved with these frames; drop "
                         "it before pushing (write_back sends saved fields only)",
                         field=extra[0])
    if len(set(names)) != len(names):
        dup = next(c for c in names if names.count(c) > 1)
        raise UsageError(f"{path}: column {dup!r} appears twice", field=dup)


def _read_dataset(root: Path, columns: Mapping[str, str], meta: SavedMeta, what: str,
                  loaded: pd.DataFrame | None = None
                  ) -> tuple[pd.DataFrame, list[tuple[Path, int]]]:
    """Every data file of ``root``, concatenated; with (file, rows) per file."""
    files = _data_files(root)
    if not files:
        raise UsageError(f"{root}: no data files ({', '.join(sorted(DATA_SUFFIXES))}) for "
                         f"{what}")
    fields = _column_fields(meta.source)
    frames = [_read_file(p, columns, meta, fields, loaded) for p in files]
    spans = [(p, len(f)) for p, f in zip(files, frames, strict=True)]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return df, spans


def _new_or_na(v: Any) -> bool:
    return v is None or v is pd.NA or v == "" or (isinstance(v, str)
                                                 and v.startswith(NEW_ID_PREFIX))


def _main_frame(df: pd.DataFrame, spans: list[tuple[Path, int]], index: str,
                known: set[str] | None) -> pd.DataFrame:
    """Index the records by id, refusing an id twice or one that was never loaded."""
    ids = df[index].tolist()
    seen: dict[str, Path] = {}
    row = 0
    for path, n in spans:
        for v in ids[row: row + n]:
            if _new_or_na(v):
                continue
            if v in seen:
                where = path if seen[v] == path else f"{seen[v]} and {path}"
                raise UsageError(f"{where}: record {v!r} appears twice (an old part left "
                                 "beside the edited file, or an id edited?)", field=index)
            if known is not None and v not in known:
                raise UsageError(f"{path}: column {index!r} holds {v!r}, which was not "
                                 "loaded with these frames: ids must stay as loaded (empty "
                                 "for new rows)", field=index)
            seen[v] = path
        row += n
    df[index] = df[index].mask(df[index] == "")  # a spreadsheet's empty id: a new row
    return df.set_index(index)


def _read_loaded(layout: SavedLayout, meta: SavedMeta) -> Frames:
    """The as-loaded copy (svc_frames' own Parquet), checked against the metadata."""
    root = layout.loaded
    if not root.is_dir():
        raise _corrupt(meta.path, f"it names the as-loaded copy {root}, which is missing")
    main, spans = _read_dataset(root / "main", meta.columns, meta, "the as-loaded copy")
    original = Frames(_main_frame(main, spans, meta.index, None), {}, meta.source)
    for name, t in meta.tables.items():
        tdir = root / "tables" / t["dir"]
        if tdir.is_dir():  # a table of the edit the loaded data did not have stays out
            original.tables[name] = _read_dataset(tdir, t["columns"], meta,
                                                  f"the as-loaded table {name!r}")[0]
    return original


def read_parquet(path: str | os.PathLike[str]) -> Frames:
    """Saved frames (``to_parquet`` or ``export``), edited or not, as Frames: the records,
    the tables, the source, and the as-loaded copy as ``original`` (what ``write_back``
    diffs against). Each data file is checked against the metadata beside it first
    (module docstring): UsageError names the file and the column that no longer fits.

    Usage: ``frames = read_parquet("out/orders")``"""
    layout = SavedLayout.of(path)
    if (layout.data / "main.parquet").exists() and not layout.meta.exists():
        return _read_legacy(layout.data)
    if not layout.data.is_dir():
        raise UsageError(f"{layout.data}: no such directory of saved frames")
    meta = read_meta(layout.data)
    original = _read_loaded(layout, meta) if meta.loaded else None
    known = set(original.main.index.dropna()) if original is not None else None
    df, spans = _read_dataset(layout.data, meta.columns, meta, "the records",
                              original.main if original is not None else None)
    main = _main_frame(df, spans, meta.index, known)
    tables: dict[str, pd.DataFrame] = {}
    for name, t in meta.tables.items():
        tdir = layout.tables / t["dir"]
        if not tdir.is_dir():
            raise UsageError(f"{tdir} is missing: the table {name!r} of {layout.data} "
                             "(push would read its absence as every row removed)")
        tables[name] = _read_dataset(tdir, t["columns"], meta, f"table {name!r}")[0]
    return Frames(main, tables, meta.source, original)


def _read_legacy(root: Path) -> Frames:
    """The first layout of to_parquet (``main.parquet``, ``tables/``, ``original/``)."""
    def frames_at(d: Path) -> Frames:
        table = pq.read_table(d / "main.parquet")
        info = table_meta(table)
        if "tables" not in info:
            raise UsageError(f"{d / 'main.parquet'}: not written by svc_frames (no metadata)")
        tables = {n: arrow_to_frame(pq.read_table(d / "tables" / f))
                  for n, f in info["tables"].items()}
        src = Source.from_dict(info["source"]) if info.get("source") else None
        return Frames(arrow_to_frame(table), tables, src)

    frames = frames_at(root)
    if (root / "original" / "main.parquet").exists():
        frames.original = frames_at(root / "original")
    return frames


# ---- push's side ------------------------------------------------------------------------
def read_for_push(path: str | os.PathLike[str], *, overwrite: bool = False,
                  dry_run: bool = False) -> Frames:
    """Saved frames ready for ``write_back``, or UsageError before any request: no
    source or as-loaded copy, or new rows while the data may not be rewritten (their new
    ids must be written back, else a second push would create them again).

    Usage: ``frames = read_for_push("out/orders")`` (what ``push`` does first)"""
    layout = SavedLayout.of(path)
    if (layout.data / "main.parquet").exists() and not layout.meta.exists():
        # push refreshes the metadata beside the data after its writes: refuse before them
        raise UsageError(f"{layout.data} was saved by an earlier svc_frames (main.parquet "
                         "inside): convert it first with to_parquet(read_parquet(old), new)")
    frames = read_parquet(path)
    if frames.source is None or frames.original is None:
        raise UsageError(f"{path}: no write-back metadata (source and as-loaded copy) in "
                         "these saved frames: save them with to_parquet(read_object(...)) "
                         "or export(...)")
    if not _same_target(frames.source, frames.original.source or frames.source):
        raise UsageError(f"{path}: the metadata and the as-loaded copy name different "
                         "targets")
    idx = frames.main.index
    new = int(sum(1 for v in idx if _new_or_na(v)))
    if new and not overwrite and not dry_run:
        raise UsageError(f"{layout.data}: {new} new row(s) to create: pass overwrite=True "
                         "(CLI: --overwrite) so push can write their new ids into the data "
                         "(otherwise pushing again would create them again); nothing was "
                         "sent")
    return frames


def save_pushed(frames: Frames, path: str | os.PathLike[str], outcomes: pd.DataFrame, *,
                overwrite: bool = False) -> None:
    """After a push, so that pushing again sends nothing: with ``overwrite=True`` the data
    files are rewritten with the server's values and new ids, and the as-loaded copy is
    the refreshed ``frames.original``; without it the user's files stay as they are and
    the as-loaded copy takes, for each applied record, the values that were sent (the
    columns of ``outcomes.fields``) as the data files hold them, and drops deleted records.

    ``outcomes``: the report table of the run (``record_id, action, fields, status``).
    Usage: ``save_pushed(frames, "out/orders", report.table, overwrite=True)``"""
    layout = SavedLayout.of(path)
    meta = read_meta(layout.data)
    if frames.original is None:
        raise UsageError("the pushed frames have no as-loaded copy to save")
    applied = outcomes[outcomes["status"] == "applied"]
    with _Staging(layout) as st:
        if overwrite:
            loaded = frames.original
            columns, tables = _write_frames(frames, st.data, st.tables, meta.format)
            which: tuple[str, ...] = ("loaded", "tables", "meta", "data")
        else:
            loaded = _sent_as_baseline(read_parquet(layout.data), applied)
            columns, tables = meta.columns, meta.tables
            which = ("loaded", "meta")
        _write_frames(loaded, st.loaded / "main", st.loaded / "tables", "parquet")
        _write_meta(st.meta, _meta_doc(frames.source, meta.format, columns, tables,
                                       layout.loaded, len(frames.main),
                                       str(meta.extra.get("written_by") or "push")))
        st.install(which)


def _sent_as_baseline(on_disk: Frames, applied: pd.DataFrame) -> Frames:
    """The as-loaded copy of ``on_disk`` with the sent columns of applied updates taken
    from the data files, and applied deletes dropped."""
    assert on_disk.original is not None
    base = on_disk.original
    main = base.main.copy()
    tables = {k: v.copy() for k, v in base.tables.items()}
    col_fields = _column_fields(base.source)
    for rid, action, sent in zip(applied["record_id"], applied["action"], applied["fields"],
                                 strict=True):
        if action == "delete":
            main = main.drop(index=rid, errors="ignore")
            tables = {k: t[t.iloc[:, 0] != rid] for k, t in tables.items()}
            continue
        keys = {k.strip() for k in str(sent or "").split(",") if k.strip()}
        cols = [c for c in main.columns if c in col_fields and col_fields[c].key in keys]
        if rid in main.index and rid in on_disk.main.index and cols:
            main.loc[rid, cols] = on_disk.main.loc[rid, cols].to_numpy()
        for name, t in tables.items():
            if name in col_fields and col_fields[name].key in keys and name in on_disk.tables:
                mine = on_disk.tables[name]
                tables[name] = pd.concat([t[t.iloc[:, 0] != rid],
                                          mine[mine.iloc[:, 0] == rid]], ignore_index=True)
    return Frames(main, tables, base.source)


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
        pq.write_table(table, self.root / f"part-{number:05d}.parquet")


def export(client: Client, target: Target, out_dir: str | os.PathLike[str], *,
           filters: Filters | None = None, format: Literal["parquet", "csv"] = "parquet",
           sort_field: str | None = None, sort_order: str | None = None,
           limit: int | None = None, columns: Columns = "keys",
           timezone: str | ZoneInfo | None = None, progress: bool | None = None,
           rows_per_page: int = 1000, verify: Verify = "first",
           overwrite: bool = False) -> ExportResult:
    """Stream every page of an object or a view to saved frames (module docstring: part
    files any reader takes, tables, the as-loaded copy and metadata ``push`` needs) as
    pages arrive; memory stays flat however many records there are. The directory
    appears only when complete; something already there is replaced only with
    ``overwrite=True``.

    ``target``: ``"object_N"``, ``"scene_N/view_N"`` or a (scene, view) tuple.
    ``format="csv"``: the records as CSV written the way the service shows values
    (:mod:`svc_frames.csvtext`), which ``push`` reads back too.
    Usage: ``export(client, "object_1", "out/ds"); pd.read_parquet("out/ds")``"""
    kind, a, b = parse_target(target)
    tgt: Target = a if kind == "object" else (a, b)  # type: ignore[assignment]
    if format not in ("parquet", "csv"):
        raise UsageError(f"format must be 'parquet' or 'csv', got {format!r}")
    check_columns(columns)
    validate_filters(filters)
    tz = user_timezone(timezone)
    layout = SavedLayout.of(out_dir)
    _check_free(layout, overwrite)
    bar = PageProgress(want_progress(progress), f"export {client.records_path(tgt)[2]}")
    pager = Paginator(client, tgt, rows_per_page=rows_per_page, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit, on_page=bar,
                      verify=verify, max_workers=min(client.max_workers, 3), prefetch=3,
                      keep_ids=False, schema_checks=True, timezone=tz)
    app = client.schema()  # first: every part must share the schema it fixes
    tz = tz or Schema.of(app).timezone
    fields = None
    source: Source | None = None
    main_writer: _PartWriter | None = None
    table_writers: dict[str, _PartWriter] = {}
    count = 0
    in_pass: dict[int, int] = {}
    with _Staging(layout) as st:
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
                        table_writers[name] = _PartWriter(loaded_tables / _safe(name),
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
        col_fields = _column_fields(source)
        parts = _derive(loaded_main, st.data, format, col_fields)
        tables: dict[str, dict[str, Any]] = {}
        for name, w in table_writers.items():
            _derive(w.root, st.tables / w.root.name, format, col_fields)
            assert w.schema is not None
            tables[name] = {"dir": w.root.name, "columns": table_meta(w.schema)["dtypes"]}
        main_schema = pq.read_schema(next(iter(sorted(loaded_main.glob("part-*.parquet")))))
        _write_meta(st.meta, _meta_doc(source, format, table_meta(main_schema)["dtypes"],
                                       tables, layout.loaded, count, "export"))
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
        else:
            df = arrow_to_frame(pq.read_table(part))
            _write_csv(df.reset_index() if df.index.name else df,
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
            pq.write_table(table.take(pa.array(keep, type=pa.int64())), part)
            removed += len(ids) - len(keep)
    for part in sorted(tables_root.glob("*/part-*.parquet")):
        table = pq.read_table(part)
        allowed = kept_by_part.get(part.name, set())
        rids = table.column("record_id").to_pylist()
        keep = [i for i, rid in enumerate(rids) if rid in allowed]
        if len(keep) != len(rids):
            pq.write_table(table.take(pa.array(keep, type=pa.int64())), part)
    return removed
