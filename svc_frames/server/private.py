"""Files only their owner may read: a data directory holds password hashes, the API key
and uploads, and local services run on shared machines and in CI.

Directories are made 0700 and files 0600 (SQLite gives its ``-wal`` and ``-shm`` files the
mode of the database file, so creating that one 0600 covers them).

Usage::

    private_dir(Path("data"))
    write_private(Path("data") / "app.json", b"{}")
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner may enter (made when missing)."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    return path


def write_private(path: Path, data: bytes) -> None:
    """Write a file readable by its owner only (also when it existed with a wider mode)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(path, FILE_MODE)


def touch_private(path: Path) -> None:
    """Create ``path`` empty and owner-only when missing; narrow its mode when present."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    os.chmod(path, FILE_MODE)
