"""The application's builder: its schema changed while the service runs, as an application's
owner changes it in the hosted builder between two loads.

``LocalService.builder`` returns a :class:`Builder` on the running service. Each change
edits the application document, parses it again (``AppDef.from_document``: a change that
leaves no valid application raises ``SchemaError`` and changes nothing), puts the new
definition in place of the old one (the same ``AppDef`` object, which the store, accounts
and routes share), renders the records of the objects it touches again (a removed field
leaves each record, an added one is empty, a field of another kind keeps the values its
new kind accepts and is blank elsewhere, computed fields are computed again) in one
transaction, and keeps the document in ``app.json`` so a restart serves the same schema.
Record rules do not run (no stamp moves): a schema change is not a record edit, as on the
hosted service.

Connection fields are neither added, removed nor given another kind here, and an object
others connect to is not removed: the store keeps the connections it serves from its
start.

Usage::

    key = svc.builder.add_field("object_3", "Priority note", "short_text")
    svc.builder.relabel_field(key, "Note")
    svc.builder.change_kind("field_45", "number")
    svc.builder.remove_field(key)
    obj = svc.builder.add_object("Sites", [("Site name", "short_text")])
    svc.builder.remove_object(obj)
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import fields as dc_fields
from typing import Any

from ..errors import InvalidValue, SchemaError
from . import filtervalues
from .private import write_private
from .render import Renderer
from .schema import COMPUTED_KINDS, AppDef
from .state import ServiceState

__all__ = ["Builder"]

Edit = Callable[[dict[str, Any]], None]
_NUMBER = re.compile(r"^(?:field|object)_(\d+)$")


class Builder:
    """Schema changes on a running local service (module docstring).

    Examples
    --------
    >>> key = service.builder.add_field("object_2", "Bin", "short_text")
    >>> service.app.object("object_2").field(key).label
    'Bin'
    >>> service.builder.remove_field(key)
    """

    def __init__(self, state: ServiceState) -> None:
        self.state = state

    # ---- fields --------------------------------------------------------------------------
    def add_field(self, object_key: str, label: str, kind: str = "short_text",
                  **schema: Any) -> str:
        """Add a field (empty in every record) to an object; returns its new key."""
        self._object(object_key)
        if kind == "connection":
            raise SchemaError("the builder adds no connection field")
        key = f"field_{self._next_number('field')}"

        def edit(doc: dict[str, Any]) -> None:
            obj = _find_object(doc, object_key)
            obj.setdefault("fields", []).append(
                {**schema, "key": key, "name": label, "type": kind})
        self._apply(edit, [object_key])
        return key

    def remove_field(self, field_key: str) -> None:
        """Remove a field: every record of its object loses its value."""
        obj_key = self._field_object(field_key)

        def edit(doc: dict[str, Any]) -> None:
            obj = _find_object(doc, obj_key)
            obj["fields"] = [f for f in obj.get("fields") or [] if f.get("key") != field_key]
        self._apply(edit, [obj_key])

    def relabel_field(self, field_key: str, label: str) -> None:
        """Give a field another label (its key and values stay)."""
        obj_key = self._field_object(field_key)

        def edit(doc: dict[str, Any]) -> None:
            _find_field(doc, obj_key, field_key)["name"] = label
        self._apply(edit, [])

    def change_kind(self, field_key: str, kind: str, **schema: Any) -> None:
        """Give a field another kind: each record keeps the value its new kind accepts
        (``"12"`` as a number), blank where it accepts none."""
        obj_key = self._field_object(field_key)
        if kind == "connection":
            raise SchemaError("the builder makes no field a connection")

        def edit(doc: dict[str, Any]) -> None:
            f = _find_field(doc, obj_key, field_key)
            for k in [k for k in f if k not in ("key", "name", "object_key")]:
                del f[k]
            f.update({**schema, "type": kind})
        self._apply(edit, [obj_key], rekinded={field_key})

    # ---- objects -------------------------------------------------------------------------
    def add_object(self, name: str, fields: Sequence[tuple[str, str]] = ()) -> str:
        """Add an object with the fields given as (label, kind); returns its key."""
        key = f"object_{self._next_number('object')}"
        first = self._next_number("field")
        specs = [{"key": f"field_{first + i}", "name": label, "type": kind}
                 for i, (label, kind) in enumerate(fields)]
        if any(s["type"] == "connection" for s in specs):
            raise SchemaError("the builder adds no connection field")

        def edit(doc: dict[str, Any]) -> None:
            doc.setdefault("objects", []).append({
                "key": key, "name": name, "type": "StandardObject", "fields": specs,
                "identifier": specs[0]["key"] if specs else None})
        self._apply(edit, [])
        return key

    def remove_object(self, object_key: str) -> None:
        """Remove an object and its records (refused for one that others connect to)."""
        self._object(object_key)
        inbound = [f"{o.key}.{f.key}" for o, f in self.state.app.iter_fields()
                   if f.kind == "connection" and o.key != object_key
                   and (f.relationship or {}).get("object") == object_key]
        if inbound:
            raise SchemaError(f"{object_key} is connected to by {', '.join(inbound)}: "
                              "not removed")
        ids = [r[0] for r in self.state.store.reader.execute(
            "SELECT id FROM records WHERE obj = ?", (object_key,))]
        # the records go while their object is still in the document: a delete recomputes
        # what the record fed (aggregates, formulas), which reads the object's fields
        for rid in ids:
            self.state.store.delete(object_key, rid)

        def edit(doc: dict[str, Any]) -> None:
            doc["objects"] = [o for o in doc.get("objects") or []
                              if o.get("key") != object_key]
            for scene in doc.get("scenes") or []:
                scene["views"] = [v for v in scene.get("views") or []
                                  if (v.get("source") or {}).get("object") != object_key]
        self._apply(edit, [])
        self.state.counts.pop(object_key, None)

    # ---- the change itself ---------------------------------------------------------------
    def _apply(self, edit: Edit, rerender: Sequence[str], *,
               rekinded: frozenset[str] | set[str] = frozenset()) -> None:
        """Edit the document, check it parses, put it in place, render the records of
        ``rerender`` again, keep it on disk (module docstring)."""
        state = self.state
        doc = copy.deepcopy(state.app.doc)
        edit(doc)
        new = AppDef.from_document(doc, app_id=state.app.id)   # SchemaError: nothing changed
        new.clock = state.app.clock
        for f in dc_fields(AppDef):
            setattr(state.app, f.name, getattr(new, f.name))
        renderer = Renderer(state.app)   # its codecs are kept by field key: a kind may differ
        state.renderer = state.store.renderer = renderer
        for obj_key in rerender:
            self._render_again(obj_key, rekinded)
        meta_path = state.data_dir / "app.json"
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        edit(meta["document"])   # the kept document holds no password: edited alike
        tmp = meta_path.with_suffix(".tmp")
        write_private(tmp, json.dumps(meta).encode())
        os.replace(tmp, meta_path)

    def _render_again(self, obj_key: str, rekinded: frozenset[str] | set[str]) -> None:
        """Every record of the object rendered from its raw values by the new definition,
        in one transaction; a field of another kind (``rekinded``) keeps what its new
        kind accepts."""
        store = self.state.store
        obj = self.state.app.object(obj_key)
        with store.db.transaction() as conn:
            rows = conn.execute("SELECT seq, id, frag FROM records WHERE obj = ?",
                                (obj_key,)).fetchall()
            for seq, rid, frag in rows:
                old = store.raw_of(json.loads(frag))
                raw: dict[str, Any] = {}
                for spec in obj.fields:
                    value = old.get(spec.key)
                    if spec.key not in rekinded or spec.kind in COMPUTED_KINDS:
                        raw[spec.key] = value
                        continue
                    if value is None or value == "":
                        continue
                    try:
                        raw[spec.key] = store.renderer.normalize(spec, value, None)
                    except (InvalidValue, TypeError, ValueError, KeyError):
                        raw[spec.key] = None   # not a value of the field's (new) kind
                (_, _, frag2, frag_raw, vals, _), _ = store.render_row(obj, rid, raw, conn)
                conn.execute("UPDATE records SET frag = ?, frag_raw = ?, vals = ? "
                             "WHERE seq = ?", (frag2, frag_raw, vals, seq))
                filtervalues.put(conn, seq, obj_key, vals)

    # ---- lookups -------------------------------------------------------------------------
    def _object(self, object_key: str) -> None:
        if object_key not in self.state.app.objects:
            raise SchemaError(f"no object {object_key!r}; the objects: "
                              f"{', '.join(self.state.app.objects)}")

    def _field_object(self, field_key: str) -> str:
        for obj, f in self.state.app.iter_fields():
            if f.key == field_key:
                if f.kind == "connection":
                    raise SchemaError(f"{field_key} is a connection: the builder leaves "
                                      "connections as they are")
                return obj.key
        raise SchemaError(f"no field {field_key!r} in the application")

    def _next_number(self, kind: str) -> int:
        keys = ([o.key for o in self.state.app.objects.values()] if kind == "object"
                else [f.key for _, f in self.state.app.iter_fields()])
        numbers = [int(m.group(1)) for k in keys if (m := _NUMBER.match(k))]
        return max(numbers, default=0) + 1


def _find_object(doc: dict[str, Any], object_key: str) -> dict[str, Any]:
    for o in doc.get("objects") or []:
        if o.get("key") == object_key:
            found: dict[str, Any] = o
            return found
    raise SchemaError(f"no object {object_key!r} in the document")


def _find_field(doc: dict[str, Any], object_key: str, field_key: str) -> dict[str, Any]:
    for f in _find_object(doc, object_key).get("fields") or []:
        if f.get("key") == field_key:
            found: dict[str, Any] = f
            return found
    raise SchemaError(f"no field {field_key!r} in {object_key}")
