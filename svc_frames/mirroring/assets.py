"""The mirror's copies of files and images (``mirror(..., assets=True)``), and their reader.

A run with ``assets=True`` downloads the file of every file field and uploaded image field
of the records it inserted or whose file changed (``assets.download``: the exact bytes),
and keeps each in the table ``svc_assets`` of the target, written in the run's one
transaction: ``object_key``, ``record_id``, ``field_key``, ``asset_id``, ``url``,
``filename``, ``content_type``, ``size``, ``data`` (the bytes: DuckDB ``BLOB``,
PostgreSQL ``bytea``, Parquet ``binary``) and ``run_id``. The Parquet directory keeps the
table partitioned by run (``svc_assets/run=N/part-00000.parquet``, moved into place at
the commit point as the rest of the run), so a run writes its own copies only.

A copy is keyed by the record, the field and the asset's id (an image field whose source
is a URL holds no upload: it is not copied, its URL is its value): a run downloads only
what it has no copy of, so a record edited in other fields costs nothing here, and a
record whose file was replaced gets a new copy beside the old one (restore picks the copy
of the asset the record held at its time). A record seen for the first time with copies
on (the first run, or the first run after the option was turned on) has every file
copied. Copies are never removed: a deleted record's files stay restorable.

This module is the table (its rows written, held and read); downloads.py fetches the
files a run needs (it reads the run's objects, which apply.py, the writer of this table,
defines).

Usage::

    copies = fetch_copies(client, target, runs, run_id)       # downloads.py, before it
    write_copies(w, target, copies)                            # inside it
    got = asset_copies("app.duckdb", "object_3", ["64f1..."])  # {(id, field): AssetCopy}
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import UsageError
from .target import MirrorTarget, Writer, open_target

__all__ = ["AssetCopy", "asset_copies", "held_copies", "write_copies", "ASSETS_TABLE"]

ASSETS_TABLE = "svc_assets"
KEY_COLUMNS = ("object_key", "record_id", "field_key", "asset_id")
SCHEMA = pa.schema([("object_key", pa.string()), ("record_id", pa.string()),
                    ("field_key", pa.string()), ("asset_id", pa.string()),
                    ("url", pa.string()), ("filename", pa.string()),
                    ("content_type", pa.string()), ("size", pa.int64()),
                    ("data", pa.large_binary()), ("run_id", pa.int64())])


@dataclass(frozen=True)
class AssetCopy:
    """A file or image as the mirror keeps it.

    Attributes
    ----------
    name : str
        The file name the service kept.
    content_type : str
        Its media type (from the name; ``application/octet-stream`` when unknown).
    data : bytes
        The exact bytes downloaded.
    run : int
        The mirror run that downloaded it.
    asset_id : str
        The service's asset id the record held then.
    """

    name: str
    content_type: str
    data: bytes
    run: int
    asset_id: str = ""


def held_copies(target: MirrorTarget, keys: Sequence[str]) -> set[tuple[str, str, str, str]]:
    """The copies the target holds for these objects, by key (the bytes not read)."""
    if ASSETS_TABLE not in target.tables():
        return set()
    table = _select(target, list(KEY_COLUMNS), None, None)
    return {(o, r, f, a) for o, r, f, a in zip(*(table.column(c).to_pylist()
                                                 for c in KEY_COLUMNS), strict=True)
            if o in keys}


def write_copies(w: Writer, target: MirrorTarget, copies: pa.Table | None) -> None:
    """The run's copies into ``svc_assets`` (created on the first)."""
    if copies is None:
        return
    if ASSETS_TABLE not in target.tables():
        w.create(ASSETS_TABLE, SCHEMA, KEY_COLUMNS)
    w.insert(ASSETS_TABLE, copies)


