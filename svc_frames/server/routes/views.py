"""View routes (``/v1/pages/{scene_key}/views/{view_key}/records``): what a view shows
(its fields, its records, connection columns), and writes through forms and inline
editing (record rules run; other fields are ignored). A form update is answered here by
``update_view_record``.

Usage::

    api.include_router(views.router)
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from ..apierror import ApiError
from ..query import build_filters, parse_filters_param, sort_sql
from ..render import dumps, format_record
from ..schema import COMPUTED_KINDS, RecordRule, ViewDef
from ..state import ServiceState
from ..store import WriteContext
from .auth import view_of, view_user
from .http import check_format, envelope, finish, parse_paging, read_json, state_of
from .openapi import JSON_BODY, VIEW_PARAMS

router = APIRouter(tags=["views"])
User = tuple[str, str] | None  # (user object key, user record id) of a logged-in request


def view_scope(state: ServiceState, view: ViewDef, user: User
               ) -> tuple[str, list[Any], list[str] | None]:
    """SQL condition selecting the records a view may show (and ids it is limited to)."""
    app_def = state.app
    obj = app_def.objects[view.object_key]
    where, params = build_filters(app_def, obj, view.criteria, app_def.local_now())
    ids: list[str] | None = None
    if view.authenticated_user:
        ids = [user[1]] if user and user[0] == view.object_key else []
    if view.connection_key:
        if user is None:
            ids = []
        else:
            where = (f"({where}) AND EXISTS (SELECT 1 FROM links l WHERE l.obj = r.obj "
                     f"AND l.id = r.id AND l.field = ? AND l.target = ?)")
            params = [*params, view.connection_key, user[1]]
    return where, params, ids


def view_records(state: ServiceState, view: ViewDef, frags: list[str], fmt: str) -> list[str]:
    """Stored fragments as the view shows them: its columns only, connection columns as
    the connected records' field."""
    store = state.store
    recs = [json.loads(f) for f in frags]
    obj = state.app.objects[view.object_key]
    # the connected object of each connection column, looked up once per page
    target_of = {c.key: (obj.field(c.key).relationship or {})["object"]
                 for c in view.columns if c.connection_field}
    targets: dict[str, dict[str, dict[str, Any]]] = {}
    for key, target in target_of.items():
        ids = [x["id"] for rec in recs for x in rec.get(key + "_raw") or []
               if isinstance(x, dict) and "id" in x]
        targets.setdefault(target, {}).update(store.records(target, ids))
    out = []
    for rec in recs:
        vr: dict[str, Any] = {"id": rec["id"]}
        for c in view.columns:
            if c.connection_field:
                found = targets[target_of[c.key]]
                anchors, raws = [], []
                for x in rec.get(c.key + "_raw") or []:
                    t = found.get(x.get("id", ""))
                    if t is None:
                        continue
                    d = t.get(c.connection_field, "")
                    raw = t.get(c.connection_field + "_raw")
                    anchors.append(f'<a href="#" data-kn="connection-link">'
                                   f'<span class="{x["id"]}">{d}</span></a>')
                    raws.append(raw if isinstance(raw, dict) else {"identifier": d})
                vr[c.key] = "<br />".join(anchors)
                vr[c.key + "_raw"] = raws
            else:
                if c.key in rec:
                    vr[c.key] = rec[c.key]
                if c.key + "_raw" in rec:
                    vr[c.key + "_raw"] = rec[c.key + "_raw"]
        out.append(dumps(format_record(vr, fmt) if fmt != "both" else vr))
    return out


def in_view(state: ServiceState, view: ViewDef, user: User, record_id: str) -> bool:
    """Whether a record is one the view shows to this user."""
    where, params, ids = view_scope(state, view, user)
    if ids is not None and record_id not in ids:
        return False
    total, _ = state.store.page(view.object_key, f"({where}) AND r.id = ?",
                                [*params, record_id], "r.seq", 1, 0)
    return total > 0


@router.get("/v1/pages/{scene_key}/views/{view_key}/records",
            openapi_extra={"parameters": VIEW_PARAMS})
