"""read_object / read_view: every page of an object or a view into typed :class:`Frames`.

Usage::

    frames = read_object(client, "object_1", filters=[...], limit=500)
    frames = read_view(client, "scene_1", "view_2", columns="labels")
    frames.main.dtypes          # string, Float64, boolean, datetime64[ns, America/Chicago] ...
    frames.tables["field_9"]    # connections: record_id, connected_id, identifier

Kinds come from the application schema when the service exposes it (fetched in parallel
with the first page), otherwise they are inferred from the raw shapes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal
from zoneinfo import ZoneInfo

from .errors import NotFound, UsageError
from .filters import Filters
from .frames import Frames
from .http.client import Client
from .keys import KEY_RE, Target, parse_target
from .lookup import object_key as object_key_of
from .lookup import view_keys
from .read.load import load
from .read.options import Columns, check_columns, user_timezone
from .read.pager import Verify
from .schema import Schema

__all__ = ["read_object", "read_view"]


def read_object(client: Client, object_key: str, *, filters: Filters | None = None,
                sort_field: str | None = None, sort_order: str | None = None,
                limit: int | None = None, columns: Columns = "keys",
                timezone: str | ZoneInfo | None = None, progress: bool | None = None,
                rows_per_page: int = 1000, verify: Verify = "first",
                processes: int | None = None, cache: str | os.PathLike[str] | None = None,
                modified_field: str | None = None) -> Frames:
    """All records of an object (object requests: app id + API key) as typed frames.

    ``processes``: helper processes that decode pages of a large load on other cores
    (default: one on a machine with 3+ cores, one of them idle, for loads of 8+ pages paced
    at 20+ requests/s or unpaced; 0 for none).

    ``cache``: a directory; the frames come from it, refreshed with a few requests (see
    ``svc_frames.refreshing.cache`` and ``refresh``; ``modified_field`` names the field stamped on
    every change when the schema does not show one), and are written back to it.

    Usage: ``read_object(client, "object_1", limit=100).main``"""
    object_key = named_target(client, object_key, columns, timezone, want="object")
    if cache is not None:
        return cached(client, object_key, cache, modified_field, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      columns=columns, timezone=timezone, progress=progress,
                      rows_per_page=rows_per_page, verify=verify, processes=processes)
    return unknown_key_said(client, object_key, lambda: load(
        client, object_key, filters=filters, sort_field=sort_field, sort_order=sort_order,
        limit=limit, columns=columns, timezone=timezone, progress=progress,
        rows_per_page=rows_per_page, verify=verify, processes=processes))


def read_view(client: Client, scene_key: str | tuple[str, str], view_key: str | None = None,
              *, filters: Filters | None = None,
              sort_field: str | None = None, sort_order: str | None = None,
              limit: int | None = None, columns: Columns = "keys",
              timezone: str | ZoneInfo | None = None, progress: bool | None = None,
              rows_per_page: int = 1000, verify: Verify = "first",
              processes: int | None = None, cache: str | os.PathLike[str] | None = None,
              modified_field: str | None = None) -> Frames:
    """The records a view shows (only its fields; as the logged-in user when the view sits
    behind a login: call ``client.login`` first) as typed frames. The view is named as
    two keys, or as one ``"scene_N/view_N"`` like the CLI and ``export`` take it.
    ``cache``: as for ``read_object`` (the view must show the stamped field to refresh
    incrementally).

    Usage: ``read_view(client, "scene_1", "view_2").main`` or
    ``read_view(client, "scene_1/view_2")``"""
    want: Any = scene_key if view_key is None else (scene_key, view_key)
    scene, view = named_target(client, want, columns, timezone, want="view")
    if cache is not None:
        return cached(client, (scene, view), cache, modified_field, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      columns=columns, timezone=timezone, progress=progress,
                      rows_per_page=rows_per_page, verify=verify, processes=processes)
    return unknown_key_said(client, (scene, view), lambda: load(
        client, (scene, view), filters=filters, sort_field=sort_field,
        sort_order=sort_order, limit=limit, columns=columns, timezone=timezone,
        progress=progress, rows_per_page=rows_per_page, verify=verify,
        processes=processes))


def named_target(client: Client, target: Any, columns: Any, timezone: Any, *,
                 want: Literal["object", "view"]) -> Any:
    """The keys of a target named by key or name (lookup.py). A key needs no request; a
    name costs the schema (read once per client), after the options that need no request
    are checked."""
    if want == "object" and isinstance(target, str) and KEY_RE["object"].match(target):
        return target
    if want == "view":
        try:
            kind, a, b = parse_target(target)
        except UsageError:
            kind = ""
        if kind == "view":
            return a, b
        if kind == "object":
            raise UsageError(f"read_view needs a view ('scene_N/view_N', ('scene_N', "
                             f"'view_N') or a view's name), got the object {target!r}: use "
                             "read_object for an object")
    check_columns(columns)
    user_timezone(timezone)
    schema = Schema(client.schema())
    return object_key_of(schema, target) if want == "object" else view_keys(schema, target)


def unknown_key_said(client: Client, target: Target, run: Callable[[], Frames]) -> Frames:
    """``run()``, with the service's 404 for an object or view key the schema does not
    hold told as a UsageError listing what exists (the schema came with page 1)."""
    try:
        return run()
    except NotFound:
        schema = Schema(client.schema())
        if schema.available:
            if isinstance(target, tuple):
                view_keys(schema, target)  # raises for a view the schema does not hold
            elif schema.object(target) is None:
                object_key_of(schema, target)  # raises, listing what exists
        raise


def cached(client: Client, target: Target, cache: str | os.PathLike[str],
           modified_field: str | None, **options: Any) -> Frames:
    """``read_object``/``read_view`` through an on-disk cache (refreshing/cache.py).

    Imported here, on the first ``cache=``, so that a plain load does not import the
    cache, the saved-frames layout and the refresh."""
    from .refreshing.cache import load_cached

    return load_cached(client, target, cache, modified_field=modified_field, **options)[0]
