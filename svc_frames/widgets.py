"""The review widget's former home, kept so ``from svc_frames.widgets import ...`` works:
the code lives in ``svc_frames/reviewing/`` (the widget, its selection state, its HTML).

Usage::

    from svc_frames.widgets import review
    plan = diff(edited)
    review(plan, client)              # in a notebook cell: filter, tick, press Apply
"""

from __future__ import annotations

from .reviewing.html import (
    CSS,
    Cell,
    changes_html,
    format_change_value,
    record_html,
    report_html,
    short_id,
)
from .reviewing.identifiers import identifier_field, identifier_texts
from .reviewing.widget import PlanReview, review

__all__ = ["PlanReview", "review", "changes_html", "report_html", "format_change_value",
           "CSS", "Cell", "record_html", "short_id", "identifier_field", "identifier_texts"]
