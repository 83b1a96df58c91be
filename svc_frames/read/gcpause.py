"""``paused_gc``: no cyclic garbage collection while pages are parsed and decoded.

Usage: ``with paused_gc(): frames = decode(pages)``
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_gc_lock = threading.Lock()


_gc_pauses = 0  # paused_gc blocks under way, in every thread


_gc_was_enabled = True


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while pages are parsed and decoded.

    Parsed pages are millions of acyclic dicts, lists and strings (reference counting
    frees them); the cyclic collector would still walk them all again and again, and a
    full collection of a 50,000-record load stalls every thread for a third of a second,
    making paced requests miss their slots. Re-enabled (if it was on) when the last pause
    ends: loads side by side (read_app) pause it together, so a small load finishing
    first must not switch it back on under a large one still running (that cost read_app
    of 30,000 records about 0.7 s of CPU).

    Usage: ``with paused_gc(): ...``"""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
