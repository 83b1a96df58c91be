"""Objects, views and fields by key or by name: the one resolver every call that takes
one uses.

A name is matched exactly first, then with case and runs of white space ignored. A name
that matches two things is a :class:`UsageError` listing both with their keys; an unknown
name is a :class:`UsageError` naming the closest matches and the call that lists them all.
Resolving needs only the schema (read once per client): nothing else is requested.

Usage::

    schema = client.schema()
    object_key(schema, "Work Orders")                    # "object_3"
    view_keys(schema, ("Dispatch", "Dispatch board"))    # ("scene_2", "view_3")
    field_key(schema.object_fields("object_3"), "status", "Work Orders")   # "field_27"
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from .errors import UsageError
from .keys import FIELD_KEY, KEY_RE, Target
from .kinds.base import FieldSpec
from .labels import label_map
from .schema import Schema

__all__ = ["object_key", "view_keys", "field_key", "field_keys",
           "target_keys", "fold"]

_SPACE = re.compile(r"\s+")


def fold(name: str) -> str:
    """A name as matched the second time: case folded, white space runs made one space."""
    return _SPACE.sub(" ", name.strip()).casefold()


def _listed(pairs: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{name!r} ({key})" if name else key for key, name in pairs)


def match(want: str, candidates: Sequence[tuple[str, str]], what: str, lister: str) -> str:
    """The key among ``candidates`` ((key, name) pairs) that ``want`` names: a key, an exact
    name, or a name matching with case and spaces ignored. UsageError otherwise: two
    matches are listed with their keys; no match names the closest and ``lister``."""
    if any(want == key for key, _ in candidates):
        return want
    for rule in (lambda n: n == want, lambda n: fold(n) == fold(want)):
        hits = [(key, name) for key, name in candidates if name and rule(name)]
        if len(hits) == 1:
            return hits[0][0]
        if len(hits) > 1:
            raise UsageError(f"{what} {want!r} is ambiguous: {_listed(hits)} share that "
                             f"name; name one by its key")
    by_fold = {fold(name): (key, name) for key, name in candidates if name}
    close = difflib.get_close_matches(fold(want), list(by_fold), n=3, cutoff=0.6)
    hint = (" did you mean " + " or ".join(f"{by_fold[c][1]!r} ({by_fold[c][0]})"
                                           for c in close) + "?") if close else ""
    if not close and 0 < len(candidates) <= 12:
        hint = f" the known ones are {_listed(candidates)};"
    raise UsageError(f"unknown {what} {want!r};{hint} {lister} lists them all")


def object_key(schema: Schema, want: Any) -> str:
    """The key of the object ``want`` names (a key ``object_N`` or the object's name).

    Without a schema (the service does not expose it) only a key is taken, unchecked: the
    service says whether it exists."""
    if not isinstance(want, str) or not want.strip():
        raise UsageError(f"an object is named by its key ('object_N') or its name, got {want!r}")
    if not schema.available:
        if KEY_RE["object"].match(want):
            return want
        raise UsageError(f"the service does not expose its schema, so {want!r} cannot be "
                         "looked up by name: name the object by its key ('object_N')")
    pairs = [(key, schema.object_name(key)) for key in schema.object_keys()]
    if KEY_RE["object"].match(want) and want not in dict(pairs):
        near = ", ".join(f"{n!r} ({k})" for k, n in pairs[:12])
        raise UsageError(f"unknown object {want!r}: the application's objects are {near}"
                         + (" …" if len(pairs) > 12 else "")
                         + "; svc_frames.objects(client) lists them all")
    return match(want, pairs, "object", "svc_frames.objects(client)")


def view_keys(schema: Schema, want: Any) -> tuple[str, str]:
    """The (scene, view) keys ``want`` names: ``"scene_N/view_N"``, ``("scene_N",
    "view_N")``, the view's name, or ``("Scene name", "View name")``."""
    if isinstance(want, str) and "/" in want:
        a, _, b = want.partition("/")
        if KEY_RE["scene"].match(a) and KEY_RE["view"].match(b):
            want = (a, b)
    if isinstance(want, tuple) and len(want) == 2 and all(isinstance(w, str) for w in want):
        scene, view = want
        if KEY_RE["scene"].match(scene) and KEY_RE["view"].match(view):
            if schema.available and schema.view(scene, view) is None:
                raise UsageError(f"unknown view {scene}/{view}; svc_frames.views(client) "
                                 "lists them all")
            return scene, view
        if not schema.available:
            raise UsageError("the service does not expose its schema, so views cannot be "
                             "looked up by name: name it ('scene_N', 'view_N')")
        scenes = [(key, str(doc.get("name") or "")) for key, doc in schema.scenes()]
        scene_key = match(scene, scenes, "scene", "svc_frames.views(client)")
        views = [(key, str(doc.get("name") or "")) for key, doc in schema.scene_views(scene_key)]
        return scene_key, match(view, views, "view", "svc_frames.views(client)")
    if isinstance(want, str) and want.strip():
        if not schema.available:
            raise UsageError("the service does not expose its schema, so views cannot be "
                             "looked up by name: name it 'scene_N/view_N'")
        pairs = [(f"{scene}/{view}", str(doc.get("name") or ""))
                 for scene, view, doc in schema.views()]
        lister = "svc_frames.views(client) (names as 'scene_N/view_N' or by name)"
        scene, _, view = match(want, pairs, "view", lister).partition("/")
        return scene, view
    raise UsageError(f"a view is named 'scene_N/view_N', ('scene_N', 'view_N'), by its name "
                     f"or ('Scene name', 'View name'), got {want!r}")


def target_keys(schema: Schema, target: Any) -> Target:
    """An object or a view named by key or name, as the keys a request takes: an object's
    key, or a view's (scene, view). A string is an object first, then a view."""
    if isinstance(target, tuple) or (isinstance(target, str) and "/" in target
                                     and KEY_RE["scene"].match(target.partition("/")[0])):
        return view_keys(schema, target)
    try:
        return object_key(schema, target)
    except UsageError as as_object:
        if not isinstance(target, str) or not schema.available or KEY_RE["object"].match(target):
            raise
        try:
            return view_keys(schema, target)
        except UsageError:
            raise as_object from None


def field_key(fields: Sequence[FieldSpec], want: Any, where: str) -> str:
    """The key of the field ``want`` names among ``fields`` (a key ``field_N`` or the
    field's label); ``where`` names the object or view in the error."""
    if not isinstance(want, str) or not want.strip():
        raise UsageError(f"a field is named by its key ('field_N') or its label, got {want!r}")
    pairs = [(f.key, f.label) for f in fields]
    if want not in dict(pairs):
        # the name a frame named by labels gives a field whose label clashes
        # ("Name (field_1)", docs/column-names.md): taken as it shows
        used = {name: key for key, name in label_map(fields).items()}
        if want in used and not any(want == label for _k, label in pairs):
            return used[want]
    if FIELD_KEY.match(want) and want not in dict(pairs):
        if not pairs:
            return want  # nothing known to check against: the service will say
        raise UsageError(f"{where} has no field {want!r}; svc_frames.fields(client, "
                         f"{where!r}) lists its fields")
    return match(want, pairs, f"field of {where}", f"svc_frames.fields(client, {where!r})")


def field_keys(fields: Sequence[FieldSpec], wants: Sequence[Any], where: str) -> list[str]:
    """The keys of the fields ``wants`` names (each as :func:`field_key` takes it), in
    their order; UsageError for a field named twice (by label and by key).

    Usage: ``field_keys(schema.object_fields("object_3"), ["Title", "field_27"], "Work Orders")``"""
    keys = [field_key(fields, want, where) for want in wants]
    twice = [(w, k) for i, (w, k) in enumerate(zip(wants, keys, strict=True)) if k in keys[:i]]
    if twice:
        raise UsageError(f"columns names the field {twice[0][1]} twice ({twice[0][0]!r} is "
                         "another name of it)")
    return keys
