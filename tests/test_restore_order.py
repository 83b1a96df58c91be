"""Ordered creates over real HTTP: records created again that connected to each other
(a chain of tasks, each depending on the one before) are created in order, each with the
new id of the one it depends on in its list, so each is written once; only a cycle needs
one link pointed after the creates. The same for an undo of deletes, a restore from a
mirror, and new rows of a frame linking to each other (``write_back``), whose cycle is
refused before any request. Requests are counted by the local service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from svc_frames import mirror, restore, undo
from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import add_rows, diff, write_back

QUIET = {"progress": False}
OBJ, NAME, DEPENDS = "object_1", "field_1", "field_2"
TASKS: dict[str, Any] = {
    "objects": [{"key": OBJ, "name": "Tasks", "identifier": NAME, "fields": [
        {"key": NAME, "type": "short_text", "name": "Name"},
        {"key": DEPENDS, "type": "connection", "name": "Depends On",
         "relationship": {"object": OBJ, "has": "many", "belongs_to": "many"}}]}],
}


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=False, app=TASKS, records=0, rate_limit=0) as s:
        yield s


def _load(svc: LocalService) -> Frames:
    return read_object(client_for(svc, rate_limit=0), OBJ, columns="keys", progress=False)


def _links(frames: Frames, back: dict[str, str] | None = None) -> set[tuple[str, str]]:
    """(task, the task it depends on) pairs by name."""
    names = frames.main[NAME].astype(str).to_dict()
    t = frames.tables[DEPENDS]
    return {(names[r], names[c]) for r, c in
            zip(t["record_id"].astype(str), t["connected_id"].astype(str), strict=True)}


def _chain(svc: LocalService, n: int) -> list[str]:
    """Tasks T0..Tn-1, each depending on the one before."""
    ids: list[str] = []
    for i in range(n):
        ids.append(svc.pages.create_record(OBJ, {NAME: f"T{i}",
                                                 DEPENDS: ids[-1:]})["id"])
    return ids


def _writes(svc: LocalService) -> dict[str, int]:
    log = svc.request_log
    return {m: log.count(method=m, applied=True) for m in ("POST", "PUT", "DELETE")}


def _delete_all(svc: LocalService) -> Any:
    client = client_for(svc, rate_limit=0)
    frames = _load(svc)
    frames.main = frames.main.iloc[0:0]
    frames.tables[DEPENDS] = frames.tables[DEPENDS].iloc[0:0]
    return write_back(client, frames, delete_missing=True, **QUIET)


def test_an_undo_of_a_deleted_chain_writes_each_record_once(svc: LocalService) -> None:
    _chain(svc, 6)
    want = _links(_load(svc))
    report = _delete_all(svc)
    u = undo(client_for(svc, rate_limit=0), report)
    assert "to point at new ids" not in repr(u)      # nothing left to repoint
    assert u.requests.writes == 6
    svc.request_log.clear()
    out = u.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    assert _writes(svc) == {"POST": 6, "PUT": 0, "DELETE": 0}
    now = _load(svc)
    assert _links(now) == want and len(now.main) == 6
    assert set(now.main.index) == set(u.id_map.values())


def test_an_undo_of_a_deleted_cycle_points_one_link_after_the_creates(
        svc: LocalService) -> None:
    a, b, c = _chain(svc, 3)
    svc.pages.update_record(OBJ, a, {DEPENDS: [c]})    # T0 -> T2 -> T1 -> T0
    want = _links(_load(svc))
    assert len(want) == 3
    report = _delete_all(svc)
    u = undo(client_for(svc, rate_limit=0), report)
    assert "1 to point at new ids" in repr(u)
    svc.request_log.clear()
    out = u.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    assert _writes(svc) == {"POST": 3, "PUT": 1, "DELETE": 0}
    assert _links(_load(svc)) == want


@pytest.mark.slow(seconds=6)
def test_a_restore_of_a_chain_and_a_cycle_counts_its_writes(svc: LocalService,
                                                           tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    _chain(svc, 5)                                     # a chain of 5
    x, y = _chain(svc, 2)                              # and a cycle of 2: T0 <-> T1
    svc.pages.update_record(OBJ, x, {DEPENDS: [y]})
    want = _links(_load(svc))
    target = tmp_path / "tasks.duckdb"
    mirror(client, target)
    when = pd.Timestamp.now(tz="UTC")
    _delete_all(svc)
    mirror(client, target)
    p = restore(client, target, when, OBJ)
    assert p.counts == {"update": 0, "create": 7, "delete": 0}
    svc.request_log.clear()
    out = p.apply(**QUIET)
    assert set(out.table["status"]) == {"applied"}, out.table
    # 7 creates, each once; the cycle's one link pointed after them
    assert _writes(svc) == {"POST": 7, "PUT": 1, "DELETE": 0}
    assert _links(_load(svc)) == want


def test_new_rows_of_a_frame_may_link_to_each_other(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    frames = _load(svc)
    first, second, third = add_rows(frames, [{NAME: "A"}, {NAME: "B"}, {NAME: "C"}])
    # C depends on B, which depends on A: sent A, then B, then C
    frames.tables[DEPENDS] = pd.concat([frames.tables[DEPENDS], pd.DataFrame(
        {"record_id": [third, second], "connected_id": [second, first]})],
        ignore_index=True).astype(frames.tables[DEPENDS].dtypes.to_dict())
    svc.request_log.clear()
    report = write_back(client, frames, **QUIET)
    assert set(report.table["status"]) == {"applied"}, report.table
    assert _writes(svc) == {"POST": 3, "PUT": 0, "DELETE": 0}
    assert _links(_load(svc)) == {("C", "B"), ("B", "A")}
    assert diff(frames).empty                          # the frames followed, links too
    assert not frames.tables[DEPENDS]["connected_id"].astype(str).str.startswith(
        "new:").any()


def test_new_rows_in_a_cycle_and_links_to_no_new_row_are_refused(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    frames = _load(svc)
    first, second = add_rows(frames, [{NAME: "A"}, {NAME: "B"}])
    dtypes = frames.tables[DEPENDS].dtypes.to_dict()
    empty = frames.tables[DEPENDS]

    def linking(pairs: list[tuple[str, str]]) -> Frames:
        frames.tables[DEPENDS] = pd.concat([empty, pd.DataFrame(
            pairs, columns=["record_id", "connected_id"])], ignore_index=True).astype(dtypes)
        return frames

    svc.request_log.clear()
    with pytest.raises(UsageError, match="cycle"):
        write_back(client, linking([(first, second), (second, first)]), **QUIET)
    with pytest.raises(UsageError, match="cycle"):       # a new row linking to itself
        write_back(client, linking([(first, first)]), **QUIET)
    with pytest.raises(UsageError, match="no new row"):
        write_back(client, linking([(first, "new:9")]), **QUIET)
    assert svc.request_log.count() == 0                # refused before any request


def test_a_linked_create_whose_answer_was_lost_is_found_with_its_links_new_ids() -> None:
    # the lookup after a lost answer compares the record with the new ids it was sent
    # with, not the temporary ones: found and adopted, never sent twice
    unique = {"objects": [{**TASKS["objects"][0], "fields": [
        {**TASKS["objects"][0]["fields"][0], "unique": True},
        TASKS["objects"][0]["fields"][1]]}]}
    with LocalService(demo=False, app=unique, records=0, rate_limit=0) as svc:
        client = client_for(svc, rate_limit=0)
        frames = _load(svc)
        first, second = add_rows(frames, [{NAME: "A"}, {NAME: "B"}])
        frames.tables[DEPENDS] = pd.concat([frames.tables[DEPENDS], pd.DataFrame(
            {"record_id": [second], "connected_id": [first]})],
            ignore_index=True).astype(frames.tables[DEPENDS].dtypes.to_dict())
        svc.emulation.inject("500-after", method="POST", times=2)   # both answers lost
        report = write_back(client, frames, **QUIET)
        assert set(report.table["status"]) == {"applied"}, report.table
        assert svc.request_log.count(method="POST", applied=True) == 2
        now = _load(svc)
        assert sorted(now.main[NAME]) == ["A", "B"]
        assert _links(now) == {("B", "A")}
