"""Joins along connections: an object's frames with the records its connection field links.

A connection field has no column in the main frame; its exploded table
(``frames.tables["field_N"]``: ``record_id``, ``connected_id``, ``identifier``) is the
truth. A join walks it: one row per connected pair for a ``many`` connection, one row per
record for a ``one`` connection, the connected object's columns prefixed by the
connection's label (``"Parts.Unit Price"``) or key (``"field_41.field_9"``). Without the
connected object's frames (a view, or an object not loaded), the join shows what the
exploded table holds: the connected id and identifier.

A join result is a new table, not a place to edit: it is marked (``df.attrs``) and
``diff``/``write_back`` refuse it, naming the object frame to edit instead.

Usage::

    df = join(orders, "field_41", parts)                     # or orders.join(...)
    df = join(orders, "Assignee", people, columns=["Name.first", "Phone"])
    df = join(view_frames, "field_42")                       # connected id + identifier
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from .errors import UsageError
from .kinds.base import FieldSpec

How = Literal["left", "inner"]


class FramesLike(Protocol):
    """What a join reads of ``frames.Frames`` (this module sits below frames.py, whose
    ``Frames.join`` delegates here, so it names the shape rather than the class)."""

    main: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    source: Any


def is_frames(obj: Any) -> bool:
    """Frames with a source, as the loaders return them."""
    return (isinstance(getattr(obj, "main", None), pd.DataFrame)
            and isinstance(getattr(obj, "tables", None), dict)
            and getattr(obj, "source", None) is not None)


def field_names(spec: FieldSpec) -> tuple[str, str, str]:
    """The names a field's columns and tables may carry: its key, its label, and its label
    with the key (``frames.label_map``'s name when two fields share a label)."""
    return spec.key, spec.label, f"{spec.label} ({spec.key})"
JOIN_ATTR = "svc_frames_join"
"""The ``DataFrame.attrs`` key that marks a join result (what it joined)."""


def join(left: FramesLike, field: str, right: FramesLike | None = None, *,
         columns: Sequence[str] | Literal["keys", "labels"] | None = None,
         how: How = "left", prefix: str | None = None) -> pd.DataFrame:
    """``left``'s records with the records its connection ``field`` (key or label) links.

    * ``right``: frames of the connected object (an object load, or a view of it); without
      them the connected side is the exploded table's id and identifier;
    * ``columns``: the right-hand columns to bring (names as in ``right``), or ``"keys"`` /
      ``"labels"`` (default) for how the brought columns are prefixed: by the
      connection's key or its label; ``prefix`` sets it outright;
    * ``how``: ``"left"`` keeps records without a connection (empty right columns),
      ``"inner"`` drops them.

    One row per connected pair for a ``many`` connection, one per record for a ``one``
    connection; the left columns come first, ``id`` among them.

    Usage: ``join(orders, "field_41", parts, columns=["field_8", "field_9"])``"""
    if how not in ("left", "inner"):
        raise UsageError(f"how must be 'left' or 'inner', got {how!r}")
    if not is_frames(left):
        raise UsageError("join needs Frames as read_object/read_view return (with a source)")
    spec = connection_spec(left, field)
    table = connection_table(left, spec)
    wanted: list[str] | None = None
    naming = "labels"
    if isinstance(columns, str):
        if columns not in ("keys", "labels"):
            raise UsageError(f"columns must be a list of column names, 'keys' or 'labels', "
                             f"got {columns!r}")
        naming = columns
    elif columns is not None:
        wanted = [str(c) for c in columns]
    rel = spec.relationship or {}
    target = str(rel.get("object") or "")
    if right is not None:
        check_right(right, spec, target)
    if prefix is None:
        prefix = spec.key if naming == "keys" else spec.label
    many = str(rel.get("has") or "one") == "many"
    pairs = table[["record_id", "connected_id", "identifier"]]
    if not many:
        # one record at most per record; a stray second link would multiply rows
        pairs = pairs.drop_duplicates("record_id")
    return join_pairs(left, pairs, right, prefix=prefix, wanted=wanted, how=how,
                      what={"object": left.source.object_key, "name": left.source.name,
                            "kind": left.source.kind, "field": spec.key,
                            "to": target})


def join_pairs(left: FramesLike, pairs: pd.DataFrame, right: FramesLike | None, *,
               prefix: str, wanted: list[str] | None, how: How, what: dict[str, Any]) -> pd.DataFrame:
    """left.main (``id`` as a column) x ``pairs`` (``record_id``, ``connected_id``,
    ``identifier``) x right.main, prefixed; the result marked as a join (``JOIN_ATTR``).

    Usage: ``join_pairs(parts, reversed_pairs, orders, prefix="Work Orders", ...)``"""
    main = left.main
    link = pairs.rename(columns={"connected_id": f"{prefix}.id",
                                 "identifier": f"{prefix}.identifier"})
    # each link's row in the left frame (a link whose record the frame does not hold,
    # e.g. a filtered load, joins nothing)
    lpos = main.index.get_indexer(pd.Index(link["record_id"]))
    link = link.drop(columns=["record_id"])
    keep = lpos >= 0
    if not keep.all():
        link, lpos = link[keep], lpos[keep]
    link = link.reset_index(drop=True)
    if right is not None:
        link = link.drop(columns=[f"{prefix}.identifier"])
        rcols = right_columns(right, wanted)
        rhs = right.main[rcols]
        rhs = rhs.set_axis([f"{prefix}.{c}" for c in rcols], axis=1)
        # rows of the right frame by each link's connected id (a link to a record the
        # right frame does not hold gets empty columns)
        brought = rhs.reindex(pd.Index(link[f"{prefix}.id"])).reset_index(drop=True)
        link = pd.concat([link, brought], axis=1)
    clash = [c for c in link.columns if c == "id" or c in main.columns]
    if clash:
        raise UsageError(f"the joined columns {clash} already exist in the left frame: "
                         "pass prefix= to name them")
    # the rows of the result, as merge(how=...) orders them: left order, a record's links
    # in table order, a record without links once (left join) with empty link columns.
    # One take of the wide left frame instead of a hash join and its reindexing.
    n = len(link)
    rows, which = lpos, np.arange(n)
    if how == "left":
        linked = np.zeros(len(main), dtype=bool)
        linked[lpos] = True
        alone = np.flatnonzero(~linked)
        rows = np.concatenate([lpos, alone])
        which = np.concatenate([which, np.full(len(alone), n)])  # n: the empty link row
    order = np.argsort(rows, kind="stable")
    rows, which = rows[order], which[order]
    lhs = main.iloc[rows]
    lhs = lhs.reset_index(names="id") if main.index.name in (None, "id") else \
        lhs.reset_index().rename(columns={main.index.name: "id"})
    if how == "left" and len(which) and which.max() == n:
        link = link.reindex(pd.RangeIndex(n + 1))  # one empty row, typed like the rest
    out = pd.concat([lhs, link.iloc[which].reset_index(drop=True)], axis=1)
    out.attrs = {JOIN_ATTR: dict(what)}
    return out


def connection_spec(frames: FramesLike, field: str) -> FieldSpec:
    """The connection field of ``frames`` named by key or label; UsageError listing the
    connections the frames have otherwise."""
    assert frames.source is not None
    conns: list[FieldSpec] = [f for f in frames.source.fields if f.kind == "connection"]
    for f in conns:
        if field in (f.key, f.label):
            return f
    what = frames.source.name or frames.source.object_key or "these frames"
    have = ", ".join(f"{f.key} ({f.label})" for f in conns) or "none"
    raise UsageError(f"{field!r} is not a connection field of {what}; its connections: "
                     f"{have}")


def connection_table(frames: FramesLike, spec: FieldSpec) -> pd.DataFrame:
    """The exploded table of a connection field (named by key, or by label in frames
    loaded with ``columns="labels"``)."""
    table = next((frames.tables[n] for n in field_names(spec) if n in frames.tables), None)
    if table is None:
        raise UsageError(f"these frames have no table for the connection {spec.key} "
                         f"({spec.label}): was it loaded?")
    return table


def check_right(right: FramesLike, spec: FieldSpec, target: str) -> None:
    if not is_frames(right):
        raise UsageError("the connected side of a join must be Frames as read_object returns")
    if target and right.source.object_key and right.source.object_key != target:
        raise UsageError(f"{spec.key} ({spec.label}) links records of {target}, not of "
                         f"{right.source.name or right.source.object_key} "
                         f"({right.source.object_key})")


def right_columns(right: FramesLike, wanted: list[str] | None) -> list[str]:
    """The right frame's columns to bring: all, or those named (a field by key or label:
    every column of that field; or one column by its name)."""
    cols = [str(c) for c in right.main.columns]
    if wanted is None:
        return cols
    fields = list(right.source.fields) if right.source is not None else []
    out: list[str] = []
    for w in wanted:
        # a field named by key or label: all its columns (``field_1`` -> field_1.first ...,
        # ``field_2`` -> field_2, field_2.label); else one column by its name
        prefixes = {n for f in fields if w in field_names(f) for n in field_names(f)}
        found = [c for c in cols if c.partition(".")[0] in prefixes]
        if not found and w in cols:
            found = [w]
        if not found:
            raise UsageError(f"{w!r} is not a column of the connected frame; its columns: "
                             f"{', '.join(cols[:12])}{' ...' if len(cols) > 12 else ''}")
        out.extend(c for c in found if c not in out)
    return out


def refuse_join_result(obj: Any, what: str = "diff") -> None:
    """UsageError when ``obj`` (a DataFrame, or Frames around one) is a join result:
    edits go to the object frame they came from. Usage: ``refuse_join_result(df)``"""
    frame = obj.main if isinstance(getattr(obj, "main", None), pd.DataFrame) else obj
    info = getattr(frame, "attrs", {}).get(JOIN_ATTR) if isinstance(frame, pd.DataFrame) \
        else None
    if not info:
        return
    name = info.get("name") or info.get("object") or "the object"
    raise UsageError(
        f"{what}: this is the result of a join ({info.get('object')} along "
        f"{info.get('field')}), not an object frame; edit the frames of {name} "
        f"({info.get('object')}, e.g. app[{name!r}].main and its tables[{info.get('field')!r}]"
        ") and pass those")
