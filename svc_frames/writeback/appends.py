"""New rows, the pandas ways: which rows of an edited frame are to be created, and
``add_rows``.

A frame's index holds the loaded record ids. A row is new, to be created, when its label
is empty (NA, ""), a temporary id (``new:N``, which ``add_rows`` gives), or any label that
is no record id: an integer from ``pd.concat([frames.main, new])`` (the new frame's
RangeIndex; the concat also drops the index's name, which is then taken as the record
id index when it still holds loaded ids), or a name given by ``.loc["new1", col] = ...``.
A label shaped like a record id (24 hex digits) that was not loaded is refused: a
record of another load or another object, not a new one.

Usage::

    new, ids = record_index(edited.main, base.main)   # diff's first check
    add_rows(frames, pd.DataFrame({"field_2": ["New order"]}))
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..arrowcols import member
from ..errors import InvalidValue, UsageError
from ..frames import Frames
from ..kinds import unencodable_text
from .plan import NEW_ID_PREFIX

__all__ = ["record_index", "add_rows", "RECORD_ID", "APPEND_FORMS"]

#: The shape of a record id (the hosted service's and the local service's).
RECORD_ID = re.compile(r"[0-9a-f]{24}\Z")
#: The ways to append rows, named by every refusal of one.
APPEND_FORMS = ("append rows with frames.main = pd.concat([frames.main, new_rows]), "
                "frames.main.loc['new1', column] = value, or add_rows(frames, new_rows)")


def _is_new_label(label: Any, known: set[Any]) -> bool:
    """An appended row's label (see the module docstring)."""
    if label is None or (not isinstance(label, str) and pd.isna(label)):
        return True
    if not isinstance(label, str):
        return True
    if label == "" or label.startswith(NEW_ID_PREFIX):
        return True
    return label not in known and not RECORD_ID.match(label)


def _temp_id(label: Any, pos: int) -> str:
    """A new row's id in the plan: its own label when it is text (``new:`` added), else
    ``new:<position>``."""
    if isinstance(label, str) and label:
        return label if label.startswith(NEW_ID_PREFIX) else f"{NEW_ID_PREFIX}{label}"
    return f"{NEW_ID_PREFIX}{pos}"


def _check_name(idx: pd.Index, base: pd.DataFrame, main: pd.DataFrame) -> None:
    """The index must be the record id index: by name, or unnamed (``pd.concat`` and
    ``.loc`` enlargement with an unnamed frame drop the name) when it holds loaded ids."""
    if idx.name == base.index.name:
        return
    if idx.name is None and len(base) and member(
            pd.Index(idx.astype(object)), pd.Index(base.index.astype(object))).any():
        return
    hint = (" (it looks reset: call .set_index('id'))" if "id" in main.columns else "")
    raise UsageError(f"the frame's index is {idx.name!r}, not the record id index "
                     f"{base.index.name!r}{hint}; {APPEND_FORMS}")


