"""The HTTP client: one pooled session, client-side pacing, retries, typed errors, auth and
the daily quota, each kept by an object of its own that ``HttpClient`` composes.

Usage::

    http = HttpClient("app_id", api_key="...", base_url="http://127.0.0.1:8000")
    http.login("ann@example.org", "secret")   # token for views behind a login
    out = http.request("GET", "/v1/objects/object_1/records", params={"page": 1})

The records the service holds (pages, one record, writes) and the application schema are
the records layer's (``svc_frames/records/``): its ``Client`` is this client with them.

Object requests send the application id and the API key; view requests send the literal
``service`` as key plus the user token in ``Authorization`` (docs/service-interface.md §5).
A user token lasts 48 hours (docs/hosted-behaviour.md §5): a client that logged in itself
keeps the e-mail and password in memory and, when a view request is refused for an
expired token, logs in again once and repeats the request once (never after a refused
login); otherwise Forbidden says the token expired and how to renew it (``auth.py``).
GET, PUT and DELETE are retried with backoff on 429, 502/503/504 and dropped connections;
a POST is only retried when it surely did not reach the server (refused by the rate limit,
the connection never opened, or the caller's ``resend`` check verified it absent), otherwise
:class:`OutcomeUnknown` is raised (``retries.py``, ``transport.py``). Every request of the
package goes through this one policy (``request``; ``get_bytes`` for asset downloads), so
``retry_count`` and ``status_counts`` see them all.
The API key, the token and the password never appear in a repr, a log line or an error
message.

Limits (docs/hosted-behaviour.md §4): every answer's ``X-RateLimit-*`` headers pace the
client (``limiter.py``), its ``X-PlanLimit-*`` headers give ``client.quota`` (the daily
quota, ``quota.py``), and ``Retry-After`` is honoured (up to ``MAX_RETRY_AFTER`` seconds).
A 403 whose body says it is throttling is retried like a 429; a 429 ``Daily limit
exceeded`` raises :class:`QuotaExceeded` at once (nothing can succeed before the reset;
``answers.py``). A service that cannot be reached (refused, unknown host, no connection in
time) raises :class:`ServiceUnreachable` naming the base URL after a few quick tries.
A refusal names what to fix (``hints.py``): a web page answered to an API request says to
check the base URL; a refused API key says where it came from (``api_key_source``:
``from_env`` and the CLI set it), and ``from_env`` refuses an environment with neither a
key nor a user before any request.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, TypeVar
from urllib.parse import quote

import requests

from ..errors import (
    ConfigurationError,
    Forbidden,
    OutcomeUnknown,
    ServerError,
    UsageError,
)
from .answers import EXPIRED_HINT, MAX_RETRY_AFTER, Answers
from .auth import Auth
from .body import Body, BodyBuffers
from .connections import PacedAdapter
from .hints import KEY_FROM_ENV
from .limiter import RateLimiter, shared_limiter
from .meters import Meters
from .quota import Quota, QuotaBook
from .retries import UNREACHABLE_RETRIES, RetryPolicy
from .settings import check_settings
from .transport import Transport

__all__ = ["HttpClient", "MAX_RETRY_AFTER", "Quota", "UNREACHABLE_RETRIES"]

log = logging.getLogger(__name__)

_C = TypeVar("_C", bound="HttpClient")


class HttpClient(Meters):
    """The transport to one application of the service, through which every request goes.

    Composes the session and its paced connections (``transport.py``, ``connections.py``),
    the pace shared with every client of the same application (``limiter.py``), the retry
    policy (``retries.py``), answers turned into typed errors (``answers.py``), auth
    (``auth.py``) and the daily quota (``quota.py``). It knows nothing of records, filters
    or sorts: ``svc_frames.records.Client`` adds them. What it has counted and learned
    (requests, retries, statuses, the pace, the quota) is read through ``Meters``
    (``meters.py``). Parameters: see ``Client``.
    """

    def __init__(self, app_id: str, api_key: str | None = None, base_url: str | None = None,
                 token: str | None = None, rate_limit: float = 10.0, timeout: float = 30.0,
                 max_retries: int = 5, *, max_workers: int = 12, backoff: float = 0.25,
                 use_schema: bool = True, session: requests.Session | None = None,
                 verify: bool | str | None = None) -> None:
        check_settings(app_id=app_id, base_url=base_url, max_workers=max_workers,
                       timeout=timeout, max_retries=max_retries, rate_limit=rate_limit,
                       backoff=backoff, verify=verify)
        self.verify = verify
        self.app_id = app_id
        self.base_url = str(base_url).rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_workers = max_workers
        # use_schema=False: the records layer never asks for the schema (a deployment that
        # hides it); kinds are then inferred from the record shapes
        self.use_schema = use_schema
        self.auth = Auth(app_id, api_key, token)
        self.limiter: RateLimiter = shared_limiter(self.base_url, app_id, rate_limit)
        self.session = session or requests.Session()
        # pool sized for the paging threads, so no connection is thrown away under load
        adapter = PacedAdapter(pool_connections=4, pool_maxsize=max(max_workers, 4),
                               max_retries=0)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.retries = RetryPolicy(max_retries=max_retries, backoff=backoff,
                                   base_url=self.base_url,
                                   connect_timeout=min(10.0, timeout))
        self.quota_book = QuotaBook()
        self.transport = Transport(
            self.session, self.limiter, self.retries,
            Answers(self.auth.redact, max_retries, self.limiter.block_for,
                    base_url=self.base_url, key_hint=self.auth.key_refused_hint),
            self.quota_book,
            timeout=timeout, verify=verify)
        self.user: dict[str, Any] | None = None

    # ---- construction / secrets ----------------------------------------------------------
    @classmethod
    def from_env(cls: type[_C], **overrides: Any) -> _C:
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
        return self.auth.token

    @token.setter
    def token(self, value: str | None) -> None:
        self.auth.token = value  # a token set by hand is not renewed with an older login

    def send_by(self, deadline: float | None) -> AbstractContextManager[None]:
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
        return self.transport.send_by(deadline)

    @property
    def api_key_source(self) -> str:
        """Where the API key came from, named when the service refuses it (``hints.py``).

        ``"the api_key argument"`` unless ``from_env`` (``SVC_API_KEY``) or the CLI
        (``--api-key``) set it; settable.

        Examples
        --------
        >>> client.api_key_source
        'the api_key argument'
        """
        return self.auth.key_source

    @api_key_source.setter
    def api_key_source(self, value: str) -> None:
        self.auth.key_source = value

    @property
    def has_api_key(self) -> bool:
        """Whether the client holds an API key (which object requests need).

        Examples
        --------
        >>> client.has_api_key
        True
        """
        return bool(self.auth.api_key)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(app_id={self.app_id!r}, base_url={self.base_url!r}, "
                f"api_key={'***' if self.auth.api_key else None}, "
                f"token={'***' if self.auth.token else None}, rate_limit={self.limiter.rate})")

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
        return self.auth.headers(view=view, token=token, key_required=key_required, bare=bare)

    # ---- the one request function ------------------------------------------------------
    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json_body: Any = None, files: Any = None, view: bool = False,
                token: str | None = None, key_required: bool = True,
                idempotent: bool | None = None, what: str = "", bare: bool = False,
                extra_headers: Mapping[str, str] | None = None,
                parse: Callable[[Body], Any] | None = None,
                resend: Callable[[OutcomeUnknown], bool] | None = None,
                into: BodyBuffers | None = None) -> Any:
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
            Decodes a successful body (bytes, or a memoryview with ``into``) instead of
            the plain JSON parser.
        resend : callable, optional
            For a request that is not idempotent (a POST): asked after the backoff
            whenever its outcome is unknown (sent, then no answer or a 5xx); True when it
            surely did not arrive (looked up and found absent), so sending it again cannot
            duplicate it. Without it (or once it says False) ``OutcomeUnknown`` is raised.
        into : BodyBuffers, optional
            Read a large successful body into one of these reusable buffers, when one is
            free, and give ``parse`` a memoryview of it, valid until ``parse`` returns:
            the pages of a listing, which a load reads by the hundred from several
            threads (``http.body.BodyBuffers``).

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
        auth = self.auth

        def send(tok: str | None) -> Any:
            headers = auth.headers(view=view, token=tok, key_required=key_required,
                                   bare=bare)
            if json_body is not None:
                headers["Content-Type"] = "application/json"
            if extra_headers:
                headers.update(extra_headers)
            return self.transport.send(
                method, self.base_url + path, what or path, headers=headers, params=params,
                json_body=json_body, files=files, idempotent=idempotent, parse=parse,
                resend=resend, view=view, has_token=bool(tok or auth.token), into=into)

        token = auth.current(token)  # renewed by this client (a write run holds the old one)
        sent_with = token or auth.token
        try:
            return send(token)
        except Forbidden as exc:
            # an expired token is refused before anything is done, so even a POST may be
            # sent again, once, with a renewed one; only the client's own token is renewed
            if not (view and sent_with and auth.is_own(token) and auth.can_renew
                    and exc.message.endswith(EXPIRED_HINT)):
                raise
            log.info("the user token expired (%s): logging in again", what or path)
            auth.renew(sent_with, what or path, self.login)
        return send(None if token is None else auth.token)

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
        out = self.transport.send("GET", url, what or url,
                                  headers={"X-Service-Application-Id": self.app_id},
                                  idempotent=True, parse=bytes)
        return out if isinstance(out, bytes) else b""

    # ---- the session ---------------------------------------------------------------------
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
            token = user["token"]
        except (KeyError, TypeError):
            raise ServerError("login: the answer has no session.user.token") from None
        self.auth.logged_in(token, email, password)
        self.user = {k: v for k, v in user.items() if k != "token"}
        return self.user

    def close(self) -> None:
        """Close the HTTP session (``with Client(...) as c:`` closes it on leaving).

        Examples
        --------
        >>> c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url)
        >>> c.close()
        """
        self.session.close()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

