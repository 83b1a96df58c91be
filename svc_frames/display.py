"""How loaded frames show themselves: a short text repr and a notebook display.

``Frames.__repr__`` and ``Frames._repr_html_`` (and the pending column of ``App``'s) come
from here: the object or view, its records, its columns by name and kind, its exploded
tables, and what was edited since the load. The frames themselves (``frames.main``) are a
DataFrame away; a display lists what a user needs to start, not every field's format.

What was edited is counted here cheaply, cell by cell against the frames as loaded
(``Frames.original``), so that a display never sends a request nor builds a plan:
``diff(frames)`` says exactly what would be sent (it also knows that ``78742.0`` is the
``78742`` loaded, which a count here may not).

Everything from the application (names, labels) is escaped in the HTML: a label is data.

Usage::

    outline = Outline(title="Work Orders (object_3)", records=30, ...)
    frames_text(outline); frames_html(outline, frames.main)
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .arrowcols import member

__all__ = ["Pending", "Outline", "outline", "pending_edits", "frames_text", "frames_html"]

SHOWN_COLUMNS = 12   # fields the text repr names before "... N more"
PREVIEW_ROWS = 5     # rows of the notebook display's preview
WIDTH = 100          # the text repr's lines


@dataclass
class Pending:
    """What was edited since the load: records with an edited cell (and how many cells),
    rows added and removed, exploded tables changed, columns that are not the load's."""

    edited: int = 0
    cells: int = 0
    added: int = 0
    removed: int = 0
    tables: list[str] = field(default_factory=list)
    new_columns: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        """Whether anything was edited."""
        return bool(self.edited or self.added or self.removed or self.tables)

    def text(self) -> str:
        """One line: ``2 records edited (3 cells), 1 added, none removed``."""
        if not self.any:
            out = "no edits since the load"
        else:
            parts = [f"{_n(self.edited, 'record')} edited ({_n(self.cells, 'cell')})",
                     f"{self.added} added", f"{self.removed} removed"]
            if self.tables:
                parts.append("tables " + ", ".join(_shown(t) for t in self.tables))
            out = ", ".join(parts) + "; diff(frames) shows what would be sent"
        if self.new_columns:
            out += (f"; {_n(len(self.new_columns), 'column')} not loaded: "
                    + ", ".join(_shown(c) for c in self.new_columns[:5])
                    + (" ..." if len(self.new_columns) > 5 else ""))
        return out


@dataclass
class Outline:
    """What a display of frames shows (built by ``Frames``)."""

    title: str                      # "Work Orders (object_3)", "view_3 of scene_2"
    records: int
    naming: str                     # "keys", "labels" or "" (not loaded by svc_frames)
    columns: int                    # the main frame's columns
    fields: list[tuple[str, str, str]]   # (column or table name, label, kind) per field
    tables: list[tuple[str, str, int]]   # (exploded table, its field's label, rows)
    pending: Pending | None         # None: no values as loaded to compare with


def outline(where: str | None, name: str, naming: str, main: pd.DataFrame,
            tables: Mapping[str, pd.DataFrame], fields: list[tuple[str, str, str]],
            pending: Pending | None) -> Outline:
    """The outline of frames loaded from ``where`` (an object key, ``scene_N/view_N``;
    None: not loaded by svc_frames), its fields as (column or table name, label, kind)."""
    if where is None:
        title = "frames not loaded by svc_frames"
    else:
        title = f"{name} ({where})" if name else where
    labels = {n: label for n, label, _kind in fields}
    return Outline(title=title, records=len(main), naming=naming, columns=main.shape[1],
                   fields=fields, pending=pending,
                   tables=[(str(k), labels.get(str(k), str(k)), len(v))
                           for k, v in tables.items()])


def pending_edits(main: pd.DataFrame, loaded: pd.DataFrame,
                  tables: Mapping[str, pd.DataFrame],
                  loaded_tables: Mapping[str, pd.DataFrame]) -> Pending:
    """What changed in ``main`` and ``tables`` since ``loaded`` and ``loaded_tables`` (the
    frames as loaded), counted cell by cell; a cell whose value cannot be compared with the
    loaded one (another type: a date given as text) counts as edited."""
    out = Pending()
    index, before = main.index, loaded.index
    out.new_columns = [str(c) for c in main.columns if c not in loaded.columns]
    now, then = main, loaded
    if not index.equals(before):   # rows added, removed or reordered
        kept = member(index, before)
        out.added = int((~kept).sum())
        out.removed = int((~member(before, index)).sum())
        common = index[kept]
        now, then = main.loc[common], loaded.loc[common]
    if len(now):
        rows = np.zeros(len(now), dtype=bool)
        for col in main.columns:
            if col not in loaded.columns:
                continue
            diff = _cells_differ(now[col], then[col])
            out.cells += int(diff.sum())
            rows |= diff
        out.edited = int(rows.sum())
    for name in sorted(set(tables) | set(loaded_tables), key=str):
        a, b = tables.get(name), loaded_tables.get(name)
        if a is None or b is None or not _same_table(a, b):
            out.tables.append(str(name))
    return out


