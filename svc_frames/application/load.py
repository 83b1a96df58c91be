"""``read_app``: every object of the application (or those named) loaded side by side at
the client's one pace, with one progress bar over all their pages: the wall time is near
all pages ÷ the pace, not the sum of one load after another (``resolve_objects`` names
which objects)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from zoneinfo import ZoneInfo

from ..errors import UsageError
from ..frames import Frames
from ..lookup import object_key
from ..progress import AppProgress, want_progress
from ..read.load import load
from ..read.options import Columns, LoadOptions
from ..read.pager import Verify
from ..records import Client
from ..schema import Schema
from .app import App

__all__ = ["read_app", "resolve_objects"]


def read_app(client: Client, objects: Sequence[str] | None = None, *,
             columns: Columns = "labels", timezone: str | ZoneInfo | None = None,
             progress: bool | None = None, rows_per_page: int = 1000,
             verify: Verify = "first", processes: int | None = None) -> App:
    """Every object of the application (or those named) as one ``App``.

    The objects load side by side under the client's pace (its rate limiter is shared by
    every request), each with its share of the client's workers, and one progress bar
    counts the pages of them all.

    Parameters
    ----------
    client : Client
        The application to read.
    objects : list of str, optional
        The objects to load, by key or name (one name alone is taken too); default:
        every object of the schema.
    columns, timezone, progress, rows_per_page, verify, processes
        As ``read_object`` takes them, for every object (column naming:
        docs/column-names.md).

    Returns
    -------
    App
        The frames of every object loaded, by key and name, and the connections.

    Raises
    ------
    UsageError
        Before any record request: an unknown or ambiguous object (listing the objects),
        no schema and no objects named, or a bad option.
    ServiceError
        A request failed (see ``read_object``).

    Examples
    --------
    >>> app = read_app(client)
    >>> app.keys()
    ['object_1', 'object_2', 'object_3']
    >>> len(read_app(client, ["Parts"])["Parts"])
    40
    """
    options = LoadOptions.of(columns=columns, timezone=timezone, rows_per_page=rows_per_page,
                             verify=verify, processes=processes)
    if not isinstance(columns, str):
        raise UsageError(f"read_app names columns 'labels' or 'keys', got {columns!r}: a "
                         "list of fields is for one object (read_object(client, object, "
                         "columns=[...]))")
    if isinstance(objects, str):
        objects = [objects]
    schema = client.schema()
    keys = resolve_objects(schema, objects)
    if not keys:
        raise UsageError("no objects to load: the schema lists none and none were named")
    bar = AppProgress(want_progress(progress), len(keys))
    # every load has its share of the client's workers: together they keep within the
    # client's connection pool, and the pace (one limiter) is shared anyway
    options = dataclasses.replace(options, max_workers=max(2, client.max_workers // len(keys)))
    frames: dict[str, Frames] = {}
    try:
        with ThreadPoolExecutor(max_workers=len(keys), thread_name_prefix="svc-app") as pool:
            futures = {k: pool.submit(load, client, k, options, on_page=bar.for_object(k))
                       for k in keys}
            for k, fut in futures.items():
                frames[k] = fut.result()
    finally:
        bar.close()
    return App(frames, schema, app_id=client.app_id)


def resolve_objects(schema: Mapping[str, Any] | None,
                    objects: Sequence[str] | None) -> list[str]:
    """Object keys for ``objects`` (keys or names; None: every object of the schema)."""
    listed = [(str(o.get("key")), str(o.get("name") or "")) for o in
              (schema or {}).get("objects") or () if o.get("key")]
    if objects is None:
        if not schema:
            raise UsageError("the service does not expose its schema, so the objects are "
                             "unknown: name them by key, read_app(client, ['object_1', ...])")
        return [k for k, _ in listed]
    out: list[str] = []
    for want in objects:
        key = object_key(Schema.of(schema), want)
        if key not in out:
            out.append(key)
    return out
