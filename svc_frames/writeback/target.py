"""Where a write-back goes: the frames' object, or a view (a form or inline editing) as a
logged-in user. (Which fields a view takes: ``schema.Schema.view_field_keys``.)

Usage::

    tgt = write_target(client, plan.source, ("scene_3", "view_7"), token=None)
    tgt.name                                              # "scene_3/view_7"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ..errors import ConfigurationError, UsageError
from ..frames import Source
from ..keys import Target as Where
from ..records import Client

__all__ = ["WriteTarget", "write_target", "where"]


@dataclass
class WriteTarget:
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


def write_target(client: Client, source: Source, target: Any, token: str | None) -> WriteTarget:
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
        return WriteTarget(source.object_key)
    if not (isinstance(target, tuple) and len(target) == 2 and all(
            isinstance(x, str) and x for x in target)):
        raise UsageError(f"target must be 'object_N' or ('scene_N', 'view_N'), got {target!r}")
    tok = token or getattr(client, "token", None)
    if not tok and _behind_login(client, target[0]):
        raise ConfigurationError(
            f"writing through the view {target[0]}/{target[1]} needs a user token: call "
            "client.login(email, password) or pass token=")
    return WriteTarget(source.object_key, target[0], target[1], tok)


def _behind_login(client: Client, scene_key: str) -> bool:
    """Whether the scene is nested under a login (the schema's ``authenticated``), so its
    views take a user token (docs/service-interface.md §4.4); a public view takes none.
    Without a schema it cannot be told, and a token is asked for (a refusal before any
    write beats a Forbidden after some)."""
    schema = client.schema()
    scene = next((sc for key, sc in schema.scenes() if key == scene_key), None)
    return bool(scene.get("authenticated")) if scene is not None else not schema


def where(source: Source) -> Where:
    """The list the frames were read from (object or view), for re-reads and lookups."""
    if source.kind == "view":
        return cast(Where, (source.scene_key, source.view_key))
    return source.object_key
