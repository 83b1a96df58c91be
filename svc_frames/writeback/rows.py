"""rows: the row and index checks of a diff, before any other work: which edited rows
are new and which were loaded, no duplicate or unknown ids, and a row whose id was
cleared told from a new one (which rows are creates: appends.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..frames import Frames, Source
from ..joins import refuse_join_result
from ..kinds import is_empty_cell, values_equal
from .appends import APPEND_FORMS, record_index
from .plan import ColumnMap

# Removed records a row without an id is compared with (a cleared id), at most.
CLEARED_SCAN = 2000


def source_and_base(edited: Frames, base: Frames | None) -> tuple[Source, Frames]:
    """The frames' metadata and the values to diff against (``edited.original``)."""
    refuse_join_result(edited)  # a join result: edit the object frame it came from
    if not isinstance(edited, Frames):
        raise UsageError(f"diff needs Frames (as read_object returns), not {type(edited).__name__}")
    source = edited.source or (base.source if base is not None else None)
    if source is None:
        raise UsageError("the frames carry no metadata (source): load them with read_object/"
                         "read_view or read_parquet, or pass base=")
    if base is None:
        base = edited.original
    if base is None:
        raise UsageError("the frames carry no original values to diff against: pass base=")
    return source, base



@dataclass
class Rows:
    """Which edited rows are new, which existed, and where they were in the base frame."""

    ids: list[str]            # record id (or temporary id) of each edited row
    new_mask: np.ndarray      # edited row is to be created
    existing: pd.Index        # ids of the edited rows that existed, in edited order
    base_ids: pd.Index        # ids of the base frame (object dtype)

    @classmethod
    def of(cls, main: pd.DataFrame, bmain: pd.DataFrame, layout: ColumnMap,
           source: Source) -> Rows:
        """Validate the index (before any work): no unknown or duplicate ids."""
        new_mask, ids = record_index(main, bmain)
        existing = pd.Index([i for i, n in zip(ids, new_mask, strict=False) if not n],
                            dtype=object)
        if existing.has_duplicates:
            dups = existing[existing.duplicated()].unique().tolist()
            raise UsageError(f"duplicate record ids in the frame: {dups[:5]}")
        temp = [i for i, n in zip(ids, new_mask, strict=False) if n]
        if len(set(temp)) != len(temp):
            raise UsageError("duplicate temporary ids for new rows: "
                             f"{pd.Index(temp)[pd.Index(temp).duplicated()].tolist()[:5]}")
        base_ids = pd.Index(bmain.index.astype(object))
        unknown = existing.difference(base_ids)
        if len(unknown):
            raise UsageError(f"unknown record ids (not in the loaded frame): "
                             f"{unknown.tolist()[:5]}: records of another load? To create "
                             f"records instead, {APPEND_FORMS}")
        return cls(ids, new_mask, existing, base_ids)

    @property
    def removed(self) -> list[str]:
        """Loaded records no longer in the edited frame (deletes)."""
        return self.base_ids.difference(self.existing).tolist()


def refuse_cleared_id(layout: ColumnMap, rows: Rows, base: pd.DataFrame | None, pos: int,
                      row: Mapping[str, Any]) -> None:
    """A row without an id that holds values only the service computes, or exactly
    the values of a loaded record missing from the frame, is a loaded record whose id
    was cleared (e.g. set to NaN), not a new row: refuse it rather than create a
    copy (and delete the original)."""
    computed = [c for c, v in row.items() if layout.codecs[layout.col_field[c]].read_only
                and not is_empty_cell(v)]
    removed = rows.removed
    same_as = None
    if not computed and base is not None and 0 < len(removed) <= CLEARED_SCAN:
        same_as = next((r for r in removed if r in base.index and all(
            values_equal(base.at[r, c], v) for c, v in row.items()
            if c in base.columns)), None)
    if not computed and same_as is None:
        return
    why = (f"its values are those of record {same_as}, missing from the frame"
           if same_as is not None else
           f"its column {computed[0]!r} "
           f"({layout.fields[layout.col_field[computed[0]]].kind}) holds a value only "
           "the service computes")
    raise UsageError(f"the id of row {pos} was cleared: {why}; restore its id (to "
                     f"create records, {APPEND_FORMS})")
