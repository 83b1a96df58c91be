"""The whole application as a database: a DuckDB file, or a directory of Parquet datasets.

One table per object (the frame's columns and types: ``id`` the primary key, timestamps
with time zone, decimals where the frame holds decimals, booleans, lists), one table per
connection (``record_id`` -> the object, ``connected_id`` -> the connected object, foreign
keys declared when the connected object is loaded and holds every connected id) and per
multi-choice exploded table, plus three tables describing the rest:

* ``svc_tables``: every table, its kind (object/connection/choices/intervals), object, field,
  the name it is named from (``named_from``: the object name or field label), primary key
  and foreign keys (JSON);
* ``svc_connections``: field, label, from/to object and table, one or many;
* ``svc_sources``: each object's Source (JSON: fields, kinds, timezone), as read_parquet
  and write_back know it.

Table names come from object and field names (``work_orders``, ``work_orders__parts``);
column names are the frames' own (a timer's intervals table: ``record_id``, ``from``,
``to``, the frames' names kept for one saved format; ``from`` and ``to`` are SQL keywords,
so every identifier this module puts in SQL is quoted, and a user's query quotes them).
A SQL join over the connection table gives the rows ``app.join`` gives::

    SELECT w.id, p.field_8 FROM work_orders w
    LEFT JOIN work_orders__parts c ON c.record_id = w.id
    LEFT JOIN parts p ON p.id = c.connected_id

DuckDB is an optional dependency: ``pip install 'svc-frames[duckdb]'``.

Usage::

    to_duckdb(app, "demo-output/app.duckdb")          # or app.to_duckdb(...)
    app_to_parquet(app, "demo-output/app")            # dir/<table>/part-00000.parquet
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any, Literal, Protocol

import pandas as pd
import pyarrow as pa

from ..errors import UsageError
from ..frames import Frames
from ..kinds.base import FieldSpec
from ..labels import label_map
from ..names import bounded_sql, sql_name, sql_slug, warn_names
from ..schema import Connection
from .arrow import frame_to_arrow
from .pqfile import write_table

TableKind = Literal["object", "connection", "choices", "intervals", "meta"]


class AppLike(Protocol):
    """What a snapshot reads of ``application.App`` (whose ``to_duckdb``/``to_parquet``
    call this module, so it names the shape rather than importing the class)."""

    frames: dict[str, Frames]
    names: dict[str, str]
    connections: list[Connection]

    def keys(self) -> list[str]: ...

    def items(self) -> list[tuple[str, Frames]]: ...

    def name(self, key: str) -> str: ...


def is_app(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("frames", "names", "connections", "items", "name"))

__all__ = ["to_duckdb", "app_to_parquet", "app_tables", "TableSpec"]


@dataclass
class TableSpec:
    """One table of the snapshot: its rows (Arrow), keys, and what it holds."""

    name: str
    data: pa.Table
    kind: TableKind
    object_key: str = ""
    field: str = ""
    primary_key: list[str] = dc_field(default_factory=list)
    # (column, referenced table, referenced column)
    foreign_keys: list[tuple[str, str, str]] = dc_field(default_factory=list)
    named_from: str = ""   # the object name or field label the table is named after


def object_table_names(app: AppLike) -> dict[str, str]:
    """object key -> table name (its name as a slug, unique; its key when it has none)."""
    names: dict[str, str] = {}
    taken = {"svc_tables", "svc_connections", "svc_sources"}
    for key in app.keys():
        base = sql_name(app.names.get(key) or key)
        name = base if base not in taken else bounded_sql(f"{base}_{key}")
        taken.add(name)
        names[key] = name
    return names


def table_field(frames: Frames, table: str) -> FieldSpec | None:
    """The field an exploded table belongs to (tables are named by key or by label)."""
    if frames.source is None:
        return None
    labels = label_map(frames.source.fields)
    for spec in frames.source.fields:
        if table in (spec.key, labels.get(spec.key)):
            return spec
    return None


def app_tables(app: AppLike) -> list[TableSpec]:
    """Every table of the snapshot, parents before children (foreign keys in order).
    One NameWarning for the tables named otherwise than their name's plain SQL form (a
    clash, a cut): ``svc_tables`` records each table's ``named_from``.

    Usage: ``[t.name for t in app_tables(app)]``"""
    names = object_table_names(app)
    ids = {k: set(f.main.index) for k, f in app.items()}
    out: list[TableSpec] = []
    renamed: dict[str, str] = {}
    for key, frames in app.items():
        named = app.names.get(key) or key
        if names[key] != sql_slug(named):
            renamed[f"{named} ({key})"] = names[key]
        out.append(TableSpec(names[key], frame_to_arrow(frames.main), "object", key,
                             primary_key=["id"], named_from=named))
    taken = {t.name for t in out} | {"svc_tables", "svc_connections", "svc_sources"}
    conn_tables: dict[str, str] = {}
    for key, frames in app.items():
        for tname, tdf in frames.tables.items():
            spec = table_field(frames, tname)
            label = spec.label if spec is not None else tname
            name = bounded_sql(f"{names[key]}__{sql_name(label)}")
            if name in taken:
                name = bounded_sql(f"{names[key]}__{sql_name(spec.key if spec else tname)}")
            taken.add(name)
            if name != f"{names[key]}__{sql_slug(label)}":
                renamed[f"{app.names.get(key) or key} / {label}"] = name
            fks = [("record_id", names[key], "id")]
            if spec is not None and spec.kind == "connection":
                target = str((spec.relationship or {}).get("object") or "")
                conn_tables[spec.key] = name
                if target in names and set(tdf["connected_id"].dropna()) <= ids[target]:
                    fks.append(("connected_id", names[target], "id"))
                pk = ([] if tdf.duplicated(["record_id", "connected_id"]).any()
                      else ["record_id", "connected_id"])
                out.append(TableSpec(name, frame_to_arrow(tdf), "connection", key,
                                     spec.key, pk, fks, label))
            else:
                kind: TableKind = ("intervals" if spec is not None and spec.kind == "timer"
                                   else "choices")
                out.append(TableSpec(name, frame_to_arrow(tdf), kind, key,
                                     spec.key if spec else tname, [], fks, label))
    warn_names("SQL table names", renamed)
    out.extend(meta_tables(app, names, conn_tables, out))
    return out


def meta_tables(app: AppLike, names: dict[str, str], conn_tables: dict[str, str],
                tables: Sequence[TableSpec], rows: Mapping[str, int] | None = None
                ) -> list[TableSpec]:
    """svc_tables, svc_connections and svc_sources (see the module docstring); ``rows``:
    the rows of tables whose ``data`` holds only some of them (a mirror's changed rows)."""
    described = list(tables) + [TableSpec(n, pa.table({}), "meta") for n in
                                ("svc_tables", "svc_connections", "svc_sources")]
    # the three meta tables are built below, after this one: their rows are known here
    meta_rows = {"svc_tables": len(described), "svc_connections": len(app.connections),
                 "svc_sources": len(names)}
    svc_tables = pd.DataFrame({
        "table_name": [t.name for t in described],
        "kind": [t.kind for t in described],
        "object_key": [t.object_key for t in described],
        "field": [t.field for t in described],
        "named_from": [t.named_from or t.name for t in described],
        "rows": [meta_rows[t.name] if t.kind == "meta" else (rows or {}).get(
            t.name, t.data.num_rows) for t in described],
        "primary_key": [json.dumps(t.primary_key) for t in described],
        "foreign_keys": [json.dumps(t.foreign_keys) for t in described],
    }).astype({c: "string" for c in ("table_name", "kind", "object_key", "field",
                                     "named_from", "primary_key", "foreign_keys")})
    conns = app.connections
    svc_connections = pd.DataFrame({
        "field": [c.field for c in conns], "label": [c.label for c in conns],
        "from_object": [c.from_object for c in conns],
        "to_object": [c.to_object for c in conns], "has": ["many" if c.many else "one" for c in conns],
        "from_table": [names.get(c.from_object) for c in conns],
        "to_table": [names.get(c.to_object) for c in conns],
        "table_name": [conn_tables.get(c.field) for c in conns],
    }, dtype="string")
    svc_sources = pd.DataFrame({
        "object_key": list(names), "name": [app.name(k) for k in names],
        "table_name": list(names.values()),
        "source": [json.dumps(f.source.to_dict()) if f.source is not None else None
                   for f in app.frames.values()],
    }, dtype="string")
    return [TableSpec("svc_tables", frame_to_arrow(svc_tables), "meta"),
            TableSpec("svc_connections", frame_to_arrow(svc_connections), "meta"),
            TableSpec("svc_sources", frame_to_arrow(svc_sources), "meta")]


def check_destination(path: str | os.PathLike[str], overwrite: bool, what: str,
                      directory: bool) -> Path:
    """UsageError (before anything is written) for a destination in a missing directory,
    or one that exists (unless ``overwrite``), or of the wrong type."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise UsageError(f"{what} needs a path, got {path!r}")
    dest = Path(path)
    parent = dest.parent if str(dest.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{what}: the directory {parent} does not exist (for {dest})")
    if dest.exists():
        if not overwrite:
            raise UsageError(f"{what}: {dest} exists; pass overwrite=True to replace it")
        if directory != dest.is_dir():
            kind = "a directory" if dest.is_dir() else "a file"
            raise UsageError(f"{what}: {dest} is {kind}; not replaced")
    return dest


def to_duckdb(app: AppLike, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the app to one DuckDB file (see the module docstring); written aside and moved
    into place, so a failure leaves no half-written file. Usage: ``to_duckdb(app, "a.duckdb")``"""
    if not is_app(app):
        raise UsageError(f"to_duckdb needs an App (read_app), got {type(app).__name__}")
    dest = check_destination(path, overwrite, "to_duckdb", directory=False)
    duckdb = import_duckdb()
    tables = app_tables(app)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp",
                                    dir=dest.parent if str(dest.parent) else ".")
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # duckdb creates the file itself (an empty file is not a database)
    try:
        con = duckdb.connect(str(tmp))
        try:
            for t in tables:
                write_duckdb_table(con, t)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, dest)
    except BaseException:
        for p in (tmp, Path(str(tmp) + ".wal")):
            p.unlink(missing_ok=True)
        raise
    return dest


