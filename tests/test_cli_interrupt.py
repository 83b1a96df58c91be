"""Ctrl-C at the terminal (SIGINT to the command's process group, as a shell sends it)
during `svc-frames push` and `svc-frames export`: one line on stderr, no traceback, exit
130; an interrupted push saved what was applied, so pushing again sends only the rest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from svc_frames.loaders import read_object
from svc_frames.saved.parquet import to_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.testing import client_for

EDITS = 30


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=60, rate_limit=0, seed=11) as s:
        yield s


def _command(svc: LocalService, *argv: str) -> subprocess.Popen[str]:
    env = dict(os.environ, SVC_APP_ID=svc.app_id, SVC_API_KEY=svc.api_key,
               SVC_BASE_URL=svc.base_url)
    return subprocess.Popen([sys.executable, "-m", "svc_frames.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)


def _interrupt_when(proc: subprocess.Popen[str], ready: Callable[[], bool]
                    ) -> tuple[int, str, str]:
    """SIGINT to the command's process group once ``ready()``; its code and output."""
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the command never got going"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def _puts(svc: LocalService) -> int:
    return svc.request_log.count(method="PUT", path_prefix="/v1/objects/object_3/records")


@pytest.mark.slow(seconds=15)
def test_ctrl_c_during_push_prints_one_line_and_exits_130(svc: LocalService,
                                                           tmp_path: Path) -> None:
    client = client_for(svc)
    frames = read_object(client, "object_3", columns="keys", progress=False)
    ids = frames.main.index[:EDITS].tolist()
    s = frames.main["field_12"].copy()
    for i, rid in enumerate(ids):
        s.at[rid] = f"pushed {i}"
    frames.main["field_12"] = s
    out = to_parquet(frames, tmp_path / "orders")
    svc.request_log.clear()
    # 8 requests/s: the 30 writes take about 4 s
    proc = _command(svc, "push", str(out), "--rate-limit", "8")
    code, stdout, stderr = _interrupt_when(proc, lambda: _puts(svc) >= 4)
    assert code == 130, stderr
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in lines[0] and f"svc-frames push {out}" in lines[0]
    first = _puts(svc)
    assert 4 <= first < EDITS
    # pushing again sends only the rest: every record is written exactly once
    again = push(client, out, progress=False)
    assert set(again.table["status"]) == {"applied"}
    assert _puts(svc) == EDITS
    server = read_object(client, "object_3", columns="keys", progress=False)
    for i, rid in enumerate(ids):
        assert server.main.at[rid, "field_12"] == f"pushed {i}"


@pytest.mark.slow(seconds=10)
def test_ctrl_c_during_export_prints_one_line_and_exits_130(svc: LocalService,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "orders"
    svc.request_log.clear()
    proc = _command(svc, "export", "object_3", "--out", str(out), "--columns", "keys",
                    "--rows-per-page", "5", "--rate-limit", "4", "--no-progress")
    code, stdout, stderr = _interrupt_when(
        proc, lambda: svc.request_log.count(
            method="GET", path_prefix="/v1/objects/object_3/records") >= 2)
    assert code == 130, stderr
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "interrupted" in lines[0]
    assert not out.exists()


def test_the_dry_run_says_how_long_the_push_takes(svc: LocalService, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.cli import main

    frames = read_object(client_for(svc), "object_3", columns="keys", progress=False)
    s = frames.main["field_12"].copy()
    for rid in frames.main.index[:5]:
        s.at[rid] = "dry"
    frames.main["field_12"] = s
    out = to_parquet(frames, tmp_path / "orders")
    for name, value in (("SVC_APP_ID", svc.app_id), ("SVC_API_KEY", svc.api_key),
                        ("SVC_BASE_URL", svc.base_url)):
        monkeypatch.setenv(name, value)
    assert main(["push", str(out), "--dry-run", "--rate-limit", "5"]) == 0
    printed = capsys.readouterr().out
    assert "5 update, 0 create, 0 delete: " in printed
    assert "requests (5 writes" in printed and "s at 5 requests/s" in printed
    last = json.loads(printed.strip().splitlines()[-1])
    assert last["estimate"]["requests"] >= 5 and last["estimate"]["seconds"] > 1
