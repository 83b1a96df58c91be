"""The one retry policy: which failures are tried again, the jittered exponential backoff
between tries, a POST sent again only when the caller's check says it surely did not
arrive, and a service that cannot be reached said quickly (``ServiceUnreachable``).

Usage::

    policy = RetryPolicy(max_retries=5, backoff=0.25, base_url=url, connect_timeout=10)
    policy.wait(attempt, "GET", "object_3", "HTTP 503")   # counted in policy.count
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import requests
import urllib3

from ..errors import OutcomeUnknown, ServiceUnreachable

log = logging.getLogger(__name__)

__all__ = ["RETRY_STATUS", "UNREACHABLE_RETRIES", "RetryPolicy", "is_connect_refused",
           "short_reason"]

# 500 too: for an idempotent request a repeat is harmless, and a hosted 500 is often
# transient; a POST is never repeated after any 5xx (see Transport.send).
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

UNREACHABLE_RETRIES = 2
"""Tries after the first before a service that cannot be reached raises
ServiceUnreachable (a restarting service gets a moment; a wrong address is said quickly)."""

_UNTRUSTED = "its TLS certificate is not trusted"


class RetryPolicy:
    """How often and how long to try again; ``count`` is every retry sent."""

    def __init__(self, *, max_retries: int, backoff: float, base_url: str,
                 connect_timeout: float) -> None:
        self.max_retries = max_retries
        self.backoff = backoff
        self.base_url = base_url
        self.connect_timeout = connect_timeout
        self.count = 0
        self._lock = threading.Lock()

    def delay(self, attempt: int) -> float:
        """The backoff before try ``attempt`` (1: the first retry), jittered."""
        return min(8.0, self.backoff * (2.0 ** (attempt - 1))) * (0.5 + random.random() / 2)

    def wait(self, attempt: int, method: str, what: str, reason: str) -> None:
        """Count retry ``attempt`` and sleep its backoff."""
        with self._lock:
            self.count += 1
        delay = self.delay(attempt)
        log.info("retry %d of %s %s after %s in %.2fs", attempt, method, what, reason, delay)
        time.sleep(delay)

    def may_resend(self, resend: Callable[[OutcomeUnknown], bool] | None,
                   unknown: OutcomeUnknown, attempt: int, method: str, what: str,
                   reason: str) -> bool:
        """After an unknown outcome: wait the backoff (a slow commit lands meanwhile), then
        ask ``resend`` whether the request surely did not arrive."""
        if resend is None or attempt >= self.max_retries:
            return False
        time.sleep(self.delay(attempt + 1))
        if not resend(unknown):
            return False
        with self._lock:
            self.count += 1
        log.info("resend %d of %s %s after %s (verified not applied)", attempt + 1, method,
                 what, reason)
        return True

    def raise_if_unreachable(self, exc: Exception, sent: bool, attempt: int, method: str,
                             what: str) -> None:
        """ServiceUnreachable once a connection that never opened has been tried
        ``UNREACHABLE_RETRIES`` more times (or ``max_retries``, when fewer)."""
        if sent:
            return
        reason = _unreachable_reason(exc, self.connect_timeout)
        if reason is None:
            return
        # a certificate that is not trusted will not be trusted on the next try either
        if (attempt < min(self.max_retries, UNREACHABLE_RETRIES)
                and not reason.startswith(_UNTRUSTED)):
            return
        raise ServiceUnreachable(
            f"{method} {what}: the service at {self.base_url} cannot be reached: {reason} "
            f"(tried {attempt + 1} time{'s' if attempt else ''}); check the base URL and the "
            f"network") from None


def _unreachable_reason(exc: Exception, connect_timeout: float) -> str | None:
    """Why no connection could be opened (refused, unknown host, none within the connect
    timeout), or None when the failure is of another kind."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return f"no connection within {connect_timeout:g} s"
    if isinstance(exc, requests.exceptions.SSLError) and "CERTIFICATE_VERIFY_FAILED" in str(exc):
        detail = str(exc).split("certificate verify failed: ", 1)[-1].split(" (_ssl", 1)[0]
        return (f"{_UNTRUSTED} ({detail}); give the client verify= the file of the "
                f"authority that signed it")
    if not isinstance(exc, requests.exceptions.ConnectionError):
        return None
    reason: Any = exc.args[0] if exc.args else None
    reason = getattr(reason, "reason", reason)  # urllib3's MaxRetryError wraps the cause
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "the host name was not found (DNS)"
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        text = str(reason)
        if "refused" in text.lower():
            return "connection refused (nothing listens on that port)"
        return f"no connection ({text.split(': ', 1)[-1]})"
    return None


def is_connect_refused(exc: Exception) -> bool:
    """A connection that was never opened (nothing reached the server)."""
    text = repr(exc)
    return "NewConnectionError" in text or "Connection refused" in text


def short_reason(exc: Exception) -> str:
    """What went wrong with a connection, whole (the innermost cause, not urllib3's
    wrapper text)."""
    name = type(exc).__name__
    text = str(exc)
    if "IncompleteRead" in text or isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return f"{name}: the answer was cut off mid-body"
    cause: Any = exc.args[0] if exc.args else None
    cause = getattr(cause, "reason", None)  # MaxRetryError -> the urllib3 error
    return f"{name}: {cause if cause is not None else text}"
