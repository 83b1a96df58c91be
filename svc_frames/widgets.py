"""Notebook widgets: review a write-back plan record by record, then apply only what you keep.

Each record is a row of its own height in a bounded, scrolling list: a checkbox, the
record's identifier (the object's display field) with its id, the action, and a table of
its changes (field, value as loaded, new value). A filter box narrows the list; All / None
act on what is shown; the count of ticked records and the requests they need stay in view.
**Apply** sends only the ticked records, through ``write_back`` with ``plan.select(ids)``:
its progress bar and then the report appear inside the widget (an ``Output`` captures
them, so nothing goes to JupyterLab's log console). It sends nothing twice: after a run
the button is disabled.

Usage::

    from svc_frames.widgets import review
    plan = diff(edited)
    review(plan, client)              # in a notebook cell: filter, tick, press Apply
"""

from __future__ import annotations

import dataclasses
import html
import traceback
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from .errors import SvcError, UsageError
from .frames import Frames, Source
from .kinds import BLANK
from .records import Client
from .schema import Schema
from .writeback import Plan, write_back
from .writeback.plan import NEW_ID_PREFIX, Layout

__all__ = ["PlanReview", "review", "changes_html", "report_html", "format_change_value"]

_MAX_CELL = 160   # characters of a value shown in a cell; the full value is its tooltip
_MAX_TIP = 2000   # characters of a tooltip
_PROBLEMS = ("failed", "conflict", "unknown", "not_applied", "skipped")

# JupyterLab's CSS variables (with fallbacks for other front ends) so light and dark
# themes both read; every rule is scoped to the widget's own classes. A row sets its own
# line height: an HTML widget's is one control's height (28 px), too loose for text.
CSS = """<style>
.svcf-review{color:var(--jp-ui-font-color1,#222);font-size:var(--jp-ui-font-size1,13px);
 line-height:1.45}
.svcf-list{border:1px solid var(--jp-border-color2,#ddd);border-radius:2px}
.svcf-row{border-bottom:1px solid var(--jp-border-color2,#e4e4e4);padding:4px 4px 6px 4px}
.svcf-rec{display:flex;gap:12px;align-items:flex-start;min-width:0;line-height:1.4}
.svcf-who{flex:0 0 210px;min-width:0;overflow-wrap:anywhere}
.svcf-ident{font-weight:600;color:var(--jp-ui-font-color0,#000)}
.svcf-id{font-family:var(--jp-code-font-family,monospace);font-size:11px;
 color:var(--jp-ui-font-color2,#666)}
.svcf-act{display:inline-block;white-space:nowrap;padding:0 6px;margin-top:2px;
 border:1px solid currentColor;border-radius:8px;font-size:11px;font-weight:600}
.svcf-act-update{color:var(--jp-brand-color1,#1976d2)}
.svcf-act-create{color:var(--jp-success-color1,#388e3c)}
.svcf-act-delete{color:var(--jp-error-color1,#d32f2f)}
.svcf-fields{flex:1 1 auto;min-width:0}
.svcf-t{border-collapse:collapse;table-layout:fixed;width:100%;margin:0}
.svcf-t th,.svcf-t td{border:1px solid var(--jp-border-color2,#ddd);padding:2px 6px;
 text-align:left;vertical-align:top;overflow-wrap:anywhere;white-space:normal}
.svcf-t th{background:var(--jp-layout-color2,#f3f3f3);font-weight:600;
 color:var(--jp-ui-font-color1,#222)}
.svcf-t .svcf-fcol{width:24%}
.svcf-old{color:var(--jp-ui-font-color2,#666)}
.svcf-new{color:var(--jp-ui-font-color0,#000);font-weight:600}
.svcf-bar{color:var(--jp-ui-font-color1,#222)}
.svcf-st{display:inline-block;white-space:nowrap;padding:0 6px;border-radius:8px;
 border:1px solid currentColor;font-size:11px;font-weight:600}
.svcf-st-applied,.svcf-st-planned{color:var(--jp-success-color1,#388e3c)}
.svcf-st-failed,.svcf-st-unknown{color:var(--jp-error-color1,#d32f2f)}
.svcf-st-conflict,.svcf-st-not_applied,.svcf-st-skipped{color:var(--jp-warn-color1,#f57c00)}
.svcf-bad td{background:var(--jp-layout-color2,#fff4f4)}
.svcf-bad td:first-child{border-left:3px solid var(--jp-warn-color1,#f57c00)}
.svcf-err{color:var(--jp-error-color1,#d32f2f)}
.svcf-err pre{white-space:pre-wrap;font-size:11px;color:var(--jp-ui-font-color1,#222)}
</style>"""


