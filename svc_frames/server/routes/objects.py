"""Object routes (``/v1/objects/{object_key}/records``): list, read, create, update and
delete records with the API key; unknown field keys are refused (400 naming them).

Usage::

    api.include_router(objects.router)
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..apierror import ApiError
from ..query import build_filters, parse_filters_param, sort_sql
from .auth import check_key, object_of
from .http import check_format, envelope, finish, parse_paging, read_json, reformat, state_of
from .openapi import AUTH_PARAMS, JSON_BODY

router = APIRouter(tags=["objects"])


@router.get("/v1/objects/{object_key}/records", openapi_extra={"parameters": AUTH_PARAMS})
def list_object(object_key: str, request: Request, page: str | None = Query(None),
                rows_per_page: str | None = Query(None), filters: str | None = Query(None),
                sort_field: str | None = Query(None), sort_order: str | None = Query(None),
                format: str | None = Query(None)) -> Response:  # noqa: A002
    """List records of an object (4.1) with paging, filters and sorting."""
    state = state_of(request)
    check_key(state, request)
    obj = object_of(state, object_key)
    p, r = parse_paging(page, rows_per_page)
    fmt = check_format(format)
    app_def = state.app
    where, params = build_filters(app_def, obj, parse_filters_param(filters),
                                  app_def.local_now(), records=state.store.count(obj.key),
                                  known_ids=state.store.known_ids)
    order = sort_sql(obj, sort_field, sort_order)
    # the raw fragments are stored too: format=raw pages are spliced like the default
    total, frags = state.store.page(obj.key, where, params, order, r, (p - 1) * r,
                                    raw=fmt == "raw")
    if fmt == "html":
        frags = [reformat(f, fmt) for f in frags]
    return envelope(total, p, r, frags, request)


@router.get("/v1/objects/{object_key}/records/{record_id}",
            openapi_extra={"parameters": AUTH_PARAMS})
def get_object_record(object_key: str, record_id: str, request: Request,
                      format: str | None = Query(None)) -> Response:  # noqa: A002
    """One record of an object."""
    state = state_of(request)
    check_key(state, request)
    obj = object_of(state, object_key)
    fmt = check_format(format)
    frag = state.store.frag(obj.key, record_id, raw=fmt == "raw")
    if frag is None:
        raise ApiError.not_found(f"no record {record_id!r} in {object_key}")
    return finish(reformat(frag, fmt) if fmt == "html" else frag, request)


async def write_object(object_key: str, record_id: str | None, request: Request) -> Response:
    """Create (``record_id`` None) or update a record through the object endpoint."""
    state = state_of(request)
    check_key(state, request)
    obj = object_of(state, object_key)
    body = await read_json(request)
    _, frag = await run_in_threadpool(state.store.write, obj.key, body, record_id)
    return finish(frag, request)


@router.post("/v1/objects/{object_key}/records",
             openapi_extra={**JSON_BODY, "parameters": AUTH_PARAMS})
async def create_object_record(object_key: str, request: Request) -> Response:
    """Create a record (4.8); ``{}`` creates a blank record. Answers the bare record."""
    return await write_object(object_key, None, request)


@router.put("/v1/objects/{object_key}/records/{record_id}",
            openapi_extra={**JSON_BODY, "parameters": AUTH_PARAMS})
async def update_object_record(object_key: str, record_id: str, request: Request) -> Response:
    """Update a record (4.3): only the sent fields change. Answers the whole record."""
    return await write_object(object_key, record_id, request)


@router.delete("/v1/objects/{object_key}/records/{record_id}",
               openapi_extra={"parameters": AUTH_PARAMS})
def delete_object_record(object_key: str, record_id: str, request: Request) -> Response:
    """Delete a record: ``{"delete": true}``."""
    state = state_of(request)
    check_key(state, request)
    obj = object_of(state, object_key)
    state.store.delete(obj.key, record_id)
    return JSONResponse({"delete": True})