def _select(target: MirrorTarget, columns: list[str], object_key: str | None,
            record_ids: Sequence[str] | None) -> pa.Table:
    """Some columns of ``svc_assets``, for an object's records, without reading the rest
    (every copy's bytes) where the target can."""
    from .duckdbtarget import DuckDBTarget, arrow_of
    from .parquetdir import ParquetTarget
    from .postgres import PostgresTarget
    cond, params = [], []
    if object_key is not None:
        cond.append("object_key = ?")
        params.append(object_key)
    if isinstance(target, DuckDBTarget):
        sql = f"SELECT {', '.join(columns)} FROM {ASSETS_TABLE}"
        if record_ids is not None:
            target.con.register("svc_asset_ids", pa.table(
                {"id": pa.array(list(record_ids), pa.string())}))
            cond.append("record_id IN (SELECT id FROM svc_asset_ids)")
        try:
            return arrow_of(target.con.sql(
                sql + (f" WHERE {' AND '.join(cond)}" if cond else ""), params=params))
        finally:
            if record_ids is not None:
                target.con.unregister("svc_asset_ids")
    if isinstance(target, PostgresTarget):
        cond = [c.replace("?", "%s") for c in cond]
        if record_ids is not None:
            cond.append("record_id = ANY(%s)")
            params.append(list(record_ids))   # type: ignore[arg-type]
        rows = target.con.execute(
            f"SELECT {', '.join(columns)} FROM {ASSETS_TABLE}"
            + (f" WHERE {' AND '.join(cond)}" if cond else ""), params).fetchall()
        cols = list(zip(*rows, strict=True)) if rows else [() for _ in columns]
        return pa.table([pa.array([bytes(v) if isinstance(v, memoryview) else v
                                   for v in col], SCHEMA.field(c).type)
                         for col, c in zip(cols, columns, strict=True)],
                        schema=pa.schema([SCHEMA.field(c) for c in columns]))
    if isinstance(target, ParquetTarget):
        files = sorted(Path(target.path, ASSETS_TABLE).rglob("*.parquet"))
        filt: Any = None
        if object_key is not None:
            filt = pc.field("object_key") == object_key
        if record_ids is not None:
            ids = pc.field("record_id").isin(list(record_ids))
            filt = ids if filt is None else filt & ids
        parts = [pq.read_table(f, columns=columns, filters=filt) for f in files]
        return (pa.concat_tables(parts) if parts
                else pa.schema([SCHEMA.field(c) for c in columns]).empty_table())
    table = target.read(ASSETS_TABLE).select(columns)   # another MirrorTarget: all of it
    mask = pa.array([True] * table.num_rows, pa.bool_())
    if object_key is not None:
        mask = pc.and_(mask, pc.equal(table.column("object_key"), object_key))
    if record_ids is not None:
        mask = pc.and_(mask, pc.is_in(table.column("record_id"),
                                      value_set=pa.array(list(record_ids), pa.string())))
    return table.filter(mask)


def asset_copies(target: str | os.PathLike[str] | MirrorTarget, object_key: str,
                 record_ids: Sequence[str], *, run: int | None = None
                 ) -> dict[tuple[str, str], AssetCopy]:
    """The mirror's copies of the files and images of some records (restore's source).

    Parameters
    ----------
    target : str, os.PathLike or MirrorTarget
        The mirror (as ``mirror`` takes it).
    object_key : str
        The records' object (``"object_3"``).
    record_ids : list of str
        The records.
    run : int, optional
        The copies downloaded by this run or before (the files as the mirror knew them
        then); default: the latest.

    Returns
    -------
    dict of (record_id, field_key) to AssetCopy
        Per record and field, the latest copy (a field without one is absent: the mirror
        kept no copy, e.g. it ran without ``assets=True``).

    Raises
    ------
    UsageError
        ``target`` holds no mirror, or ``record_ids`` is not a list of ids.

    Examples
    --------
    >>> from svc_frames.mirroring.assets import asset_copies
    >>> report = mirror(client, tmp_path / "app.duckdb", ["object_3"], assets=True)
    >>> loaded = read_object(client, "object_3", columns="keys").main
    >>> rec = loaded.dropna(subset=["field_37"]).iloc[0]    # a record holding a file
    >>> got = asset_copies(tmp_path / "app.duckdb", "object_3", [rec.name])
    >>> copy = got[(rec.name, "field_37")]
    >>> copy.name == rec["field_37.filename"], len(copy.data) == int(rec["field_37.size"])
    (True, True)
    """
    if isinstance(record_ids, str) or not all(isinstance(i, str) for i in record_ids):
        raise UsageError(f"record_ids must be a list of record ids, got {record_ids!r}")
    own = isinstance(target, (str, os.PathLike))
    tgt = open_target(target, readonly=True)
    try:
        if own:
            tgt.check()
        if not tgt.tables():
            raise UsageError(f"{tgt.name} holds no mirror")
        if ASSETS_TABLE not in tgt.tables():
            return {}
        table = _select(tgt, ["record_id", "field_key", "asset_id", "filename",
                              "content_type", "data", "run_id"], object_key,
                        list(record_ids))
    finally:
        if own:
            tgt.close()
    out: dict[tuple[str, str], AssetCopy] = {}
    for row in sorted(table.to_pylist(), key=lambda r: int(r["run_id"])):
        if run is not None and int(row["run_id"]) > run:
            continue
        out[(row["record_id"], row["field_key"])] = AssetCopy(
            row["filename"] or "", row["content_type"] or "application/octet-stream",
            bytes(row["data"] or b""), int(row["run_id"]), row["asset_id"] or "")
    return out
