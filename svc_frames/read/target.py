"""What a load's target is: its fields (from the schema when the service shows it) and
the ``Source`` its frames carry (``describe``).

Usage: ``fields, source, tz = describe(client, "object_3", client.schema(), "keys", None)``
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from zoneinfo import ZoneInfo

from ..frames import Source, resolve_fields
from ..keys import Target, parse_target
from ..kinds.base import FieldSpec
from ..labels import label_map, warn_renamed
from ..records import Client
from ..schema import Schema
from .options import Columns, naming, subset


def describe(client: Client, target: Target, app: Mapping[str, Any] | None,
             records: list[dict[str, Any]], columns: Columns,
             tz: ZoneInfo | None) -> tuple[list[FieldSpec], Source]:
    """Fields (schema or inferred) and the Source of a load.

    Usage: ``fields, source = describe(client, "object_3", app, records, "keys", tz)``"""
    kind, a, b = parse_target(target)
    schema = Schema.of(app)
    named, wanted = naming(columns), subset(columns)
    known = schema.all_fields() if schema else None
    tz_name = tz.key if tz is not None else None
    if kind == "object":
        assert a is not None
        # an object the schema does not list (a stale schema) but the service served:
        # its fields are looked up by key, or inferred
        order = schema.object_fields(a)
        fields, inferred = resolve_fields(records, known, order)
        fields = only(fields, wanted)
        source = Source("object", a, fields, timezone=tz_name, app_id=client.app_id,
                        base_url=client.base_url, columns=named,
                        kinds_inferred=inferred or not schema,
                        name=schema.object_name(a), some_fields=wanted is not None)
    else:
        assert a is not None and b is not None
        view_keys = schema.view_field_keys(a, b) or []
        order = [known[k] for k in view_keys if known and k in known] if not records else None
        fields, inferred = resolve_fields(records, known, order)
        fields = only(fields, wanted)
        source = Source("view", schema.view_object(a, b), fields, scene_key=a, view_key=b,
                        timezone=tz_name, app_id=client.app_id, base_url=client.base_url,
                        columns=named, kinds_inferred=inferred or not schema,
                        name=schema.view_name(a, b), some_fields=wanted is not None)
    if named == "labels":   # once per load: the labels that had to change
        where = source.object_key if source.kind == "object" \
            else f"{source.scene_key}/{source.view_key}"
        warn_renamed(label_map(fields), fields, f"{source.name} ({where})" if source.name
                     else where)
    return fields, source


def only(fields: list[FieldSpec], wanted: list[str] | None) -> list[FieldSpec]:
    """The fields of a ``columns=`` list (keys, as the loaders resolved them), in its
    order; every field when None.

    Usage: ``only(fields, ["field_12", "field_27"])``"""
    if wanted is None:
        return fields
    by_key = {f.key: f for f in fields}
    return [by_key[k] for k in wanted if k in by_key]
