"""Response bodies parsed as the client parses them (orjson when installed), and the
reusable memory a listing's large bodies are read into (``BodyBuffers``).

Usage: ``parse_json(resp.content)["records"]``
"""

from __future__ import annotations

import json
import mmap
import sys
import threading
from typing import Any

__all__ = ["Body", "BodyBuffers", "parse_json"]

try:  # orjson parses pages faster than json (docs/benchmarks.md): parsing is the
    # client's main CPU cost
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - optional speed-up
    def _loads(body: bytes | memoryview | str) -> Any:  # type: ignore[misc]
        # json takes no memoryview (a body read into BodyBuffers): its bytes, copied
        return json.loads(bytes(body) if isinstance(body, memoryview) else body)


Body = bytes | memoryview
"""A response body as a parser is given it: bytes, or a memoryview of a buffer of
``BodyBuffers``, valid only until the parser returns (the buffer then holds the next
body)."""


def parse_json(body: Body | str) -> Any:
    """Parse a response body the way the client does (orjson when installed): the plain
    parser, and the fallback of a raw page that does not fit its structs.

    Usage: ``parse_json(resp.content)["records"]``"""
    return _loads(body)


BUFFERED_MIN = 1 << 16
"""The smallest body ``BodyBuffers`` takes; a smaller one is read as bytes."""


class BodyBuffers:
    """At most ``count`` buffers that large successful bodies are read into, one after
    another, by several threads (a listing's pages: ``HttpClient.request(...,
    into=buffers)``), each parsed from a memoryview of its buffer and the buffer reused
    for the next body.

    A body read as bytes comes from the C allocator's arena of the thread that reads it;
    what that thread's parse leaves there for the consumer to free later keeps the
    arena from shrinking, so each reading thread keeps about a body's size of free memory
    for the rest of the process (docs/benchmarks.md, "A load's memory"). A buffer here is
    an anonymous mapping of its own, made once, grown (mapped again, larger) only for a
    larger body, its pages touched once and reused; ``close`` unmaps them. When every
    buffer is in use, a body is read as bytes (``take`` gives None): nothing waits.

    Usage::

        buffers = BodyBuffers(6)
        client.request("GET", path, parse=parse, into=buffers)   # parse gets a memoryview
        buffers.close()   # unmapped now; bodies read as bytes from now on
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._free: list[mmap.mmap] = []
        self._made = 0          # buffers mapped and not unmapped, free or in use
        self._closed = False
        self._lock = threading.Lock()

    def take(self, length: int) -> memoryview | None:
        """A view of ``length`` bytes of a free buffer (the caller fills it, and gives it
        back once its body is parsed), or None: the body is small, the buffers are closed
        or all in use."""
        if length < BUFFERED_MIN:
            return None
        with self._lock:
            if self._closed:
                return None
            if self._free:
                buf: mmap.mmap | None = self._free.pop()
            elif self._made < self.count:
                self._made += 1
                buf = None
            else:
                return None
        if buf is None or len(buf) < length:
            if buf is not None:
                _unmap(buf)
            # twice the body: a larger page later fits; pages never written take no memory
            buf = mmap.mmap(-1, 2 * length)
        return memoryview(buf)[:length]

    def give(self, body: memoryview) -> None:
        """A view ``take`` gave, its body parsed: the buffer is free again (unmapped once
        the buffers are closed). The parser must keep no view of it."""
        buf = body.obj
        assert isinstance(buf, mmap.mmap)
        try:
            body.release()
            # a view made from ``body`` and still held keeps the buffer referred to (here
            # and by the getrefcount call, else): never written again
            kept = sys.getrefcount(buf) <= 2
        except BufferError:
            kept = False
        with self._lock:
            if kept and not self._closed:
                self._free.append(buf)
                return
            self._made -= 1
        _unmap(buf)

    def close(self) -> None:
        """Unmap the free buffers; those in use are unmapped as they are given back.
        Bodies are read as bytes from now on."""
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
            self._made -= len(free)
        for buf in free:
            _unmap(buf)


def _unmap(buf: mmap.mmap) -> None:
    """Unmap ``buf`` now, or (a view of it still held) once nothing refers to it."""
    try:
        buf.close()
    except BufferError:
        pass
