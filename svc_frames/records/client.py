"""The client of the package: the transport (``http/``) with the application's records and
schema, which it reaches through the records layer (``resource.py``, ``listing.py``).

Usage::

    client = Client("app_id", api_key="...", base_url="http://127.0.0.1:8000")
    client = Client.from_env()              # SVC_APP_ID, SVC_API_KEY, SVC_BASE_URL, ...
    client.schema().object_fields("object_1")   # the Schema, read once and kept
    page = client.get_page("object_1", page=1, rows_per_page=1000)
    client.records(("scene_1", "view_2")).page(page_params(1))
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from ..errors import AuthenticationError, Forbidden, NotFound, OutcomeUnknown
from ..http.body import Body, BodyBuffers
from ..http.client import HttpClient
from ..keys import Target
from ..query import Filters, Query
from ..schema import Schema
from .listing import MAX_ROWS_PER_PAGE, page_params
from .resource import Records, paths_of

__all__ = ["Client"]

log = logging.getLogger(__name__)


class Client(HttpClient):
    """A connection to one application of the service, through which every request goes.

    One pooled HTTP session, pacing shared with every client of the same application
    (and with other processes), retries with backoff and typed errors (see the module
    docstring for the policy). Use it as a context manager, or ``close()`` it.

    Parameters
    ----------
    app_id : str
        The application id (``X-Service-Application-Id``).
    api_key : str, optional
        The REST API key: object requests need it; view requests use a user token instead.
    base_url : str
        The service's address, ``http://`` or ``https://``.
    token : str, optional
        A user token for view requests (``login`` gets one).
    rate_limit : float, default 10.0
        Requests per second, 0 to 1000, that the clients of this application start at
        most (0: no pacing); the pace is shared with the other clients of the same
        application and base URL.
    timeout : float, default 30.0
        Seconds to wait for an answer, > 0.
    max_retries : int, default 5
        Retries of a failed request (429, 5xx, a dropped connection), >= 0.
    max_workers : int, default 12
        Threads that fetch pages at once (and the connection pool's size), >= 1.
    backoff : float, default 0.25
        Seconds of the first wait before a retry, >= 0; each later wait doubles (up to 8 s,
        with jitter).
    use_schema : bool, default True
        False: never ask for the application schema; kinds are inferred from the records.
    session : requests.Session, optional
        The HTTP session to send with (default: a new one).
    verify : bool or str, optional
        Whether to check the service's TLS certificate, or the path of a file of the
        certificate authorities to trust (the local service's ``svc.ca_file``); None:
        requests' own choice (``REQUESTS_CA_BUNDLE``, then the session's ``verify``).

    Attributes
    ----------
    app_id, base_url : str
        As given (``base_url`` without a trailing ``/``).
    request_count : int
        Requests sent, retries included.
    retry_count : int
        Retries sent.
    status_counts : collections.Counter
        How many answers came with each HTTP status.
    user : dict or None
        The logged-in user (``login``), without the token.

    Raises
    ------
    ConfigurationError
        A missing ``app_id`` or ``base_url``, a ``base_url`` without ``http(s)://``, or
        a setting out of range (naming it).

    Examples
    --------
    >>> with Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
    ...             rate_limit=0) as c:
    ...     c.get_page("object_3", rows_per_page=5)["total_records"]
    30
    """

    _schema: Schema | None = None   # read on the first schema(): one per client

    # ---- the application schema ----------------------------------------------------------
    def schema(self, *, refresh: bool = False) -> Schema:
        """The application's schema as a ``Schema``, read once and shared by every caller.

        A ``Schema`` reads the document (``objects``, ``scenes``, ``settings``) for the
        toolkit and is itself a read-only mapping of it; it is empty (and false) when the
        service does not expose it. A client made with ``use_schema=False`` never asks.

        Parameters
        ----------
        refresh : bool, default False
            Ask the service again instead of returning the kept schema.

        Returns
        -------
        Schema
            The application's schema; empty (``schema.available`` is False) when the
            service does not expose it (404, 401 or 403 on the schema address).

        Raises
        ------
        ServiceUnreachable, ServerError, ServiceError
            The schema request failed otherwise.

        Examples
        --------
        >>> [o["name"] for o in client.schema()["objects"]]
        ['People', 'Parts', 'Work Orders']
        >>> client.schema().object_name("object_3")
        'Work Orders'
        >>> client.schema() is client.schema()
        True
        """
        kept = self._schema
        if kept is not None and not refresh:
            return kept
        if not self.use_schema:
            self._schema = Schema(None)
            return self._schema
        try:
            out = self.request("GET", f"/v1/applications/{quote(self.app_id)}",
                               key_required=False, what="application schema")
        except (NotFound, AuthenticationError, Forbidden) as exc:
            # a deployment that does not expose its schema: kinds are inferred instead
            log.info("no application schema (%s); kinds will be inferred", exc.status)
            out = None
        app = out.get("application") if isinstance(out, dict) else None
        self._schema = Schema(app if isinstance(app, dict) else None)
        return self._schema

    @property
    def schema_read(self) -> bool:
        """True when ``schema()`` answers without a request (read already, or not used).

        Examples
        --------
        >>> fresh = Client(service.app_id, api_key=service.api_key,
        ...                base_url=service.base_url, rate_limit=0)
        >>> fresh.schema_read
        False
        >>> _ = fresh.schema()
        >>> fresh.schema_read
        True
        """
        return self._schema is not None or not self.use_schema

    # ---- records -------------------------------------------------------------------------
    def records(self, target: Target, *, token: str | None = None) -> Records:
        """The records of an object or a view, as one resource.

        ``page``, ``get``, ``create``, ``update`` and ``delete``: the addresses differ
        between objects and views, the resource does not.

        Parameters
        ----------
        target : str or tuple of str
            An object key (``"object_3"``) or a view (``"scene_1/view_1"`` or
            ``("scene_1", "view_1")``); keys only, not names.
        token : str, optional
            The user token of a view's requests (default: the client's, from ``login``).

        Returns
        -------
        Records
            Its requests go through this client.

        Raises
        ------
        UsageError
            ``target`` is not an object or view key.

        Examples
        --------
        >>> records = client.records("object_3")
        >>> records.name, records.page({"page": 1, "rows_per_page": 2})["total_records"]
        ('object_3', 30)
        """
        return Records(self, target, token=token)

    def records_path(self, target: Target) -> tuple[str, bool, str]:
        """The address of a target's record list, whether it is a view, and its display name.

        Parameters
        ----------
        target : str or tuple of str
            An object key (``"object_3"``) or a view (``"scene_1/view_1"`` or
            ``("scene_1", "view_1")``); keys only, not names.

        Returns
        -------
        tuple of (str, bool, str)
            The path, True for a view, and the name used in messages.

        Raises
        ------
        UsageError
            ``target`` is not an object or view key.

        Examples
        --------
        >>> client.records_path("object_3")
        ('/v1/objects/object_3/records', False, 'object_3')
        >>> client.records_path(("scene_1", "view_1"))
        ('/v1/pages/scene_1/views/view_1/records', True, 'scene_1/view_1')
        """
        paths = paths_of(target)
        return paths.records, paths.view, paths.name

    # the listing's parameters need no client: the one function, reachable from it
    page_params = staticmethod(page_params)

    def get_page(self, target: Target, page: int = 1, rows_per_page: int = MAX_ROWS_PER_PAGE,
                 filters: Filters | Query | None = None, sort_field: str | None = None,
                 sort_order: str | None = None, *, params: Mapping[str, Any] | None = None,
                 parse: Callable[[Body], Any] | None = None,
                 into: BodyBuffers | None = None) -> dict[str, Any]:
        """One page of a record list, as the service answers it.

        Parameters
        ----------
        target : str or tuple of str
            An object key or a view key (see ``records_path``).
        page, rows_per_page, filters, sort_field, sort_order
            As ``page_params`` takes them.
        params : mapping, optional
            Query parameters sent as they are, instead of the five above.
        parse : callable, optional
            Decodes the body instead of the plain JSON parser (see ``request``).
        into : BodyBuffers, optional
            Reusable buffers the body is read into and parsed from (see ``request``).

        Returns
        -------
        dict
            ``total_pages``, ``current_page``, ``total_records`` and ``records`` (the
            records as the service sends them: each field and its ``_raw`` value).

        Raises
        ------
        UsageError
            A bad target or parameter (nothing is sent).
        NotFound
            No such object or view.
        ServerError
            The answer is not a record list.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> page = client.get_page("object_3", rows_per_page=10)
        >>> page["total_records"], page["total_pages"], len(page["records"])
        (30, 3, 10)
        """
        records = Records(self, target)
        if params is None:
            params = page_params(page, rows_per_page, filters, sort_field, sort_order)
        return records.page(params, parse, into)

    def get_record(self, object_key: str, record_id: str) -> dict[str, Any]:
        """One record of an object, by its id.

        Parameters
        ----------
        object_key : str
            The object's key (``object_3``); the interface reads no single record of a view.
        record_id : str
            The record's id.

        Returns
        -------
        dict
            The record as the service sends it (each field and its ``_raw`` value).

        Raises
        ------
        UsageError
            ``object_key`` is not an object key.
        NotFound
            No such object or record.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.get_record("object_3", rid)["field_24"]
        1
        """
        return Records(self, object_key).get(record_id)

    # One method per operation: the target (an object, or a view as a logged-in user) picks
    # the addresses and the credentials (``resource.py``); the ``*_view_record`` names are
    # the same operations with the view given as scene and view.
    def create_record(self, target: Target, data: Mapping[str, Any], *,
                      token: str | None = None,
                      resend: Callable[[OutcomeUnknown], bool] | None = None
                      ) -> dict[str, Any]:
        """Create a record of an object, or through a form view (a POST, never blindly repeated).

        Through a view, the view's record rules apply (values the form sets itself) and
        fields the form does not show are not stored.

        Parameters
        ----------
        target : str or tuple of str
            An object key (``"object_3"``, sent with the API key) or a form view
            (``("scene_2", "view_4")`` or ``"scene_2/view_4"``, sent as a logged-in user).
        data : mapping
            Field key -> value, in the service's input format.
        token : str, optional
            A view's user token (default: the client's, from ``login``).
        resend : callable, optional
            Says whether a create whose outcome is unknown surely did not arrive (see
            ``request``).

        Returns
        -------
        dict
            An object's created record (with its ``id``); through a view, ``record`` (the
            created record, as the view shows it) and ``submit_key``.

        Raises
        ------
        UsageError
            ``target`` is not an object or view key.
        Forbidden
            A view's request without a token, or with one the view does not accept.
        ValidationError
            The service refused a value (``field`` names the field), or the view does not
            create records.
        OutcomeUnknown
            The request was sent but no answer came: it may have been applied.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> record = client.create_record("object_3", {"field_12": "Fix the door"})
        >>> record["field_12"], record["field_24"]
        ('Fix the door', 31)
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> out = client.create_record(("scene_2", "view_4"), {"field_12": "Fix the gate"})
        >>> out["record"]["field_12"], out["record"]["field_27"]  # the form sets "Open"
        ('Fix the gate', 'Open')
        """
        return Records(self, target, token=token).create(data, resend=resend)

    def update_record(self, target: Target, record_id: str, data: Mapping[str, Any], *,
                      token: str | None = None) -> dict[str, Any]:
        """Update fields of a record of an object, or through a view (a PUT: the others stay).

        Parameters
        ----------
        target : str or tuple of str
            An object key (``"object_3"``, sent with the API key) or a view that updates
            (a form, or inline editing: ``("scene_3", "view_5")``), sent as a logged-in user.
        record_id : str
            The record's id.
        data : mapping
            Field key -> new value, in the service's input format.
        token : str, optional
            A view's user token (default: the client's, from ``login``).

        Returns
        -------
        dict
            An object's updated record; through a view, ``record`` (the updated record, as
            the view shows it) and ``submit_key``.

        Raises
        ------
        UsageError
            ``target`` is not an object or view key.
        Forbidden
            A view's request without a token, or with one the view does not accept.
        NotFound
            No such record (in the view).
        ValidationError
            The service refused a value (``field`` names the field), or the view does not
            accept updates.
        ServiceError
            As ``request`` raises them.

        Examples
        --------
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.update_record("object_3", rid, {"field_12": "Fix the back door"})["field_12"]
        'Fix the back door'
        >>> _ = client.login("tech@example.com", "Tech-2024!")
        >>> out = client.update_record(("scene_3", "view_5"), rid, {"field_12": "Fix it"})
        >>> out["record"]["field_12"]
        'Fix it'
        """
        return Records(self, target, token=token).update(record_id, data)

    def delete_record(self, target: Target, record_id: str, *,
                      token: str | None = None) -> dict[str, Any]:
        """Delete a record of an object, or through a view.

        The local service deletes through no view (it answers 405); on the hosted service a
        view that offers a delete link does.

        Parameters
        ----------
        target : str or tuple of str
            An object key (``"object_3"``, sent with the API key) or a view
            (``("scene_2", "view_3")``), sent as a logged-in user.
        record_id : str
            The record's id.
        token : str, optional
            A view's user token (default: the client's, from ``login``).

        Returns
        -------
        dict
            The service's answer (an object's: ``{"delete": True}``).

        Raises
        ------
        UsageError
            ``target`` is not an object or view key.
        Forbidden
            A view's request without a token, or with one the view does not accept.
        NotFound
            No such record (in the view).
        ServiceError
            As ``request`` raises them (the local service, through a view: 405).

        Examples
        --------
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.delete_record("object_3", rid)
        {'delete': True}
        >>> client.get_page("object_3", rows_per_page=1)["total_records"]
        29
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> client.delete_record(("scene_2", "view_3"), rid)
        Traceback (most recent call last):
        ...
        svc_frames.errors.ServiceError: DELETE scene_2/view_3 record ...: HTTP 405: ...
        """
        return Records(self, target, token=token).delete(record_id)

    def create_view_record(self, scene: str, view: str, data: Mapping[str, Any], *,
                           token: str | None = None,
                           resend: Callable[[OutcomeUnknown], bool] | None = None
                           ) -> dict[str, Any]:
        """Create a record through a form view: ``create_record((scene, view), data)``.

        Parameters
        ----------
        scene, view : str
            The scene's and the form view's keys (``scene_2``, ``view_4``).
        data, token, resend
            As ``create_record`` takes them.

        Returns
        -------
        dict
            ``record`` (as the view shows it) and ``submit_key``.

        Raises
        ------
        UsageError, Forbidden, ValidationError, OutcomeUnknown, ServiceError
            As ``create_record`` raises them.

        Examples
        --------
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> out = client.create_view_record("scene_2", "view_4", {"field_12": "Fix the gate"})
        >>> out["record"]["field_27"]   # the form sets "Open"
        'Open'
        """
        return Records(self, (scene, view), token=token).create(data, resend=resend)

    def update_view_record(self, scene: str, view: str, record_id: str,
                           data: Mapping[str, Any], *, token: str | None = None,
                           ) -> dict[str, Any]:
        """Update a record through a view: ``update_record((scene, view), record_id, data)``.

        Parameters
        ----------
        scene, view : str
            The scene's and the view's keys (a form that updates, or inline editing).
        record_id, data, token
            As ``update_record`` takes them.

        Returns
        -------
        dict
            ``record`` (as the view shows it) and ``submit_key``.

        Raises
        ------
        UsageError, Forbidden, NotFound, ValidationError, ServiceError
            As ``update_record`` raises them.

        Examples
        --------
        >>> _ = client.login("tech@example.com", "Tech-2024!")
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> out = client.update_view_record("scene_3", "view_5", rid, {"field_12": "Fix it"})
        >>> out["record"]["field_12"]
        'Fix it'
        """
        return Records(self, (scene, view), token=token).update(record_id, data)

    def delete_view_record(self, scene: str, view: str, record_id: str,
                           *, token: str | None = None) -> dict[str, Any]:
        """Delete a record through a view: ``delete_record((scene, view), record_id)``.

        Parameters
        ----------
        scene, view : str
            The scene's and the view's keys.
        record_id, token
            As ``delete_record`` takes them.

        Returns
        -------
        dict
            The service's answer.

        Raises
        ------
        UsageError, Forbidden, NotFound, ServiceError
            As ``delete_record`` raises them (the local service: 405).

        Examples
        --------
        >>> _ = client.login("manager@example.com", "Manager-2024!")
        >>> rid = client.get_page("object_3", rows_per_page=1)["records"][0]["id"]
        >>> client.delete_view_record("scene_2", "view_3", rid)
        Traceback (most recent call last):
        ...
        svc_frames.errors.ServiceError: DELETE scene_2/view_3 record ...: HTTP 405: ...
        """
        return Records(self, (scene, view), token=token).delete(record_id)
