"""The options every load and export settles before its first request: how columns are
named and which are loaded (``Columns``, ``check_columns``, ``naming``) and the timezone
the caller asked for (``user_timezone``).

Usage: ``check_columns(["Title", "Status"]); naming("keys"); tz = user_timezone("UTC")``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal
from zoneinfo import ZoneInfo

from ..errors import UsageError
from ..kinds import resolve_timezone

Naming = Literal["keys", "labels"]
"""How frame columns are named: by field label (``Status``, the default) or field key."""

Columns = Naming | Sequence[str]
"""``columns=`` of a load: a naming, or the fields to load (by label or key; named by
label)."""


def check_columns(columns: object) -> None:
    """Refuse a ``columns=`` other than "keys", "labels" or a list of field names (before
    any request).

    Usage: ``check_columns(columns)``"""
    if columns in ("keys", "labels"):
        return
    if isinstance(columns, (list, tuple)) and columns and all(
            isinstance(c, str) and c.strip() for c in columns):
        seen = [c for i, c in enumerate(columns) if c in columns[:i]]
        if seen:
            raise UsageError(f"columns lists {seen[0]!r} twice")
        return
    raise UsageError("columns must be 'labels', 'keys' or a non-empty list of fields (by "
                     f"label or key), got {columns!r}")


def naming(columns: Columns) -> Naming:
    """How a ``columns=`` names the frame's columns: a list of fields names them by label.

    Usage: ``naming(["Title"])  # "labels"``"""
    return columns if isinstance(columns, str) and columns in ("keys", "labels") \
        else "labels"  # type: ignore[return-value]


def subset(columns: Columns) -> list[str] | None:
    """The fields a ``columns=`` list names (None: every field).

    Usage: ``subset(["Title", "field_27"])``"""
    return None if isinstance(columns, str) else list(columns)


def user_timezone(timezone: str | ZoneInfo | None) -> ZoneInfo | None:
    """A user-given timezone (IANA or the service's display name), checked before paging.

    Usage: ``user_timezone("America/Chicago")``"""
    if timezone is None or isinstance(timezone, ZoneInfo):
        return timezone
    return resolve_timezone(timezone)
