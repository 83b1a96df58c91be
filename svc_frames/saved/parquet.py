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

Every Parquet file is written with its timestamps at microseconds, adjusted to UTC, and
read back by what the file says they are (:mod:`.pqfile`: INT96 is a UTC instant), so a
date that Spark, Dask or a SQL engine wrote back unchanged is no edit.

``orders`` holds the record parts alone because DuckDB reads a directory recursively and
Polars refuses one with other files in it: ``pd.read_parquet("orders")``,
``pyarrow.dataset.dataset("orders")``, DuckDB ``read_parquet('orders/*.parquet')``,
Polars ``scan_parquet("orders")``, Dask and Spark give each record once. With
``format="csv"`` the record parts are CSV written as the service shows values
(:mod:`svc_frames.saved.csvtext`); the as-loaded copy stays Parquet.

The edited records may be re-written by any tool (pandas, pyarrow, DuckDB ``COPY ... TO``,
Polars, a spreadsheet through CSV) under any file name in ``orders/``: what a writer drops
(the Parquet schema metadata) is not needed, since the JSON file beside the data says
what each column must hold. A file that no longer fits (a column dropped, one added that
looks like a field, a type that does not convert, an id that was not loaded, a record
twice) is refused naming the column and the file, before any request; a column added
that is no field is the analyst's own (kept, never sent: ``plan.left_out``). With
``format="xlsx"`` the parts are Excel workbooks (:mod:`svc_frames.saved.xlsx`). svc_frames never replaces anything that exists
without ``overwrite=True``.

Usage::

    to_parquet(frames, "out/customers")
    frames2 = read_parquet("out/customers")
    export(client, "object_1", "out/dataset")                 # memory flat in N
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import UsageError
from ..frames import Frames, Source, warn_skipped
from ..kinds import codec_for
from ..kinds.base import FieldSpec
from ..labels import label_map, label_renames, relabel, renamed
from ..names import path_names
from ..read.options import Columns, check_columns, naming
from ..writeback.analysis import analysis_columns
from ..writeback.plan import ColumnMap
from .arrow import (
    PANDAS_INDEX,
    arrow_to_frame,
    arrow_type,
    conform,
    frame_to_arrow,
    is_text,
    table_meta,
)
from .csvtext import csv_text, format_column, read_cells
from .exploded import with_table_edits
from .layout import (
    DATA_SUFFIXES,
    NEW_ID_PREFIX,
    SavedLayout,
    SavedMeta,
    Staging,
    check_free,
    corrupt,
    data_files,
    loaded_digest,
    meta_doc,
    read_meta,
    warn_dir_renames,
    write_meta,
)
from .pqfile import read_table, write_table
from .xlsx import read_texts, write_xlsx


# ---- writing --------------------------------------------------------------------------
def column_fields(source: Source | None) -> dict[str, FieldSpec]:
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
        write_table(table, path)
    elif fmt == "xlsx":
        write_xlsx(arrow_to_frame(table, table_meta(table)["dtypes"], None), path, fields)
    else:
        write_csv(arrow_to_frame(table, table_meta(table)["dtypes"], None), path, fields)
    return table


def write_csv(df: pd.DataFrame, path: Path, fields: Mapping[str, FieldSpec]) -> None:
    texts = {str(c): format_column(df[c], fields.get(str(c))) for c in df.columns}
    path.write_bytes(csv_text(list(texts), list(texts.values())).encode("utf-8"))


def _dataset_columns(table: pa.Table) -> dict[str, str]:
    return dict(table_meta(table)["dtypes"])


