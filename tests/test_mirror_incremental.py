"""An incremental mirror run reads back from the target only the rows of the records the
stamp window and the deletion search name (``ObjectReport.rows_read``), not whole tables,
and stays exact (current tables, history, ``as_of``) under other users' edits, inserts
and deletions: DuckDB and Parquet (PostgreSQL: tests_postgres)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest

import svc_frames as sf
from svc_frames.server import LocalService
from tests.test_mirror import client_of, same_frames


def target_of(tmp_path: Path, kind: str) -> str:
    return str(tmp_path / "app.duckdb") if kind == "duckdb" else f"{tmp_path / 'mirror'}/"


def history(target: str, sql: str) -> list[tuple[object, ...]]:
    """``sql`` over the work orders' history (``{h}``) of either target."""
    con = duckdb.connect(target, read_only=True) if target.endswith(".duckdb") \
        else duckdb.connect()
    try:
        source = ("work_orders__history" if target.endswith(".duckdb") else
                  f"read_parquet('{target}work_orders__history/*/*.parquet')")
        return con.execute(sql.format(h=source)).fetchall()
    finally:
        con.close()


def as_of_rows(target: str) -> int:
    """Rows of the work orders' current tables (main and exploded) the target holds."""
    now = sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"]
    return rows_of(now, set(now.main.index))


def rows_of(frames: sf.Frames, ids: set[str]) -> int:
    """Rows of these records in the object's current tables (main and exploded)."""
    n = int(np.isin(frames.main.index.to_numpy(dtype=object), list(ids)).sum())
    for t in frames.tables.values():
        n += int(t["record_id"].isin(ids).sum())
    return n


@pytest.mark.slow(seconds=10)
@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_incremental_run_reads_the_changed_records_only(tmp_path: Path, kind: str) -> None:
    with LocalService(demo=True, records=300, rate_limit=0, seed=3) as svc:
        client = client_of(svc)
        target = target_of(tmp_path, kind)
        sf.mirror(client, target, ["object_3"])
        loaded = sf.read_object(client, "object_3", columns="keys")
        ids = list(loaded.main.index)
        total_rows = rows_of(loaded, set(ids))
        # records without a stamp are in every stamp window (refresh's own rule)
        blank = set(loaded.main.index[loaded.main["field_46"].isna()])
        updated = [i for i in ids if i not in blank][:3]
        deleted = [i for i in ids if i not in blank][10:12]
        links = loaded.tables["field_41"]
        linked = str(links["record_id"].value_counts().index[0])
        for rid in updated:
            svc.pages.update_record("object_3", rid, {"field_12": f"Changed {rid}"})
        if linked not in blank:
            before = links.loc[links["record_id"] == linked, "connected_id"].tolist()
            svc.pages.update_record("object_3", linked, {"field_41": before[:1]})
            updated.append(linked)
        for rid in deleted:
            svc.pages.delete_record("object_3", rid)
        new = svc.pages.create_record("object_3", {"field_12": "New order"})["id"]
        time.sleep(0.05)
        o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
        assert (o.inserted, o.updated, o.deleted) == (1, len(set(updated) - blank), 2)
        assert not o.full and o.requests <= 2 + 20   # the window, and the deletion search
        # read back: the window's records held (the stamped and the blank ones), and the
        # deleted records' rows: not the other records'
        assert o.rows_read == rows_of(loaded, blank | set(updated) | set(deleted))
        assert o.rows_read < total_rows / 3
        now = sf.read_object(client, "object_3", columns="keys")
        assert new in now.main.index
        same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"], now)
        assert history(target, "SELECT count(*) FROM {h} WHERE valid_to IS NULL AND "
                               "change <> 'delete'") == [(len(now),)]
        assert sorted(r[0] for r in history(target, "SELECT id FROM {h} WHERE change = "
                                                    "'delete'")) == sorted(deleted)
        # nothing changed since: no version, the same few rows read
        again = sf.mirror(client, target, ["object_3"]).objects["object_3"]
        assert (again.inserted, again.updated, again.deleted) == (0, 0, 0)
        assert again.unchanged == len(now) and again.rows_read < total_rows / 3
        # the periodic sweep (here every run) lists everything and reads every row back
        swept = sf.mirror(client, target, ["object_3"], sweep_every=1).objects["object_3"]
        assert swept.full and swept.rows_read == rows_of(now, set(now.main.index))
        assert (swept.inserted, swept.updated, swept.deleted) == (0, 0, 0)


