"""One mirror run at a time per target: a lock file beside a DuckDB file or inside a
Parquet directory (PostgreSQL uses an advisory lock, postgres.py).

The lock is an ``flock`` on ``<target>.mirror-lock`` (released by the kernel when its
process ends, even by ``kill -9``, so a killed run never leaves a target locked); the file
holds the holder's process id, host and start time, which a second run names when it gives
up waiting.

Usage::

    with file_lock(Path("app.duckdb.mirror-lock"), wait=0.0, what="app.duckdb"):
        ...   # the run
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import TargetBusy

__all__ = ["file_lock", "holder_text"]


def holder_text() -> str:
    """Who this process is, as a lock names its holder."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return f"process {os.getpid()} on {socket.gethostname()} since {now}"


@contextmanager
def file_lock(path: Path, *, wait: float, what: str) -> Iterator[None]:
    """Hold ``path``'s lock for the block; wait up to ``wait`` seconds for it, then
    ``TargetBusy`` naming the holder."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + max(float(wait), 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    held = os.pread(fd, 500, 0).decode("utf-8", "replace").strip()
                    raise TargetBusy(f"another mirror run holds {what} ({held or 'unknown'});"
                                     f" waited {wait:g} s (pass wait= to wait longer)"
                                     ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_text().encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
