"""Where a write-back goes: the frames' object, or a view (a form or inline editing) as a
logged-in user; and which fields such a view takes.

Usage::

    tgt = resolve_target(client, plan.source, ("scene_3", "view_7"), token=None)
    view_fields(client.schema(), "scene_3", "view_7")    # {"field_12", ...} or None
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..client import Client
from ..client import Target as Where
from ..errors import ConfigurationError, UsageError
from ..frames import Source

__all__ = ["Target", "resolve_target", "view_fields", "where"]


@dataclass
class Target:
    """The object written to, or a view with the user token it is written through."""

    object_key: str
    scene: str | None = None
    view: str | None = None
    token: str | None = None

    @property
    def is_view(self) -> bool:
        return self.view is not None

    @property
    def name(self) -> str:
        return f"{self.scene}/{self.view}" if self.is_view else self.object_key


def resolve_target(client: Client, source: Source, target: Any, token: str | None) -> Target:
    """The frames' object (default), or ``"scene_N/view_N"`` / ``(scene, view)`` with a
    token; UsageError / ConfigurationError before any request."""
    if target is None:
        target = (source.scene_key, source.view_key) if source.kind == "view" else \
            source.object_key
    if isinstance(target, str) and "/" in target:
        target = tuple(target.split("/", 1))
    if isinstance(target, str):
        if target != source.object_key:
            raise UsageError(f"target {target!r} is not the frames' object "
                             f"{source.object_key!r}")
        return Target(source.object_key)
    if not (isinstance(target, tuple) and len(target) == 2 and all(
            isinstance(x, str) and x for x in target)):
        raise UsageError(f"target must be 'object_N' or ('scene_N', 'view_N'), got {target!r}")
    tok = token or getattr(client, "token", None)
    if not tok:
        raise ConfigurationError(
            f"writing through the view {target[0]}/{target[1]} needs a user token: call "
            "client.login(email, password) or pass token=")
    return Target(source.object_key, target[0], target[1], tok)


def view_fields(app: Mapping[str, Any] | None, scene: str, view: str) -> set[str] | None:
    """Field keys a view shows/accepts (form inputs, table columns), None when unknown."""
    if not app:
        return None
    for sc in app.get("scenes") or ():
        if sc.get("key") != scene:
            continue
        for v in sc.get("views") or ():
            if v.get("key") != view:
                continue
            found: set[str] = set()
            _walk(v, found)
            return found
    return None


def _walk(node: Any, found: set[str]) -> None:
    if isinstance(node, Mapping):
        fld = node.get("field")
        if isinstance(fld, Mapping) and isinstance(fld.get("key"), str):
            found.add(fld["key"])
        for k in ("groups", "columns", "inputs"):
            if k in node:
                _walk(node[k], found)
    elif isinstance(node, list):
        for x in node:
            _walk(x, found)


def where(source: Source) -> Where:
    """The list the frames were read from (object or view), for re-reads and lookups."""
    if source.kind == "view":
        return cast(Where, (source.scene_key, source.view_key))
    return source.object_key
