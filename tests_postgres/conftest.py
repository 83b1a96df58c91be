"""A real PostgreSQL 15 for the mirror's tests: a cluster of its own in a temporary
directory, started for the session and stopped after it (``make test-postgres``).

The server refuses to run as root, so when the tests run as root ``initdb`` and
``pg_ctl`` run as the ``postgres`` user (``runuser``), in a directory chowned to it; it
listens on a Unix socket in that directory only (no TCP port), with ``trust`` for local
connections. ``PG_BIN`` names another server's binaries (default Debian's
/usr/lib/postgresql/15/bin).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from svc_frames.server import LocalService

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))

# the local service's conftest fixtures (tests/conftest.py) are not collected here
os.environ.setdefault("SVC_PACE_DIR", tempfile.mkdtemp(prefix="svc-frames-pace-"))


def pytest_configure(config: pytest.Config) -> None:
    # the same mark as tests/conftest.py's (not collected here): a test of many seconds
    config.addinivalue_line("markers", "slow(seconds=10): a test of many seconds")


def _as_server_user(args: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *args] if owner else args


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[str]:
    """The base URL of a fresh cluster (``postgresql://postgres@/?host=<socket dir>``)."""
    if not (PG_BIN / "initdb").exists():
        pytest.fail(f"no PostgreSQL server at {PG_BIN} (make test-postgres installs "
                    "Debian's postgresql package)")
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="svc-frames-pg-"))
    if owner:
        pw = pwd.getpwnam(owner)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    data = root / "data"
    subprocess.run(_as_server_user([str(PG_BIN / "initdb"), "-D", str(data), "-U",
                                    "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
                                   owner), check=True, capture_output=True)
    opts = f"-c listen_addresses='' -c unix_socket_directories='{root}' -c fsync=off"
    subprocess.run(_as_server_user([str(PG_BIN / "pg_ctl"), "-D", str(data), "-l",
                                    str(root / "log"), "-o", opts, "-w", "start"], owner),
                   check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@/?host={root}"
    finally:
        subprocess.run(_as_server_user([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m",
                                        "immediate", "-w", "stop"], owner),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture()
def pg_url(pg_cluster: str, request: pytest.FixtureRequest) -> str:
    """A new database of the cluster for one test."""
    import psycopg

    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    with psycopg.connect(pg_cluster.replace("/?", "/postgres?"), autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}"')
        con.execute(f'CREATE DATABASE "{name}"')
    return pg_cluster.replace("/?", f"/{name}?")


@pytest.fixture()
def fresh_service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=1) as svc:
        yield svc
