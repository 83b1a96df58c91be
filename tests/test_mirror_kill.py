"""``kill -9`` at random points of mirror runs (DuckDB and Parquet): the target is always as
a whole run left it (its current tables equal the history's open versions, its runs
numbered without a gap) and the next run completes the work: nothing lost."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import svc_frames as sf
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import mirror_consistent as consistent

RUN = ("import sys, svc_frames as sf; c = sf.Client.from_env(rate_limit=0); "
       "sf.mirror(c, sys.argv[1], wait=30)")


@pytest.mark.slow(seconds=40)
@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_kill_9_at_random_points(kind: str, tmp_path: Path) -> None:
    rng = random.Random(9)
    with LocalService(demo=True, records=400, rate_limit=0, latency_ms=30, seed=4) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=0)
        target = str(tmp_path / "app.duckdb") if kind == "duckdb" else f"{tmp_path}/m/"
        env = {**os.environ, "SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
               "SVC_BASE_URL": svc.base_url}
        sf.mirror(client, target)
        ids = list(sf.read_object(client, "object_3", columns="keys").main.index)
        edited = []
        for i in range(4):
            rid = ids[i]
            svc.pages.update_record("object_3", rid, {"field_12": f"edit {i}"})
            edited.append(rid)
            with subprocess.Popen([sys.executable, "-c", RUN, target], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
                time.sleep(rng.uniform(0.5, 4.0))
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            consistent(target)
        final = sf.mirror(client, target)
        last = consistent(target)
        assert final.run == last
        now = sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"]
        loaded = sf.read_object(client, "object_3", columns="keys")
        pd.testing.assert_frame_equal(now.main.sort_index(), loaded.main.sort_index())
        for i, rid in enumerate(edited):
            assert now.main.loc[rid, "field_12"] == f"edit {i}"
