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
import inspect
import json
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import FilterWarning, UsageError
from .keys import FIELD_KEY
from .kinds import unencodable_text
from .kinds.base import FieldSpec

NO_VALUE = frozenset({"is blank", "is not blank", "is today", "is before today",
                      "is after today", "is today or before", "is today or after",
                      "is before current time", "is after current time"})
WITH_VALUE = frozenset({"is", "is not", "contains", "does not contain", "starts with",
                        "ends with", "higher than", "lower than", "is before", "is after"})
CHOICE = frozenset({"is any"})
RANGED = frozenset({"is during the previous", "is during the next", "is before the previous",
                    "is after the next"})
CURRENT = frozenset({"is during the current"})
NEAR = frozenset({"near"})
OPERATORS = NO_VALUE | WITH_VALUE | CHOICE | RANGED | CURRENT | NEAR
DATE_VALUE = frozenset({"is before", "is after"})
"""Operators whose value is always a date."""
MAYBE_DATE_VALUE = frozenset({"is", "is not", "higher than", "lower than"})
"""Operators whose value is a date on a date field (known from the schema or the value)."""
DATE_ONLY = DATE_VALUE | RANGED | CURRENT | (NO_VALUE - {"is blank", "is not blank"})
"""Operators that apply to date fields only."""
PERIODS = frozenset({"days", "weeks", "months", "years"})
"""A field key (``field_N``): the one rule for filter fields, sort fields and record keys."""
DATE_KINDS = frozenset({"date_time", "timer"})
NUMBER_KINDS = frozenset({"number", "currency", "rating", "auto_increment", "sum", "count",
                          "average", "min", "max"})

_US_DATE = re.compile(r"\s*(\d{1,2})/(\d{1,2})/(\d{4})"
                      r"(?:\s+(\d{1,2}):(\d{2})\s*(?:([ap])\.?m\.?)?)?\s*\Z", re.I)
_ISO = re.compile(r"\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
                  r"(?:Z|[+-]\d{2}(?::?\d{2})?)?\s*\Z", re.I)


class FilterSet(dict):  # type: ignore[type-arg]
    """A validated ``{"match", "rules"}`` dict (what the builder returns)."""


class Rule(dict):  # type: ignore[type-arg]
    """A rule made by the builder (``Field``): its text values were written for the field,
    so the schema check converts an ISO date in it without a warning."""


Filters = FilterSet | Mapping[str, Any] | Sequence[Mapping[str, Any]] | str
"""A filter dict, a bare list of rules, a JSON string of either, or a builder result."""

def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _warn(message: str) -> None:
    # shown at the first caller outside svc_frames (the user's line), however deep the call
    frame, level = inspect.currentframe(), 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(
            "svc_frames"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, FilterWarning, stacklevel=level)


# ---- dates ----------------------------------------------------------------------------------
def read_filter_date(value: Any) -> dt.date | dt.datetime:
    """A filter date value -> ``date`` (no time) or ``datetime`` (naive or aware).

    Takes ``date``, ``datetime``, ``pd.Timestamp``, an ISO string (``2024-01-31``,
    ``2024-01-31T15:30:00+01:00``) or the hosted form (``01/31/2024``, ``01/31/2024
    3:30pm``). ValueError when it is none of them (NaT included)."""
    if isinstance(value, dt.datetime):
        if value != value:  # NaT
            raise ValueError("NaT is not a date")
        return value
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        raise ValueError(f"a {type(value).__name__} is not a date")
    if _ISO.match(value):
        text = value.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return dt.date.fromisoformat(text)
        return dt.datetime.fromisoformat(re.sub(r"z\Z", "+00:00", text, flags=re.I))
    m = _US_DATE.match(value)
    if m is None:
        raise ValueError(f"{value!r} is neither MM/DD/YYYY nor an ISO date")
    day = dt.date(int(m.group(3)), int(m.group(1)), int(m.group(2)))
    if m.group(4) is None:
        return day
    hour, minute, am_pm = int(m.group(4)), int(m.group(5)), m.group(6)
    if minute > 59 or not (1 <= hour <= 12 if am_pm else hour <= 23):
        raise ValueError(f"{value!r} has no valid time")
    if am_pm:
        hour = hour % 12 + (12 if am_pm.lower() == "p" else 0)
    return dt.datetime.combine(day, dt.time(hour, minute))