@pytest.mark.slow(seconds=25)
@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_incremental_runs_exact_while_other_users_edit(tmp_path: Path, kind: str) -> None:
    """Other users insert, update and delete on the pages during the runs: each run reads
    few rows back, and once they stop one more run leaves the mirror equal to a load,
    every deleted record closed and every version accounted for."""
    with LocalService(demo=True, records=200, rate_limit=0, seed=7,
                      activity="object_3:8/s") as svc:
        client = client_of(svc)
        target = target_of(tmp_path, kind)
        first = sf.mirror(client, target, ["object_3"])
        counted = first.total("inserted")
        for _ in range(3):
            time.sleep(0.7)
            # what a listing of everything would read back: every row the target holds
            whole = as_of_rows(target)
            o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
            counted += o.inserted + o.updated + o.deleted
            # fewer than all: how many fewer depends on how many records the other users
            # touch while the run lasts (a loaded machine's run lasts longer), so the exact
            # count is the quiet test's above
            assert not o.full and o.rows_read < whole
        assert svc.activity is not None
        svc.activity.stop()
        time.sleep(0.3)
        o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
        counted += o.inserted + o.updated + o.deleted
        loaded = sf.read_object(client, "object_3", columns="keys")
        same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"], loaded)
        gone = {r[0] for r in history(target, "SELECT id FROM {h} WHERE change = 'delete'")}
        assert not gone & set(loaded.main.index)
        assert history(target, "SELECT count(*) FROM {h} WHERE valid_to IS NULL AND "
                               "change <> 'delete'") == [(len(loaded),)]
        # history = the first run's rows + one per change counted
        assert history(target, "SELECT count(*) FROM {h}") == [(counted,)]


@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_exploded_rows_versioned_when_they_change(fresh_service: LocalService,
                                                  tmp_path: Path, kind: str) -> None:
    """An incremental run writes an updated record's exploded rows (and their versions)
    only in the tables where they changed: a record updated in its main columns alone
    keeps its connections' open versions; one whose connections changed gets new ones
    there. The past and the change feed stay exact."""
    svc = fresh_service
    client = client_of(svc)
    target = target_of(tmp_path, kind)
    sf.mirror(client, target, ["object_3"])
    loaded = sf.read_object(client, "object_3", columns="keys")
    blank = set(loaded.main.index[loaded.main["field_46"].isna()])
    links = loaded.tables["field_41"]
    counts = links["record_id"].value_counts()
    linked = [str(i) for i in counts.index[counts >= 2] if i not in blank]
    plain, relinked = linked[0], linked[1]
    before = links.loc[links["record_id"] == relinked, "connected_id"].tolist()
    svc.pages.update_record("object_3", plain, {"field_12": "Main columns only"})
    svc.pages.update_record("object_3", relinked, {"field_41": before[:1]})
    time.sleep(0.05)
    at = pd.Timestamp.now(tz="UTC")
    o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
    assert (o.inserted, o.updated, o.deleted) == (0, 2, 0) and not o.full
    con = duckdb.connect(target, read_only=True) if kind == "duckdb" else duckdb.connect()
    try:
        source = ("work_orders__field_41__history" if kind == "duckdb" else
                  f"read_parquet('{target}work_orders__field_41__history/*/*.parquet')")
        got = con.execute(f"SELECT record_id, change, valid_to IS NULL FROM {source} "
                          "WHERE run_id = 2 OR valid_to IS NOT NULL ORDER BY ALL").fetchall()
        if kind == "duckdb":   # the run's row appended; the schema's one version kept
            assert con.execute("SELECT run_id, report IS NOT NULL FROM svc_mirror_runs "
                               "ORDER BY 1").fetchall() == [(1, True), (2, True)]
            assert con.execute("SELECT object_key, version, run_id FROM "
                               "svc_mirror_schema").fetchall() == [("object_3", 1, 1)]
    finally:
        con.close()
    assert got == sorted([(relinked, "insert", False)] * len(before)
                         + [(relinked, "update", True)])
    assert history(target, "SELECT id FROM {h} WHERE change = 'update' ORDER BY id") == [
        (i,) for i in sorted([plain, relinked])]
    same_frames(sf.as_of(target, at)["object_3"], loaded)
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))
    feed = sf.changes(target, since=at)
    assert sorted(feed.loc[feed["field"] == "field_41", "record"]) == [relinked]
    assert sorted(feed.loc[feed["field"] == "field_12", "record"]) == [plain]


