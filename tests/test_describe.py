"""describe.py: the garbage-collector pause shared by loads running side by side."""

from __future__ import annotations

import gc
import threading

from svc_frames.read.gcpause import paused_gc


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