def list_view(scene_key: str, view_key: str, request: Request,
              page: str | None = Query(None), rows_per_page: str | None = Query(None),
              filters: str | None = Query(None), sort_field: str | None = Query(None),
              sort_order: str | None = Query(None),
              format: str | None = Query(None)) -> Response:  # noqa: A002
    """List the records a view shows (4.2): only its fields, only its records."""
    state = state_of(request)
    app_def = state.app
    view = view_of(state, scene_key, view_key)
    user = view_user(state, request, view)
    if view.type == "form":
        raise ApiError.invalid(f"{view_key} is a form: it has no records to list")
    obj = app_def.objects[view.object_key]
    p, r = parse_paging(page, rows_per_page)
    fmt = check_format(format)
    allowed = {c.key for c in view.columns if not c.connection_field}
    where, params, ids = view_scope(state, view, user)
    fw, fp = build_filters(app_def, obj, parse_filters_param(filters),
                           app_def.local_now(), allowed, records=state.store.count(obj.key),
                           known_ids=state.store.known_ids)
    if not sort_field and view.default_sort:
        order = sort_sql(obj, view.default_sort[0], sort_order or view.default_sort[1])
    else:
        order = sort_sql(obj, sort_field, sort_order, allowed)
    total, frags = state.store.page(obj.key, f"({where}) AND ({fw})", [*params, *fp], order,
                                    r, (p - 1) * r, ids)
    return envelope(total, p, r, view_records(state, view, frags, fmt), request)


@router.get("/v1/pages/{scene_key}/views/{view_key}/records/{record_id}",
            openapi_extra={"parameters": VIEW_PARAMS})
def get_view_record(scene_key: str, view_key: str, record_id: str,
                    request: Request) -> Response:
    """One record through a view (its fields only; 404 outside the view)."""
    state = state_of(request)
    view = view_of(state, scene_key, view_key)
    user = view_user(state, request, view)
    if not in_view(state, view, user, record_id):
        raise ApiError.not_found(f"no record {record_id!r} in {view_key}")
    frag = state.store.frag(view.object_key, record_id)
    if frag is None:
        raise ApiError.not_found(f"no record {record_id!r} in {view_key}")
    return finish(view_records(state, view, [frag], "both")[0], request)


def view_write(state: ServiceState, view: ViewDef, user: User, body: dict[str, Any],
               record_id: str | None) -> str:
    """Write through a view: its fields only, its record rules, the connection to the
    logged-in user on create -> ``{"record", "submit_key"}`` text."""
    if record_id is not None and not in_view(state, view, user, record_id):
        raise ApiError.not_found(f"no record {record_id!r} in {view.key}")
    rules = list(view.record_rules) if view.type == "form" else []
    if record_id is None and view.connection_key and user is not None:
        rules.append(RecordRule(criteria=[], values=[
            {"field": view.connection_key, "type": "user"}]))
    editable = {c.key for c in view.columns if not c.connection_field}
    ctx = WriteContext(allowed=editable, user_id=user[1] if user else None, rules=rules,
                       strict=False, pages=view.type == "form")
    # computed fields shown in a view are not inputs: ignore them rather than refuse
    obj = state.app.objects[view.object_key]
    body = {k: v for k, v in body.items()
            if not (obj.has_field(k) and obj.field(k).kind in COMPUTED_KINDS)}
    _, frag = state.store.write(view.object_key, body, record_id, ctx)
    rec = json.loads(view_records(state, view, [frag], "both")[0])
    return dumps({"record": rec, "submit_key": view.submit_key})


async def write_view(scene_key: str, view_key: str, record_id: str | None,
                     request: Request) -> Response:
    """Create (``record_id`` None) or update through a view that accepts it."""
    state = state_of(request)
    view = view_of(state, scene_key, view_key)
    user = await run_in_threadpool(view_user, state, request, view)
    if record_id is None and not view.accepts_create:
        raise ApiError.invalid(f"{view_key} does not accept new records")
    if record_id is not None and not view.accepts_update:
        raise ApiError.invalid(f"{view_key} does not accept updates")
    body = await read_json(request)
    text = await run_in_threadpool(view_write, state, view, user, body, record_id)
    return finish(text, request)


@router.put("/v1/pages/{scene_key}/views/{view_key}/records/{record_id}",
            openapi_extra={**JSON_BODY, "parameters": VIEW_PARAMS})
async def update_view_record(scene_key: str, view_key: str, record_id: str,
                             request: Request) -> Response:
    """Update through a form or an inline-editing table/search (4.4)."""
    return await write_view(scene_key, view_key, record_id, request)


@router.post("/v1/pages/{scene_key}/views/{view_key}/records",
             openapi_extra={**JSON_BODY, "parameters": VIEW_PARAMS})
async def create_view_record(scene_key: str, view_key: str, request: Request) -> Response:
    """Create through an insert form; only form fields are stored, record rules run."""
    return await write_view(scene_key, view_key, None, request)
