"""Record filters: the service's JSON rules, a small builder, and validation before sending.

``filters`` is URL-encoded JSON (docs/hosted-behaviour.md §1.2): ``{"match": "and"|"or",
"rules": [{"field": "field_3", "operator": "is", "value": "x"}]}``; a bare list of rules
means "and". Everything is checked here, before any request: an unknown operator or a
field key that is not ``field_N`` raises :class:`UsageError` naming it.

Usage::

    from svc_frames.filters import Field, all_of, any_of
    flt = all_of(Field("field_3").is_("open"), Field("field_7").higher_than(10))
    read_object(client, "object_1", filters=flt)
    read_object(client, "object_1", filters=[{"field": "field_3", "operator": "is blank"}])
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import UsageError

NO_VALUE = frozenset({"is blank", "is not blank", "is today"})
WITH_VALUE = frozenset({"is", "is not", "contains", "does not contain", "starts with",
                        "ends with", "higher than", "lower than", "is before", "is after"})
RANGED = frozenset({"is during the previous", "is during the next"})
CURRENT = frozenset({"is during the current"})
NEAR = frozenset({"near"})
OPERATORS = NO_VALUE | WITH_VALUE | RANGED | CURRENT | NEAR
PERIODS = frozenset({"days", "weeks", "months", "years"})
FIELD_KEY = re.compile(r"field_\d+\Z")
"""A field key (``field_N``): the one rule for filter fields, sort fields and record keys."""


class FilterSet(dict):  # type: ignore[type-arg]
    """A validated ``{"match", "rules"}`` dict (what the builder returns)."""


Filters = FilterSet | Mapping[str, Any] | Sequence[Mapping[str, Any]] | str
"""A filter dict, a bare list of rules, a JSON string of either, or a builder result."""


def validate_rule(rule: Any, where: str = "rule") -> dict[str, Any]:
    """Check one rule; returns a plain dict copy. UsageError names what is wrong."""
    if not isinstance(rule, Mapping):
        raise UsageError(f"{where}: a filter rule must be a dict, got {type(rule).__name__}")
    field = rule.get("field")
    if not isinstance(field, str) or not FIELD_KEY.match(field):
        raise UsageError(f"{where}: bad field key {field!r} in filter (expected 'field_N')",
                         field=field if isinstance(field, str) else None)
    op = rule.get("operator")
    if op not in OPERATORS:
        raise UsageError(f"{where}: unknown filter operator {op!r} for {field} (known: "
                         f"{', '.join(sorted(OPERATORS))})", field=field)
    out = dict(rule)
    if op in WITH_VALUE or op in NEAR:
        if "value" not in rule or rule["value"] is None:
            raise UsageError(f"{where}: operator {op!r} on {field} needs a value", field=field)
        value = rule["value"]
        if not isinstance(value, (str, int, float, bool, list, dict)):
            raise UsageError(f"{where}: value for {field} must be JSON (str, number, bool, "
                             f"list), got {type(value).__name__}", field=field)
    if op in RANGED:
        rng = rule.get("range")
        if isinstance(rng, bool) or not isinstance(rng, (int, str)) or not str(rng).isdigit():
            raise UsageError(f"{where}: operator {op!r} on {field} needs an integer 'range'",
                             field=field)
    if op in RANGED or op in CURRENT:
        if rule.get("type") not in PERIODS:
            raise UsageError(f"{where}: operator {op!r} on {field} needs 'type' in "
                             f"{sorted(PERIODS)}, got {rule.get('type')!r}", field=field)
    return out


def validate_filters(filters: Filters | None) -> FilterSet | None:
    """Normalize any accepted filter form to ``{"match", "rules"}``; None stays None.

    Usage: ``validate_filters([{"field": "field_1", "operator": "is", "value": 1}])``"""
    if filters is None:
        return None
    if isinstance(filters, str):
        try:
            filters = json.loads(filters)
        except ValueError as exc:
            raise UsageError(f"filters is not valid JSON: {exc}") from None
    if isinstance(filters, Mapping):
        match = filters.get("match", "and")
        if match not in ("and", "or"):
            raise UsageError(f"filters 'match' must be 'and' or 'or', got {match!r}")
        rules = filters.get("rules")
        extra = set(filters) - {"match", "rules"}
        if extra:
            raise UsageError(f"unknown filter member(s) {sorted(extra)} (expected match, rules)")
        if not isinstance(rules, Sequence) or isinstance(rules, (str, bytes)):
            raise UsageError("filters 'rules' must be a list of rules")
    elif isinstance(filters, Sequence) and not isinstance(filters, (bytes, bytearray)):
        match, rules = "and", filters
    else:
        raise UsageError(f"filters must be a dict, a list of rules or JSON text, got "
                         f"{type(filters).__name__}")
    checked = [validate_rule(r, f"filter rule {i + 1}") for i, r in enumerate(rules)]
    return FilterSet(match=match, rules=checked)


def encode_filters(filters: Filters | None) -> str | None:
    """The ``filters`` query parameter value (compact JSON), validated; None when no rules."""
    checked = validate_filters(filters)
    if not checked or not checked["rules"]:
        return None
    return json.dumps(checked, separators=(",", ":"), ensure_ascii=False)


def all_of(*rules: Mapping[str, Any]) -> FilterSet:
    """Records matching every rule. Usage: ``all_of(Field("field_1").is_("x"), ...)``"""
    out = validate_filters({"match": "and", "rules": list(rules)})
    assert out is not None
    return out


def any_of(*rules: Mapping[str, Any]) -> FilterSet:
    """Records matching at least one rule. Usage: ``any_of(Field("field_1").is_blank())``"""
    out = validate_filters({"match": "or", "rules": list(rules)})
    assert out is not None
    return out


class Field:
    """Rule builder for one field: ``Field("field_3").contains("abc")`` -> a rule dict.

    The key is checked at once, so a typo fails where it is written."""

    def __init__(self, key: str) -> None:
        validate_rule({"field": key, "operator": "is blank"}, "Field")
        self.key = key

    def _rule(self, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
        rule: dict[str, Any] = {"field": self.key, "operator": op}
        if value is not None:
            rule["value"] = value
        rule.update(extra)
        return validate_rule(rule, f"Field({self.key!r})")

    def is_(self, value: Any) -> dict[str, Any]:
        return self._rule("is", value)

    def is_not(self, value: Any) -> dict[str, Any]:
        return self._rule("is not", value)

    def contains(self, value: Any) -> dict[str, Any]:
        return self._rule("contains", value)

    def does_not_contain(self, value: Any) -> dict[str, Any]:
        return self._rule("does not contain", value)

    def starts_with(self, value: str) -> dict[str, Any]:
        return self._rule("starts with", value)

    def ends_with(self, value: str) -> dict[str, Any]:
        return self._rule("ends with", value)

    def is_blank(self) -> dict[str, Any]:
        return self._rule("is blank")

    def is_not_blank(self) -> dict[str, Any]:
        return self._rule("is not blank")

    def higher_than(self, value: float | int | str) -> dict[str, Any]:
        return self._rule("higher than", value)

    def lower_than(self, value: float | int | str) -> dict[str, Any]:
        return self._rule("lower than", value)

    def is_before(self, value: str) -> dict[str, Any]:
        return self._rule("is before", value)

    def is_after(self, value: str) -> dict[str, Any]:
        return self._rule("is after", value)

    def is_today(self) -> dict[str, Any]:
        return self._rule("is today")

    def during_previous(self, n: int, period: str) -> dict[str, Any]:
        return self._rule("is during the previous", range=n, type=period)

    def during_next(self, n: int, period: str) -> dict[str, Any]:
        return self._rule("is during the next", range=n, type=period)

    def during_current(self, period: str) -> dict[str, Any]:
        return self._rule("is during the current", type=period)

    # comparison sugar: Field("field_1") == "x"
    def __eq__(self, value: object) -> dict[str, Any]:  # type: ignore[override]
        return self.is_(value)

    def __ne__(self, value: object) -> dict[str, Any]:  # type: ignore[override]
        return self.is_not(value)

    def __gt__(self, value: Any) -> dict[str, Any]:
        return self.higher_than(value)

    def __lt__(self, value: Any) -> dict[str, Any]:
        return self.lower_than(value)

    __hash__ = None  # type: ignore[assignment]
