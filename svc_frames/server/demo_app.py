"""The demo application: its document (objects, scenes, views, record rules, users) and
the filling of its records (people, parts, work orders) with the generic generator.

Keys (stable; tests and notebooks may use them):

``object_1`` People (UserObject, ``profile_1``; identifier ``field_1``)
    field_1 name "Name" · field_2 email "Email" · field_3 password "Password" ·
    field_4 multiple_choice "User Status" (active/inactive/pending approval) ·
    field_5 user_roles "User Roles" · field_6 phone "Phone" ·
    field_7 address "Address" (with latitude/longitude)
``object_2`` Parts (identifier ``field_8``)
    field_8 short_text "Part Name" (unique) · field_9 currency "Unit Price" ·
    field_10 number "In Stock" · field_11 auto_increment "Part No"
``object_3`` Work Orders (the widest object: every field kind; identifier ``field_12``)
    field_12 short_text "Title" · field_13 paragraph_text "Description" ·
    field_14 rich_text "Notes" · field_15 concatenation "Code" (``WO-{field_24}: {field_12}``) ·
    field_16 number "Quantity" · field_17 currency "Unit Cost" ·
    field_18 equation "Total Cost" (``{field_16} * {field_17}``) ·
    field_19 sum / field_20 count / field_21 average / field_22 min / field_23 max over
    ``field_41`` (Parts) of ``field_9`` (Unit Price) ·
    field_24 auto_increment "WO Number" · field_25 rating "Priority" (max 5) ·
    field_26 boolean "Urgent" · field_27 multiple_choice single "Status"
    (Open/In Progress/On Hold/Done/Cancelled) · field_28 multiple_choice multi "Tags" ·
    field_29 date_time "Due" · field_30 date_time range "Scheduled" · field_31 timer
    "Work Time" · field_32 name "Contact" · field_33 email "Contact Email" ·
    field_34 address "Site" (lat/lon) · field_35 phone "Contact Phone" · field_36 link
    "Manual" · field_37 file "Attachment" · field_38 image (upload) "Photo" ·
    field_39 image (url) "Reference Image" · field_40 signature "Sign-off" ·
    field_41 connection many -> object_2 "Parts" · field_42 connection one -> object_1
    "Assignee" · field_43 connection one -> object_1 "Created By" ·
    field_44 date_time "Submitted At" · field_45 short_text "Customer Ref" (often empty) ·
    field_46 date_time "Last Modified": stamped by the service on every create and update
    (an object record rule: ``rules.records`` with no criteria and a ``current_date``
    value; generated records carry past stamps)

Scenes and views:

* ``scene_1`` (public): ``view_1`` table "Open work orders" (fixed rule: Status is not
  Cancelled; sorted by Due; columns field_24, field_12, field_27, field_29, field_25); ``view_2``
  calendar "Schedule" (field_12, field_30).
* ``scene_2`` (login, profile_2 Manager only): ``view_3`` table "Dispatch board" with a
  connection column: ``field_42`` showing the assignee's ``field_1`` (view records carry
  ``field_42_raw`` = the connected records' field_1 raw values, ``[{first, last}]``, and a
  display of anchors holding ``<span class="<id>">``), plus field_24, field_12, field_27,
  field_41, field_19; ``view_4`` form (insert) "New work order" (inputs field_12,
  field_13, field_16, field_17, field_27, field_41, field_42) with record rules: always set
  field_43 = logged-in user and field_44 = now; field_27 = "Open" when blank;
  field_26 = true when field_16 is higher than 100.
* ``scene_3`` (login, any profile): ``view_5`` search "Find work orders" with inline
  editing (field_24, field_12, field_27, field_25, field_26, field_16, field_18).
* ``scene_4`` (login, any profile): ``view_6`` list "My work orders" (records whose
  field_42 Assignee is the logged-in user; field_24, field_12, field_27, field_29);
  ``view_7`` form (update) "Update my work order" (same source; inputs field_27, field_14;
  rule: field_26 = false when field_27 is "Done"); ``view_8`` details "My account"
  (the logged-in user's own People record: field_1, field_2, field_6, field_7).

Profiles: ``profile_1`` People (every user), ``profile_2`` Manager, ``profile_3``
Technician. Users: ``manager@example.com`` / ``Manager-2024!`` (profile_1, profile_2) and
``tech@example.com`` / ``Tech-2024!`` (profile_1, profile_3).

Usage::

    doc = demo_document()
    generate_demo(state, records=1000, seed=0)   # after the service state is opened
"""

