"""The OpenAPI document of one service, as it really answers: per object and per view
operations (bodies list the fields each one takes; object writes refuse other keys,
view writes ignore them), every status an operation answers with its body shape.

Routes declare auth headers and bodies (``AUTH_PARAMS``, ``JSON_BODY``...);
``service_openapi`` then expands ``{object_key}`` and ``{scene_key}/{view_key}`` paths
into the application's objects and views and fills the answers from ``ANSWERS``.

Usage::

    @router.put(path, openapi_extra={**JSON_BODY, "parameters": AUTH_PARAMS})
    api.openapi = lambda: service_openapi(api, state)
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ..schema import COMPUTED_KINDS, ObjectDef, ViewDef
from ..state import ServiceState
from .http import MAX_JSON_BODY_BYTES

JSON_BODY: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "object"}}}, "required": False}}
UPLOAD_BODY: dict[str, Any] = {"requestBody": {"content": {"multipart/form-data": {"schema": {
    "type": "object", "properties": {"files": {"type": "string", "format": "binary"}},
    "required": ["files"]}}}, "required": True}}
LOGIN_BODY: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "object", "required": ["email", "password"],
    "properties": {"email": {"type": "string", "minLength": 1},
                   "password": {"type": "string", "minLength": 1},
                   "remember": {"type": "boolean"}}}}}, "required": True}}
AUTH_PARAMS: list[dict[str, Any]] = [
    {"name": "X-Service-Application-Id", "in": "header", "required": False,
     "schema": {"type": "string"}},
    {"name": "X-Service-REST-API-KEY", "in": "header", "required": False,
     "schema": {"type": "string"}},
]
VIEW_PARAMS: list[dict[str, Any]] = [
    *AUTH_PARAMS, {"name": "Authorization", "in": "header", "required": False,
                   "schema": {"type": "string"}}]

ERROR_BODY: dict[str, Any] = {"type": "object", "required": ["errors"], "properties": {
    "errors": {"type": "array", "items": {"type": "object", "required": ["message"],
                                          "properties": {"message": {"type": "string"},
                                                         "field": {"type": "string"}}}}}}
_JSON_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
_TEXT = {"text/plain": {"schema": {"type": "string"}}}
_WHY = {
    400: "invalid input (the message names the field, value or parameter), a path or "
         "query parameter that is not UTF-8 text, or a request that is not valid HTTP",
    401: "missing or wrong application id or API key",
    403: "the view needs a logged-in user (token) of an allowed profile",
    404: "unknown application, object, view, record or asset",
    408: "the request did not arrive whole in time (server.protocol.REQUEST_TIMEOUT_S)",
    413: f"a JSON body over {MAX_JSON_BODY_BYTES} bytes, or an upload over the limit",
    414: "a request line over the limit",
    415: "a body declared as another media type than application/json",
    429: "rate limit or daily quota spent (emulated, as the hosted service)",
}
# every status each operation answers besides 200 (auth failures are plain text, except
# login's 401); EVERY_OPERATION may answer any operation
_READ = [401, 404]
_WRITE = [400, 401, 404, 413, 415]
ANSWERS: dict[tuple[str, str], list[int]] = {
    ("get", "/v1/applications/{app_id}"): [404],
    ("post", "/v1/applications/{app_id}/session"): [400, 401, 404, 413, 415],
    ("post", "/v1/applications/{app_id}/assets/{asset_type}/upload"): [400, 401, 404, 413],
    ("get", "/v1/applications/{app_id}/download/asset/{asset_id}/{filename}"): [404],
    ("get", "/v1/applications/{app_id}/download/asset/{asset_id}/thumb/{filename}"): [404],
    ("get", "/v1/objects/{object_key}/records"): [400, *_READ],
    ("get", "/v1/objects/{object_key}/records/{record_id}"): [400, *_READ],
    ("post", "/v1/objects/{object_key}/records"): _WRITE,
    ("put", "/v1/objects/{object_key}/records/{record_id}"): _WRITE,
    ("delete", "/v1/objects/{object_key}/records/{record_id}"): _READ,
    ("get", "/v1/pages/{scene_key}/views/{view_key}/records"): [400, 401, 403, 404],
    ("get", "/v1/pages/{scene_key}/views/{view_key}/records/{record_id}"): [401, 403, 404],
    ("post", "/v1/pages/{scene_key}/views/{view_key}/records"): [*_WRITE, 403],
    ("put", "/v1/pages/{scene_key}/views/{view_key}/records/{record_id}"): [*_WRITE, 403],
}
EVERY_OPERATION = (400, 408, 414, 429)  # text that is not text, HTTP the connection
#                                        refuses, a late request, a long line, the limits
_TEXT_STATUSES = {401, 403, 429}
_OBJECT = "{object_key}"
_VIEW = "{scene_key}/views/{view_key}"


def _answers(method: str, path: str, success: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"200": success}
    for status in sorted({*ANSWERS.get((method, path), []), *EVERY_OPERATION}):
        text = status in _TEXT_STATUSES and not path.endswith("/session")
        out[str(status)] = {"description": _WHY[status],
                            "content": copy.deepcopy(_TEXT if text else _JSON_ERROR)}
    return out


def _success(path: str) -> dict[str, Any]:
    if "/download/" in path:
        return {"description": "the file's bytes", "content": {"*/*": {"schema": {}}}}
    return {"description": "the answer", "content": {"application/json": {"schema": {
        "type": "object"}}}}


def _writable(obj: ObjectDef) -> dict[str, Any]:
    return {f.key: {"description": f"{f.name} ({f.kind})"} for f in obj.fields
            if f.kind not in COMPUTED_KINDS}


def _object_body(obj: ObjectDef) -> dict[str, Any]:
    props = {"id": {"description": "ignored (clients may send it back)"}, **_writable(obj)}
    return {"required": False, "content": {"application/json": {"schema": {
        "type": "object", "properties": props, "additionalProperties": False}}}}


def _view_body(state: ServiceState, view: ViewDef) -> dict[str, Any]:
    writable = _writable(state.app.objects[view.object_key])
    props = {c.key: writable[c.key] for c in view.columns
             if not c.connection_field and c.key in writable}
    # a view takes its own fields and ignores any other key
    return {"required": False, "content": {"application/json": {"schema": {
        "type": "object", "properties": props}}}}


def _without(params: list[dict[str, Any]], *names: str) -> list[dict[str, Any]]:
    return [p for p in params if p.get("name") not in names]


def _view_has(view: ViewDef, method: str, one: bool) -> bool:
    if method == "get":
        return view.type != "form" or one
    if method == "put":
        return view.accepts_update
    return view.accepts_create


def service_openapi(api: FastAPI, state: ServiceState) -> dict[str, Any]:
    """The OpenAPI document of this service (computed once, then cached on ``api``)."""
    if api.openapi_schema:
        return api.openapi_schema
    doc = get_openapi(title=api.title, version=api.version, description=api.description,
                      routes=api.routes)
    paths: dict[str, Any] = {}
    for path, ops in doc.get("paths", {}).items():
        for method, op in ops.items():
            op["responses"] = _answers(method, path, _success(path))
            for p in op.get("parameters", []):
                if p["name"] == "app_id":
                    p["schema"] = {"type": "string", "enum": [state.app.id]}
                elif p["name"] == "asset_type":
                    p["schema"] = {"type": "string", "enum": ["file", "image"]}
            if _OBJECT in path:
                for obj in state.app.objects.values():
                    one = copy.deepcopy(op)
                    one["operationId"] = f"{op['operationId']}_{obj.key}"
                    one["parameters"] = _without(one.get("parameters", []), "object_key")
                    if "requestBody" in one:
                        one["requestBody"] = _object_body(obj)
                    paths.setdefault(path.replace(_OBJECT, obj.key), {})[method] = one
            elif _VIEW in path:
                for (scene_key, view_key), view in state.app.views.items():
                    if not _view_has(view, method, path.endswith("{record_id}")):
                        continue
                    one = copy.deepcopy(op)
                    one["operationId"] = f"{op['operationId']}_{scene_key}_{view_key}"
                    one["parameters"] = _without(one.get("parameters", []), "scene_key",
                                                 "view_key")
                    if "requestBody" in one:
                        one["requestBody"] = _view_body(state, view)
                    concrete = path.replace(_VIEW, f"{scene_key}/views/{view_key}")
                    paths.setdefault(concrete, {})[method] = one
            else:
                paths.setdefault(path, {})[method] = op
    doc["paths"] = paths
    doc["components"] = {"schemas": {"Error": ERROR_BODY}}
    api.openapi_schema = doc
    return doc
