"""The Plan of a write-back, the statuses a write can end in, and a source's column layout.

Usage::

    plan = diff(frames)            # writeback.diff builds it
    plan.changes                   # record_id, action, field, column, old, new
    Layout.of(plan.source).field_cols["field_21"]   # the frame columns of a field
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, Literal
from zoneinfo import ZoneInfo

import pandas as pd

from ..frames import Frames, Source, label_map, relabel
from ..kinds import codec_for
from ..kinds.assets import is_url_source
from ..kinds.base import Codec, FieldSpec, ReadContext

__all__ = ["Plan", "Layout", "Action", "Status", "NEW_ID_PREFIX", "CHANGE_COLUMNS"]

#: Index labels starting with this prefix (or NA) mark rows to create; connection-table
#: rows may use the same temporary id to connect a new record.
NEW_ID_PREFIX = "new:"

Action = Literal["update", "create", "delete"]
Status = Literal["applied", "conflict", "failed", "skipped", "unknown", "not_applied",
                 "planned"]

# Kinds whose uploaded asset is placed by id; an image whose source is a URL is plain text.
ASSET_KINDS = ("file", "image")
CHANGE_COLUMNS = ["record_id", "action", "field", "column", "old", "new"]


@dataclass
class Layout:
    """Which frame column belongs to which field, for one source.

    Usage: ``Layout.of(source).col_field["field_21.latitude"]  # -> "field_21"``"""

    fields: dict[str, FieldSpec]
    codecs: dict[str, Codec]
    field_cols: dict[str, list[str]]        # field key -> frame column names
    col_field: dict[str, str]               # frame column name -> field key
    col_key: dict[str, str]                 # frame column name -> keys-mode column name
    tables: dict[str, str]                  # table name -> connection field key
    ctx: ReadContext

    @classmethod
    def of(cls, source: Source) -> Layout:
        fields: dict[str, FieldSpec] = {}
        codecs: dict[str, Codec] = {}
        field_cols: dict[str, list[str]] = {}
        col_field: dict[str, str] = {}
        col_key: dict[str, str] = {}
        tables: dict[str, str] = {}
        labels = source.columns == "labels"
        names = label_map(source.fields)
        for f in source.fields:
            codec = codec_for(f)
            fields[f.key] = f
            codecs[f.key] = codec
            cols: list[str] = []
            for key_col in codec.columns(f):
                col = relabel(key_col, names) if labels else key_col
                cols.append(col)
                col_field[col] = f.key
                col_key[col] = key_col
            field_cols[f.key] = cols
            if f.kind == "connection":
                tables[f.key] = f.key
                if labels:
                    tables[relabel(f.key, names)] = f.key
        tz = ZoneInfo(source.timezone) if source.timezone else None
        return cls(fields, codecs, field_cols, col_field, col_key, tables, ReadContext(tz))

    def is_upload(self, key: str) -> bool:
        f = self.fields[key]
        return f.kind in ASSET_KINDS and not is_url_source(f)  # the codec's rule


@dataclass
class Plan:
    """What ``write_back`` would send: one entry per record, shown as ``changes``.

    Usage::

        plan = diff(frames)
        plan.changes            # record_id, action, field, column, old, new
        plan.counts             # {"update": 12, "create": 1, "delete": 0}
        write_back(client, frames, plan=plan.select(["5d79..."]))
    """

    changes: pd.DataFrame
    payloads: dict[str, dict[str, Any]]
    actions: dict[str, Action]
    source: Source
    edited: Frames | None = dc_field(default=None, repr=False)
    base: Frames | None = dc_field(default=None, repr=False)
    # record id -> field key -> the field's base column values {keys-mode column: value}
    loaded: dict[str, dict[str, dict[str, Any]]] = dc_field(default_factory=dict, repr=False)
    # record id -> field key -> edited column values (for conflict / "already applied")
    wanted: dict[str, dict[str, dict[str, Any]]] = dc_field(default_factory=dict, repr=False)
    # temporary id of a create -> position of its row in ``edited.main``
    create_rows: dict[str, int] = dc_field(default_factory=dict, repr=False)

    @property
    def counts(self) -> dict[str, int]:
        out = {"update": 0, "create": 0, "delete": 0}
        for a in self.actions.values():
            out[a] += 1
        return out

    @property
    def empty(self) -> bool:
        return not self.actions

    @property
    def record_ids(self) -> list[str]:
        return list(self.actions)

    def select(self, ids: Iterable[str]) -> Plan:
        """The same plan restricted to ``ids`` (for a review widget's selection)."""
        keep = [i for i in ids if i in self.actions]
        wanted = set(keep)
        ch = self.changes[self.changes["record_id"].isin(wanted)].reset_index(drop=True)
        return Plan(ch, {i: self.payloads[i] for i in keep if i in self.payloads},
                    {i: self.actions[i] for i in keep}, self.source, self.edited, self.base,
                    {i: self.loaded[i] for i in keep if i in self.loaded},
                    {i: self.wanted[i] for i in keep if i in self.wanted},
                    {i: p for i, p in self.create_rows.items() if i in wanted})

    def summary(self) -> pd.DataFrame:
        """One row per record: record_id, action, fields (comma separated)."""
        rows = [(rid, act, ", ".join(self.payloads.get(rid, {})))
                for rid, act in self.actions.items()]
        return pd.DataFrame(rows, columns=["record_id", "action", "fields"]).astype("string")

    def __repr__(self) -> str:
        c = self.counts
        return (f"Plan({c['update']} update, {c['create']} create, {c['delete']} delete; "
                f"{len(self.changes)} changed cells)")

    def _repr_html_(self) -> str:
        return f"<p>{self!r}</p>" + self.changes.head(50).to_html()
