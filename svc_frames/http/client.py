"""The HTTP client: headers, one pooled session, client-side pacing, retries, typed errors.

Usage::

    client = Client("app_id", api_key="...", base_url="http://127.0.0.1:8000")
    client = Client.from_env()              # SVC_APP_ID, SVC_API_KEY, SVC_BASE_URL, ...
    client.login("ann@example.org", "secret")   # token for views behind a login
    page = client.get_page("object_1", page=1, rows_per_page=1000)
    page = client.get_page(("scene_1", "view_2"))

Object requests send the application id and the API key; view requests send the literal
``service`` as key plus the user token in ``Authorization`` (docs/service-interface.md §5).
A user token lasts 48 hours (docs/hosted-behaviour.md §5): a client that logged in itself
keeps the e-mail and password in memory and, when a view request is refused for an
expired token, logs in again once and repeats the request once (never after a refused
login); otherwise Forbidden says the token expired and how to renew it.
GET, PUT and DELETE are retried with backoff on 429, 502/503/504 and dropped connections;
a POST is only retried when it surely did not reach the server (refused by the rate limit,
the connection never opened, or the caller's ``resend`` check verified it absent), otherwise
:class:`OutcomeUnknown` is raised. Every request of the package goes through this one
policy (``request``; ``get_bytes`` for asset downloads), so ``retry_count`` and
``status_counts`` see them all.
The API key, the token and the password never appear in a repr, a log line or an error
message.

Limits (docs/hosted-behaviour.md §4): every answer's ``X-RateLimit-*`` headers pace the
client, its ``X-PlanLimit-*`` headers give ``client.quota`` (the daily quota), and
``Retry-After`` is honoured (up to ``MAX_RETRY_AFTER`` seconds). A 403 whose body says
it is throttling is retried like a 429; a 429 ``Daily limit exceeded`` raises
:class:`QuotaExceeded` at once (nothing can succeed before the reset). A service that
cannot be reached (refused, unknown host, no connection in time) raises
:class:`ServiceUnreachable` naming the base URL after a few quick tries.
"""

from __future__ import annotations

import collections
import datetime as dt
import email.utils
import html
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests
import urllib3
from requests.adapters import HTTPAdapter

from ..errors import (
    AuthenticationError,
    ConfigurationError,
    Forbidden,
    NotFound,
    OutcomeUnknown,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    ServerError,
    ServiceError,
    ServiceUnreachable,
    UsageError,
    ValidationError,
)
from ..keys import FIELD_KEY, Target, parse_target
from ..query import Filters, Query
from .body import parse_json
from .limiter import PaceState, check_rate, shared_limiter

log = logging.getLogger(__name__)




MAX_ROWS_PER_PAGE = 1000


# 500 too: for an idempotent request a repeat is harmless, and a hosted 500 is often
# transient; a POST is never repeated after any 5xx (see request()).
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


MAX_RETRY_AFTER = 60.0
"""Longest ``Retry-After`` (seconds) waited for in a run; a longer one raises RateLimited
at once (carrying ``retry_after``) rather than holding the caller for minutes."""


UNREACHABLE_RETRIES = 2
"""Tries after the first before a service that cannot be reached raises
ServiceUnreachable (a restarting service gets a moment; a wrong address is said quickly)."""


_DAILY_RE = re.compile(r"daily|plan limit|quota", re.I)


_THROTTLE_RE = re.compile(r"throttl|rate limit|too many requests", re.I)


_EXPIRED_HINT = (" (the user token expired (a token lasts 48 hours, two weeks with \"remember "
                 "me\") or is not a token of this application: log in again with "
                 "client.login(email, password) or pass a new token=; a client that logged "
                 "in itself renews it on its own)")
"""Ends the Forbidden of a view request whose token the service refused (by the server's
own words), which ``request`` renews when it holds the credentials."""


@dataclass(frozen=True)
class Quota:
    """The application's daily request quota as the service last reported it
    (``X-PlanLimit-Limit``, ``-Remaining``, ``-Reset``).

    Usage: ``q = client.quota; q.remaining if q else None``"""

    limit: int
    remaining: int
    reset_at: dt.datetime
    """When the quota resets (aware, UTC)."""




