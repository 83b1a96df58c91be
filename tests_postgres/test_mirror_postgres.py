"""The mirror against a real PostgreSQL 15 (its own cluster: conftest.py): the same
model as DuckDB's, rows written by COPY, one transaction per run, the advisory lock."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import subprocess
import sys
import time
from typing import Any

import pandas as pd
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import svc_frames as sf
from svc_frames.errors import SchemaChanged, TargetBusy, TargetMismatch, UsageError
from svc_frames.mirroring.history import versions
from svc_frames.mirroring.postgres import PostgresTarget, PostgresWriter
from svc_frames.server import LocalService
from svc_frames.testing import mirror_consistent
from tests.test_mirror import client_of, same_frames


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as con:
        return con.execute(sql).fetchall()


def test_runs_versions_and_the_past(fresh_service: LocalService, pg_url: str) -> None:
    svc = fresh_service
    client = client_of(svc)
    first = sf.mirror(client, pg_url)
    assert first.total("inserted") == 90
    assert "***" not in first.target or "@" in first.target
    assert rows(pg_url, "SELECT count(*) FROM work_orders") == [(30,)]
    loaded = sf.read_object(client, "object_3", columns="keys")
    same_frames(sf.as_of(pg_url, pd.Timestamp.now(tz="UTC"))["object_3"], loaded)
    ids = list(loaded.main.index)
    svc.pages.update_record("object_3", ids[0], {"field_12": "Replace the valve"})
    client.delete_record("object_3", ids[1])
    between = pd.Timestamp.now(tz="UTC")
    time.sleep(0.05)
    second = sf.mirror(client, pg_url)
    o = second.objects["object_3"]
    assert (o.inserted, o.updated, o.deleted, o.unchanged) == (0, 1, 1, 28)
    assert o.requests <= 3
    assert rows(pg_url, "SELECT change, count(*) FROM work_orders__history GROUP BY 1 "
                        "ORDER BY 1") == [("delete", 1), ("insert", 30), ("update", 1)]
    same_frames(sf.as_of(pg_url, between)["object_3"], loaded)
    same_frames(sf.as_of(pg_url, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))
    feed = sf.changes(pg_url, since=between)
    title = feed[feed["field"] == "field_12"]
    assert title["new"].tolist() == ["Replace the valve"]


def test_schema_changes_on_postgres(fresh_service: LocalService, pg_url: str) -> None:
    svc = fresh_service
    client = client_of(svc)
    sf.mirror(client, pg_url)
    note = svc.builder.add_field("object_3", "Note", "short_text")
    svc.builder.change_kind("field_45", "number")
    with pytest.raises(SchemaChanged, match="field_45: short_text -> number"):
        sf.mirror(client, pg_url)
    report = sf.mirror(client, pg_url, schema="evolve")
    assert f"{note} added (short_text)" in report.objects["object_3"].schema_changes
    cols = {r[0] for r in rows(pg_url, "SELECT column_name FROM information_schema.columns "
                                       "WHERE table_name = 'work_orders__history'")}
    assert {note, "field_45", "field_45__short_text"} <= cols
    same_frames(sf.as_of(pg_url, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


def test_a_failed_run_leaves_postgres_as_it_was(fresh_service: LocalService, pg_url: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    svc = fresh_service
    client = client_of(svc)
    sf.mirror(client, pg_url)
    note = svc.builder.add_field("object_3", "Note", "short_text")   # DDL in the run too
    before = rows(pg_url, "SELECT * FROM work_orders__history ORDER BY id")
    real = PostgresWriter.insert
    calls: list[str] = []

    def failing(self: PostgresWriter, table: str, data: Any) -> None:
        calls.append(table)
        if len(calls) == 5:
            raise KeyboardInterrupt
        real(self, table, data)

    monkeypatch.setattr(PostgresWriter, "insert", failing)
    with pytest.raises(KeyboardInterrupt):
        sf.mirror(client, pg_url)
    monkeypatch.undo()
    assert rows(pg_url, "SELECT * FROM work_orders__history ORDER BY id") == before
    assert note not in {r[0] for r in rows(
        pg_url, "SELECT column_name FROM information_schema.columns WHERE table_name = "
                "'work_orders'")}
    assert sf.mirror(client, pg_url).run == 2


def test_lock_and_bad_targets(fresh_service: LocalService, pg_url: str,
                              pg_cluster: str) -> None:
    client = client_of(fresh_service)
    holder = PostgresTarget(pg_url)   # another run's session holds the lock
    holder.check()
    with holder.lock(0):
        with pytest.raises(TargetBusy, match=r"svc-frames mirror, process \d+ on "):
            sf.mirror(client, pg_url)
    holder.close()
    assert client.request_count == 0
    with pytest.raises(UsageError, match="cannot be reached"):
        sf.mirror(client, pg_cluster.replace("/?", "/no_such_db?"))
    assert client.request_count == 0
    sf.mirror(client, pg_url, objects=["Parts"])
    with LocalService(demo=True, records=5, rate_limit=0, seed=2) as other:
        with pytest.raises(TargetMismatch) as err:
            sf.mirror(client_of(other), pg_url)
        assert other.app_id in str(err.value) and fresh_service.app_id in str(err.value)


def test_long_names_fit_postgres_identifiers(fresh_service: LocalService, pg_url: str) -> None:
    """PostgreSQL cuts identifiers at 63 bytes: a long object name's tables and history
    are named to fit, and read back."""
    svc = fresh_service
    client = client_of(svc)
    name = "Maintenance schedules of the northern district's pumping stations, 2026"
    key = svc.builder.add_object(name, [("Station", "short_text")])
    client.create_record(key, {svc.app.object(key).fields[0].key: "North 1"})
    report = sf.mirror(client, pg_url, objects=[key])
    table = report.objects[key].table
    assert len(f"{table}__history") <= 63
    assert rows(pg_url, f'SELECT count(*) FROM "{table}__history"') == [(1,)]
    assert len(sf.as_of(pg_url, pd.Timestamp.now(tz="UTC"))[key]) == 1


def test_copies_of_files_in_bytea(fresh_service: LocalService, pg_url: str) -> None:
    from svc_frames.mirroring.assets import asset_copies
    svc = fresh_service
    client = client_of(svc)
    ids = list(sf.read_object(client, "object_3", columns="keys").main.index)
    manual = sf.upload_file(client, b"\x00Pump manual\xff", "manual.bin")
    client.update_record("object_3", ids[0], {"field_37": manual["id"]})
    first = sf.mirror(client, pg_url, ["object_3"], assets=True)
    loaded = sf.read_object(client, "object_3", columns="keys").main
    files = int(loaded["field_37"].notna().sum() + loaded["field_38"].notna().sum())
    assert first.objects["object_3"].assets == files
    assert rows(pg_url, "SELECT data_type FROM information_schema.columns WHERE "
                        "table_name = 'svc_assets' AND column_name = 'data'") == [("bytea",)]
    got = asset_copies(pg_url, "object_3", ids[:1])
    assert got[(ids[0], "field_37")].data == b"\x00Pump manual\xff"
    assert got[(ids[0], "field_37")].name == "manual.bin"
    svc.pages.update_record("object_3", ids[1], {"field_12": "Checked"})
    assert sf.mirror(client, pg_url, ["object_3"], assets=True).objects[
        "object_3"].assets == 0
def test_incremental_run_reads_the_changed_records_only(pg_url: str) -> None:
    """An incremental run reads back the rows of the window's and the deleted records
    only (``rows_read``), and leaves PostgreSQL equal to a load."""
    from tests.test_mirror_incremental import rows_of
    with LocalService(demo=True, records=200, rate_limit=0, seed=3) as svc:
        client = client_of(svc)
        sf.mirror(client, pg_url, ["object_3"])
        loaded = sf.read_object(client, "object_3", columns="keys")
        blank = set(loaded.main.index[loaded.main["field_46"].isna()])
        ids = [i for i in loaded.main.index if i not in blank]
        for rid in ids[:3]:
            svc.pages.update_record("object_3", rid, {"field_12": f"Changed {rid}"})
        svc.pages.delete_record("object_3", ids[5])
        svc.pages.create_record("object_3", {"field_12": "New order"})
        time.sleep(0.05)
        o = sf.mirror(client, pg_url, ["object_3"]).objects["object_3"]
        assert (o.inserted, o.updated, o.deleted) == (1, 3, 1) and not o.full
        assert o.rows_read == rows_of(loaded, blank | set(ids[:3]) | {ids[5]})
        now = sf.read_object(client, "object_3", columns="keys")
        same_frames(sf.as_of(pg_url, pd.Timestamp.now(tz="UTC"))["object_3"], now)
        assert rows(pg_url, "SELECT count(*) FROM work_orders__history WHERE valid_to IS "
                            "NULL AND change <> 'delete'") == [(len(now),)]


def test_copy_round_trips_every_value(pg_url: str) -> None:
    """The rows written by COPY (Arrow's CSV for flat columns, row by row for the others)
    read back equal: empty and missing text apart, quotes, newlines, spaces, a line of
    ``\\.``, -0.0, NaN and infinities, microseconds, dates, NULLs of every type."""
    ts = pa.timestamp("us", tz="UTC")
    flat = pa.table({
        "id": ["a", "", None, 'q"u,o\nte', "  spaced  ", "\\.", "é ✓"],
        "f": pa.array([0.1, -0.0, float("nan"), float("inf"), -float("inf"), 1e-300,
                       None], pa.float64()),
        "i": pa.array([1, None, -(2 ** 63), 2 ** 63 - 1, 0, 7, 8], pa.int64()),
        "b": [True, False, None, True, False, True, None],
        "t": pa.array([dt.datetime(2026, 1, 2, 3, 4, 5, 678901), None,
                       dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31), dt.datetime(2026, 1, 1),
                       dt.datetime(2026, 3, 29, 1, 30), dt.datetime(2000, 2, 29)], ts),
        "d": pa.array([dt.date(2026, 1, 2), None] + [dt.date(1970, 1, 1)] * 5),
        "n": pa.nulls(7)})
    chicago = pa.timestamp("ns", tz="America/Chicago")
    listed = pa.table({
        "id": ["x", "y", "z", "w"],
        "tags": pa.array([["a", "b,c", 'q"', "back\\slash", "{}", "NULL"], None, [],
                          [None, "", " s "]], pa.list_(pa.large_string())),
        "ints": pa.array([[1, None], [], None, [2 ** 62]], pa.list_(pa.int64())),
        "took": pa.array([1_500_000, -3_000_000_001, None, 86_400_000_000_000],
                         pa.duration("ns")),
        "at": pa.array([1_700_000_000_123_456_000, None, 0, 1_710_054_000_000_000_000],
                       chicago)})
    binary = pa.table({"id": ["x", "y"], "blob": pa.array([b"\x00,\n\"", None])})
    t = PostgresTarget(pg_url)
    t.check()
    try:
        with t.transaction() as w:
            for name, data in (("flat", flat), ("listed", listed), ("binary", binary)):
                w.create(name, data.schema)
                w.insert(name, data)
        back = t.read("flat")
        for name in flat.column_names:
            if name == "n":   # a null column is text in PostgreSQL: all NULL
                assert back.column(name).null_count == 7
                continue
            got, want = back.column(name).to_pylist(), flat.column(name).to_pylist()
            if name == "f":
                assert [str(v) for v in got] == [str(v) for v in want]   # nan, -0.0
            else:
                assert got == want, name
        back = t.read("listed")
        assert back.column("tags").to_pylist() == listed.column("tags").to_pylist()
        assert back.column("ints").to_pylist() == listed.column("ints").to_pylist()
        assert back.column("took").to_pylist() == [
            dt.timedelta(microseconds=1_500), dt.timedelta(seconds=-3),  # to zero
            None, dt.timedelta(days=1)]
        assert back.column("at").to_pylist() == pc.cast(
            listed.column("at"), pa.timestamp("us", tz="UTC")).to_pylist()
        assert t.read("binary").column("blob").to_pylist() == [b"\x00,\n\"", None]
    finally:
        t.close()


def test_rows_read_back_in_the_order_written(pg_url: str) -> None:
    """A record's exploded rows are compared in order: read back out of order, an
    unchanged record would count as updated and get a version of its own. PostgreSQL
    puts a COPY's rows wherever the free space map finds room (the holes deleted rows
    left, once vacuumed), so the physical order is not the order written."""
    rng = random.Random(1)
    ids = [f"r{i:05d}" for i in range(5000)]

    def rows(of: list[str]) -> pa.Table:
        rec = [i for i in of for _ in range(3)]
        value = [f"{k}:" + "x" * rng.randint(10, 400) for _ in of for k in range(3)]
        return pa.table({"record_id": rec, "value": value})

    t = PostgresTarget(pg_url)
    t.check()
    try:
        with t.transaction() as w:
            w.create("t", pa.schema([("record_id", pa.string()), ("value", pa.string())]))
            w.insert("t", rows(ids))
        t.con.execute("ALTER TABLE t SET (autovacuum_enabled = false)")
        for _ in range(6):
            changed = sorted(rng.sample(ids, 100))
            with t.transaction() as w:   # a run: the updated records' rows replaced
                w.delete("t", "record_id", changed)
                w.insert("t", rows(changed))
            t.con.execute("VACUUM t")
            got = t.read_rows("t", "record_id", changed).to_pydict()
            order: dict[str, list[str]] = {}
            for rec, value in zip(got["record_id"], got["value"], strict=True):
                order.setdefault(rec, []).append(value[0])
            assert {r: k for r, k in order.items() if k != ["0", "1", "2"]} == {}
        assert t.schema("t").names == ["record_id", "value"]
        assert t.read("t").column_names == ["record_id", "value"]
    finally:
        t.close()


@pytest.mark.parametrize("temp", [True, False])
def test_rows_and_their_versions_copied_once(pg_url: str, temp: bool) -> None:
    """A listing's rows go into the current table and the history by one COPY into a
    temporary table (``temp``; two COPYs where the user may not create one): the same
    values and the same order in both, the version columns the run's, and the
    temporary table gone with the transaction (after two batches, and a table dropped
    and made again with other columns, as a listing whose rows are not kept is)."""
    when = dt.datetime(2026, 11, 28, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    ids = [f"r{i:04d}" for i in range(2500)]
    data = pa.table({"id": ids, "v": pa.array(range(2500), pa.float64()),
                     "tags": pa.array([[f"t{i}", 'q"'] if i % 3 else [] for i in range(2500)],
                                      pa.list_(pa.string()))})
    other = pa.table({"id": ids, "w": pa.array(range(2500), pa.int64())})
    t = PostgresTarget(pg_url)
    t.check()
    assert t.temp   # the cluster's superuser may
    t.temp = temp
    try:
        with t.transaction() as w:
            w.create("t", data.schema, ["id"])
            w.create("t__history", versions(data.slice(0, 0), when, 7, "insert").schema)
            w.insert_with_versions([("t", "t__history", data.slice(1500))], when, 7)
            w.insert_with_versions([("t", "t__history", data.slice(0, 0))], when, 7)
            w.insert_with_versions([("t", "t__history", data.slice(0, 1500))], when, 7)
            assert t.read("t").column("id").to_pylist() == ids[1500:] + ids[:1500]
            history = t.read("t__history")
            w.drop("t")   # its stage goes with it: the next is made in the new columns
            w.create("t", other.schema, ["id"])
            w.create("t2__history", versions(other.slice(0, 0), when, 7, "insert").schema)
            w.insert_with_versions([("t", "t2__history", other)], when, 7)
        assert t.read("t").to_pydict() == other.to_pydict()
        assert t.read("t2__history").select(["id", "w"]).to_pydict() == other.to_pydict()
        assert history.column("id").to_pylist() == ids[1500:] + ids[:1500]
        assert history.column("tags").to_pylist()[:1000] == data.column(
            "tags").to_pylist()[1500:]
        assert history.column("v").to_pylist()[:1000] == list(map(float, range(1500, 2500)))
        assert set(history.column("valid_from").to_pylist()) == {when}
        assert history.column("valid_to").null_count == history.num_rows
        assert set(history.column("run_id").to_pylist()) == {7}
        assert set(history.column("change").to_pylist()) == {"insert"}
        assert rows(pg_url, "SELECT count(*) FROM pg_class WHERE relpersistence = 't'"
                    ) == [(0,)]
        assert t.con.execute("SELECT count(*) FROM pg_class WHERE relpersistence = 't'"
                             ).fetchone() == (0,)
    finally:
        t.close()


def test_rows_keep_the_stages_numbers_in_the_order_written(pg_url: str) -> None:
    """The moves number the rows by their stage's numbers (the order copied), after any
    row of the table or its history, however written before: read back, every row comes
    in the order written, in this transaction and the next."""
    when = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)

    def part(lo: int, hi: int) -> pa.Table:
        return pa.table({"id": [f"r{i:05d}" for i in range(hi - 1, lo - 1, -1)],
                         "v": pa.array(range(hi - 1, lo - 1, -1), pa.int64())})

    def hist(data: pa.Table, run: int) -> pa.Table:
        return versions(data, when, run, "insert")

    T, H = "it's t", "it's t__history"   # names quoted as identifiers and as text
    t = PostgresTarget(pg_url)
    t.check()
    try:
        with t.transaction() as w:
            w.create(T, part(0, 0).schema, ["id"])
            w.create(H, hist(part(0, 0), 1).schema)
            w.insert(T, part(0, 10))
            w.insert(H, hist(part(0, 20), 1))
            w.insert_with_versions([(T, H, part(20, 2000))], when, 1)
            w.insert(T, part(2000, 2010))
            w.insert_with_versions([(T, H, part(2010, 4000))], when, 1)
        with t.transaction() as w:
            w.insert(H, hist(part(4000, 4010), 2))
            w.insert_with_versions([(T, H, part(4010, 4100))], when, 2)
        with t.transaction() as w:
            w.insert(T, part(4100, 4110))
        ids = t.read(T).column("id").to_pylist()
        assert ids == [f"r{i:05d}" for lo, hi in [(0, 10), (20, 2000), (2000, 2010),
                                                  (2010, 4000), (4010, 4100), (4100, 4110)]
                       for i in range(hi - 1, lo - 1, -1)]
        history = t.read(H).column("id").to_pylist()
        assert history == [f"r{i:05d}" for lo, hi in [(0, 20), (20, 2000), (2010, 4000),
                                                       (4000, 4010), (4010, 4100)]
                           for i in range(hi - 1, lo - 1, -1)]
    finally:
        t.close()


def test_moves_left_running_are_waited_for_and_their_errors_roll_back(pg_url: str
                                                                      ) -> None:
    """The moves of a batch (stage to table and history) are sent in a pipeline and not
    waited for: a read, the next writes and the end of the transaction wait for them;
    a move that fails raises there and the whole transaction is rolled back, and the
    connection serves the next run."""
    when = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)
    data = pa.table({"id": [f"r{i}" for i in range(3000)],
                     "v": pa.array(range(3000), pa.int64())})
    t = PostgresTarget(pg_url)
    t.check()
    try:
        with t.transaction() as w:
            w.create("t", data.schema, ["id"])
            w.create("t__history", versions(data.slice(0, 0), when, 1, "insert").schema)
            w.insert_with_versions([("t", "t__history", data)], when, 1)
            assert t.count("t") == 3000 and t.count("t__history") == 3000
            w.insert_with_versions([("t", "t__history", data.slice(0, 0))], when, 1)
        with pytest.raises(psycopg.errors.UniqueViolation), t.transaction() as w:
            w.create("u", data.schema, ["id"])
            w.create("u__history", versions(data.slice(0, 0), when, 2, "insert").schema)
            w.insert_with_versions([("u", "u__history", data.slice(0, 10))], when, 2)
            w.insert_with_versions([("t", "t__history", data.slice(5, 10))], when, 2)
            w.insert_with_versions([("u", "u__history", data.slice(10, 20))], when, 2)
        assert "u" not in t.tables() and t.count("t__history") == 3000
        with pytest.raises(psycopg.errors.UniqueViolation), t.transaction() as w:
            w.insert_with_versions([("t", "t__history", data.slice(0, 1))], when, 3)
        with t.transaction() as w:   # the commit waits for the last moves
            w.insert_with_versions([("t", "t__history", pa.table({
                "id": ["r3000"], "v": pa.array([3000], pa.int64())}))], when, 4)
        assert t.count("t") == 3001
        assert rows(pg_url, "SELECT run_id, count(*) FROM t__history GROUP BY 1 ORDER BY 1"
                    ) == [(1, 3000), (4, 1)]
    finally:
        t.close()


def test_a_first_run_killed_while_it_streams(pg_url: str) -> None:
    """``kill -9`` of a first run once it has written pages (its transaction holds a
    transaction id): nothing of it is left, neither tables nor the temporary ones its
    pages went through, and the next run mirrors everything."""
    run = ("import sys, svc_frames as sf; c = sf.Client.from_env(rate_limit=0); "
           "sf.mirror(c, sys.argv[1], ['object_3'], rows_per_page=50)")
    with LocalService(demo=True, records=3000, rate_limit=0, latency_ms=40, seed=5) as svc:
        env = {**os.environ, "SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
               "SVC_BASE_URL": svc.base_url}
        with subprocess.Popen([sys.executable, "-c", run, pg_url], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
            deadline = time.monotonic() + 60
            while not rows(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE "
                                   "application_name LIKE 'svc-frames mirror%' AND "
                                   "backend_xid IS NOT NULL")[0][0]:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        while rows(pg_url, "SELECT count(*) FROM pg_stat_activity WHERE application_name "
                           "LIKE 'svc-frames mirror%'")[0][0]:
            time.sleep(0.02)   # the server ends the killed run's session
        assert mirror_consistent(pg_url) == 0
        assert rows(pg_url, "SELECT count(*) FROM pg_class WHERE relkind = 'r' AND "
                            "relnamespace::regnamespace::text NOT LIKE 'pg_%' AND "
                            "relnamespace::regnamespace::text <> 'information_schema'"
                    ) == [(0,)]
        client = client_of(svc)
        assert sf.mirror(client, pg_url, ["object_3"]).total("inserted") == 3000
        assert mirror_consistent(pg_url) == 1
