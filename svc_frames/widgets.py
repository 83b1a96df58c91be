"""Notebook widgets: review a write-back plan record by record, then apply only what you keep.

The review shows every planned change (field label, old value, new value) in a table with a
checkbox per record. **Apply** sends only the checked records, through ``write_back`` with
``plan.select(ids)``, and shows the report. It sends nothing twice: after a run the button
is disabled.

Usage::

    from svc_frames.widgets import review
    plan = diff(edited)
    review(plan, client)              # in a notebook cell: tick, untick, press Apply

Progress bars: the loaders use ``tqdm.auto``, which draws an ipywidgets bar in notebooks.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from .errors import UsageError
from .frames import Frames
from .http.client import Client
from .writeback import Plan, write_back

__all__ = ["PlanReview", "review", "changes_html", "report_html"]

_MAX_CELL = 80  # characters of a value shown in the table before it is shortened


def format_change_value(value: Any) -> str:
    """A change value as short, readable text (lists joined, NA as an empty marker)."""
    if isinstance(value, (list, tuple)):
        return ", ".join(format_change_value(v) for v in value) if value else "∅"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_change_value(v)}" for k, v in value.items())
    try:
        if pd.isna(value):
            return "∅"
    except (TypeError, ValueError):
        pass
    if isinstance(value, pd.Timestamp):
        return value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    text = str(value)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 1] + "…"


def _labels(*sources: Any) -> dict[str, str]:
    """field key -> label, from whichever of plan / frames carries a Source."""
    out: dict[str, str] = {}
    for obj in sources:
        src = getattr(obj, "source", None)
        for spec in getattr(src, "fields", None) or []:
            out.setdefault(spec.key, spec.label)
    return out


_CSS = ("<style>.svcf-t{border-collapse:collapse;font-size:12px;margin:0}"
        ".svcf-t td,.svcf-t th{border:1px solid #ddd;padding:2px 6px;text-align:left;"
        "vertical-align:top}.svcf-t th{background:#f4f4f4}.svcf-old{color:#a33;"
        "text-decoration:line-through}.svcf-new{color:#070}</style>")


def _record_rows(changes: pd.DataFrame, labels: dict[str, str]) -> str:
    rows = []
    for row in changes.itertuples(index=False):
        field = str(getattr(row, "field", "") or "")
        column = str(getattr(row, "column", "") or field)
        name = labels.get(field, field)
        if column and column != field and column.startswith(field + "."):
            name += column[len(field):]
        rows.append(f"<tr><td>{html.escape(name)}</td>"
                    f"<td class='svcf-old'>{html.escape(format_change_value(row.old))}</td>"
                    f"<td class='svcf-new'>{html.escape(format_change_value(row.new))}</td></tr>")
    return "".join(rows)


def changes_html(changes: pd.DataFrame, labels: dict[str, str] | None = None) -> str:
    """The plan's changes as one HTML table: record, action, field label, old, new.

    Usage: ``IPython.display.HTML(changes_html(plan.changes, {"field_3": "Status"}))``"""
    labels = labels or {}
    body = []
    for rid, group in changes.groupby("record_id", sort=False):
        first = group.iloc[0]
        body.append(f"<tr><th colspan='3'>{html.escape(str(rid))} · "
                    f"{html.escape(str(first['action']))}</th></tr>")
        body.append(_record_rows(group, labels))
    return (_CSS + "<table class='svcf-t'><tr><th>field</th><th>old</th><th>new</th></tr>"
            + "".join(body) + "</table>")


def report_html(report: Any) -> str:
    """A write-back Report as HTML: counts per status, then the table (problems first).

    Usage: ``IPython.display.HTML(report_html(write_back(client, edited)))``"""
    table: pd.DataFrame = report.table
    counts = table["status"].value_counts() if len(table) else pd.Series(dtype=int)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "nothing sent"
    order = {"applied": 2, "planned": 3, "skipped": 1}
    shown = table.assign(_o=table["status"].map(lambda s: order.get(str(s), 0))) \
        .sort_values("_o", kind="stable").drop(columns="_o")
    return (_CSS + f"<p><b>Report:</b> {html.escape(summary)}</p>"
            + shown.to_html(index=False, classes="svcf-t", border=0, escape=True,
                            max_rows=500))


class PlanReview:
    """A review widget for a write-back plan: a checkbox per record and an Apply button.

    Records are shown ``page_size`` at a time (any plan size stays quick); ticks are kept
    across pages. ``write`` is the function that sends; by default
    ``svc_frames.writeback.write_back`` called as
    ``write(client, edited, plan=plan.select(ticked ids), **write_options)``.

    Usage::

        box = PlanReview(plan, client, on_conflict="skip")
        box                       # displays in a notebook
        box.exclude(["abc123"])   # or untick in the table
        report = box.apply()      # same as pressing Apply
    """

    def __init__(self, plan: Plan, client: Client, edited: Frames | None = None, *,
                 write: Callable[..., Any] | None = None, page_size: int = 50,
                 **write_options: Any) -> None:
        import ipywidgets as w

        if not isinstance(plan, Plan):
            raise UsageError("review() needs the Plan returned by diff(); got "
                             f"{type(plan).__name__}")
        if not isinstance(page_size, int) or page_size < 1:
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
        self._changes: pd.DataFrame = plan.changes.reset_index(drop=True)
        self._rows: dict[str, Any] = {} if not len(self._changes) else \
            {str(k): v for k, v in self._changes.groupby("record_id", sort=False).indices.items()}
        self.record_ids: list[str] = list(self._rows)
        self._included: dict[str, bool] = dict.fromkeys(self.record_ids, True)
        self._n_included = len(self.record_ids)
        self._labels = _labels(plan, self.edited)
        self._syncing = False
        #: the checkboxes of the records on the current page, by record id
        self.checkboxes: dict[str, w.Checkbox] = {}
        self.page = 0

        self.summary = w.HTML()
        self.apply_button = w.Button(description="Apply", button_style="primary",
                                     icon="upload", tooltip="Send the ticked records")
        self.apply_button.on_click(lambda _b: self.apply())
        small = w.Layout(width="64px")
        all_btn = w.Button(description="All", layout=small, tooltip="Tick every record")
        none_btn = w.Button(description="None", layout=small, tooltip="Untick every record")
        all_btn.on_click(lambda _b: self.include(self.record_ids))
        none_btn.on_click(lambda _b: self.exclude(self.record_ids))
        self.prev_button = w.Button(description="◀", layout=w.Layout(width="40px"))
        self.next_button = w.Button(description="▶", layout=w.Layout(width="40px"))
        self.prev_button.on_click(lambda _b: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _b: self.show_page(self.page + 1))
        self.page_label = w.HTML()
        self.output = w.HTML()
        self._table = w.VBox(layout=w.Layout(max_height="480px", overflow="auto"))
        self._disabled: list[w.Button] = [all_btn, none_btn]
        if not self.record_ids:
            self.apply_button.disabled = True
            all_btn.disabled = none_btn.disabled = True
            self.summary.value = "<b>Nothing to send:</b> the plan has no changes."
            self.widget = w.VBox([self.summary])
            return
        pager = [self.prev_button, self.page_label, self.next_button] \
            if len(self.record_ids) > page_size else []
        self.widget = w.VBox([w.HBox([self.apply_button, all_btn, none_btn, *pager,
                                      self.summary]), self._table, self.output])
        self.show_page(0)
        self._update_summary()

    # ---- pages ---------------------------------------------------------------------------
    @property
    def pages(self) -> int:
        """Number of pages of ``page_size`` records."""
        return max(1, -(-len(self.record_ids) // self.page_size))

    def show_page(self, page: int) -> None:
        """Show page ``page`` (0-based, clamped). Usage: ``box.show_page(2)``"""
        import ipywidgets as w

        page = min(max(int(page), 0), self.pages - 1)
        self.page = page
        ids = self.record_ids[page * self.page_size:(page + 1) * self.page_size]
        self.checkboxes = {}
        rows: list[w.Widget] = []
        for rid in ids:
            box = w.Checkbox(value=self._included[rid], indent=False, description="",
                             disabled=self.report is not None, layout=w.Layout(width="28px"))
            box.observe(lambda change, rid=rid: self._on_toggle(rid, change["new"]),
                        names="value")
            self.checkboxes[rid] = box
            group = self._changes.iloc[self._rows[rid]]
            action = str(group.iloc[0]["action"])
            head = w.HTML(f"<b>{html.escape(rid)}</b><br><i>{html.escape(action)}</i>",
                          layout=w.Layout(width="190px"))
            table = w.HTML(_CSS + "<table class='svcf-t'>"
                           + _record_rows(group, self._labels) + "</table>")
            rows.append(w.HBox([box, head, table],
                               layout=w.Layout(border_bottom="1px solid #eee")))
        self._table.children = tuple(rows)
        self.prev_button.disabled = page == 0
        self.next_button.disabled = page >= self.pages - 1
        first = page * self.page_size + 1
        self.page_label.value = (f"&nbsp;records {first}–{first + len(ids) - 1} of "
                                 f"{len(self.record_ids)}&nbsp;")

    # ---- state ---------------------------------------------------------------------------
    @property
    def selected(self) -> list[str]:
        """Record ids currently ticked, in plan order."""
        return [rid for rid in self.record_ids if self._included[rid]]

    def include(self, ids: Iterable[str]) -> None:
        """Tick these records. Usage: ``box.include(["abc"])``"""
        self._set(self._known(ids), True)

    def exclude(self, ids: Iterable[str]) -> None:
        """Untick these records. Usage: ``box.exclude(["abc"])``"""
        self._set(self._known(ids), False)

    def _set(self, ids: list[str], value: bool) -> None:
        for rid in ids:
            if self._included[rid] != value:
                self._included[rid] = value
                self._n_included += 1 if value else -1
        self._syncing = True  # the visible boxes follow without re-counting each one
        try:
            for rid in ids:
                box = self.checkboxes.get(rid)
                if box is not None:
                    box.value = value
        finally:
            self._syncing = False
        self._update_summary()

    def _known(self, ids: Iterable[str]) -> list[str]:
        ids = [ids] if isinstance(ids, str) else [str(i) for i in ids]
        unknown = [i for i in ids if i not in self._included]
        if unknown:
            raise UsageError(f"record(s) not in this plan: {', '.join(unknown[:10])}")
        return ids

    def _on_toggle(self, rid: str, value: bool) -> None:
        if self._syncing or self._included[rid] == value:
            return
        self._included[rid] = bool(value)
        self._n_included += 1 if value else -1
        self._update_summary()

    def _update_summary(self) -> None:
        counts = getattr(self.plan, "counts", None)
        by_action = ""
        if isinstance(counts, dict) and counts:
            by_action = " (plan: " + ", ".join(f"{v} {k}" for k, v in counts.items() if v) + ")"
        self.summary.value = (f"&nbsp;{self._n_included} of {len(self.record_ids)} records "
                              f"selected{by_action}")

    # ---- sending -------------------------------------------------------------------------
    def apply(self) -> Any:
        """Send the ticked records and show the report; returns the Report (None when
        nothing was sent). Usage: ``report = box.apply()``"""
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
        try:
            report = write(self.client, self.edited, plan=self.plan.select(ids),
                           **self.write_options)
        except Exception as exc:  # show it in the widget, and re-raise for scripts
            self.apply_button.description = "Apply"
            self.apply_button.disabled = False
            self.output.value = (f"<b style='color:#a33'>Not applied:</b> "
                                 f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}")
            raise
        self.report = report
        self.apply_button.description = "Applied"
        for button in self._disabled:
            button.disabled = True
        for box in self.checkboxes.values():
            box.disabled = True
        self.output.value = report_html(report)
        return report

    # ---- display -------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        return (f"PlanReview({len(self.selected)} of {len(self.record_ids)} records selected"
                + (", applied" if self.report is not None else "") + ")")


def review(plan: Plan, client: Client, edited: Frames | None = None, **write_options: Any
           ) -> PlanReview:
    """Show a plan for review in a notebook; Apply sends only the ticked records.

    ``write_options`` go to ``write_back`` (for example ``on_conflict="overwrite"``,
    ``token=...``).

    Usage: ``review(diff(edited), client)`` (the plan knows the frames it came from)"""
    return PlanReview(plan, client, edited, **write_options)
