"""Analysis columns: columns of an edited frame that are no field's (``o.main["my_calc"] =
o.main["Priority"] * 2``). They are never sent and never block a write; the Plan and the
Report name them (``plan.left_out``).

What is refused instead, because it is more likely a mistake than an analysis column
(nothing is sent, the message names the column and the fix):

* a name shaped like a field key (``field_99``, ``field_9.lat``) that is no column of the
  source: a typo, or a column of another object;
* a field's name in the naming the frame does not use (``field_25`` in a frame named by
  labels, ``Priority`` in one named by keys): an edit meant for that field;
* a name equal to a field column but for case, spaces, dots, dashes or underscores
  (``priority``, ``Due_Date``): a typo of that field;
* a column whose values are all in new rows (every loaded row empty): a misspelt field of
  an append, which would otherwise create records without it.

Usage::

    left_out = analysis_columns(edited.main, layout)
    refuse_new_only(edited.main, left_out, new_mask)
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..labels import label_map, relabel
from .plan import ColumnMap

__all__ = ["analysis_columns", "refuse_new_only"]

_KEY_SHAPED = re.compile(r"field_\d+(\..+)?\Z")
_FOLD = re.compile(r"[\s._\-]+")


def _fold(name: str) -> str:
    return _FOLD.sub("", name).casefold()


def analysis_columns(main: pd.DataFrame, layout: ColumnMap) -> list[str]:
    """The columns of ``main`` that are no field's, in frame order (left out of the
    write); UsageError for a column that looks like a field (see the module docstring)."""
    extra = [c for c in main.columns if c not in layout.col_field]
    if not extra:
        return []
    labels = any(col != key for col, key in layout.col_key.items())
    names = label_map(list(layout.fields.values()))
    # the other naming's columns -> the frame's own column of the same field
    other: dict[str, str] = {}
    for col, key_col in layout.col_key.items():
        other[key_col if labels else relabel(key_col, names)] = col
    folded = {_fold(c): c for c in layout.col_field if isinstance(c, str)}
    for col in extra:
        if not isinstance(col, str):
            continue   # e.g. 0 or a tuple: a name no field can have
        own = other.get(col)
        if own is not None and own != col:
            naming, turn = ("label", "with_keys") if labels else ("key", "with_labels")
            raise UsageError(
                f"column {col!r} names the field of column {own!r} the way this frame "
                f"does not (it names columns by {naming}): write to {own!r} to edit the "
                f"field, name the columns the other way first (frames.{turn}()), or give "
                "an analysis column another name (nothing was sent)")
        if _KEY_SHAPED.match(col):
            raise UsageError(
                f"column {col!r} looks like a field key, but the source has no such "
                f"column: rename it (e.g. 'calc_{col}') to keep it as an analysis column "
                "(never sent), or drop it (nothing was sent)")
        near = folded.get(_fold(col))
        if near is not None:
            raise UsageError(
                f"column {col!r} is no field's column, but it differs from the field "
                f"column {near!r} only in case, spaces or punctuation: write to {near!r} "
                "to edit the field, or give the analysis column a distinct name "
                "(nothing was sent)")
    return [str(c) if isinstance(c, str) else c for c in extra]


def refuse_new_only(main: pd.DataFrame, left_out: list[Any], new_mask: np.ndarray) -> None:
    """UsageError for a left-out column that holds values only in new rows (an append
    with a misspelt field name): left out, those values would silently not be sent."""
    if not left_out or not new_mask.any() or new_mask.all():
        return
    for col in left_out:
        filled = main[col].notna().to_numpy(dtype=bool)
        if filled[new_mask].any() and not filled[~new_mask].any():
            raise UsageError(
                f"column {col!r} is no field of the source and holds values only in new "
                "rows: they would not be sent. Name the field's column (the frame's "
                "columns name the fields), or, for an analysis column, fill it in the "
                "loaded rows too (nothing was sent)")
