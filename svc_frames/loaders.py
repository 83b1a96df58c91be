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
from typing import Any
from zoneinfo import ZoneInfo

from .errors import UsageError
from .filters import Filters
from .frames import Frames
from .http.client import Client
from .keys import Target, parse_target
from .read.load import load
from .read.options import Columns
from .read.pager import Verify

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
    ``svc_frames.cache`` and ``refresh``; ``modified_field`` names the field stamped on
    every change when the schema does not show one), and are written back to it.

    Usage: ``read_object(client, "object_1", limit=100).main``"""
    if cache is not None:
        return cached(client, object_key, cache, modified_field, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      columns=columns, timezone=timezone, progress=progress,
                      rows_per_page=rows_per_page, verify=verify, processes=processes)
    return load(client, object_key, filters=filters, sort_field=sort_field,
                sort_order=sort_order, limit=limit, columns=columns, timezone=timezone,
                progress=progress, rows_per_page=rows_per_page, verify=verify,
                processes=processes)


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
    if view_key is None:
        kind, scene, view = parse_target(scene_key)  # UsageError names a bad one
        if kind != "view":
            raise UsageError(f"read_view needs a view ('scene_N', 'view_N' or "
                             f"'scene_N/view_N'), got {scene_key!r}: use read_object for "
                             "an object")
    else:
        scene, view = scene_key, view_key  # type: ignore[assignment]
    assert scene is not None and view is not None
    if cache is not None:
        return cached(client, (scene, view), cache, modified_field, filters=filters,
                      sort_field=sort_field, sort_order=sort_order, limit=limit,
                      columns=columns, timezone=timezone, progress=progress,
                      rows_per_page=rows_per_page, verify=verify, processes=processes)
    return load(client, (scene, view), filters=filters, sort_field=sort_field,
                sort_order=sort_order, limit=limit, columns=columns, timezone=timezone,
                progress=progress, rows_per_page=rows_per_page, verify=verify,
                processes=processes)


def cached(client: Client, target: Target, cache: str | os.PathLike[str],
           modified_field: str | None, **options: Any) -> Frames:
    """``read_object``/``read_view`` through an on-disk cache (refreshing/cache.py).

    Imported here, on the first ``cache=``, so that a plain load does not import the
    cache, the saved-frames layout and the refresh."""
    from .refreshing.cache import load_cached

    return load_cached(client, target, cache, modified_field=modified_field, **options)[0]
