"""The application definition: a JSON document in the application-schema shape.

The local service reads the same shape the hosted service answers at
``GET /v1/applications/<app_id>`` (docs/hosted-behaviour.md §6): ``objects[]`` with
``fields[]``, ``scenes[]`` with ``views[]``. A few members the hosted schema does not show
are read too (all optional):

* view ``source``: ``{"object": "object_3", "criteria": {"match": "and", "rules": [...]},
  "authenticated_user": true}`` (the logged-in user's own record) or
  ``"connection_key": "field_N"`` (records whose connection ``field_N`` holds the logged-in
  user);
* view ``options.cell_editor`` (inline editing on tables and searches), form ``action``
  (``insert`` or ``update``), form ``rules.records`` (record rules, see ``RecordRule``);
* table/list/search/calendar/details ``columns[]``: ``{"field": {"key": "field_N"}}`` and,
  for a connection column that shows a field of the connected object,
  ``{"field": {"key": "field_C"}, "connection_field": {"key": "field_K"}}``;
* scene ``authenticated`` and ``allowed_profiles`` (empty = every logged-in user);
* application ``users``: ``[{"object": "object_1", "email", "password", "name",
  "profile_keys"}]`` seeded at first start (never served by the schema endpoint).

Usage::

    app = AppDef.from_document(json.load(open("app.json")))
    app.object("object_3").field("field_12").kind
"""

from __future__ import annotations

import copy
import datetime as dt
import time
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import ConfigurationError, SchemaError
from ..keys import KEY_RE
from ..kinds import READ_ONLY_KINDS
from ..kinds.base import FieldSpec
from ..kinds.tz import resolve_timezone
from ..schema import ViewColumn as Column
from ..schema import view_columns

#: Kinds the service computes; writes to them are refused (the codecs' read-only flag).
COMPUTED_KINDS = READ_ONLY_KINDS
AGGREGATE_KINDS = frozenset({"sum", "count", "average", "min", "max"})
VIEW_TYPES = frozenset({"table", "list", "search", "calendar", "form", "details"})

