"""The state of a review, in plain Python: which records of a plan are ticked, which the
filter lets through, the page shown, and what Apply sends.

The widget (``widget.py``) draws this state and forwards its controls' events here; the
state knows nothing of ipywidgets, so it is tested without a front end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from ..errors import UsageError
from ..writeback import Plan
from .html import Cell, change_cells, format_change_value

__all__ = ["Selection"]


class Selection:
    """Ticks, filter and pages over the records of a write-back plan.

    Every record starts ticked; ticks are kept across filters and pages. Records are kept
    in plan order, each with its changes as ``Cell`` tuples (action, field, column, old,
    new).

    Parameters
    ----------
    plan : Plan
        What ``diff`` returned.
    page_size : int, default 50
        Records per page.
    identifiers : mapping, optional
        Record id -> the text of its display field (searched by the filter).
    guard : bool, default True
        ``write_back``'s ``guard``, for the estimate of requests.
    delete_missing : bool, default False
        ``write_back``'s ``delete_missing``, for the estimate of requests.

    Raises
    ------
    UsageError
        ``plan`` is not a Plan, or ``page_size`` is not a positive integer.
    """

    def __init__(self, plan: Plan, *, page_size: int = 50,
                 identifiers: Mapping[str, str] | None = None, guard: bool = True,
                 delete_missing: bool = False) -> None:
        if not isinstance(plan, Plan):
            raise UsageError("review() needs the Plan returned by diff(); got "
                             f"{type(plan).__name__}")
        if not isinstance(page_size, int) or isinstance(page_size, bool) or page_size < 1:
            raise UsageError(f"page_size must be a positive integer, got {page_size!r}")
        self.plan = plan
        self.page_size = page_size
        self.guard = guard
        self.delete_missing = delete_missing
        changes = plan.changes.reset_index(drop=True)
        #: record id -> its changes, in plan order
        self.rows: dict[str, list[Cell]] = {}
        for rid, cell in zip(changes["record_id"].tolist(), change_cells(changes),
                             strict=True):
            self.rows.setdefault(str(rid), []).append(cell)
        #: the plan's records, in plan order
        self.record_ids: list[str] = list(self.rows)
        self._included: dict[str, bool] = dict.fromkeys(self.record_ids, True)
        self._n_included = len(self.record_ids)
        self._identifiers: dict[str, str] = dict(identifiers or {})
        #: the filter's text, as given
        self.filter_text = ""
        #: the records the filter lets through, in plan order
        self.shown: list[str] = list(self.record_ids)
        #: the page shown (0-based) of ``shown``
        self.page = 0
        self._search: list[str] | None = None      # built on the first filter
        self._version = 0                          # bumped by every change of the ticks
        self._estimate: tuple[int, str] = (-1, "")  # (version, requests of the selection)

    # ---- names ---------------------------------------------------------------------------
    @property
    def identifiers(self) -> dict[str, str]:
        """Record id -> the text of its display field."""
        return self._identifiers

    @identifiers.setter
    def identifiers(self, texts: Mapping[str, str]) -> None:
        self._identifiers = dict(texts)
        self._search = None   # the filter searches the names too

    # ---- ticks ---------------------------------------------------------------------------
    @property
    def selected(self) -> list[str]:
        """Record ids currently ticked, in plan order."""
        return [rid for rid in self.record_ids if self._included[rid]]

    @property
    def count(self) -> int:
        """How many records are ticked."""
        return self._n_included

    def is_selected(self, rid: str) -> bool:
        """Whether record ``rid`` is ticked."""
        return self._included[rid]

    def include(self, ids: Iterable[str]) -> None:
        """Tick these records; an id not in the plan is refused (UsageError)."""
        self._set(self._known(ids), True)

    def exclude(self, ids: Iterable[str]) -> None:
        """Untick these records; an id not in the plan is refused (UsageError)."""
        self._set(self._known(ids), False)

    def toggle(self, rid: str, value: bool) -> bool:
        """Tick or untick one record of the plan (a checkbox's click); returns whether
        that changed anything."""
        if self._included[rid] == bool(value):
            return False
        self._set([rid], bool(value))
        return True

    def _set(self, ids: list[str], value: bool) -> None:
        self._version += 1
        for rid in ids:
            if self._included[rid] != value:
                self._included[rid] = value
                self._n_included += 1 if value else -1

    def _known(self, ids: Iterable[str]) -> list[str]:
        ids = [ids] if isinstance(ids, str) else [str(i) for i in ids]
        unknown = [i for i in ids if i not in self._included]
        if unknown:
            raise UsageError(f"record(s) not in this plan: {', '.join(unknown[:10])}")
        return ids

    # ---- filter and pages ----------------------------------------------------------------
    def set_filter(self, text: str) -> None:
        """Let through only the records whose identifier, id or values contain ``text``
        (any case; ``""`` lets every record through), and go back to the first page."""
        self.filter_text = str(text)
        needle = self.filter_text.strip().casefold()
        if not needle:
            self.shown = list(self.record_ids)
        else:
            if self._search is None:
                self._search = self._search_texts()
            self.shown = [rid for rid, hay in zip(self.record_ids, self._search, strict=True)
                          if needle in hay]
        self.page = 0

    def _search_texts(self) -> list[str]:
        """Per record, in plan order: identifier, id and every value, lower-cased (one
        pass over the changes: a plan of 10,000 records is searched at once)."""
        parts: dict[str, list[str]] = {rid: [self._identifiers.get(rid, ""), rid]
                                       for rid in self.record_ids}
        for rid, cells in self.rows.items():
            parts[rid] += [format_change_value(v) for cell in cells for v in cell[3:]]
        return [" ".join(parts[rid]).casefold() for rid in self.record_ids]

    @property
    def pages(self) -> int:
        """Number of pages of ``page_size`` records among those shown (at least 1)."""
        return max(1, -(-len(self.shown) // self.page_size))

    def show_page(self, page: int) -> list[str]:
        """Go to page ``page`` (0-based; a number past either end means the first or the
        last page); returns its record ids."""
        self.page = min(max(int(page), 0), self.pages - 1)
        return self.page_ids

    @property
    def page_ids(self) -> list[str]:
        """The record ids of the page shown, in plan order."""
        return self.shown[self.page * self.page_size:(self.page + 1) * self.page_size]

    # ---- what Apply sends ----------------------------------------------------------------
    def requests(self) -> str:
        """The requests the ticked records need, as ``Plan.estimate_requests`` says;
        computed again only when the ticks changed (not for a filter or a page)."""
        if self._estimate[0] != self._version:
            ids = self.selected
            plan = self.plan
            # the estimate reads actions, payloads, source and base: the changes table
            # (the slow part of Plan.select on a large plan) is not needed for it
            sub = dataclasses.replace(plan, changes=plan.changes.iloc[:0],
                                      actions={i: plan.actions[i] for i in ids},
                                      payloads={i: plan.payloads[i] for i in ids
                                                if i in plan.payloads})
            need = sub.estimate_requests(guard=self.guard,
                                         delete_missing=self.delete_missing)
            self._estimate = (self._version, str(need))
        return self._estimate[1]

    def to_send(self) -> Plan | None:
        """The plan restricted to the ticked records (``plan.select``): what Apply
        sends; None when nothing is ticked."""
        ids = self.selected
        return self.plan.select(ids) if ids else None