from __future__ import annotations

import copy
import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from .accounts import published_password_hash
from .computed import compute
from .generate import PARTS, POOL, SIZES, Generator, seeded_id
from .render import Piece, RecordRow, dumps, record_row
from .schema import AGGREGATE_KINDS, COMPUTED_KINDS
from .state import ServiceState

#: The computed pieces of a combination of parts, kept for the process: they depend only on
#: the work orders' definition and those parts, and a test suite or a benchmark starts many
#: demo services of one seed (same parts, same combinations).
_COMBOS: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, Piece]] = {}
_COMBOS_KEPT = 20_000

DEMO_USERS = [
    {"email": "manager@example.com", "password": "Manager-2024!", "name": "Morgan Reyes",
     "profile_keys": ["profile_1", "profile_2"], "roles": ["profile_2"]},
    {"email": "tech@example.com", "password": "Tech-2024!", "name": "Taylor Kim",
     "profile_keys": ["profile_1", "profile_3"], "roles": ["profile_3"]},
]


def _f(key: str, kind: str, name: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "type": kind, "name": name, "required": False,
                           "unique": False}
    out.update(extra)
    return out


_DATE = {"date_format": "mm/dd/yyyy", "time_format": "HH:MM am", "calendar": False}
_MONEY = {"format": "$"}
_NUM = {"mark_decimal": "period", "precision": "2", "rounding": "none",
        "mark_thousands": "comma", "format": "", "pre": "", "post": ""}


def _agg(kind: str) -> dict[str, Any]:
    fmt: dict[str, Any] = dict(_NUM)
    fmt["connection"] = {"key": "field_41"}
    if kind != "count":
        fmt["field"] = {"key": "field_9"}
        fmt["precision"] = "2"
    else:
        fmt["precision"] = "0"
    return fmt


def _col(key: str, **extra: Any) -> dict[str, Any]:
    return {"field": {"key": key}, "type": "field", **extra}


