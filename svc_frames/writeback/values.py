"""Records as values: server records decoded like the loaded frames, one field of one
record compared the way ``diff`` compares (the guard, the create lookup and the refresh
read records this way).

Usage::

    srv = Values(decode_records(records, plan.source), layout)
    same(srv(rid, "field_12"), plan.loaded[rid]["field_12"])
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from ..errors import SvcError
from ..frames import Frames, Source, build_frames
from ..kinds import is_empty_cell, values_equal
from ..kinds.base import FieldSpec
from .plan import ColumnMap

__all__ = ["Values", "decode_records", "same", "holds", "short", "response_record",
           "interval_lists", "intervals_key", "same_intervals"]

# Kinds whose stored value needs the service to normalize (connected ids, assets).
_SERVICE_NORMALIZED = ("connection", "file", "image")


def decode_records(records: Sequence[Mapping[str, Any]], source: Source,
                   keys: Collection[str] | None = None) -> Frames:
    """Server records as frames of ``source`` (no original kept); ``keys``: those fields
    alone (what a comparison reads: the guard's re-read of a few fields of a wide object
    decodes a fraction of it)."""
    tz = ZoneInfo(source.timezone) if source.timezone else None
    fields = source.fields if keys is None else [f for f in source.fields if f.key in keys]
    return build_frames(list(records), fields, source, tz=tz, keep_original=False)


def intervals_key(key: str) -> str:
    """The entry of a timer's intervals among its values (beside its summary columns)."""
    return f"{key}.intervals"


def interval_lists(table: pd.DataFrame | None) -> dict[Any, list[tuple[Any, Any]]]:
    """record id -> its timer intervals [(from, to), ...] in table order."""
    out: dict[Any, list[tuple[Any, Any]]] = {}
    if table is None or not {"record_id", "from", "to"} <= set(table.columns):
        return out
    for r, a, b in zip(table["record_id"].astype(object).tolist(), table["from"].tolist(),
                       table["to"].tolist(), strict=True):
        if not is_empty_cell(r):
            out.setdefault(r, []).append((a, b))
    return out


def same_intervals(a: Sequence[tuple[Any, Any]], b: Sequence[tuple[Any, Any]]) -> bool:
    """Equal interval lists (same order) by the kinds' rule."""
    return len(a) == len(b) and all(values_equal(x[0], y[0]) and values_equal(x[1], y[1])
                                    for x, y in zip(a, b, strict=True))


class Values:
    """One record's values of one field in decoded frames: ``values(rid, key)``, keyed by
    keys-mode column (a connection: field key -> sorted id list).

    Connection tables are grouped by record once per frames, not filtered per record:
    the guard and the create lookup ask for many records, which was quadratic."""

    def __init__(self, frames: Frames, layout: ColumnMap) -> None:
        self.frames, self.layout = frames, layout
        self._links: dict[str, dict[Any, list[Any]]] = {}   # field -> record -> connected
        self._spans: dict[str, dict[Any, list[tuple[Any, Any]]]] = {}  # timer intervals
        self._row_id: str | None = None
        self._pos: Any = None
        # column -> its values, taken once: a row lookup (``main.loc[rid]``) built a
        # Series of every column per record, most of the guard's own CPU between writes
        self._arrays: dict[str, Any] = {}

    def __call__(self, rid: str, key: str) -> dict[str, Any]:
        layout = self.layout
        if layout.fields[key].kind == "connection":
            links = self._links.get(key)
            if links is None:
                links = self._links[key] = self._group(key)
            return {key: sorted(str(x) for x in links.get(rid, ()))}
        out = self._cells(rid, key)
        if layout.fields[key].kind == "timer":
            spans = self._spans.get(key)
            if spans is None:
                spans = self._spans[key] = interval_lists(layout.table_of(key, self.frames))
            out[intervals_key(key)] = spans.get(rid, [])
        return out

    def _cells(self, rid: str, key: str) -> dict[str, Any]:
        layout = self.layout
        main = self.frames.main
        if self._pos is None or self._row_id != rid:   # a record's fields come in a row
            pos = main.index.get_loc(rid)
            if not isinstance(pos, int):
                raise KeyError(f"record {rid} is not once in the frames")
            self._pos, self._row_id = pos, rid
        out: dict[str, Any] = {}
        for c in layout.field_cols[key]:
            arr = self._arrays.get(c)
            if arr is None:
                if c not in main.columns:
                    continue
                arr = self._arrays[c] = main[c].array
            out[layout.col_key[c]] = _py(arr[self._pos])
        return out

    def _group(self, key: str) -> dict[Any, list[Any]]:
        for name, k in self.layout.tables.items():
            if k == key and name in self.frames.tables:
                t = self.frames.tables[name]
                out: dict[Any, list[Any]] = {}
                for r, c in zip(t["record_id"].tolist(), t["connected_id"].tolist(),
                                strict=True):
                    if not is_empty_cell(r):
                        out.setdefault(r, []).append(c)
                return out
        return {}


def _py(v: Any) -> Any:
    """numpy scalars (np.bool_ from a row of mixed dtypes) as Python values."""
    return v.item() if isinstance(v, (np.bool_, np.integer, np.floating)) else v


def same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal field values by the kinds' rule (NA vs "", 1 vs 1.0 are the same)."""
    return all(values_equal(a.get(k, pd.NA), b.get(k, pd.NA)) for k in set(a) | set(b))


def holds(now: Mapping[str, Any], want: Mapping[str, Any], sent: Any, field: FieldSpec,
          layout: ColumnMap) -> bool:
    """Whether a field's server values ``now`` are what a write of ``sent`` (encoded from
    the frame values ``want``) stores: equal by the kinds' rule, or, where the service
    normalizes (seconds dropped, cents, phone format), equal once both are normalized
    by the kind's own rule. Usage: ``holds(srv(rid, k), plan.wanted[rid][k], body[k], f, layout)``"""
    if field.kind == "timer":
        # the total is the service's own sum of the intervals, by its wall clock (a
        # daylight-saving gap makes it differ from the instants'): not what was sent
        now = {k: v for k, v in now.items() if not k.endswith(".total")}
        want = {k: v for k, v in want.items() if not k.endswith(".total")}
    if want and same(now, want):
        return True
    if field.kind in _SERVICE_NORMALIZED:
        return False
    codec = layout.codecs[field.key]
    try:
        return bool(codec.normalize(codec.encode(now, field, layout.ctx), field, None)
                    == codec.normalize(sent, field, None))
    except (SvcError, NotImplementedError, TypeError, ValueError, KeyError):
        return False


def short(v: Mapping[str, Any]) -> Any:
    """A field's values for the conflicts table: the one value, or the non-empty ones."""
    vals = list(v.values())
    return vals[0] if len(vals) == 1 else {k: x for k, x in v.items() if not is_empty_cell(x)}


def response_record(resp: Any) -> dict[str, Any] | None:
    """The record in a write's answer (a view answers ``{"record", "submit_key"}``)."""
    if isinstance(resp, Mapping):
        rec = resp.get("record") if "record" in resp and isinstance(resp.get("record"),
                                                                   Mapping) else resp
        return dict(rec) if isinstance(rec, Mapping) and rec.get("id") else None
    return None
