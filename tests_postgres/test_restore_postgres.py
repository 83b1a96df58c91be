"""restore from a mirror in a real PostgreSQL 15 (its own cluster: conftest.py): work
orders deleted and edited are brought back as they were, their parts' links with them."""

from __future__ import annotations

import time

import pandas as pd

import svc_frames as sf
from svc_frames.server import LocalService
from tests.test_mirror import client_of


def test_a_restore_from_postgres(fresh_service: LocalService, pg_url: str) -> None:
    svc = fresh_service
    client = client_of(svc)
    sf.mirror(client, pg_url)
    time.sleep(0.02)
    when = pd.Timestamp.now(tz="UTC")
    time.sleep(0.02)
    orders = sf.read_object(client, "object_3", columns="keys")
    links = orders.tables["field_41"]
    gone = links["record_id"].drop_duplicates().tolist()[:3]   # orders with parts
    for rid in gone:
        svc.pages.delete_record("object_3", rid)
    edited = [r for r in orders.main.index if r not in gone][:2]
    for rid in edited:
        svc.pages.update_record("object_3", rid, {"field_12": "edited since"})
    sf.mirror(client, pg_url)
    p = sf.restore(client, pg_url, when, "Work Orders")
    assert p.counts == {"update": 2, "create": 3, "delete": 0}
    out = p.apply(progress=False)
    assert set(out.table["status"]) == {"applied"}, out.table
    now = sf.read_object(client, "object_3", columns="keys")
    for rid in edited:
        assert now.main.at[rid, "field_12"] == orders.main.at[rid, "field_12"]
    held = now.tables["field_41"]
    for old, new in p.id_map.items():
        assert now.main.at[new, "field_12"] == orders.main.at[old, "field_12"]
        assert set(held.loc[held["record_id"] == new, "connected_id"]) == \
            set(links.loc[links["record_id"] == old, "connected_id"])
