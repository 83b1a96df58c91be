"""``svc-frames mirror``: one summary line and exit 0, ``--json``, typed errors as one line,
and Ctrl-C in the middle of a run: one line, exit 130, the target whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from svc_frames.cli import main
from svc_frames.server import LocalService


def env_of(svc: LocalService) -> dict[str, str]:
    return {**os.environ, "SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
            "SVC_BASE_URL": svc.base_url}


def test_mirror_command_prints_one_line_and_json(fresh_service: LocalService, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in env_of(fresh_service).items():
        if k.startswith("SVC_"):
            monkeypatch.setenv(k, v)
    target = tmp_path / "app.duckdb"
    assert main(["mirror", "--to", str(target), "--rate-limit", "0"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and out[0].startswith("mirror run 1 to ")
    assert "90 inserted" in out[0]
    assert main(["mirror", "--to", str(target), "--objects", "Parts", "--json",
                 "--rate-limit", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["run"] == 2 and list(report["objects"]) == ["object_2"]
    assert report["objects"]["object_2"]["unchanged"] == 40
    # bad input: one line on stderr, exit 2, nothing sent
    assert main(["mirror", "--to", str(tmp_path / "no" / "such.duckdb")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "does not exist" in err[0]


def test_ctrl_c_mid_run_leaves_the_target_whole(tmp_path: Path) -> None:
    # a paced service: the first run takes seconds, and is interrupted within them
    with LocalService(demo=True, records=3000, rate_limit=0, latency_ms=400, seed=3) as svc:
        target = tmp_path / "app.duckdb"
        cmd = [sys.executable, "-m", "svc_frames.cli", "mirror", "--to", str(target),
               "--rate-limit", "0"]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env_of(svc), text=True) as proc:
            lock = Path(f"{target}.mirror-lock")   # taken once the run has begun
            deadline = time.monotonic() + 60
            while not lock.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)   # within the loads (3,000 records at 400 ms a request)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "nothing half-written" in lines[0], err
        assert "Traceback" not in err
        if target.exists():   # no run, or the whole of the first one
            con = duckdb.connect(str(target), read_only=True)
            try:
                tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
                assert not tables or con.execute(
                    "SELECT count(*) FROM svc_mirror_runs").fetchone() == (1,)
            finally:
                con.close()
