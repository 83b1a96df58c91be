"""Connections that are open before their request is paced.

The hosted service counts a request in the second of its clock in which the request
arrives, and the limiter (limiter.py) books that second from when the request leaves.
A request on a new connection leaves only after the TCP and TLS handshakes, about two
round trips: booked before them, it lands later than booked, possibly in the second the
limiter gave to later requests, and draws a 429. So the order here is: take a pooled
connection, open it if it is not open (or was closed by the server), and only then ask
the pace (the caller's hook), and send at once.

``PacedAdapter`` is requests' adapter with such connections; ``paced_by(hook)`` runs
``hook()`` on the calling thread just before each request that thread sends through it.
The hook may wait (the pace) and may raise (a passed deadline: the request is not sent).
When the server closed the connection while the hook waited, the connection is opened
again and the hook asked again: the booked slot is given up rather than spent late.

Usage::

    session.mount("https://", PacedAdapter(pool_maxsize=12, max_retries=0))
    with paced_by(limiter.acquire):
        session.get(url)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_hook = threading.local()  # .before: the calling thread's hook, or None


@contextlib.contextmanager
def paced_by(before: Callable[[], None]) -> Iterator[None]:
    """Run ``before()`` just before each request this thread sends, its connection open."""
    outer = getattr(_hook, "before", None)
    _hook.before = before
    try:
        yield
    finally:
        _hook.before = outer


class _OpenFirst:
    """Mixin of urllib3's connections: open, then the hook, then the request."""

    used = False  # a request went on this connection since it was opened

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.used = False

    def request(self, method: str, url: str, body: Any = None,
                headers: Any = None, **kw: Any) -> None:
        conn: Any = self
        before = getattr(_hook, "before", None)
        if before is not None:
            while True:
                if conn.sock is None:  # (urllib3 opens an HTTPS one before this)
                    conn.connect()
                before()
                # an unused connection is not checked: a TLS 1.3 server's session
                # tickets, unread until an answer is, make it look closed
                if not self.used or conn.is_connected:
                    break
                conn.close()  # closed by the server while the pace held us
        self.used = True
        super().request(method, url, body, headers, **kw)  # type: ignore[misc]


class _HTTPConnection(_OpenFirst, HTTPConnection):
    pass


class _HTTPSConnection(_OpenFirst, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class PacedAdapter(HTTPAdapter):
    """requests' adapter whose connections are opened before ``paced_by``'s hook runs."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
