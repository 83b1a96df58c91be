"""Fixtures of the engine tests (``make test-engines``): one local Spark session for the
whole run (it takes a while to start) and the local service over loopback, as in
tests/conftest.py.

Spark runs in local mode on one core, its UI off, bound to 127.0.0.1; its session zone
is neither UTC nor the application's, so a test that passes does not owe it to a zone
that happens to agree.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from svc_frames.records import Client
from svc_frames.server import LocalService

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_ZONE = "Asia/Tokyo"

# the application fixtures of the main suite (tests/fixtures/), shared rather than copied
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("svc_frames-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.session.timeZone", SPARK_ZONE)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture()
def fresh_service() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=1) as svc:
        yield svc


@pytest.fixture()
def client(fresh_service: LocalService) -> Client:
    """A toolkit Client on ``fresh_service`` (pacing off: tests stay fast)."""
    return Client(fresh_service.app_id, api_key=fresh_service.api_key,
                  base_url=fresh_service.base_url, rate_limit=0, backoff=0.01)