class Client:
    """A connection to one application of the service (see module docstring).

    Usage: ``Client(app_id, api_key=key, base_url=url).get_page("object_1")``"""

    def __init__(self, app_id: str, api_key: str | None = None, base_url: str | None = None,
                 token: str | None = None, rate_limit: float = 10.0, timeout: float = 30.0,
                 max_retries: int = 5, *, max_workers: int = 12, backoff: float = 0.25,
                 use_schema: bool = True, session: requests.Session | None = None) -> None:
        if not app_id or not isinstance(app_id, str):
            raise ConfigurationError("app_id is required (or SVC_APP_ID in the environment)")
        if not base_url:
            raise ConfigurationError("base_url is required (or SVC_BASE_URL in the environment)")
        if not str(base_url).startswith(("http://", "https://")):
            raise ConfigurationError(f"base_url must start with http:// or https://: {base_url!r}")
        if max_workers < 1:
            raise ConfigurationError(f"max_workers must be >= 1, got {max_workers}")
        _check_settings(timeout=timeout, max_retries=max_retries, rate_limit=rate_limit,
                        backoff=backoff)
        self.app_id = app_id
        self.base_url = str(base_url).rstrip("/")
        self._api_key = api_key
        self._token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_workers = max_workers
        self.limiter = shared_limiter(self.base_url, app_id, rate_limit)
        self.session = session or requests.Session()
        # pool sized for the paging threads, so no connection is thrown away under load
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=max(max_workers, 4),
                              max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self._count_lock = threading.Lock()
        self.request_count = 0
        self.retry_count = 0
        self.status_counts: collections.Counter[int] = collections.Counter()
        self._quota: Quota | None = None
        self._quota_seq = 0  # request_count of the request whose answer set _quota
        self._schema: dict[str, Any] | None = None
        # use_schema=False: never ask for the schema (a deployment that hides it); kinds
        # are then inferred from the record shapes
        self._schema_loaded = not use_schema
        self.user: dict[str, Any] | None = None
        # the e-mail and password of the last successful login, in memory only: an expired
        # token is renewed with them (``_renew_token``); never shown in a repr, log or error
        self._credentials: tuple[str, str] | None = None
        self._renew_lock = threading.Lock()
        self._replaced_tokens: set[str] = set()  # tokens renewed: the current one stands in

    # ---- construction / secrets ----------------------------------------------------------
    @classmethod
    def from_env(cls, **overrides: Any) -> Client:
        """A client from SVC_APP_ID, SVC_API_KEY, SVC_BASE_URL and optional SVC_TOKEN, or a
        login with SVC_EMAIL + SVC_PASSWORD. Keyword arguments win over the environment.

        Usage: ``client = Client.from_env(rate_limit=5)``"""
        env = os.environ
        kwargs: dict[str, Any] = {
            "app_id": env.get("SVC_APP_ID"), "api_key": env.get("SVC_API_KEY"),
            "base_url": env.get("SVC_BASE_URL"), "token": env.get("SVC_TOKEN") or None}
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        client = cls(**kwargs)
        email, password = env.get("SVC_EMAIL"), env.get("SVC_PASSWORD")
        if client.token is None and email and password:
            client.login(email, password)
        return client

    @property
    def token(self) -> str | None:
        return self._token

    @token.setter
    def token(self, value: str | None) -> None:
        self._token = value
        self._credentials = None  # a token set by hand is not renewed with an older login

    @property
    def pace(self) -> PaceState:
        """What this client's pacing believes now: rate, window, margin, the learned
        offset of the service's clock from ours, the file shared with other processes.

        Returns
        -------
        PaceState

        Examples
        --------
        >>> client.pace.service_offset  # doctest: +SKIP
        -0.298
        """
        return self.limiter.state

    @property
    def has_api_key(self) -> bool:
        return bool(self._api_key)

    def __repr__(self) -> str:
        return (f"Client(app_id={self.app_id!r}, base_url={self.base_url!r}, "
                f"api_key={'***' if self._api_key else None}, "
                f"token={'***' if self._token else None}, rate_limit={self.limiter.rate})")

    def _redact(self, text: str) -> str:
        password = self._credentials[1] if self._credentials else None
        for secret in (self._api_key, self._token, password, *self._replaced_tokens):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
        return text

    # ---- headers -------------------------------------------------------------------------
    def headers(self, *, view: bool = False, token: str | None = None,
                key_required: bool = True, bare: bool = False) -> dict[str, str]:
        """The header set of docs/service-interface.md §5 (object: app id + key; view: app id,
        the literal ``service`` and ``Authorization`` when a token is known; ``bare``: none,
        as the login request of 4.5)."""
        if bare:
            return {}
        out = {"X-Service-Application-Id": self.app_id}
        if view:
            out["X-Service-REST-API-KEY"] = "service"
            tok = token or self._token
            if tok:
                out["Authorization"] = tok
        elif self._api_key:
            out["X-Service-REST-API-KEY"] = self._api_key
        elif key_required:
            raise ConfigurationError(
                "object requests need the API key: Client(api_key=...) or SVC_API_KEY")
        return out

    # ---- the one request function ------------------------------------------------------
    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json_body: Any = None, files: Any = None, view: bool = False,
                token: str | None = None, key_required: bool = True,
                idempotent: bool | None = None, what: str = "", bare: bool = False,
                extra_headers: Mapping[str, str] | None = None,
                parse: Callable[[bytes], Any] | None = None,
                resend: Callable[[OutcomeUnknown], bool] | None = None) -> Any:
        """Send one paced request with retries; return the decoded JSON body (``parse``
        decodes a successful body instead of the plain JSON parser).

        ``what`` names the target in error messages (``"object_3"``, ``"scene_1/view_2"``).
        ``resend``: for a request that is not idempotent (a POST), asked after the backoff
        whenever its outcome is unknown (sent, no answer or a 5xx): True when it surely
        did not arrive (e.g. looked up and verified absent), so sending it again cannot
        duplicate it; the retry then counts against ``max_retries`` like any other.
        Without it (or once it says False) :class:`OutcomeUnknown` is raised.
        Usage: ``client.request("GET", "/v1/objects/object_1/records", params={"page": 1})``"""
        method = method.upper()
        if idempotent is None:
            idempotent = method in ("GET", "PUT", "DELETE", "HEAD")

        def send(tok: str | None) -> Any:
            headers = self.headers(view=view, token=tok, key_required=key_required,
                                   bare=bare)
            if json_body is not None:
                headers["Content-Type"] = "application/json"
            if extra_headers:
                headers.update(extra_headers)
            return self._send(method, self.base_url + path, what or path, headers=headers,
                              params=params, json_body=json_body, files=files,
                              idempotent=idempotent, parse=parse, resend=resend, view=view,
                              token=tok)

        if token is not None and token in self._replaced_tokens:
            token = self._token  # renewed by this client (a write run holds the old one)
        sent_with = token or self._token
        try:
            return send(token)
        except Forbidden as exc:
            # an expired token is refused before anything is done, so even a POST may be
            # sent again, once, with a renewed one; only the client's own token is renewed
            own = token is None or token == self._token or token in self._replaced_tokens
            if not (view and sent_with and own and self._credentials
                    and exc.message.endswith(_EXPIRED_HINT)):
                raise
            self._renew_token(sent_with, what or path)
        return send(None if token is None else self._token)

    def _renew_token(self, expired: str, what: str) -> None:
        """Log in again with the kept credentials, unless another thread already replaced
        the ``expired`` token. A refused login (the password changed) forgets them and
        raises AuthenticationError: it is never tried again with the same password."""
        with self._renew_lock:
            if self._token != expired or self._credentials is None:
                return
            email, password = self._credentials
            log.info("the user token expired (%s): logging in again", what)
            try:
                self.login(email, password)
                self._replaced_tokens.add(expired)
            except AuthenticationError as exc:
                self._credentials = None
                raise AuthenticationError(
                    f"{what}: the user token expired and logging in again with the kept "
                    f"e-mail and password was refused ({exc.message}): call "
                    "client.login(email, password) with the current password",
                    status=exc.status, body=exc.body) from None

    def get_bytes(self, url: str, *, what: str = "") -> bytes:
        """The body of a GET as bytes (an asset download), paced and retried like every
        request. ``url`` is absolute or a path on the service; only the application id is
        sent (an asset URL may point to another host: the key and token never leave).

        Usage: ``client.get_bytes(asset["url"])``"""
        if url.startswith("/"):
            url = self.base_url + url
        out = self._send("GET", url, what or url,
                         headers={"X-Service-Application-Id": self.app_id},
                         idempotent=True, parse=bytes)
        return out if isinstance(out, bytes) else b""

    def _send(self, method: str, url: str, what: str, *, headers: dict[str, str],
              params: Mapping[str, Any] | None = None, json_body: Any = None,
              files: Any = None, idempotent: bool, parse: Callable[[bytes], Any] | None,
              resend: Callable[[OutcomeUnknown], bool] | None = None, view: bool = False,
              token: str | None = None) -> Any:
        """The one retry and pacing policy (see ``request``)."""
        attempt = 0
        uncertain = False  # an earlier try went unanswered or got a 5xx: it may have landed
        while True:
            self.limiter.acquire()
            sent_at = self.limiter.now()  # with answered_at: when the service counted it
            with self._count_lock:
                self.request_count += 1
                seq = self.request_count
            sent = False
            try:
                resp = self.session.request(
                    method, url, params=params, headers=headers,
                    data=json.dumps(json_body) if json_body is not None else None,
                    files=files, timeout=(min(10.0, self.timeout), self.timeout), stream=True)
                answered_at = self.limiter.now()  # headers in
                sent = True
                body = _read_body(resp)  # the whole body: a cut-off body raises here
            except (requests.ConnectionError, requests.Timeout,
                    requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.ContentDecodingError) as exc:
                never_sent = isinstance(exc, requests.exceptions.ConnectTimeout) or (
                    not sent and _is_connect_refused(exc))
                reason = _short_reason(exc)
                uncertain = uncertain or not never_sent
                if not (idempotent or never_sent):
                    unknown = OutcomeUnknown(
                        f"{method} {what}: the connection failed after the request was sent "
                        f"({reason}); it may or may not have been applied")
                    if self._may_resend(resend, unknown, attempt, method, what, reason):
                        attempt += 1
                        continue
                    raise unknown from None
                self._raise_if_unreachable(exc, sent, attempt, method, what)
                if attempt >= self.max_retries:
                    raise ServerError(f"{method} {what}: {reason} (gave up after "
                                      f"{attempt + 1} attempts)") from None
                attempt += 1
                self._sleep_backoff(attempt, method, what, reason)
                continue
            self.limiter.observe(resp.headers, sent=sent_at, answered=answered_at)
            self._note_quota(resp.headers, seq)
            status = resp.status_code
            uncertain = uncertain or status >= 500
            with self._count_lock:
                self.status_counts[status] += 1
            if status < 400:
                return self._decode_ok(resp, body, method, what, parse)
            try:
                status = self._screen_refusal(resp, body, method, what)
            except QuotaExceeded as exc:
                exc.maybe_applied = uncertain   # an earlier try may have landed
                raise
            retryable = status in _RETRY_STATUS and (idempotent or status == 429)
            if status == 429:
                # refused before doing anything, so even a POST may be sent again;
                # the hosted limit counts per second of its clock: wait for its next
                # one, and leave more room from now on
                self.limiter.refused(resp.headers, sent=sent_at, answered=answered_at)
            if retryable and attempt < self.max_retries:
                attempt += 1
                self._sleep_backoff(attempt, method, what, f"HTTP {status}")
                continue
            if not idempotent and status >= 500:
                unknown = OutcomeUnknown(
                    f"{method} {what}: HTTP {status} ({self._message(resp, body)}); the "
                    "request reached the server and may or may not have been applied",
                    status=status)
                if self._may_resend(resend, unknown, attempt, method, what, f"HTTP {status}"):
                    attempt += 1
                    continue
                raise unknown
            raise self._error(resp, body, method, what, view=view, token=token)

    def _may_resend(self, resend: Callable[[OutcomeUnknown], bool] | None,
                    unknown: OutcomeUnknown, attempt: int, method: str, what: str,
                    reason: str) -> bool:
        """After an unknown outcome: wait the backoff (a slow commit lands meanwhile), then
        ask ``resend`` whether the request surely did not arrive."""
        if resend is None or attempt >= self.max_retries:
            return False
        time.sleep(self._backoff_delay(attempt + 1))
        if not resend(unknown):
            return False
        with self._count_lock:
            self.retry_count += 1
        log.info("resend %d of %s %s after %s (verified not applied)", attempt + 1, method,
                 what, reason)
        return True

    def _backoff_delay(self, attempt: int) -> float:
        return min(8.0, self.backoff * (2.0 ** (attempt - 1))) * (0.5 + random.random() / 2)

    def _sleep_backoff(self, attempt: int, method: str, what: str, reason: str) -> None:
        with self._count_lock:
            self.retry_count += 1
        delay = self._backoff_delay(attempt)
        log.info("retry %d of %s %s after %s in %.2fs", attempt, method, what, reason, delay)
        time.sleep(delay)

    def _decode_ok(self, resp: requests.Response, body: bytes, method: str, what: str,
                   parse: Callable[[bytes], Any] | None = None) -> Any:
        if not body:
            return None
        try:
            return (parse or parse_json)(body)
        except ValueError:
            ctype = resp.headers.get("Content-Type", "?")
            raise ServerError(
                f"{method} {what}: the service answered {resp.status_code} with a body that is "
                f"not JSON ({ctype}): {self._redact(_snippet(body))!r}",
                status=resp.status_code) from None

    def _message(self, resp: requests.Response, body: bytes) -> str:
        """The server's message from a JSON ``{"errors": [...]}`` / ``{"message"}`` body or
        plain text (HTML is reduced to its text)."""
        msg, _field = _parse_error_body(body)
        return self._redact(msg or resp.reason or f"HTTP {resp.status_code}")

    def _error(self, resp: requests.Response, body: bytes, method: str, what: str, *,
               view: bool, token: str | None) -> ServiceError:
        status = resp.status_code
        msg, field = _parse_error_body(body)
        msg = self._redact(msg or resp.reason or "")
        has_token = bool(token or self._token)
        prefix = f"{method} {what}: "
        parsed = _json_or_none(body)
        if status == 401:
            hint = ""
            if view and not has_token:
                hint = " (this view is behind a login: call client.login(email, password) " \
                       "or pass token=)"
            return AuthenticationError(f"{prefix}{msg or 'not authenticated'}{hint}",
                                       status=status, body=parsed)
        if status == 403 and _is_throttling(msg):
            return RateLimited(f"{prefix}{msg} (a throttling 403; after {self.max_retries} "
                               "retries)", status=status, body=parsed,
                               retry_after=_retry_after(resp.headers))
        if status == 403:
            if view and not has_token:
                hint = " (this view is behind a login: call client.login(email, password) " \
                       "or pass token=)"
            elif view and _names_token(msg):
                hint = _EXPIRED_HINT
            elif view:
                hint = " (the user token is invalid or expired, or the user may not use " \
                       "this view: log in again with client.login(email, password))"
            else:
                hint = ""
            return Forbidden(f"{prefix}{msg or 'forbidden'}{hint}", status=status, body=parsed)
        if status == 404:
            return NotFound(f"{prefix}not found: {what} ({msg or 'unknown'})", status=status,
                            body=parsed)
        if status == 400:
            return ValidationError(f"{prefix}{msg or 'refused'}", status=status, field=field,
                                   body=parsed)
        if status == 413:
            return PayloadTooLarge(f"{prefix}{msg or 'too large'}", status=status, body=parsed)
        if status == 429:
            return RateLimited(f"{prefix}{msg or 'rate limit exceeded'} (after "
                               f"{self.max_retries} retries)", status=status, body=parsed,
                               retry_after=_retry_after(resp.headers))
        if status >= 500:
            return ServerError(f"{prefix}HTTP {status}: {msg}", status=status, body=parsed)
        return ServiceError(f"{prefix}HTTP {status}: {msg}", status=status, field=field,
                            body=parsed)

    # ---- limits: daily quota, throttling, Retry-After, unreachable service ----------------
    @property
    def quota(self) -> Quota | None:
        """The daily quota from the latest-sent request answered with ``X-PlanLimit-*``
        headers (None before any such answer).

        Usage: ``if client.quota and client.quota.remaining < 100: ...``"""
        return self._quota

    def quota_left(self) -> int | None:
        """Requests surely left of the daily quota: the last reported ``remaining`` less
        the requests this client sent after that answer's request (they may have been
        counted since). None when no answer gave the quota, or its reset time has passed
        (a new quota day: the next answer tells).

        Usage: ``left = client.quota_left()``"""
        with self._count_lock:
            if self._quota is None or self._quota.reset_at <= dt.datetime.now(dt.timezone.utc):
                return None
            return max(0, self._quota.remaining - (self.request_count - self._quota_seq))

    def _note_quota(self, headers: Mapping[str, str], seq: int) -> None:
        """Keep the ``X-PlanLimit-*`` of an answer when its request is the latest-sent one
        answered (answers of parallel requests arrive out of order; a new quota day shows
        as a higher remaining, so the latest wins rather than the lowest)."""
        quota = _quota_of(headers)
        if quota is None:
            return
        with self._count_lock:
            if seq >= self._quota_seq:
                self._quota, self._quota_seq = quota, seq

    def _screen_refusal(self, resp: requests.Response, body: bytes, method: str,
                        what: str) -> int:
        """The status the retry policy acts on: QuotaExceeded at once for a spent daily
        quota; a throttling 403 counts as a 429 (refused before doing anything); a
        ``Retry-After`` holds every thread back that long (RateLimited at once when it is
        over ``MAX_RETRY_AFTER``)."""
        status = resp.status_code
        if status not in (403, 429, 503):
            return status
        msg, _field = _parse_error_body(body)
        if status == 429 and (_DAILY_RE.search(msg or "")
                              or resp.headers.get("X-PlanLimit-Remaining", "").strip() == "0"):
            quota = _quota_of(resp.headers)
            reset = quota.reset_at if quota else None
            when = (f"until {reset.isoformat(timespec='seconds')}" if reset
                    else "until the daily reset")
            raise QuotaExceeded(
                f"{method} {what}: the daily request quota of the application is spent "
                f"({self._redact(msg or 'Daily limit exceeded')}); the service refuses every "
                f"request {when}. Nothing was applied by this request; run again after the "
                "reset", status=status, body=_json_or_none(body), reset_at=reset,
                limit=quota.limit if quota else None, remaining=0)
        if status == 403:
            if not _is_throttling(msg):
                return status  # a real refusal (token, view, right): Forbidden at once
            status = 429
        wait = _retry_after(resp.headers)
        if wait is not None:
            if wait > MAX_RETRY_AFTER:
                raise RateLimited(
                    f"{method} {what}: the service asks to wait {wait:g} s before the next "
                    f"request (Retry-After), more than the {MAX_RETRY_AFTER:g} s a run waits; "
                    "try again later", status=resp.status_code, body=_json_or_none(body),
                    retry_after=wait)
            self.limiter.block_for(wait + 0.01)  # at least that long, every thread
        return status

    def _raise_if_unreachable(self, exc: Exception, sent: bool, attempt: int, method: str,
                              what: str) -> None:
        """ServiceUnreachable once a connection that never opened has been tried
        ``UNREACHABLE_RETRIES`` more times (or ``max_retries``, when fewer)."""
        if sent:
            return
        reason = _unreachable_reason(exc, min(10.0, self.timeout))
        if reason is None or attempt < min(self.max_retries, UNREACHABLE_RETRIES):
            return
        raise ServiceUnreachable(
            f"{method} {what}: the service at {self.base_url} cannot be reached: {reason} "
            f"(tried {attempt + 1} times); check the base URL and the network") from None

    # ---- the service's operations --------------------------------------------------------
    def login(self, email: str, password: str) -> dict[str, Any]:
        """Remote login (docs/service-interface.md §4.5): keep the user token for view
        requests, and the e-mail and password (in memory only) to log in again when the
        service refuses the token as expired (``request``). A refused login (401) keeps
        nothing new.

        Usage: ``user = client.login("ann@example.org", "pw")``"""
        if not email or not password:
            raise UsageError("login needs an email and a password")
        out = self.request("POST", f"/v1/applications/{quote(self.app_id)}/session",
                           json_body={"email": email, "password": password}, bare=True,
                           idempotent=True, what="login")
        try:
            user = out["session"]["user"]
            self._token = user["token"]
        except (KeyError, TypeError):
            raise ServerError("login: the answer has no session.user.token") from None
        self._credentials = (email, password)
        self.user = {k: v for k, v in user.items() if k != "token"}
        return self.user

    def schema(self, *, refresh: bool = False) -> dict[str, Any] | None:
        """The application dict (``objects``, ``scenes``, ``settings``), or None when the
        service does not expose it (404, 401 or 403 on the schema address). Cached.

        Usage: ``tz = client.schema()["settings"]["timezone"]``"""
        if self._schema_loaded and not refresh:
            return self._schema
        try:
            out = self.request("GET", f"/v1/applications/{quote(self.app_id)}",
                               key_required=False, what="application schema")
        except (NotFound, AuthenticationError, Forbidden) as exc:
            # a deployment that does not expose its schema: kinds are inferred instead
            log.info("no application schema (%s); kinds will be inferred", exc.status)
            out = None
        app = out.get("application") if isinstance(out, dict) else None
        self._schema = app if isinstance(app, dict) else None
        self._schema_loaded = True
        return self._schema

    @property
    def schema_read(self) -> bool:
        """True when ``schema()`` answers without a request (read already, or not used).

        Usage: ``client.schema() if client.schema_read else None``"""
        return self._schema_loaded

    def records_path(self, target: Target) -> tuple[str, bool, str]:
        """(path of the record list, is_view, display name) of a target."""
        kind, a, b = parse_target(target)
        if kind == "view":
            return f"/v1/pages/{a}/views/{b}/records", True, f"{a}/{b}"
        return f"/v1/objects/{a}/records", False, str(a)

    def page_params(self, page: int = 1, rows_per_page: int = MAX_ROWS_PER_PAGE,
                    filters: Filters | Query | None = None, sort_field: str | None = None,
                    sort_order: str | None = None) -> dict[str, Any]:
        """Validated query parameters of a list request (UsageError before any request).
        ``filters``: a :class:`~svc_frames.query.Query` (sent as it is) or any filter form
        (encoded without the application: an aware time in UTC, with a warning)."""
        if not isinstance(page, int) or page < 1:
            raise UsageError(f"page must be an integer >= 1, got {page!r}")
        if (not isinstance(rows_per_page, int) or isinstance(rows_per_page, bool)
                or not 1 <= rows_per_page <= MAX_ROWS_PER_PAGE):
            raise UsageError(f"rows_per_page must be between 1 and {MAX_ROWS_PER_PAGE}, "
                             f"got {rows_per_page!r}")
        params: dict[str, Any] = {"page": page, "rows_per_page": rows_per_page}
        if filters is not None:
            # a Query goes out as it was prepared (a load's, with the application's
            # timezone); other forms are checked and encoded here without the schema
            encoded = Query.of(filters).text
            if encoded is not None:
                params["filters"] = encoded
        if sort_field is not None:
            if not FIELD_KEY.match(str(sort_field)):
                raise UsageError(f"sort_field must look like 'field_N', got {sort_field!r}")
            params["sort_field"] = sort_field
        if sort_order is not None:
            if sort_order not in ("asc", "desc"):
                raise UsageError(f"sort_order must be 'asc' or 'desc', got {sort_order!r}")
            params["sort_order"] = sort_order
        return params

    def get_page(self, target: Target, page: int = 1, rows_per_page: int = MAX_ROWS_PER_PAGE,
                 filters: Filters | Query | None = None, sort_field: str | None = None,
                 sort_order: str | None = None, *, params: Mapping[str, Any] | None = None,
                 parse: Callable[[bytes], Any] | None = None) -> dict[str, Any]:
        """One page of a record list: ``{total_pages, current_page, total_records, records}``.

        Usage: ``client.get_page("object_1", page=2, rows_per_page=500)``"""
        path, view, what = self.records_path(target)
        if params is None:
            params = self.page_params(page, rows_per_page, filters, sort_field, sort_order)
        out = self.request("GET", path, params=params, view=view, what=what, parse=parse)
        if not isinstance(out, dict) or not isinstance(out.get("records"), list):
            raise ServerError(f"GET {what} page {page}: the answer is not a record list "
                              f"envelope: {_snippet(json.dumps(out).encode())!r}")
        return out

    @staticmethod
    def _answer(out: Any) -> dict[str, Any]:
        """A record operation's answer, which the interface promises is a JSON object."""
        if not isinstance(out, dict):
            raise ServerError("the answer is not a JSON object: "
                              f"{_snippet(json.dumps(out).encode())!r}")
        return out

    def get_record(self, object_key: str, record_id: str) -> dict[str, Any]:
        """One record of an object. Usage: ``client.get_record("object_1", rid)``"""
        parse_target(object_key)
        return self._answer(
            self.request("GET", f"/v1/objects/{object_key}/records/{quote(record_id)}",
                         what=f"{object_key} record {record_id}"))

    def create_record(self, object_key: str, data: Mapping[str, Any], *,
                      resend: Callable[[OutcomeUnknown], bool] | None = None
                      ) -> dict[str, Any]:
        """Create a record (POST, never blindly repeated: see ``request``'s ``resend``).
        Usage: ``client.create_record("object_1", {"field_1": "x"})``"""
        parse_target(object_key)
        return self._answer(
            self.request("POST", f"/v1/objects/{object_key}/records", json_body=dict(data),
                         what=object_key, resend=resend))

    def update_record(self, object_key: str, record_id: str,
                      data: Mapping[str, Any]) -> dict[str, Any]:
        """Update fields of a record (PUT). Usage:
        ``client.update_record("object_1", rid, {"field_1": "y"})``"""
        parse_target(object_key)
        return self._answer(
            self.request("PUT", f"/v1/objects/{object_key}/records/{quote(record_id)}",
                         json_body=dict(data), what=f"{object_key} record {record_id}"))

    def delete_record(self, object_key: str, record_id: str) -> dict[str, Any]:
        """Delete a record. Usage: ``client.delete_record("object_1", rid)``"""
        parse_target(object_key)
        return self._answer(
            self.request("DELETE", f"/v1/objects/{object_key}/records/{quote(record_id)}",
                         what=f"{object_key} record {record_id}"))

    def create_view_record(self, scene: str, view: str, data: Mapping[str, Any],
                           *, token: str | None = None,
                           resend: Callable[[OutcomeUnknown], bool] | None = None
                           ) -> dict[str, Any]:
        """Create a record through a form view: ``{"record", "submit_key"}``."""
        parse_target((scene, view))
        return self._answer(self.request("POST", f"/v1/pages/{scene}/views/{view}/records",
                            json_body=dict(data), view=True, token=token,
                            what=f"{scene}/{view}", resend=resend))

    def update_view_record(self, scene: str, view: str, record_id: str,
                           data: Mapping[str, Any], *, token: str | None = None,
                           ) -> dict[str, Any]:
        """Update a record through a view: ``{"record", "submit_key"}``."""
        parse_target((scene, view))
        return self._answer(
            self.request("PUT", f"/v1/pages/{scene}/views/{view}/records/{quote(record_id)}",
                         json_body=dict(data), view=True, token=token,
                         what=f"{scene}/{view} record {record_id}"))

    def delete_view_record(self, scene: str, view: str, record_id: str,
                           *, token: str | None = None) -> dict[str, Any]:
        """Delete a record through a view."""
        parse_target((scene, view))
        return self._answer(self.request("DELETE",
                            f"/v1/pages/{scene}/views/{view}/records/{quote(record_id)}",
                            view=True, token=token, what=f"{scene}/{view} record {record_id}"))

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- helpers ---------------------------------------------------------------------------
def _read_body(resp: requests.Response) -> bytes:
    """The whole body in one read (a 5 MB page in one call, not 500 chunks of 10 kB), the
    connection back to the pool; urllib3 errors become requests' (a cut-off body raises
    ChunkedEncodingError because urllib3 enforces Content-Length)."""
    try:
        body = resp.raw.read(decode_content=True)
    except urllib3.exceptions.ProtocolError as exc:
        resp.close()
        raise requests.exceptions.ChunkedEncodingError(exc) from None
    except urllib3.exceptions.DecodeError as exc:
        resp.close()
        raise requests.exceptions.ContentDecodingError(exc) from None
    except urllib3.exceptions.ReadTimeoutError as exc:
        resp.close()
        raise requests.exceptions.ReadTimeout(exc) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        resp.close()
        raise requests.exceptions.ConnectionError(exc) from None
    resp._content = body  # so resp.content / resp.reason work as usual
    resp._content_consumed = True  # type: ignore[attr-defined]
    resp.raw.release_conn()
    return body


