"""Loads while other users insert, update and delete (the local service's ``activity``),
over real HTTP: a load of an object with an auto-increment field, unsorted or sorted
ascending by that field, pages in that field's order (ordered pages and their gap check
without a filter, ranges of it with one) and returns every record that existed from its
start to its end exactly once, and none deleted before it began (computed from the
activity log); a load sorted by another field pages by number as before."""

from __future__ import annotations

from typing import Any

import pandas as pd

from svc_frames.loaders import read_object
from svc_frames.server import LocalService
from svc_frames.testing import client_for

OBJ = "object_3"   # work orders: field_24 is its auto-increment field


def _ids(svc: LocalService, obj: str = OBJ, filters: Any = None) -> set[str]:
    return set(map(str, read_object(client_for(svc), obj, progress=False, filters=filters,
                                    verify="none", columns="keys").main.index))


def _load_during_activity(svc: LocalService, **kw: Any) -> tuple[pd.DataFrame, int]:
    """A load while the activity runs, checked against the activity log: every record
    that existed from its start to its end comes once, none deleted before it began.
    Returns the loaded main frame and how many inserts and deletes came meanwhile."""
    act = svc.activity
    assert act is not None
    client = client_for(svc)
    client.schema()   # read first: a sorted load pages by ranges only with it in hand
    act.pause()
    before = _ids(svc, filters=kw.get("filters"))
    act.resume()
    t0 = svc.emulation.now()
    svc.request_log.clear()
    frames = read_object(client, OBJ, rows_per_page=25, progress=False, columns="keys", **kw)
    t1 = svc.emulation.now()
    sent = list(svc.request_log.entries)
    act.pause()
    entries = [e for e in act.log.entries if e.object_key == OBJ
               and t0 <= e.time <= t1 and e.action in ("insert", "delete")]
    inserted = {e.record_id for e in entries if e.action == "insert"}
    deleted = {e.record_id for e in entries if e.action == "delete"}
    after = _ids(svc, filters=kw.get("filters"))
    stable = (before & after) - inserted - deleted
    got = [str(i) for i in frames.main.index]
    assert len(got) == len(set(got))                  # none twice
    assert stable <= set(got)                         # none missing
    assert set(got) <= before | inserted              # none deleted before
    # every request in the auto-increment field's order (ranges: and its largest value,
    # one row sorted descending), about a page's worth each
    listing = [e.query for e in sent if e.path == f"/v1/objects/{OBJ}/records"]
    assert all("sort_field=field_24" in q for q in listing)
    assert sum("sort_order=asc" in q for q in listing) >= len(listing) - 1
    assert len(listing) >= len(before) // 25 - 2
    # with a filter of its own: ranges past page 1; without: pages by number, and the gap
    # checks (values listed, or a range where a gap is wide or the list ended early: the
    # activity deletes as well as inserts) only once every page of the plan was asked
    # for (pages past the plan, the list having grown, may follow them)
    ranged = [i for i, q in enumerate(listing) if "higher+than" in q]
    by_number = [i for i, q in enumerate(listing) if not q.startswith("page=1&")]
    if kw.get("filters"):
        assert ranged and not by_number
    else:
        assert by_number
        planned = -(-len(before) // 25) - 1   # pages 2.. of the plan (a delete may cut one)
        checks = [i for i, q in enumerate(listing) if "filters=" in q]
        assert all(i > by_number[planned - 2] for i in checks)
        assert all("filters=" not in listing[i] for i in by_number)
    act.resume()
    return frames.main, len(entries)


def test_loads_under_steady_edits_hold_every_stable_record_once() -> None:
    with LocalService(demo=True, records=400, rate_limit=0, latency_ms=5, seed=21,
                      activity=f"{OBJ}:40/s") as svc:
        changed_during = sum(_load_during_activity(svc)[1] for _ in range(3))
        assert changed_during > 0      # the activity did insert and delete meanwhile


def test_a_filtered_load_under_steady_edits_pages_by_ranges() -> None:
    with LocalService(demo=True, records=400, rate_limit=0, latency_ms=5, seed=24,
                      activity=f"{OBJ}:40/s") as svc:
        # the filter keeps about every work order, so the activity still moves the list
        main, changed = _load_during_activity(svc, filters=[
            {"field": "field_12", "operator": "is not blank"}])
        assert changed > 0


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
                             progress=False, columns="keys")
        assert len(frames.main) == 60
        queries = [e.query for e in svc.request_log.entries
                   if e.path == f"/v1/objects/{OBJ}/records"]
        assert all("field_24" not in q for q in queries)
        assert any("page=3" in q for q in queries)
