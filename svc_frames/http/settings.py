"""The client's settings checked at construction: ConfigurationError (a UsageError)
naming the first one that is missing or out of range, before any request.

Usage: ``check_settings(app_id="...", base_url="http://...", max_workers=12, timeout=30.0,
max_retries=5, rate_limit=10.0, backoff=0.25, verify=None)``
"""

from __future__ import annotations

import math
import os
from typing import Any

from ..errors import ConfigurationError, UsageError
from .limiter import check_rate

__all__ = ["check_settings"]


def check_settings(*, app_id: Any, base_url: Any, max_workers: Any, timeout: Any,
                   max_retries: Any, rate_limit: Any, backoff: Any, verify: Any) -> None:
    """ConfigurationError naming the first client setting missing or out of range."""
    if not app_id or not isinstance(app_id, str):
        raise ConfigurationError("app_id is required (or SVC_APP_ID in the environment)")
    if not base_url:
        raise ConfigurationError("base_url is required (or SVC_BASE_URL in the environment)")
    if not str(base_url).startswith(("http://", "https://")):
        raise ConfigurationError(f"base_url must start with http:// or https://: {base_url!r}")
    if max_workers < 1:
        raise ConfigurationError(f"max_workers must be >= 1, got {max_workers}")
    _check_numbers(timeout=timeout, max_retries=max_retries, rate_limit=rate_limit,
                   backoff=backoff)
    if verify is not None and not isinstance(verify, (bool, str)):
        raise ConfigurationError(f"verify must be True, False or a file path, got "
                                 f"{verify!r}")
    if isinstance(verify, str) and not os.path.isfile(verify):
        raise ConfigurationError(f"verify must be True, False or the path of a file of "
                                 f"certificate authorities; no such file: {verify!r}")


def _check_numbers(*, timeout: Any, max_retries: Any, rate_limit: Any,
                   backoff: Any) -> None:
    """ConfigurationError naming the first client setting out of range."""
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    if not number(timeout) or timeout <= 0:
        raise ConfigurationError(f"timeout must be a number of seconds > 0, got {timeout!r}")
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ConfigurationError(f"max_retries must be an integer >= 0, got {max_retries!r}")
    try:
        check_rate(rate_limit)
    except UsageError as exc:
        raise ConfigurationError(str(exc), field="rate_limit") from None
    if not number(backoff) or backoff < 0:
        raise ConfigurationError(f"backoff must be a number of seconds >= 0, got {backoff!r}")