def zone_for(name: str | None) -> ZoneInfo:
    """IANA zone for a hosted display name (``Central Time (US & Canada)``) or an IANA name;
    UTC when unknown (the service still runs; only "today"-style filters depend on it)."""
    if not name:
        return ZoneInfo("UTC")
    try:
        return resolve_timezone(name)
    except (ConfigurationError, ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


@dataclass
class ObjectDef:
    """One object (table) of the application."""

    key: str
    name: str
    type: str
    identifier: str | None
    profile_key: str | None
    fields: list[FieldSpec]
    doc: dict[str, Any]

    def field(self, key: str) -> FieldSpec:
        for f in self.fields:
            if f.key == key:
                return f
        raise KeyError(key)

    def has_field(self, key: str) -> bool:
        return any(f.key == key for f in self.fields)

    def fields_of(self, *kinds: str) -> list[FieldSpec]:
        return [f for f in self.fields if f.kind in kinds]

    @property
    def is_user(self) -> bool:
        return self.type == "UserObject"


@dataclass
class RecordRule:
    """A form record rule: when ``criteria`` hold (all of them), set each of ``values``.

    ``values[i]``: ``{"field": "field_N", "type": "value"|"current_date"|"user",
    "value": ...}`` (``user``: the logged-in user's record id, for a connection field)."""

    criteria: list[dict[str, Any]]
    values: list[dict[str, Any]]


@dataclass
class ViewDef:
    """One view of a scene, with what the service needs to serve it."""

    key: str
    scene_key: str
    name: str
    type: str
    object_key: str
    criteria: dict[str, Any]
    authenticated_user: bool
    connection_key: str | None
    columns: list[Column]
    authenticated: bool
    allowed_profiles: list[str]
    inline_edit: bool
    action: str | None
    record_rules: list[RecordRule]
    submit_key: str
    rows_per_page: int
    default_sort: tuple[str, str] | None = None  # source.sort[0]: (field, asc|desc)

    @property
    def accepts_update(self) -> bool:
        if self.type == "form":
            return self.action != "insert"
        return self.type in ("table", "search") and self.inline_edit

    @property
    def accepts_create(self) -> bool:
        return self.type == "form" and self.action in ("insert", "create")


@dataclass
class AppDef:
    """The whole application: objects, views, settings, seed users."""

    id: str
    name: str
    timezone: str
    objects: dict[str, ObjectDef]
    views: dict[tuple[str, str], ViewDef]
    users: list[dict[str, Any]]
    doc: dict[str, Any]
    profiles: dict[str, str] = field(default_factory=dict)
    # the service's clock (epoch seconds): open_state sets ``Emulation.now``, so filters
    # ("is today"), stamps and ids read the clock the service's limits count by
    clock: Callable[[], float] = field(default=time.time, repr=False, compare=False)

    # ---- lookups --------------------------------------------------------------------
    def object(self, key: str) -> ObjectDef:
        return self.objects[key]

    def view(self, scene_key: str, view_key: str) -> ViewDef:
        return self.views[(scene_key, view_key)]

    def iter_fields(self) -> Iterator[tuple[ObjectDef, FieldSpec]]:
        for obj in self.objects.values():
            for f in obj.fields:
                yield obj, f

    @property
    def zone(self) -> ZoneInfo:
        return zone_for(self.timezone)

    def local_now(self) -> dt.datetime:
        """The application's wall-clock time now by the service's clock, naive (the hosted
        service's convention)."""
        return dt.datetime.fromtimestamp(self.clock(), self.zone).replace(tzinfo=None,
                                                                           microsecond=0)

    def public_document(self) -> dict[str, Any]:
        """The ``{"application": {...}}`` answer of the schema endpoint (no seed users)."""
        doc = copy.deepcopy(self.doc)
        if isinstance(doc.get("users"), list):  # seed users (with passwords) stay private
            doc.pop("users")
        doc["id"] = self.id
        doc.setdefault("settings", {})["timezone"] = self.timezone
        return {"application": doc}

    # ---- parsing --------------------------------------------------------------------
    @classmethod
    def from_document(cls, document: Mapping[str, Any], app_id: str | None = None) -> AppDef:
        """Parse an application document (with or without the ``application`` wrapper).

        Raises SchemaError naming the first bad member."""
        doc = dict(document.get("application", document))
        doc = copy.deepcopy(doc)
        objects: dict[str, ObjectDef] = {}
        seen_fields: set[str] = set()
        for i, o in enumerate(doc.get("objects") or []):
            key = _new_key(o.get("key"), "object", f"objects[{i}].key", objects)
            specs = []
            for j, f in enumerate(o.get("fields") or []):
                fkey = _new_key(f.get("key"), "field", f"{key}.fields[{j}].key", seen_fields)
                if not f.get("type"):
                    raise SchemaError(f"field {fkey} has no type")
                seen_fields.add(fkey)
                f.setdefault("object_key", key)
                specs.append(FieldSpec.from_schema(f, key))
            ident = o.get("identifier")
            if ident is not None and ident not in {s.key for s in specs}:
                raise SchemaError(f"{key}.identifier {ident!r} is not a field of {key}")
            objects[key] = ObjectDef(key=key, name=o.get("name") or key,
                                     type=o.get("type") or "StandardObject", identifier=ident,
                                     profile_key=o.get("profile_key"), fields=specs, doc=o)
        for obj in objects.values():
            for f in obj.fields:
                if f.kind == "connection":
                    target = (f.relationship or {}).get("object")
                    if target not in objects:
                        raise SchemaError(f"connection {f.key} points to unknown object "
                                          f"{target!r}")
        profiles = {o.profile_key: o.name for o in objects.values() if o.profile_key}
        for p in doc.get("profiles") or []:
            profiles[p["key"]] = p.get("name") or p["key"]
        for i, u in enumerate(doc.get("users") or []):
            for p in (u.get("profile_keys") or []) if isinstance(u, dict) else []:
                if p not in profiles:
                    raise SchemaError(f"users[{i}].profile_keys: {p!r} is not a role of this "
                                      f"application (its roles: "
                                      f"{', '.join(sorted(profiles)) or 'none'})")
        views: dict[tuple[str, str], ViewDef] = {}
        for s in doc.get("scenes") or []:
            skey = s.get("key")
            if not isinstance(skey, str) or not KEY_RE["scene"].match(skey):
                raise SchemaError(f"scene key {skey!r} is not of the form scene_<n>")
            for v in s.get("views") or []:
                if v.get("type") not in VIEW_TYPES:
                    continue  # menus, rich text, reports...: no records to serve
                vd = _parse_view(s, v, objects)
                views[(skey, vd.key)] = vd
        return cls(id=app_id or str(doc.get("id") or ""), name=doc.get("name") or "app",
                   timezone=(doc.get("settings") or {}).get("timezone") or "UTC",
                   objects=objects, views=views,
                   users=[u for u in doc["users"] if isinstance(u, dict) and "email" in u]
                   if isinstance(doc.get("users"), list) else [],
                   doc=doc, profiles=profiles)


def _new_key(key: Any, kind: str, where: str, seen: Container[str]) -> str:
    """``key`` if it is of the form ``<kind>_<n>`` and not in ``seen``, else SchemaError
    naming ``where`` (objects and fields share the checks)."""
    if not isinstance(key, str) or not KEY_RE[kind].match(key):
        raise SchemaError(f"{where} {key!r} is not of the form {kind}_<n>")
    if key in seen:
        raise SchemaError(f"{kind} {key} is defined twice")
    return key


def _parse_view(scene: Mapping[str, Any], v: Mapping[str, Any],
                objects: Mapping[str, ObjectDef]) -> ViewDef:
    skey = scene["key"]
    vkey = v.get("key")
    if not isinstance(vkey, str) or not KEY_RE["view"].match(vkey):
        raise SchemaError(f"{skey}: view key {vkey!r} is not of the form view_<n>")
    vtype = v.get("type")
    if vtype not in VIEW_TYPES:
        raise SchemaError(f"{skey}/{vkey}: unknown view type {vtype!r}")
    source = v.get("source") or {}
    okey = str(source.get("object") or "")
    if okey not in objects:
        raise SchemaError(f"{skey}/{vkey}: source.object {okey!r} is unknown")
    obj = objects[okey]
    columns = [c for c in view_columns(v) if obj.has_field(c.key)]
    for c in columns:
        if c.connection_field is not None:
            conn = obj.field(c.key)
            target = objects[(conn.relationship or {})["object"]]
            if not target.has_field(c.connection_field):
                raise SchemaError(f"{skey}/{vkey}: {c.connection_field} is not a field of "
                                  f"{target.key}")
    rules = v.get("rules") or {}
    record_rules = [RecordRule(criteria=list(r.get("criteria") or []),
                               values=list(r.get("values") or []))
                    for r in (rules.get("records") or [])]
    submits = rules.get("submits") or []
    submit_key = submits[0].get("key", "submit_1") if submits else "submit_1"
    allowed = list(scene.get("allowed_profiles") or [])
    if scene.get("limit_profile_access") is False:
        allowed = []
    try:
        rpp = int(v.get("rows_per_page") or 25)
    except (TypeError, ValueError):
        rpp = 25
    default_sort = None
    for srt in source.get("sort") or []:
        if isinstance(srt, dict) and obj.has_field(str(srt.get("field"))):
            order = str(srt.get("order") or "asc").lower()
            default_sort = (str(srt["field"]), order if order in ("asc", "desc") else "asc")
            break
    crit = source.get("criteria") or {}
    if isinstance(crit, list):
        crit = {"match": "and", "rules": crit}
    return ViewDef(
        key=vkey, scene_key=skey, name=v.get("name") or vkey, type=vtype, object_key=okey,
        criteria={"match": crit.get("match", "and"), "rules": list(crit.get("rules") or [])},
        authenticated_user=bool(source.get("authenticated_user")),
        connection_key=source.get("connection_key"),
        columns=columns,
        authenticated=bool(scene.get("authenticated")) or bool(source.get("authenticated_user"))
        or bool(source.get("connection_key")),
        allowed_profiles=allowed,
        inline_edit=bool((v.get("options") or {}).get("cell_editor")),
        action=v.get("action"), record_rules=record_rules, submit_key=submit_key,
        rows_per_page=min(max(rpp, 1), 1000), default_sort=default_sort)
