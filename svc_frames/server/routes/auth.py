"""Who may ask: application id and API key checks, user tokens of view requests, and the
lookups of the object or view a path names (404 naming it).

Object requests need ``X-Service-Application-Id`` and ``X-Service-REST-API-KEY``; view
requests send the literal ``service`` as the key and, behind a login, the user token in
``Authorization``. Auth failures answer plain text (401 ``Invalid API key``, 403
``Invalid or Expired Token``).

Usage::

    check_key(state, request)
    obj = object_of(state, "object_3")
    user = view_user(state, request, view_of(state, "scene_1", "view_1"))
"""

from __future__ import annotations

import hmac

from fastapi import Request

from ..apierror import ApiError
from ..schema import ObjectDef, ViewDef
from ..state import ServiceState

APP_HEADER = "x-service-application-id"
KEY_HEADER = "x-service-rest-api-key"


def check_app_id(state: ServiceState, request: Request) -> None:
    """401 unless the application id header names this application."""
    if request.headers.get(APP_HEADER) != state.app.id:
        raise ApiError(401, "Invalid application ID")


def check_key(state: ServiceState, request: Request, allow_service: bool = False) -> None:
    """401 unless the request carries the API key (or ``service`` where views allow it)."""
    check_app_id(state, request)
    key = request.headers.get(KEY_HEADER) or ""
    if hmac.compare_digest(key.encode("utf-8", "surrogatepass"), state.api_key.encode()) or (
            allow_service and key == "service"):
        return
    raise ApiError(401, "Invalid API key")


def check_app_path(state: ServiceState, app_id: str) -> None:
    """404 unless a path's application id is this application."""
    if app_id != state.app.id:
        raise ApiError.not_found(f"unknown application {app_id!r}")


def object_of(state: ServiceState, key: str) -> ObjectDef:
    """The object a path names (404 naming it)."""
    obj = state.app.objects.get(key)
    if obj is None:
        raise ApiError.not_found(f"unknown object {key!r}")
    return obj


def view_of(state: ServiceState, scene_key: str, view_key: str) -> ViewDef:
    """The view a path names (404 naming the scene or the view)."""
    view = state.app.views.get((scene_key, view_key))
    if view is None:
        if not any(s == scene_key for s, _ in state.app.views):
            raise ApiError.not_found(f"unknown scene {scene_key!r}")
        raise ApiError.not_found(f"unknown view {view_key!r} in {scene_key}")
    return view


def user_profiles(state: ServiceState, obj_key: str, user_id: str) -> list[str]:
    """Profile keys of a user: its object's profile, then its roles."""
    obj = state.app.objects[obj_key]
    rec = state.store.records(obj_key, [user_id]).get(user_id, {})
    out = [obj.profile_key] if obj.profile_key else []
    for f in obj.fields_of("user_roles"):
        for p in rec.get(f.key + "_raw") or []:
            if isinstance(p, str) and p not in out:
                out.append(p)
    return out


def view_user(state: ServiceState, request: Request, view: ViewDef) -> tuple[str, str] | None:
    """Auth of a view request -> (user object, user id) when logged in."""
    check_key(state, request, allow_service=True)
    # as is: the hosted service takes no "Bearer " prefix, so neither does its emulator
    token = request.headers.get("authorization")
    user = state.store.accounts.token_user(token.strip()) if token else None
    if view.authenticated:
        if user is None:
            raise ApiError(403, "Invalid or Expired Token")
        if view.allowed_profiles:
            profiles = user_profiles(state, *user)
            if not set(profiles) & set(view.allowed_profiles):
                raise ApiError(403, "This user's profile may not use this view")
    elif token and user is None:
        raise ApiError(403, "Invalid or Expired Token")
    return user
