"""The options every load and export settles before its first request: how columns are
named (``Columns``, ``check_columns``) and the timezone the caller asked for
(``user_timezone``).

Usage: ``check_columns("labels"); tz = user_timezone("America/Chicago")``
"""

from __future__ import annotations

from typing import Literal
from zoneinfo import ZoneInfo

from ..errors import UsageError
from ..kinds import resolve_timezone

Columns = Literal["keys", "labels"]
"""How frame columns are named: by field key (``field_N``, the default) or field label."""


def check_columns(columns: str) -> None:
    """Refuse a ``columns=`` other than "keys" or "labels" (before any request).

    Usage: ``check_columns(columns)``"""
    if columns not in ("keys", "labels"):
        raise UsageError(f"columns must be 'keys' or 'labels', got {columns!r}")


def user_timezone(timezone: str | ZoneInfo | None) -> ZoneInfo | None:
    """A user-given timezone (IANA or the service's display name), checked before paging.

    Usage: ``user_timezone("America/Chicago")``"""
    if timezone is None or isinstance(timezone, ZoneInfo):
        return timezone
    return resolve_timezone(timezone)
