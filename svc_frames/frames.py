"""Records -> DataFrames, and the container that remembers where its frames came from.

Usage::

    frames = read_object(client, "object_1")
    frames.main            # one row per record, index "id"
    frames.tables["field_9"]   # exploded connection: record_id, connected_id, identifier
    frames.source          # object/view, fields and kinds, timezone: what write_back needs
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from dataclasses import field as dc_field
from typing import Any, Literal

import pandas as pd

from .kinds.base import FieldSpec


@dataclass
class Source:
    """Where frames were loaded from: enough to diff and write back, and to save in parquet."""

    kind: Literal["object", "view"]
    object_key: str
    fields: list[FieldSpec]
    scene_key: str | None = None
    view_key: str | None = None
    timezone: str | None = None
    app_id: str = ""
    base_url: str = ""
    columns: Literal["keys", "labels"] = "keys"
    kinds_inferred: bool = False  # True when no schema was available

    def field(self, key: str) -> FieldSpec:
        for f in self.fields:
            if f.key == key:
                return f
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["fields"] = [f.to_schema() for f in self.fields]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Source:
        data = dict(data)
        data["fields"] = [FieldSpec.from_schema(f) for f in data.get("fields", [])]
        return cls(**data)


@dataclass
class Frames:
    """The main frame, its exploded tables, its source, and the values as loaded."""

    main: pd.DataFrame
    tables: dict[str, pd.DataFrame] = dc_field(default_factory=dict)
    source: Source | None = None
    original: Frames | None = dc_field(default=None, repr=False)

    def snapshot(self) -> Frames:
        """A deep copy of the data as it is now, kept as ``original`` for diffing."""
        return Frames(self.main.copy(deep=True),
                      {k: v.copy(deep=True) for k, v in self.tables.items()},
                      copy.deepcopy(self.source))

    def __getitem__(self, name: str) -> pd.DataFrame:
        return self.main if name == "main" else self.tables[name]

    def __len__(self) -> int:
        return len(self.main)
