"""undo and other objects' links, over real HTTP: the reads of the links to the records an
undo deletes are counted in its requests and held behind the quota's gate; a link another
user makes on the application's pages while the undo runs is never lost (read just before
the delete, so an undo of the undo points it at the re-created record; added to as it is
when the undo points a list at a re-created record); an undo interrupted while pointing
lists at re-created records resumes without creating anything twice; a journal of an
object the application no longer has is refused before any write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import svc_frames
from svc_frames import undo
from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import add_rows, diff, write_back
from svc_frames.writeback.kept import inbound_connections

ORDERS, PARTS = "object_3", "object_2"
NAME, STOCK, ORDER_PARTS = "field_8", "field_10", "field_41"   # a part's name, stock
QUIET = {"progress": False}


def _parts(client: Client) -> Frames:
    return read_object(client, PARTS, columns="keys", progress=False)


def _orders(client: Client) -> Frames:
    return read_object(client, ORDERS, columns="keys", progress=False)


def _parts_of(client: Client, order: str) -> set[str]:
    t = _orders(client).tables[ORDER_PARTS]
    return set(t.loc[t["record_id"] == order, "connected_id"])


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=30, rate_limit=0, seed=7) as s:
        yield s


def _a_part_made_by_mistake(client: Client) -> tuple[list[str], str, Any]:
    """A run over the parts: three prices overwritten and one part created. Returns the
    updated ids, the created part's id and the report."""
    parts = _parts(client)
    updated = parts.main.index[:3].tolist()
    parts.main.loc[updated, STOCK] = 0.0
    add_rows(parts, [{NAME: "made by mistake"}])
    report = write_back(client, parts, **QUIET)
    assert set(report.table["status"]) == {"applied"}, report.table
    made = report.table.loc[report.table["action"] == "create", "record_id"].iloc[0]
    return updated, str(made), report


