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
from .frames import Frames
from .keys import KEY_RE, Target, parse_target
from .lookup import object_key as object_key_of
from .lookup import view_keys
from .query import Filters
from .read.load import load
from .read.options import Columns, LoadOptions, field_options
from .read.pager import Verify
from .records import Client

__all__ = ["read_object", "read_view"]


def read_object(client: Client, object_key: str, *, filters: Filters | None = None,
                sort_field: str | None = None, sort_order: str | None = None,
                limit: int | None = None, columns: Columns = "labels",
                timezone: str | ZoneInfo | None = None, progress: bool | None = None,
                rows_per_page: int = 1000, verify: Verify = "first",
                processes: int | None = None, cache: str | os.PathLike[str] | None = None,
                modified_field: str | None = None) -> Frames:
    """All records of an object as typed frames (object requests: application id and API key).

    Every page is fetched (in parallel, paced) and decoded by the kinds the schema gives
    (fetched with the first page); without a schema the kinds are inferred from the
    records. The filters are checked against the schema before any record request.

    Parameters
    ----------
    client : Client
        The application to read.
    object_key : str
        The object, by key (``"object_3"``) or name (``"Work Orders"``).
    filters : dict or list of dict, optional
        A rule (``Field("Status").is_("Open")``), a list of rules (all must match), or a
        filter set (``all_of``/``any_of``); fields by key or label.
    sort_field : str, optional
        A field to sort by, by label or key (the records' order in ``main``).
    sort_order : {"asc", "desc"}, optional
        The sort direction.
    limit : int, optional
        Load at most this many records.
    columns : {"labels", "keys"} or list of str, default "labels"
        Name columns by field label (``Status``) or by key (``field_27``); or the fields
        to load, by label or key (``["Title", "Status"]``): only their columns (and
        tables), named by label; see docs/column-names.md.
    timezone : str or zoneinfo.ZoneInfo, optional
        Read dates in this timezone (IANA or the service's display name) instead of the
        application's.
    progress : bool, optional
        Show a progress bar (default: in a notebook or on a terminal).
    rows_per_page : int, default 1000
        Records per request, 1 to 1000.
    verify : {"first", "full", "none"}, default "first"
        How the pass is checked against records moving while paging: page 1 again, a
        second pass that must agree (twice the requests), or not at all.
    processes : int, optional
        Helper processes that decode the pages of a large load on other cores (default:
        one on a machine with 3+ cores, one of them idle, for loads of 8+ pages paced at
        20+ requests/s or unpaced; 0 for none).
    cache : str or os.PathLike, optional
        A directory: the frames come from it, refreshed with a few requests (see
        ``svc_frames.cache`` and ``refresh``), and the result is written back to it.
    modified_field : str, optional
        With ``cache``: the field stamped on every change (by label or key), when the
        schema does not show one.

    Returns
    -------
    Frames
        ``main`` (one row per record, indexed by ``id``), the exploded ``tables``, the
        ``source`` and the ``original`` values (for ``diff``).

    Raises
    ------
    UsageError
        Before any record request: an unknown or ambiguous object name (naming the
        closest), a bad option, or a filter that is not valid for the schema (an unknown
        field, an operator its kind does not take, a value of the wrong kind).
    AuthenticationError
        A wrong application id or API key.
    ConsistencyError
        Records moved while paging in a way re-fetching could not repair.
    QuotaExceeded
        The daily request quota is spent.
    ServiceError
        Any other refusal or failure of the service (see ``Client.request``).

    See Also
    --------
    read_view : the records a view shows.
    svc_frames.fields : the fields of an object and the columns they give.

    Notes
    -----
    Column names (keys or labels, parts such as ``field_34.latitude``, ``id`` as the
    index, the names used when saved): docs/column-names.md.

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> orders.main.shape
    (30, 55)
    >>> orders.main.columns[:3].tolist()
    ['Title', 'Description', 'Notes']
    >>> read_object(client, "Work Orders", columns="keys").main.columns[:3].tolist()
    ['field_12', 'field_13', 'field_14']
    >>> read_object(client, "Work Orders", columns=["Title", "Status"]).main.columns.tolist()
    ['Title', 'Status']
    >>> due = read_object(client, "Work Orders", sort_field="Due", sort_order="desc")
    >>> due.main["Due"].dropna().is_monotonic_decreasing
    True
    >>> read_object(client, "object_3", filters=Field("Status") == "Open", limit=5).main.shape
    (5, 55)
    """
    # every option checked once, before any request, and passed down whole
    options = LoadOptions.of(filters=filters, sort_field=sort_field, sort_order=sort_order,
                             limit=limit, columns=columns, timezone=timezone,
                             progress=progress, rows_per_page=rows_per_page, verify=verify,
                             processes=processes)
    object_key = named_target(client, object_key, want="object")
    options, modified_field = keyed(client, object_key, options, modified_field)
    if cache is not None:
        return cached(client, object_key, cache, modified_field, options)
    return unknown_key_said(client, object_key, lambda: load(client, object_key, options))


