"""Record filters: the service's JSON rules, a small builder, and validation before sending.

``filters`` is URL-encoded JSON (docs/hosted-behaviour.md §1.2): ``{"match": "and"|"or",
"rules": [{"field": "field_3", "operator": "is", "value": "x"}]}``; a bare list of rules
means "and". Everything is checked here, before any request: an unknown operator, a field
key that is not ``field_N``, a date that cannot be read, a relative date rule without its
``range``/``type``, ``is any`` without a list: each raises :class:`UsageError` naming the
field and the value.

Dates. The hosted service reads filter dates as ``MM/DD/YYYY``; an ISO date such as
``2024-01-31`` is not refused, it silently matches nothing. So every date value is sent in
the hosted format: ``date``, ``datetime``, ``pd.Timestamp`` and ISO strings are converted
(``format_filter_date``); an aware time is first converted to the application's timezone
(naive times are taken as app-local already). A ``date`` (or a date-only ISO string) sends
the date alone; a time sends ``MM/DD/YYYY h:mma``, but the hosted service does not reliably
honour the time part (the local service never does: it compares whole days), so a time
other than midnight warns. A raw ISO string in a hand-written rule is converted the same
way, with a :class:`~svc_frames.errors.FilterWarning`.

With the application schema (``prepare_filters``; the loaders pass it), a value on a date
field is read as a date, a choice the field does not list warns with the valid options, and
a value of the wrong kind for the field (text on a number field, ...) warns.

Usage::

    from svc_frames.filters import Field, all_of, any_of
    flt = all_of(Field("field_3").is_("open"), Field("field_7").higher_than(10),
                 Field("field_29").is_after(datetime.date(2024, 1, 31)),
                 Field("field_28").is_any(["HVAC", "Plumbing"]))
    read_object(client, "object_1", filters=flt)
    read_object(client, "object_1", filters=[{"field": "field_3", "operator": "is blank"}])
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import UsageError
from .kinds.base import FieldSpec
from .query import (
    CHOICE,
    CURRENT,
    DATE_KINDS,
    DATE_ONLY,
    DATE_VALUE,
    MAYBE_DATE_VALUE,
    NEAR,
    NO_VALUE,
    NUMBER_KINDS,
    OPERATORS,
    PERIODS,
    RANGED,
    WITH_VALUE,
    Filters,
    FilterSet,
    Query,
    Rule,
    date_value,
    format_filter_date,
    is_hosted_date,
    needs_schema,
    read_filter_date,
    short_value,
    validate_filters,
    validate_rule,
    warn_filter,
)

__all__ = ["CHOICE", "CURRENT", "DATE_KINDS", "DATE_ONLY", "DATE_VALUE", "MAYBE_DATE_VALUE",
           "NEAR", "NO_VALUE", "NUMBER_KINDS", "OPERATORS", "PERIODS", "RANGED", "WITH_VALUE",
           "DateLike", "Field", "Filters", "FilterSet", "Query", "Rule", "all_of", "any_of",
           "encode_filters", "format_filter_date", "needs_schema", "prepare_filters",
           "prepare_query", "read_filter_date", "validate_filters", "validate_rule"]


def _kind(field: FieldSpec | None) -> str | None:
    """The kind a filter compares as: a date equation as a date, others as numbers."""
    if field is None:
        return None
    if field.kind == "equation":
        return "date_time" if field.format.get("equation_type") == "date" else "number"
    return field.kind


def _name(field: FieldSpec) -> str:
    return f"{field.key} ({field.name})" if field.name else field.key


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    try:
        float(str(value).replace(",", "").replace("$", "").strip())
    except ValueError:
        return False
    return True


def _check_kind(rule: dict[str, Any], where: str, field: FieldSpec) -> None:
    """Warnings for a value the schema says the field cannot hold (the rule matches nothing
    on the hosted service, or not what was meant)."""
    op = rule["operator"]
    kind = _kind(field)
    name = _name(field)
    value = rule.get("value")
    if op in DATE_ONLY and kind not in DATE_KINDS:
        warn_filter(f"{where}: {op!r} applies to date fields; {name} is a {kind} field")
    elif op in CHOICE and kind != "multiple_choice":
        warn_filter(f"{where}: 'is any' applies to multiple choice fields; {name} is a {kind} field")
    elif op in NEAR and kind != "address":
        warn_filter(f"{where}: 'near' applies to address fields; {name} is a {kind} field")
    if kind == "multiple_choice" and op in ("is", "is not", "is any"):
        options = [str(o) for o in field.format.get("options") or ()]
        wanted = value if isinstance(value, list) else [value]
        unknown = [v for v in wanted if str(v) not in options]
        if options and unknown:
            folded = {o.casefold(): o for o in options}
            hints = [f"{v!r} (did you mean {folded[str(v).casefold()]!r}?)"
                     if str(v).casefold() in folded else repr(v) for v in unknown]
            warn_filter(f"{where}: {name} has no option {', '.join(hints)}; its options are "
                  f"{', '.join(repr(o) for o in options)}")
    elif kind in NUMBER_KINDS and op in MAYBE_DATE_VALUE and not _is_number(value):
        warn_filter(f"{where}: {name} is a {kind} field; {short_value(value)} is not a number")
    elif kind == "boolean" and op in ("is", "is not") and not (
            isinstance(value, bool) or str(value).strip().lower()
            in ("true", "false", "yes", "no", "on", "off", "1", "0")):
        warn_filter(f"{where}: {name} is a yes/no field; {short_value(value)} is neither yes nor no")


def prepare_filters(filters: Filters | None, fields: Mapping[str, FieldSpec] | None = None,
                    tz: dt.tzinfo | None = None) -> FilterSet | None:
    """``validate_filters`` and then what needs the application: aware times converted to
    ``tz`` (the application's timezone: the loaders give ``timezone=`` or the schema's; UTC,
    with a warning, when None), values on date fields read as dates, and warnings for a
    choice the field does not list or a value of the wrong kind. ``fields``: the schema's
    fields by key (``Schema.all_fields()``); None when unknown.

    Usage: ``prepare_filters(flt, Schema.of(client.schema()).all_fields(), tz)``"""
    checked = validate_filters(filters)
    if checked is None:
        return None
    rules = []
    for i, rule in enumerate(checked["rules"]):
        where = f"filter rule {i + 1}"
        field = (fields or {}).get(rule["field"])
        if field is not None:
            _check_kind(rule, where, field)
        value = rule.get("value")
        if (rule["operator"] in MAYBE_DATE_VALUE and _kind(field) in DATE_KINDS
                and not is_hosted_date(value)):  # a number or a word is refused here, by name
            rule = {**rule, "value": date_value(value, rule["field"], rule["operator"],
                                                 where, tz, True, not isinstance(rule, Rule))}
        elif isinstance(value, dt.datetime) and value.tzinfo is not None:
            rule = {**rule, "value": date_value(value, rule["field"], rule["operator"],
                                                 where, tz, True, False)}
        rules.append(rule)
    return FilterSet(match=checked["match"], rules=rules)


def encode_filters(filters: Filters | None, fields: Mapping[str, FieldSpec] | None = None,
                   tz: dt.tzinfo | None = None) -> str | None:
    """The ``filters`` query parameter value (compact JSON), validated and in the hosted
    formats (``prepare_filters``); None when no rules."""
    return prepare_query(filters, fields, tz).text


def prepare_query(filters: Filters | Query | None,
                  fields: Mapping[str, FieldSpec] | None = None,
                  tz: dt.tzinfo | None = None) -> Query:
    """The :class:`Query` a load sends, prepared once (``prepare_filters``: dates in ``tz``,
    the application's timezone) and kept in its frames' Source; a Query is taken as it is
    (prepared already: a refresh or a cache load sends the load's bytes again).

    Usage: ``prepare_query(flt, Schema.of(app).all_fields(), ZoneInfo("America/Chicago"))``"""
    if isinstance(filters, Query):
        return filters
    return Query.encode(prepare_filters(filters, fields, tz))


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


DateLike = dt.date | str
"""A date value: ``date``, ``datetime``, ``pd.Timestamp``, an ISO string or 'MM/DD/YYYY'."""


class Field:
    """Rule builder for one field: ``Field("field_3").contains("abc")`` -> a rule dict.

    The key is checked at once, so a typo fails where it is written; so is a value (a date
    that cannot be read, ``is_any`` without a list). Date values are put in the hosted
    format at once, except aware times, which wait for the application's timezone (the
    loaders convert them before the request)."""

    def __init__(self, key: str) -> None:
        validate_rule({"field": key, "operator": "is blank"}, "Field")
        self.key = key

    def _rule(self, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
        rule: dict[str, Any] = {"field": self.key, "operator": op}
        if value is not None:
            rule["value"] = value
        rule.update(extra)
        return validate_rule(Rule(rule), f"Field({self.key!r})", hand_written=False)

    def is_(self, value: Any) -> dict[str, Any]:
        return self._rule("is", value)

    def is_not(self, value: Any) -> dict[str, Any]:
        return self._rule("is not", value)

    def is_any(self, options: Sequence[str]) -> dict[str, Any]:
        """A multiple choice holding any of ``options``: ``Field("field_28").is_any(["A"])``"""
        if isinstance(options, str):
            raise UsageError(f"Field({self.key!r}): 'is any' on {self.key} needs a list of "
                             f"options, got the text {options!r}", field=self.key)
        return self._rule("is any", options)

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

    def higher_than(self, value: float | int | str | dt.date) -> dict[str, Any]:
        return self._rule("higher than", value)

    def lower_than(self, value: float | int | str | dt.date) -> dict[str, Any]:
        return self._rule("lower than", value)

    def is_before(self, value: DateLike) -> dict[str, Any]:
        return self._rule("is before", value)

    def is_after(self, value: DateLike) -> dict[str, Any]:
        return self._rule("is after", value)

    def is_today(self) -> dict[str, Any]:
        return self._rule("is today")

    def is_before_today(self) -> dict[str, Any]:
        return self._rule("is before today")

    def is_after_today(self) -> dict[str, Any]:
        return self._rule("is after today")

    def is_today_or_before(self) -> dict[str, Any]:
        return self._rule("is today or before")

    def is_today_or_after(self) -> dict[str, Any]:
        return self._rule("is today or after")

    def is_before_current_time(self) -> dict[str, Any]:
        return self._rule("is before current time")

    def is_after_current_time(self) -> dict[str, Any]:
        return self._rule("is after current time")

    def during_previous(self, n: int, period: str) -> dict[str, Any]:
        return self._rule("is during the previous", range=n, type=period)

    def during_next(self, n: int, period: str) -> dict[str, Any]:
        return self._rule("is during the next", range=n, type=period)

    def during_current(self, period: str) -> dict[str, Any]:
        return self._rule("is during the current", type=period)

    def is_before_previous(self, n: int, period: str) -> dict[str, Any]:
        """Before the last ``n`` periods: ``Field("field_29").is_before_previous(3, "days")``"""
        return self._rule("is before the previous", range=n, type=period)

    def is_after_next(self, n: int, period: str) -> dict[str, Any]:
        """After the next ``n`` periods: ``Field("field_29").is_after_next(2, "weeks")``"""
        return self._rule("is after the next", range=n, type=period)

    def near(self, latitude: float, longitude: float, miles: float = 10) -> dict[str, Any]:
        """An address within ``miles`` of a point: ``Field("field_34").near(30.3, -97.7, 5)``"""
        return self._rule("near", f"{latitude},{longitude}", range=miles)

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