def _wall(value: dt.date | dt.datetime, tz: dt.tzinfo | None) -> dt.date | dt.datetime:
    """An aware time converted to the app's wall clock (naive); other values as they are."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(tz or dt.timezone.utc).replace(tzinfo=None)
    return value


def _has_time(value: dt.date | dt.datetime) -> bool:
    return isinstance(value, dt.datetime) and (value.hour, value.minute) != (0, 0)


def format_filter_date(value: Any, tz: dt.tzinfo | None = None,
                       with_time: bool | None = None) -> str:
    """A date for a filter value, in the hosted format: ``"01/31/2024"``, or with the time
    ``"01/31/2024 3:15pm"`` (minutes; seconds are dropped).

    ``value``: ``date``, ``datetime``, ``pd.Timestamp``, an ISO string or the hosted form.
    An aware time is converted to ``tz`` (the application's timezone; UTC when None); a
    naive one is taken as app-local already. ``with_time``: None keeps a time when the value
    has one other than midnight, False sends the date alone, True always the time. The
    hosted service does not reliably honour the time: to filter from an instant on, send its
    date (``with_time=False``) with ``is after`` the day before, and refine in pandas.
    UsageError when the value cannot be read as a date.

    Usage: ``format_filter_date(pd.Timestamp("2024-01-31 20:00", tz="UTC"), ZoneInfo(
    "America/Chicago"))`` -> ``"01/31/2024 2:00pm"``"""
    try:
        wall = _wall(read_filter_date(value), tz)
    except ValueError as exc:
        raise UsageError(f"cannot read {_short(value)} as a date: {exc}") from None
    text = f"{wall.month:02d}/{wall.day:02d}/{wall.year:04d}"
    if with_time is False or not isinstance(wall, dt.datetime) or (
            with_time is None and not _has_time(wall)):
        return text
    hour = wall.hour % 12 or 12
    return f"{text} {hour}:{wall.minute:02d}{'am' if wall.hour < 12 else 'pm'}"


def _is_hosted(value: Any) -> bool:
    """Whether ``value`` is a readable date in the hosted form (``MM/DD/YYYY[ h:mma]``)."""
    if not isinstance(value, str) or _US_DATE.match(value) is None:
        return False
    try:
        read_filter_date(value)
    except ValueError:
        return False
    return True


def _date_value(value: Any, field: str, op: str, where: str, tz: dt.tzinfo | None,
                tz_known: bool, hand_written: bool, with_time: bool | None = None) -> Any:
    """A rule's date value in the hosted format; an aware time stays as it is until the
    application's timezone is known (``tz_known``). UsageError when unreadable."""
    if isinstance(value, Mapping) and "date" in value:
        # the hosted date object ({date, hours, minutes, am_pm}): its date in the hosted form
        return {**value, "date": _date_value(value["date"], field, op, where, tz, True,
                                             hand_written, with_time=False)}
    if isinstance(value, str) and _is_hosted(value):
        # already in the hosted form: only normalized (01/05/2024), nothing to warn about
        return format_filter_date(value, with_time=with_time)
    try:
        parsed = read_filter_date(value)
    except ValueError:
        raise UsageError(f"{where}: {op!r} on {field}: cannot read {_short(value)} as a "
                         "date (give a date, datetime, pd.Timestamp, 'YYYY-MM-DD' or "
                         "'MM/DD/YYYY')", field=field) from None
    if isinstance(value, str) and hand_written:
        _warn(f"{where}: {op!r} on {field}: the ISO date {value!r} is sent in the hosted "
              "format MM/DD/YYYY (an ISO date there silently matches nothing)")
    aware = isinstance(parsed, dt.datetime) and parsed.tzinfo is not None
    if aware and not tz_known:
        return parsed if isinstance(value, str) else value
    if aware and tz is None:
        _warn(f"{where}: {op!r} on {field}: the application's timezone is unknown; the aware "
              f"time {_short(value)} is taken in UTC (pass timezone=... to the loader)")
    text = format_filter_date(parsed, tz, with_time)
    if " " in text:
        _warn(f"{where}: {op!r} on {field} {text!r}: the hosted service does not reliably "
              "honour the time of a filter date (it may compare the day alone, as the local "
              "service does); filter by day and refine in pandas for an exact cut")
    return text


# ---- validation -----------------------------------------------------------------------------
def validate_rule(rule: Any, where: str = "rule", *, hand_written: bool = True,
                  tz: dt.tzinfo | None = None, tz_known: bool = False) -> dict[str, Any]:
    """Check one rule; returns a plain dict copy with its date value in the hosted format.

    UsageError names what is wrong. ``hand_written``: an ISO string warns when converted
    (the builder converts without a word). ``tz``/``tz_known``: the application's timezone
    for aware times, once known (before that they stay aware)."""
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
    out: dict[str, Any] = Rule(rule) if isinstance(rule, Rule) else dict(rule)
    value = rule.get("value")
    if op in CHOICE and isinstance(value, (tuple, set, frozenset)):
        value = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    if op in WITH_VALUE or op in NEAR or op in CHOICE:
        if "value" not in rule or value is None:
            raise UsageError(f"{where}: operator {op!r} on {field} needs a value", field=field)
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{where}: {op!r} on {field}: {value!r} is not a finite number",
                             field=field)
        if not isinstance(value, (str, int, float, bool, list, dict, dt.date)):
            raise UsageError(f"{where}: value for {field} must be JSON (str, number, bool, "
                             f"list) or a date, got {type(value).__name__}", field=field)
        bad = unencodable_text(value)
        if bad is not None:
            raise UsageError(f"{where}: {op!r} on {field}: the value {bad!r} holds a lone "
                             "surrogate, which no request can carry (text is sent as "
                             "UTF-8): fix the text", field=field)
    if op in CHOICE:
        if (not isinstance(value, list) or not value
                or not all(isinstance(v, str) for v in value)):
            raise UsageError(f"{where}: 'is any' on {field} needs a non-empty list of options "
                             f"(text), got {_short(value)}", field=field)
        out["value"] = list(value)
    if op in DATE_VALUE or (op in MAYBE_DATE_VALUE and (
            isinstance(value, dt.date) or (isinstance(value, Mapping) and "date" in value))):
        out["value"] = _date_value(value, field, op, where, tz, tz_known, hand_written)
    if op in RANGED:
        rng = rule.get("range")
        if (isinstance(rng, bool) or not isinstance(rng, (int, str))
                or not (str(rng).isascii() and str(rng).isdigit())):
            raise UsageError(f"{where}: operator {op!r} on {field} needs a whole number "
                             f"'range' (e.g. 3), got {_short(rng)}", field=field)
    if op in RANGED or op in CURRENT:
        if rule.get("type") not in PERIODS:
            raise UsageError(f"{where}: operator {op!r} on {field} needs 'type' in "
                             f"{sorted(PERIODS)}, got {rule.get('type')!r}", field=field)
    if op in NEAR:
        rng = rule.get("range", 10)
        if isinstance(rng, bool) or not isinstance(rng, (int, float, str)):
            raise UsageError(f"{where}: 'near' on {field} needs a numeric 'range' (miles), got "
                             f"{_short(rng)}", field=field)
        try:
            miles = float(rng)
        except ValueError:
            miles = math.nan
        if not (math.isfinite(miles) and miles >= 0):
            raise UsageError(f"{where}: 'near' on {field} needs a finite 'range' >= 0 (miles), "
                             f"got {_short(rng)}", field=field)
    return out