def demo_document() -> dict[str, Any]:
    """The demo application in the application-schema shape (a fresh copy)."""
    people = [
        _f("field_1", "name", "Name", required=True, format={"format": "First Last"}),
        _f("field_2", "email", "Email", required=True, unique=True),
        _f("field_3", "password", "Password"),
        _f("field_4", "multiple_choice", "User Status",
           format={"type": "single", "options": ["active", "inactive", "pending approval"]}),
        _f("field_5", "user_roles", "User Roles"),
        _f("field_6", "phone", "Phone", format={"format": "(999) 999-9999"}),
        _f("field_7", "address", "Address", format={"input": "address", "format": "US"}),
    ]
    parts = [
        _f("field_8", "short_text", "Part Name", required=True, unique=True),
        _f("field_9", "currency", "Unit Price", format=_MONEY),
        _f("field_10", "number", "In Stock", format={**_NUM, "precision": "0"}),
        _f("field_11", "auto_increment", "Part No"),
    ]
    wo = [
        _f("field_12", "short_text", "Title", required=True),
        _f("field_13", "paragraph_text", "Description"),
        _f("field_14", "rich_text", "Notes"),
        _f("field_15", "concatenation", "Code", format={"equation": "WO-{field_24}: {field_12}"}),
        _f("field_16", "number", "Quantity", format={**_NUM, "precision": "0"}),
        _f("field_17", "currency", "Unit Cost", format=_MONEY),
        _f("field_18", "equation", "Total Cost",
           format={**_NUM, "equation": "{field_16} * {field_17}", "equation_type": "numeric"}),
        _f("field_19", "sum", "Parts Total", format=_agg("sum")),
        _f("field_20", "count", "Parts Count", format=_agg("count")),
        _f("field_21", "average", "Average Part Price", format=_agg("average")),
        _f("field_22", "min", "Cheapest Part", format=_agg("min")),
        _f("field_23", "max", "Dearest Part", format=_agg("max")),
        _f("field_24", "auto_increment", "WO Number"),
        _f("field_25", "rating", "Priority", format={"max": "5", "allow_half": False}),
        _f("field_26", "boolean", "Urgent", format={"format": "yes_no", "default": False}),
        _f("field_27", "multiple_choice", "Status", format={
            "type": "single", "options": ["Open", "In Progress", "On Hold", "Done",
                                          "Cancelled"]}),
        _f("field_28", "multiple_choice", "Tags", format={
            "type": "multi", "options": ["Electrical", "Plumbing", "HVAC", "Safety",
                                         "Outdoor", "Inspection"]}),
        _f("field_29", "date_time", "Due", format=dict(_DATE)),
        _f("field_30", "date_time", "Scheduled", format={**_DATE, "calendar": True}),
        _f("field_31", "timer", "Work Time", format={"total_format": "from-to",
                                                     "time_format": "HH:MM am",
                                                     "date_format": "mm/dd/yyyy"}),
        _f("field_32", "name", "Contact", format={"format": "Last, First Middle"}),
        _f("field_33", "email", "Contact Email"),
        _f("field_34", "address", "Site", format={"input": "address", "format": "US"}),
        _f("field_35", "phone", "Contact Phone", format={"format": "(999) 999-9999"}),
        _f("field_36", "link", "Manual", format={"target": "_blank", "text_format": "url"}),
        _f("field_37", "file", "Attachment", format={"secure": False}),
        _f("field_38", "image", "Photo", format={"source": "upload", "thumbs": []}),
        _f("field_39", "image", "Reference Image", format={"source": "url", "thumbs": []}),
        _f("field_40", "signature", "Sign-off"),
        _f("field_41", "connection", "Parts",
           relationship={"object": "object_2", "has": "many", "belongs_to": "many"}),
        _f("field_42", "connection", "Assignee",
           relationship={"object": "object_1", "has": "one", "belongs_to": "many"}),
        _f("field_43", "connection", "Created By",
           relationship={"object": "object_1", "has": "one", "belongs_to": "many"}),
        _f("field_44", "date_time", "Submitted At", format=dict(_DATE)),
        _f("field_45", "short_text", "Customer Ref"),
        _f("field_46", "date_time", "Last Modified", format=dict(_DATE)),
    ]
    objects: list[dict[str, Any]] = [
        {"key": "object_1", "name": "People", "type": "UserObject", "profile_key": "profile_1",
         "identifier": "field_1", "fields": people},
        {"key": "object_2", "name": "Parts", "type": "StandardObject", "identifier": "field_8",
         "fields": parts},
        {"key": "object_3", "name": "Work Orders", "type": "StandardObject",
         "identifier": "field_12", "fields": wo,
         # a record rule of the object itself: runs on every create and update
         "rules": {"records": [{"criteria": [], "values": [
             {"field": "field_46", "type": "current_date"}]}]}},
    ]
    for o in objects:
        for f in o["fields"]:
            f["object_key"] = o["key"]
    scenes = [
        {"key": "scene_1", "slug": "public", "name": "Public board", "authenticated": False,
         "views": [
             {"key": "view_1", "name": "Open work orders", "type": "table",
              "source": {"object": "object_3", "sort": [{"field": "field_29", "order": "asc"}],
                         "criteria": {"match": "and", "rules": [
                  {"field": "field_27", "operator": "is not", "value": "Cancelled"}]}},
              "columns": [_col(k) for k in ("field_24", "field_12", "field_27", "field_29",
                                            "field_25")],
              "rows_per_page": "25", "options": {"cell_editor": False}},
             {"key": "view_2", "name": "Schedule", "type": "calendar",
              "source": {"object": "object_3"}, "events": {"event_field": "field_30"},
              "columns": [_col("field_12"), _col("field_30")]},
         ]},
        {"key": "scene_2", "slug": "dispatch", "name": "Dispatch", "authenticated": True,
         "limit_profile_access": True, "allowed_profiles": ["profile_2"],
         "views": [
             {"key": "view_3", "name": "Dispatch board", "type": "table",
              "source": {"object": "object_3"},
              "columns": [_col("field_24"), _col("field_12"), _col("field_27"),
                          _col("field_42", connection_field={"key": "field_1"},
                               header="Assignee"),
                          _col("field_41"), _col("field_19")],
              "options": {"cell_editor": False}},
             {"key": "view_4", "name": "New work order", "type": "form", "action": "insert",
              "source": {"object": "object_3"},
              "groups": [{"columns": [{"inputs": [
                  {"field": {"key": k}, "type": "field"} for k in
                  ("field_12", "field_13", "field_16", "field_17", "field_27", "field_41",
                   "field_42")]}]}],
              "rules": {"submits": [{"key": "submit_1", "action": "message",
                                     "message": "Work order created."}],
                        "records": [
                            {"criteria": [], "values": [
                                {"field": "field_43", "type": "user"},
                                {"field": "field_44", "type": "current_date"}]},
                            {"criteria": [{"field": "field_27", "operator": "is blank"}],
                             "values": [{"field": "field_27", "type": "value",
                                         "value": "Open"}]},
                            {"criteria": [{"field": "field_16", "operator": "higher than",
                                           "value": 100}],
                             "values": [{"field": "field_26", "type": "value",
                                         "value": True}]}]}},
         ]},
        {"key": "scene_3", "slug": "search", "name": "Search", "authenticated": True,
         "views": [
             {"key": "view_5", "name": "Find work orders", "type": "search",
              "source": {"object": "object_3"},
              "columns": [_col(k) for k in ("field_24", "field_12", "field_27", "field_25",
                                            "field_26", "field_16", "field_18")],
              "options": {"cell_editor": True}},
         ]},
        {"key": "scene_4", "slug": "my-work", "name": "My work", "authenticated": True,
         "views": [
             {"key": "view_6", "name": "My work orders", "type": "list",
              "source": {"object": "object_3", "connection_key": "field_42"},
              "columns": [_col(k) for k in ("field_24", "field_12", "field_27", "field_29")]},
             {"key": "view_7", "name": "Update my work order", "type": "form",
              "action": "update",
              "source": {"object": "object_3", "connection_key": "field_42"},
              "groups": [{"columns": [{"inputs": [
                  {"field": {"key": k}, "type": "field"} for k in ("field_27", "field_14")]}]}],
              "rules": {"submits": [{"key": "submit_2", "action": "message",
                                     "message": "Saved."}],
                        "records": [{"criteria": [{"field": "field_27", "operator": "is",
                                                   "value": "Done"}],
                                     "values": [{"field": "field_26", "type": "value",
                                                 "value": False}]}]}},
             {"key": "view_8", "name": "My account", "type": "details",
              "source": {"object": "object_1", "authenticated_user": True},
              "columns": [_col(k) for k in ("field_1", "field_2", "field_6", "field_7")]},
         ]},
    ]
    return copy.deepcopy({
        "name": "Field Service Demo",
        "settings": {"timezone": "Central Time (US & Canada)"},
        "profiles": [{"key": "profile_1", "name": "People"},
                     {"key": "profile_2", "name": "Manager"},
                     {"key": "profile_3", "name": "Technician"}],
        "objects": objects, "scenes": scenes,
        "users": [{"object": "object_1", "email": u["email"], "password": u["password"],
                   "name": u["name"], "profile_keys": u["roles"]} for u in DEMO_USERS],
    })


