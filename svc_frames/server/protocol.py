"""The HTTP/1.1 connection of the local service: uvicorn's h11 protocol with a bounded
request line, answered 414 (instead of h11's 400 and a closed, possibly reset, connection).

A request line longer than ``MAX_REQUEST_LINE_BYTES`` is answered ``414`` with the
service's error body; the connection is then half-closed and what the client still sends
is read and dropped, so the client reads the answer rather than a reset.

Usage::

    uvicorn.Config(app, http=BoundedH11Protocol,
                   h11_max_incomplete_event_size=MAX_HEAD_BYTES)
"""

from __future__ import annotations

import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_REQUEST_LINE_BYTES = 8 * 1024  # method, target and version (without CRLF): the common
#                                   front-end limit
MAX_HEAD_BYTES = MAX_REQUEST_LINE_BYTES + 64 * 1024  # request line and headers, for h11
DRAIN_S = 5.0  # how long a refused connection is drained before it is closed


class BoundedH11Protocol(H11Protocol):
    """h11 with a request-line limit answered 414."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused = False

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered 414: the rest of the request is read and dropped
        if self.conn.their_state is h11.IDLE and self._line_too_long(data):
            self._refuse()
            return
        super().data_received(data)

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

    def _refuse(self) -> None:
        self._refused = True
        body = json.dumps({"errors": [{"message": f"the request line exceeds the limit of "
                                                  f"{MAX_REQUEST_LINE_BYTES} bytes"}]}).encode()
        head = ("HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
        self.transport.write(head + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(DRAIN_S, self.transport.close)