def _parse(filters: Filters) -> tuple[str, Sequence[Any]]:
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
        return str(match), rules
    if isinstance(filters, Sequence) and not isinstance(filters, (bytes, bytearray)):
        return "and", filters
    raise UsageError(f"filters must be a dict, a list of rules or JSON text, got "
                     f"{type(filters).__name__}")


def validate_filters(filters: Filters | None) -> FilterSet | None:
    """Normalize any accepted filter form to ``{"match", "rules"}``; None stays None.

    Dates are put in the hosted format (aware times wait for ``prepare_filters``, which
    knows the application's timezone). UsageError before any request.

    Usage: ``validate_filters([{"field": "field_1", "operator": "is", "value": 1}])``"""
    if filters is None:
        return None
    match, rules = _parse(filters)
    # builder rules hold no ISO text any more, so only hand-written ones can warn here
    checked = [validate_rule(r, f"filter rule {i + 1}") for i, r in enumerate(rules)]
    return FilterSet(match=match, rules=checked)


def needs_schema(filters: FilterSet | None) -> bool:
    """Whether ``prepare_filters`` would use the schema: some rule has a value to check."""
    return bool(filters) and any("value" in r for r in filters["rules"])  # type: ignore[index]


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
        _warn(f"{where}: {op!r} applies to date fields; {name} is a {kind} field")
    elif op in CHOICE and kind != "multiple_choice":
        _warn(f"{where}: 'is any' applies to multiple choice fields; {name} is a {kind} field")
    elif op in NEAR and kind != "address":
        _warn(f"{where}: 'near' applies to address fields; {name} is a {kind} field")
    if kind == "multiple_choice" and op in ("is", "is not", "is any"):
        options = [str(o) for o in field.format.get("options") or ()]
        wanted = value if isinstance(value, list) else [value]
        unknown = [v for v in wanted if str(v) not in options]
        if options and unknown:
            folded = {o.casefold(): o for o in options}
            hints = [f"{v!r} (did you mean {folded[str(v).casefold()]!r}?)"
                     if str(v).casefold() in folded else repr(v) for v in unknown]
            _warn(f"{where}: {name} has no option {', '.join(hints)}; its options are "
                  f"{', '.join(repr(o) for o in options)}")
    elif kind in NUMBER_KINDS and op in MAYBE_DATE_VALUE and not _is_number(value):
        _warn(f"{where}: {name} is a {kind} field; {_short(value)} is not a number")
    elif kind == "boolean" and op in ("is", "is not") and not (
            isinstance(value, bool) or str(value).strip().lower()
            in ("true", "false", "yes", "no", "on", "off", "1", "0")):
        _warn(f"{where}: {name} is a yes/no field; {_short(value)} is neither yes nor no")


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
                and not _is_hosted(value)):  # a number or a word is refused here, by name
            rule = {**rule, "value": _date_value(value, rule["field"], rule["operator"],
                                                 where, tz, True, not isinstance(rule, Rule))}
        elif isinstance(value, dt.datetime) and value.tzinfo is not None:
            rule = {**rule, "value": _date_value(value, rule["field"], rule["operator"],
                                                 where, tz, True, False)}
        rules.append(rule)
    return FilterSet(match=checked["match"], rules=rules)


def encode_filters(filters: Filters | None, fields: Mapping[str, FieldSpec] | None = None,
                   tz: dt.tzinfo | None = None) -> str | None:
    """The ``filters`` query parameter value (compact JSON), validated and in the hosted
    formats (``prepare_filters``); None when no rules."""
    checked = prepare_filters(filters, fields, tz)
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
