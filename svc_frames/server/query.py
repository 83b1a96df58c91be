"""Filters and sorting of list requests -> SQL over the stored filter values.

Each record row keeps ``vals``: a JSON object with, per non-empty field, its lower-case
plain text under ``field_N`` and, for numbers and dates, a number under ``field_N#n``
(dates as wall-clock milliseconds, the hosted convention), and for addresses
``field_N#lat``/``field_N#lon``; sorting reads it. Filters read the same values from the
narrow ``filter_values`` table (filtervalues.py: a row per record and field), so no rule
reads a record's wide row: each rule is ``r.seq IN`` (or ``NOT IN``) the records whose
row of the field meets it, through its (obj, field, text) key or its number index, or one
pass over the field's rows. Connections are matched through the ``links`` table.

As hosted (docs/hosted-behaviour.md §1.4): filter dates are ``MM/DD/YYYY``; an ISO date
(``2024-01-31``) is not refused, the rule silently matches nothing. A time after the date
(``"01/31/2024 3:15pm"`` or the ``{date, hours, minutes, am_pm}`` object) is checked, then
ignored: the hosted service does not reliably honour it, so here rules compare whole days
and no client can come to depend on a precision it will not get. Limits, each refused with 400 naming
it: groups nested deeper than ``MAX_DEPTH``, more than ``MAX_RULES`` rules, a relative
``range`` past ``MAX_RANGE`` or past the calendar, a ``near`` range past ``MAX_NEAR_MILES``,
numbers that are not finite.

Usage::

    where, params = build_filters(app, obj, '{"match":"or","rules":[...]}', allowed=None)
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import math
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..kinds import is_date_result
from .apierror import ApiError
from .clienttext import check_text
from .filtervalues import TABLE
from .render import DATE_KINDS, NUMERIC_KINDS, Piece
from .schema import AppDef, ObjectDef

DATE_OPERATORS = frozenset({
    "is before", "is after", "is today", "is during the previous", "is during the next",
    "is during the current", "is before today", "is after today", "is today or before",
    "is today or after", "is before current time", "is after current time",
    "is before the previous", "is after the next",
})
OPERATORS = frozenset({
    "is", "is not", "contains", "does not contain", "starts with", "ends with", "is blank",
    "is not blank", "higher than", "lower than", "near", "is any",
}) | DATE_OPERATORS
NO_VALUE = frozenset({
    "is blank", "is not blank", "is today", "is before today", "is after today",
    "is today or before", "is today or after", "is before current time",
    "is after current time",
})
RANGED = frozenset({"is during the previous", "is during the next", "is before the previous",
                    "is after the next"})
PERIOD_TYPES = ("days", "weeks", "months", "years")
MAX_DEPTH = 8
"""Filter groups (a rule holding ``rules``) nest at most this deep; deeper is refused (400)
before any SQL is built: SQLite's parser overflows at about 80 nested parentheses."""
MAX_RULES = 200
"""Rules in one request, all groups counted."""
MAX_RANGE = 100_000
"""The largest ``range`` of a relative date rule (``is during the previous`` ...)."""
MAX_NEAR_MILES = 25_000.0
"""The largest ``near`` distance: farther than any two points on Earth."""
MAX_FILTER_WORK = 1_000_000
"""The most a request's filters may cost: tests per record (one per rule; a multiple
choice list of several options looked for in a multi-choice field, one per option)
times the object's records. Over it: 400 naming both, before any SQL runs (the measured
cost is in docs/local-service.md); a filter of one test is always taken. A test costs
at most one pass over the field's narrow rows (filtervalues.py: at most one per record)
or one probe of a set per record: a list of connection ids, or of options of a
single-choice field, is one test however long (a set; ids of records and equal texts are
found through indexes), and no test reads a record's own (wide) row. 1,000,000: ten
passes over 100,000 records answered in about a second on a loaded 2-core machine."""
KnownIds = Callable[[str, list[str]], set[str]]
"""``(object key, ids) -> the ids that are records of that object``."""
_EPOCH = dt.datetime(1970, 1, 1)
_DAY_MS = 86_400_000
# the hosted service reads filter dates as MM/DD/YYYY; a time part after the date is read
# (so a malformed one is refused) but never honoured: the hosted service does not reliably
# honour it, so the emulator compares whole days and no client can come to rely on it
_US_DATE = re.compile(r"\s*(\d{1,2})/(\d{1,2})/(\d{4})(?:\s+(.*?))?\s*\Z")
_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap])?\.?m?\.?\Z", re.I)
# an ISO date (2024-01-31, with or without a time): not refused by the hosted service, it
# silently matches nothing, so here too
_ISO_DATE = re.compile(r"\s*[+-]?\d{4,}-\d{1,2}-\d{1,2}")


