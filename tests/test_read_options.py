"""read/options.py: the options a load settles before its first request."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from svc_frames.errors import UsageError
from svc_frames.read.options import check_columns, user_timezone


def test_columns_are_keys_or_labels() -> None:
    check_columns("keys")
    check_columns("labels")
    with pytest.raises(UsageError, match="'names'"):
        check_columns("names")


def test_a_timezone_is_an_iana_name_or_the_services_display_name() -> None:
    assert user_timezone(None) is None
    chicago = ZoneInfo("America/Chicago")
    assert user_timezone(chicago) is chicago
    assert user_timezone("America/Chicago") == chicago
    assert user_timezone("Central Time (US & Canada)") == chicago
    with pytest.raises(UsageError):
        user_timezone("Nowhere/Special")
