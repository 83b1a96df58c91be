"""The mirror against DuckDB over the local service: current state, every version, deletions,
schema changes made on the service between runs, the past read back, the lock, and bad
input refused before any request (docs/mirror.md)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import svc_frames as sf
from svc_frames.errors import UsageError
from svc_frames.mirroring import SchemaChanged, TargetBusy, TargetMismatch
from svc_frames.mirroring.duckdbtarget import DuckDBWriter
from svc_frames.mirroring.lock import file_lock
from svc_frames.records import Client
from svc_frames.server import LocalService


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def same_frames(a: sf.Frames, b: sf.Frames) -> None:
    """The mirror's frames equal a load's (values and dtypes, in id order)."""
    left = a.main.sort_index()
    right = b.main.sort_index()
    pd.testing.assert_frame_equal(left, right, check_like=False)
    assert sorted(a.tables) == sorted(b.tables)
    for name in a.tables:
        ta = a.tables[name].sort_values("record_id", kind="stable").reset_index(drop=True)
        tb = b.tables[name].sort_values("record_id", kind="stable").reset_index(drop=True)
        pd.testing.assert_frame_equal(ta, tb)


def test_first_run_then_changes_by_other_users(fresh_service: LocalService,
                                               tmp_path: Path) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "app.duckdb"
    first = sf.mirror(client, target)
    assert first.run == 1
    assert {k: o.inserted for k, o in first.objects.items()} == {
        "object_1": 20, "object_2": 40, "object_3": 30}
    assert rows(target, "SELECT count(*) FROM work_orders")[0][0] == 30
    assert rows(target, "SELECT count(*), count(valid_to) FROM work_orders__history"
                ) == [(30, 0)]
    loaded = sf.read_object(client, "object_3", columns="keys")
    app = sf.as_of(target, pd.Timestamp.now(tz="UTC"))
    same_frames(app["object_3"], loaded)

    # nothing changed: no version added, and the stamped object costs one request
    again = sf.mirror(client, target)
    assert again.total("unchanged") == 90 and again.total("updated") == 0
    assert again.objects["object_3"].requests <= 2
    assert rows(target, "SELECT count(*) FROM work_orders__history")[0][0] == 30

    # other users edit on the app's pages (stamped), and through the API
    ids = list(loaded.main.index)
    svc.pages.update_record("object_3", ids[0], {"field_12": "Replace the valve"})
    client.delete_record("object_3", ids[1])
    new_id = client.create_record("object_3", {"field_12": "New order"})["id"]
    between = pd.Timestamp.now(tz="UTC")
    time.sleep(0.05)
    third = sf.mirror(client, target)
    o = third.objects["object_3"]
    assert (o.inserted, o.updated, o.deleted) == (1, 1, 1)
    assert o.unchanged == 28
    assert rows(target, "SELECT count(*) FROM work_orders")[0][0] == 30
    assert rows(target, f"SELECT count(*) FROM work_orders WHERE id = '{ids[1]}'")[0][0] == 0
    hist = rows(target, "SELECT id, change, valid_to IS NULL FROM work_orders__history "
                        "WHERE run_id = 3 ORDER BY change")
    assert sorted((r[0], r[1]) for r in hist) == sorted(
        [(ids[1], "delete"), (new_id, "insert"), (ids[0], "update")])
    # the deleted record's last version is closed, the updated one's first version too
    closed = rows(target, "SELECT id FROM work_orders__history WHERE run_id = 1 AND "
                          "valid_to IS NOT NULL ORDER BY id")
    assert [r[0] for r in closed] == sorted([ids[0], ids[1]])

    # the past: as loaded before the changes, and as loaded now
    same_frames(sf.as_of(target, between)["object_3"], loaded)
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["Work Orders"],
                sf.read_object(client, "object_3", columns="keys"))
    feed = sf.changes(target, since=between)
    assert set(feed["change"]) == {"insert", "update", "delete"}
    upd = feed[feed["change"] == "update"]
    title = upd[upd["field"] == "field_12"]
    assert title["record"].tolist() == [ids[0]]
    assert title["new"].tolist() == ["Replace the valve"]
    assert title["old"].tolist() == [loaded.main.loc[ids[0], "field_12"]]


def test_schema_changes_followed(fresh_service: LocalService, tmp_path: Path) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "app.duckdb"
    sf.mirror(client, target)
    before = pd.Timestamp.now(tz="UTC")
    time.sleep(0.05)
    builder = svc.builder
    note = builder.add_field("object_3", "Note", "short_text")
    builder.relabel_field("field_45", "Renamed")
    builder.remove_field("field_13")
    rid = sf.read_object(client, "object_3", columns="keys").main.index[0]
    svc.pages.update_record("object_3", rid, {note: "first note"})
    report = sf.mirror(client, target)
    changes = report.objects["object_3"].schema_changes
    assert f"{note} added (short_text)" in changes
    assert "field_13 removed (paragraph_text; kept in the history)" in changes
    assert any(c.startswith("field_45 relabelled") for c in changes)
    # only the record with a value in the new field is a new version
    assert report.objects["object_3"].updated == 1
    cols = {r[0] for r in rows(target, "DESCRIBE work_orders")}
    assert note in cols and "field_13" not in cols and "field_45" in cols
    hist_cols = {r[0] for r in rows(target, "DESCRIBE work_orders__history")}
    assert {note, "field_13"} <= hist_cols
    assert rows(target, f"SELECT count({note}) FROM work_orders__history WHERE run_id = 1"
                ) == [(0,)]
    # a query written before the relabel still runs
    assert rows(target, "SELECT count(field_45) FROM work_orders")[0][0] >= 0
    versions = rows(target, "SELECT version FROM svc_mirror_schema WHERE object_key = "
                            "'object_3' ORDER BY version")
    assert [v[0] for v in versions] == [1, 2]
    # each time has its schema: before, the removed field and no new one
    old = sf.as_of(target, before)["object_3"]
    assert "field_13" in old.main.columns and note not in old.main.columns
    assert old.source is not None and old.source.field("field_45").label != "Renamed"
    now = sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"]
    same_frames(now, sf.read_object(client, "object_3", columns="keys"))

    # another kind: refused by default, naming the field and both kinds; nothing written
    builder.change_kind("field_12", "number")
    with pytest.raises(SchemaChanged, match=r"field_12: short_text -> number.*evolve"):
        sf.mirror(client, target)
    assert rows(target, "SELECT max(run_id) FROM svc_mirror_runs") == [(2,)]
    evolved = sf.mirror(client, target, schema="evolve")
    assert "field_12 kind short_text -> number" in evolved.objects["object_3"].schema_changes
    hist_cols = {r[0] for r in rows(target, "DESCRIBE work_orders__history")}
    assert {"field_12", "field_12__short_text"} <= hist_cols
    # the old values stay readable as they were
    same_frames(sf.as_of(target, before)["object_3"], old)
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"],
                sf.read_object(client, "object_3", columns="keys"))


def test_objects_added_and_removed(fresh_service: LocalService, tmp_path: Path) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "app.duckdb"
    sf.mirror(client, target)
    sites = svc.builder.add_object("Sites", [("Site", "short_text")])
    client.create_record(sites, {svc.app.object(sites).fields[0].key: "HQ"})
    added = sf.mirror(client, target)
    assert added.objects[sites].schema_changes == ["object added"]
    assert added.objects[sites].inserted == 1
    svc.builder.remove_object(sites)
    gone = sf.mirror(client, target)
    assert gone.objects[sites].schema_changes == ["object removed"]
    assert gone.objects[sites].deleted == 1
    assert "sites" not in {r[0] for r in rows(target, "SHOW TABLES")}
    assert rows(target, "SELECT change FROM sites__history ORDER BY run_id") == [
        ("insert",), ("delete",)]
    assert sites not in sf.as_of(target, pd.Timestamp.now(tz="UTC"))


def test_bad_targets_refused_before_any_request(fresh_service: LocalService,
                                                tmp_path: Path) -> None:
    client = client_of(fresh_service)
    sent = client.request_count
    with pytest.raises(UsageError, match="does not exist"):
        sf.mirror(client, tmp_path / "missing" / "app.duckdb")
    (tmp_path / "junk.duckdb").write_bytes(b"not a database at all" * 100)
    with pytest.raises(UsageError, match="cannot be opened"):
        sf.mirror(client, tmp_path / "junk.duckdb")
    with pytest.raises(UsageError, match="postgresql://"):
        sf.mirror(client, "mysql://host/db")
    with pytest.raises(UsageError, match="schema must be"):
        sf.mirror(client, tmp_path / "a.duckdb", schema="ignore")
    con = duckdb.connect(str(tmp_path / "other.duckdb"))
    con.execute("CREATE TABLE t (x INT)")
    con.close()
    with pytest.raises(TargetMismatch, match="not a mirror"):
        sf.mirror(client, tmp_path / "other.duckdb")
    assert client.request_count == sent


def test_target_of_another_application_refused_naming_both(
        fresh_service: LocalService, tmp_path: Path) -> None:
    target = tmp_path / "app.duckdb"
    sf.mirror(client_of(fresh_service), target, objects=["Parts"])
    with LocalService(demo=True, records=5, rate_limit=0, seed=2) as other:
        client = client_of(other)
        with pytest.raises(TargetMismatch) as err:
            sf.mirror(client, target)
        assert fresh_service.app_id in str(err.value) and other.app_id in str(err.value)
        assert client.request_count == 0


def test_hand_edits_refused_then_repaired(fresh_service: LocalService,
                                          tmp_path: Path) -> None:
    client = client_of(fresh_service)
    target = tmp_path / "app.duckdb"
    sf.mirror(client, target, objects=["Parts"])
    con = duckdb.connect(str(target))
    con.execute("DELETE FROM parts WHERE id IN (SELECT id FROM parts LIMIT 3)")
    con.close()
    with pytest.raises(TargetMismatch, match="parts holds 37 rows, the last run wrote 40"):
        sf.mirror(client, target, objects=["Parts"])
    fixed = sf.mirror(client, target, objects=["Parts"], repair=True)
    assert fixed.objects["object_2"].inserted == 0 and fixed.objects["object_2"].unchanged == 40
    assert rows(target, "SELECT count(*) FROM parts") == [(40,)]


def test_a_failed_write_leaves_the_target_as_it_was(fresh_service: LocalService,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "app.duckdb"
    sf.mirror(client, target)
    before = rows(target, "SELECT * FROM work_orders__history ORDER BY id, run_id")
    rid = sf.read_object(client, "object_3", columns="keys").main.index[0]
    svc.pages.update_record("object_3", rid, {"field_12": "Half written?"})
    real = DuckDBWriter.insert
    calls = []

    def failing(self: DuckDBWriter, table: str, data: object) -> None:
        calls.append(table)
        if len(calls) == 4:
            raise KeyboardInterrupt  # Ctrl-C in the middle of the write phase
        real(self, table, data)  # type: ignore[arg-type]

    monkeypatch.setattr(DuckDBWriter, "insert", failing)
    with pytest.raises(KeyboardInterrupt):
        sf.mirror(client, target)
    monkeypatch.undo()
    assert rows(target, "SELECT * FROM work_orders__history ORDER BY id, run_id") == before
    assert rows(target, "SELECT max(run_id) FROM svc_mirror_runs") == [(1,)]
    done = sf.mirror(client, target)   # the next run completes it
    assert done.run == 2 and done.objects["object_3"].updated == 1


def test_two_runs_never_interleave(fresh_service: LocalService, tmp_path: Path) -> None:
    client = client_of(fresh_service)
    target = tmp_path / "app.duckdb"
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with file_lock(Path(f"{target}.mirror-lock"), wait=0, what=str(target)):
            held.set()
            release.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(5)
    try:
        with pytest.raises(TargetBusy, match=r"process \d+ on .* since"):
            sf.mirror(client, target)
        assert client.request_count == 0
        threading.Timer(0.3, release.set).start()
        report = sf.mirror(client, target, wait=10)   # waits for the holder, then runs
        assert report.run == 1
    finally:
        release.set()
        t.join()


def test_nothing_below_the_mirror_imports_it() -> None:
    """The mirror sits above refresh and saved frames, below restore and the CLI: only
    restore (which reads its history), the CLI's mirror subcommand, the testing helpers
    (whose consistency check reads a target) and the package's lazy names
    (svc_frames/__init__.py) import it."""
    from tests.test_server_imports import import_graph

    users = {m for m, deps in import_graph().items()
             if any(d.startswith("svc_frames.mirroring") for d in deps)
             and not m.startswith(("svc_frames.mirroring", "svc_frames.restoring"))}
    assert users == {"svc_frames", "svc_frames.cli.mirror", "svc_frames.testing"}


@pytest.mark.slow(seconds=20)
def test_runs_while_other_users_edit(tmp_path: Path) -> None:
    """Other users insert, update and delete on the application's pages during the runs:
    once they stop, one more run leaves the mirror equal to a load, and every record
    they deleted closed in the history."""
    with LocalService(demo=True, records=60, rate_limit=0, seed=5,
                      activity="object_3:8/s") as svc:
        client = client_of(svc)
        target = tmp_path / "app.duckdb"
        seen = 0
        for _ in range(3):
            report = sf.mirror(client, target, objects=["Work Orders"])
            seen += sum(report.total(w) for w in ("inserted", "updated", "deleted"))
            time.sleep(0.7)
        assert svc.activity is not None
        svc.activity.stop()
        time.sleep(0.3)
        report = sf.mirror(client, target, objects=["Work Orders"])
        seen += sum(report.total(w) for w in ("inserted", "updated", "deleted"))
        assert seen > 60   # the first run's 60 inserts, and the others' edits
        loaded = sf.read_object(client, "object_3", columns="keys")
        same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"], loaded)
        deleted = {r[0] for r in rows(target, "SELECT id FROM work_orders__history "
                                              "WHERE change = 'delete'")}
        assert not deleted & set(loaded.main.index)
        assert rows(target, "SELECT count(*) FROM work_orders__history WHERE valid_to IS "
                            "NULL AND change <> 'delete'") == [(len(loaded),)]


def test_change_feed_follows_a_connection(fresh_service: LocalService,
                                          tmp_path: Path) -> None:
    svc = fresh_service
    client = client_of(svc)
    target = tmp_path / "app.duckdb"
    sf.mirror(client, target, ["object_3"])
    loaded = sf.read_object(client, "object_3", columns="keys")
    links = loaded.tables["field_41"]   # work orders -> parts: in an exploded table only
    assert "field_41" not in loaded.main.columns
    rid = links["record_id"].value_counts().index[0]
    before = links.loc[links["record_id"] == rid, "connected_id"].tolist()
    assert len(before) > 1
    between = pd.Timestamp.now(tz="UTC")
    time.sleep(0.05)
    layout = "SELECT layout FROM svc_mirror_objects WHERE object_key = 'object_3'"
    was = rows(target, layout)
    svc.pages.update_record("object_3", rid, {"field_41": before[:1]})
    o = sf.mirror(client, target, ["object_3"]).objects["object_3"]
    assert (o.updated, o.inserted, o.deleted) == (1, 0, 0)
    # the one changed record's rows alone were converted: the layout (column types) is
    # the last run's, and the mirror reads back as a load
    changed = sf.read_object(client, "object_3", columns="keys")
    assert rows(target, layout) == was
    same_frames(sf.as_of(target, pd.Timestamp.now(tz="UTC"))["object_3"], changed)
    feed = sf.changes(target, since=between)
    row = feed[feed["field"] == "field_41"]
    assert row["record"].tolist() == [rid] and row["change"].tolist() == ["update"]
    assert row["old"].tolist() == [before] and row["new"].tolist() == [before[:1]]
    # the other connections did not move: no row for them
    assert not set(feed["field"].dropna()) & {"field_42", "field_43"}