@pytest.mark.slow(seconds=12)
def test_a_link_made_while_the_undo_runs_is_kept_and_pointed_at_the_re_created_record(
        svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    updated, made, report = _a_part_made_by_mistake(client)
    order = _orders(client).main.index[0]
    theirs = _parts_of(client, order) | {made}
    u = undo(client, report)
    assert u.counts == {"update": 3, "create": 0, "delete": 1}
    # counted before anything is sent: the read of the work orders' links to the part
    # it deletes (one connection field into the parts), behind the quota's gate too
    est = u.requests
    assert u.plan.estimate_requests(delete_missing=True).lookups == est.lookups == 1
    assert est.writes == 4

    # another user links a work order to that part on the application's pages once the
    # undo is under way (its first write answered), before its delete
    put = client.update_record
    raced: list[str] = []

    def update_then_they_link(*a: Any, **kw: Any) -> Any:
        out = put(*a, **kw)
        if not raced:
            raced.append(order)
            svc.pages.update_record(ORDERS, order, {ORDER_PARTS: sorted(theirs)})
        return out

    client.update_record = update_then_they_link  # type: ignore[method-assign]
    svc.request_log.clear()
    try:
        out = u.apply(max_workers=1, **QUIET)
    finally:
        del client.update_record
    assert raced and set(out.table["status"]) == {"applied"}, out.table
    assert out.requests["lookups"] == 1
    assert svc.request_log.count() <= est.total
    assert made not in _parts(client).main.index
    assert _parts_of(client, order) == theirs - {made}   # the service dropped their link
    # the undo kept it (read just before the delete): undoing the undo points it at the
    # part made again
    redo = undo(client, out)
    assert redo.counts == {"update": 3, "create": 1, "delete": 0}
    again = redo.apply(**QUIET)
    assert set(again.table["status"]) == {"applied"}, again.table
    assert _parts_of(client, order) == (theirs - {made}) | {redo.id_map[made]}


def test_the_link_reads_stay_behind_the_quota_gate(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    _updated, made, _report = _a_part_made_by_mistake(client)
    parts = _parts(client)
    parts.main = parts.main.drop([made])
    svc.emulation.daily_quota = 500
    svc.emulation.new_quota_day()
    client.get_page(PARTS, rows_per_page=1)          # the client learns what is left
    left = client.quota_left()
    assert left is not None
    svc.request_log.clear()
    report = write_back(client, parts, delete_missing=True, quota_reserve=left, **QUIET)
    # the link read would take the quota below the reserve: neither it nor the delete
    # is sent
    assert svc.request_log.count() == 0
    assert report.table.set_index("record_id").at[made, "status"] == "not_applied"
    assert report.requests["lookups"] == 0
    assert "quota" in report.table.set_index("record_id").at[made, "message"]


def test_write_back_counts_the_link_reads_of_its_deletes(svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    parts = _parts(client)
    parts.main = parts.main.drop(parts.main.index[:12].tolist())   # one batch of 12
    est = diff(parts).estimate_requests(delete_missing=True, link_fields=1)
    # the work orders' parts: the count of work orders, then two chunks of ids
    assert est.lookups == 3
    svc.request_log.clear()
    report = write_back(client, parts, delete_missing=True, **QUIET)
    assert set(report.table["status"]) == {"applied"}, report.table
    assert 1 <= report.requests["lookups"] <= est.lookups
    assert svc.request_log.count() <= est.total
    assert report.quota is not None and report.quota.needed == est.total


def test_a_list_changed_before_the_undo_points_it_at_the_re_created_record(
        svc: LocalService) -> None:
    client = client_for(svc, rate_limit=0)
    orders = _orders(client)
    links = orders.tables[ORDER_PARTS]
    gone = links["connected_id"].value_counts().index[0]      # a part work orders list
    users = sorted(set(links.loc[links["connected_id"] == gone, "record_id"]))
    parts = _parts(client)
    spare = next(p for p in parts.main.index if p != gone
                 and p not in set(links.loc[links["record_id"] == users[0], "connected_id"]))
    parts.main = parts.main.drop([gone])
    report = write_back(client, parts, delete_missing=True, **QUIET)
    assert set(report.table["status"]) == {"applied"}
    u = undo(client, report)
    # while the part is created again, another user adds a part to one of those work
    # orders on the application's pages: the list the undo expected changed
    post = client.create_record

    def create_then_they_edit(*a: Any, **kw: Any) -> Any:
        out = post(*a, **kw)
        svc.pages.update_record(ORDERS, users[0],
                                {ORDER_PARTS: sorted(_parts_of(client, users[0])
                                                     | {spare})})
        return out

    client.create_record = create_then_they_edit  # type: ignore[method-assign]
    try:
        out = u.apply(**QUIET)
    finally:
        del client.create_record
    assert set(out.table["status"]) == {"applied"}, out.table
    new = u.id_map[gone]
    for order in users:      # every list points at the new part; their part stays
        want = set(links.loc[links["record_id"] == order, "connected_id"]) - {gone}
        want |= {new} | ({spare} if order == users[0] else set())
        assert _parts_of(client, order) == want
    assert out.requests["rereads"] >= 1


class _Crash(Exception):
    pass


def test_an_undo_cut_while_pointing_lists_at_new_records_resumes(
        svc: LocalService, tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    orders = _orders(client)
    links = orders.tables[ORDER_PARTS]
    gone = links["connected_id"].value_counts().index[:2].tolist()
    parts = _parts(client)
    parts.main = parts.main.drop(gone)
    journal, undo_journal = tmp_path / "push.jsonl", tmp_path / "undo.jsonl"
    report = write_back(client, parts, delete_missing=True, journal=journal, **QUIET)
    assert set(report.table["status"]) == {"applied"}
    # killed at the first write pointing a work order at a re-created part
    dying = client_for(svc, rate_limit=0)

    def killed(*a: Any, **kw: Any) -> Any:
        raise _Crash("killed")

    dying.update_record = killed  # type: ignore[method-assign]
    with pytest.raises(_Crash):
        undo(dying, journal).apply(journal=undo_journal, max_workers=1, **QUIET)
    assert len(_parts(client).main) == len(parts.main) + 2      # both made again, once
    svc.request_log.clear()
    u = undo(client, journal)
    out = u.apply(journal=undo_journal, **QUIET)                 # as a new process would
    assert set(out.table["status"]) == {"applied"}, out.table
    assert svc.request_log.count(method="POST", applied=True) == 0   # nothing made twice
    now = _parts(client).main
    assert len(now) == len(parts.main) + 2
    for old in gone:
        users = set(links.loc[links["connected_id"] == old, "record_id"])
        t = _orders(client).tables[ORDER_PARTS]
        assert set(t.loc[t["connected_id"] == u.id_map[old], "record_id"]) == users


def test_a_journal_of_an_object_no_longer_in_the_application(svc: LocalService,
                                                              tmp_path: Path) -> None:
    client = client_for(svc, rate_limit=0)
    journal = tmp_path / "push.jsonl"
    orders = _orders(client)
    orders.main.loc[orders.main.index[:2], "field_12"] = "renamed by mistake"
    write_back(client, orders, journal=journal, **QUIET)
    svc.builder.remove_object(ORDERS)        # the work orders removed since
    client.schema(refresh=True)
    svc.request_log.clear()
    with pytest.raises(UsageError, match="object_3.*no longer in the application"):
        undo(client, journal)
    assert svc.request_log.count(method="PUT") == 0


def test_undo_plan_is_public() -> None:
    assert "UndoPlan" in svc_frames.__all__
    assert svc_frames.UndoPlan is svc_frames.undoing.UndoPlan


@pytest.mark.parametrize("subset", ["filter", "columns"])
def test_records_of_the_same_object_outside_the_frames_are_pointed_at_the_re_created_one(
        subset: str) -> None:
    """A run over a part of the work orders (a filter, or a few columns: "Follows" not
    loaded) deletes one that other work orders follow, outside its frames: the link
    reads before the delete cover the object's own connection field (counted, gated),
    and the undo points those records at the re-created work order."""
    from fixtures.works_app import FOLLOWS, ORDERS, TITLE, fill_works, works_document
    with LocalService(demo=False, app=works_document(), records=0, rate_limit=0) as s:
        fill_works(s, orders=12, visits=0)
        client = client_for(s, rate_limit=0)
        whole = read_object(client, ORDERS, columns="keys", progress=False)
        follows = whole.tables[FOLLOWS]
        gone = str(follows["connected_id"].value_counts().index[0])
        followers = set(follows.loc[follows["connected_id"] == gone, "record_id"])
        assert followers
        if subset == "filter":
            title = whole.main.at[gone, TITLE]
            frames = read_object(client, ORDERS, columns="keys", progress=False,
                                 filters={"field": TITLE, "operator": "is", "value": title})
        else:
            frames = read_object(client, ORDERS, columns=[TITLE], progress=False)
            assert FOLLOWS not in frames.tables
        frames.main = frames.main.drop([gone])
        # the object's own field into it (Follows) and the visits' are read before the
        # delete: counted in the run's estimate (from the schema) and its requests
        assert diff(frames).estimate_requests(delete_missing=True, link_fields=len(
            inbound_connections(client, ORDERS))).lookups == 2
        report = write_back(client, frames, delete_missing=True, **QUIET)
        assert report.counts == {"applied": 1}
        assert report.requests.get("lookups") == 2
        u = undo(client, report)
        assert u.counts == {"update": 0, "create": 1, "delete": 0}
        # each follower (outside the frames, or with a list the frames did not load) is
        # pointed at the new one: counted before anything is sent
        assert u.requests.writes == 1 + len(followers)
        out = u.apply(**QUIET)
        assert set(out.table["status"]) == {"applied"}, out.table
        new = u.id_map[gone]
        now = read_object(client, ORDERS, columns="keys", progress=False).tables[FOLLOWS]
        assert set(now.loc[now["connected_id"] == new, "record_id"]) == followers
