"""Shared fixtures: the local service over real loopback HTTP (never a mock).

``service``: one demo service for the whole session (300 work orders; do not rely on
records others may change: create your own, or use ``fresh_service``).
``fresh_service``: a new small demo service per test (30 work orders).
"""

from __future__ import annotations

import gc
import hashlib
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from svc_frames.server import LocalService

if TYPE_CHECKING:
    from svc_frames.records import Client


# Hypothesis profiles (the tests' own @settings, e.g. max_examples, still apply):
# "dev" (default): random examples, so every local run explores new ones; a failure
#   prints the @reproduce_failure blob.
# "ci" (when CI is set, or HYPOTHESIS_PROFILE=ci): derandomized, no example database: the
#   same code always draws the same examples, so a landing is never blocked by a case no
#   one has seen. The random version was run widely (thousands of examples, many seeds)
#   before this was made the CI default; keep exploring with the "dev" profile.
# Clients share their pace with other processes through files in the user's cache
# directory: tests (and the processes they start) keep theirs in a directory of their own
os.environ.setdefault("SVC_PACE_DIR", tempfile.mkdtemp(prefix="svc-frames-pace-"))

def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow(seconds=10): a test of many seconds, started "
                                       "first (the longest first)")
    # started in the background by a script (``make test &``), the tests inherit Ctrl-C
    # ignored, and so would the CLI runs and writes they interrupt: Python's own handler
    # back, in this process and (reset to the default at exec) in every child it starts
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first, the longest first (the others keep their order):
    started last, a few of them made the workers of ``make test`` wait for the one still
    running."""
    def order(item: pytest.Item) -> tuple[bool, float]:
        slow = item.get_closest_marker("slow")
        return slow is None, -float(slow.kwargs.get("seconds", 10)) if slow else 0.0
    items.sort(key=order)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (modules, test items, their parameters: about 150,000
    objects a worker) is kept to the end: frozen, the collector stops walking it. A worker
    grows to 300,000-470,000 objects, and its full collections (10-15 in a run, plus
    pytest's five at the end) walked them all: 7-13 s of each worker's CPU was spent in
    the collector (measured with gc.callbacks). Frozen, with a young collection after
    10,000 allocations instead of 700 (4-6 times fewer in a run) and full ones tried half
    as often: 3-7 s, of which full collections 1.1-1.5 s (frozen alone, full collections
    came more often: 3-8 s of them)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


settings.register_profile("dev", print_blob=True)
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=300, rate_limit=0, seed=0) as svc:
        yield svc


@pytest.fixture()
def fresh_service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=1) as svc:
        yield svc


@pytest.fixture()
def scrypt_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the password hashes computed meanwhile (by services in this process)."""
    calls: list[int] = []
    real: Callable[..., bytes] = hashlib.scrypt

    def counting(*args: Any, **kwargs: Any) -> bytes:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(hashlib, "scrypt", counting)
    return calls


@pytest.fixture()
def client(service: LocalService) -> Client:
    """A toolkit Client on the shared ``service`` (pacing off: tests stay fast)."""
    from svc_frames.records import Client

    return Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                  rate_limit=0, backoff=0.01)
