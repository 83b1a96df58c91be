"""A real PostgreSQL 15 for the mirror's tests: a cluster of its own in a temporary
directory, started for the session and stopped after it (``make test-postgres``), by
``svc_frames.testing.postgres_cluster`` (which says how it runs when the tests run as
root). ``PG_BIN`` names another server's binaries (default Debian's
/usr/lib/postgresql/15/bin).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from svc_frames.server import LocalService
from svc_frames.testing import PG_BIN, postgres_cluster, postgres_database

# the local service's conftest fixtures (tests/conftest.py) are not collected here
os.environ.setdefault("SVC_PACE_DIR", tempfile.mkdtemp(prefix="svc-frames-pace-"))


def pytest_configure(config: pytest.Config) -> None:
    # the same mark as tests/conftest.py's (not collected here): a test of many seconds
    config.addinivalue_line("markers", "slow(seconds=10): a test of many seconds")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[str]:
    """The base URL of a fresh cluster (``postgresql://postgres@/?host=<socket dir>``)."""
    try:
        with postgres_cluster(PG_BIN) as base:
            yield base
    except FileNotFoundError as e:
        pytest.fail(str(e))


@pytest.fixture()
def pg_url(pg_cluster: str, request: pytest.FixtureRequest) -> str:
    """A new database of the cluster for one test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:50].lower()
    return postgres_database(pg_cluster, name)


@pytest.fixture()
def fresh_service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=1) as svc:
        yield svc
