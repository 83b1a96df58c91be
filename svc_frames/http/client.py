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
import contextlib
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests
import urllib3

from ..errors import (
    AuthenticationError,
    ConfigurationError,
    Forbidden,
    NotFound,
    OutcomeUnknown,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    SendDeadlinePassed,
    ServerError,
    ServiceError,
    ServiceUnreachable,
    UsageError,
    ValidationError,
)
from ..keys import FIELD_KEY, Target, parse_target
from ..query import Filters, Query
from .body import parse_json
from .connections import PacedAdapter, paced_by
from .hints import (
    CHECK_BASE_URL,
    KEY_FROM_ARGUMENT,
    KEY_FROM_ENV,
    is_web_page,
    key_refused,
    not_the_service,
)
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
    """A connection to one application of the service, through which every request goes.

    One pooled HTTP session, pacing shared with every client of the same application
    (and with other processes), retries with backoff and typed errors (see the module
    docstring for the policy). Use it as a context manager, or ``close()`` it.

    Parameters
    ----------
    app_id : str
        The application id (``X-Service-Application-Id``).
    api_key : str, optional
        The REST API key: object requests need it; view requests use a user token instead.
    base_url : str
        The service's address, ``http://`` or ``https://``.
    token : str, optional
        A user token for view requests (``login`` gets one).
    rate_limit : float, default 10.0
        Requests per second, 0 to 1000, that the clients of this application start at
        most (0: no pacing); the pace is shared with the other clients of the same
        application and base URL.
    timeout : float, default 30.0
        Seconds to wait for an answer, > 0.
    max_retries : int, default 5
        Retries of a failed request (429, 5xx, a dropped connection), >= 0.
    max_workers : int, default 12
        Threads that fetch pages at once (and the connection pool's size), >= 1.
    backoff : float, default 0.25
        Seconds of the first wait before a retry, >= 0; each later wait doubles (up to 8 s,
        with jitter).
    use_schema : bool, default True
        False: never ask for the application schema; kinds are inferred from the records.
    session : requests.Session, optional
        The HTTP session to send with (default: a new one).
    verify : bool or str, optional
        Whether to check the service's TLS certificate, or the path of a file of the
        certificate authorities to trust (the local service's ``svc.ca_file``); None:
        requests' own choice (``REQUESTS_CA_BUNDLE``, then the session's ``verify``).

    Attributes
    ----------
    app_id, base_url : str
        As given (``base_url`` without a trailing ``/``).
    request_count : int
        Requests sent, retries included.
    retry_count : int
        Retries sent.
    status_counts : collections.Counter
        How many answers came with each HTTP status.
    user : dict or None
        The logged-in user (``login``), without the token.

    Raises
    ------
    ConfigurationError
        A missing ``app_id`` or ``base_url``, a ``base_url`` without ``http(s)://``, or
        a setting out of range (naming it).

    Examples
    --------
    >>> with Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
    ...             rate_limit=0) as c:
    ...     c.get_page("object_3", rows_per_page=5)["total_records"]
    30
    """

    def __init__(self, app_id: str, api_key: str | None = None, base_url: str | None = None,
                 token: str | None = None, rate_limit: float = 10.0, timeout: float = 30.0,
                 max_retries: int = 5, *, max_workers: int = 12, backoff: float = 0.25,
                 use_schema: bool = True, session: requests.Session | None = None,
                 verify: bool | str | None = None) -> None:
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
        if verify is not None and not isinstance(verify, (bool, str)):
            raise ConfigurationError(f"verify must be True, False or a file path, got "
                                     f"{verify!r}")
        if isinstance(verify, str) and not os.path.isfile(verify):
            raise ConfigurationError(f"verify must be True, False or the path of a file of "
                                     f"certificate authorities; no such file: {verify!r}")
        self.verify = verify
        self.app_id = app_id
        self.base_url = str(base_url).rstrip("/")
        self._api_key = api_key
        # where the key came from, named when the service refuses it (hints.py): the CLI
        # and ``from_env`` say so; given directly, it is the argument
        self.api_key_source = KEY_FROM_ARGUMENT
        self._token = token
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_workers = max_workers
        self.limiter = shared_limiter(self.base_url, app_id, rate_limit)
        self.session = session or requests.Session()
        # pool sized for the paging threads, so no connection is thrown away under load
        adapter = PacedAdapter(pool_connections=4, pool_maxsize=max(max_workers, 4),
                               max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self._count_lock = threading.Lock()
        self._send_by = threading.local()   # .at: this thread's latest send time, or None
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
        """A client configured by the environment (``SVC_APP_ID``, ``SVC_API_KEY``, ...).

        ``SVC_APP_ID``, ``SVC_API_KEY``, ``SVC_BASE_URL`` and, optionally, ``SVC_TOKEN``;
        without a token but with ``SVC_EMAIL`` and ``SVC_PASSWORD`` the client logs in.

        Parameters
        ----------
        **overrides
            Arguments of ``Client`` (``app_id``, ``rate_limit``, ...); one that is not None
            wins over the environment.

        Returns
        -------
        Client
            Logged in when the environment gave an e-mail and password but no token.

        Raises
        ------
        ConfigurationError
            No application id or base URL in the environment or the overrides; no API key
            and no user either (``SVC_API_KEY`` unset, and no ``SVC_TOKEN`` nor
            ``SVC_EMAIL`` with ``SVC_PASSWORD``: no request but the schema could be made);
            or a setting out of range.
        AuthenticationError
            The login with ``SVC_EMAIL`` and ``SVC_PASSWORD`` was refused.

        Examples
        --------
        >>> import os
        >>> from unittest import mock
        >>> env = {"SVC_APP_ID": service.app_id, "SVC_API_KEY": service.api_key,
        ...        "SVC_BASE_URL": service.base_url}
        >>> with mock.patch.dict(os.environ, env):
        ...     c = Client.from_env(rate_limit=0)
        >>> c.app_id == service.app_id, c.has_api_key
        (True, True)
        """
        env = os.environ
        kwargs: dict[str, Any] = {
            "app_id": env.get("SVC_APP_ID"), "api_key": env.get("SVC_API_KEY"),
            "base_url": env.get("SVC_BASE_URL"), "token": env.get("SVC_TOKEN") or None}
        kwargs.update({k: v for k, v in overrides.items() if v is not None})
        email, password = env.get("SVC_EMAIL"), env.get("SVC_PASSWORD")
        if not kwargs["api_key"] and not kwargs["token"] and not (email and password):
            raise ConfigurationError(
                "SVC_API_KEY is not set: object requests need the application's API key "
                "(set SVC_API_KEY, or pass api_key=); a client for views behind a login "
                "alone sets SVC_TOKEN, or SVC_EMAIL and SVC_PASSWORD")
        client = cls(**kwargs)
        if overrides.get("api_key") is None and client.has_api_key:
            client.api_key_source = KEY_FROM_ENV
        if client.token is None and email and password:
            client.login(email, password)
        return client

    @property
    def token(self) -> str | None:
        """The user token sent with view requests (None before a login); settable.

        Setting it by hand forgets the credentials of an earlier ``login``, so an expired
        token set by hand is not renewed with them.

        Examples
        --------
        >>> client.token is None
        True
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> client.token is None
        False
        """
        return self._token

    @token.setter
    def token(self, value: str | None) -> None:
        self._token = value
        self._credentials = None  # a token set by hand is not renewed with an older login

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

    @contextlib.contextmanager
    def send_by(self, deadline: float | None) -> Iterator[None]:
        """Requests of this thread inside the block leave by ``deadline`` or not at all.

        A request whose turn in the pace comes later raises instead of being sent, unless
        an earlier try of it may have landed (its answer was lost: it is sent again).
        write_back's live guard uses it: a write must leave within its window after its
        re-read, however long another client sharing the pace keeps it waiting.

        Parameters
        ----------
        deadline : float or None
            The latest send time, on the limiter's clock (``client.limiter.now()``, epoch
            seconds); None: no deadline.

        Yields
        ------
        None

        Raises
        ------
        SendDeadlinePassed
            A request of the block whose turn came after ``deadline``; nothing was sent.

        Examples
        --------
        >>> with client.send_by(client.limiter.now() + 5):
        ...     page = client.get_page("object_3", rows_per_page=1)
        >>> page["total_records"]
        30
        """
        before = getattr(self._send_by, "at", None)
        self._send_by.at = deadline
        try:
            yield
        finally:
            self._send_by.at = before

    @property
    def has_api_key(self) -> bool:
        """Whether the client holds an API key (which object requests need).

        Examples
        --------
        >>> client.has_api_key
        True
        """
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
        """The headers of a request, as docs/service-interface.md §5 gives them.

        Parameters
        ----------
        view : bool, default False
            False: an object request (application id and API key). True: a view request
            (application id, the literal ``service`` as key, and ``Authorization`` when a
            token is known).
        token : str, optional
            The user token of a view request (default: the client's).
        key_required : bool, default True
            Whether an object request without an API key is an error (False: send the
            application id alone).
        bare : bool, default False
            No headers at all (the login request of §4.5).

        Returns
        -------
        dict of str to str
            Header name -> value.

        Raises
        ------
        ConfigurationError
            An object request with ``key_required`` while the client has no API key.

        Examples
        --------
        >>> sorted(client.headers())
        ['X-Service-Application-Id', 'X-Service-REST-API-KEY']
        >>> client.headers(view=True)["X-Service-REST-API-KEY"]
        'service'
        """
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
        """Send one paced request, with retries, and return its decoded JSON body.

        Every request of the package goes through here (one retry policy, one count).
        A view request refused for an expired token is sent again, once, after logging in
        again with the credentials of this client's own ``login``.

        Parameters
        ----------
        method : str
            ``GET``, ``POST``, ``PUT``, ``DELETE`` (any case).
        path : str
            The path on the service (``/v1/objects/object_3/records``).
        params : mapping, optional
            Query parameters.
        json_body : object, optional
            Sent as the JSON body.
        files : object, optional
            Multipart files, as ``requests`` takes them (uploads).
        view : bool, default False
            Send view headers (the user token) instead of the API key.
        token : str, optional
            The user token of a view request (default: the client's).
        key_required : bool, default True
            Whether an object request needs the API key (see ``headers``).
        idempotent : bool, optional
            Whether repeating the request is harmless (default: True for GET, PUT, DELETE
            and HEAD); a request that is not is never sent twice blindly.
        what : str, default ""
            Names the target in error messages (``"object_3"``, ``"scene_1/view_2"``;
            default: the path).
        bare : bool, default False
            Send no headers (the login request).
        extra_headers : mapping, optional
            Headers added to the ones above.
        parse : callable, optional
            Decodes a successful body (bytes) instead of the plain JSON parser.
        resend : callable, optional
            For a request that is not idempotent (a POST): asked after the backoff
            whenever its outcome is unknown (sent, then no answer or a 5xx); True when it
            surely did not arrive (looked up and found absent), so sending it again cannot
            duplicate it. Without it (or once it says False) ``OutcomeUnknown`` is raised.

        Returns
        -------
        object
            The decoded body (what ``parse`` returns, when given).

        Raises
        ------
        ConfigurationError
            An object request needs the API key the client does not have.
        AuthenticationError, Forbidden, NotFound, ValidationError, PayloadTooLarge
            The service refused the request (401, 403, 404, 400, 413).
        RateLimited, QuotaExceeded
            Still throttled after the retries, a ``Retry-After`` over ``MAX_RETRY_AFTER``,
            or the daily quota spent.
        ServiceUnreachable
            No connection to the service.
        ServerError, OutcomeUnknown
            A 5xx or a body that is not JSON after the retries; a POST whose outcome is
            unknown.
        ServiceError
            Any other error status.

        Examples
        --------
        >>> out = client.request("GET", "/v1/objects/object_3/records",
        ...                      params={"rows_per_page": 1})
        >>> out["total_records"], len(out["records"])
        (30, 1)
        """
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
        """The body of a GET as bytes (an asset download), paced and retried like every request.

        Only the application id is sent: an asset URL may point to another host, so the key
        and token never leave.

        Parameters
        ----------
        url : str
            An absolute URL, or a path on the service (starting with ``/``).
        what : str, default ""
            Names the download in error messages (default: the URL).

        Returns
        -------
        bytes
            The body (empty when the answer had none).

        Raises
        ------
        NotFound
            No asset at ``url``.
        ServiceUnreachable, ServerError, ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> record = client.get_page("object_3", rows_per_page=1)["records"][0]
        >>> asset = record["field_37_raw"]
        >>> len(client.get_bytes(asset["url"])) == asset["size"]
        True
        """
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
                body = _read_body(resp)  # the whole body: a cut-off body raises here
            except SendDeadlinePassed:
                with self._count_lock:
                    self.request_count -= 1  # it never left
                raise
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
            page = f": a web page, {CHECK_BASE_URL}" if is_web_page(ctype, body) else ""
            raise ServerError(
                f"{method} {what}: the service answered {resp.status_code} with a body that is "
                f"not JSON ({ctype}): {self._redact(_snippet(body))!r}{page}",
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
        if 400 <= status < 500 and status not in (413, 429) and not _is_throttling(msg) \
                and is_web_page(resp.headers.get("Content-Type"), body):
            page = self._redact(_snippet(body, 60))
            return ServiceUnreachable(prefix + not_the_service(self.base_url, status, page),
                                      status=status)
        if status == 401:
            hint = ""
            if view and not has_token:
                hint = " (this view is behind a login: call client.login(email, password) " \
                       "or pass token=)"
            elif not view and self._api_key:
                hint = key_refused(self.api_key_source, self.app_id)
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
        """The daily quota as the last answer with ``X-PlanLimit-*`` headers gave it, or None.

        A ``Quota`` (``limit``, ``remaining``, ``reset_at``) from the latest-sent request so
        answered; None before any such answer.

        Examples
        --------
        >>> _ = client.get_page("object_3", rows_per_page=1)
        >>> client.quota.limit
        25000
        """
        return self._quota

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

    # ---- the service's operations --------------------------------------------------------
    def login(self, email: str, password: str) -> dict[str, Any]:
        """Log in as a user of the application, for view requests (docs/service-interface.md §4.5).

        The client keeps the user token for view requests, and the e-mail and password (in
        memory only, never shown) to log in again when the service refuses the token as
        expired. A refused login keeps nothing new.

        Parameters
        ----------
        email : str
            The user's e-mail.
        password : str
            The user's password.

        Returns
        -------
        dict
            The user as the service describes it (``id``, ``profile_keys``, ...), without
            the token; also kept as ``client.user``.

        Raises
        ------
        UsageError
            An empty e-mail or password (nothing is sent).
        AuthenticationError
            The service refused the e-mail and password.
        ServerError
            The answer holds no token.

        Examples
        --------
        >>> user = client.login("manager@example.com", "Manager-2024!")
        >>> user["profile_keys"]
        ['profile_1', 'profile_2']
        """
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
        """The application's schema (``objects``, ``scenes``, ``settings``), or None when hidden.

        Asked once and kept (a client made with ``use_schema=False`` never asks).

        Parameters
        ----------
        refresh : bool, default False
            Ask the service again instead of returning the kept schema.

        Returns
        -------
        dict or None
            The application document; None when the service does not expose it (404,
            401 or 403 on the schema address).

        Raises
        ------
        ServiceUnreachable, ServerError, ServiceError
            The schema request failed otherwise.

        Examples
        --------
        >>> [o["name"] for o in client.schema()["objects"]]
        ['People', 'Parts', 'Work Orders']
        """
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

        Examples
        --------
        >>> fresh = Client(service.app_id, api_key=service.api_key,
        ...                base_url=service.base_url, rate_limit=0)
        >>> fresh.schema_read
        False
        >>> _ = fresh.schema()
        >>> fresh.schema_read
        True
        """
        return self._schema_loaded

    def records_path(self, target: Target) -> tuple[str, bool, str]:
        """The address of a target's record list, whether it is a view, and its display name.

        Parameters
        ----------
        target : str or tuple of str
            An object key (``"object_3"``) or a view (``"scene_1/view_1"`` or
            ``("scene_1", "view_1")``); keys only, not names.

        Returns
        -------
        tuple of (str, bool, str)
            The path, True for a view, and the name used in messages.

        Raises
        ------
        UsageError
            ``target`` is not an object or view key.

        Examples
        --------
        >>> client.records_path("object_3")
        ('/v1/objects/object_3/records', False, 'object_3')
        >>> client.records_path(("scene_1", "view_1"))
        ('/v1/pages/scene_1/views/view_1/records', True, 'scene_1/view_1')
        """
        kind, a, b = parse_target(target)
        if kind == "view":
            return f"/v1/pages/{a}/views/{b}/records", True, f"{a}/{b}"
        return f"/v1/objects/{a}/records", False, str(a)

    def page_params(self, page: int = 1, rows_per_page: int = MAX_ROWS_PER_PAGE,
                    filters: Filters | Query | None = None, sort_field: str | None = None,
                    sort_order: str | None = None) -> dict[str, Any]:
        """The query parameters of a list request, checked before any request.

        Parameters
        ----------
        page : int, default 1
            The page number, >= 1.
        rows_per_page : int, default 1000
            Records per page, 1 to 1000.
        filters : Query, list or dict, optional
            A ``Query`` (sent as it is), or any filter form (checked and encoded without
            the application's schema: an aware time is sent in UTC, with a warning).
        sort_field : str, optional
            A field key (``field_N``) to sort by.
        sort_order : {"asc", "desc"}, optional
            The sort direction.

        Returns
        -------
        dict
            ``page``, ``rows_per_page`` and, when given, ``filters`` (encoded JSON),
            ``sort_field``, ``sort_order``.

        Raises
        ------
        UsageError
            A value out of range or a filter that is not valid, naming it.

        Examples
        --------
        >>> client.page_params(2, 500, sort_field="field_24", sort_order="desc")
        {'page': 2, 'rows_per_page': 500, 'sort_field': 'field_24', 'sort_order': 'desc'}
        """
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
        """One page of a record list, as the service answers it.

        Parameters
        ----------
        target : str or tuple of str
            An object key or a view key (see ``records_path``).
        page, rows_per_page, filters, sort_field, sort_order
            As ``page_params`` takes them.
        params : mapping, optional
            Query parameters sent as they are, instead of the five above.
        parse : callable, optional
            Decodes the body instead of the plain JSON parser (see ``request``).

        Returns
        -------
        dict
            ``total_pages``, ``current_page``, ``total_records`` and ``records`` (the
            records as the service sends them: each field and its ``_raw`` value).

        Raises
        ------
        UsageError
            A bad target or parameter (nothing is sent).
        NotFound
            No such object or view.
        ServerError
            The answer is not a record list.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> page = client.get_page("object_3", rows_per_page=10)
        >>> page["total_records"], page["total_pages"], len(page["records"])
        (30, 3, 10)
        """
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
        """One record of an object, by its id.

        Parameters
        ----------
        object_key : str
            The object's key (``object_3``).
        record_id : str
            The record's id.

        Returns
        -------
        dict
            The record as the service sends it (each field and its ``_raw`` value).

        Raises
        ------
        UsageError
            ``object_key`` is not an object key.
        NotFound
            No such object or record.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.get_record("object_3", rid)["field_24"]
        1
        """
        parse_target(object_key)
        return self._answer(
            self.request("GET", f"/v1/objects/{object_key}/records/{quote(record_id)}",
                         what=f"{object_key} record {record_id}"))

    def create_record(self, object_key: str, data: Mapping[str, Any], *,
                      resend: Callable[[OutcomeUnknown], bool] | None = None
                      ) -> dict[str, Any]:
        """Create a record of an object (a POST, never blindly repeated).

        Parameters
        ----------
        object_key : str
            The object's key (``object_3``).
        data : mapping
            Field key -> value, in the service's input format.
        resend : callable, optional
            Says whether a create whose outcome is unknown surely did not arrive (see
            ``request``).

        Returns
        -------
        dict
            The created record as the service answers it (with its ``id``).

        Raises
        ------
        UsageError
            ``object_key`` is not an object key.
        ValidationError
            The service refused a value (``field`` names the field).
        OutcomeUnknown
            The request was sent but no answer came: it may have been applied.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> record = client.create_record("object_3", {"field_12": "Fix the door"})
        >>> record["field_12"], record["field_24"]
        ('Fix the door', 31)
        """
        parse_target(object_key)
        return self._answer(
            self.request("POST", f"/v1/objects/{object_key}/records", json_body=dict(data),
                         what=object_key, resend=resend))

    def update_record(self, object_key: str, record_id: str,
                      data: Mapping[str, Any]) -> dict[str, Any]:
        """Update fields of a record of an object (a PUT: the fields not in ``data`` stay).

        Parameters
        ----------
        object_key : str
            The object's key (``object_3``).
        record_id : str
            The record's id.
        data : mapping
            Field key -> new value, in the service's input format.

        Returns
        -------
        dict
            The updated record as the service answers it.

        Raises
        ------
        UsageError
            ``object_key`` is not an object key.
        NotFound
            No such record.
        ValidationError
            The service refused a value (``field`` names the field).
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.update_record("object_3", rid, {"field_12": "Fix the back door"})["field_12"]
        'Fix the back door'
        """
        parse_target(object_key)
        return self._answer(
            self.request("PUT", f"/v1/objects/{object_key}/records/{quote(record_id)}",
                         json_body=dict(data), what=f"{object_key} record {record_id}"))

    def delete_record(self, object_key: str, record_id: str) -> dict[str, Any]:
        """Delete a record of an object.

        Parameters
        ----------
        object_key : str
            The object's key (``object_3``).
        record_id : str
            The record's id.

        Returns
        -------
        dict
            The service's answer (``{"delete": True}``).

        Raises
        ------
        UsageError
            ``object_key`` is not an object key.
        NotFound
            No such record.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.delete_record("object_3", rid)
        {'delete': True}
        >>> client.get_page("object_3", rows_per_page=1)["total_records"]
        29
        """
        parse_target(object_key)
        return self._answer(
            self.request("DELETE", f"/v1/objects/{object_key}/records/{quote(record_id)}",
                         what=f"{object_key} record {record_id}"))

    def create_view_record(self, scene: str, view: str, data: Mapping[str, Any],
                           *, token: str | None = None,
                           resend: Callable[[OutcomeUnknown], bool] | None = None
                           ) -> dict[str, Any]:
        """Create a record through a form view, as a logged-in user.

        The view's record rules apply (values the form sets itself); fields the form does
        not show are not stored.

        Parameters
        ----------
        scene : str
            The scene's key (``scene_2``).
        view : str
            The form view's key (``view_4``).
        data : mapping
            Field key -> value, in the service's input format.
        token : str, optional
            The user token (default: the client's, from ``login``).
        resend : callable, optional
            Says whether a create whose outcome is unknown surely did not arrive (see
            ``request``).

        Returns
        -------
        dict
            ``record`` (the created record, as the view shows it) and ``submit_key``.

        Raises
        ------
        UsageError
            ``scene``/``view`` are not keys.
        Forbidden
            No token, or one the view does not accept.
        ValidationError
            The view does not create records, or refused a value.
        OutcomeUnknown
            The request was sent but no answer came: it may have been applied.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> out = client.create_view_record("scene_2", "view_4", {"field_12": "Fix the gate"})
        >>> out["record"]["field_12"], out["record"]["field_27"]  # the form sets "Open"
        ('Fix the gate', 'Open')
        """
        parse_target((scene, view))
        return self._answer(self.request("POST", f"/v1/pages/{scene}/views/{view}/records",
                            json_body=dict(data), view=True, token=token,
                            what=f"{scene}/{view}", resend=resend))

    def update_view_record(self, scene: str, view: str, record_id: str,
                           data: Mapping[str, Any], *, token: str | None = None,
                           ) -> dict[str, Any]:
        """Update a record through a view, as a logged-in user.

        Parameters
        ----------
        scene : str
            The scene's key (``scene_3``).
        view : str
            The view's key: a form that updates, or a view with inline editing.
        record_id : str
            The record's id.
        data : mapping
            Field key -> new value, in the service's input format.
        token : str, optional
            The user token (default: the client's, from ``login``).

        Returns
        -------
        dict
            ``record`` (the updated record, as the view shows it) and ``submit_key``.

        Raises
        ------
        UsageError
            ``scene``/``view`` are not keys.
        Forbidden
            No token, or one the view does not accept.
        ValidationError
            The view does not accept updates, or refused a value.
        NotFound
            No such record in the view.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> _ = client.login("tech@example.com", "Tech-2024!")
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> out = client.update_view_record("scene_3", "view_5", rid, {"field_12": "Fix it"})
        >>> out["record"]["field_12"]
        'Fix it'
        """
        parse_target((scene, view))
        return self._answer(
            self.request("PUT", f"/v1/pages/{scene}/views/{view}/records/{quote(record_id)}",
                         json_body=dict(data), view=True, token=token,
                         what=f"{scene}/{view} record {record_id}"))

    def delete_view_record(self, scene: str, view: str, record_id: str,
                           *, token: str | None = None) -> dict[str, Any]:
        """Delete a record through a view, as a logged-in user.

        The local service deletes through no view (it answers 405, below); on the hosted
        service a view that offers a delete link does.

        Parameters
        ----------
        scene : str
            The scene's key.
        view : str
            The view's key.
        record_id : str
            The record's id.
        token : str, optional
            The user token (default: the client's, from ``login``).

        Returns
        -------
        dict
            The service's answer.

        Raises
        ------
        UsageError
            ``scene``/``view`` are not keys.
        Forbidden
            No token, or one the view does not accept.
        NotFound
            No such record in the view.
        ServiceError
            As ``request`` raises them (the local service: 405).

        Examples
        --------
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.delete_view_record("scene_2", "view_3", rid)
        Traceback (most recent call last):
        ...
        svc_frames.errors.ServiceError: DELETE scene_2/view_3 record ...: HTTP 405: ...
        """
        parse_target((scene, view))
        return self._answer(self.request("DELETE",
                            f"/v1/pages/{scene}/views/{view}/records/{quote(record_id)}",
                            view=True, token=token, what=f"{scene}/{view} record {record_id}"))

    def close(self) -> None:
        """Close the HTTP session (``with Client(...) as c:`` closes it on leaving).

        Examples
        --------
        >>> c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url)
        >>> c.close()
        """
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


_UNTRUSTED = "its TLS certificate is not trusted"


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
