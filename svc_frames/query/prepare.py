"""Filters prepared against the application's schema, once per load: what validation
without the application (``svc_frames.query``) cannot know.

A field named by label (or a key the schema does not hold) is looked up among the target's
fields, else every field (``lookup.field_key``); an unknown or ambiguous name is a
UsageError. An operator the field's kind does not take, or a value of the wrong kind (text
on a number field, ...), is a UsageError naming the field and the operators it takes; a
choice the field does not list warns with the valid options. A value on a date field is
read as a date, and an aware time is converted to the application's timezone (naive times
are taken as app-local already), then sent in the hosted format (``MM/DD/YYYY``).
Everything happens before any request but the schema's.

Usage::

    query = prepare_query(flt, client.schema().all_fields(), ZoneInfo("America/Chicago"))
    client.get_page("object_1", filters=query)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import UsageError
from ..keys import FIELD_KEY
from ..kinds import is_date_result
from ..kinds.base import FieldSpec
from ..lookup import field_key
from . import (
    DATE_KINDS,
    MAYBE_DATE_VALUE,
    NUMBER_KINDS,
    Filters,
    FilterSet,
    Query,
    Rule,
    date_value,
    is_hosted_date,
    operators_for,
    short_value,
    validate_filters,
    warn_filter,
)


def _kind(field: FieldSpec | None) -> str | None:
    """The kind a filter compares as: a date equation as a date, others as numbers."""
    if field is None:
        return None
    if field.kind == "equation":
        return "date_time" if is_date_result(field) else "number"
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
    """UsageError (naming the field, and the operators it takes) for an operator the
    field's kind does not take or a value of the wrong kind, which the service would refuse
    or match nothing with; a warning for a choice the field does not list (the value is of
    the right kind, and the options it names may be the live application's newer ones)."""
    op = rule["operator"]
    kind = _kind(field)
    name = _name(field)
    value = rule.get("value")
    takes = operators_for(kind)
    if op not in takes:
        raise UsageError(f"{where}: {name} is a {kind} field, which does not take {op!r}; "
                         f"it takes {', '.join(repr(o) for o in takes)}", field=field.key)
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
        raise UsageError(f"{where}: {name} is a {kind} field; {short_value(value)} is not a "
                         "number", field=field.key)
    elif kind == "boolean" and op in ("is", "is not") and not (
            isinstance(value, bool) or str(value).strip().lower()
            in ("true", "false", "yes", "no", "on", "off", "1", "0")):
        raise UsageError(f"{where}: {name} is a yes/no field; {short_value(value)} is neither "
                         "yes nor no (True or False)", field=field.key)


def prepare_filters(filters: Filters | None, fields: Mapping[str, FieldSpec] | None = None,
                    tz: dt.tzinfo | None = None, *,
                    own: Sequence[FieldSpec] | None = None, where: str = "") -> FilterSet | None:
    """``validate_filters`` and then what needs the application: aware times converted to
    ``tz`` (the application's timezone: the loaders give ``timezone=`` or the schema's; UTC,
    with a warning, when None), values on date fields read as dates, a UsageError for an
    operator the field's kind does not take or a value of the wrong kind (``_check_kind``),
    and a warning for a choice the field does not list. ``fields``: the schema's
    fields by key (``Schema.all_fields()``); None when unknown. A field named by label, or
    a key the schema does not hold, is looked up (``lookup.field_key``) among ``own`` (the
    target's fields; ``where`` names it in errors), else among every field: an unknown or
    ambiguous name is a UsageError before any request but the schema's.

    Usage: ``prepare_filters(flt, client.schema().all_fields(), tz)``"""
    return prepare_checked(validate_filters(filters), fields, tz, own=own, where=where)


def prepare_checked(checked: FilterSet | None, fields: Mapping[str, FieldSpec] | None = None,
                    tz: dt.tzinfo | None = None, *,
                    own: Sequence[FieldSpec] | None = None,
                    where: str = "") -> FilterSet | None:
    """``prepare_filters`` for filters ``validate_filters`` has checked already (a load's
    options: checked once, before any request), so a load's filter is validated once.

    Usage: ``Query.encode(prepare_checked(options.filters, schema.all_fields(), tz))``"""
    if checked is None:
        return None
    rules = []
    for i, rule in enumerate(checked["rules"]):
        rule = _keyed(rule, fields, own, where)
        where_rule = f"filter rule {i + 1}"
        field = (fields or {}).get(rule["field"])
        if field is not None:
            _check_kind(rule, where_rule, field)
        value = rule.get("value")
        if (rule["operator"] in MAYBE_DATE_VALUE and _kind(field) in DATE_KINDS
                and not is_hosted_date(value)):  # a number or a word is refused here, by name
            rule = {**rule, "value": date_value(value, rule["field"], rule["operator"],
                                                 where_rule, tz, True,
                                                 not isinstance(rule, Rule))}
        elif isinstance(value, dt.datetime) and value.tzinfo is not None:
            rule = {**rule, "value": date_value(value, rule["field"], rule["operator"],
                                                 where_rule, tz, True, False)}
        rules.append(rule)
    return FilterSet(match=checked["match"], rules=rules)


def _keyed(rule: dict[str, Any], fields: Mapping[str, FieldSpec] | None,
           own: Sequence[FieldSpec] | None, where: str) -> dict[str, Any]:
    """The rule with its field as a key: a label (or a key the schema does not hold)
    looked up among the target's fields, else every field of the schema."""
    name = rule["field"]
    known = fields or {}
    if FIELD_KEY.match(name) and (not known or name in known):
        return rule
    if not known:
        return rule  # no schema: Query.encode refuses a label, the service a bad key
    pool = list(own) if own else list(known.values())
    try:
        key = field_key(pool, name, where or "the application")
    except UsageError as not_own:
        if not own:
            raise
        try:  # a view may filter on a field of another object
            key = field_key(list(known.values()), name, where or "the application")
        except UsageError:
            raise not_own from None
    out: dict[str, Any] = Rule(rule) if isinstance(rule, Rule) else dict(rule)
    out["field"] = key
    return out


def encode_filters(filters: Filters | None, fields: Mapping[str, FieldSpec] | None = None,
                   tz: dt.tzinfo | None = None) -> str | None:
    """The ``filters`` query parameter value (compact JSON), validated and in the hosted
    formats (``prepare_filters``); None when no rules."""
    return prepare_query(filters, fields, tz).text


def prepare_query(filters: Filters | Query | None,
                  fields: Mapping[str, FieldSpec] | None = None,
                  tz: dt.tzinfo | None = None, *, own: Sequence[FieldSpec] | None = None,
                  where: str = "") -> Query:
    """The :class:`Query` a load sends, prepared once (``prepare_filters``: dates in ``tz``,
    the application's timezone) and kept in its frames' Source; a Query is taken as it is
    (prepared already: a refresh or a cache load sends the load's bytes again).

    Usage: ``prepare_query(flt, Schema.of(app).all_fields(), ZoneInfo("America/Chicago"))``"""
    if isinstance(filters, Query):
        return filters
    return Query.encode(prepare_filters(filters, fields, tz, own=own, where=where))
