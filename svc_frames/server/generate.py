"""The generic record generator: fills any application with deterministic records
(values by field kind from pools, connections to records made before, computed fields
computed), and seeds an application document's users through ordinary writes.

Usage::

    generate_generic(state, records=100, seed=0)
    seed_users(state)
"""

from __future__ import annotations

import datetime as dt
import io
import json
import random
from collections.abc import Sequence
from typing import Any

from PIL import Image, ImageDraw

from ..errors import InvalidValue
from ..kinds.base import FieldSpec
from .computed import compute, inbound_aggregated
from .render import Piece, RecordRow, record_row, text_of
from .schema import COMPUTED_KINDS
from .state import ServiceState
from .store import BASE_URL_PLACEHOLDER

_FIRST = ["Ann", "Ben", "Carla", "Dev", "Elena", "Femi", "Grace", "Hiro", "Ines", "Jon",
          "Kira", "Luis", "Mara", "Nils", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tariq"]
_LAST = ["Lee", "Novak", "Okafor", "Garcia", "Smith", "Tanaka", "Rossi", "Khan", "Berg",
         "Silva", "Moreau", "Chen", "Ivanova", "Brown", "Haddad", "Nguyen"]
_STREETS = ["Cameron Rd", "Lamar Blvd", "Congress Ave", "Burnet Rd", "Oltorf St", "Guadalupe St",
            "Riverside Dr", "Airport Blvd", "Manor Rd", "Koenig Ln"]
_CITIES = [("Austin", "TX", "787", 30.27, -97.74), ("Dallas", "TX", "752", 32.78, -96.80),
           ("Houston", "TX", "770", 29.76, -95.37), ("Denver", "CO", "802", 39.74, -104.99),
           ("Chicago", "IL", "606", 41.88, -87.63), ("Tulsa", "OK", "741", 36.15, -95.99)]
_VERBS = ["Replace", "Inspect", "Repair", "Install", "Service", "Clean", "Calibrate", "Test"]
_THINGS = ["pump", "boiler", "rooftop unit", "fire alarm", "water heater", "generator",
           "chiller", "conveyor", "gate motor", "lighting panel", "backflow valve", "compressor"]
PARTS = ["Bearing", "Filter", "Gasket", "Valve", "Fuse", "Belt", "Sensor", "Relay", "Seal",
          "Thermostat", "Capacitor", "Hose", "Bracket", "Switch", "Motor", "Coupling"]
SIZES = ["S", "M", "L", "XL", "10mm", "12mm", "1in", "2in", "24V", "120V", "240V"]
POOL = 211  # distinct values per field; records pick from pools (fast, still varied)
#: Pools built in this process, by seed, field definition and empty rate: a pool is a
#: function of those alone (asset fields excepted: they register their files in the
#: store), and a test suite or a benchmark starts many services of one application.
_POOLS: dict[tuple[int, str, float], list[Piece]] = {}
_POOLS_KEPT = 1024
_PHOTOS: dict[int, tuple[bytes, bytes]] = {}   # site_photo(i), by i


class Generator:
    """Pools of ready pieces per field, built from inputs normalized by the codecs."""

    def __init__(self, state: ServiceState, rng: random.Random, seed: int = 0) -> None:
        self.state = state
        self.rng = rng
        self.seed = seed
        self.renderer = state.renderer
        self.assets: dict[str, list[dict[str, Any]]] = {}

    def piece(self, spec: FieldSpec, raw: Any) -> Piece:
        return self.renderer.piece(spec, raw)

    def normalize(self, spec: FieldSpec, value: Any) -> Any:
        try:
            return self.renderer.normalize(spec, value, None)
        except InvalidValue:
            return None

    def date_input(self, d: dt.datetime) -> dict[str, Any]:
        return {"date": d.strftime("%m/%d/%Y"), "hours": d.strftime("%I"),
                "minutes": d.strftime("%M"), "am_pm": d.strftime("%p")}

    def input_for(self, spec: FieldSpec, i: int) -> Any:  # noqa: C901 - one branch per kind
        r = self.rng
        k = spec.kind
        base = dt.datetime(2024, 1, 1, 8, 0)
        if k == "short_text":
            if spec.name == "Customer Ref":
                return f"PO-{r.randint(10000, 99999)}"
            return f"{r.choice(_VERBS)} {r.choice(_THINGS)} #{r.randint(1, 999)}"
        if k == "paragraph_text":
            return (f"{r.choice(_VERBS)} the {r.choice(_THINGS)} on level {r.randint(1, 9)}."
                    f"\nCustomer reports noise since {r.choice(['Monday', 'last week', 'May'])}.")
        if k == "rich_text":
            return (f"<p><strong>{r.choice(_VERBS)}</strong> {r.choice(_THINGS)}</p>"
                    f"<ul><li>check {r.choice(PARTS).lower()}</li></ul>")
        if k == "number":
            return r.randint(1, 250)
        if k == "currency":
            return f"{r.uniform(2, 900):.2f}"
        if k == "rating":  # most work is of middling to high priority
            return r.choices(range(6), weights=(4, 8, 18, 26, 26, 18))[0]
        if k == "boolean":
            return r.random() < 0.3
        if k == "multiple_choice":
            opts = list((spec.format or {}).get("options") or ["A"])
            if (spec.format or {}).get("type") == "multi":
                return r.sample(opts, r.randint(1, min(3, len(opts))))
            if spec.name == "Status" and len(opts) == 5:  # a realistic backlog
                return r.choices(opts, weights=(40, 22, 10, 23, 5))[0]
            return r.choice(opts)
        if k == "date_time":
            d = base + dt.timedelta(days=r.randint(0, 900), minutes=15 * r.randint(0, 40))
            value = self.date_input(d)
            if (spec.format or {}).get("calendar"):
                value["to"] = self.date_input(d + dt.timedelta(minutes=30 * r.randint(1, 8)))
            return value
        if k == "timer":
            d = base + dt.timedelta(days=r.randint(0, 900), minutes=15 * r.randint(0, 40))
            return {"times": [{"from": self.date_input(d), "to": self.date_input(
                d + dt.timedelta(minutes=15 * r.randint(1, 16)))}]}
        if k == "name":
            out = {"first": r.choice(_FIRST), "last": r.choice(_LAST)}
            if r.random() < 0.2:
                out["middle"] = r.choice(_FIRST)
            if r.random() < 0.1:
                out["title"] = r.choice(["Dr.", "Ms.", "Mr."])
            return out
        if k == "email":
            return {"email": f"{r.choice(_FIRST).lower()}.{r.choice(_LAST).lower()}"
                             f"{r.randint(1, 99)}@example.com"}
        if k == "address":
            city, state, zip3, lat, lon = r.choice(_CITIES)
            addr: dict[str, Any] = {"street": f"{r.randint(100, 9999)} {r.choice(_STREETS)}",
                   "street2": r.choice(["", "", f"Suite {r.randint(1, 400)}"]),
                   "city": city, "state": state, "zip": f"{zip3}{r.randint(10, 99)}",
                   "latitude": round(lat + r.uniform(-0.2, 0.2), 5),
                   "longitude": round(lon + r.uniform(-0.2, 0.2), 5)}
            return addr
        if k == "phone":
            return f"({r.randint(201, 989)}) {r.randint(200, 999)}-{r.randint(0, 9999):04d}"
        if k == "link":
            return {"url": f"https://manuals.example.com/{r.choice(_THINGS).replace(' ', '-')}"
                           f"/{r.randint(1, 500)}"}
        if k == "image" and (spec.format or {}).get("source") == "url":
            return f"https://images.example.com/equipment/{r.randint(1, 400)}.jpg"
        if k == "signature":
            pts = " ".join(f"l {r.randint(-9, 9)} {r.randint(-9, 9)}" for _ in range(6))
            svg = ('<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="200" '
                   f'height="60"><path stroke="rgb(0, 0, 0)" fill="none" d="M 10 30 {pts}"/>'
                   '</svg>')
            return {"svg": svg, "base30": f"{r.randint(0, 10**9):x}"}
        if k == "user_roles":
            return self.roles(spec)
        return None

    def roles(self, spec: FieldSpec) -> list[str] | None:
        """Roles of the application for a user-roles field: one of the roles other than
        its object's own (the last in key order twice as often), else its own role."""
        app = self.state.app
        obj = app.objects.get(spec.object_key or "")
        own = obj.profile_key if obj is not None else None
        others = sorted((p for p in app.profiles if p != own),
                        key=lambda p: (len(p), p), reverse=True)
        if others:
            return [self.rng.choice([others[0], *others])]
        return [own] if own else None

    def pool(self, spec: FieldSpec, empty_rate: float) -> list[Piece]:
        """POOL pieces for a field, from a random stream of its own (adding a field to an
        application never changes the values of the others)."""
        assets = spec.kind in ("file", "image") and (spec.format or {}).get("source") != "url"
        # a field's values depend on its definition, and user roles on the application's
        schema = spec.to_schema()
        if spec.kind == "user_roles":
            obj = self.state.app.objects.get(spec.object_key or "")
            schema = {**schema, "roles": sorted(self.state.app.profiles),
                      "own": obj.profile_key if obj is not None else None}
        memo = (self.seed, json.dumps(schema, sort_keys=True, default=str), empty_rate)
        if not assets and memo in _POOLS:
            return _POOLS[memo]
        main_rng, self.rng = self.rng, random.Random(f"{self.seed}:{spec.key}")
        try:
            out = self._pool(spec, empty_rate)
        finally:
            self.rng = main_rng
        if not assets:
            if len(_POOLS) >= _POOLS_KEPT:
                _POOLS.clear()
            _POOLS[memo] = out
        return out

    def _pool(self, spec: FieldSpec, empty_rate: float) -> list[Piece]:
        out: list[Piece] = []
        for i in range(POOL):
            if not spec.required and (i % int(1 / empty_rate) == 0):
                out.append(self.piece(spec, None))
                continue
            if spec.kind in ("file", "image") and (spec.format or {}).get("source") != "url":
                asset = self.assets[spec.kind][i % len(self.assets[spec.kind])]
                raw: Any = self.state.store.assets.asset_raw(
                    asset["id"], spec.kind, asset["filename"], asset["size"], spec.kind == "image",
                    spec.key, BASE_URL_PLACEHOLDER)
                asset.setdefault("fields", set()).add(spec.key)
            else:
                raw = self.normalize(spec, self.input_for(spec, i))
            out.append(self.piece(spec, raw))
        return out

    def make_assets(self, count: int = 6) -> None:
        store = self.state.store
        self.assets = {"file": [], "image": []}
        ids = random.Random(f"{self.seed}:assets")
        for i in range(count):
            text = (f"Work order checklist {i + 1}\n" + "- inspect\n- record readings\n" * 5)
            content = text.encode()
            name = f"checklist_{i + 1}.txt"
            aid, size = store.assets.add_asset("file", name, content, None,
                                        f"{0x64000000 + 2 * i:08x}{ids.getrandbits(64):016x}")
            self.assets["file"].append({"id": aid, "filename": name, "size": size})
            png, thumb = site_photo(i)
            name = f"site_photo_{i + 1}.png"
            aid, size = store.assets.add_asset("image", name, png, thumb,
                                        f"{0x64000001 + 2 * i:08x}{ids.getrandbits(64):016x}")
            self.assets["image"].append({"id": aid, "filename": name, "size": size})



def site_photo(i: int) -> tuple[bytes, bytes]:
    """The demo's ``i``-th site photo and its thumbnail, PNG; encoded once per process
    (a small demo service started in a fifth less CPU once they were)."""
    if i not in _PHOTOS:
        im = Image.new("RGB", (320, 240), (40 * i % 255, 120, 200 - 20 * i % 200))
        ImageDraw.Draw(im).rectangle((20 + 10 * i, 20, 200, 200), fill=(250, 200, 40))
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        thumb = io.BytesIO()
        im.thumbnail((200, 200))
        im.save(thumb, format="PNG")
        _PHOTOS[i] = (buf.getvalue(), thumb.getvalue())
    return _PHOTOS[i]


def seeded_id(rng: random.Random, t0: int, i: int) -> str:
    return f"{t0 + i:08x}{rng.getrandbits(64):016x}"


def generate_generic(state: ServiceState, records: int, seed: int = 0) -> dict[str, int]:
    """Fill any application with ``records`` generated records per object (after its seed
    users): values by kind, connections to records of objects generated before, computed
    fields computed. Deterministic for a seed. Returns counts per object."""
    app = state.app
    store = state.store
    rng = random.Random(seed)
    gen = Generator(state, rng, seed)
    if any(f.kind in ("file", "image") for _, f in app.iter_fields()):
        gen.make_assets()
    made: dict[str, dict[str, dict[str, Any]]] = {}  # object -> id -> {"raw", "display"}

    def connected(obj_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        recs = made.get(obj_key, {})
        return [{"id": i, **recs[i]} for i in ids if i in recs]

    counts: dict[str, int] = {}
    for o_index, obj in enumerate(app.objects.values()):
        stored = [f for f in obj.fields if f.kind not in COMPUTED_KINDS
                  and f.kind not in ("connection", "password")]
        pools = {f.key: gen.pool(f, 0.1) for f in stored if not f.unique}
        rows: list[RecordRow] = []
        links: list[tuple[str, str, str, str]] = []
        made[obj.key] = {}
        base = {f.key: store.counter(obj.key, f.key) for f in obj.fields_of("auto_increment")}
        for n in range(records):
            rid = seeded_id(rng, 0x66000000 + o_index * 0x100000, n)
            raw: dict[str, Any] = {}
            for f in stored:
                if f.unique:  # a value of its own: unique fields must not repeat
                    value = gen.input_for(f, n)
                    if f.kind == "email":
                        value = {"email": f"user{o_index}.{n}@example.com"}
                    elif isinstance(value, str):
                        value = f"{value} {n + 1}"
                    raw[f.key] = gen.normalize(f, value)
                else:
                    raw[f.key] = pools[f.key][rng.randrange(POOL)].raw
            for f in obj.fields_of("connection"):
                target = made.get((f.relationship or {}).get("object", ""), {})
                if target and rng.random() < 0.85:
                    many = (f.relationship or {}).get("has") == "many"
                    ids = rng.sample(sorted(target), min(len(target),
                                                         rng.randint(1, 3) if many else 1))
                    tobj = app.object((f.relationship or {})["object"])
                    ident = tobj.identifier
                    raw[f.key] = [{"id": i, "identifier": text_of(
                        target[i]["display"].get(ident, "")) if ident else i} for i in ids]
                    links.extend((obj.key, rid, f.key, i) for i in ids)
            for f in obj.fields_of("auto_increment"):
                raw[f.key] = base[f.key] + n + 1
            compute(gen.renderer, obj, raw, connected)
            pieces = [gen.piece(f, raw.get(f.key)) for f in obj.fields]
            rows.append(record_row(obj.key, rid, pieces))
            made[obj.key][rid] = {"raw": {p.key: p.raw for p in pieces},
                                  "display": {p.key: p.display for p in pieces}}
        store.bulk_insert(rows, links, {(obj.key, k): v + records for k, v in base.items()})
        counts[obj.key] = records
    # aggregates over another object's connection count records made after their own
    for obj_key in sorted({o for objs in inbound_aggregated(app).values() for o in objs}):
        store.recompute_all(obj_key)
    return counts


def seed_users(state: ServiceState) -> None:
    """Create the application document's ``users`` (when not generated) through writes."""
    app = state.app
    for u in app.users:
        obj = app.objects.get(u.get("object", ""))
        if obj is None:
            continue
        values: dict[str, Any] = {}
        for f in obj.fields:
            if f.kind == "email":
                values[f.key] = {"email": u["email"]}
            elif f.kind == "password":
                values[f.key] = u["password"]
            elif f.kind == "name":
                first, _, last = str(u.get("name", "User")).partition(" ")
                values[f.key] = {"first": first, "last": last or first}
            elif f.kind == "user_roles":
                values[f.key] = list(u.get("profile_keys") or [])
            elif f.kind == "multiple_choice" and "status" in f.name.lower():
                values[f.key] = "active"
        state.store.write(obj.key, values)




__all__ = ["Generator", "generate_generic", "seed_users", "seeded_id", "POOL", "PARTS", "SIZES"]
