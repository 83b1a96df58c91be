"""Filters validated and encoded in the hosted formats, below the client: the rule checks
every form of filter goes through, the hosted date format, and :class:`Query`, the
immutable ``filters`` parameter a load prepares once and its refresh, cache check and
export send again byte for byte.

``filters`` is URL-encoded JSON (docs/hosted-behaviour.md §1.2): ``{"match": "and"|"or",
"rules": [{"field": "field_3", "operator": "is", "value": "x"}]}``; a bare list of rules
means "and". What needs the application (its timezone, its fields' kinds) is
``query.prepare``, above; the builder (``Field``, ``all_of``) is ``svc_frames.filters``.

Usage::

    q = Query.of([{"field": "field_3", "operator": "is", "value": "x"}])
    q.text      # '{"match":"and","rules":[{"field":"field_3","operator":"is","value":"x"}]}'
    client.get_page("object_1", filters=q)
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import FilterWarning, UsageError, warn_user
from ..keys import FIELD_KEY
from ..kinds import unencodable_text

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
OPERATOR_ORDER = (
    "is", "is not", "contains", "does not contain", "starts with", "ends with", "is blank",
    "is not blank", "higher than", "lower than", "is before", "is after", "is today",
    "is during the previous", "is during the next", "is during the current",
    "is before today", "is after today", "is today or before", "is today or after",
    "is before current time", "is after current time", "is before the previous",
    "is after the next", "near", "is any")
"""Every operator, in the order of docs/hosted-behaviour.md §1.3 (how messages list them)."""


def operators_for(kind: str | None) -> list[str]:
    """The operators a field of ``kind`` takes, in ``OPERATOR_ORDER``: the date operators
    on date kinds only, ``is any`` on multiple choice, ``near`` on addresses (the service
    refuses the others); every operator when the kind is unknown (None).

    Usage: ``"near" in operators_for("address")``"""
    if kind is None:
        return list(OPERATOR_ORDER)
    barred = ((DATE_ONLY if kind not in DATE_KINDS else frozenset())
              | (CHOICE if kind != "multiple_choice" else frozenset())
              | (NEAR if kind != "address" else frozenset()))
    return [op for op in OPERATOR_ORDER if op not in barred]


_US_DATE = re.compile(r"\s*(\d{1,2})/(\d{1,2})/(\d{4})"
                      r"(?:\s+(\d{1,2}):(\d{2})\s*(?:([ap])\.?m\.?)?)?\s*\Z", re.I)
_ISO = re.compile(r"\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
                  r"(?:Z|[+-]\d{2}(?::?\d{2})?)?\s*\Z", re.I)


class Composable:
    """``a & b`` (every condition must hold) and ``a | b`` (at least one) over rules and
    rule sets; the service takes one flat list with one ``match``, so ``&`` and ``|`` are
    not mixed in one filter."""

    def _parts(self, match: str) -> list[Any]:
        if isinstance(self, FilterSet):
            if self.get("match") == match or len(self.get("rules") or ()) <= 1:
                return list(self.get("rules") or ())
            raise UsageError("a filter is one list of conditions that all hold (&) or of "
                             "which one holds (|): the service takes no groups inside, so "
                             "& and | cannot be mixed in one filter")
        return [self]

    def _join(self, other: Any, match: str) -> FilterSet:
        if not isinstance(other, (Composable, Mapping)):
            return NotImplemented  # type: ignore[no-any-return]
        theirs = other._parts(match) if isinstance(other, Composable) else [other]
        return FilterSet(match=match, rules=self._parts(match) + theirs)

    def __and__(self, other: Any) -> FilterSet:
        return self._join(other, "and")

    def __or__(self, other: Any) -> FilterSet:
        return self._join(other, "or")


class FilterSet(Composable, dict):  # type: ignore[type-arg]
    """A validated ``{"match", "rules"}`` dict (what the builder returns)."""


class Rule(Composable, dict):  # type: ignore[type-arg]
    """A rule made by the builder (``Field``): its text values were written for the field,
    so the schema check converts an ISO date in it without a warning."""


Filters = FilterSet | Mapping[str, Any] | Sequence[Mapping[str, Any]] | str
"""A filter dict, a bare list of rules, a JSON string of either, or a builder result."""

def short_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def warn_filter(message: str) -> None:
    warn_user(message, FilterWarning)


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
        raise UsageError(f"cannot read {short_value(value)} as a date: {exc}") from None
    text = f"{wall.month:02d}/{wall.day:02d}/{wall.year:04d}"
    if with_time is False or not isinstance(wall, dt.datetime) or (
            with_time is None and not _has_time(wall)):
        return text
    hour = wall.hour % 12 or 12
    return f"{text} {hour}:{wall.minute:02d}{'am' if wall.hour < 12 else 'pm'}"


def is_hosted_date(value: Any) -> bool:
    """Whether ``value`` is a readable date in the hosted form (``MM/DD/YYYY[ h:mma]``)."""
    if not isinstance(value, str) or _US_DATE.match(value) is None:
        return False
    try:
        read_filter_date(value)
    except ValueError:
        return False
    return True


def date_value(value: Any, field: str, op: str, where: str, tz: dt.tzinfo | None,
                tz_known: bool, hand_written: bool, with_time: bool | None = None) -> Any:
    """A rule's date value in the hosted format; an aware time stays as it is until the
    application's timezone is known (``tz_known``). UsageError when unreadable."""
    if isinstance(value, Mapping) and "date" in value:
        # the hosted date object ({date, hours, minutes, am_pm}): its date in the hosted form
        return {**value, "date": date_value(value["date"], field, op, where, tz, True,
                                             hand_written, with_time=False)}
    if isinstance(value, str) and is_hosted_date(value):
        # already in the hosted form: only normalized (01/05/2024), nothing to warn about
        return format_filter_date(value, with_time=with_time)
    try:
        parsed = read_filter_date(value)
    except ValueError:
        raise UsageError(f"{where}: {op!r} on {field}: cannot read {short_value(value)} as a "
                         "date (give a date, datetime, pd.Timestamp, 'YYYY-MM-DD' or "
                         "'MM/DD/YYYY')", field=field) from None
    if isinstance(value, str) and hand_written:
        warn_filter(f"{where}: {op!r} on {field}: the ISO date {value!r} is sent in the hosted "
              "format MM/DD/YYYY (an ISO date there silently matches nothing)")
    aware = isinstance(parsed, dt.datetime) and parsed.tzinfo is not None
    if aware and not tz_known:
        return parsed if isinstance(value, str) else value
    if aware and tz is None:
        warn_filter(f"{where}: {op!r} on {field}: the application's timezone is unknown; the aware "
              f"time {short_value(value)} is taken in UTC (pass timezone=... to the loader)")
    text = format_filter_date(parsed, tz, with_time)
    if " " in text:
        warn_filter(f"{where}: {op!r} on {field} {text!r}: the hosted service does not reliably "
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
    if not isinstance(field, str) or not field.strip():
        raise UsageError(f"{where}: a filter names its field by key ('field_N') or label, "
                         f"got {field!r}", field=field if isinstance(field, str) else None)
    if unencodable_text(field) is not None:
        raise UsageError(f"{where}: the field name {field!r} holds a lone surrogate, which "
                         "no request can carry: fix the text", field=field)
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
                             f"(text), got {short_value(value)}", field=field)
        out["value"] = list(value)
    if op in DATE_VALUE or (op in MAYBE_DATE_VALUE and (
            isinstance(value, dt.date) or (isinstance(value, Mapping) and "date" in value))):
        out["value"] = date_value(value, field, op, where, tz, tz_known, hand_written)
    if op in RANGED:
        rng = rule.get("range")
        if (isinstance(rng, bool) or not isinstance(rng, (int, str))
                or not (str(rng).isascii() and str(rng).isdigit())):
            raise UsageError(f"{where}: operator {op!r} on {field} needs a whole number "
                             f"'range' (e.g. 3), got {short_value(rng)}", field=field)
    if op in RANGED or op in CURRENT:
        if rule.get("type") not in PERIODS:
            raise UsageError(f"{where}: operator {op!r} on {field} needs 'type' in "
                             f"{sorted(PERIODS)}, got {rule.get('type')!r}", field=field)
    if op in NEAR:
        rng = rule.get("range", 10)
        if isinstance(rng, bool) or not isinstance(rng, (int, float, str)):
            raise UsageError(f"{where}: 'near' on {field} needs a numeric 'range' (miles), got "
                             f"{short_value(rng)}", field=field)
        try:
            miles = float(rng)
        except ValueError:
            miles = math.nan
        if not (math.isfinite(miles) and miles >= 0):
            raise UsageError(f"{where}: 'near' on {field} needs a finite 'range' >= 0 (miles), "
                             f"got {short_value(rng)}", field=field)
    return out


