"""Where the request starts booked for one application are kept: in memory (one process)
or in a small locked file in the user's cache directory (every process of this machine
that paces the same application).

Each start is (time, second): its epoch time on our clock and the second of the service's
clock that counted it (NaN until its answer says). The file holds only recent starts,
rewritten whole under an
exclusive ``fcntl.flock``; the kernel drops that lock when its holder dies, and a dead
process's starts age out within the pace window, so a crash never blocks the others.
Where ``fcntl`` is missing (Windows) or the directory cannot be written, ``open_ledger``
warns once and keeps the starts in memory (pacing per process).

Usage::

    ledger = open_ledger(base_url, app_id)          # file-backed where possible
    start = ledger.update(lambda starts: book(starts))   # read, change, write, locked
"""

from __future__ import annotations

import hashlib
import os
import struct
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ..errors import PaceWarning

T = TypeVar("T")

PACE_DIR_ENV = "SVC_PACE_DIR"
"""Environment variable naming the directory of the shared pace files (default: the user's
cache directory, ``$XDG_CACHE_HOME/svc_frames/pace`` or ``~/.cache/svc_frames/pace``)."""

_HEADER = struct.Struct("<I")
_START = struct.Struct("<dd")
Start = tuple[float, float]
"""A booked start: (epoch time on our clock, the service's second that counted it or NaN)."""
MAX_STARTS = 4096
"""Most starts a pace file holds (a corrupt count beyond it is read as empty)."""


class MemoryLedger:
    """The starts of one process, in memory (the caller holds its own thread lock)."""

    path: Path | None = None

    def __init__(self) -> None:
        self._starts: list[Start] = []

    def update(self, change: Callable[[list[Start]], T]) -> T:
        """``change`` the starts in place; its result is returned."""
        return change(self._starts)


class FileLedger:
    """The starts of every process of this machine pacing one application, in ``path``.

    Each ``update`` holds an exclusive ``flock`` on the file while it reads the starts,
    lets ``change`` edit them and writes them back in one ``pwrite`` (a process killed
    mid-update leaves either the old or the new starts, and its lock dies with it)."""

    def __init__(self, path: Path) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            raise OSError("fcntl is not available on this platform")
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # opened once and kept: a lock is per open file, so threads of this process are
        # kept apart by the limiter's own lock, processes by the flock
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def update(self, change: Callable[[list[Start]], T]) -> T:
        """Read the starts, ``change`` them in place, write them back; all under the lock."""
        assert fcntl is not None
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            starts = _decode(os.pread(self._fd, _HEADER.size + MAX_STARTS * _START.size, 0))
            out = change(starts)
            del starts[:-MAX_STARTS]
            data = _HEADER.pack(len(starts)) + b"".join(_START.pack(*s) for s in starts)
            os.pwrite(self._fd, data, 0)
            return out
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


def _decode(data: bytes) -> list[Start]:
    """The starts in a pace file's bytes; an empty, short or corrupt file holds none."""
    if len(data) < _HEADER.size:
        return []
    (n,) = _HEADER.unpack_from(data)
    if n > MAX_STARTS or len(data) < _HEADER.size + n * _START.size:
        return []
    out: list[Start] = []
    for i in range(n):
        t, second = _START.unpack_from(data, _HEADER.size + i * _START.size)
        out.append((t, second))
    return out


def pace_dir() -> Path:
    """The directory of the shared pace files: ``$SVC_PACE_DIR``, else the user's cache
    directory (``$XDG_CACHE_HOME`` or ``~/.cache``) + ``svc_frames/pace``."""
    env = os.environ.get(PACE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "svc_frames" / "pace"


def pace_file(base_url: str, app_id: str, directory: Path | None = None) -> Path:
    """The pace file of one application of one service (a hash of both: no secrets and
    no odd characters in a file name)."""
    key = hashlib.sha256(f"{base_url.rstrip('/')}\n{app_id}".encode()).hexdigest()[:24]
    return (directory or pace_dir()) / f"{key}.pace"


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def open_ledger(base_url: str, app_id: str,
                directory: Path | None = None) -> MemoryLedger | FileLedger:
    """The file-backed ledger of an application, or (with one ``PaceWarning`` per
    directory) an in-memory one when the file cannot be used.

    Parameters
    ----------
    base_url, app_id
        The service and application whose pace is shared.
    directory
        Where the pace file lives (default ``pace_dir()``).

    Returns
    -------
    FileLedger or MemoryLedger

    Examples
    --------
    >>> ledger = open_ledger("http://127.0.0.1:8000", "app_1")  # doctest: +SKIP
    """
    path = pace_file(base_url, app_id, directory)
    if fcntl is None:  # pragma: no cover - Windows
        _warn_once("fcntl", "pacing is per process on this platform (no fcntl): two "
                   "processes loading the same application each take the full rate")
        return MemoryLedger()
    try:
        return FileLedger(path)
    except OSError as exc:
        _warn_once(str(path.parent), f"cannot share the pace between processes: "
                   f"{path.parent} is not writable ({exc.strerror or exc}); pacing per "
                   f"process (set {PACE_DIR_ENV} to a writable directory)")
        return MemoryLedger()


def _warn_once(key: str, message: str) -> None:
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    warnings.warn(message, PaceWarning, stacklevel=5)  # the caller of Client(...)
