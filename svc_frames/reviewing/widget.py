"""The review widget: review a write-back plan record by record, then apply only what you keep.

Each record is a row of its own height in a bounded, scrolling list: a checkbox, the
record's identifier (the object's display field) with its id, the action, and a table of
its changes (field, value as loaded, new value). A filter box narrows the list; All / None
act on what is shown; the count of ticked records and the requests they need stay in view.
**Apply** sends only the ticked records, through ``write_back`` with ``plan.select(ids)``:
its progress bar and then the report appear inside the widget (an ``Output`` captures
them, so nothing goes to JupyterLab's log console). It sends nothing twice: after a run
the button is disabled.

Usage::

    from svc_frames import review
    plan = diff(edited)
    review(plan, client)              # in a notebook cell: filter, tick, press Apply

The widget draws a ``Selection`` (``selection.py``: ticks, filter, pages, what Apply
sends) with the HTML of ``html.py``; it holds the controls and the sending.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from html import escape
from typing import Any

from ..errors import UsageError
from ..frames import Frames
from ..records import Client
from ..writeback import Plan, write_back
from .html import CSS, error_html, field_labels, record_html, report_html
from .identifiers import identifier_field, identifier_texts
from .selection import Selection

__all__ = ["PlanReview", "review"]


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

        #: ticks, filter, pages and what Apply sends (checks ``plan`` and ``page_size``)
        self.selection = Selection(
            plan, page_size=page_size, guard=bool(write_options.get("guard", True)),
            delete_missing=bool(write_options.get("delete_missing", False)))
        self.plan = plan
        self.client = client
        found = edited if edited is not None else plan.edited
        if found is None:
            raise UsageError("review() needs the edited frames: pass edited= (the plan was "
                             "built without them)")
        self.edited: Frames = found
        self.write_options = write_options
        self._write = write
        self.report: Any = None
        #: the exception the last Apply raised (shown in the widget); ``reraise()`` raises it
        self.error: BaseException | None = None
        self._labels = field_labels(plan, self.edited)
        key = identifier or identifier_field(client, plan.source)
        self.selection.identifiers = identifier_texts(plan, self.edited, key)
        self._syncing = False
        self._slots: list[tuple[Any, Any, Any]] = []   # (row, checkbox, html), reused
        self._slot_ids: list[str] = []

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
        return self.selection.pages

    @property
    def page_size(self) -> int:
        """Records per page.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> PlanReview(diff(orders), client, page_size=2).page_size
        2
        """
        return self.selection.page_size

    @property
    def page(self) -> int:
        """The page shown, from 0 (``show_page`` changes it).

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client, page_size=2)
        >>> box.show_page(1)
        >>> box.page
        1
        """
        return self.selection.page

    @property
    def record_ids(self) -> list[str]:
        """The plan's records, in plan order.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> PlanReview(diff(orders), client).record_ids == list(ids)
        True
        """
        return self.selection.record_ids

    @property
    def shown(self) -> list[str]:
        """The records the filter lets through, in plan order.

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> box.set_filter("roof")
        >>> box.shown == [ids[2]]
        True
        """
        return self.selection.shown

    @property
    def identifiers(self) -> dict[str, str]:
        """Record id -> the text of its display field (a new record's as edited).

        Examples
        --------
        >>> orders = read_object(client, "Work Orders")
        >>> ids = orders.main.index[:3]
        >>> orders.main.loc[ids, "Title"] = ["Fix the door", "Fix the gate", "Fix the roof"]
        >>> box = PlanReview(diff(orders), client)
        >>> set(box.identifiers) == set(ids)
        True
        """
        return self.selection.identifiers

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
        ids = self.selection.show_page(page)
        page = self.selection.page
        self._slot_ids = []   # no toggles are taken while the slots change records
        rows = []
        for i, rid in enumerate(ids):
            row, box, text = self._slot(i)
            group = self.selection.rows[rid]
            action = group[0][0]
            self._syncing = True
            try:
                box.value = self.selection.is_selected(rid)
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
        self.selection.set_filter(text)
        self.show_page(0)
        self._update_summary()

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
        return self.selection.selected

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
        self.selection.include(ids)
        self._sync_boxes()

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
        self.selection.exclude(ids)
        self._sync_boxes()

    def _sync_boxes(self) -> None:
        self._syncing = True  # the visible boxes follow without re-counting each one
        try:
            for i, rid in enumerate(self._slot_ids):
                self._slots[i][1].value = self.selection.is_selected(rid)
        finally:
            self._syncing = False
        self._update_summary()

    def _on_toggle(self, slot: int, value: bool) -> None:
        if self._syncing or slot >= len(self._slot_ids):
            return
        if self.selection.toggle(self._slot_ids[slot], value):
            self._update_summary()

    def _update_summary(self) -> None:
        n = self.selection.count
        text = f"<b>{n}</b> of {len(self.record_ids)} records selected"
        if n:
            text += f" · Apply sends at most {escape(self.selection.requests())}"
        if len(self.shown) != len(self.record_ids):
            text += f" · {len(self.shown)} shown by the filter"
        self.summary.value = "&nbsp;" + text

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
        send = self.selection.to_send()
        if send is None:
            self.output.value = "<b>Nothing selected:</b> nothing was sent."
            return None
        n = self.selection.count
        write = self._write or write_back
        self.apply_button.disabled = True
        self.apply_button.description = "Sending…"
        self.error = None
        self.output.value = f"Sending {n} record{'s' if n != 1 else ''}…"
        self.progress.clear_output()
        error: Exception | None = None
        # the Output takes write_back's progress bar and printed summary: they appear in
        # the widget, not in the log console, even when the run started from a click
        with self.progress:
            try:
                report = write(self.client, self.edited, plan=send,
                               **self.write_options)
            except Exception as exc:   # noqa: BLE001 - shown, kept, and raised below
                error = exc
        if error is not None:
            self.error = error
            self.apply_button.description = "Apply"
            self.apply_button.disabled = False
            self.output.value = error_html(error)
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
