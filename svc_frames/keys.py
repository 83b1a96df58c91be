"""The shapes of the service's keys (``object_N``, ``field_N``, ``scene_N``, ``view_N``,
``profile_N``), in one place for the client, the parsers and the local service.

It imports only the errors, so any module may use it (filters and the raw-page
parser sit below the kind codecs, and the codecs' date structs below them). A request's
target (an object or a view) is spelled here too: ``Target`` and ``parse_target``.

Usage::

    if not FIELD_KEY.match(key): raise UsageError(...)
    KEY_RE["view"].match("view_3")
"""

from __future__ import annotations

import re

from .errors import UsageError

__all__ = ["FIELD_KEY", "KEY_RE", "OBJECT_KEY", "Target", "parse_target"]

FIELD_KEY = re.compile(r"field_\d+\Z")
OBJECT_KEY = re.compile(r"object_\d+\Z")

#: Every key kind the application schema uses, as full-match patterns (``.match`` is enough).
KEY_RE: dict[str, re.Pattern[str]] = {
    "object": OBJECT_KEY,
    "field": FIELD_KEY,
    "scene": re.compile(r"scene_\d+\Z"),
    "view": re.compile(r"view_\d+\Z"),
    "profile": re.compile(r"profile_\d+\Z"),
}

Target = str | tuple[str, str]
"""``"object_N"`` or ``("scene_N", "view_N")``."""


def parse_target(target: Target | str) -> tuple[str, str | None, str | None]:
    """``"object_N"`` -> ("object", "object_N", None); ``"scene_N/view_N"`` or a tuple ->
    ("view", "scene_N", "view_N"). UsageError names anything else.

    Usage: ``kind, a, b = parse_target("scene_1/view_2")``"""
    if isinstance(target, str) and "/" in target:
        target = tuple(target.split("/", 1))  # type: ignore[assignment]
    if isinstance(target, tuple):
        if (len(target) == 2 and isinstance(target[0], str) and isinstance(target[1], str)
                and KEY_RE["scene"].match(target[0]) and KEY_RE["view"].match(target[1])):
            return "view", target[0], target[1]
        raise UsageError(f"bad view target {target!r}: expected ('scene_N', 'view_N')")
    if isinstance(target, str) and KEY_RE["object"].match(target):
        return "object", target, None
    raise UsageError(f"bad target {target!r}: expected 'object_N' or 'scene_N/view_N'")
