"""The daily request quota as the service reports it (``X-PlanLimit-*``,
docs/hosted-behaviour.md §4): the latest-sent request's answer wins, and what is surely
left counts the requests sent since.

Usage::

    book = QuotaBook()
    book.note(resp.headers, seq)     # seq: the request's number in the client's count
    book.quota, book.left(sent)      # sent: requests the client has sent so far
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Quota", "QuotaBook", "quota_of"]


@dataclass(frozen=True)
class Quota:
    """The application's daily request quota as the service last reported it
    (``X-PlanLimit-Limit``, ``-Remaining``, ``-Reset``).

    Usage: ``q = client.quota; q.remaining if q else None``"""

    limit: int
    remaining: int
    reset_at: dt.datetime
    """When the quota resets (aware, UTC)."""


def quota_of(headers: Mapping[str, str]) -> Quota | None:
    """The Quota of ``X-PlanLimit-Limit/-Remaining/-Reset`` (ms until the reset), or None
    when they are missing or not numbers (headers are advisory)."""
    try:
        limit = int(float(headers["X-PlanLimit-Limit"]))
        remaining = int(float(headers["X-PlanLimit-Remaining"]))
        reset_ms = float(headers["X-PlanLimit-Reset"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(reset_ms) and 0 <= reset_ms <= 8 * 86_400_000):
        return None  # a bogus reset: not a time the quota could mean
    reset_at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(milliseconds=reset_ms)
    return Quota(limit=limit, remaining=max(remaining, 0), reset_at=reset_at)


class QuotaBook:
    """The quota of the latest-sent request answered, and the number of that request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.quota: Quota | None = None
        self._seq = 0  # the number of the request whose answer set ``quota``

    def note(self, headers: Mapping[str, str], seq: int) -> None:
        """Keep the ``X-PlanLimit-*`` of an answer when its request is the latest-sent one
        answered (answers of parallel requests arrive out of order; a new quota day shows
        as a higher remaining, so the latest wins rather than the lowest)."""
        quota = quota_of(headers)
        if quota is None:
            return
        with self._lock:
            if seq >= self._seq:
                self.quota, self._seq = quota, seq

    def left(self, sent: int) -> int | None:
        """The last ``remaining`` less the requests sent after that answer's request
        (``sent``: the client's count now); None when unknown or past its reset."""
        with self._lock:
            if self.quota is None or self.quota.reset_at <= dt.datetime.now(dt.timezone.utc):
                return None
            return max(0, self.quota.remaining - (sent - self._seq))
