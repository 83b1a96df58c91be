"""refreshing/merge.py: server records folded into loaded frames (over the local service,
real HTTP): the server's values, the user's edits kept, conflicts, new and gone records."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from svc_frames import Client, read_object
from svc_frames.frames import Frames
from svc_frames.refreshing.listing import list_all
from svc_frames.refreshing.merge import Merger
from svc_frames.server import LocalService

WO = "object_3"
TEXT = "field_12"  # the work order's identifier text


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=12, rate_limit=0, seed=17) as s:
        yield s


def client_of(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def server_frames(client: Client, frames: Frames) -> Frames:
    assert frames.source is not None and frames.source.load is not None
    return list_all(client, frames.source, frames.source.load, 1000)


def test_server_values_merge_and_local_edits_stay(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, progress=False, columns="keys")
    a, b, c = frames.main.index[:3]
    client.update_record(WO, a, {TEXT: "changed there"})
    client.update_record(WO, b, {TEXT: "changed there too"})
    frames.main.loc[b, TEXT] = "edited here"          # a conflict: both changed it
    frames.main.loc[c, TEXT] = "edited here only"     # a local edit the server kept
    merger = Merger(frames)
    merger.merge(server_frames(client, frames), complete=True)
    merger.finish()
    assert frames.original is not None
    assert frames.main.loc[a, TEXT] == "changed there"
    assert frames.original.main.loc[a, TEXT] == "changed there"
    assert frames.main.loc[b, TEXT] == "edited here"   # the user's value stays ...
    assert frames.original.main.loc[b, TEXT] != "changed there too"  # ... as loaded
    assert frames.main.loc[c, TEXT] == "edited here only"
    assert set(merger.changed) >= {a, b} and c not in merger.changed
    conflicts = merger.conflict_frame()
    assert list(conflicts["record_id"]) == [b]
    assert conflicts.iloc[0]["server"] == "changed there too"


def test_new_and_deleted_records(svc: LocalService) -> None:
    client = client_of(svc)
    frames = read_object(client, WO, progress=False, columns="keys")
    gone = frames.main.index[0]
    client.delete_record(WO, gone)
    new = client.create_record(WO, {TEXT: "a new one"})["id"]
    merger = Merger(frames)
    merger.merge(server_frames(client, frames), complete=True)
    merger.finish()
    assert merger.added == [new] and merger.deleted == [gone]
    assert gone not in frames.main.index and frames.main.index[-1] == new
    fresh = read_object(client, WO, progress=False, columns="keys")
    pd.testing.assert_frame_equal(frames.main.sort_index(), fresh.main.sort_index())
    assert merger.server_count() == len(fresh.main)