def import_duckdb() -> Any:
    try:
        import duckdb  # optional: the svc_frames[duckdb] extra
    except ImportError:
        raise UsageError("to_duckdb needs DuckDB: pip install 'svc-frames[duckdb]'") from None
    return duckdb


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


SQL_TYPES = {"TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ", "TIMESTAMPTZ_NS": "TIMESTAMPTZ",
             "TIMESTAMP_NS": "TIMESTAMP"}
"""The frames' nanosecond timestamps as the microsecond types every SQL tool reads (the
service's values are to the minute, so nothing is lost)."""


def write_duckdb_table(con: Any, t: TableSpec) -> None:
    """CREATE TABLE with DuckDB's types for the Arrow columns, the primary key and the
    foreign keys, then the rows."""
    con.register("svc_src", t.data)
    try:
        cols = con.execute("DESCRIBE SELECT * FROM svc_src").fetchall()
        parts = [f"{quote(c[0])} {SQL_TYPES.get(c[1], c[1])}" for c in cols]
        if t.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(map(quote, t.primary_key))})")
        for col, ref, ref_col in t.foreign_keys:
            parts.append(f"FOREIGN KEY ({quote(col)}) REFERENCES {quote(ref)} "
                         f"({quote(ref_col)})")
        con.execute(f"CREATE TABLE {quote(t.name)} ({', '.join(parts)})")
        if cols:
            con.execute(f"INSERT INTO {quote(t.name)} SELECT * FROM svc_src")
    finally:
        con.unregister("svc_src")


def app_to_parquet(app: AppLike, path: str | os.PathLike[str], *, overwrite: bool = False
                   ) -> Path:
    """Write the app as a directory of Parquet datasets, ``dir/<table>/part-00000.parquet``
    (the tables of to_duckdb; keys listed in ``svc_tables``); written aside and moved into
    place. Usage: ``app_to_parquet(app, "out/app")``"""
    if not is_app(app):
        raise UsageError(f"to_parquet needs an App (read_app), got {type(app).__name__}")
    dest = check_destination(path, overwrite, "to_parquet", directory=True)
    tables = app_tables(app)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for t in tables:
            (tmp / t.name).mkdir()
            write_table(t.data, tmp / t.name / "part-00000.parquet")
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest
