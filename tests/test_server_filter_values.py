"""The filter values' narrow table (svc_frames/server/filtervalues.py) stays in step with
the records through every write path: writes of the object API, of the application's
pages (other users' activity), deletions, changes of connected records, generation,
reopening a data directory and filling one written before the table existed. Filter
answers are compared with a brute-force evaluation of the records' own values."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import requests

from svc_frames.server import LocalService
from svc_frames.server.activity import Activity
from svc_frames.server.filtervalues import TABLE
from svc_frames.server.store import Store
from svc_frames.testing import object_url


def _rows(store: Store) -> list[tuple[Any, ...]]:
    return sorted(store.reader.execute(
        f"SELECT obj, field, text, seq, num, lat, lon FROM {TABLE}").fetchall())


def _rows_of(seq: int, obj_key: str, vals: str) -> list[tuple[Any, ...]]:
    """The narrow rows of one record, worked out here apart from the service's SQL."""
    by_field: dict[str, list[Any]] = {}
    for key, value in json.loads(vals).items():
        field, _, part = key.partition("#")
        by_field.setdefault(field, ["", None, None, None])[
            {"": 0, "n": 1, "lat": 2, "lon": 3}[part]] = value
    return [(obj_key, f, t, seq, *(None if v is None else float(v) for v in rest))
            for f, (t, *rest) in by_field.items()]


def _derived(store: Store) -> list[tuple[Any, ...]]:
    return sorted(row for seq, obj, vals in store.reader.execute(
        "SELECT seq, obj, vals FROM records") for row in _rows_of(seq, obj, vals))


def _records(store: Store) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """id -> (vals, format=both record) of every work order, read from the wide rows."""
    return {rid: (json.loads(vals), json.loads(frag)) for rid, vals, frag in store.reader.execute(
        "SELECT id, vals, frag FROM records WHERE obj = 'object_3'")}


def _answer(svc: LocalService, rules: list[dict[str, Any]]) -> set[str]:
    r = requests.get(object_url(svc, "object_3"), headers=svc.headers(), timeout=60,
                     params={"filters": json.dumps(rules), "rows_per_page": 1000})
    assert r.status_code == 200, r.text[:300]
    return {rec["id"] for rec in r.json()["records"]}


def _check_filters(svc: LocalService) -> None:
    recs = _records(svc.store)
    shown = next(v["field_42"] for v, _ in recs.values() if v.get("field_42"))
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"field": "field_12", "operator": "contains", "value": "pump"},
         lambda v, d: "pump" in v.get("field_12", "")),
        ({"field": "field_12", "operator": "does not contain", "value": "pump"},
         lambda v, d: "pump" not in v.get("field_12", "")),
        ({"field": "field_12", "operator": "is blank"}, lambda v, d: "field_12" not in v),
        ({"field": "field_27", "operator": "is", "value": ["Open", "Done", ""]},
         lambda v, d: v.get("field_27", "") in ("open", "done", "")),
        ({"field": "field_28", "operator": "is any", "value": ["Safety"]},
         lambda v, d: "|safety|" in v.get("field_28", "")),
        ({"field": "field_26", "operator": "is", "value": False},
         lambda v, d: v.get("field_26", "no") == "no"),
        ({"field": "field_24", "operator": "higher than", "value": 10},
         lambda v, d: v.get("field_24#n", -1) > 10),
        ({"field": "field_42", "operator": "is", "value": [shown]},  # no record id: text
         lambda v, d: v.get("field_42", "") == shown),
        ({"field": "field_42", "operator": "is blank"},
         lambda v, d: not d.get("field_42_raw")),
    ]
    for rule, expect in cases:
        want = {rid for rid, (v, d) in recs.items() if expect(v, d)}
        assert _answer(svc, [rule]) == want, rule


def test_filter_values_follow_every_write_path(tmp_path: Path) -> None:
    rng = random.Random(5)
    activity = Activity(("object_3", "object_2"), rate=0.001, inserts=1, updates=2,
                        deletes=1, seed=5)
    with LocalService(demo=True, records=15, rate_limit=0, seed=2, data_dir=tmp_path,
                      activity=activity) as svc:
        assert svc.activity is not None
        svc.activity.pause()
        store = svc.store
        assert _rows(store) == _derived(store) and _rows(store)  # generated
        people = [r[0] for r in store.reader.execute(
            "SELECT id FROM records WHERE obj = 'object_1'")]
        for i in range(40):
            orders = [r[0] for r in store.reader.execute(
                "SELECT id FROM records WHERE obj = 'object_3'")]
            what = rng.choice(["create", "update", "delete", "person", "activity"])
            if what == "create":
                store.write("object_3", {"field_12": rng.choice(["pump", "Pump room", ""]),
                                         "field_27": rng.choice(["Open", "Done", None]),
                                         "field_42": [rng.choice(people)]})
            elif what == "update":
                store.write("object_3", {"field_12": f"pump {i}" if i % 2 else None,
                                         "field_26": bool(i % 3),
                                         "field_42": [] if i % 4 == 0 else [rng.choice(people)]},
                            rng.choice(orders))
            elif what == "delete" and i % 3 == 0 and len(people) > 2:
                # a person deleted: the orders connected to them are re-rendered
                store.delete("object_1", people.pop(rng.randrange(len(people))))
            elif what == "delete":
                store.delete("object_3", rng.choice(orders))
            elif what == "person":  # a person renamed: the orders showing them change
                store.write("object_1", {"field_1": {"first": f"Zed{i}", "last": "Moss"}},
                            rng.choice(people))
            else:
                svc.activity.step()
            assert _rows(store) == _derived(store), (i, what)
        _check_filters(svc)
        before = _rows(store)
    with LocalService(demo=True, records=15, data_dir=tmp_path) as svc:  # reopened
        assert _rows(svc.store) == before
        _check_filters(svc)
    # a data directory written before the table existed gets its rows on open
    with sqlite3.connect(tmp_path / "service.db") as db:
        db.execute(f"DROP TABLE {TABLE}")
        db.execute("DELETE FROM meta WHERE key = 'filter_values_ready'")
    with LocalService(demo=True, records=15, data_dir=tmp_path) as svc:
        assert _rows(svc.store) == before
        _check_filters(svc)
