"""The application schema, read in one place: every module that needs to know what an object,
a view or a form holds asks this reader instead of walking the schema dict itself.

The schema is the document ``GET /v1/applications/<app_id>`` answers
(docs/hosted-behaviour.md, "Application schema"). The hosted service does not always
expose it, and its documents carry members this package never reads, so the reader is
tolerant: a missing schema, object or view answers ``None`` (or an empty value where that
reads better), never an exception. Validation of an application *definition* (the local
service's job) lives in ``svc_frames/server/schema.py``, which walks a view's fields with
the same :func:`view_columns` the client uses, so "which fields does a view show" has one
answer: what the service renders.

Usage::

    schema = client.schema()                     # read once per client; Schema(None): empty
    schema.object_fields("object_3")             # [FieldSpec, ...] or None
    schema.view_field_keys("scene_2", "view_3")  # ["field_12", ...] or None
    schema.timezone                              # ZoneInfo of settings.timezone, or None
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from .errors import ConfigurationError
from .keys import FIELD_KEY, Target, parse_target
from .kinds.base import FieldSpec
from .kinds.tz import resolve_timezone

__all__ = ["Connection", "Schema", "ViewColumn", "view_columns"]

#: The members of a view under which the hosted schema nests the fields it shows: table and
#: search ``columns``, form ``inputs``, details ``groups`` (which nest columns again).
_LAYOUT_KEYS = ("columns", "inputs", "groups")


@dataclass(frozen=True)
class ViewColumn:
    """One field a view shows; ``connection_field`` when a connection column shows a field
    of the connected record instead of its identifier."""

    key: str
    connection_field: str | None = None


@dataclass(frozen=True)
class Connection:
    """A connection field: records of ``from_object`` point at records of ``to_object``.
    ``many`` when one record may hold several connected records (``has: many``)."""

    field: str
    label: str
    from_object: str
    to_object: str
    many: bool


def view_columns(view: Mapping[str, Any]) -> list[ViewColumn]:
    """Every field a view document shows, in order and once each, whatever its layout:
    table ``columns``, form ``inputs``, details ``groups`` nested at any depth. An item is
    ``{"field": {"key": "field_N"}}`` (optionally with ``connection_field``) or a bare
    ``{"key": "field_N"}``.

    Usage: ``[c.key for c in view_columns(view_doc)]``"""
    out: list[ViewColumn] = []
    seen: set[tuple[str, str | None]] = set()

    def add(key: Any, conn: Any = None) -> None:
        if isinstance(key, str) and FIELD_KEY.match(key):
            col = ViewColumn(key, conn if isinstance(conn, str) else None)
            if (col.key, col.connection_field) not in seen:
                seen.add((col.key, col.connection_field))
                out.append(col)

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, Mapping):
            fld = node.get("field")
            if isinstance(fld, Mapping) and "key" in fld:
                conn = node.get("connection_field")
                add(fld["key"], conn.get("key") if isinstance(conn, Mapping) else None)
            elif isinstance(node.get("key"), str) and FIELD_KEY.match(node["key"]):
                add(node["key"])
            for k in _LAYOUT_KEYS:
                if k in node:
                    walk(node[k])

    for k in _LAYOUT_KEYS:
        walk(view.get(k) or [])
    return out


class Schema(Mapping[str, Any]):
    """A tolerant, read-only view of an application schema dict (or of none).

    It is also a read-only mapping of the document itself (``schema["objects"]``), empty
    and false when there is none: ``client.schema()`` returns one, read once per client.
    """

    def __init__(self, app: Mapping[str, Any] | None) -> None:
        self.doc: Mapping[str, Any] = (app.doc if isinstance(app, Schema) else app) or {}
        self._objects: dict[str, Mapping[str, Any]] = {
            str(o["key"]): o for o in self.doc.get("objects") or ()
            if isinstance(o, Mapping) and isinstance(o.get("key"), str)}
        self._views: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._scenes: dict[str, Mapping[str, Any]] = {}
        for sc in self.doc.get("scenes") or ():
            if not isinstance(sc, Mapping):
                continue
            self._scenes.setdefault(str(sc.get("key")), sc)
            for v in sc.get("views") or ():
                if isinstance(v, Mapping) and isinstance(v.get("key"), str):
                    self._views.setdefault((str(sc.get("key")), v["key"]), v)

    @classmethod
    def of(cls, app: Mapping[str, Any] | Schema | None) -> Schema:
        """The reader of ``app`` (a schema dict, None, or a Schema already)."""
        return app if isinstance(app, Schema) else cls(app)

    # the document as a read-only mapping
    def __getitem__(self, key: str) -> Any:
        return self.doc[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.doc)

    def __len__(self) -> int:
        return len(self.doc)

    def __repr__(self) -> str:
        return f"Schema({self.name or 'no schema'!r}, objects={len(self._objects)})"

    @property
    def available(self) -> bool:
        """True when there was a schema to read (the service exposes it)."""
        return bool(self.doc)

    # ---- application -----------------------------------------------------------------
    @property
    def timezone_name(self) -> str | None:
        """``settings.timezone`` as given (an IANA or a hosted display name), or None."""
        name = (self.doc.get("settings") or {}).get("timezone")
        return str(name) if name else None

    @property
    def timezone(self) -> ZoneInfo | None:
        """The application's timezone, or None when unset or unreadable (an odd setting
        must not stop a load: dates then stay as the service labels them)."""
        name = self.timezone_name
        if not name:
            return None
        try:
            return resolve_timezone(name)
        except ConfigurationError:
            return None

    # ---- objects and fields ----------------------------------------------------------
    def object_keys(self) -> list[str]:
        """Object keys in schema order."""
        return list(self._objects)

    def object(self, key: str) -> Mapping[str, Any] | None:
        """The object's schema dict, or None."""
        return self._objects.get(key)

    def object_name(self, key: str) -> str:
        """The name the schema gives an object, or ""."""
        return str((self._objects.get(key) or {}).get("name") or "")

    def object_fields(self, key: str) -> list[FieldSpec] | None:
        """The FieldSpecs of object ``key`` in schema order, or None when the object is
        not in the schema."""
        obj = self._objects.get(key)
        if obj is None:
            return None
        return [FieldSpec.from_schema(f, key) for f in obj.get("fields") or ()
                if isinstance(f, Mapping) and f.get("key")]

    def field(self, object_key: str, field_key: str) -> FieldSpec | None:
        """One field of one object, or None."""
        return next((f for f in self.object_fields(object_key) or () if f.key == field_key),
                    None)

    def stamped_field(self, object_key: str) -> str | None:
        """The date_time field the application's forms stamp on every create and update:
        an object-level record rule, ``objects[].rules.records[]`` with no criteria and a
        value ``{"field": "field_N", "type": "current_date"}`` (ARCHITECTURE.md
        "Incremental refresh"). None when the schema shows none.

        Usage: ``client.schema().stamped_field("object_3")  # "field_46"``"""
        rules = (self._objects.get(object_key) or {}).get("rules")
        if not isinstance(rules, Mapping):
            return None
        kinds = {f.key: f.kind for f in self.object_fields(object_key) or ()}
        for rule in rules.get("records") or ():
            if not isinstance(rule, Mapping) or rule.get("criteria"):
                continue  # a rule with conditions does not stamp every change
            for value in rule.get("values") or ():
                if not isinstance(value, Mapping):
                    continue
                key = str(value.get("field") or "")
                if value.get("type") == "current_date" and kinds.get(key) == "date_time":
                    return key
        return None

    def all_fields(self) -> dict[str, FieldSpec]:
        """Every field of every object by key (a view may show fields of connected objects)."""
        return {f.key: f for key in self._objects for f in self.object_fields(key) or ()}

    def connections(self) -> list[Connection]:
        """Every connection field of every object whose target the schema names."""
        out: list[Connection] = []
        for key in self._objects:
            for f in self.object_fields(key) or ():
                rel = f.relationship or {}
                if f.kind == "connection" and rel.get("object"):
                    out.append(Connection(field=f.key, label=f.label, from_object=key,
                                          to_object=str(rel["object"]),
                                          many=rel.get("has") == "many"))
        return out

    @property
    def name(self) -> str:
        """The application's name, or ""."""
        return str(self.doc.get("name") or "")

    # ---- scenes and views ------------------------------------------------------------
    def scenes(self) -> list[tuple[str, Mapping[str, Any]]]:
        """(scene key, scene dict) of every scene, in schema order."""
        return list(self._scenes.items())

    def scene_views(self, scene: str) -> list[tuple[str, Mapping[str, Any]]]:
        """(view key, view dict) of one scene's views, in schema order."""
        return [(v, doc) for (sc, v), doc in self._views.items() if sc == scene]

    def views(self) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
        """(scene key, view key, view dict) of every view, in schema order."""
        for (scene, view), doc in self._views.items():
            yield scene, view, doc

    def view(self, scene: str, view: str) -> Mapping[str, Any] | None:
        """The view's schema dict, or None."""
        return self._views.get((scene, view))

    def view_name(self, scene: str, view: str) -> str:
        return str((self._views.get((scene, view)) or {}).get("name") or "")

    def view_object(self, scene: str, view: str) -> str:
        """The key of the object a view lists (``source.object``), or ""."""
        return str(((self.view(scene, view) or {}).get("source") or {}).get("object") or "")

    def view_columns(self, scene: str, view: str) -> list[ViewColumn] | None:
        """The fields a view shows (a form: the fields it takes), None when unknown."""
        doc = self.view(scene, view)
        return None if doc is None else view_columns(doc)

    def view_field_keys(self, scene: str, view: str) -> list[str] | None:
        """The field keys a view shows or a form takes, once each, None when unknown."""
        cols = self.view_columns(scene, view)
        if cols is None:
            return None
        return list(dict.fromkeys(c.key for c in cols))

    # ---- targets ---------------------------------------------------------------------
    def target_fields(self, target: Target) -> tuple[list[FieldSpec], str]:
        """(the fields a target holds, its name for messages): an object's fields, or the
        fields a view shows; the name is the object's or view's, else its key."""
        kind, a, b = parse_target(target)
        if kind == "object":
            return self.object_fields(str(a)) or [], self.object_name(str(a)) or str(a)
        every = self.all_fields()
        shown = [every[k] for k in self.view_field_keys(str(a), str(b)) or () if k in every]
        return shown, self.view_name(str(a), str(b)) or f"{a}/{b}"

    def target_name(self, object_key: str, scene: str | None = None,
                    view: str | None = None) -> str:
        """The name of a load's target: the view's name for a view, else the object's."""
        if scene and view:
            return self.view_name(scene, view)
        return self.object_name(object_key)


def modified_field_of(app: Mapping[str, Any] | None, object_key: str) -> str | None:
    """The date_time field an object's own record rule stamps on every write
    (``Schema.stamped_field``), from a schema dict. None when there is none.

    Usage: ``modified_field_of(client.schema(), "object_3")  # "field_46"``"""
    return Schema.of(app).stamped_field(object_key)
