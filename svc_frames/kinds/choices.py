"""Choice kinds: multiple_choice (single or multi, from ``format["type"]``) and user_roles."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from ._util import (
    get_value,
    html_lines,
    html_to_text,
    invalid,
    is_blank,
    is_na,
    object_series,
    raw_values,
    string_series,
)
from .base import Codec, FieldSpec, ReadContext, ServiceHooks

MULTI_JOIN = ", "  # how a multi choice's display joins its values


def is_multi(field: FieldSpec) -> bool:
    return str(field.format.get("type") or "single").lower() == "multi"


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        return list(value.tolist())
    return [value]


def _own_list(values: list[Any], own: Callable[[Any, Any], Any]) -> list[Any]:
    """A copy of a page's parsed list whose values that are options of the field are the
    option's own strings (``own``: a dict's ``get``), of the list's exact size.

    A frame keeps a multi choice's lists to its end: holding the page's parsed strings
    in them, they were most of what a decoded page leaves alive, pinning memory the next
    pages could have reused, and the frames' size does not count them
    (docs/benchmarks.md, "A load's memory")."""
    out = list(values)          # exactly its size (a list built from ``map`` is not)
    out[:] = map(own, values, values)
    return out


class ChoiceCodec(Codec):
    """multiple_choice: single -> one string; multi -> a list of strings (display joined)."""

    kinds: ClassVar[tuple[str, ...]] = ("multiple_choice",)

    def __init__(self) -> None:
        self._memo: tuple[Any, Any, list[list[str] | None]] | None = None

    def _options(self, field: FieldSpec) -> list[str]:
        opts = field.format.get("options") or []
        return [str(o) for o in opts] if isinstance(opts, (list, tuple)) else []

    def _check(self, choice: Any, field: FieldSpec) -> str:
        if not isinstance(choice, str) or isinstance(choice, bool):
            if isinstance(choice, (int, float)) and not isinstance(choice, bool):
                choice = str(choice)
            else:
                raise invalid(field, f"a choice must be text, got {choice!r}")
        text = str(choice).strip()
        options = self._options(field)
        if options and text not in options:
            raise invalid(field, f"{text!r} is not one of the options {options}")
        return text

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        items = [v for v in _as_list(value) if not is_blank(v)]
        if is_multi(field):
            out: list[str] = []
            for v in items:
                choice = self._check(v, field)
                if choice not in out:
                    out.append(choice)
            return out or None
        if len(items) != 1:
            raise invalid(field, f"a single choice takes one value, got {len(items)}")
        return self._check(items[0], field)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if isinstance(raw, list):
            return MULTI_JOIN.join(str(v) for v in raw if v is not None)
        return "" if raw is None else str(raw)

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, list) and all(v is None or isinstance(v, str) for v in raw)

    # ---- toolkit ----
    def _split(self, display: Any, field: FieldSpec) -> list[str] | None:
        if not isinstance(display, str) or not display:
            return None
        text = html_to_text(display)
        options = self._options(field)
        if text in options:
            return [text]
        parts = [p for line in html_lines(display) for p in line.split(MULTI_JOIN)]
        return [p for p in (x.strip() for x in parts) if p] or None

    def _lists(self, raws: Sequence[Any], displays: Sequence[Any],
               field: FieldSpec) -> list[list[str] | None]:
        raws = raw_values(raws, displays)
        memo = self._memo  # decode then tables on the same page: compute the lists once
        if memo is not None and memo[0] is raws and memo[1] is displays:
            return memo[2]
        lists = self._fast_lists(raws, displays, field)
        self._memo = (raws, displays, lists)
        return lists

    def _fast_lists(self, raws: Sequence[Any], displays: Sequence[Any],
                    field: FieldSpec) -> list[list[str] | None]:
        # fast path: lists of non-empty strings, as the service answers
        own = {o: o for o in self._options(field)}.get
        return [_own_list(r, own) if type(r) is list and r and None not in r and "" not in r
                else self._slow_list(r, d, field) for r, d in zip(raws, displays, strict=False)]

    def _slow_list(self, r: Any, d: Any, field: FieldSpec) -> list[str] | None:
        out = self._slow_lists([r], [d], field)
        return out[0]

    def _slow_lists(self, raws: Sequence[Any], displays: Sequence[Any],
                    field: FieldSpec) -> list[list[str] | None]:
        out: list[list[str] | None] = []
        for r, d in zip(raws, displays, strict=False):
            if r is None:
                out.append(self._split(d, field))
            elif isinstance(r, list):
                vals = [str(v) for v in r if v is not None and v != ""]
                out.append(vals or None)
            else:
                out.append([str(r)] if r != "" else None)
        return out

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        if is_multi(field):
            return {field.key: object_series(self._lists(raws, displays, field))}
        out = [(MULTI_JOIN.join(str(v) for v in r if v is not None) if isinstance(r, list) else r)
               if r is not None else (html_to_text(d) if isinstance(d, str) else d)
               for r, d in zip(raws, displays, strict=False)]
        return {field.key: string_series(out)}

    def tables(self, ids: Sequence[str], raws: Sequence[Any], displays: Sequence[Any],
               field: FieldSpec, ctx: ReadContext) -> dict[str, pd.DataFrame]:
        if not is_multi(field):
            return {}
        lists = self._lists(raws, displays, field)
        self._memo = None   # the page's raw values are not held past its decode
        rec = [rid for rid, vals in zip(ids, lists, strict=False) if vals for _ in vals]
        val = [v for vals in lists if vals for v in vals]
        return {field.key: pd.DataFrame({"record_id": string_series(rec),
                                         "value": string_series(val)})}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = values.get(field.key)
        if value is None or (not isinstance(value, (list, tuple, str)) and is_na(value)):
            return [] if is_multi(field) else ""
        if is_multi(field):
            return [str(v) for v in _as_list(value) if not is_blank(v)]
        return str(value)


_PROFILE = re.compile(r"^(profile_\d+|all_users)$")
_ROLE_IN_TEXT = re.compile(r"profile_\d+|all_users")


class UserRolesCodec(Codec):
    """user_roles: a list of role keys; the display joins them.

    A role key is ``profile_N``, or ``all_users``: the key of the accounts role of a hosted
    application (its built-in "Accounts" user object), which a user record's roles list
    like any other role. Which roles an application has is the service's to check (the
    local service refuses one its application does not have, naming the field)."""

    kinds: ClassVar[tuple[str, ...]] = ("user_roles",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        out: list[str] = []
        for v in _as_list(value):
            if is_blank(v):
                continue
            if not isinstance(v, str) or not _PROFILE.match(v.strip()):
                raise invalid(field, "user roles are role keys like 'profile_1' or "
                                     f"'all_users', got {v!r}")
            if v.strip() not in out:
                out.append(v.strip())
        return out or None

    def render(self, raw: Any, field: FieldSpec) -> Any:
        return MULTI_JOIN.join(raw) if isinstance(raw, list) else str(raw or "")

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return (isinstance(raw, list) and bool(raw)
                and all(isinstance(v, str) and _PROFILE.match(v) for v in raw))

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        raws = raw_values(raws, displays)
        out: list[list[str] | None] = []
        for r, d in zip(raws, displays, strict=False):
            if isinstance(r, list):
                out.append([str(v) for v in r if v] or None)
            elif isinstance(r, str) and r:
                out.append([r])
            elif isinstance(d, str) and d:
                found = _ROLE_IN_TEXT.findall(d)
                out.append(found or None)
            else:
                out.append(None)
        return {field.key: object_series(out)}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = values.get(field.key)
        if value is None or (not isinstance(value, (list, tuple, str)) and is_na(value)):
            return []
        return self.normalize(value, field) or []


__all__ = ["ChoiceCodec", "UserRolesCodec", "is_multi", "get_value"]