def format_change_value(value: Any) -> str:
    """A change value as readable text (lists joined, NA and empty lists as ``BLANK``), in
    full."""
    if isinstance(value, (list, tuple)):
        return ", ".join(format_change_value(v) for v in value) if value else BLANK
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_change_value(v)}" for k, v in value.items())
    try:
        if pd.isna(value):
            return BLANK
    except (TypeError, ValueError):
        pass
    if isinstance(value, pd.Timestamp):
        return value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _cut(text: str, limit: int = _MAX_CELL) -> tuple[str, str]:
    """(shown, tooltip): a long text is cut with an ellipsis, its full value on hover."""
    if len(text) <= limit:
        return html.escape(text), ""
    tip = text if len(text) <= _MAX_TIP else text[: _MAX_TIP - 1] + "…"
    return html.escape(text[: limit - 1] + "…"), f" title='{html.escape(tip, quote=True)}'"


def short_id(rid: str) -> str:
    """A long record id shortened for a narrow column (``5f3a1c…9b2e``)."""
    return rid if len(rid) <= 12 else f"{rid[:6]}…{rid[-4:]}"


def _labels(*sources: Any) -> dict[str, str]:
    """field key -> label, from whichever of plan / frames carries a Source."""
    out: dict[str, str] = {}
    for obj in sources:
        src = getattr(obj, "source", None)
        for spec in getattr(src, "fields", None) or []:
            out.setdefault(spec.key, spec.label)
    return out


def _field_name(field: str, column: str, labels: dict[str, str]) -> str:
    if column and column != field and not column.startswith(field + "."):
        return column   # frames named by label: the column says it as they do
    name = labels.get(field, field)
    if column and column != field and column.startswith(field + "."):
        name += column[len(field):]
    return name


Cell = tuple[str, str, str, Any, Any]   # one change: action, field, column, old, new


def _cells(changes: pd.DataFrame) -> list[Cell]:
    """The rows of ``plan.changes`` as plain tuples (one pass; no pandas per record)."""
    cols = [changes[c].tolist() for c in ("action", "field", "column", "old", "new")]
    return [(str(a), str(f or ""), str(c or ""), o, n) for a, f, c, o, n in zip(*cols,
                                                                              strict=True)]


def _record_rows(cells: list[Cell], labels: dict[str, str]) -> str:
    rows = []
    for action, field, column, old_value, new_value in cells:
        if action == "delete":
            rows.append("<tr><td>(whole record)</td><td class='svcf-old'>as loaded</td>"
                        "<td class='svcf-new'>deleted</td></tr>")
            continue
        name, name_tip = _cut(_field_name(field, column or field, labels), 60)
        old, old_tip = _cut(format_change_value(old_value))
        new, new_tip = _cut(format_change_value(new_value))
        rows.append(f"<tr><td{name_tip}>{name}</td><td class='svcf-old'{old_tip}>{old}</td>"
                    f"<td class='svcf-new'{new_tip}>{new}</td></tr>")
    return "".join(rows)


_HEAD = ("<thead><tr><th class='svcf-fcol'>field</th><th>value as loaded</th>"
         "<th>new value</th></tr></thead>")


