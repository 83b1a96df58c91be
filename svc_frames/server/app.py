"""The ASGI application of one service: FastAPI with the route groups of ``routes/``,
the error answers, wrapped in the hosted-service emulation.

Validation failures answer ``{"errors": [{"message", "field"?}]}``; auth failures answer
plain text (see ``routes/auth.py``).

Usage::

    asgi_app = build_app(state)     # state: state.ServiceState
"""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

from .apierror import ApiError
from .emulate import ASGIApp, EmulationMiddleware
from .routes import ROUTERS
from .routes.http import valid_url_text
from .routes.openapi import service_openapi
from .state import ServiceState


async def api_error(request: Request, exc: Exception) -> Response:
    """An ``ApiError``: text bodies as plain text, others as JSON."""
    assert isinstance(exc, ApiError)
    if isinstance(exc.body, str):
        return PlainTextResponse(exc.body, status_code=exc.status)
    return JSONResponse(exc.body, status_code=exc.status)


async def validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's parameter validation as the service's 400 shape."""
    assert isinstance(exc, RequestValidationError)
    msgs = [{"message": f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}"}
            for e in exc.errors()]
    return JSONResponse({"errors": msgs or [{"message": "invalid request"}]}, status_code=400)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own answers (404 unknown path, 405 method) in the service's shape; a
    405 lists in ``Allow`` every method some route answers on this path (Starlette names
    only the first route's)."""
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(allowed_methods(request))
    return JSONResponse({"errors": [{"message": str(exc.detail)}]},
                        status_code=exc.status_code, headers=headers)


async def client_gone(request: Request, exc: Exception) -> Response:
    """The client left (or its request timed out: ``protocol.py`` answered 408) before its
    body was read: nothing reaches it, but the log shows 408 rather than a 500."""
    return JSONResponse({"errors": [{"message": "the request's body did not arrive"}]},
                        status_code=408)


def allowed_methods(request: Request) -> list[str]:
    """Methods the application's routes answer on the request's path."""
    allowed = []
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in request.app.routes):
            allowed.append(method)
    return allowed


def build_app(state: ServiceState) -> ASGIApp:
    """The ASGI application of one service (FastAPI wrapped in the emulation middleware)."""
    api = FastAPI(title="svc_frames local service", version="1",
                  description="A local record-data service (docs/service-interface.md + "
                              "docs/hosted-behaviour.md).")
    api.state.service = state  # routes read it through routes.http.state_of
    api.add_exception_handler(ApiError, api_error)
    api.add_exception_handler(RequestValidationError, validation_error)
    api.add_exception_handler(StarletteHTTPException, http_error)
    api.add_exception_handler(ClientDisconnect, client_gone)
    for router in ROUTERS:
        api.include_router(router, dependencies=[Depends(valid_url_text)])
    api.openapi = lambda: service_openapi(api, state)  # type: ignore[method-assign]
    return EmulationMiddleware(api, state.emulation)
