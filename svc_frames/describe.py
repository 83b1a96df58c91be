"""What every load and export of a target settles before its pages are decoded.

The column naming and timezone options are checked before any request, the target
(an object, or a view of one) is described by its fields and kinds (from the application
schema, or inferred from the records) and its :class:`~svc_frames.frames.Source`, and the
cyclic garbage collector is paused while pages are parsed. ``loaders`` (frames in memory)
and ``parquet`` (streaming export) both start here.

Usage::

    check_columns("labels"); tz = user_timezone("Central Time (US & Canada)")
    fields, source = describe(client, "object_3", client.schema(), page_records, "keys", tz)
    # the application's own timezone: Schema.of(client.schema()).timezone
    with paused_gc():
        ...parse pages...
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Any, Literal
from zoneinfo import ZoneInfo

from .client import Client, Target, parse_target
from .errors import UsageError
from .frames import Source, resolve_fields
from .kinds import resolve_timezone
from .kinds.base import FieldSpec
from .schema import Schema

Columns = Literal["keys", "labels"]
"""How frame columns are named: by field key (``field_N``, the default) or field label."""


def check_columns(columns: str) -> None:
    """Refuse a ``columns=`` other than "keys" or "labels" (before any request).

    Usage: ``check_columns(columns)``"""
    if columns not in ("keys", "labels"):
        raise UsageError(f"columns must be 'keys' or 'labels', got {columns!r}")


def user_timezone(timezone: str | ZoneInfo | None) -> ZoneInfo | None:
    """A user-given timezone (IANA or the service's display name), checked before paging.

    Usage: ``user_timezone("America/Chicago")``"""
    if timezone is None or isinstance(timezone, ZoneInfo):
        return timezone
    return resolve_timezone(timezone)


def describe(client: Client, target: Target, app: dict[str, Any] | None,
             records: list[dict[str, Any]], columns: Columns,
             tz: ZoneInfo | None) -> tuple[list[FieldSpec], Source]:
    """Fields (schema or inferred) and the Source of a load.

    Usage: ``fields, source = describe(client, "object_3", app, records, "keys", tz)``"""
    kind, a, b = parse_target(target)
    schema = Schema.of(app)
    known = schema.all_fields() if app else None
    tz_name = tz.key if tz is not None else None
    if kind == "object":
        assert a is not None
        # an object the schema does not list (a stale schema) but the service served:
        # its fields are looked up by key, or inferred
        order = schema.object_fields(a)
        fields, inferred = resolve_fields(records, known, order)
        source = Source("object", a, fields, timezone=tz_name, app_id=client.app_id,
                        base_url=client.base_url, columns=columns,
                        kinds_inferred=inferred or app is None,
                        name=schema.object_name(a))
    else:
        assert a is not None and b is not None
        view_keys = schema.view_field_keys(a, b) or []
        order = [known[k] for k in view_keys if known and k in known] if not records else None
        fields, inferred = resolve_fields(records, known, order)
        source = Source("view", schema.view_object(a, b), fields, scene_key=a, view_key=b,
                        timezone=tz_name, app_id=client.app_id, base_url=client.base_url,
                        columns=columns, kinds_inferred=inferred or app is None,
                        name=schema.view_name(a, b))
    return fields, source


_gc_lock = threading.Lock()
_gc_pauses = 0  # paused_gc blocks under way, in every thread
_gc_was_enabled = True


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while pages are parsed and decoded.

    Parsed pages are millions of acyclic dicts, lists and strings (reference counting
    frees them); the cyclic collector would still walk them all again and again, and a
    full collection of a 50,000-record load stalls every thread for a third of a second,
    making paced requests miss their slots. Re-enabled (if it was on) when the last pause
    ends: loads side by side (read_app) pause it together, so a small load finishing
    first must not switch it back on under a large one still running (that cost read_app
    of 30,000 records about 0.7 s of CPU).

    Usage: ``with paused_gc(): ...``"""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()
