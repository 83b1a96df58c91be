"""Persistence: restarts on the same data directory, a SIGKILL mid-burst, concurrent writes,
and computed values kept up to date across objects."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from svc_frames.server import LocalService
from svc_frames.testing import create, object_url


def test_restart_keeps_app_and_records(tmp_path: Path) -> None:
    with LocalService(records=10, data_dir=tmp_path) as svc:
        app_id, key = svc.app_id, svc.api_key
        rec = create(svc, "object_3", {"field_12": "persisted"})
    with LocalService(records=999, data_dir=tmp_path) as svc:
        assert (svc.app_id, svc.api_key) == (app_id, key)
        got = requests.get(object_url(svc, "object_3", rec["id"]), headers=svc.headers(),
                           timeout=30)
        assert got.status_code == 200 and got.json()["field_12"] == "persisted"
        total = requests.get(object_url(svc, "object_3"), headers=svc.headers(),
                             timeout=30).json()["total_records"]
        assert total == 11


def test_data_directory_without_raw_fragments_is_upgraded(tmp_path: Path) -> None:
    """A data directory from before ``frag_raw`` was stored gets it on open, filled from
    the stored fragments, so format=raw pages match the default format."""
    import sqlite3

    from svc_frames.server.render import format_record

    with LocalService(records=30, data_dir=tmp_path):
        pass
    with sqlite3.connect(tmp_path / "service.db") as db:
        db.execute("ALTER TABLE records DROP COLUMN frag_raw")
    with LocalService(records=30, data_dir=tmp_path) as svc:
        h = svc.headers()
        raw = requests.get(object_url(svc, "object_3"), headers=h,
                           params={"format": "raw", "rows_per_page": 1000},
                           timeout=30).json()["records"]
        both = requests.get(object_url(svc, "object_3"), headers=h,
                            params={"rows_per_page": 1000}, timeout=30).json()["records"]
    assert raw == [format_record(b, "raw") for b in both] and len(raw) >= 30


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_burst_keeps_every_answered_write(tmp_path: Path) -> None:
    def start() -> tuple[subprocess.Popen[str], dict[str, Any]]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "svc_frames.cli", "serve", "--data", str(tmp_path),
             "--port", "0", "--records", "20", "--rate-limit", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        return proc, json.loads(line)

    proc, info = start()
    headers = {"X-Service-Application-Id": info["app_id"],
               "X-Service-REST-API-KEY": info["api_key"]}
    url = f"{info['base_url']}/v1/objects/object_2/records"
    answered: dict[str, str] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        s = requests.Session()
        i = 0
        while not stop.is_set() and i < 2000:
            name = f"burst-{n}-{i}"
            i += 1
            try:
                r = s.post(url, json={"field_8": name, "field_10": i}, headers=headers,
                           timeout=10)
            except requests.RequestException:
                return
            if r.status_code == 200:
                with lock:
                    answered[r.json()["id"]] = name

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(answered) < 60 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # in the middle of the burst
    proc.wait(timeout=30)
    if proc.stdout is not None:   # close our end of its pipe (else a ResourceWarning)
        proc.stdout.close()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert len(answered) >= 60
    proc, info = start()
    try:
        headers["X-Service-REST-API-KEY"] = info["api_key"]
        url = f"{info['base_url']}/v1/objects/object_2/records"
        stored: dict[str, str] = {}
        page = 1
        while True:
            body = requests.get(url, headers=headers, params={"page": page,
                                                             "rows_per_page": 1000},
                                timeout=30).json()
            stored.update({r["id"]: r["field_8"] for r in body["records"]})
            if page >= body["total_pages"]:
                break
            page += 1
        missing = {k: v for k, v in answered.items() if stored.get(k) != v}
        assert not missing
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def test_concurrent_writes(fresh_service: LocalService) -> None:
    svc = fresh_service
    url = object_url(svc, "object_3")

    def one(i: int) -> dict[str, Any]:
        r = requests.post(url, json={"field_12": f"c{i}", "field_16": i}, headers=svc.headers(),
                          timeout=30)
        assert r.status_code == 200, r.text
        return dict(r.json())

    with ThreadPoolExecutor(8) as pool:
        recs = list(pool.map(one, range(80)))
    numbers = [r["field_24_raw"] for r in recs]
    assert len(set(numbers)) == 80  # auto increment never repeats under concurrency
    assert len({r["id"] for r in recs}) == 80
    total = requests.get(url, headers=svc.headers(), timeout=30).json()["total_records"]
    assert total == 30 + 80


def test_computed_fields_follow_connected_records(fresh_service: LocalService) -> None:
    svc = fresh_service
    h = svc.headers()
    p1 = create(svc, "object_2", {"field_8": "Widget A", "field_9": "10.00"})
    p2 = create(svc, "object_2", {"field_8": "Widget B", "field_9": 30})
    wo = create(svc, "object_3", {"field_12": "Sum me", "field_41": [p1["id"], p2["id"]],
                                  "field_16": 2, "field_17": "4.25"})
    assert wo["field_19_raw"] == 40.0 and wo["field_20_raw"] == 2
    assert wo["field_21_raw"] == 20.0 and wo["field_22_raw"] == 10.0
    assert wo["field_23_raw"] == 30.0 and wo["field_18_raw"] == 8.5
    assert wo["field_15"] == f"WO-{wo['field_24_raw']}: Sum me"
    assert {c["identifier"] for c in wo["field_41_raw"]} == {"Widget A", "Widget B"}
    requests.put(object_url(svc, "object_2", p1["id"]),
                 json={"field_9": "50", "field_8": "Widget A2"}, headers=h, timeout=30)
    wo = requests.get(object_url(svc, "object_3", wo["id"]), headers=h, timeout=30).json()
    assert wo["field_19_raw"] == 80.0 and wo["field_23_raw"] == 50.0
    assert "Widget A2" in {c["identifier"] for c in wo["field_41_raw"]}
    requests.delete(object_url(svc, "object_2", p2["id"]), headers=h, timeout=30)
    wo = requests.get(object_url(svc, "object_3", wo["id"]), headers=h, timeout=30).json()
    assert [c["id"] for c in wo["field_41_raw"]] == [p1["id"]]
    assert wo["field_20_raw"] == 1 and wo["field_19_raw"] == 50.0


def test_generator_is_deterministic(tmp_path: Path) -> None:
    from svc_frames.server import open_state

    def dump(path: Path) -> list[tuple[str, str, str]]:
        state = open_state(path, records=40, seed=7)
        rows = state.store.reader.execute(
            "SELECT obj, id, frag FROM records ORDER BY seq").fetchall()
        state.store.close()
        app_id = state.app.id
        # the application id (random per data directory) appears inside asset URLs
        return [(o, i, f.replace(app_id, "APP")) for o, i, f in rows]

    a, b = dump(tmp_path / "a"), dump(tmp_path / "b")
    assert a == b and len(a) > 40
