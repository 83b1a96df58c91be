"""Schema route: ``GET /v1/applications/{app_id}``, the application document (objects,
fields, scenes, views; never the seed users). No key is needed, as on the hosted service.

Usage::

    api.include_router(schema.router)
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..apierror import ApiError
from ..render import dumps
from .auth import check_app_path
from .http import state_of

router = APIRouter(tags=["application"])


@router.get("/v1/applications/{app_id}")
def get_application(app_id: str, request: Request) -> Response:
    """The application schema: objects, fields, scenes, views (no key needed)."""
    state = state_of(request)
    check_app_path(state, app_id)
    if not state.emulation.expose_schema:
        raise ApiError.not_found("the application schema is not exposed")
    return Response(dumps(state.app.public_document()).encode(),
                    media_type="application/json")
