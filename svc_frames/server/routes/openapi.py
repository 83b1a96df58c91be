"""OpenAPI fragments the route groups declare: auth headers and request bodies.

Usage::

    @router.put(path, openapi_extra={**JSON_BODY, "parameters": AUTH_PARAMS})
"""

from __future__ import annotations

from typing import Any

JSON_BODY: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "object", "additionalProperties": True}}}, "required": False}}
UPLOAD_BODY: dict[str, Any] = {"requestBody": {"content": {"multipart/form-data": {"schema": {
    "type": "object", "properties": {"files": {"type": "string", "format": "binary"}},
    "required": ["files"]}}}, "required": True}}
LOGIN_BODY: dict[str, Any] = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "object", "properties": {"email": {"type": "string"},
                                     "password": {"type": "string"}}}}}}}
AUTH_PARAMS: list[dict[str, Any]] = [
    {"name": "X-Service-Application-Id", "in": "header", "required": False,
     "schema": {"type": "string"}},
    {"name": "X-Service-REST-API-KEY", "in": "header", "required": False,
     "schema": {"type": "string"}},
]
VIEW_PARAMS: list[dict[str, Any]] = [
    *AUTH_PARAMS, {"name": "Authorization", "in": "header", "required": False,
                   "schema": {"type": "string"}}]
