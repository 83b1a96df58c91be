"""Reviewing a write-back plan in a notebook: the widget (``widget.py``) over a plain
selection state (``selection.py``), drawn with the HTML of ``html.py``; the name shown for
each record comes from ``identifiers.py``.

Named for the activity, as ``refreshing/`` holds ``refresh``: ``svc_frames.review`` stays
the function.
"""

from __future__ import annotations

from .widget import PlanReview, review

__all__ = ["PlanReview", "review"]