def _col(key: str, suffix: str = "", alias: str | None = "r") -> str:
    # keys are validated as field_<n> before they get here
    column = f"{alias}.vals" if alias else "vals"
    return f"json_extract({column}, '$.\"{key}{suffix}\"')"


def numeric_value_sql(key: str, alias: str | None = "r") -> str:
    """The SQL of a field's numeric filter/sort value (dates: wall-clock ms), as filters and
    sorting write it: store.py indexes it by this very expression, so SQLite uses the
    index for them. Usage: ``numeric_value_sql("field_46", alias=None)``"""
    return _col(key, "#n", alias)


def _short(value: Any) -> str:
    """A value for an error message, cut short (a 300-digit number says nothing more)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def wall_ms(d: dt.datetime) -> float:
    """A naive wall-clock datetime as the hosted service's 'local labelled UTC' ms."""
    return (d - _EPOCH).total_seconds() * 1000.0


def day_ms(d: dt.date) -> int:
    """Midnight of a day as wall-clock ms (whole-day arithmetic stays in ms, so the last
    day of the calendar has a next day too)."""
    return (d - _EPOCH.date()).days * _DAY_MS


def _time_member(value: Any, what: str, top: int, field: str) -> int:
    """An ``hours``/``minutes`` member: a whole number from 0 to ``top`` (text or number)."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ApiError.invalid(f"filter on {field}: bad {what} {_short(value)}", field)
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        n = int(value.strip())
    elif isinstance(value, int):
        n = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        n = int(value)
    else:
        raise ApiError.invalid(f"filter on {field}: bad {what} {_short(value)}", field)
    if not 0 <= n <= top:
        raise ApiError.invalid(f"filter on {field}: {what} {_short(value)} out of range "
                               f"(0-{top})", field)
    return n


def parse_date(value: Any, field: str) -> dt.date | None:
    """A filter date value -> its day; None for an ISO date (matches nothing, as hosted).

    Accepted: ``"MM/DD/YYYY"``, optionally followed by a time (``"3:15pm"``, ``"15:15"``),
    or ``{"date": "MM/DD/YYYY", "hours", "minutes", "am_pm"}``. The time is checked and
    then ignored: filters compare whole days. 400 naming the value when unreadable."""
    if isinstance(value, Mapping):
        date = value.get("date")
        if not isinstance(date, str):
            raise ApiError.invalid(f"filter on {field}: date value needs a 'date'", field)
        day = parse_date(date, field)
        _time_member(value.get("hours"), "hours", 12 if value.get("am_pm") else 23, field)
        _time_member(value.get("minutes"), "minutes", 59, field)
        am_pm = value.get("am_pm")
        if am_pm not in (None, "") and str(am_pm).upper() not in ("AM", "PM"):
            raise ApiError.invalid(f"filter on {field}: bad am_pm {_short(am_pm)}", field)
        return day
    if not isinstance(value, str) or not value.strip():
        raise ApiError.invalid(f"filter on {field}: a date value is text 'MM/DD/YYYY', got "
                               f"{_short(value)}", field)
    if _ISO_DATE.match(value):
        return None
    m = _US_DATE.match(value)
    if m:
        time_part = m.group(4)
        tm = _TIME.match(time_part) if time_part else None
        if time_part and (tm is None or int(tm.group(2)) > 59
                          or int(tm.group(1)) > (12 if tm.group(3) else 23)):
            raise ApiError.invalid(f"filter on {field}: unreadable time in date "
                                   f"{_short(value)}", field)
        try:
            return dt.date(int(m.group(3)), int(m.group(1)), int(m.group(2)))
        except ValueError:
            pass
    raise ApiError.invalid(f"filter on {field}: unreadable date {_short(value)} (expected "
                           "MM/DD/YYYY)", field)


def _range(rule: Mapping[str, Any], op: str, fkey: str) -> int:
    """The ``range`` of a relative date rule: a whole number from 0 to MAX_RANGE."""
    raw = rule.get("range")
    if raw is None or raw == "":
        raw = rule.get("value")
    if raw is None or raw == "":
        raw = 1 if op.startswith("is during") else None
    n: int | None = None
    if isinstance(raw, bool):
        n = None
    elif isinstance(raw, int):
        n = raw
    elif isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        n = int(raw) if abs(raw) <= 10 * MAX_RANGE else MAX_RANGE + 1
    elif isinstance(raw, str) and raw.strip().isascii() and raw.strip().isdigit():
        n = int(raw.strip()) if len(raw.strip()) <= 12 else MAX_RANGE + 1
    if n is None:
        raise ApiError.invalid(f"filters: {op!r} on {fkey} needs a whole number 'range', "
                               f"got {_short(raw)}", fkey)
    if not 0 <= n <= MAX_RANGE:
        raise ApiError.invalid(f"filters: {op!r} on {fkey}: range {_short(raw)} out of "
                               f"bounds (0-{MAX_RANGE})", fkey)
    return n


def _add(d: dt.datetime, n: int, unit: str) -> dt.datetime:
    """``d`` moved by ``n`` days/weeks/months/years; OverflowError past the calendar."""
    if unit == "days":
        return d + dt.timedelta(days=n)
    if unit == "weeks":
        return d + dt.timedelta(weeks=n)
    months = d.month - 1 + (n if unit == "months" else 12 * n)
    year = d.year + months // 12
    if not 1 <= year <= 9999:
        raise OverflowError
    month = months % 12 + 1
    day = min(d.day, calendar.monthrange(year, month)[1])
    return d.replace(year=year, month=month, day=day)


def _period_start(d: dt.datetime, unit: str) -> dt.datetime:
    day = d.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "weeks":
        return day - dt.timedelta(days=(day.weekday() + 1) % 7)  # weeks start on Sunday
    if unit == "months":
        return day.replace(day=1)
    if unit == "years":
        return day.replace(month=1, day=1)
    return day


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool):
        raise ApiError.invalid(f"filter on {field}: a number is required", field)
    try:
        v = float(str(value).replace(",", "").replace("$", "").strip())
    except (TypeError, ValueError) as exc:
        raise ApiError.invalid(f"filter on {field}: {value!r} is not a number", field) from exc
    if not math.isfinite(v):
        raise ApiError.invalid(f"filter on {field}: {value!r} is not a number", field)
    return v


def _text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value).lower()
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).strip().lower()


class _Builder:
    def __init__(self, app: AppDef, obj: ObjectDef, now: dt.datetime,
                 known_ids: KnownIds | None) -> None:
        self.app, self.obj, self.now = app, obj, now
        self.known_ids: KnownIds = known_ids or (lambda obj_key, ids: set())
        self.params: list[Any] = []
        self.count = 0  # rules seen, all groups counted
        self.work = 0  # tests per record the filter costs (a rule, or a value of a list
        #                looked for one by one)

    def p(self, value: Any) -> str:
        self.params.append(value)
        return "?"

    def rule(self, rule: Mapping[str, Any], allowed: Collection[str] | None,
             depth: int) -> str:
        if not isinstance(rule, Mapping):
            raise ApiError.invalid("filters: each rule must be an object with field and operator")
        if "rules" in rule and "field" not in rule:  # a nested group
            return self.group(rule, allowed, depth + 1)
        self.count += 1
        self.work += 1
        if self.count > MAX_RULES:
            raise ApiError.invalid(f"filters: at most {MAX_RULES} rules in all")
        fkey = rule.get("field")
        op = rule.get("operator")
        if not isinstance(fkey, str) or not fkey:
            raise ApiError.invalid("filters: a rule has no 'field'")
        if not self.obj.has_field(fkey) or (allowed is not None and fkey not in allowed):
            raise ApiError.invalid(f"filters: unknown field {_short(fkey)}", fkey)
        if not isinstance(op, str) or op not in OPERATORS:
            raise ApiError.invalid(f"filters: unknown operator {_short(op)} on {fkey}", fkey)
        spec = self.obj.field(fkey)
        # a date equation's result compares as a date (its number: the date's ms)
        kind = "date_time" if is_date_result(spec) else spec.kind
        value = rule.get("value")
        if op not in NO_VALUE and op not in RANGED and op != "is during the current" \
                and op != "near" and value is None:
            raise ApiError.invalid(f"filters: operator {op!r} on {fkey} needs a value", fkey)
        if op in DATE_OPERATORS and kind not in DATE_KINDS:
            raise ApiError.invalid(f"filters: {op!r} applies to date fields, not {fkey} "
                                   f"({kind})", fkey)
        # every condition on the field reads its narrow rows (filtervalues.py), never the
        # record's own row: v.text ('' where a row has none) and v.num
        T, N = "v.text", "v.num"
        mark = len(self.params)

        def narrow(pred: str, blank: bool = False) -> str:
            return self._narrow(fkey, pred, mark, blank)

        if op == "is any":
            if kind != "multiple_choice":
                raise ApiError.invalid(f"filters: 'is any' applies to multiple choice fields, "
                                       f"not {fkey} ({kind})", fkey)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ApiError.invalid(f"filters: 'is any' on {fkey} needs a list of options, "
                                       f"got {_short(value)}", fkey)
            return self._equals(kind, fkey, value, T, N)
        if op in ("is blank", "is not blank"):
            if kind == "connection":
                linked = self._linked(fkey, None)
                return f"(NOT {linked})" if op == "is blank" else linked
            if op == "is blank":
                return narrow(f"({T} = '' AND {N} IS NULL)", blank=True)
            return narrow(f"({T} != '' OR {N} IS NOT NULL)")
        if op in ("is", "is not"):
            cond = self._equals(kind, fkey, value, T, N)
            if cond == "0" and kind in DATE_KINDS:
                return "0"  # an ISO date: matches nothing, whichever the operator
            return cond if op == "is" else f"(NOT COALESCE({cond}, 0))"
        if op in ("contains", "does not contain", "starts with", "ends with"):
            if isinstance(value, (dict, list)):
                raise ApiError.invalid(f"filters: operator {op!r} on {fkey} needs a text value",
                                       fkey)
            v = _text(value)
            if op == "contains":
                return narrow(f"(instr({T}, {self.p(v)}) > 0)", blank=v == "")
            if op == "does not contain":
                return narrow(f"(instr({T}, {self.p(v)}) = 0)", blank=v != "")
            if op == "starts with":
                return narrow(f"(substr({T}, 1, {len(v)}) = {self.p(v)})", blank=v == "")
            return narrow(f"({len(v)} = 0 OR substr({T}, -{len(v)}) = {self.p(v)})",
                          blank=v == "")
        if op in ("higher than", "lower than") and kind not in DATE_KINDS:
            num = _number(value, fkey)
            return narrow(f"({N} {'>' if op == 'higher than' else '<'} {self.p(num)})")
        if op in ("is before", "lower than", "is after", "higher than"):
            day = parse_date(value, fkey)
            if day is None:
                return "0"
            if op in ("is before", "lower than"):
                return narrow(f"({N} < {self.p(day_ms(day))})")
            return narrow(f"({N} >= {self.p(day_ms(day) + _DAY_MS)})")  # after: the next on
        today = day_ms(self.now.date())
        if op == "is today":
            return narrow(f"({N} >= {self.p(today)} AND {N} < {self.p(today + _DAY_MS)})")
        if op in ("is before today", "is today or after"):
            return narrow(f"({N} {'<' if op == 'is before today' else '>='} {self.p(today)})")
        if op in ("is after today", "is today or before"):
            return narrow(f"({N} {'>=' if op == 'is after today' else '<'} "
                          f"{self.p(today + _DAY_MS)})")
        if op in ("is before current time", "is after current time"):
            now = wall_ms(self.now)
            return narrow(f"({N} {'<' if op == 'is before current time' else '>'} "
                          f"{self.p(now)})")
        if op in RANGED or op == "is during the current":
            unit = rule.get("type")
            if isinstance(unit, str) and unit + "s" in PERIOD_TYPES:
                unit = unit + "s"  # "week" as well as "weeks"
            if unit not in PERIOD_TYPES:
                raise ApiError.invalid(f"filters: {op!r} on {fkey} needs type days, weeks, "
                                       f"months or years, got {_short(unit)}", fkey)
            if op == "is during the current":
                start = _period_start(self.now, unit)
                return narrow(self._between(N, start, _add(start, 1, unit)))
            n = _range(rule, op, fkey)
            try:
                if op == "is during the previous":
                    return narrow(self._between(N, _add(self.now, -n, unit), self.now))
                if op == "is during the next":
                    return narrow(self._between(N, self.now, _add(self.now, n, unit)))
                if op == "is before the previous":
                    return narrow(f"({N} < {self.p(wall_ms(_add(self.now, -n, unit)))})")
                return narrow(f"({N} > {self.p(wall_ms(_add(self.now, n, unit)))})")
            except (OverflowError, ValueError) as exc:
                raise ApiError.invalid(f"filters: {op!r} on {fkey}: range {n} {unit} goes "
                                       "past the calendar", fkey) from exc
        # near: {"value": "lat,lon" or {"latitude","longitude"}, "range": miles}
        if kind != "address":
            raise ApiError.invalid(f"filters: 'near' applies to address fields, not {fkey}", fkey)
        lat, lon = self._latlon(value, fkey)
        raw_range = rule.get("range", 10)
        try:
            miles = float(raw_range)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ApiError.invalid(f"filters: 'near' on {fkey} needs a numeric range, got "
                                   f"{_short(raw_range)}", fkey) from exc
        if isinstance(raw_range, bool) or not 0 <= miles <= MAX_NEAR_MILES:
            raise ApiError.invalid(f"filters: 'near' on {fkey}: range {_short(raw_range)} out "
                                   f"of bounds (0-{MAX_NEAR_MILES:.0f} miles)", fkey)
        if rule.get("type") in ("km", "kilometers"):
            miles /= 1.609344
        kx = math.cos(math.radians(lat))
        la, lo = "v.lat", "v.lon"
        return narrow(f"(({la} - {self.p(lat)}) * ({la} - {self.p(lat)}) + "
                f"(({lo} - {self.p(lon)}) * {kx!r}) * (({lo} - {self.p(lon)}) * {kx!r})"
                      f" <= {self.p((miles / 69.0) ** 2)})")

    def _latlon(self, value: Any, fkey: str) -> tuple[float, float]:
        try:
            if isinstance(value, Mapping):
                lat, lon = float(value["latitude"]), float(value["longitude"])
            else:
                a, b = str(value).split(",")
                lat, lon = float(a), float(b)
        except (KeyError, TypeError, ValueError) as exc:
            raise ApiError.invalid(f"filters: 'near' on {fkey} needs 'lat,lon'", fkey) from exc
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise ApiError.invalid(f"filters: 'near' on {fkey}: coordinates out of range", fkey)
        return lat, lon

    def _between(self, N: str, a: dt.datetime, b: dt.datetime) -> str:
        return f"({N} >= {self.p(wall_ms(a))} AND {N} < {self.p(wall_ms(b))})"

    def _narrow(self, fkey: str, pred: str, mark: int, blank: bool = False) -> str:
        """Records whose narrow row of ``fkey`` (filtervalues.py) meets ``pred`` (over
        ``v.text``, ``v.num``, ``v.lat``, ``v.lon``; its parameters added from ``mark``
        on). ``blank``: a record with no row (blank in the field, text '') meets it too,
        so the records whose row fails it are left out instead."""
        self.params[mark:mark] = [self.obj.key, fkey]
        rows = f"SELECT v.seq FROM {TABLE} v WHERE v.obj = ? AND v.field = ? AND "
        if blank:
            return f"(r.seq NOT IN ({rows}NOT {pred}))"
        return f"(r.seq IN ({rows}{pred}))"

    def _linked(self, fkey: str, targets: list[str] | None) -> str:
        """Records connected through ``fkey`` (to one of ``targets``, or to any record when
        None), found from the links' and the records' indexes alone."""
        cond = (f"r.seq IN (SELECT k.seq FROM links l JOIN records k ON k.obj = l.obj AND "
                f"k.id = l.id WHERE l.field = {self.p(fkey)} AND +l.obj = {self.p(self.obj.key)}")
        if targets is None:
            return f"({cond}))"
        return f"({cond} AND l.target IN {self.values(targets)}))"

    def _equals(self, kind: str, fkey: str, value: Any, T: str, N: str) -> str:
        mark = len(self.params)

        def narrow(pred: str, blank: bool = False) -> str:
            return self._narrow(fkey, pred, mark, blank)

        if kind == "connection":
            ids = []
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, Mapping):
                    v = v.get("id")
                if not isinstance(v, str):
                    raise ApiError.invalid(f"filters: {fkey} is compared with a record id",
                                           fkey)
                ids.append(v)
            if not ids:
                return "0"
            # however many ids, one set (one node of the expression tree): the records
            # linked to them are found through the links' (field, target) index and the
            # records' (obj, id) one, reading no record; a value that is no record of
            # the connected object is compared with the shown text instead, through the
            # narrow rows' (obj, field, text) index
            target = str((self.obj.field(fkey).relationship or {}).get("object") or "")
            known = self.known_ids(target, ids) if target else set()
            cond = self._linked(fkey, ids)
            shown = [v.lower() for v in ids if v not in known]
            if shown:
                at = len(self.params)
                text = self._narrow(fkey, f"{T} IN {self.values(shown)}", at, "" in shown)
                cond = f"({cond} OR {text})"
            return cond
        if kind in NUMERIC_KINDS:
            return narrow(f"({N} = {self.p(_number(value, fkey))})")
        if kind in DATE_KINDS:
            day = parse_date(value, fkey)
            if day is None:
                return "0"
            return narrow(f"({N} >= {self.p(day_ms(day))} AND "
                          f"{N} < {self.p(day_ms(day) + _DAY_MS)})")
        if kind == "boolean":
            v = _text(value)
            if v in ("true", "yes", "on", "1"):
                v = "yes"
            elif v in ("false", "no", "off", "0"):
                v = "no"
            return narrow(f"(COALESCE(NULLIF({T}, ''), 'no') = {self.p(v)})", blank=v == "no")
        if kind == "multiple_choice" and bool((self.obj.field(fkey).format or {}).get("type")
                                              == "multi"):
            vals = value if isinstance(value, list) else [value]
            if not vals:
                return "0"
            # each option is looked for in the record's "|a|b|" text: a cost per value
            self.work += len(vals) - 1
            options = self.p(json.dumps(["|" + _text(v) + "|" for v in vals]))
            return narrow(f"(EXISTS (SELECT 1 FROM json_each({options}) o "
                          f"WHERE instr({T}, o.value) > 0))")
        if kind == "multiple_choice" and isinstance(value, list):
            if not value:
                return "0"
            texts = [_text(v) for v in value]
            return narrow(f"({T} IN {self.values(texts)})", blank="" in texts)
        text = _text(value)
        return narrow(f"({T} = {self.p(text)})", blank=text == "")

    def values(self, items: list[str]) -> str:
        """A set of values as one parameter (``IN`` this): a list of any length is one
        node of the expression tree, and SQLite probes it as a set."""
        return f"(SELECT value FROM json_each({self.p(json.dumps(items))}))"

    def group(self, spec: Mapping[str, Any], allowed: Collection[str] | None,
              depth: int = 1) -> str:
        if depth > MAX_DEPTH:
            raise ApiError.invalid(f"filters: groups nested more than {MAX_DEPTH} deep")
        match = spec.get("match") or "and"
        if not isinstance(match, str) or match.lower() not in ("and", "or", "all", "any"):
            raise ApiError.invalid(f"filters: match must be 'and' or 'or', not {_short(match)}")
        match = match.lower()
        rules = spec.get("rules")
        if rules is None:
            rules = []
        if not isinstance(rules, list):
            raise ApiError.invalid("filters: 'rules' must be an array")
        if len(rules) > MAX_RULES:
            raise ApiError.invalid(f"filters: at most {MAX_RULES} rules in all")
        parts = [self.rule(r, allowed, depth) for r in rules]
        if not parts:
            return "1"
        joiner = " OR " if match in ("or", "any") else " AND "
        return "(" + joiner.join(parts) + ")"


def parse_filters_param(text: str | None) -> Any:
    """The ``filters`` query parameter -> JSON (400 naming the problem when malformed)."""
    if text is None or text.strip() == "":
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ApiError.invalid(f"filters is not valid JSON: {exc}", "filters") from exc
    check_text(data, "filters", numbers=False)  # the rules name a bad number's field
    if isinstance(data, list):
        return {"match": "and", "rules": data}
    if isinstance(data, dict):
        return data
    raise ApiError.invalid("filters must be a JSON object {match, rules} or an array of rules")


def build_filters(app: AppDef, obj: ObjectDef, filters: Any, now: dt.datetime,
                  allowed: Collection[str] | None = None, records: int = 0,
                  known_ids: KnownIds | None = None) -> tuple[str, list[Any]]:
    """SQL condition over ``records r`` and its parameters for parsed ``filters``; 400
    when their cost over ``records`` records would pass ``MAX_FILTER_WORK``.
    ``known_ids(object_key, ids)``: which ids are records (``Store.known_ids``), so that a
    connection rule on record ids reads no record."""
    if filters is None:
        return "1", []
    b = _Builder(app, obj, now, known_ids)
    if isinstance(filters, list):
        filters = {"match": "and", "rules": filters}
    if not isinstance(filters, Mapping):
        raise ApiError.invalid("filters must be a JSON object {match, rules} or an array")
    sql = b.group(filters, allowed)
    if b.work > 1 and b.work * records > MAX_FILTER_WORK:
        raise ApiError.invalid(
            f"filters: {b.work} tests per record over the {records} records of {obj.key} "
            f"pass the limit of {MAX_FILTER_WORK:,} (tests x records); use fewer rules or "
            "options, or split the request", "filters")
    return sql, b.params


def sort_sql(obj: ObjectDef, sort_field: str | None, sort_order: str | None,
             allowed: Collection[str] | None = None) -> str:
    """ORDER BY clause for ``sort_field``/``sort_order`` (400 for an unknown field/order)."""
    order = (sort_order or "asc").lower()
    if order not in ("asc", "desc"):
        raise ApiError.invalid(f"sort_order must be 'asc' or 'desc', not {sort_order!r}")
    if not sort_field:
        return "r.seq ASC" if order == "asc" else "r.seq DESC"
    if not re.fullmatch(r"field_\d+", sort_field) or not obj.has_field(sort_field) or \
            (allowed is not None and sort_field not in allowed):
        raise ApiError.invalid(f"sort_field: unknown field {sort_field!r}", sort_field)
    kind = obj.field(sort_field).kind
    expr = numeric_value_sql(sort_field) if kind in NUMERIC_KINDS | DATE_KINDS else _col(sort_field)
    return f"{expr} {order.upper()}, r.seq ASC"


def rule_matches(obj: ObjectDef, pieces: Mapping[str, Piece], rule: Mapping[str, Any]) -> bool:
    """Evaluate one simple rule against a record in memory (form record-rule conditions)."""
    fkey = rule.get("field")
    op = rule.get("operator")
    if not isinstance(fkey, str) or fkey not in pieces:
        return False
    p = pieces[fkey]
    value = rule.get("value")
    if op == "is blank":
        return not p.text and p.number is None
    if op == "is not blank":
        return bool(p.text) or p.number is not None
    if op in ("higher than", "lower than"):
        try:
            v = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return False
        return p.number is not None and (p.number > v if op == "higher than" else p.number < v)
    text = _text(value)
    if p.number is not None and obj.field(fkey).kind in NUMERIC_KINDS:
        try:
            eq = p.number == float(text)
        except ValueError:
            eq = False
    elif obj.field(fkey).kind == "boolean":
        eq = p.text == ("yes" if text in ("true", "yes", "on", "1") else "no")
    elif p.text.startswith("|"):
        eq = f"|{text}|" in p.text
    else:
        eq = p.text == text
    if op == "is":
        return eq
    if op == "is not":
        return not eq
    if op == "contains":
        return text in p.text
    if op == "does not contain":
        return text not in p.text
    return False