_TAG_RE = re.compile(r"<[^>]+>")


def _snippet(body: bytes, n: int = 120) -> str:
    text = body[:2000].decode("utf-8", "replace")
    text = " ".join(html.unescape(_TAG_RE.sub(" ", text)).split())
    return text[:n]


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _parse_error_body(body: bytes) -> tuple[str, str | None]:
    """(message, field) from JSON ``{"errors": [{message, field}]}``, ``{"message"}``,
    ``{"error"}`` or plain text / HTML."""
    data = _json_or_none(body)
    if isinstance(data, dict):
        errors = data.get("errors")
        if isinstance(errors, list) and errors:
            msgs, field = [], None
            for err in errors:
                if isinstance(err, dict):
                    msgs.append(str(err.get("message") or err))
                    field = field or err.get("field")
                else:
                    msgs.append(str(err))
            return "; ".join(msgs), field
        for key in ("message", "error", "detail"):
            if isinstance(data.get(key), str):
                return data[key], data.get("field")
        return _snippet(body), None
    if isinstance(data, str):
        return data, None
    return _snippet(body, 300), None


def _check_settings(*, timeout: Any, max_retries: Any, rate_limit: Any,
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


def _quota_of(headers: Mapping[str, str]) -> Quota | None:
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


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from a ``Retry-After`` header (delay-seconds or an HTTP date), or None."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        seconds = (when - dt.datetime.now(dt.timezone.utc)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _names_token(message: str) -> bool:
    """A server's 403 message refusing the user token itself (``Invalid or Expired
    Token``), not the user's rights on the view nor throttling."""
    text = (message or "").lower()
    return "token" in text and "profile" not in text


def _is_throttling(message: str) -> bool:
    """A 403 whose body says it is throttling (a token or right refusal names the token
    or the view instead; docs/hosted-behaviour.md §4)."""
    return bool(_THROTTLE_RE.search(message or "")) and "token" not in message.lower()


def _unreachable_reason(exc: Exception, connect_timeout: float) -> str | None:
    """Why no connection could be opened (refused, unknown host, none within the connect
    timeout), or None when the failure is of another kind."""
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return f"no connection within {connect_timeout:g} s"
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


def _is_connect_refused(exc: Exception) -> bool:
    """A connection that was never opened (nothing reached the server)."""
    text = repr(exc)
    return "NewConnectionError" in text or "Connection refused" in text


def _short_reason(exc: Exception) -> str:
    """What went wrong with a connection, whole (the innermost cause, not urllib3's
    wrapper text)."""
    name = type(exc).__name__
    text = str(exc)
    if "IncompleteRead" in text or isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return f"{name}: the answer was cut off mid-body"
    cause: Any = exc.args[0] if exc.args else None
    cause = getattr(cause, "reason", None)  # MaxRetryError -> the urllib3 error
    return f"{name}: {cause if cause is not None else text}"