def stamped_fields(object_doc: dict[str, Any]) -> list[str]:
    """Fields an object's own record rules stamp with the current date on every write."""
    rules = (object_doc.get("rules") or {}).get("records") or []
    return [str(v["field"]) for r in rules if not r.get("criteria")
            for v in r.get("values") or [] if v.get("type") == "current_date" and v.get("field")]


def generate_demo(state: ServiceState, records: int, seed: int = 0,
             progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Fill the demo application: users, people, parts, then ``records`` work orders.

    Deterministic for a seed (ids and values); returns counts per object."""
    app = state.app
    store = state.store
    rng = random.Random(seed)
    gen = Generator(state, rng, seed)
    gen.make_assets()
    t0 = 0x65000000
    people_obj, parts_obj, wo_obj = (app.object(k) for k in ("object_1", "object_2",
                                                             "object_3"))
    counts: dict[str, int] = {}
    # people: the demo users (with passwords) and technicians without a login
    n_people = min(1000, 20 + records // 200)
    people_rows: list[RecordRow] = []
    people_ids: list[str] = []
    people_recs: dict[str, dict[str, Any]] = {}
    pools = {f.key: gen.pool(f, 0.1) for f in people_obj.fields
             if f.kind not in COMPUTED_KINDS | {"connection", "password"}}
    for i in range(n_people):
        rid = seeded_id(rng, t0, i)
        raw_pieces: dict[str, Piece] = {}
        secret = None
        for f in people_obj.fields:
            if f.kind == "password":
                if i < len(app.users):
                    secret = dumps({f.key: published_password_hash(app.users[i]["password"])})
                    raw_pieces[f.key] = gen.piece(f, "set")
                else:
                    raw_pieces[f.key] = gen.piece(f, None)
                continue
            raw_pieces[f.key] = pools[f.key][rng.randrange(POOL)]
        if i < len(app.users):
            u = app.users[i]
            first, _, last = str(u.get("name", "Demo User")).partition(" ")
            for f in people_obj.fields:
                if f.kind == "name":
                    raw_pieces[f.key] = gen.piece(f, gen.normalize(f, {"first": first,
                                                                       "last": last}))
                elif f.kind == "email":
                    raw_pieces[f.key] = gen.piece(f, gen.normalize(f, {"email": u["email"]}))
                elif f.kind == "user_roles":
                    raw_pieces[f.key] = gen.piece(f, gen.normalize(f, u.get("profile_keys")))
                elif f.kind == "multiple_choice" and "status" in f.name.lower():
                    raw_pieces[f.key] = gen.piece(f, gen.normalize(f, "active"))
        else:
            for f in people_obj.fields:  # unique, login-free emails for the others
                if f.kind == "email":
                    raw_pieces[f.key] = gen.piece(f, gen.normalize(
                        f, {"email": f"tech{i}@example.com"}))
        pieces = [raw_pieces[f.key] for f in people_obj.fields]
        people_rows.append(record_row(people_obj.key, rid, pieces, secret))
        people_ids.append(rid)
        people_recs[rid] = json.loads(people_rows[-1][2])
    counts[people_obj.key] = n_people
    # parts
    n_parts = min(400, 40 + records // 500)
    parts_rows: list[RecordRow] = []
    parts_ids: list[str] = []
    part_recs: dict[str, dict[str, Any]] = {}
    price_spec = parts_obj.field("field_9")
    for i in range(n_parts):
        rid = seeded_id(rng, t0 + 100000, i)
        praw: dict[str, Any] = {"field_8": f"{PARTS[i % len(PARTS)]} {SIZES[(i // len(PARTS)) % len(SIZES)]}"
                          f"-{i + 1}",
               "field_9": gen.normalize(price_spec, f"{rng.uniform(1.5, 480):.2f}"),
               "field_10": gen.normalize(parts_obj.field("field_10"), rng.randint(0, 400))
               if i % 9 else None,
               "field_11": i + 1}
        pieces = [gen.piece(f, praw.get(f.key)) for f in parts_obj.fields]
        parts_rows.append(record_row(parts_obj.key, rid, pieces))
        parts_ids.append(rid)
        part_recs[rid] = {"id": rid, "raw": praw, "display": json.loads(parts_rows[-1][2])}
    counts[parts_obj.key] = n_parts
    store.bulk_insert(people_rows + parts_rows, [],
                      {(parts_obj.key, "field_11"): n_parts})
    # work orders: pooled pieces for stored kinds; computed and connections per record
    pools = {f.key: gen.pool(f, 0.08) for f in wo_obj.fields
             if f.kind not in COMPUTED_KINDS and f.kind != "connection"}
    part_ident = {rid: part_recs[rid]["display"]["field_8"] for rid in parts_ids}
    people_ident = {rid: people_recs[rid]["field_1"] for rid in people_ids}

    def connected(obj_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        return [part_recs[i] for i in ids if i in part_recs] if obj_key == "object_2" else []

    # Computed values are cached by what they depend on: aggregates and the Parts
    # connection by parts combination, the equation by its two inputs, connections by
    # person; only the text formula and the auto increment are rendered per record.
    agg = [f for f in wo_obj.fields if f.kind in AGGREGATE_KINDS]
    eq_spec, code_spec, ai_spec = (wo_obj.field(k) for k in ("field_18", "field_15",
                                                              "field_24"))
    parts_spec = wo_obj.field("field_41")
    combos: list[dict[str, Piece]] = []
    definition = json.dumps(wo_obj.doc, sort_keys=True, default=str)
    if len(_COMBOS) >= _COMBOS_KEPT:
        _COMBOS.clear()
    for _ in range(600):
        ids = rng.sample(parts_ids, rng.choice((0, 1, 1, 2, 2, 3, 4)))
        memo = (definition, tuple((i, dumps(part_recs[i]["raw"])) for i in ids))
        if memo not in _COMBOS:
            craw: dict[str, Any] = {"field_41": [{"id": i, "identifier": part_ident[i]}
                                                 for i in ids] or None}
            compute(gen.renderer, wo_obj, craw, connected)
            combo = {f.key: gen.piece(f, craw.get(f.key)) for f in agg}
            combo["field_41"] = gen.piece(parts_spec, craw["field_41"])
            _COMBOS[memo] = combo
        combos.append(_COMBOS[memo])
    person_pieces: dict[tuple[str, str | None], Piece] = {}

    def person(key: str, who: str | None) -> Piece:
        if (key, who) not in person_pieces:
            spec = wo_obj.field(key)
            raw_c = [{"id": who, "identifier": people_ident[who]}] if who else None
            person_pieces[(key, who)] = gen.piece(spec, raw_c)
        return person_pieces[(key, who)]

    eq_cache: dict[tuple[int, int], Piece] = {}
    stamped = stamped_fields(wo_obj.doc)
    stored = [f for f in wo_obj.fields if f.kind not in COMPUTED_KINDS
              and f.kind != "connection" and f.key not in stamped]
    # stamps come from a stream of their own: adding one moves no other generated value
    stamp_rng = random.Random(f"{seed}:stamps")
    order = [f.key for f in wo_obj.fields]
    rows: list[RecordRow] = []
    links: list[tuple[str, str, str, str]] = []
    started = time.perf_counter()
    n_users = max(len(app.users), 1)
    for n in range(records):
        rid = seeded_id(rng, t0 + 200000, n)
        idx = [rng.randrange(POOL) for _ in stored]
        chosen = {f.key: pools[f.key][i] for f, i in zip(stored, idx, strict=True)}
        for key in stamped:
            chosen[key] = pools[key][stamp_rng.randrange(POOL)]
        p16, p17 = chosen["field_16"], chosen["field_17"]
        ek = (id(p16), id(p17))
        if ek not in eq_cache:
            eq_cache[ek] = gen.piece(eq_spec, gen.renderer.equation(
                wo_obj, eq_spec, {"field_16": p16.raw, "field_17": p17.raw}))
        chosen["field_18"] = eq_cache[ek]
        combo = combos[rng.randrange(len(combos))]
        chosen.update(combo)
        ai = gen.piece(ai_spec, n + 1)
        chosen["field_24"] = ai
        chosen["field_15"] = gen.piece(code_spec, gen.renderer.concatenate(
            wo_obj, code_spec, {"field_24": n + 1, "field_12": chosen["field_12"].raw},
            lambda _k: []))
        who = (people_ids[rng.randrange(len(people_ids))] if n % 5
               else people_ids[n % n_users]) if n % 12 else None
        chosen["field_42"] = person("field_42", who)
        chosen["field_43"] = person("field_43", people_ids[0] if n % 3 == 0 else None)
        for key in ("field_41", "field_42", "field_43"):
            for c in chosen[key].raw or []:
                links.append((wo_obj.key, rid, key, c["id"]))
        pieces = [chosen[k] for k in order]
        rows.append(record_row(wo_obj.key, rid, pieces))
        if len(rows) >= 20000:
            store.bulk_insert(rows, links, {})
            rows, links = [], []
            if progress:
                progress(f"{n + 1} work orders in {time.perf_counter() - started:.1f}s")
    store.bulk_insert(rows, links, {(wo_obj.key, "field_24"): records})
    counts[wo_obj.key] = records
    # demo assets are shared by generated records: mark each as placed in its field(s)
    store.assets.share_assets([(a["id"], sorted(a["fields"])[0])
                        for kind_assets in gen.assets.values() for a in kind_assets
                        if a.get("fields")])
    return counts



__all__ = ["demo_document", "generate_demo", "DEMO_USERS"]
