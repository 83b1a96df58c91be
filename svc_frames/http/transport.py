"""The transport loop: one pooled session, every request paced, sent, read whole, counted,
its refusals screened and retried by the one policy, its answer decoded or raised typed.

Usage::

    transport = Transport(session, limiter, retries, answers, quota, timeout=30.0,
                          verify=None)
    out = transport.send("GET", url, "object_3", headers=auth.headers(), idempotent=True)
"""

from __future__ import annotations

import collections
import contextlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import requests

from ..errors import OutcomeUnknown, QuotaExceeded, SendDeadlinePassed, ServerError
from .answers import Answers, read_body
from .body import Body, BodyBuffers
from .connections import PacedAdapter, paced_by
from .limiter import RateLimiter
from .quota import QuotaBook
from .retries import RETRY_STATUS, RetryPolicy, is_connect_refused, short_reason

__all__ = ["Transport"]


class Transport:
    """Sends requests for one client: ``request_count`` and ``status_counts`` see them
    all (retries and downloads included)."""

    def __init__(self, session: requests.Session, limiter: RateLimiter,
                 retries: RetryPolicy, answers: Answers, quota: QuotaBook, *,
                 timeout: float, verify: bool | str | None) -> None:
        self.session = session
        self.limiter = limiter
        self.retries = retries
        self.answers = answers
        self.quota = quota
        self.timeout = timeout
        self.verify = verify
        self._count_lock = threading.Lock()
        self._send_by = threading.local()   # .at: this thread's latest send time, or None
        self.request_count = 0
        self.status_counts: collections.Counter[int] = collections.Counter()

    @contextlib.contextmanager
    def send_by(self, deadline: float | None) -> Iterator[None]:
        """Requests of this thread inside the block leave by ``deadline`` or not at all
        (see ``Client.send_by``)."""
        before = getattr(self._send_by, "at", None)
        self._send_by.at = deadline
        try:
            yield
        finally:
            self._send_by.at = before

    def sent(self) -> int:
        """Requests sent so far (read under the count's lock)."""
        with self._count_lock:
            return self.request_count

    def send(self, method: str, url: str, what: str, *, headers: dict[str, str],
             params: Mapping[str, Any] | None = None, json_body: Any = None,
             files: Any = None, idempotent: bool, parse: Callable[[Body], Any] | None,
             resend: Callable[[OutcomeUnknown], bool] | None = None, view: bool = False,
             has_token: bool = False, into: BodyBuffers | None = None) -> Any:
        """The one retry and pacing policy (see ``Client.request``)."""
        retries, answers = self.retries, self.answers
        attempt = 0
        uncertain = False  # an earlier try went unanswered or got a 5xx: it may have landed
        deadline = getattr(self._send_by, "at", None)
        # the pace is asked once the connection is open (connections.py): a handshake
        # after the booking would land the request later than booked
        open_first = isinstance(self.session.get_adapter(url), PacedAdapter)
        while True:
            booked: list[float] = []  # when the pace let it go (the last try, if rebooked)

            def pace(uncertain: bool = uncertain, booked: list[float] = booked) -> None:
                self.limiter.acquire()
                at = self.limiter.now()  # with answered_at: when the service counted it
                if deadline is not None and at > deadline and not uncertain:
                    # the pace held it past its time, and no earlier try may have landed
                    raise SendDeadlinePassed(f"{method} {what}: not sent, the pace held it "
                                             f"{at - deadline:.2f} s past its deadline")
                booked.append(at)

            if not open_first:
                pace()
            with self._count_lock:
                self.request_count += 1
                seq = self.request_count
            sent = False
            try:
                with paced_by(pace) if open_first else contextlib.nullcontext():
                    resp = self.session.request(
                        method, url, params=params, headers=headers,
                        data=json.dumps(json_body) if json_body is not None else None,
                        files=files, timeout=(min(10.0, self.timeout), self.timeout),
                        stream=True, verify=self.verify)
                answered_at = self.limiter.now()  # headers in
                sent_at = booked[-1]
                sent = True
                # the whole body: a cut-off body raises here
                body = read_body(resp, into)
            except SendDeadlinePassed:
                with self._count_lock:
                    self.request_count -= 1  # it never left
                raise
            except (requests.ConnectionError, requests.Timeout,
                    requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.ContentDecodingError) as exc:
                never_sent = isinstance(exc, requests.exceptions.ConnectTimeout) or (
                    not sent and is_connect_refused(exc))
                reason = short_reason(exc)
                uncertain = uncertain or not never_sent
                if not (idempotent or never_sent):
                    unknown = OutcomeUnknown(
                        f"{method} {what}: the connection failed after the request was sent "
                        f"({reason}); it may or may not have been applied")
                    if retries.may_resend(resend, unknown, attempt, method, what, reason):
                        attempt += 1
                        continue
                    raise unknown from None
                retries.raise_if_unreachable(exc, sent, attempt, method, what)
                if attempt >= retries.max_retries:
                    raise ServerError(f"{method} {what}: {reason} (gave up after "
                                      f"{attempt + 1} attempts)") from None
                attempt += 1
                retries.wait(attempt, method, what, reason)
                continue
            self.limiter.observe(resp.headers, sent=sent_at, answered=answered_at)
            self.quota.note(resp.headers, seq)
            status = resp.status_code
            uncertain = uncertain or status >= 500
            with self._count_lock:
                self.status_counts[status] += 1
            if status < 400:
                try:
                    return answers.decode_ok(resp, body, method, what, parse)
                finally:
                    if into is not None and isinstance(body, memoryview):
                        into.give(body)   # parsed: the buffer holds the next body
            assert isinstance(body, bytes)   # an error's body is never buffered
            try:
                status = answers.screen(resp, body, method, what)
            except QuotaExceeded as exc:
                exc.maybe_applied = uncertain   # an earlier try may have landed
                raise
            retryable = status in RETRY_STATUS and (idempotent or status == 429)
            if status == 429:
                # refused before doing anything, so even a POST may be sent again;
                # the hosted limit counts per second of its clock: wait for its next
                # one, and leave more room from now on
                self.limiter.refused(resp.headers, sent=sent_at, answered=answered_at)
            if retryable and attempt < retries.max_retries:
                attempt += 1
                retries.wait(attempt, method, what, f"HTTP {status}")
                continue
            if not idempotent and status >= 500:
                unknown = OutcomeUnknown(
                    f"{method} {what}: HTTP {status} ({answers.message(resp, body)}); the "
                    "request reached the server and may or may not have been applied",
                    status=status)
                if retries.may_resend(resend, unknown, attempt, method, what,
                                      f"HTTP {status}"):
                    attempt += 1
                    continue
                raise unknown
            raise answers.error(resp, body, method, what, view=view, has_token=has_token)