def record_html(rid: str, identifier: str, action: str, cells: list[Cell],
                labels: dict[str, str]) -> str:
    """One record of a review: identifier, id (full on hover), action, its changes table."""
    ident, ident_tip = _cut(identifier, 80) if identifier else (f"<i>{BLANK}</i>", "")
    shown_id = "new record" if rid.startswith(NEW_ID_PREFIX) else short_id(rid)
    return (f"<div class='svcf-rec'><div class='svcf-who'>"
            f"<div class='svcf-ident'{ident_tip}>{ident}</div>"
            f"<div class='svcf-id' title='{html.escape(rid, quote=True)}'>"
            f"{html.escape(shown_id)}</div>"
            f"<span class='svcf-act svcf-act-{html.escape(action)}'>{html.escape(action)}"
            f"</span></div><div class='svcf-fields'><table class='svcf-t'>{_HEAD}<tbody>"
            f"{_record_rows(cells, labels)}</tbody></table></div></div>")


def changes_html(changes: pd.DataFrame, labels: dict[str, str] | None = None) -> str:
    """The plan's changes as one HTML table: a header row per record, then field, value
    as loaded and new value.

    Parameters
    ----------
    changes : pandas.DataFrame
        ``plan.changes``.
    labels : dict, optional
        Field key -> label for the field column.

    Returns
    -------
    str
        HTML (values escaped).

    Examples
    --------
    >>> IPython.display.HTML(changes_html(plan.changes, {"field_3": "Status"}))  # doctest: +SKIP
    """
    labels = labels or {}
    body = []
    for rid, group in changes.groupby("record_id", sort=False):
        first = group.iloc[0]
        body.append(f"<tr><th colspan='3'>{html.escape(str(rid))} · "
                    f"{html.escape(str(first['action']))}</th></tr>")
        body.append(_record_rows(_cells(group), labels))
    return (CSS + "<table class='svcf-t'>" + _HEAD + "<tbody>" + "".join(body)
            + "</tbody></table>")


def report_html(report: Any, identifiers: dict[str, str] | None = None) -> str:
    """A write-back Report as HTML: counts per status and requests, then the records that
    did not go through (failed, conflict, unknown, not applied, skipped) with their reason.

    Parameters
    ----------
    report : svc_frames.writeback.Report
        What ``write_back`` returned.
    identifiers : dict, optional
        Record id -> identifier text, shown beside each id.

    Returns
    -------
    str
        HTML (values escaped); the whole table is ``report.table``.

    Examples
    --------
    >>> IPython.display.HTML(report_html(write_back(client, edited)))  # doctest: +SKIP
    """
    identifiers = identifiers or {}
    table: pd.DataFrame = report.table
    counts = table["status"].value_counts() if len(table) else pd.Series(dtype=int)
    badges = " ".join(f"<span class='svcf-st svcf-st-{html.escape(str(s))}'>{int(n)} "
                      f"{html.escape(str(s).replace('_', ' '))}</span>"
                      for s, n in counts.items()) or "nothing sent"
    sent = sum(getattr(report, "requests", {}).values())
    head = (f"<p><b>Report{' (dry run)' if getattr(report, 'dry_run', False) else ''}:"
            f"</b> {badges} · {sent} request{'s' if sent != 1 else ''}</p>")
    bad = table[table["status"].isin(_PROBLEMS)]
    if not len(bad):
        return CSS + head
    rows = []
    for row in bad.head(500).itertuples(index=False):
        rid = str(row.record_id)
        ident = identifiers.get(rid, "")
        who = (f"{html.escape(ident)} " if ident else "") + \
            f"<span class='svcf-id' title='{html.escape(rid, quote=True)}'>" \
            f"{html.escape(short_id(rid))}</span>"
        reason, tip = _cut(str(row.message or ""), 400)
        rows.append(f"<tr class='svcf-bad'><td>{who}</td><td>{html.escape(str(row.action))}"
                    f"</td><td><span class='svcf-st svcf-st-{html.escape(str(row.status))}'>"
                    f"{html.escape(str(row.status).replace('_', ' '))}</span></td>"
                    f"<td{tip}>{reason}</td></tr>")
    more = f"<p>… and {len(bad) - 500} more in report.table</p>" if len(bad) > 500 else ""
    return (CSS + head + "<table class='svcf-t'><thead><tr><th>record</th>"
            "<th style='width:70px'>action</th><th style='width:100px'>status</th>"
            "<th>reason</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>" + more)


