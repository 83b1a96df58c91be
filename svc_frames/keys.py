"""The shapes of the service's keys (``object_N``, ``field_N``, ``scene_N``, ``view_N``,
``profile_N``), in one place for the client, the parsers and the local service.

It imports nothing of the package, so any module may use it (filters and the raw-page
parser sit below the kind codecs, and the codecs' date structs below them).

Usage::

    if not FIELD_KEY.match(key): raise UsageError(...)
    KEY_RE["view"].match("view_3")
"""

from __future__ import annotations

import re

__all__ = ["FIELD_KEY", "KEY_RE", "OBJECT_KEY"]

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