def _cells_differ(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Per row, whether two aligned columns differ (both missing: the same)."""
    if a.dtype != object and b.dtype != object:
        try:
            # the arrays, not the Series: no alignment, and Arrow text compared in Arrow
            same = pd.array(a.array == b.array).fillna(False)
            both_na = a.isna().to_numpy() & b.isna().to_numpy()
            return ~(np.asarray(same, dtype=bool) | both_na)
        except (TypeError, ValueError):
            pass   # incomparable dtypes (a date column given text): cell by cell below
    pairs = zip(a.to_numpy(dtype=object), b.to_numpy(dtype=object), strict=True)
    return np.fromiter((x is not y and not _same_value(x, y) for x, y in pairs),
                       dtype=bool, count=len(a))


def _same_value(x: Any, y: Any) -> bool:
    """Two cells of an object column: lists by their items, missing values alike."""
    if isinstance(x, (list, tuple, np.ndarray)) or isinstance(y, (list, tuple, np.ndarray)):
        try:
            return len(x) == len(y) and all(_same_value(a, b) for a, b in zip(x, y, strict=True))
        except TypeError:   # one of them has no length
            return False
    x_na, y_na = _is_na(x), _is_na(y)
    if x_na or y_na:
        return x_na and y_na
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return False


def _is_na(x: Any) -> bool:
    return x is None or x is pd.NA or x is pd.NaT or (isinstance(x, float) and x != x)


def _same_table(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    try:
        return a.reset_index(drop=True).equals(b.reset_index(drop=True))
    except (TypeError, ValueError):
        return False


# ---- text -------------------------------------------------------------------------------
def frames_text(o: Outline) -> str:
    """The short text repr: a head line, what was edited, the columns, the tables."""
    named = f" by {o.naming[:-1]}" if o.naming else ""
    lines = [f"Frames of {_shown(o.title)}: {_n(o.records, 'record')}, "
             f"{_n(o.columns, 'column')}{named}, {_n(len(o.tables), 'table')}"]
    if o.pending is not None:
        lines.append(_wrapped("edits: " + o.pending.text()))
    if o.fields:
        items = [_field_item(name, label, kind, o.naming)
                 for name, label, kind in o.fields[:SHOWN_COLUMNS]]
        more = len(o.fields) - SHOWN_COLUMNS
        lines.append(_wrapped("fields: " + ", ".join(items) + (
            f", ... {more} more (frames.fields lists them all)" if more > 0 else "")))
    if o.tables:
        lines.append(_wrapped("tables: " + ", ".join(
            f"{_field_item(t, label, _n(n, 'row'), o.naming)}" for t, label, n in o.tables)))
    return "\n".join(lines)


def _wrapped(text: str) -> str:
    """``text`` in lines of ``WIDTH``, broken between the items of its list only."""
    kept = ", ".join(item.replace(" ", "\xa0") for item in text.split(", "))
    return textwrap.fill(kept, width=WIDTH, initial_indent="  ", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False).replace("\xa0", " ")


def _field_item(name: str, label: str, kind: str, naming: str) -> str:
    if naming == "labels" or name == label:
        return f"{_shown(name)} ({kind})"
    return f"{_shown(name)} {_shown(label)} ({kind})"


# ---- HTML -------------------------------------------------------------------------------
def frames_html(o: Outline, main: pd.DataFrame) -> str:
    """The notebook display: the head line, what was edited, a table of the fields (name,
    label, kind), the tables and a preview of the first rows; every name escaped."""
    e = html.escape
    named = f" · columns by {e(o.naming[:-1])}" if o.naming else ""
    head = (f"<p><b>{e(o.title)}</b> · {_n(o.records, 'record')} · "
            f"{_n(o.columns, 'column')}{named} · {_n(len(o.tables), 'table')}</p>")
    parts = ["<div class='svcf-frames'>", head]
    if o.pending is not None:
        cls = "svcf-edits" if o.pending.any else "svcf-edits svcf-none"
        parts.append(f"<p class='{cls}'>Edits: {e(o.pending.text())}</p>")
    if o.fields:
        fields = pd.DataFrame(o.fields, columns=["column", "label", "kind"])
        parts.append(f"<details><summary>{_n(len(o.fields), 'field')}</summary>"
                     + fields.to_html(index=False, escape=True) + "</details>")
    if o.tables:
        rows = "".join(f"<tr><td>{e(t)}</td><td>{e(label)}</td><td>{n:,}</td></tr>"
                       for t, label, n in o.tables)
        parts.append("<details><summary>tables (frames.tables)</summary><table>"
                     "<tr><th>table</th><th>label</th><th>rows</th></tr>"
                     f"{rows}</table></details>")
    preview = main.head(PREVIEW_ROWS).to_html(escape=True, max_cols=20)
    parts.append(f"<details open><summary>first rows (frames.main)</summary>{preview}"
                 "</details></div>")
    return "".join(parts)


# ---- helpers ----------------------------------------------------------------------------
def _n(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _shown(name: object) -> str:
    """A name on one line: one holding a line break or another control character is
    shown quoted, escapes visible."""
    text = str(name)
    return repr(text) if any(not ch.isprintable() for ch in text) else text

