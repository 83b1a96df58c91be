"""What an application holds, as DataFrames: its objects, its views, an object's fields.

The keys a call takes (``object_3``, ``field_27``, ``scene_2/view_3``) are listed here
beside the names the application's pages show, so a newcomer can look them up; every
call that takes a key also takes the name (``lookup.py``). One request: the schema, sent
once per client (``client.schema()`` keeps it), so the errors a call can meet are those
of that request (the service's errors after the client's retries) and, when the service
does not expose its schema, a ``UsageError``.

Usage::

    svc_frames.objects(client)                  # key, name, fields, identifier, ...
    svc_frames.views(client)                    # scene, view, name, type, object, login
    svc_frames.fields(client, "Work Orders")    # key, label, kind, columns a load gives
"""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd

from .errors import UsageError
from .frames import field_table
from .lookup import target_keys
from .records import Client
from .schema import Schema

__all__ = ["objects", "views", "fields"]


def _schema(client: Client) -> Schema:
    """The client's schema, or UsageError when the service does not expose one."""
    schema = client.schema()
    if not schema.available:
        raise UsageError("the service does not expose its schema (the schema endpoint "
                         "answered nothing): objects, views and fields cannot be listed")
    return schema


def objects(client: Client) -> pd.DataFrame:
    """The application's objects, one row each.

    Parameters
    ----------
    client : Client
        The application to describe.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``key`` (``object_N``): ``name``, ``fields`` (how many),
        ``identifier`` (the label of the field that names a record), ``connections``
        (the labels of its connection fields, with the objects they point to).

    Raises
    ------
    UsageError
        The service does not expose its schema (it answers the schema request with 401,
        403 or 404): there is nothing to list.
    ServiceError
        The schema request failed otherwise: ``ServiceUnreachable`` (no connection),
        ``RateLimited`` or ``QuotaExceeded``, ``ServerError`` (after the client's
        retries). A client that already holds the schema sends nothing.

    Examples
    --------
    >>> objects(client).loc["object_3", "name"]
    'Work Orders'
    """
    schema = _schema(client)
    rows = []
    for key in schema.object_keys():
        specs = schema.object_fields(key) or []
        doc = schema.object(key) or {}
        ident = next((f.label for f in specs if f.key == doc.get("identifier")), None)
        conns = [f"{c.label} -> {schema.object_name(c.to_object) or c.to_object}"
                 for c in schema.connections() if c.from_object == key]
        rows.append({"key": key, "name": schema.object_name(key), "fields": len(specs),
                     "identifier": ident, "connections": conns})
    out = pd.DataFrame(rows, columns=["key", "name", "fields", "identifier", "connections"])
    for c in ("key", "name", "identifier"):
        out[c] = out[c].astype("string")
    return out.set_index("key")


def views(client: Client) -> pd.DataFrame:
    """The application's views, one row each.

    Parameters
    ----------
    client : Client
        The application to describe.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``target`` (``scene_N/view_N``, what ``read_view`` and ``export``
        take): ``scene``, ``scene_name``, ``view``, ``name``, ``type`` (table, form,
        search, ...), ``object`` (the key of the object it lists) and ``login`` (True when
        the view sits behind a login: ``client.login`` first).

    Raises
    ------
    UsageError
        The service does not expose its schema, so no view can be listed.
    ServiceError
        The schema request failed, as for :func:`objects` (the same request: one of the
        two calls on a client sends it).

    Examples
    --------
    >>> views(client).loc["scene_2/view_3", "name"]
    'Dispatch board'
    """
    schema = _schema(client)
    scene_docs = dict(schema.scenes())
    rows = []
    for scene, view, doc in schema.views():
        sdoc: Any = scene_docs.get(scene) or {}
        rows.append({"target": f"{scene}/{view}", "scene": scene,
                     "scene_name": str(sdoc.get("name") or ""), "view": view,
                     "name": str(doc.get("name") or ""), "type": str(doc.get("type") or ""),
                     "object": schema.view_object(scene, view) or None,
                     "login": bool(sdoc.get("authenticated"))})
    out = pd.DataFrame(rows, columns=["target", "scene", "scene_name", "view", "name",
                                      "type", "object", "login"])
    for c in ("target", "scene", "scene_name", "view", "name", "type", "object"):
        out[c] = out[c].astype("string")
    out["login"] = out["login"].astype("boolean")
    return out.set_index("target")


def fields(client: Client, target: Any, *, columns: Literal["keys", "labels"] = "labels"
           ) -> pd.DataFrame:
    """The fields of an object (or the fields a view shows), one row each.

    Parameters
    ----------
    client : Client
        The application to describe.
    target : str or tuple of str
        An object by key or name (``"object_3"``, ``"Work Orders"``), or a view
        (``"scene_2/view_3"``, ``("Dispatch", "Dispatch board")``, its name).
    columns : {"labels", "keys"}, default "labels"
        How the ``columns`` entry names the frame columns, as ``read_object(...,
        columns=)`` would.

    Returns
    -------
    pandas.DataFrame
        Indexed by field ``key``: ``label``, ``kind``, ``required``, ``unique``,
        ``read_only``, ``choices``, ``connects_to``, ``columns`` (the main-frame columns a
        load gives for the field, e.g. ``field_34.latitude``) and ``table`` (the exploded
        table of a connection, multi choice or timer), both named as a load with this
        ``columns`` names them (a label that clashes as ``"Label (field_N)"``).
        ``frames.fields`` gives the same for loaded frames.

    Raises
    ------
    UsageError
        ``columns`` is neither "keys" nor "labels" (before any request); ``target`` names
        no object or view (the message names the closest matches) or names several (it
        lists their keys); or the service does not expose its schema, without which a
        name cannot be resolved.
    ServiceError
        The schema request failed, as for :func:`objects`.

    See Also
    --------
    Frames.fields : the same for loaded frames.

    Notes
    -----
    How columns are named (keys or labels, parts such as ``field_34.latitude``, ``id`` as
    the index, saved and DuckDB names): docs/column-names.md.

    Examples
    --------
    >>> fields(client, "Work Orders").loc["field_27", ["label", "columns"]].tolist()
    ['Status', ['Status']]
    """
    if columns not in ("keys", "labels"):
        raise UsageError(f"columns must be 'labels' or 'keys', got {columns!r}")
    schema = _schema(client)
    keys = target_keys(schema, target)
    if isinstance(keys, tuple):
        shown = schema.view_field_keys(*keys) or []
        every = schema.all_fields()
        specs = [every[k] for k in shown if k in every]
    else:
        specs = schema.object_fields(keys) or []
    return field_table(specs, columns)
