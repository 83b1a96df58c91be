"""The records of one object or one view: the list, one record, create, update, delete.

Objects and views are one resource whose addresses differ (docs/service-interface.md §4):
a path strategy (``RecordPaths``) gives them, and says whether requests speak for a user
(a view: the user token) or for the application (an object: the key). Each operation is
written once, in ``Records``.

Usage::

    records = Records(http, "object_3")                  # or ("scene_2", "view_4")
    env = records.page(page_params(1, 1000))             # the list envelope
    rec = records.create({"field_12": "Fix the door"})
    records.update(rec["id"], {"field_12": "Fixed"}); records.delete(rec["id"])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..errors import OutcomeUnknown, ServerError, UsageError
from ..http.answers import snippet
from ..http.body import Body, BodyBuffers
from ..http.client import HttpClient
from ..keys import Target, parse_target

__all__ = ["RecordPaths", "Records", "paths_of"]


@dataclass(frozen=True)
class RecordPaths:
    """The path strategy of one target: its addresses, and whether a user speaks for it.

    An object's records (``/v1/objects/{object}/records``) are sent with the API key; a
    view's (``/v1/pages/{scene}/views/{view}/records``) as a logged-in user (its token)."""

    name: str       # the target as messages name it (``object_3``, ``scene_1/view_2``)
    records: str    # the address of the list (and of a create)
    view: bool      # True: a view's records, sent with the user token

    def record(self, record_id: str) -> str:
        """The address of one record."""
        return f"{self.records}/{quote(record_id)}"


def paths_of(target: Target) -> RecordPaths:
    """The path strategy of an object or view key (UsageError for anything else)."""
    kind, a, b = parse_target(target)
    if kind == "view":
        return RecordPaths(f"{a}/{b}", f"/v1/pages/{a}/views/{b}/records", True)
    return RecordPaths(str(a), f"/v1/objects/{a}/records", False)


def _json_object(out: Any) -> dict[str, Any]:
    """A record operation's answer, which the interface promises is a JSON object."""
    if not isinstance(out, dict):
        raise ServerError(f"the answer is not a JSON object: {snippet(json.dumps(out).encode())!r}")
    return out


class Records:
    """The records of one target, sent through ``http`` (its pace, retries and errors).

    ``token``: the user token of a view's requests (default: the client's)."""

    def __init__(self, http: HttpClient, target: Target, *, token: str | None = None) -> None:
        self.http = http
        self.paths = paths_of(target)
        self.token = token

    @property
    def name(self) -> str:
        """The target as messages name it (``object_3``, ``scene_1/view_2``)."""
        return self.paths.name

    def _request(self, method: str, path: str, what: str, **kw: Any) -> Any:
        if self.paths.view:
            kw.update(view=True, token=self.token)
        return self.http.request(method, path, what=what, **kw)

    def page(self, params: Mapping[str, Any], parse: Callable[[Body], Any] | None = None,
             into: BodyBuffers | None = None) -> dict[str, Any]:
        """One page of the list (``params``: ``listing.page_params``), as answered
        (``parse``, ``into``: as ``HttpClient.request`` takes them)."""
        out = self._request("GET", self.paths.records, self.name, params=params,
                            parse=parse, into=into)
        if not isinstance(out, dict) or not isinstance(out.get("records"), list):
            raise ServerError(f"GET {self.name} page {params.get('page', 1)}: the answer is "
                              f"not a record list envelope: "
                              f"{snippet(json.dumps(out).encode())!r}")
        return out

    def get(self, record_id: str) -> dict[str, Any]:
        """One record by its id (objects only: the interface reads no single view record)."""
        if self.paths.view:
            raise UsageError(f"{self.name}: one record is read through its object, not a "
                             "view (the service's interface has no such request)")
        return _json_object(self._request("GET", self.paths.record(record_id),
                                     f"{self.name} record {record_id}"))

    def create(self, data: Mapping[str, Any], *,
               resend: Callable[[OutcomeUnknown], bool] | None = None) -> dict[str, Any]:
        """A new record (a POST, never blindly repeated; ``resend``: see ``request``)."""
        return _json_object(self._request("POST", self.paths.records, self.name,
                                     json_body=dict(data), resend=resend))

    def update(self, record_id: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of ``data`` written to a record (a PUT: the others stay)."""
        return _json_object(self._request("PUT", self.paths.record(record_id),
                                     f"{self.name} record {record_id}", json_body=dict(data)))

    def delete(self, record_id: str) -> dict[str, Any]:
        """A record deleted."""
        return _json_object(self._request("DELETE", self.paths.record(record_id),
                                     f"{self.name} record {record_id}"))
