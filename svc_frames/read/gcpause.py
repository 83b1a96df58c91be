"""``paused_gc``: no cyclic garbage collection while pages are parsed and decoded
(``gc_paused_call``: for a whole call, until its locals are freed).

Usage: ``with paused_gc(): frames = decode(pages)``
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

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
    first must not switch it back on under a large one still running (a measurable CPU
    cost for read_app).

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


def gc_paused_call(func: Callable[P, R]) -> Callable[P, R]:
    """``func`` with the cyclic GC paused (``paused_gc``) until the call has returned and
    its locals are gone: a load's page frames, garbage once joined, are then freed by
    reference counting before the collector runs again. A pause that ended inside the load
    left them to it: in a paced load a young collection and then an older one walked
    them, a third of the time after the last response. (This
    wrapper, unlike contextlib's decorator, is a frame of svc_frames: ``warn_user`` still
    finds the user's line.)

    Usage: ``@gc_paused_call`` on a function"""
    @functools.wraps(func)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with paused_gc():
            return func(*args, **kwargs)
    return paused