def identifier_field(client: Client, source: Source | None) -> str | None:
    """The key of the object's display field (the schema's ``identifier``); else its first
    text field; None when neither is known."""
    if source is None:
        return None
    try:
        app = client.schema()
    except SvcError:   # the identifier is a nicety: the review works without it
        app = None
    obj = Schema.of(app).object(source.object_key)
    key = obj.get("identifier") if obj else None
    known = {f.key for f in source.fields}
    if isinstance(key, str) and key in known:
        return key
    return next((f.key for f in source.fields if f.kind in ("short_text", "name", "email")),
                None)


def identifier_texts(plan: Plan, edited: Frames, key: str | None) -> dict[str, str]:
    """Record id -> the text of field ``key``: as loaded (the name the record has on the
    service, even when the edit changes it); a create's from the edited frame."""
    if key is None or plan.source is None:
        return {}
    cols = Layout.of(plan.source).field_cols.get(key) or []
    if not cols:
        return {}
    out: dict[str, str] = {}
    base = plan.base if plan.base is not None else edited.original
    existing = [r for r, a in plan.actions.items() if a != "create"]
    for frame in (base.main if base is not None else None, edited.main):
        todo = [r for r in existing if r not in out]
        if frame is None or not todo or not all(c in frame.columns for c in cols):
            continue
        present = [r for r in todo if r in frame.index]
        out.update((str(r), str(t)) for r, t in _joined_text(frame.loc[present, cols]).items())
    creates = {r: p for r, p in plan.create_rows.items() if plan.actions.get(r) == "create"}
    if creates and all(c in edited.main.columns for c in cols):
        rows = edited.main.iloc[list(creates.values())][cols]
        rows.index = pd.Index(list(creates))
        out.update((str(r), str(t)) for r, t in _joined_text(rows).items())
    return out


def _joined_text(frame: pd.DataFrame) -> pd.Series:
    """A row's columns as one text (a name's parts joined by spaces)."""
    parts = frame.astype("string").fillna("")
    text = parts.iloc[:, 0]
    for col in parts.columns[1:]:
        text = text.str.cat(parts[col], sep=" ")
    return text.str.replace(r"\s+", " ", regex=True).str.strip()


