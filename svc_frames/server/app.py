"""Routes of the local service (FastAPI): docs/service-interface.md + docs/hosted-behaviour.md.

Object requests need ``X-Service-Application-Id`` and ``X-Service-REST-API-KEY``; view
requests send the literal ``service`` as the key and, behind a login, the user token in
``Authorization``. Auth failures answer plain text (401 ``Invalid API key``, 403
``Invalid or Expired Token``); validation failures answer
``{"errors": [{"message", "field"?}]}``.

Usage::

    asgi_app = build_app(state)     # state: service.ServiceState
"""

from __future__ import annotations

import io
import json
import math
import mimetypes
import re
import unicodedata
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .apierror import ApiError
from .emulate import EmulationMiddleware
from .query import build_filters, parse_filters_param, sort_sql
from .render import dumps, format_record
from .schema import COMPUTED_KINDS, ObjectDef, RecordRule, ViewDef
from .store import BASE_URL_PLACEHOLDER, WriteContext, verify_password

if TYPE_CHECKING:
    from .service import ServiceState

APP_HEADER = "x-service-application-id"
KEY_HEADER = "x-service-rest-api-key"
MAX_ROWS = 1000
_JSON_BODY = {"requestBody": {"content": {"application/json": {"schema": {
    "type": "object", "additionalProperties": True}}}, "required": False}}
_UPLOAD_BODY = {"requestBody": {"content": {"multipart/form-data": {"schema": {
    "type": "object", "properties": {"files": {"type": "string", "format": "binary"}},
    "required": ["files"]}}}, "required": True}}
_AUTH_PARAMS = [
    {"name": "X-Service-Application-Id", "in": "header", "required": False,
     "schema": {"type": "string"}},
    {"name": "X-Service-REST-API-KEY", "in": "header", "required": False,
     "schema": {"type": "string"}},
]
_VIEW_PARAMS = [*_AUTH_PARAMS, {"name": "Authorization", "in": "header", "required": False,
                                "schema": {"type": "string"}}]


def sanitize_filename(name: str | None) -> str:
    """A safe stored file name: no directories, no path escapes, plain characters only."""
    name = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode()
    name = name.replace("\\", "/").split("/")[-1]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "file"
    name = re.sub(r"\.{2,}", ".", name)
    return name[:120]


def _json_body_error(exc: Exception) -> ApiError:
    return ApiError.invalid(f"the body is not valid JSON: {exc}")


