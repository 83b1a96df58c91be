"""Loads while other users insert, update and delete (the local service's ``activity``),
over real HTTP: a load of an object with an auto-increment field, unsorted or sorted
ascending by that field, pages by ranges of it and returns every record that existed from
its start to its end exactly once, and none deleted before it began (computed from the
activity log); a load sorted by another field pages by number as before."""

from __future__ import annotations

from typing import Any

import pandas as pd

from svc_frames.loaders import read_object
from svc_frames.server import LocalService
from svc_frames.testing import client_for

OBJ = "object_3"   # work orders: field_24 is its auto-increment field


def _ids(svc: LocalService, obj: str = OBJ) -> set[str]:
    return set(map(str, read_object(client_for(svc), obj, progress=False,
                                    verify="none").main.index))


def _load_during_activity(svc: LocalService, **kw: Any) -> tuple[pd.DataFrame, int]:
    """A load while the activity runs, checked against the activity log: every record
    that existed from its start to its end comes once, none deleted before it began.
    Returns the loaded main frame and how many inserts and deletes came meanwhile."""
    act = svc.activity
    assert act is not None
    client = client_for(svc)
    client.schema()   # read first: a sorted load pages by ranges only with it in hand
    act.pause()
    before = _ids(svc)
    act.resume()
    t0 = svc.emulation.now()
    svc.request_log.clear()
    frames = read_object(client, OBJ, rows_per_page=25, progress=False, **kw)
    t1 = svc.emulation.now()
    act.pause()
    entries = [e for e in act.log.entries if e.object_key == OBJ
               and t0 <= e.time <= t1 and e.action in ("insert", "delete")]
    inserted = {e.record_id for e in entries if e.action == "insert"}
    deleted = {e.record_id for e in entries if e.action == "delete"}
    after = _ids(svc)
    stable = (before & after) - inserted - deleted
    got = [str(i) for i in frames.main.index]
    assert len(got) == len(set(got))                  # none twice
    assert stable <= set(got)                         # none missing
    assert set(got) <= before | inserted              # none deleted before
    # the ranges of the auto-increment field, side by side
    ranged = [e for e in svc.request_log.entries
              if e.path == f"/v1/objects/{OBJ}/records" and "filters=" in e.query
              and "field_24" in e.query]
    assert len(ranged) >= len(before) // 25 - 2
    act.resume()
    return frames.main, len(entries)


def test_loads_under_steady_edits_hold_every_stable_record_once() -> None:
    with LocalService(demo=True, records=400, rate_limit=0, latency_ms=5, seed=21,
                      activity=f"{OBJ}:40/s") as svc:
        changed_during = sum(_load_during_activity(svc)[1] for _ in range(3))
        assert changed_during > 0      # the activity did insert and delete meanwhile


def test_a_load_sorted_by_the_auto_increment_field_pages_by_its_ranges() -> None:
    with LocalService(demo=True, records=150, rate_limit=0, latency_ms=5, seed=23,
                      activity=f"{OBJ}:40/s") as svc:
        main, changed = _load_during_activity(svc, sort_field="field_24")
        assert main["field_24"].is_monotonic_increasing and changed > 0


def test_a_sorted_load_pages_by_number() -> None:
    with LocalService(demo=True, records=60, rate_limit=0, seed=22) as svc:
        client = client_for(svc)
        svc.request_log.clear()
        frames = read_object(client, OBJ, rows_per_page=25, sort_field="field_12",
                             progress=False)
        assert len(frames.main) == 60
        queries = [e.query for e in svc.request_log.entries
                   if e.path == f"/v1/objects/{OBJ}/records"]
        assert all("field_24" not in q for q in queries)
        assert any("page=3" in q for q in queries)
