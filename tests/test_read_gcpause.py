"""read/gcpause.py: the garbage-collector pause shared by loads running side by side, and
held over a whole call until its locals are freed."""

from __future__ import annotations

import gc
import threading
import warnings
import weakref

from svc_frames.errors import NameWarning, warn_user
from svc_frames.read.gcpause import gc_paused_call, paused_gc


def test_gc_stays_paused_until_the_last_of_overlapping_loads_ends() -> None:
    # read_app runs loads in threads: a small one that began first and ends first must
    # not switch the collector back on under a large one still decoding
    assert gc.isenabled()
    small_in, large_in, small_out = threading.Event(), threading.Event(), threading.Event()

    def small() -> None:
        with paused_gc():
            small_in.set()
            assert large_in.wait(5)
        small_out.set()

    worker = threading.Thread(target=small)
    worker.start()
    assert small_in.wait(5)
    with paused_gc():
        large_in.set()
        assert small_out.wait(5)
        worker.join(5)
        assert not gc.isenabled()  # the large load is still running
    assert gc.isenabled()


def test_gc_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


class _Part:
    """Stands for a page's frames: garbage once the call that built it returns."""


def test_a_paused_call_frees_its_locals_before_the_collector_runs_again() -> None:
    enabled_when_freed: list[bool] = []

    @gc_paused_call
    def build() -> int:
        assert not gc.isenabled()
        part = _Part()
        weakref.finalize(part, lambda: enabled_when_freed.append(gc.isenabled()))
        return 1

    assert gc.isenabled()
    assert build() == 1
    assert enabled_when_freed == [False]   # freed by reference counting, under the pause
    assert gc.isenabled()


def test_a_paused_call_ends_its_pause_when_it_raises_and_keeps_its_name() -> None:
    @gc_paused_call
    def fails() -> None:
        """Its own docstring."""
        raise KeyError("x")

    try:
        fails()
    except KeyError:
        pass
    assert gc.isenabled()
    assert fails.__name__ == "fails" and fails.__doc__ == "Its own docstring."


def test_a_warning_inside_a_paused_call_names_the_callers_line() -> None:
    # warn_user walks out of svc_frames' frames: the wrapper must be one of them
    # (contextlib's decorator would put the warning on contextlib's line)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        gc_paused_call(warn_user)("a name changed", NameWarning)
    assert seen[0].filename == __file__