def record_index(main: pd.DataFrame, base: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Validate the index of an edited frame; return (is-new mask, record ids with
    temporary ids for new rows)."""
    idx = main.index
    if isinstance(idx, pd.MultiIndex):
        raise UsageError("the frame has a MultiIndex: write_back needs the record id index 'id'")
    _check_name(idx, base, main)
    if pd.api.types.is_numeric_dtype(idx.dtype) or pd.api.types.is_bool_dtype(idx.dtype):
        raise UsageError(f"the record id index was re-typed to {idx.dtype}: ids are strings; "
                         f"{APPEND_FORMS}")
    labels = idx.to_list()
    if pd.api.types.is_string_dtype(idx.dtype) and idx.dtype != object:
        # vectorized: text ids, the loaded ones found in Arrow
        svals = pd.Series(idx, dtype=idx.dtype)
        loaded = member(svals, pd.Index(base.index.astype(object)))
        if loaded.all():
            return np.zeros(len(labels), dtype=bool), labels
    known = set(base.index.astype(object))
    new = np.fromiter((_is_new_label(x, known) for x in labels), dtype=bool, count=len(labels))
    if not new.any():
        return new, labels
    ids = [x if not n else _temp_id(x, pos)
           for pos, (x, n) in enumerate(zip(labels, new, strict=True))]
    return new, ids


def _as_records(rows: Any) -> list[Mapping[str, Any]]:
    """``rows`` as a list of dicts: a DataFrame (its index is ignored), a Series (one
    row), or a list of dicts; anything else refused naming the forms that work."""
    if isinstance(rows, pd.DataFrame):
        if rows.columns.has_duplicates:
            raise UsageError("the new rows' DataFrame has duplicate columns: "
                             f"{rows.columns[rows.columns.duplicated()].tolist()[:5]}")
        return [dict(zip(map(str, rows.columns), vals, strict=True))
                for vals in rows.itertuples(index=False, name=None)]
    if isinstance(rows, pd.Series):
        return [{str(k): v for k, v in rows.items()}]
    forms = ("rows must be a list of dicts (column -> value) or a DataFrame: "
             "add_rows(frames, [{column: value}]) or add_rows(frames, new_df)")
    if isinstance(rows, Mapping):
        raise UsageError(f"{forms}, got one dict (for one row: [row]; a dict of lists is "
                         "ambiguous: one row holding lists, or a row per item)")
    if not isinstance(rows, (list, tuple)):
        raise UsageError(f"{forms}, got a {type(rows).__name__}")
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise UsageError(f"{forms}: row {i} is a {type(r).__name__} ({r!r:.40})")
    return list(rows)


def add_rows(frames: Frames, rows: pd.DataFrame | pd.Series | Sequence[Mapping[str, Any]]
             ) -> list[str]:
    """Append new rows to the main frame, to be created by ``write_back``.

    Each row gets a temporary id ``new:N`` (counting on from the new rows already in the
    frame); its cells take the columns' dtypes. A connection table row may name the same
    temporary id as ``record_id`` to connect the new record. :func:`diff` checks the rows
    (required fields, values of each kind) like any edit. Rows appended the pandas ways
    are creates too (``pd.concat([frames.main, new])``, ``frames.main.loc["new1", col] =
    value``: see docs/bulk-editing.md).

    Parameters
    ----------
    frames : Frames
        Loaded frames; ``frames.main`` is replaced by the frame with the rows appended.
    rows : DataFrame, Series or list of dict
        The new records: a DataFrame (one row each; its index is not used), a Series
        (one row), or one dict per record; columns as the frame names them
        (docs/column-names.md); a column left out is empty.

    Returns
    -------
    list of str
        The temporary ids of the new rows, in order.

    Raises
    ------
    UsageError
        ``rows`` is none of those forms (the message names them), or names a column the
        frame does not have.
    InvalidValue
        A text that cannot be encoded as UTF-8 (a lone surrogate), naming the row and
        the column.

    Examples
    --------
    >>> parts = read_object(client, "Parts")
    >>> add_rows(parts, [{"Part Name": "Valve S-99", "Unit Price": 12.5}])
    ['new:0']
    >>> add_rows(parts, pd.DataFrame({"Part Name": ["Valve S-100"], "Unit Price": [3.0]}))
    ['new:1']
    >>> diff(parts).counts
    {'update': 0, 'create': 2, 'delete': 0}
    >>> write_back(client, parts).counts
    {'applied': 2}
    >>> parts.main.loc[parts.main["Part Name"] == "Valve S-99", "Part No"].tolist()  # given by the service
    [41]
    """
    records = _as_records(rows)
    main = frames.main
    taken = {x for x in main.index if isinstance(x, str) and x.startswith(NEW_ID_PREFIX)}
    # count on from the pending new rows, skipping ids still in the frame (a new row may
    # have been dropped, or created while another one failed and kept its id)
    tmp: list[str] = []
    n = len(taken)
    while len(tmp) < len(records):
        if f"{NEW_ID_PREFIX}{n}" not in taken:
            tmp.append(f"{NEW_ID_PREFIX}{n}")
        n += 1
    unknown = {k for r in records for k in r} - set(main.columns)
    if unknown:
        raise UsageError(f"unknown columns in new rows: {sorted(map(str, unknown))}: name "
                         "the frame's columns (docs/column-names.md)")
    for i, r in enumerate(records):
        for col, v in r.items():
            bad = unencodable_text(v)
            if bad is not None:   # the frame (Arrow text) could not even hold it
                raise InvalidValue(f"new row {i}: column {col!r} holds text that cannot be "
                                   f"encoded as UTF-8 ({bad!r:.60}: a lone surrogate, e.g. "
                                   "from a badly decoded file); fix the text",
                                   field=None, column=str(col))
    add = pd.DataFrame(records, index=pd.Index(tmp, name=main.index.name),
                       columns=main.columns)
    for col in main.columns:
        try:
            add[col] = add[col].astype(main[col].dtype)
        except (TypeError, ValueError):
            pass
    frames.main = pd.concat([main, add]) if len(main) else add
    return tmp
