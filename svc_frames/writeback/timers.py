"""timers: a timer field edited in its summary columns (start, end, total) or in its
intervals table (``record_id``, ``from``, ``to``): what each edit writes, and the edits
that cannot be applied faithfully (refused, naming the record)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..errors import InvalidValue, UsageError
from ..frames import Frames
from ..kinds import is_empty_cell, values_equal
from .cells import encode_field
from .edits import Edits
from .plan import ColumnMap
from .rows import Rows
from .uploads import UNCHANGED
from .values import interval_lists, intervals_key, same_intervals


class TimerEdits:
    """The timer phase of a diff: summary-column updates and interval tables."""

    def __init__(self, layout: ColumnMap, rows: Rows, edits: Edits, base: Frames | None,
                 base_main: pd.DataFrame | None, col_names: Mapping[str, str]) -> None:
        self.layout, self.rows, self.edits = layout, rows, edits
        self.base, self.base_main = base, base_main
        self.inv_cols = col_names   # keys-mode column -> frame column
        self._spans: dict[str, dict[Any, list[tuple[Any, Any]]]] = {}  # timer -> record -> ...

    def base_spans(self, key: str) -> dict[Any, list[tuple[Any, Any]]]:
        """record id -> the loaded intervals of timer ``key``."""
        spans = self._spans.get(key)
        if spans is None:
            table = self.layout.table_of(key, self.base) if self.base is not None else None
            spans = self._spans[key] = interval_lists(table)
        return spans

    def update(self, key: str, rid: str, new_v: dict[str, Any], old_v: dict[str, Any],
               changed: list[str]) -> Any:
        """The write of a timer whose summary columns changed. One interval (or none):
        the start and end are its ends. Several: the start moves the first interval's
        start and the end the last one's end; anything else (the total, an end inside
        another interval, a cleared end) cannot be applied faithfully and is refused."""
        layout = self.layout
        spans = self.base_spans(key).get(rid, [])
        start, end = new_v.get(key), new_v.get(f"{key}.to")
        table = next((n for n, k in layout.intervals.items() if k == key), key)
        how = (f"edit its intervals in tables[{table!r}] (record_id, from, to) instead; "
               "the total is computed from them")
        total_changed = any(layout.col_key[c] == f"{key}.total" for c in changed)
        ends_changed = any(layout.col_key[c] in (key, f"{key}.to") for c in changed)
        if len(spans) <= 1:
            enc = encode_field(layout, key, new_v, rid, self.inv_cols)
            new_spans = [] if is_empty_cell(start) else [(start, end)]
        elif is_empty_cell(start) or is_empty_cell(end):
            raise UsageError(f"record {rid}: timer {key} has {len(spans)} intervals; a "
                             f"cleared start or end cannot say which to drop: {how}",
                             field=key)
        else:
            new_spans = list(spans)
            new_spans[0] = (start, spans[0][1])
            new_spans[-1] = (new_spans[-1][0], end)
            a, b = pd.Timestamp(str(start)), pd.Timestamp(str(end))
            if a > pd.Timestamp(spans[0][1]) or b < pd.Timestamp(spans[-1][0]):
                raise UsageError(f"record {rid}: timer {key} has {len(spans)} intervals; the "
                                 "start must stay in the first and the end in the last: "
                                 + how, field=key)
            enc = self.encode_times(key, rid, new_spans)
        if total_changed and not values_equal(new_v.get(f"{key}.total"),
                                              total(new_spans)):
            raise UsageError(f"record {rid}: the total of timer {key} is computed by the "
                             f"service from the intervals: {how}", field=key)
        if not ends_changed:
            return UNCHANGED   # the total alone, and it already is what the intervals make
        old_v[intervals_key(key)] = spans
        new_v[f"{key}.total"] = total(new_spans) if new_spans else pd.NA
        new_v[intervals_key(key)] = new_spans
        return enc

    def encode_times(self, key: str, rid: str, spans: Sequence[tuple[Any, Any]]) -> Any:
        """The write of timer ``key``'s intervals, the record named when refused."""
        layout = self.layout
        codec = layout.codecs[key]
        try:
            return codec.encode_times(spans, layout.fields[key], layout.ctx)  # type: ignore[attr-defined]
        except InvalidValue as exc:
            exc.record_id = exc.record_id or rid
            exc.field = exc.field or key
            if rid not in exc.message:
                exc.message = f"record {rid}: {exc.message}"
                exc.args = (exc.message,)
            raise

    def tables(self, edited: Frames, base: Frames) -> None:
        """A timer's intervals are edited in its table (record_id, from, to): each record
        whose intervals changed writes them all (``{times: [...]}``)."""
        all_ids = set(self.rows.ids)
        dropped = set(self.rows.removed)
        for name, key in self.layout.intervals.items():
            table = edited.tables.get(name)
            if table is None:
                continue
            btable = base.tables.get(name)
            if btable is not None and table.equals(btable):
                continue
            missing = {"record_id", "from", "to"} - set(table.columns)
            if missing:
                raise UsageError(f"timer table {name!r} lacks columns {sorted(missing)}",
                                 field=key)
            new, old = interval_lists(table), interval_lists(btable)
            for r in sorted(set(new) | set(old), key=str):
                if same_intervals(new.get(r, []), old.get(r, [])) or r in dropped:
                    continue
                if r not in all_ids:
                    raise UsageError(f"timer table {name!r}: record_id {r!r} is not a row of "
                                     "the main frame", field=key)
                if key in self.edits.payloads.get(r, {}):
                    raise UsageError(f"record {r}: both the summary columns and the "
                                     f"intervals (tables[{name!r}]) of timer {key} changed: "
                                     "edit the intervals only", field=key)
                self._change(r, name, key, new.get(r, []), old.get(r, []))

    def _change(self, r: str, name: str, key: str, new: list[tuple[Any, Any]],
                old: list[tuple[Any, Any]]) -> None:
        """Record ``r`` writes all its intervals of timer ``key``."""
        action = self.edits.actions.get(r, "update")
        if action == "create" and not new:
            return
        enc = self.encode_times(key, r, new)
        self.edits.payloads.setdefault(r, {})[key] = enc
        self.edits.actions[r] = action
        if action == "update":
            self.edits.loaded.setdefault(r, {})[key] = self._summary(key, r, old)
        self.edits.wanted.setdefault(r, {})[key] = summary_of(key, new)
        self.edits.add_change(r, action, key, name, old if action == "update" else pd.NA, new)

    def _summary(self, key: str, rid: str, spans: list[tuple[Any, Any]]) -> dict[str, Any]:
        """A record's loaded timer values (summary columns and intervals)."""
        out: dict[str, Any] = {}
        base = self.base_main
        for c in self.layout.field_cols[key]:
            if base is not None and c in base.columns and rid in base.index:
                out[self.layout.col_key[c]] = base.at[rid, c]
        out[intervals_key(key)] = spans
        return out


def total(spans: Sequence[tuple[Any, Any]]) -> Any:
    """A timer's total: the sum of its intervals (the service computes it so)."""
    return sum((pd.Timestamp(b) - pd.Timestamp(a) for a, b in spans), pd.Timedelta(0))


def summary_of(key: str, spans: Sequence[tuple[Any, Any]]) -> dict[str, Any]:
    """A timer's summary columns (keys mode) and intervals as the service makes them."""
    if not spans:
        return {key: pd.NA, f"{key}.to": pd.NA, f"{key}.total": pd.NA, intervals_key(key): []}
    return {key: spans[0][0], f"{key}.to": spans[-1][1], f"{key}.total": total(spans),
            intervals_key(key): list(spans)}
