"""What the last run left in a target: the application it mirrors, its runs, each object's
tables, source, column types and schema versions, and the current state as Frames again.

The mirror's own tables (beside ``svc_tables``, ``svc_connections`` and ``svc_sources``,
which describe the current tables as ``to_duckdb`` does):

* ``svc_mirror`` (``key``, ``value``): ``app_id``, ``format``;
* ``svc_mirror_runs`` (``run_id``, ``started``, ``finished``, ``report`` JSON);
* ``svc_mirror_objects``: per object its ``table_name`` (fixed when first seen, so a renamed
  object keeps its table), ``name``, ``present`` (False once removed from the
  application), ``source`` (the Source JSON, with what refresh repeats), ``layout`` (JSON:
  each table's name and column types), ``rows``, ``schema_version``;
* ``svc_mirror_schema``: every schema version of every object (``version``, ``run_id``,
  ``time``, ``source``, ``layout``, ``columns``: each frame column's column in the history
  table, ``changes``).

Usage::

    state = MirrorState.read(target)      # None: an empty target
    frames = state.frames("object_3")     # the current table as refresh needs it
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from ..errors import TargetMismatch
from ..frames import Frames, Source
from ..names import MAX_SQL_CHARS
from ..saved.arrow import arrow_to_frame
from .target import MirrorTarget

__all__ = ["MirrorState", "ObjectState", "META_TABLES", "FORMAT"]

FORMAT = "1"
META_TABLES = ("svc_mirror", "svc_mirror_runs", "svc_mirror_objects", "svc_mirror_schema")
VERSION_COLUMNS = ("valid_from", "valid_to", "run_id", "change")


HISTORY_SUFFIX = "__history"
MAX_TABLE_CHARS = MAX_SQL_CHARS - len(HISTORY_SUFFIX)


def history_name(table: str) -> str:
    """The history table of a current-state table."""
    return f"{table}{HISTORY_SUFFIX}"


def fit_name(name: str) -> str:
    """A current table's name short enough that its history's fits the identifiers SQL
    engines keep (PostgreSQL cuts at 63 bytes): a longer one is cut and ends in a hash
    of the whole."""
    if len(name.encode()) <= MAX_TABLE_CHARS:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[:MAX_TABLE_CHARS - 9]}_{digest}"


@dataclass
class ObjectState:
    """One object as the last run left it."""

    object_key: str
    name: str
    table_name: str
    present: bool
    source: dict[str, Any]
    layout: dict[str, Any]   # {"main": {"dtypes"}, "tables": {field: {"table", "dtypes"}}}
    rows: int
    schema_version: int

    def field_kinds(self) -> dict[str, str]:
        return {str(f["key"]): str(f.get("type")) for f in self.source.get("fields", [])}

    def field_labels(self) -> dict[str, str]:
        return {str(f["key"]): str(f.get("name") or f["key"])
                for f in self.source.get("fields", [])}


@dataclass
class MirrorState:
    """The mirror's tables read back (module docstring)."""

    app_id: str
    runs: pd.DataFrame
    objects: dict[str, ObjectState] = field(default_factory=dict)
    schema: pd.DataFrame = field(default_factory=pd.DataFrame)
    target: MirrorTarget | None = None
    read_tables: dict[str, pa.Table] = field(default_factory=dict, repr=False)
    rows_read: int = 0   # rows of current tables read back this run (all of their columns)

    def table(self, name: str) -> pa.Table:
        """A table of the target, read once per run."""
        assert self.target is not None
        if name not in self.read_tables:
            self.read_tables[name] = self.target.read(name)
            self.rows_read += self.read_tables[name].num_rows
        return self.read_tables[name]

    @property
    def last_run(self) -> int:
        return int(self.runs["run_id"].max()) if len(self.runs) else 0

    @classmethod
    def read(cls, target: MirrorTarget) -> MirrorState | None:
        """The state of a mirror target; None for a target holding no table at all;
        TargetMismatch for one holding tables that are not a mirror."""
        tables = target.tables()
        if not tables:
            return None
        missing = [t for t in META_TABLES if t not in tables]
        if missing:
            raise TargetMismatch(f"{target.name} holds tables but is not a mirror (no "
                                 f"{', '.join(missing)}): mirror to an empty target")
        meta = dict(zip(*target.read("svc_mirror").to_pydict().values(), strict=True))
        if meta.get("format") != FORMAT:
            raise TargetMismatch(f"{target.name} is a mirror of format {meta.get('format')}"
                                 f", this version writes format {FORMAT}")
        objects = {}
        for row in target.read("svc_mirror_objects").to_pylist():
            objects[row["object_key"]] = ObjectState(
                row["object_key"], row["name"], row["table_name"], bool(row["present"]),
                json.loads(row["source"]), json.loads(row["layout"]), int(row["rows"]),
                int(row["schema_version"]))
        return cls(app_id=str(meta.get("app_id")),
                   runs=target.read("svc_mirror_runs").to_pandas(), objects=objects,
                   schema=target.read("svc_mirror_schema").to_pandas(), target=target)

    def check_tables(self, keys: list[str]) -> None:
        """TargetMismatch naming a current table of these objects that was dropped, or
        whose rows or columns are not what the last run wrote (edited by hand)."""
        assert self.target is not None
        have = self.target.tables()
        for key in keys:
            obj = self.objects.get(key)
            if obj is None or not obj.present:
                continue
            for name, dtypes in self.tables_of(obj):
                if name not in have:
                    raise TargetMismatch(f"{self.target.name}: the table {name} of {key} "
                                         "is missing (dropped by hand?); pass repair=True "
                                         "to write it again from the service")
                cols = self.target.schema(name).names
                if sorted(cols) != sorted(dtypes):
                    raise TargetMismatch(f"{self.target.name}: the columns of {name} are not "
                                         "those the last run wrote (edited by hand?); pass "
                                         "repair=True to write it again from the service")
            rows = self.target.count(obj.table_name)
            if rows != obj.rows:
                raise TargetMismatch(f"{self.target.name}: {obj.table_name} holds {rows} rows,"
                                     f" the last run wrote {obj.rows} (edited by hand?); pass "
                                     "repair=True to write it again from the service")

    @staticmethod
    def tables_of(obj: ObjectState) -> list[tuple[str, dict[str, str]]]:
        """(table, column dtypes) of the object's current tables, main first."""
        out = [(obj.table_name, obj.layout["main"]["dtypes"])]
        out += [(t["table"], t["dtypes"]) for t in obj.layout.get("tables", {}).values()]
        return out

    def frames(self, key: str) -> Frames:
        """The object's current tables as Frames (with the as-loaded copy refresh needs)."""
        assert self.target is not None
        obj = self.objects[key]
        main = typed(self.table(obj.table_name), obj.layout["main"]["dtypes"], "id")
        tables = {fkey: typed(self.table(t["table"]), t["dtypes"], None)
                  for fkey, t in obj.layout.get("tables", {}).items()}
        frames = Frames(main, tables, Source.from_dict(dict(obj.source)))
        frames.original = frames.snapshot()
        return frames

    def rows_of(self, key: str, ids: list[str]) -> Frames:
        """The current rows of these records only (main and exploded tables), as Frames
        typed as :meth:`frames` types them: what an incremental run compares with."""
        obj = self.objects[key]
        main = typed(self.main_rows(key, ids), obj.layout["main"]["dtypes"], "id")
        return Frames(main, self.exploded_rows(key, ids), Source.from_dict(dict(obj.source)))

    def main_rows(self, key: str, ids: list[str]) -> pa.Table:
        """The main table's rows of these records, as the target holds them (untyped)."""
        assert self.target is not None
        got = self.target.read_rows(self.objects[key].table_name, "id", ids)
        self.rows_read += got.num_rows
        return got

    def exploded_rows(self, key: str, ids: list[str]) -> dict[str, pd.DataFrame]:
        """The exploded tables' rows of these records, typed (by field key)."""
        assert self.target is not None
        tables = {}
        for fkey, t in self.objects[key].layout.get("tables", {}).items():
            part = self.target.read_rows(t["table"], "record_id", ids)
            self.rows_read += part.num_rows
            tables[fkey] = typed(part, t["dtypes"], None)
        return tables

    def columns_of(self, key: str, columns: list[str]) -> pd.DataFrame:
        """Every record's values of a few main columns (``id`` the index), typed: what
        the deletion search or the stamp cutoff need of the records held."""
        assert self.target is not None
        obj = self.objects[key]
        dtypes = obj.layout["main"]["dtypes"]
        wanted = ["id"] + [c for c in columns if c != "id"]
        got = self.target.read_columns(obj.table_name, wanted)
        return typed(got, {c: dtypes[c] for c in wanted if c in dtypes}, "id")


def durations(table: pa.Table) -> pa.Table:
    """SQL intervals (how a database keeps the frames' timedeltas) back as durations."""
    for i, f in enumerate(table.schema):
        if pa.types.is_interval(f.type):
            ns = [None if v is None else (v.months * 30 + v.days) * 86_400_000_000_000
                  + v.nanoseconds for v in table.column(i).to_pylist()]
            table = table.set_column(i, f.name, pa.array(ns, pa.duration("ns")))
    return table


def typed(table: pa.Table, dtypes: dict[str, str], index: str | None) -> pd.DataFrame:
    """A table read back with the frames' dtypes, in record order (by id: ids begin with
    their creation time)."""
    df = arrow_to_frame(durations(table), dtypes, index)
    if index is not None:
        df = df.sort_index(kind="stable")
    elif "record_id" in df.columns:
        df = df.sort_values("record_id", kind="stable").reset_index(drop=True)
    return df
