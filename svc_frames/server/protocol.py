"""The HTTP/1.1 connection of the local service: uvicorn's h11 protocol with a bounded
request line, a deadline for each request to arrive, and refusals the client can read.

- A request line longer than ``MAX_REQUEST_LINE_BYTES`` is answered ``414``, and a request
  h11 cannot parse ``400``, both with the service's error body.
- A request (line, headers and body) must arrive whole within ``request_timeout_s``
  (``REQUEST_TIMEOUT_S`` by default) of its first byte, or of the connection's opening:
  a half-sent request is answered ``408``, a connection that never sent a byte is
  closed. Between requests, uvicorn's keep-alive timeout closes idle connections.
- A hosted connection opens with TCP and TLS handshakes, which the loopback lacks.
  Over HTTPS (``tls``: an ``ssl.SSLContext``, see tls.py) the server's side of the TLS
  handshake waits ``handshake_s()`` seconds, so the client's connect takes that long,
  as a hosted one does. Over plain HTTP a connection's first bytes reach h11 only
  ``handshake_s()`` after it opened: its first request is counted (the rate limit's
  second) that much later, as for a client that writes it at once.
- Whenever the connection is closed while the client may still be sending (a request
  refused before its body was read, with ``Connection: close``; a 414; a 408), it is
  half-closed and what the client still sends is read and dropped for up to ``DRAIN_S``
  seconds: closing a socket with unread data resets it, and the client would lose the
  answer.

Usage::

    uvicorn.Config(app, http=bounded_protocol(REQUEST_TIMEOUT_S, handshake_s=lambda: 0.2),
                   h11_max_incomplete_event_size=MAX_HEAD_BYTES)
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_REQUEST_LINE_BYTES = 8 * 1024  # method, target and version (without CRLF): the common
#                                   front-end limit
MAX_HEAD_BYTES = MAX_REQUEST_LINE_BYTES + 64 * 1024  # request line and headers, for h11
DRAIN_S = 5.0  # how long a refused connection is drained before it is closed
REQUEST_TIMEOUT_S = 30.0  # a request must arrive whole within this (from its first byte)
_STILL_SENDING = (h11.IDLE, h11.SEND_BODY, h11.ERROR)  # their states with bytes to come


def error_answer(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP answer with the service's error body, closing the connection."""
    body = json.dumps({"errors": [{"message": message}]}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body


class _DrainingTransport(asyncio.Transport):
    """The connection's transport as uvicorn sees it: ``close()`` drains first when the
    client may still be sending (see the module docstring)."""

    def __init__(self, inner: asyncio.Transport, protocol: BoundedH11Protocol) -> None:
        super().__init__()
        self._inner = inner
        self._protocol = protocol

    def close(self) -> None:
        self._protocol.close_draining()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._inner.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self._inner.writelines(list_of_data)

    def is_closing(self) -> bool:
        return self._inner.is_closing() or self._protocol.draining

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._inner.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._inner.resume_reading()

    def is_reading(self) -> bool:
        return self._inner.is_reading()

    def can_write_eof(self) -> bool:
        return self._inner.can_write_eof()

    def write_eof(self) -> None:
        self._inner.write_eof()

    def abort(self) -> None:
        self._inner.abort()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._inner.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._inner.set_write_buffer_limits(high, low)


class BoundedH11Protocol(H11Protocol):
    """h11 with a request-line limit (414), a request deadline (408) and drained closes."""

    request_timeout_s = REQUEST_TIMEOUT_S
    handshake_s: Callable[[], float] = staticmethod(lambda: 0.0)
    tls: ssl.SSLContext | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held: list[bytes] | None = None  # bytes in before the handshake is over
        self.draining = False
        self._raw: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._stopping = False
        self._opened = False  # False while the TLS handshake is still to be made

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        handshake = self.handshake_s()
        if self.tls is not None:
            # nothing is read (the ClientHello waits in the socket) until the handshake
            # may begin: the client's connect waits that long
            transport.pause_reading()
            self.loop.call_later(handshake, self._start_tls, transport, self.tls)
            return
        self._open(transport)
        if handshake > 0:
            self._held = []
            self.loop.call_later(handshake, self._handshake_over)

    def _open(self, transport: asyncio.Transport) -> None:
        self._opened = True
        self._raw = transport
        super().connection_made(_DrainingTransport(transport, self))
        self._start_deadline()

    def _start_tls(self, raw: asyncio.Transport, tls: ssl.SSLContext) -> None:
        if raw.is_closing():
            return
        upgrade = self.loop.create_task(self.loop.start_tls(
            raw, self, tls, server_side=True, ssl_handshake_timeout=self.request_timeout_s))
        upgrade.add_done_callback(lambda done: self._tls_made(done, raw))

    def _tls_made(self, done: asyncio.Task[asyncio.Transport | None],
                  raw: asyncio.Transport) -> None:
        """The handshake is over: serve HTTP over it, or close a failed one (a client
        that spoke plain HTTP, a bad certificate, a timeout) without an answer."""
        failed = done.cancelled() or done.exception() is not None
        transport = None if failed else done.result()
        if transport is None:
            raw.close()
            return
        self._open(transport)
        # what the client sent as soon as its side of the handshake was done came in
        # before start_tls returned: it waited in _held
        self._handshake_over()

    def _handshake_over(self) -> None:
        held, self._held = self._held, None
        if held and self._raw is not None and not self._raw.is_closing():
            self.data_received(b"".join(held))

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        if self._opened:  # lost before its TLS handshake: uvicorn never saw it
            super().connection_lost(exc)

    def shutdown(self) -> None:
        self._stopping = True  # the server stops: no drain holds it up
        super().shutdown()
        if self.draining and self._raw is not None:
            self._stop_now(self._raw)

    def _stop_now(self, raw: asyncio.Transport) -> None:
        """Close as the server stops: over TLS without waiting for the client's own
        close_notify, which an idle pooled connection never sends (the stop would wait
        out asyncio's 30 s TLS shutdown timeout)."""
        if self.tls is not None:
            raw.abort()
        else:
            raw.close()

    def eof_received(self) -> None:
        if self.draining and self._raw is not None:
            self._raw.close()  # the client has sent all it will: the drain is over

    def data_received(self, data: bytes) -> None:
        if not self._opened:
            self._held = (self._held or []) + [data]  # in before start_tls returned
            return
        if self._held is not None:
            self._held.append(data)  # still in the handshake
            return
        if self.draining:
            return  # refused: the rest of the request is read and dropped
        if self.conn.their_state is h11.IDLE:
            if self._line_too_long(data):
                self._refuse(414, "URI Too Long", f"the request line exceeds the limit of "
                                                  f"{MAX_REQUEST_LINE_BYTES} bytes")
                return
            if self._deadline is None:
                self._start_deadline()  # a new request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state not in _STILL_SENDING:
            self._stop_deadline()  # the whole request is in

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse (a header value with a control character, a bad
        line): 400 in the service's error body, as every other refusal (uvicorn's own is
        plain text), then a drained close."""
        self._refuse(400, "Bad Request", f"the request is not valid HTTP/1.1 ({msg.rstrip('.')})")

    # ---- the request deadline -----------------------------------------------------------
    def _start_deadline(self) -> None:
        self._stop_deadline()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._timed_out)

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if self.draining or self._raw is None or self._raw.is_closing():
            return
        if self.conn.their_state not in _STILL_SENDING:
            return  # the request is whole (an answer is being made)
        idle = self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]
        started = self.cycle is not None and self.cycle.response_started
        if idle or started:
            self._raw.close()  # nothing sent (or an answer already begun): no 408 to give
            return
        if self.cycle is not None:
            self.cycle.disconnected = True  # the routes get http.disconnect, answer nothing
            self.cycle.message_event.set()
        self._refuse(408, "Request Timeout", f"the request did not arrive whole within "
                                             f"{self.request_timeout_s:g} seconds")

    # ---- refusals and drained closes ----------------------------------------------------
    def _line_too_long(self, data: bytes) -> bool:
        # while no request has been parsed, h11 holds the bytes received so far
        held = self.conn.trailing_data[0]
        if len(held) + len(data) <= MAX_REQUEST_LINE_BYTES:
            return False
        buf = held + data
        end = buf.find(b"\n")
        if end < 0:
            return len(buf) > MAX_REQUEST_LINE_BYTES + 1  # the line's CR may be among them
        return end - (buf[end - 1:end] == b"\r") > MAX_REQUEST_LINE_BYTES

    def _refuse(self, status: int, reason: str, message: str) -> None:
        """Answer the connection's request ourselves, then drain and close."""
        if self._raw is None:
            return
        self._raw.write(error_answer(status, reason, message))
        self.close_draining(force=True)

    def close_draining(self, force: bool = False) -> None:
        """Close; while the client may still be sending, half-close and drain first."""
        raw = self._raw
        if raw is None or raw.is_closing() or self.draining:
            return
        self._stop_deadline()
        if self._stopping:
            self._stop_now(raw)
            return
        if not force and self.conn.their_state not in (h11.SEND_BODY, h11.ERROR):
            raw.close()  # nothing of the client's is still on its way
            return
        self.draining = True
        if raw.can_write_eof():
            raw.write_eof()
        raw.resume_reading()
        self.loop.call_later(DRAIN_S, raw.close)


def bounded_protocol(request_timeout_s: float = REQUEST_TIMEOUT_S, *,
                     handshake_s: Callable[[], float] = lambda: 0.0,
                     tls: ssl.SSLContext | None = None) -> type[BoundedH11Protocol]:
    """``BoundedH11Protocol`` with its own request deadline (tests use a short one), the
    handshake time of each new connection (read as each one opens) and, with ``tls``,
    HTTPS."""
    if not request_timeout_s > 0:
        raise ValueError(f"request_timeout_s must be > 0, got {request_timeout_s!r}")
    return type("BoundedH11Protocol", (BoundedH11Protocol,),
                {"request_timeout_s": float(request_timeout_s),
                 "handshake_s": staticmethod(handshake_s), "tls": tls})