def write_frames(frames: Frames, data: Path, tables: Path, fmt: str
                  ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Main and tables of ``frames`` as one part each. Returns (main columns -> dtype,
    table name -> {dir, columns})."""
    fields = column_fields(frames.source)
    meta = {"source": frames.source.to_dict() if frames.source else None}
    main = _write_part(frames.main, data / f"part-00001.{fmt}", fmt, meta, fields)
    out_tables: dict[str, dict[str, Any]] = {}
    dirs = path_names(frames.tables)
    for name, tdf in frames.tables.items():
        sub = dirs[name]
        t = _write_part(tdf.reset_index(drop=True), tables / sub / f"part-00001.{fmt}", fmt,
                        {"table": name}, fields)
        out_tables[name] = {"dir": sub, "columns": _dataset_columns(t)}
    return _dataset_columns(main), out_tables


def to_parquet(frames: Frames, path: str | os.PathLike[str], *,
               overwrite: bool = False, columns: Columns | None = None) -> Path:
    """Save frames as a directory any Parquet reader takes, which push can read back.

    The records go to ``path`` (one row per record, the record id as the column ``id``),
    the exploded tables to ``path.tables/<name>/``, and beside them the metadata
    ``path.svc_frames.json`` and the as-loaded copy ``path.svc_frames/`` that
    :func:`read_parquet` and :func:`push` diff against (the module docstring of
    ``svc_frames/saved/parquet.py`` shows the layout). Everything is written aside and
    moved into place at the end: a failed write leaves what was there intact. How the
    saved columns, tables and directories are named: docs/column-names.md.

    Parameters
    ----------
    frames : Frames
        Frames as a loader or :func:`read_parquet` returned them (their ``original``,
        when they have one, becomes the as-loaded copy).
    path : str or os.PathLike
        The records' directory; its siblings are named after it.
    overwrite : bool, default False
        Replace saved frames (or a directory of data files alone) already at ``path``.
    columns : {"keys", "labels"}, optional
        Name the saved columns and tables by field key (``field_27``) or by field label
        (``Status``); default: as ``frames`` name them.

    Returns
    -------
    pathlib.Path
        ``path``, the records' directory.

    Raises
    ------
    UsageError
        ``frames`` is not Frames, ``columns`` is neither "keys" nor "labels", something
        is already at ``path`` (or a sibling) without ``overwrite=True``, or ``path``
        holds files that are not saved frames (never replaced). Nothing is written.

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> saved = to_parquet(frames, tmp_path / "orders")
    >>> sorted(p.name for p in tmp_path.iterdir())
    ['orders', 'orders.svc_frames', 'orders.svc_frames.json', 'orders.tables']
    >>> pd.read_parquet(saved).shape          # the id is a column of the saved records
    (30, 56)
    >>> by_label = to_parquet(frames, tmp_path / "labelled", columns="labels")
    >>> "Status" in pd.read_parquet(by_label).columns
    True
    """
    if not isinstance(frames, Frames):
        raise UsageError(f"to_parquet needs Frames, got {type(frames).__name__}")
    relabelled: dict[str, str] = {}
    if columns is not None:
        if columns == "labels" and frames.source is not None \
                and frames.source.columns != "labels":   # named here, not by their load
            relabelled = {label: used for _k, label, used in label_renames(frames.source.fields)}
        check_columns(columns)
        if not isinstance(columns, str):
            raise UsageError(f"to_parquet names columns 'labels' or 'keys', got {columns!r}")
        frames = renamed(frames, naming(columns))
    layout = SavedLayout.of(path)
    check_free(layout, overwrite)
    with Staging(layout) as st:
        dtypes, tables = write_frames(frames, st.data, st.tables, "parquet")
        warn_dir_renames(tables, relabelled)
        if frames.original is not None:
            write_frames(frames.original, st.loaded / "main", st.loaded / "tables", "parquet")
        write_meta(st.meta, meta_doc(frames.source, "parquet", dtypes, tables,
                                       layout.loaded if frames.original is not None else None,
                                       len(frames.main), "to_parquet", staged_loaded=st.loaded,
                                       skipped=frames.skipped))
        st.install()
    return layout.data


def same_target(a: Source, b: Source) -> bool:
    return (a.kind, a.object_key, a.scene_key, a.view_key) == \
        (b.kind, b.object_key, b.scene_key, b.view_key)


def _target_name(s: Source) -> str:
    return s.object_key if s.kind == "object" else f"{s.scene_key}/{s.view_key}"


def _read_file(path: Path, columns: Mapping[str, str], meta: SavedMeta,
               fields: Mapping[str, FieldSpec], loaded: pd.DataFrame | None,
               analysis: bool = False) -> pd.DataFrame:
    """One data file as a frame of the saved column types, or UsageError naming the file
    and the column that no longer fits. ``loaded``: the as-loaded records (by id), whose
    exact values a CSV cell stands for when it still reads as they were written.
    ``analysis``: the records' files, where a column that is no field's (the analyst's
    own) is kept after the saved ones, as the file holds it (``_analysis_columns``)."""
    tz = meta.source.timezone if meta.source else None
    if DATA_SUFFIXES[path.suffix.lower()] == "csv":
        try:
            text = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: not a readable CSV file ({exc})") from None
        extra = _check_names(path, [str(c) for c in text.columns], columns,
                             meta if analysis else None)
        out = read_cells(str(path), {n: text[n].tolist() for n in columns}, columns, fields,
                         meta.index, meta.source.timezone if meta.source else None, loaded)
        for name in extra:   # the file's text, an empty cell empty
            out[name] = text[name].mask(text[name] == "").to_numpy(dtype=object)
        return out
    if DATA_SUFFIXES[path.suffix.lower()] == "xlsx":
        header, cells = read_texts(path, columns)
        extra = _check_names(path, header, columns, meta if analysis else None)
        out = read_cells(str(path), {n: cells[n] for n in columns}, columns, fields,
                         meta.index, tz, loaded)
        for name in extra:
            out[name] = [v if v != "" else None for v in cells[name]]
        return out
    try:
        table = read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise UsageError(f"{path}: not a readable Parquet file ({exc})") from None
    own = table_meta(table).get("source")
    if own and meta.source is not None:
        try:
            theirs = Source.from_dict(own)
        except (TypeError, KeyError, ValueError, AttributeError):
            theirs = None
        if theirs is not None and not same_target(theirs, meta.source):
            raise UsageError(f"the metadata ({meta.path}: {_target_name(meta.source)}) and "
                             f"the frame ({path}: {_target_name(theirs)}) disagree: this "
                             "file was saved from another object or view")
    keep = [c for c in table.column_names if not PANDAS_INDEX.match(c)]
    extra = _check_names(path, keep, columns, meta if analysis else None)
    if extra:
        own_cols = table.select(extra).to_pandas()   # as the file holds them
        out = _read_file_table(path, table, columns, meta, fields, loaded, tz)
        for name in extra:
            out[name] = own_cols[name].to_numpy()
        return out
    return _read_file_table(path, table, columns, meta, fields, loaded, tz)


def _read_file_table(path: Path, table: pa.Table, columns: Mapping[str, str],
                     meta: SavedMeta, fields: Mapping[str, FieldSpec],
                     loaded: pd.DataFrame | None, tz: str | None) -> pd.DataFrame:
    """The saved columns of one Parquet file (``_read_file``)."""
    arrays: dict[str, pa.ChunkedArray] = {}
    as_text: dict[str, str] = {}
    for name, dtype in columns.items():
        want = arrow_type(dtype)
        arr = table.column(name)
        if want is not None:
            try:
                arr = conform(arr, want, tz)
            except (ValueError, pa.ArrowException):
                if loaded is None or not (is_text(arr.type) or is_text(want) or (
                        pa.types.is_boolean(want) and pa.types.is_floating(arr.type))):
                    raise UsageError(_changed_type(path, name, arr.type, dtype, want),
                                     field=name) from None
                # text where a value was saved (astype(str)), a value where text was
                # (read_excel's floats for digits), 1.0/0.0 for yes/no (read_excel with
                # blanks): read cell by cell against the loaded values, as CSV is
                as_text[name] = dtype
                continue
            raw = table.column(name)
            if (loaded is not None and pa.types.is_timestamp(raw.type) and raw.type.tz is None
                    and name in loaded.columns and meta.index in table.column_names):
                _check_wall_clock(path, name, raw, arr, table.column(meta.index), loaded)
        arrays[name] = arr
    if not as_text:
        return arrow_to_frame(pa.table(list(arrays.values()), names=list(columns)), columns,
                              None)
    texts = {c: [None if v is None else str(v) for v in table.column(c).to_pylist()]
             for c in [meta.index, *as_text] if c in table.column_names}
    read = read_cells(str(path), texts, as_text, fields, meta.index, tz, loaded)
    rest = [c for c in columns if c not in as_text]
    out = arrow_to_frame(pa.table([arrays[c] for c in rest], names=rest),
                         {c: columns[c] for c in rest}, None)
    for name in as_text:
        out[name] = read[name].array
    return out[list(columns)]


def _check_wall_clock(path: Path, name: str, wall: pa.ChunkedArray, read: pa.ChunkedArray,
                      ids: pa.ChunkedArray, loaded: pd.DataFrame) -> None:
    """Refuse timestamps without zone that are UTC instants in fact: a tool that read an
    INT96 file (pandas, Dask, pyarrow give it no zone) and wrote it back unmarked, which
    the format calls the application's wall clock, would move every date by the UTC
    offset. Found when most dates that differ from the as-loaded copy equal it read as
    UTC."""
    rid = pd.Index(ids.to_pylist(), dtype=object)
    known = np.asarray(rid.isin(loaded.index))
    if not known.any():
        return
    old = _utc_ns(loaded[name].reindex(rid[known]).to_numpy())
    new = _utc_ns(read.to_pandas())[known]
    as_utc = _utc_ns(wall.to_pandas())[known]
    differ = (new != old) & ~(np.isnat(new) & np.isnat(old))
    utc_like = int((differ & (as_utc == old)).sum())
    if utc_like and 2 * utc_like >= int(differ.sum()):
        raise UsageError(
            f"{path}: column {name!r} holds timestamps without a zone, which mean the "
            f"application's wall clock, but {utc_like} of them equal the as-loaded dates "
            "read as UTC: they look like UTC instants whose zone was dropped (pandas and "
            "Dask read Spark's INT96 that way); pushing would move every one. Write the "
            "column with its zone (tz-aware), or export again; nothing was sent",
            field=name)


def _utc_ns(values: Any) -> np.ndarray:
    """Timestamps (aware: their instant; naive: read as UTC) as naive UTC datetime64[ns]."""
    s = pd.to_datetime(pd.Series(values), utc=True).dt.tz_localize(None)
    return np.asarray(s.to_numpy("datetime64[ns]"))


def _changed_type(path: Path, name: str, found: pa.DataType, dtype: str,
                  want: pa.DataType) -> str:
    if pa.types.is_timestamp(want) and not pa.types.is_timestamp(found):
        # numbers or text in a date column: no unit or zone to read them by, and a guess
        # would move every date that was not touched
        return (f"{path}: column {name!r} holds {found}, not timestamps (saved as {dtype}): "
                "what instant each value means cannot be known, so nothing is pushed; "
                "write it back as a timestamp column (Spark: TimestampType, pandas: "
                "datetime64, DuckDB: TIMESTAMPTZ)")
    if pa.types.is_list(want) and not pa.types.is_nested(found):
        # a list printed as text ("['a' 'b']", "a, b") cannot be split back: an option
        # may itself hold ", ", quotes or brackets
        return (f"{path}: column {name!r} holds {found}, not lists (a multiple choice or "
                "other list field, saved as a list column): its text cannot be split back "
                "into the options without guessing, so nothing is pushed; write it back as "
                "a list column (Dask: dd.read_parquet(..., dtype_backend=\"pyarrow\"), or "
                "to_parquet(..., schema=None); pandas: keep Python lists; Spark: "
                "array<string>)")
    return (f"{path}: column {name!r} holds {found} but was saved as {dtype}: its type "
            "changed (convert it back, or export again)")


def _check_names(path: Path, names: list[str], columns: Mapping[str, str],
                 analysis: SavedMeta | None = None) -> list[str]:
    """The file's columns against the saved ones: UsageError for one missing or twice;
    the columns that were not saved (in file order): refused in a table or the as-loaded
    copy, kept in the records (``analysis``: their metadata) unless they look like a
    field (``_analysis_columns``)."""
    missing = [c for c in columns if c not in names]
    if missing:
        raise UsageError(f"{path}: column {missing[0]!r} is missing (dropped or renamed?); "
                         f"saved frames need every column they were saved with"
                         + (f", also missing: {missing[1:]}" if len(missing) > 1 else ""),
                         field=missing[0])
    if len(set(names)) != len(names):
        dup = next(c for c in names if names.count(c) > 1)
        raise UsageError(f"{path}: column {dup!r} appears twice", field=dup)
    extra = [c for c in names if c not in columns]
    if extra and analysis is None:
        raise UsageError(f"{path}: column {extra[0]!r} was not saved with these frames; drop "
                         "it before pushing (write_back sends saved fields only)",
                         field=extra[0])
    if extra and analysis is not None:
        _analysis_columns(path, extra, analysis)
    return extra


def _analysis_columns(path: Path, extra: list[str], meta: SavedMeta) -> None:
    """Columns of a records file that were not saved are the analyst's own (never sent,
    named in the plan's ``left_out``), unless they look like a field: write_back's
    decision (``writeback.analysis``), refused here naming the file first."""
    if meta.source is None:
        raise UsageError(f"{path}: column {extra[0]!r} was not saved with these frames, "
                         "which name no source to tell it from a field; drop it",
                         field=extra[0])
    layout = ColumnMap.of(meta.source)
    for col in extra:
        try:
            analysis_columns(pd.DataFrame(columns=[col]), layout)
        except UsageError as exc:
            raise UsageError(f"{path}: {exc}", field=col) from None


def _read_dataset(root: Path, columns: Mapping[str, str], meta: SavedMeta, what: str,
                  loaded: pd.DataFrame | None = None, analysis: bool = False
                  ) -> tuple[pd.DataFrame, list[tuple[Path, int]]]:
    """Every data file of ``root``, concatenated; with (file, rows) per file.
    ``analysis``: keep the analyst's own columns (``_read_file``)."""
    files = data_files(root)
    if not files:
        raise UsageError(f"{root}: no data files ({', '.join(sorted(DATA_SUFFIXES))}) for "
                         f"{what}")
    fields = column_fields(meta.source)
    frames = [_read_file(p, columns, meta, fields, loaded, analysis) for p in files]
    spans = [(p, len(f)) for p, f in zip(files, frames, strict=True)]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return df, spans


def new_or_na(v: Any) -> bool:
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
            if new_or_na(v):
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
        raise corrupt(meta.path, f"it names the as-loaded copy {root}, which is missing")
    # no digest: saved before the as-loaded copy had one, read as it is (it cannot be
    # checked; the next save by push or to_parquet records one)
    if meta.loaded_sha256 is not None and loaded_digest(root) != meta.loaded_sha256:
        raise UsageError(f"{root}: the as-loaded copy was changed since it was saved (its "
                         f"SHA-256 is not the one in {meta.path.name}); push diffs the edits "
                         "against it, so a changed copy would drop or invent changes. Do not "
                         "edit it: edit the records in "
                         f"{layout.data.name}/; export again to start over; nothing was sent")
    main, spans = _read_dataset(root / "main", meta.columns, meta, "the as-loaded copy")
    original = Frames(_main_frame(main, spans, meta.index, None), {}, meta.source)
    for name, t in meta.tables.items():
        tdir = root / "tables" / t["dir"]
        if tdir.is_dir():  # a table of the edit the loaded data did not have stays out
            original.tables[name] = _read_dataset(tdir, t["columns"], meta,
                                                  f"the as-loaded table {name!r}")[0]
    return original


def read_parquet(path: str | os.PathLike[str]) -> Frames:
    """Read saved frames back, edited with any tool or not, as Frames.

    Reads what :func:`to_parquet` or :func:`export` wrote: the records (every data file
    in ``path``, any name, Parquet, CSV or xlsx), the exploded tables, the source, and
    the as-loaded copy as ``original``, so :func:`diff` and :func:`write_back` see the
    edits (a multiple choice edited in its exploded table is its record's cell; a column
    the analyst added is kept, and left out by :func:`write_back`).
    Each data file is checked against the metadata beside it first: the saved columns,
    each convertible to its saved type, ids that were loaded (or empty / ``new:...`` for
    new rows), each once. A cell that is what pandas, a spreadsheet or ``astype(str)``
    made of its loaded value (``78742.0`` for the text ``78742``, ``TRUE``, the same
    instant written another way) is that value (docs/saved-frames.md). Names as saved:
    docs/column-names.md.

    Parameters
    ----------
    path : str or os.PathLike
        The records' directory of saved frames.

    Returns
    -------
    Frames
        ``main`` indexed by ``id``, ``tables``, ``source``, and ``original`` when the
        as-loaded copy was saved.

    Raises
    ------
    UsageError
        ``path`` is not a directory, its metadata is missing or corrupt (the message
        names the JSON file), a data file lacks a saved column, holds one that looks like
        a field but is none (``field_99``, ``priority`` for ``Priority``), a value
        of another type, an id that was not loaded or an id twice (naming the file and
        the column), cells a tool rewrote so that they no longer tell the loaded value
        from an edit (``1234.0`` for the loaded text ``01234``: the column, how many, a
        few, and what to do), a table directory is missing, a table and the records
        disagree about a record (naming the table's file), or the as-loaded copy was
        changed since it was saved.

    Examples
    --------
    >>> saved = to_parquet(read_object(client, "Work Orders"), tmp_path / "orders")
    >>> frames = read_parquet(saved)
    >>> frames.main.index.name, len(frames.main), diff(frames).empty
    ('id', 30, True)

    Edit the records with pandas (or any tool), then read them again:

    >>> df = pd.read_parquet(saved)
    >>> df.loc[0, "Title"] = "Replace the pump"
    >>> df.to_parquet(saved / "part-00001.parquet", index=False)
    >>> diff(read_parquet(saved)).counts
    {'update': 1, 'create': 0, 'delete': 0}
    """
    return read_as_written(path, table_edits=True)


def read_as_written(path: str | os.PathLike[str], *, table_edits: bool = False) -> Frames:
    """:func:`read_parquet`; with ``table_edits=False`` a multiple choice edited in its
    table is not taken into its record's cell, nor a stale cell read as loaded: the
    records as their files hold them (what push records as ``stale`` after a push)."""
    layout = SavedLayout.of(path)
    if (layout.data / "main.parquet").exists() and not layout.meta.exists():
        return _read_legacy(layout.data)
    if not layout.data.is_dir():
        raise UsageError(f"{layout.data}: no such directory of saved frames")
    meta = read_meta(layout.data)
    original = _read_loaded(layout, meta) if meta.loaded else None
    known = set(original.main.index.dropna()) if original is not None else None
    df, spans = _read_dataset(layout.data, meta.columns, meta, "the records",
                              original.main if original is not None else None, True)
    main = _main_frame(df, spans, meta.index, known)
    tables: dict[str, pd.DataFrame] = {}
    table_spans: dict[str, list[tuple[Path, int]]] = {}
    for name, t in meta.tables.items():
        tdir = layout.tables / t["dir"]
        if not tdir.is_dir():
            raise UsageError(f"{tdir} is missing: the table {name!r} of {layout.data} "
                             "(push would read its absence as every row removed)")
        tables[name], table_spans[name] = _read_dataset(tdir, t["columns"], meta,
                                                        f"table {name!r}")
    if original is not None and table_edits:   # a choice edited in its table: its cell
        main = with_table_edits(main, tables, table_spans, original,
                                column_fields(meta.source), layout.data, meta.stale)
    skipped = meta.skipped
    warn_skipped(skipped, meta.source.timezone if meta.source else None, main.index)
    return Frames(main, tables, meta.source, original, skipped=skipped)


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
