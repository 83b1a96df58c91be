"""Session route: remote login (``POST /v1/applications/{app_id}/session``), email and
password -> a user token for view requests.

Usage::

    api.include_router(session.router)
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..accounts import REMEMBER_TTL_S, LoginRefused
from ..apierror import ApiError
from ..state import ServiceState
from .auth import check_app_path, user_profiles
from .http import read_json, state_of
from .openapi import LOGIN_BODY

router = APIRouter(tags=["users"])


@router.post("/v1/applications/{app_id}/session", openapi_extra=LOGIN_BODY)
async def login(app_id: str, request: Request) -> Response:
    """Remote login (docs/service-interface.md §4.5): email + password -> a session, a token."""
    state = state_of(request)
    check_app_path(state, app_id)
    body = await read_json(request)
    email, password = body.get("email"), body.get("password")
    if not isinstance(email, str) or not email.strip():
        raise ApiError.invalid("email is required", "email")
    if not isinstance(password, str) or not password:
        raise ApiError.invalid("password is required", "password")
    return await run_in_threadpool(open_session, state, email, password,
                                   bool(body.get("remember")))


def open_session(state: ServiceState, email: str, password: str, remember: bool) -> Response:
    """Check the credentials and answer the session (401 when they do not match, or the
    user is not active)."""
    accounts = state.store.accounts
    try:
        obj, uid = accounts.login(email, password)
    except LoginRefused as exc:
        raise ApiError(401, {"errors": [{"message": exc.reason}]}) from None
    token = accounts.new_token(obj.key, uid, REMEMBER_TTL_S if remember else None)
    user = {"approval_status": "approved", "empty_pass": False, "id": uid,
            "profile_keys": user_profiles(state, obj.key, uid),
            "profile_objects": [{"entry_id": uid, "object": obj.key}],
            "token": token, "utility_key": state.utility_key, "values": {}}
    return JSONResponse({"session": {"user": user}})
