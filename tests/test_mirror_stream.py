"""A first run writes each page while the next are read (mirroring/stream.py): the rows go
into the target before the last page is served, the tables are the same as when written
after the last page, and nothing is visible (or left) before the commit."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

import svc_frames as sf
from svc_frames.mirroring import run as run_module
from svc_frames.mirroring.duckdbtarget import DuckDBTarget, DuckDBWriter
from svc_frames.mirroring.state import MirrorState
from svc_frames.mirroring.stream import StreamedObject
from svc_frames.mirroring.target import open_target
from svc_frames.records import Client
from svc_frames.server import LocalService

PAGES = "/v1/objects/object_3/records"


def client_of(svc: LocalService, rate: float = 0) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=rate,
                  backoff=0.01)


class Noting(DuckDBTarget):
    """A DuckDB target that notes, at each insert, how many pages the service answered."""

    def __init__(self, path: Path, svc: LocalService) -> None:
        super().__init__(path)
        self.svc = svc
        self.inserts: list[tuple[str, int]] = []

    @contextmanager
    def _transaction(self) -> Iterator[DuckDBWriter]:
        with super()._transaction() as w:
            real = w.insert

            def insert(table: str, data: pa.Table) -> None:
                self.inserts.append((table, self.svc.request_log.count(
                    method="GET", path_prefix=PAGES)))
                real(table, data)
            w.insert = insert  # type: ignore[method-assign]
            yield w


def test_rows_are_written_before_the_last_page_is_served(tmp_path: Path) -> None:
    with LocalService(demo=True, records=400, rate_limit=0, seed=3) as svc:
        client = client_of(svc, rate=10)     # 20 pages at the hosted pace: 10 at once,
        # then one each 0.1 s
        svc.request_log.clear()
        target = Noting(tmp_path / "app.duckdb", svc)
        report = sf.mirror(client, target, ["object_3"], rows_per_page=20)
        served = svc.request_log.count(method="GET", path_prefix=PAGES)
        assert report.total("inserted") == 400 and served >= 20
        main = [n for t, n in target.inserts if t == "work_orders"]
        assert main[0] < served           # the first page's rows went in mid-listing
        assert len(main) >= 2             # more written as the pages came
    tgt = open_target(tmp_path / "app.duckdb")
    tgt.check()
    try:
        assert tgt.read("work_orders").num_rows == 400
        assert tgt.read("work_orders__history").num_rows == 400
    finally:
        tgt.close()


def tables_of(target: str) -> dict[str, pa.Table]:
    """Every table of a mirror but the run's times (the start, the report, when each
    load began), by name."""
    tgt = open_target(target)
    tgt.check()
    try:
        out = {}
        for name in sorted(tgt.tables()):
            data = tgt.read(name)
            if name in ("svc_mirror_runs", "svc_sources"):
                continue
            for col in ("valid_from", "valid_to", "time"):
                if col in data.column_names:
                    data = data.drop_columns([col])
            if "source" in data.column_names:   # the load's start: a time too
                i = data.column_names.index("source")
                data = data.set_column(i, "source", pa.array(
                    [re.sub(r'"loaded_at": "[^"]*"', "", v) for v in
                     data.column(i).to_pylist()], pa.string()))
            out[name] = data.replace_schema_metadata(None)
        return out
    finally:
        tgt.close()


@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
@pytest.mark.parametrize("how", ["fallback", "at the end"])
def test_streamed_tables_equal_those_written_at_the_end(
        kind: str, how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept: list[bool] = []
    real_finish = StreamedObject.finish

    def finish(self: StreamedObject, frames: sf.Frames) -> None:
        real_finish(self, frames)
        kept.append(self.whole)

    monkeypatch.setattr(StreamedObject, "finish", finish)
    with LocalService(demo=True, records=250, rate_limit=0, seed=5) as svc:
        client = client_of(svc)

        def name(tag: str) -> str:
            return str(tmp_path / f"{tag}.duckdb") if kind == "duckdb" else \
                f"{tmp_path}/{tag}/"
        sf.mirror(client, name("streamed"), rows_per_page=60)
        assert kept and all(kept)   # every object's pages were kept as written
        with monkeypatch.context() as m:
            if how == "at the end":    # no stream: written after the last page
                m.setattr(run_module, "StreamedObject", lambda *a, **k: None)
            else:                      # streamed, then dropped and written again
                m.setattr(StreamedObject, "_differs", lambda self, frames: "forced")
            kept.clear()
            sf.mirror(client, name("other"), rows_per_page=60)
            assert not any(kept)
    a, b = tables_of(name("streamed")), tables_of(name("other"))
    assert sorted(a) == sorted(b)
    for table in a:
        assert a[table].schema == b[table].schema, table
        assert a[table].equals(b[table]), table


RUN = ("import sys, svc_frames as sf; c = sf.Client.from_env(rate_limit=10); "
       "sf.mirror(c, sys.argv[1], ['object_3'], rows_per_page=20)")


@pytest.mark.slow(seconds=15)
@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_kill_9_while_pages_are_written(kind: str, tmp_path: Path) -> None:
    with LocalService(demo=True, records=400, rate_limit=0, seed=3) as svc:
        target = str(tmp_path / "app.duckdb") if kind == "duckdb" else f"{tmp_path}/m/"
        env = {**os.environ, "SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
               "SVC_BASE_URL": svc.base_url}
        svc.request_log.clear()
        with subprocess.Popen([sys.executable, "-c", RUN, target], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
            deadline = time.monotonic() + 60
            while svc.request_log.count(method="GET", path_prefix=PAGES) < 15:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)   # the first pages written, 5 to come
            proc.wait(timeout=30)
        tgt = open_target(target)
        tgt.check()
        try:
            assert MirrorState.read(tgt) is None    # no run committed
            assert not {t for t in tgt.tables() if t.startswith("work_orders")}
        finally:
            tgt.close()
        report = sf.mirror(client_of(svc), target, ["object_3"])   # the next run: whole
        assert report.run == 1 and report.total("inserted") == 400


def test_a_write_failing_mid_listing_leaves_nothing(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalService(demo=True, records=200, rate_limit=0, seed=3) as svc:
        client = client_of(svc)
        target = tmp_path / "app.duckdb"
        real = DuckDBWriter.insert
        calls: list[str] = []

        def failing(self: DuckDBWriter, table: str, data: pa.Table) -> None:
            calls.append(table)
            if len(calls) == 3:     # in the writer thread, while pages are read
                raise OSError("disk full")
            real(self, table, data)

        monkeypatch.setattr(DuckDBWriter, "insert", failing)
        with pytest.raises(OSError, match="disk full"):
            sf.mirror(client, target, ["object_3"], rows_per_page=20)
        monkeypatch.undo()
        tgt = open_target(target)
        tgt.check()
        try:
            assert MirrorState.read(tgt) is None and not tgt.tables()
        finally:
            tgt.close()
        assert sf.mirror(client, target, ["object_3"]).total("inserted") == 200


def test_a_run_stopped_outside_a_listing_stops_its_writer_threads(tmp_path: Path) -> None:
    """Ctrl-C between two objects (or in a listing's finish) ends the run's block while a
    writer thread may still be alive: it is stopped before the transaction rolls back, so
    no thread uses the connection then, nor when the interpreter exits under it."""
    import datetime as dt

    from svc_frames.mirroring.stream import RunWrites
    tgt = open_target(tmp_path / "m.duckdb")
    try:
        tgt.check()
        with pytest.raises(KeyboardInterrupt):
            with RunWrites(tgt) as writes:
                stream = StreamedObject(writes, "work_orders", dt.datetime.now(dt.timezone.utc),
                                        1)
                assert stream._thread.is_alive()
                raise KeyboardInterrupt
        assert not stream._thread.is_alive()
        assert stream.why_not == "abandoned"
    finally:
        tgt.close()