async def read_json(request: Request) -> dict[str, Any]:
    """The request body as a JSON object (400 when malformed or not an object)."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise _json_body_error(exc) from exc
    if not isinstance(data, dict):
        raise ApiError.invalid("the body must be a JSON object of field keys and values")
    return data


def parse_paging(page: str | None, rows: str | None, default_rows: int = 25) -> tuple[int, int]:
    """(page, rows_per_page) from query strings; 400 naming the bad one."""
    try:
        p = int(page) if page not in (None, "") else 1
    except ValueError as exc:
        raise ApiError.invalid(f"page must be an integer, not {page!r}") from exc
    try:
        r = int(rows) if rows not in (None, "") else default_rows
    except ValueError as exc:
        raise ApiError.invalid(f"rows_per_page must be an integer, not {rows!r}") from exc
    if p < 1:
        raise ApiError.invalid(f"page must be at least 1, not {p}")
    if r < 1:
        raise ApiError.invalid(f"rows_per_page must be at least 1, not {r}")
    if r > MAX_ROWS:
        raise ApiError.invalid(f"rows_per_page must be at most {MAX_ROWS}, not {r}")
    if p > 10_000_000:
        raise ApiError.invalid(f"page {p} is out of range")
    return p, r


def _reformat(frag: str, fmt: str) -> str:
    """A stored ``format=both`` fragment in the asked format."""
    return frag if fmt == "both" else dumps(format_record(json.loads(frag), fmt))


def build_app(state: ServiceState) -> Any:
    """The ASGI application of one service (FastAPI wrapped in the emulation middleware)."""
    api = FastAPI(title="svc_frames local service", version="1",
                  description="A local record-data service (docs/service-interface.md + "
                              "docs/hosted-behaviour.md).")
    app_def = state.app
    store = state.store

    # ---- error answers ------------------------------------------------------------------
    @api.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> Response:
        if isinstance(exc.body, str):
            return PlainTextResponse(exc.body, status_code=exc.status)
        return JSONResponse(exc.body, status_code=exc.status)

    @api.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        msgs = [{"message": f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}"}
                for e in exc.errors()]
        return JSONResponse({"errors": msgs or [{"message": "invalid request"}]},
                            status_code=400)

    @api.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        return JSONResponse({"errors": [{"message": str(exc.detail)}]},
                            status_code=exc.status_code, headers=exc.headers)

    # ---- helpers ------------------------------------------------------------------------
    def base_of(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def finish(text: str, request: Request) -> Response:
        if BASE_URL_PLACEHOLDER in text:
            text = text.replace(BASE_URL_PLACEHOLDER, base_of(request))
        return Response(content=text.encode(), media_type="application/json")

    def check_app_id(request: Request) -> None:
        if request.headers.get(APP_HEADER) != app_def.id:
            raise ApiError(401, "Invalid application ID")

    def check_key(request: Request, allow_service: bool = False) -> None:
        check_app_id(request)
        key = request.headers.get(KEY_HEADER)
        if key == state.api_key or (allow_service and key == "service"):
            return
        raise ApiError(401, "Invalid API key")

    def check_app_path(app_id: str) -> None:
        if app_id != app_def.id:
            raise ApiError.not_found(f"unknown application {app_id!r}")

    def object_of(key: str) -> ObjectDef:
        obj = app_def.objects.get(key)
        if obj is None:
            raise ApiError.not_found(f"unknown object {key!r}")
        return obj

    def view_of(scene_key: str, view_key: str) -> ViewDef:
        view = app_def.views.get((scene_key, view_key))
        if view is None:
            if not any(s == scene_key for s, _ in app_def.views):
                raise ApiError.not_found(f"unknown scene {scene_key!r}")
            raise ApiError.not_found(f"unknown view {view_key!r} in {scene_key}")
        return view

    def view_user(request: Request, view: ViewDef) -> tuple[str, str] | None:
        """Auth of a view request -> (user object, user id) when logged in."""
        check_key(request, allow_service=True)
        token = request.headers.get("authorization")
        if token and token.lower().startswith("bearer "):
            token = token[7:]
        user = store.token_user(token.strip()) if token else None
        if view.authenticated:
            if user is None:
                raise ApiError(403, "Invalid or Expired Token")
            if view.allowed_profiles:
                profiles = user_profiles(*user)
                if not set(profiles) & set(view.allowed_profiles):
                    raise ApiError(403, "This user's profile may not use this view")
        elif token and user is None:
            raise ApiError(403, "Invalid or Expired Token")
        return user

    def user_profiles(obj_key: str, user_id: str) -> list[str]:
        obj = app_def.objects[obj_key]
        rec = store.records(obj_key, [user_id]).get(user_id, {})
        out = [obj.profile_key] if obj.profile_key else []
        for f in obj.fields_of("user_roles"):
            for p in rec.get(f.key + "_raw") or []:
                if isinstance(p, str) and p not in out:
                    out.append(p)
        return out

    def envelope(total: int, page: int, rows: int, frags: list[str],
                 request: Request) -> Response:
        head = (f'{{"total_pages":{math.ceil(total / rows)},"current_page":{page},'
                f'"total_records":{total},"records":[')
        return finish(head + ",".join(frags) + "]}", request)

    def check_format(fmt: str | None) -> str:
        f = (fmt or "both").lower()
        if f not in ("both", "raw", "html"):
            raise ApiError.invalid(f"format must be raw, html or both, not {fmt!r}")
        return f

    # ---- application schema and login ---------------------------------------------------
    @api.get("/v1/applications/{app_id}", tags=["application"])
    def get_application(app_id: str) -> Response:
        """The application schema: objects, fields, scenes, views (no key needed)."""
        check_app_path(app_id)
        if not state.emulation.expose_schema:
            raise ApiError.not_found("the application schema is not exposed")
        return Response(dumps(app_def.public_document()).encode(),
                        media_type="application/json")

    @api.post("/v1/applications/{app_id}/session", tags=["users"], openapi_extra={
        "requestBody": {"content": {"application/json": {"schema": {
            "type": "object", "properties": {"email": {"type": "string"},
                                             "password": {"type": "string"}}}}}}})
    async def login(app_id: str, request: Request) -> Response:
        """Remote login (docs/service-interface.md §4.5): email + password -> a session, a token."""
        check_app_path(app_id)
        body = await read_json(request)
        email, password = body.get("email"), body.get("password")
        if not isinstance(email, str) or not email.strip():
            raise ApiError.invalid("email is required", "email")
        if not isinstance(password, str) or not password:
            raise ApiError.invalid("password is required", "password")
        return await run_in_threadpool(_login, email, password, bool(body.get("remember")))

    def _login(email: str, password: str, remember: bool) -> Response:
        fail = ApiError(401, {"errors": [{"message": "Email or password incorrect."}]})
        try:
            obj, uid, rec, secrets_ = store.find_user(email)
        except KeyError:
            raise fail from None
        pw_fields = obj.fields_of("password")
        if not pw_fields or not verify_password(password, secrets_.get(pw_fields[0].key)):
            raise fail
        for f in obj.fields:
            if f.kind == "multiple_choice" and "status" in f.name.lower():
                status = rec.get(f.key + "_raw")
                if status not in (None, "", "active"):
                    raise ApiError(401, {"errors": [{"message": f"Account is {status}."}]})
        ttl = 14 * 24 * 3600.0 if remember else None
        token = store.new_token(obj.key, uid, ttl)
        user = {"approval_status": "approved", "empty_pass": False, "id": uid,
                "profile_keys": user_profiles(obj.key, uid),
                "profile_objects": [{"entry_id": uid, "object": obj.key}],
                "token": token, "utility_key": state.utility_key, "values": {}}
        return JSONResponse({"session": {"user": user}})

    # ---- assets -------------------------------------------------------------------------
    @api.post("/v1/applications/{app_id}/assets/{asset_type}/upload", tags=["assets"],
              openapi_extra={**_UPLOAD_BODY, "parameters": _AUTH_PARAMS})
    async def upload(app_id: str, asset_type: str, request: Request) -> Response:
        """Upload a file or an image (multipart part ``files``) -> the asset (2.5)."""
        check_app_path(app_id)
        if asset_type not in ("file", "image"):
            raise ApiError.not_found(f"unknown asset type {asset_type!r} (file or image)")
        check_key(request, allow_service=True)
        limit = state.emulation.upload_limit_bytes
        try:
            declared = int(request.headers.get("content-length") or 0)
        except ValueError:
            declared = 0
        if limit and declared > limit + 64 * 1024:
            raise ApiError(413, {"errors": [{"message": f"upload exceeds the limit of "
                                             f"{limit} bytes"}]})
        ctype = request.headers.get("content-type", "")
        if not ctype.startswith("multipart/form-data"):
            raise ApiError.invalid("an upload must be multipart/form-data with a part 'files'",
                                   "files")
        try:
            form = await request.form(max_files=5, max_fields=20)
        except Exception as exc:  # noqa: BLE001 - any multipart parse failure is the client's
            raise ApiError.invalid(f"malformed multipart body: {exc}", "files") from exc
        part = form.get("files")
        if part is None or isinstance(part, str):
            await form.close()
            raise ApiError.invalid("the multipart part 'files' holding a file is required",
                                   "files")
        content = await part.read()
        filename = sanitize_filename(part.filename)
        await form.close()
        if limit and len(content) > limit:
            raise ApiError(413, {"errors": [{"message": f"upload of {len(content)} bytes "
                                             f"exceeds the limit of {limit} bytes"}]})
        thumb = None
        if asset_type == "image":
            thumb = await run_in_threadpool(_thumbnail, content)
        asset_id, size = await run_in_threadpool(store.add_asset, asset_type, filename,
                                                  content, thumb)
        base = base_of(request)
        raw = store.asset_raw(asset_id, asset_type, filename, size, thumb is not None, None,
                              base)
        return JSONResponse({"id": asset_id, "type": asset_type, "filename": filename,
                             "public_url": raw["url"], "thumb_url": raw["thumb_url"],
                             "size": size})

    @api.get("/v1/applications/{app_id}/download/asset/{asset_id}/{filename}",
             tags=["assets"])
    def download(app_id: str, asset_id: str, filename: str) -> Response:
        """The exact bytes of an uploaded asset (its ``public_url``)."""
        check_app_path(app_id)
        path = store.asset_file(asset_id, filename)
        if path is None:
            raise ApiError.not_found(f"unknown asset {asset_id!r}/{filename!r}")
        media = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        return FileResponse(path, media_type=media)

    @api.get("/v1/applications/{app_id}/download/asset/{asset_id}/thumb/{filename}",
             tags=["assets"])
    def download_thumb(app_id: str, asset_id: str, filename: str) -> Response:
        """The thumbnail (PNG) of an uploaded image (its ``thumb_url``)."""
        check_app_path(app_id)
        path = store.asset_file(asset_id, filename, thumb=True)
        if path is None:
            raise ApiError.not_found(f"unknown thumbnail {asset_id!r}/{filename!r}")
        return FileResponse(path, media_type="image/png")

    # ---- object records -----------------------------------------------------------------
    @api.get("/v1/objects/{object_key}/records", tags=["objects"],
             openapi_extra={"parameters": _AUTH_PARAMS})
    def list_object(object_key: str, request: Request, page: str | None = Query(None),
                    rows_per_page: str | None = Query(None), filters: str | None = Query(None),
                    sort_field: str | None = Query(None), sort_order: str | None = Query(None),
                    format: str | None = Query(None)) -> Response:  # noqa: A002
        """List records of an object (4.1) with paging, filters and sorting."""
        check_key(request)
        obj = object_of(object_key)
        p, r = parse_paging(page, rows_per_page)
        fmt = check_format(format)
        where, params = build_filters(app_def, obj, parse_filters_param(filters),
                                      app_def.local_now())
        order = sort_sql(obj, sort_field, sort_order)
        # the raw fragments are stored too: format=raw pages are spliced like the default
        total, frags = store.page(obj.key, where, params, order, r, (p - 1) * r,
                                  raw=fmt == "raw")
        if fmt == "html":
            frags = [_reformat(f, fmt) for f in frags]
        return envelope(total, p, r, frags, request)

    @api.get("/v1/objects/{object_key}/records/{record_id}", tags=["objects"],
             openapi_extra={"parameters": _AUTH_PARAMS})
    def get_object_record(object_key: str, record_id: str, request: Request,
                          format: str | None = Query(None)) -> Response:  # noqa: A002
        """One record of an object."""
        check_key(request)
        obj = object_of(object_key)
        fmt = check_format(format)
        frag = store.frag(obj.key, record_id, raw=fmt == "raw")
        if frag is None:
            raise ApiError.not_found(f"no record {record_id!r} in {object_key}")
        return finish(_reformat(frag, fmt) if fmt == "html" else frag, request)

    async def write_object(object_key: str, record_id: str | None,
                           request: Request) -> Response:
        """Create (``record_id`` None) or update a record through the object endpoint."""
        check_key(request)
        obj = object_of(object_key)
        body = await read_json(request)
        _, frag = await run_in_threadpool(store.write, obj.key, body, record_id)
        return finish(frag, request)

    @api.post("/v1/objects/{object_key}/records", tags=["objects"],
              openapi_extra={**_JSON_BODY, "parameters": _AUTH_PARAMS})
    async def create_object_record(object_key: str, request: Request) -> Response:
        """Create a record (4.8); ``{}`` creates a blank record. Answers the bare record."""
        return await write_object(object_key, None, request)

    @api.put("/v1/objects/{object_key}/records/{record_id}", tags=["objects"],
             openapi_extra={**_JSON_BODY, "parameters": _AUTH_PARAMS})
    async def update_object_record(object_key: str, record_id: str,
                                   request: Request) -> Response:
        """Update a record (4.3): only the sent fields change. Answers the whole record."""
        return await write_object(object_key, record_id, request)

    @api.delete("/v1/objects/{object_key}/records/{record_id}", tags=["objects"],
                openapi_extra={"parameters": _AUTH_PARAMS})
    def delete_object_record(object_key: str, record_id: str, request: Request) -> Response:
        """Delete a record: ``{"delete": true}``."""
        check_key(request)
        obj = object_of(object_key)
        store.delete(obj.key, record_id)
        return JSONResponse({"delete": True})

    # ---- view records -------------------------------------------------------------------
    def view_scope(view: ViewDef, user: tuple[str, str] | None) -> tuple[str, list[Any],
                                                                          list[str] | None]:
        """SQL condition selecting the records a view may show."""
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

    def view_records(view: ViewDef, frags: list[str], fmt: str) -> list[str]:
        recs = [json.loads(f) for f in frags]
        obj = app_def.objects[view.object_key]
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

    def in_view(view: ViewDef, user: tuple[str, str] | None, record_id: str) -> bool:
        where, params, ids = view_scope(view, user)
        if ids is not None and record_id not in ids:
            return False
        total, _ = store.page(view.object_key, f"({where}) AND r.id = ?", [*params, record_id],
                              "r.seq", 1, 0)
        return total > 0

    @api.get("/v1/pages/{scene_key}/views/{view_key}/records", tags=["views"],
             openapi_extra={"parameters": _VIEW_PARAMS})
    def list_view(scene_key: str, view_key: str, request: Request,
                  page: str | None = Query(None), rows_per_page: str | None = Query(None),
                  filters: str | None = Query(None), sort_field: str | None = Query(None),
                  sort_order: str | None = Query(None),
                  format: str | None = Query(None)) -> Response:  # noqa: A002
        """List the records a view shows (4.2): only its fields, only its records."""
        view = view_of(scene_key, view_key)
        user = view_user(request, view)
        if view.type == "form":
            raise ApiError.invalid(f"{view_key} is a form: it has no records to list")
        obj = app_def.objects[view.object_key]
        p, r = parse_paging(page, rows_per_page)
        fmt = check_format(format)
        allowed = {c.key for c in view.columns if not c.connection_field}
        where, params, ids = view_scope(view, user)
        fw, fp = build_filters(app_def, obj, parse_filters_param(filters),
                               app_def.local_now(), allowed)
        if not sort_field and view.default_sort:
            order = sort_sql(obj, view.default_sort[0], sort_order or view.default_sort[1])
        else:
            order = sort_sql(obj, sort_field, sort_order, allowed)
        total, frags = store.page(obj.key, f"({where}) AND ({fw})", [*params, *fp], order, r,
                                  (p - 1) * r, ids)
        return envelope(total, p, r, view_records(view, frags, fmt), request)

    @api.get("/v1/pages/{scene_key}/views/{view_key}/records/{record_id}", tags=["views"],
             openapi_extra={"parameters": _VIEW_PARAMS})
    def get_view_record(scene_key: str, view_key: str, record_id: str,
                        request: Request) -> Response:
        """One record through a view (its fields only; 404 outside the view)."""
        view = view_of(scene_key, view_key)
        user = view_user(request, view)
        if not in_view(view, user, record_id):
            raise ApiError.not_found(f"no record {record_id!r} in {view_key}")
        frag = store.frag(view.object_key, record_id)
        if frag is None:
            raise ApiError.not_found(f"no record {record_id!r} in {view_key}")
        return finish(view_records(view, [frag], "both")[0], request)

    def _view_write(view: ViewDef, user: tuple[str, str] | None, body: dict[str, Any],
                    record_id: str | None) -> str:
        if record_id is not None and not in_view(view, user, record_id):
            raise ApiError.not_found(f"no record {record_id!r} in {view.key}")
        rules = list(view.record_rules) if view.type == "form" else []
        if record_id is None and view.connection_key and user is not None:
            rules.append(RecordRule(criteria=[], values=[
                {"field": view.connection_key, "type": "user"}]))
        editable = {c.key for c in view.columns if not c.connection_field}
        ctx = WriteContext(allowed=editable, user_id=user[1] if user else None, rules=rules,
                           strict=False)
        # computed fields shown in a view are not inputs: ignore them rather than refuse
        obj = app_def.objects[view.object_key]
        body = {k: v for k, v in body.items()
                if not (obj.has_field(k) and obj.field(k).kind in COMPUTED_KINDS)}
        _, frag = store.write(view.object_key, body, record_id, ctx)
        rec = json.loads(view_records(view, [frag], "both")[0])
        return dumps({"record": rec, "submit_key": view.submit_key})

    async def write_view(scene_key: str, view_key: str, record_id: str | None,
                         request: Request) -> Response:
        """Create (``record_id`` None) or update through a view that accepts it."""
        view = view_of(scene_key, view_key)
        user = await run_in_threadpool(view_user, request, view)
        if record_id is None and not view.accepts_create:
            raise ApiError.invalid(f"{view_key} does not accept new records")
        if record_id is not None and not view.accepts_update:
            raise ApiError.invalid(f"{view_key} does not accept updates")
        body = await read_json(request)
        text = await run_in_threadpool(_view_write, view, user, body, record_id)
        return finish(text, request)

    @api.put("/v1/pages/{scene_key}/views/{view_key}/records/{record_id}", tags=["views"],
             openapi_extra={**_JSON_BODY, "parameters": _VIEW_PARAMS})
    async def update_view_record(scene_key: str, view_key: str, record_id: str,
                                 request: Request) -> Response:
        """Update through a form or an inline-editing table/search (4.4)."""
        return await write_view(scene_key, view_key, record_id, request)

    @api.post("/v1/pages/{scene_key}/views/{view_key}/records", tags=["views"],
              openapi_extra={**_JSON_BODY, "parameters": _VIEW_PARAMS})
    async def create_view_record(scene_key: str, view_key: str, request: Request) -> Response:
        """Create through an insert form; only form fields are stored, record rules run."""
        return await write_view(scene_key, view_key, None, request)

    return EmulationMiddleware(api, state.emulation)


def _thumbnail(content: bytes) -> bytes:
    """A PNG thumbnail (at most 200x200); 400 when the upload is not a readable image."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(content)) as src:
            src.load()
            im: Image.Image = src.copy()
            im.thumbnail((200, 200))
            if im.mode not in ("RGB", "RGBA", "L", "LA"):
                im = im.convert("RGBA")
            out = io.BytesIO()
            im.save(out, format="PNG")
            return out.getvalue()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ApiError.invalid(f"the uploaded file is not a readable image: {exc}",
                               "files") from exc
