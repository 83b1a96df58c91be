"""The whole application as one dataset: every object loaded at one pace, and the
connections between them.

:func:`read_app` loads every object (or those named, by key or name) concurrently, under the
client's one pace and with one progress bar over all their pages: the wall time is near
all pages ÷ the pace, not the sum of one load after another. The :class:`App` it returns
maps object keys and names to :class:`Frames`, knows the connections the schema declares
(field, from-object, to-object, one or many), joins along them (joins.py) and writes the
whole dataset to DuckDB or Parquet (saved/snapshot.py).

Usage::

    app = read_app(client)                       # or objects=["Work Orders", "object_2"]
    app["Work Orders"].main                      # == app["object_3"].main
    app.connections                              # [schema.Connection(field_41 ...), ...]
    df = app.join("Work Orders", "Parts")        # one row per work order x part
    app.to_duckdb("app.duckdb")                  # tables, keys, and a SQL-ready snapshot

``load.py`` holds ``read_app`` (the loading), ``app.py`` the ``App`` it returns.
"""

from __future__ import annotations

from .app import App, connections_of
from .load import read_app, resolve_objects

__all__ = ["App", "read_app", "connections_of", "resolve_objects"]
