"""Who a request speaks for: the application id and API key of object requests, the user
token of view requests (docs/service-interface.md §5), the e-mail and password of the
client's own login kept in memory to renew an expired token, and the redaction of every
secret from the text a user may see.

Usage::

    auth = Auth("app_id", api_key="...", token=None)
    auth.headers(view=True)          # {"X-Service-Application-Id": ..., "Authorization": ...}
    auth.redact("... the key ...")   # "... *** ..."
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ..errors import AuthenticationError, ConfigurationError
from .hints import KEY_FROM_ARGUMENT, key_refused

__all__ = ["Auth"]


class Auth:
    """The secrets of one client and the headers they make; never shown."""

    def __init__(self, app_id: str, api_key: str | None, token: str | None) -> None:
        self.app_id = app_id
        self.api_key = api_key
        self._token = token
        # where the key came from, named when the service refuses it (hints.py): the CLI
        # and ``from_env`` say so; given directly, it is the argument
        self.key_source = KEY_FROM_ARGUMENT
        # the e-mail and password of the last successful login, in memory only: an expired
        # token is renewed with them (``renew``); never shown in a repr, log or error
        self._credentials: tuple[str, str] | None = None
        self._renew_lock = threading.Lock()
        self._replaced: set[str] = set()  # tokens renewed: the current one stands in

    @property
    def token(self) -> str | None:
        """The user token of view requests; setting it forgets the kept credentials."""
        return self._token

    @token.setter
    def token(self, value: str | None) -> None:
        self._token = value
        self._credentials = None  # a token set by hand is not renewed with an older login

    def key_refused_hint(self) -> str:
        """What a 401 to an object request adds: where the refused API key came from
        ("" without a key: the ConfigurationError of ``headers`` comes first)."""
        return key_refused(self.key_source, self.app_id) if self.api_key else ""

    @property
    def can_renew(self) -> bool:
        """Whether the credentials of a login are kept."""
        return self._credentials is not None

    def logged_in(self, token: str, email: str, password: str) -> None:
        """A login succeeded: its token is the client's, its credentials kept."""
        self._token = token
        self._credentials = (email, password)

    def current(self, token: str | None) -> str | None:
        """``token``, or the current one when ``token`` is one this client renewed (a write
        run holds the token it started with)."""
        if token is not None and token in self._replaced:
            return self._token
        return token

    def is_own(self, token: str | None) -> bool:
        """Whether ``token`` (None: the client's) is this client's, now or before a renewal."""
        return token is None or token == self._token or token in self._replaced

    def headers(self, *, view: bool = False, token: str | None = None,
                key_required: bool = True, bare: bool = False) -> dict[str, str]:
        """The headers of a request (see ``Client.headers``)."""
        if bare:
            return {}
        out = {"X-Service-Application-Id": self.app_id}
        if view:
            out["X-Service-REST-API-KEY"] = "service"
            tok = token or self._token
            if tok:
                out["Authorization"] = tok
        elif self.api_key:
            out["X-Service-REST-API-KEY"] = self.api_key
        elif key_required:
            raise ConfigurationError(
                "object requests need the API key: Client(api_key=...) or SVC_API_KEY")
        return out

    def redact(self, text: str) -> str:
        """``text`` with the key, the tokens and the kept password replaced by ``***``."""
        password = self._credentials[1] if self._credentials else None
        for secret in (self.api_key, self._token, password, *self._replaced):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
        return text

    def renew(self, expired: str, what: str,
              login: Callable[[str, str], object]) -> None:
        """Log in again with the kept credentials (``login(email, password)``), unless
        another thread already replaced the ``expired`` token. A refused login (the
        password changed) forgets them and raises AuthenticationError: it is never tried
        again with the same password."""
        with self._renew_lock:
            if self._token != expired or self._credentials is None:
                return
            email, password = self._credentials
            try:
                login(email, password)
                self._replaced.add(expired)
            except AuthenticationError as exc:
                self._credentials = None
                raise AuthenticationError(
                    f"{what}: the user token expired and logging in again with the kept "
                    f"e-mail and password was refused ({exc.message}): call "
                    "client.login(email, password) with the current password",
                    status=exc.status, body=exc.body) from None
