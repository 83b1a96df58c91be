"""What a client has counted and learned, read off the parts it composes: requests sent,
retries, answers by status (``transport.py``, ``retries.py``), the pace (``limiter.py``)
and the daily quota (``quota.py``). ``Meters`` is a base of ``HttpClient``; it holds no
state of its own."""

from __future__ import annotations

from collections.abc import Mapping

from .limiter import PaceState, RateLimiter
from .quota import Quota, QuotaBook
from .retries import RetryPolicy
from .transport import Transport

__all__ = ["Meters"]


class Meters:
    """Counts, pace and quota as properties over the client's transport, retry policy,
    limiter and quota book (which ``HttpClient`` sets)."""

    transport: Transport
    retries: RetryPolicy
    limiter: RateLimiter
    quota_book: QuotaBook

    @property
    def pace(self) -> PaceState:
        """What this client's pacing believes now (a ``PaceState``).

        Its rate, window and margin, the learned offset of the service's clock from ours,
        and the file it shares with other processes.

        Examples
        --------
        >>> client.pace.rate
        0.0
        """
        return self.limiter.state

    @property
    def request_count(self) -> int:
        """Requests sent, retries and downloads included.

        Examples
        --------
        >>> before = client.request_count
        >>> _ = client.request("GET", "/v1/objects/object_3/records",
        ...                    params={"rows_per_page": 1})
        >>> client.request_count - before
        1
        """
        return self.transport.request_count

    @property
    def retry_count(self) -> int:
        """Retries sent (a resend verified absent included).

        Examples
        --------
        >>> client.retry_count
        0
        """
        return self.retries.count

    @property
    def status_counts(self) -> Mapping[int, int]:
        """How many answers came with each HTTP status (a ``collections.Counter``).

        Examples
        --------
        >>> _ = client.request("GET", "/v1/objects/object_3/records",
        ...                    params={"rows_per_page": 1})
        >>> client.status_counts[200] > 0
        True
        """
        return self.transport.status_counts

    @property
    def quota(self) -> Quota | None:
        """The daily quota as the last answer with ``X-PlanLimit-*`` headers gave it, or None.

        A ``Quota`` (``limit``, ``remaining``, ``reset_at``) from the latest-sent request so
        answered; None before any such answer.

        Examples
        --------
        >>> _ = client.get_page("object_3", rows_per_page=1)
        >>> client.quota.limit
        25000
        """
        return self.quota_book.quota

    def quota_left(self) -> int | None:
        """Requests surely left of the daily quota, or None when it is not known.

        The last reported ``remaining`` less the requests this client sent after that
        answer's request (they may have been counted since).

        Returns
        -------
        int or None
            None when no answer gave the quota, or its reset time has passed (a new quota
            day: the next answer tells).

        Examples
        --------
        >>> client.quota_left() is None
        True
        >>> _ = client.get_page("object_3", rows_per_page=1)
        >>> 0 < client.quota_left() <= client.quota.limit
        True
        """
        return self.quota_book.left(self.transport.sent())