def test_incremental_run_without_the_service_clock(fresh_service: LocalService,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The service's clock unknown (no quota headers): the cutoff takes the newest stamp
    the target holds (that column read alone), as refresh's does; the run stays exact."""
    from svc_frames.mirroring import incremental
    svc = fresh_service
    client = client_of(svc)
    target = target_of(tmp_path, "duckdb")
    sf.mirror(client, target, ["object_3"])
    monkeypatch.setattr(incremental, "clock_skew", lambda client: None)
    monkeypatch.setattr("svc_frames.refreshing.policy.clock_skew", lambda client: None)
    rid = sf.read_object(client, "object_3", columns="keys").main.index[2]
    svc.pages.update_record("object_3", rid, {"field_12": "Unknown clock"})
    o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
    assert (o.inserted, o.updated, o.deleted) == (0, 1, 0) and not o.full
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


def test_parquet_history_written_partition_by_partition(fresh_service: LocalService,
                                                        tmp_path: Path) -> None:
    """A run that closes no version of an earlier run leaves that run's partition as it
    was (not written again); one that closes some writes it again."""
    svc = fresh_service
    client = client_of(svc)
    target = target_of(tmp_path, "parquet")
    sf.mirror(client, target, ["object_3"])
    first = Path(f"{target}work_orders__history/run=1/part-00000.parquet")
    was = first.stat()
    svc.pages.create_record("object_3", {"field_12": "New order"})
    o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
    assert (o.inserted, o.updated, o.deleted) == (1, 0, 0)
    now = first.stat()
    assert (now.st_ino, now.st_mtime_ns) == (was.st_ino, was.st_mtime_ns)
    assert Path(f"{target}work_orders__history/run=2/part-00000.parquet").exists()
    rid = sf.read_object(client, "object_3", columns="keys").main.index[0]
    svc.pages.update_record("object_3", rid, {"field_12": "Changed"})
    o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
    assert (o.inserted, o.updated, o.deleted) == (0, 1, 0)
    assert first.stat().st_ino != was.st_ino   # its version closed: rewritten
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


@pytest.mark.slow(seconds=5)
def test_window_of_several_pages_reads_each_pages_rows_once(tmp_path: Path) -> None:
    # a window of several pages (5 records a page) reads each record's rows once and
    # stays exact
    with LocalService(demo=True, records=120, rate_limit=0, seed=5) as svc:
        client = client_of(svc)
        target = str(tmp_path / "app.duckdb")
        sf.mirror(client, target, ["object_3"], rows_per_page=5)
        loaded = sf.read_object(client, "object_3", columns="keys")
        blank = set(loaded.main.index[loaded.main["field_46"].isna()])
        updated = [i for i in loaded.main.index if i not in blank][:12]
        for rid in updated:
            svc.pages.update_record("object_3", rid, {"field_12": f"Changed {rid}"})
        time.sleep(0.05)
        o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
        assert (o.inserted, o.updated, o.deleted) == (0, len(updated), 0)
        assert not o.full and o.requests >= 3   # the window came in several pages
        # each record's rows read once: the updated ones, and blanks the window held
        assert rows_of(loaded, set(updated)) <= o.rows_read <= rows_of(
            loaded, blank | set(updated))
        assert history(target, "SELECT count(*) FROM {h} WHERE change = 'update'") == [
            (len(updated),)]
        now = sf.read_object(client, "object_3", columns="keys")
        same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"], now)


def test_window_begun_beside_the_schema(fresh_service: LocalService, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first object's stamp window is asked beside the schema's request (from what the
    last run left) and used when the schema confirms it; after a field is added it is
    dropped unused and the object is listed anew: exact either way."""
    from svc_frames.mirroring import incremental
    svc = fresh_service
    client = client_of(svc)
    target = target_of(tmp_path, "duckdb")
    sf.mirror(client, target, ["object_3"])
    threads: list[str] = []
    real = incremental.stamp_window

    def window(*args: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(incremental, "stamp_window", window)
    rid = sf.read_object(client, "object_3", columns="keys").main.index[1]
    svc.pages.update_record("object_3", rid, {"field_12": "Beside the schema"})
    report = sf.mirror(client, target, ["object_3"])
    o = report.objects["object_3"]
    assert (o.inserted, o.updated, o.deleted) == (0, 1, 0) and not o.full
    assert threads == ["svc-mirror-head"]             # asked once, beside the schema
    assert o.requests == 1 and report.requests == 2   # the window; and the schema's
    note = svc.builder.add_field("object_3", "Note", "short_text")
    svc.pages.update_record("object_3", rid, {note: "a note"})
    threads.clear()
    o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
    assert threads == ["svc-mirror-head"] and o.full  # begun, then dropped: listed anew
    assert (o.inserted, o.updated, o.deleted) == (0, 1, 0)
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


def test_pages_ahead_from_the_last_window() -> None:
    # the window's page 2 is asked beside page 1 when the last run's window, scaled to
    # this window's span, reaches three quarters of a page; or when no window was read
    # since the last full listing; never for an object that held less than a page
    from svc_frames.mirroring.incremental import pages_ahead
    start = pd.Timestamp("2026-01-05 10:00:40", tz="UTC")
    load: dict[str, object] = {"loaded_at": start.isoformat()}
    # this window spans from 09:59:30 (the start floored to the minute, less 30 s)
    now = pd.Timestamp("2026-01-05 10:09:30", tz="UTC").to_pydatetime()   # 600 s
    assert pages_ahead(load, 1000, 100_000, now) == 1    # no window seen: nothing tells
    assert pages_ahead(load, 1000, 999, now) == 0        # a page holds every record
    load["window"] = {"records": 800, "seconds": 600.0}
    assert pages_ahead(load, 1000, 100_000, now) == 1    # 800 expected: 3/4 of a page
    load["window"] = {"records": 800, "seconds": 1200.0}
    assert pages_ahead(load, 1000, 100_000, now) == 0    # 400 expected
    load["window"] = {"records": "?", "seconds": 1.0}
    assert pages_ahead(load, 1000, 100_000, now) == 1    # unreadable: as none


def test_second_page_asked_ahead_when_expected(fresh_service: LocalService,
                                               tmp_path: Path) -> None:
    # the first incremental run after the full listing asks page 2 beside page 1 (the
    # object holds more than a page, and no window was read yet): a request spent on a
    # window of one page; the next run, after as few changes, expects one page and asks
    # for one; both exact
    svc, target = fresh_service, str(tmp_path / "app.duckdb")
    client = client_of(svc)
    sf.mirror(client, target, ["object_3"], rows_per_page=20)
    ids = list(sf.read_object(client, "object_3", columns="keys").main.index)
    requests = []
    for rid in ids[3:5]:
        svc.pages.update_record("object_3", rid, {"field_12": f"Changed {rid}"})
        o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
        assert not o.full and o.updated == 1
        requests.append(o.requests)
    assert requests == [2, 1]
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


def test_changed_on_the_stored_values_says_what_the_typed_rows_say(tmp_path: Path) -> None:
    """The main table compared on its stored (Arrow) values first, only the cells that
    differ there typed: the same records updated as when every row is typed and compared
    (equal values of another dtype, empty cells, instants in another zone, lists)."""
    from svc_frames.frames import Frames
    from svc_frames.mirroring.duckdbtarget import DuckDBTarget
    from svc_frames.mirroring.incremental import changed
    from svc_frames.mirroring.state import typed
    from svc_frames.saved.arrow import frame_to_arrow, table_meta

    ids = pd.Index([f"r{i}" for i in range(8)], name="id", dtype=object)
    when = pd.Timestamp("2026-01-02 03:04:05.123456", tz="UTC")
    old = pd.DataFrame({
        "text": pd.array(["a", "b", None, "d", "e", "f", "g", "h"], dtype="string"),
        "num": pd.array([1.0, 2.5, None, 4.0, 5.0, 6.0, 7.0, np.nan], dtype="Float64"),
        "count": pd.array([1, 2, 3, None, 5, 6, 7, 8], dtype="Int64"),
        "flag": pd.array([True, False, None, True, True, False, True, False],
                         dtype="boolean"),
        "at": pd.array([when] * 8, dtype="datetime64[ns, UTC]"),
        "tags": [["x"], [], None, ["y", "z"], ["x"], ["q"], None, ["w"]],
        "blob": pd.array(["", None, "k", "l", "m", "n", "o", "p"], dtype=object),
    }, index=ids)
    new = old.copy()
    new.loc["r1", "text"] = "B"                          # differs
    new["count"] = new["count"].astype("Float64")        # 1 == 1.0: the same
    new.loc["r2", "num"] = 0.0                           # empty -> 0: differs
    new.loc["r3", "at"] = when + pd.Timedelta(microseconds=1)   # differs
    new["at"] = new["at"].dt.tz_convert("Europe/Paris")  # the same instants
    new.loc["r4", "tags"] = ["x", "y"]                   # differs
    new.loc["r5", "blob"] = None                         # "n" -> empty: differs
    new.loc["r0", "blob"] = None                         # "" and empty
    new.loc["r6", "flag"] = None                         # differs
    new = pd.concat([new, new.iloc[:1].rename(index={"r0": "r9"})])   # inserted
    t = DuckDBTarget(tmp_path / "t.duckdb")
    t.check()
    try:
        data = frame_to_arrow(old)
        with t.transaction() as w:
            w.create("wo", data.schema, ["id"])
            w.insert("wo", data)
        dtypes = table_meta(data)["dtypes"]
        held = t.read_rows("wo", "id", [str(i) for i in new.index])
        whole = Frames(typed(held, dtypes, "id"), {}, None)
        fast = changed(Frames(new.iloc[:0], {}, None), Frames(new, {}, None),
                       (held, dtypes))
        assert fast == changed(whole, Frames(new, {}, None))
        assert fast[0] == ["r9"] and {"r1", "r2", "r3", "r4", "r5", "r6"} <= set(fast[1])
        assert "r7" not in fast[1]
    finally:
        t.close()