def _parse(filters: Filters) -> tuple[str, Sequence[Any]]:
    if isinstance(filters, str):
        try:
            filters = json.loads(filters)
        except ValueError as exc:
            raise UsageError(f"filters is not valid JSON: {exc}") from None
    if isinstance(filters, Mapping) and "field" in filters and "operator" in filters:
        return "and", [filters]  # one condition
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
    """Whether ``prepare_filters`` would use the schema: any rule does (its field named by
    key or label must be one of the target's, a value is checked against its kind)."""
    return bool(filters) and bool(filters["rules"])  # type: ignore[index]


FILTER_WORK = 1_000_000
"""The most a request's filter may cost, in rules (tests) times the records of the object
it lists: the local service refuses more with a 400 (``server.query.MAX_FILTER_WORK``,
docs/local-service.md), and an "or" of many rules over a large object is the slow kind of
request on any service. Requests that list values one rule each (keyset gap checks,
write_back's re-reads and lookups) hold at most ``rules_within`` of them."""


def rules_within(records: int, most: int) -> int:
    """Rules one filtered request over an object of ``records`` records may hold: at most
    ``most``, and ``FILTER_WORK`` over the records (at least one: a single rule is always
    taken).

    Usage: ``rules_within(50_000, 40)`` is ``20``"""
    return max(1, min(most, FILTER_WORK // max(1, records)))


@dataclass(frozen=True)
class Query:
    """Filters as sent: the ``filters`` query parameter (compact JSON, dates in the hosted
    format) or None for no rules. Made once per load (``query.prepare.prepare_query`` with the
    application's timezone, or :meth:`of` without it) and kept in the frames' Source, so
    every later request for the same listing sends the same bytes.

    Usage: ``Query.of(all_of(Field("field_3").is_("x"))).text``"""

    text: str | None = None

    @classmethod
    def of(cls, filters: Filters | Query | None) -> Query:
        """Validated and encoded without the application: an aware time is put in UTC, with a
        FilterWarning (``query.prepare.prepare_query`` knows the application's timezone).
        UsageError before any request. Usage: ``Query.of([rule])``"""
        if isinstance(filters, Query):
            return filters
        return cls.of_checked(validate_filters(filters))

    @classmethod
    def of_checked(cls, checked: FilterSet | None) -> Query:
        """:meth:`of` for filters ``validate_filters`` has checked already (a listing's
        ``LoadOptions``), so they are not checked twice. Usage:
        ``Query.of_checked(LoadOptions.of(filters=flt).filters)``"""
        if checked is not None and any(_aware(r.get("value")) for r in checked["rules"]):
            checked = FilterSet(match=checked["match"], rules=[
                {**r, "value": date_value(r["value"], r["field"], r["operator"],
                                          f"filter rule {i + 1}", None, True, False)}
                if _aware(r.get("value")) else r for i, r in enumerate(checked["rules"])])
        return cls.encode(checked)

    @classmethod
    def encode(cls, checked: Mapping[str, Any] | None) -> Query:
        """The query of filters checked already (``validate_filters``/``prepare_filters``:
        their values are JSON). Usage: ``Query.encode(prepare_filters(flt, fields, tz))``"""
        if not checked or not checked.get("rules"):
            return cls(None)
        named = [r["field"] for r in checked["rules"] if not FIELD_KEY.match(str(r["field"]))]
        if named:  # a label reaches the wire only resolved (query.prepare)
            raise UsageError(f"filter field {named[0]!r} is named by label, which needs the "
                             "application's schema to find its key, and it is not known here "
                             "(the service does not expose it): name the field by key "
                             "('field_N')", field=str(named[0]))
        try:
            text = json.dumps(dict(checked), separators=(",", ":"), ensure_ascii=False)
        except TypeError as exc:
            raise UsageError(f"filters hold a value that is not JSON: {exc}") from None
        return cls(text)

    @property
    def filters(self) -> FilterSet | None:
        """The ``{"match", "rules"}`` sent (a fresh copy), None for no rules."""
        if self.text is None:
            return None
        data = json.loads(self.text)
        return FilterSet(match=data.get("match", "and"), rules=list(data.get("rules", [])))

    def also(self, extra: Sequence[Mapping[str, Any]]) -> list[Query]:
        """This query AND ``extra`` (rules in the hosted formats already): one query for an
        "and" (or no) filter; for an "or" filter one per rule, since (A or B) and X ==
        (A and X) or (B and X) and the service's filters are flat. Without ``extra`` an
        "and" query comes back as it is, byte for byte.

        Usage: ``query.also([{"field": "field_24", "operator": "higher than", "value": 9}])``"""
        base = self.filters
        added = [validate_rule(r, f"rule {i + 1}", hand_written=False)
                 for i, r in enumerate(extra)]
        if base is None or not base["rules"]:
            return [Query.encode({"match": "and", "rules": added})]
        if base["match"] == "and" or len(base["rules"]) == 1:
            if not added:
                return [self]
            return [Query.encode({"match": "and", "rules": [*base["rules"], *added]})]
        return [Query.encode({"match": "and", "rules": [rule, *added]})
                for rule in base["rules"]]

    def __bool__(self) -> bool:
        return self.text is not None


def _aware(value: Any) -> bool:
    return isinstance(value, dt.datetime) and value.tzinfo is not None