class PlanReview:
    """A review widget for a write-back plan: a row per record, a filter, Apply.

    Records are shown ``page_size`` at a time in a list that scrolls inside a bounded box
    (a plan of any size stays quick); ticks are kept across pages and filters. ``write``
    is the function that sends; by default ``svc_frames.writeback.write_back`` called as
    ``write(client, edited, plan=plan.select(ticked ids), **write_options)``.

    Parameters
    ----------
    plan : Plan
        What ``diff`` returned.
    client : Client
        Where to send.
    edited : Frames, optional
        The edited frames (default: the ones the plan was made from).
    write : callable, optional
        Replaces ``write_back`` (same signature).
    page_size : int, default 50
        Records per page.
    identifier : str, optional
        Field key shown as each record's name (default: the object's display field).
    **write_options
        Passed to ``write_back`` (``on_conflict``, ``token``, ``delete_missing``...).

    Raises
    ------
    UsageError
        ``plan`` is not a Plan, the frames are missing, or ``page_size`` is not positive.

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> ids = orders.main.index[:3]
    >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
    >>> box = PlanReview(diff(orders), client, on_conflict="skip")
    >>> box                          # in a notebook: the widget
    PlanReview(3 of 3 records selected)
    >>> box.filter.value = "gate"    # what typing in the filter box does
    >>> box.shown == [ids[1]]
    True
    >>> box.exclude([ids[0]])        # or untick it in the list
    >>> box
    PlanReview(2 of 3 records selected)
    """

    def __init__(self, plan: Plan, client: Client, edited: Frames | None = None, *,
                 write: Callable[..., Any] | None = None, page_size: int = 50,
                 identifier: str | None = None, **write_options: Any) -> None:
        import ipywidgets as w

        if not isinstance(plan, Plan):
            raise UsageError("review() needs the Plan returned by diff(); got "
                             f"{type(plan).__name__}")
        if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
            raise UsageError(f"page_size must be a positive integer, got {page_size!r}")
        self.plan = plan
        self.client = client
        found = edited if edited is not None else plan.edited
        if found is None:
            raise UsageError("review() needs the edited frames: pass edited= (the plan was "
                             "built without them)")
        self.edited: Frames = found
        self.write_options = write_options
        self.page_size = page_size
        self._write = write
        self.report: Any = None
        #: the exception the last Apply raised (shown in the widget); ``reraise()`` raises it
        self.error: BaseException | None = None
        self._changes: pd.DataFrame = plan.changes.reset_index(drop=True)
        #: record id -> its changes, in plan order
        self._rows: dict[str, list[Cell]] = {}
        for rid, cell in zip(self._changes["record_id"].tolist(), _cells(self._changes),
                             strict=True):
            self._rows.setdefault(str(rid), []).append(cell)
        self.record_ids: list[str] = list(self._rows)
        self._included: dict[str, bool] = dict.fromkeys(self.record_ids, True)
        self._n_included = len(self.record_ids)
        self._labels = _labels(plan, self.edited)
        key = identifier or identifier_field(client, plan.source)
        #: record id -> the text of its display field
        self.identifiers: dict[str, str] = identifier_texts(plan, self.edited, key)
        self._search: list[str] | None = None   # built on the first filter
        #: the records the filter lets through, in plan order
        self.shown: list[str] = list(self.record_ids)
        self._syncing = False
        self._version = 0                          # bumped by every change of the ticks
        self._estimate: tuple[int, str] = (-1, "")  # (version, requests of the selection)
        self._slots: list[tuple[Any, Any, Any]] = []   # (row, checkbox, html), reused
        self._slot_ids: list[str] = []
        self.page = 0

        self.widget = w.VBox(layout=w.Layout(width="100%"))
        self.widget.add_class("svcf-review")
        self.summary = w.HTML()
        self.summary.add_class("svcf-bar")
        if not self.record_ids:
            self.apply_button = w.Button(description="Apply", disabled=True)
            self.output = w.HTML()
            self.summary.value = "<b>Nothing to send:</b> the plan has no changes."
            self.widget.children = (w.HTML(CSS), self.summary, self.output)
            return
        self.filter = w.Text(placeholder="Filter: identifier, id or value",
                             continuous_update=True, layout=w.Layout(width="280px"))
        self.filter.observe(lambda ch: self.set_filter(ch["new"]), names="value")
        small = w.Layout(width="64px")
        self.all_button = w.Button(description="All", layout=small,
                                   tooltip="Tick every record shown")
        self.none_button = w.Button(description="None", layout=small,
                                    tooltip="Untick every record shown")
        self.all_button.on_click(lambda _b: self.include(self.shown))
        self.none_button.on_click(lambda _b: self.exclude(self.shown))
        self.prev_button = w.Button(description="◀", layout=w.Layout(width="40px"),
                                    tooltip="Previous page")
        self.next_button = w.Button(description="▶", layout=w.Layout(width="40px"),
                                    tooltip="Next page")
        self.prev_button.on_click(lambda _b: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _b: self.show_page(self.page + 1))
        self.page_label = w.HTML()
        self.apply_button = w.Button(description="Apply", button_style="primary",
                                     icon="upload", tooltip="Send the ticked records")
        self.apply_button.on_click(self._clicked)
        self.table_button = w.Button(description="Report table", icon="table",
                                     tooltip="Show report.table (a DataFrame)",
                                     layout=w.Layout(display="none"))
        self.table_button.on_click(lambda _b: self._show_table())
        # rows keep their own height (no flex shrink); the list scrolls inside its box
        self.list = w.VBox(layout=w.Layout(max_height="520px", overflow="auto",
                                           flex_flow="column", width="100%"))
        self.list.add_class("svcf-list")
        self.progress = w.Output()   # write_back's bar and messages during Apply
        self.output = w.HTML()       # the report, or the error
        self.table_output = w.Output(layout=w.Layout(max_height="420px", overflow="auto"))
        self._pager = w.HBox([self.prev_button, self.page_label, self.next_button],
                             layout=w.Layout(flex="0 0 auto", align_items="center"))
        self._controls: list[Any] = [self.all_button, self.none_button, self.filter]
        keep = w.Layout(flex="0 0 auto")
        self.widget.children = (
            w.HTML(CSS, layout=keep),
            w.HBox([self.filter, self.all_button, self.none_button, self._pager],
                   layout=w.Layout(flex="0 0 auto", align_items="center", flex_flow="row wrap")),
            self.list,
            w.HBox([self.apply_button, self.summary],
                   layout=w.Layout(flex="0 0 auto", align_items="center")),
            self.progress, self.output, self.table_button, self.table_output)
        self.show_page(0)
        self._update_summary()

    # ---- pages ---------------------------------------------------------------------------
    @property
    def pages(self) -> int:
        """Number of pages of ``page_size`` records among those shown.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client, page_size=2)
        >>> box.pages
        2
        """
        return max(1, -(-len(self.shown) // self.page_size))

    @property
    def checkboxes(self) -> dict[str, Any]:
        """The checkboxes of the records on the current page, by record id.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.checkboxes[ids[0]].value
        True
        """
        return {rid: self._slots[i][1] for i, rid in enumerate(self._slot_ids)}

    def _slot(self, i: int) -> tuple[Any, Any, Any]:
        import ipywidgets as w

        while len(self._slots) <= i:
            n = len(self._slots)
            box = w.Checkbox(value=True, indent=False, description="",
                             layout=w.Layout(width="24px", flex="0 0 auto", margin="2px 6px 0 0"))
            box.observe(lambda change, n=n: self._on_toggle(n, change["new"]), names="value")
            text = w.HTML(layout=w.Layout(flex="1 1 auto", min_width="0"))
            row = w.HBox([box, text], layout=w.Layout(flex="0 0 auto", align_items="flex-start",
                                                     width="100%", overflow="visible"))
            row.add_class("svcf-row")
            self._slots.append((row, box, text))
        return self._slots[i]

    def show_page(self, page: int) -> None:
        """Show page ``page`` (0-based, clamped) of the records the filter lets through.

        Parameters
        ----------
        page : int
            The page, from 0; a number past either end shows the first or the last page.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client, page_size=2)
        >>> box.show_page(5)
        >>> box.page, list(box.checkboxes) == [ids[2]]
        (1, True)
        """
        page = min(max(int(page), 0), self.pages - 1)
        self.page = page
        ids = self.shown[page * self.page_size:(page + 1) * self.page_size]
        self._slot_ids = []   # no toggles are taken while the slots change records
        rows = []
        for i, rid in enumerate(ids):
            row, box, text = self._slot(i)
            group = self._rows[rid]
            action = group[0][0]
            self._syncing = True
            try:
                box.value = self._included[rid]
            finally:
                self._syncing = False
            box.disabled = self.report is not None
            box.tooltip = rid
            text.value = record_html(rid, self.identifiers.get(rid, ""), action, group,
                                     self._labels)
            rows.append(row)
        self._slot_ids = list(ids)
        self.list.children = tuple(rows)
        self.prev_button.disabled = page == 0
        self.next_button.disabled = page >= self.pages - 1
        self._pager.layout.display = "" if self.pages > 1 else "none"
        first = page * self.page_size + 1
        self.page_label.value = (f"&nbsp;{first}–{first + len(ids) - 1} of {len(self.shown)}"
                                 "&nbsp;" if ids else "&nbsp;none&nbsp;")

    # ---- filter --------------------------------------------------------------------------
    def set_filter(self, text: str) -> None:
        """Show only the records whose identifier, id or values contain ``text`` (any case).

        Ticks are kept; the filter box shows the text.

        Parameters
        ----------
        text : str
            What to look for; ``""`` shows every record.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.set_filter("GATE")
        >>> box.shown == [ids[1]]
        True
        """
        if self.filter.value != text:
            self.filter.value = text   # its observer comes back here once
            return
        needle = str(text).strip().casefold()
        if not needle:
            self.shown = list(self.record_ids)
        else:
            if self._search is None:
                self._search = self._search_texts()
            self.shown = [rid for rid, hay in zip(self.record_ids, self._search, strict=True)
                          if needle in hay]
        self.show_page(0)
        self._update_summary()

    def _search_texts(self) -> list[str]:
        """Per record, in plan order: identifier, id and every value, lower-cased (one
        pass over the changes: a plan of 10,000 records is searched at once)."""
        parts: dict[str, list[str]] = {rid: [self.identifiers.get(rid, ""), rid]
                                       for rid in self.record_ids}
        for rid, cells in self._rows.items():
            parts[rid] += [format_change_value(v) for cell in cells for v in cell[3:]]
        return [" ".join(parts[rid]).casefold() for rid in self.record_ids]

    # ---- state ---------------------------------------------------------------------------
    @property
    def selected(self) -> list[str]:
        """Record ids currently ticked, in plan order.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.selected == list(ids)
        True
        """
        return [rid for rid in self.record_ids if self._included[rid]]

    def include(self, ids: Iterable[str]) -> None:
        """Tick these records.

        Parameters
        ----------
        ids : iterable of str
            Record ids; those not in the plan are ignored.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.exclude(ids)
        >>> box.include([ids[2]])
        >>> box.selected == [ids[2]]
        True
        """
        self._set(self._known(ids), True)

    def exclude(self, ids: Iterable[str]) -> None:
        """Untick these records: Apply will not send them.

        Parameters
        ----------
        ids : iterable of str
            Record ids; those not in the plan are ignored.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.exclude([ids[0]])
        >>> box
        PlanReview(2 of 3 records selected)
        """
        self._set(self._known(ids), False)

    def _set(self, ids: list[str], value: bool) -> None:
        self._version += 1
        for rid in ids:
            if self._included[rid] != value:
                self._included[rid] = value
                self._n_included += 1 if value else -1
        self._syncing = True  # the visible boxes follow without re-counting each one
        try:
            for i, rid in enumerate(self._slot_ids):
                self._slots[i][1].value = self._included[rid]
        finally:
            self._syncing = False
        self._update_summary()

    def _known(self, ids: Iterable[str]) -> list[str]:
        ids = [ids] if isinstance(ids, str) else [str(i) for i in ids]
        unknown = [i for i in ids if i not in self._included]
        if unknown:
            raise UsageError(f"record(s) not in this plan: {', '.join(unknown[:10])}")
        return ids

    def _on_toggle(self, slot: int, value: bool) -> None:
        if self._syncing or slot >= len(self._slot_ids):
            return
        rid = self._slot_ids[slot]
        if self._included[rid] == value:
            return
        self._version += 1
        self._included[rid] = bool(value)
        self._n_included += 1 if value else -1
        self._update_summary()

    def _update_summary(self) -> None:
        n = self._n_included
        text = f"<b>{n}</b> of {len(self.record_ids)} records selected"
        if n:
            text += f" · Apply sends at most {html.escape(self._requests())}"
        if len(self.shown) != len(self.record_ids):
            text += f" · {len(self.shown)} shown by the filter"
        self.summary.value = "&nbsp;" + text

    def _requests(self) -> str:
        """The requests of the selection, as ``Plan.estimate_requests`` says; computed
        again only when the selection changed (not for a filter or a page)."""
        if self._estimate[0] != self._version:
            ids = self.selected
            plan = self.plan
            # the estimate reads actions, payloads, source and base: the changes table
            # (the slow part of Plan.select on a large plan) is not needed for it
            sub = dataclasses.replace(plan, changes=plan.changes.iloc[:0],
                                      actions={i: plan.actions[i] for i in ids},
                                      payloads={i: plan.payloads[i] for i in ids
                                                if i in plan.payloads})
            need = sub.estimate_requests(
                guard=bool(self.write_options.get("guard", True)),
                delete_missing=bool(self.write_options.get("delete_missing", False)))
            self._estimate = (self._version, str(need))
        return self._estimate[1]

    # ---- sending -------------------------------------------------------------------------
    def _clicked(self, _button: Any) -> None:
        # a click's exception would go to the log console: it is shown in the widget
        # and kept in ``error`` instead (``reraise()`` raises it)
        try:
            self.apply()
        except Exception:   # noqa: BLE001 - kept in self.error and shown
            pass

    def reraise(self) -> None:
        """Raise the exception the last Apply met (nothing when it had none).

        Raises
        ------
        Exception
            The one ``write_back`` raised during Apply.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.reraise()              # nothing was applied: nothing to raise
        """
        if self.error is not None:
            raise self.error

    def apply(self) -> Any:
        """Send the ticked records and show the report in the widget.

        Returns
        -------
        Report or None
            None when nothing was sent (no change, nothing ticked).

        Raises
        ------
        Exception
            Whatever ``write_back`` raised (also shown in the widget and kept in
            ``error``).

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client, progress=False)
        >>> box.exclude([ids[0]])
        >>> import contextlib, io
        >>> with contextlib.redirect_stdout(io.StringIO()):  # outside a notebook, IPython
        ...     report = box.apply()       # prints terminal codes clearing the progress area
        >>> report.counts, box
        ({'applied': 2}, PlanReview(2 of 3 records selected, applied))
        """
        if self.report is not None:
            self.output.value = "<b>Already applied</b>; build a new plan to send again."
            return self.report
        if not self.record_ids:
            self.output.value = "<b>Nothing to send:</b> the plan has no changes."
            return None
        ids = self.selected
        if not ids:
            self.output.value = "<b>Nothing selected:</b> nothing was sent."
            return None
        write = self._write or write_back
        self.apply_button.disabled = True
        self.apply_button.description = "Sending…"
        self.error = None
        self.output.value = f"Sending {len(ids)} record{'s' if len(ids) != 1 else ''}…"
        self.progress.clear_output()
        error: Exception | None = None
        # the Output takes write_back's progress bar and printed summary: they appear in
        # the widget, not in the log console, even when the run started from a click
        with self.progress:
            try:
                report = write(self.client, self.edited, plan=self.plan.select(ids),
                               **self.write_options)
            except Exception as exc:   # noqa: BLE001 - shown, kept, and raised below
                error = exc
        if error is not None:
            self.error = error
            self.apply_button.description = "Apply"
            self.apply_button.disabled = False
            trace = "".join(traceback.format_exception(type(error), error,
                                                       error.__traceback__))
            self.output.value = (
                CSS + f"<div class='svcf-err'><b>Not applied:</b> "
                f"{html.escape(type(error).__name__)}: {html.escape(str(error))}"
                "<details><summary>traceback (<code>box.reraise()</code> raises it)"
                f"</summary><pre>{html.escape(trace)}</pre></details></div>")
            raise error
        # what the run printed stays above the report (a warning must stay visible); the
        # bar itself closes when the run ends
        self.report = report
        self.apply_button.description = "Applied"
        for control in self._controls:
            control.disabled = True
        for _row, box, _text in self._slots:
            box.disabled = True
        self.output.value = report_html(report, self.identifiers) + (
            "<p>The whole report as a DataFrame: <code>box.report.table</code> "
            "(or the button below).</p>")
        self.table_button.layout.display = ""
        return report

    def _show_table(self) -> None:
        self.table_output.clear_output()
        if self.report is not None:
            self.table_output.append_display_data(self.report.table)

    # ---- display -------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return (f"PlanReview({len(self.selected)} of {len(self.record_ids)} records selected"
                + (", applied" if self.report is not None else "") + ")")


def review(plan: Plan, client: Client, edited: Frames | None = None, **write_options: Any
           ) -> PlanReview:
    """Show a plan for review in a notebook; Apply sends only the ticked records.

    Parameters
    ----------
    plan : Plan
        What ``diff`` returned (it knows the frames it came from).
    client : Client
        Where to send.
    edited : Frames, optional
        The edited frames, when the plan was built without them.
    **write_options
        ``page_size``, ``identifier``, ``write`` (see ``PlanReview``), and options of
        ``write_back`` (for example ``on_conflict="overwrite"``, ``token=...``).

    Returns
    -------
    PlanReview
        Displays as the widget.

    Raises
    ------
    UsageError
        ``plan`` is not a Plan or the frames are missing.

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> ids = orders.main.index[:3]
    >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
    >>> review(diff(orders), client)  # in a notebook: the widget
    PlanReview(3 of 3 records selected)
    """
    return PlanReview(plan, client, edited, **write_options)