def read_view(client: Client, scene_key: str | tuple[str, str], view_key: str | None = None,
              *, filters: Filters | None = None,
              sort_field: str | None = None, sort_order: str | None = None,
              limit: int | None = None, columns: Columns = "labels",
              timezone: str | ZoneInfo | None = None, progress: bool | None = None,
              rows_per_page: int = 1000, verify: Verify = "first",
              processes: int | None = None, cache: str | os.PathLike[str] | None = None,
              modified_field: str | None = None) -> Frames:
    """The records a view shows, with only its fields, as typed frames.

    A view behind a login is read as the logged-in user (``client.login`` first): the
    records that user may see.

    Parameters
    ----------
    client : Client
        The application to read.
    scene_key : str or tuple of str
        The scene's key (with ``view_key``), or the whole view: ``"scene_2/view_3"``,
        ``("scene_2", "view_3")``, or names such as ``("Dispatch", "Dispatch board")``.
    view_key : str, optional
        The view's key, when ``scene_key`` is a scene's.
    filters, sort_field, sort_order, limit, columns, timezone, progress, rows_per_page
        As ``read_object`` takes them.
    verify, processes, modified_field
        As ``read_object`` takes them.
    cache : str or os.PathLike, optional
        As for ``read_object``; the view must show the stamped field to refresh
        incrementally.

    Returns
    -------
    Frames
        As ``read_object`` returns them; ``source.kind`` is ``"view"``.

    Raises
    ------
    UsageError
        Before any record request: an object given instead of a view, an unknown or
        ambiguous view name, a bad option, or a filter not valid for the schema.
    Forbidden
        The view sits behind a login and the client has no token (or one the view does
        not accept).
    ConsistencyError
        Records moved while paging in a way re-fetching could not repair.
    ServiceError
        Any other refusal or failure of the service (see ``Client.request``).

    Notes
    -----
    Column names: docs/column-names.md.

    Examples
    --------
    >>> board = read_view(client, "scene_1/view_1")
    >>> board.source.kind, board.main.shape
    ('view', (29, 5))
    >>> _ = client.login("manager@example.com", "Manager-2024!")
    >>> read_view(client, ("Dispatch", "Dispatch board")).main.columns.tolist()
    ['WO Number', 'Title', 'Status', 'Parts Total']
    """
    want: Any = scene_key if view_key is None else (scene_key, view_key)
    options = LoadOptions.of(filters=filters, sort_field=sort_field, sort_order=sort_order,
                             limit=limit, columns=columns, timezone=timezone,
                             progress=progress, rows_per_page=rows_per_page, verify=verify,
                             processes=processes)
    scene, view = named_target(client, want, want="view")
    options, modified_field = keyed(client, (scene, view), options, modified_field)
    if cache is not None:
        return cached(client, (scene, view), cache, modified_field, options)
    return unknown_key_said(client, (scene, view), lambda: load(client, (scene, view),
                                                                options))


def named_target(client: Client, target: Any, *, want: Literal["object", "view"]) -> Any:
    """The keys of a target named by key or name (lookup.py). A key needs no request; a
    name costs the schema (read once per client): the options, which need none, are
    checked before (``LoadOptions.of``)."""
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
    schema = client.schema()
    return object_key_of(schema, target) if want == "object" else view_keys(schema, target)


def keyed(client: Client, target: Target, options: LoadOptions,
          modified_field: str | None) -> tuple[LoadOptions, str | None]:
    """``options`` and ``modified_field`` with every field named by label turned into its
    key, once, before any record request (``field_options``): what the pager, the cache
    and the saved metadata keep."""
    _, _, modified_field = field_options(client, target, "labels", None, modified_field)
    return options.keyed(client, target), modified_field


def unknown_key_said(client: Client, target: Target, run: Callable[[], Frames]) -> Frames:
    """``run()``, with the service's 404 for an object or view key the schema does not
    hold told as a UsageError listing what exists (the schema came with page 1)."""
    try:
        return run()
    except NotFound:
        schema = client.schema()
        if schema.available:
            if isinstance(target, tuple):
                view_keys(schema, target)  # raises for a view the schema does not hold
            elif schema.object(target) is None:
                object_key_of(schema, target)  # raises, listing what exists
        raise


def cached(client: Client, target: Target, cache: str | os.PathLike[str],
           modified_field: str | None, options: LoadOptions) -> Frames:
    """``read_object``/``read_view`` through an on-disk cache (refreshing/cache.py).

    Imported here, on the first ``cache=``, so that a plain load does not import the
    cache, the saved-frames layout and the refresh."""
    from .refreshing.cache import load_cached

    return load_cached(client, target, cache, modified_field=modified_field,
                       options=options)[0]
