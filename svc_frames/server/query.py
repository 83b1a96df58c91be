"""Filters and sorting of list requests -> SQL over the stored filter values.

Each record row keeps ``vals``: a JSON object with, per non-empty field, its lower-case
plain text under ``field_N`` and, for numbers and dates, a number under ``field_N#n``
(dates as wall-clock milliseconds, the hosted convention), and for addresses
``field_N#lat``/``field_N#lon``. Connections are matched through the ``links`` table.

Usage::

    where, params = build_filters(app, obj, '{"match":"or","rules":[...]}', allowed=None)
"""

from __future__ import annotations

import calendar
import datetime as dt
import json
import math
import re
from collections.abc import Collection, Mapping
from typing import Any

from .apierror import ApiError
from .render import DATE_KINDS, NUMERIC_KINDS, Piece
from .schema import AppDef, ObjectDef

OPERATORS = frozenset({
    "is", "is not", "contains", "does not contain", "starts with", "ends with", "is blank",
    "is not blank", "higher than", "lower than", "is before", "is after", "is today",
    "is during the previous", "is during the next", "is during the current", "near",
    "is any",
})
NO_VALUE = frozenset({"is blank", "is not blank", "is today", "is during the current", "is any"})
PERIOD_TYPES = ("days", "weeks", "months", "years")
_EPOCH = dt.datetime(1970, 1, 1)


def _col(key: str, suffix: str = "") -> str:
    # keys are validated as field_<n> before they get here
    return f"json_extract(r.vals, '$.\"{key}{suffix}\"')"


def wall_ms(d: dt.datetime) -> float:
    """A naive wall-clock datetime as the hosted service's 'local labelled UTC' ms."""
    return (d - _EPOCH).total_seconds() * 1000.0


def parse_date(value: Any, field: str) -> tuple[dt.datetime, bool]:
    """A filter date value -> (naive wall-clock datetime, has_time). 400 when unreadable."""
    if isinstance(value, Mapping):
        date = value.get("date")
        if not isinstance(date, str):
            raise ApiError.invalid(f"filter on {field}: date value needs a 'date'", field)
        base, _ = parse_date(date, field)
        try:
            hours = int(value.get("hours") or 0)
            minutes = int(value.get("minutes") or 0)
        except (TypeError, ValueError) as exc:
            raise ApiError.invalid(f"filter on {field}: bad hours/minutes", field) from exc
        am_pm = str(value.get("am_pm") or "").upper()
        if am_pm == "PM" and hours < 12:
            hours += 12
        if am_pm == "AM" and hours == 12:
            hours = 0
        if not (0 <= hours < 24 and 0 <= minutes < 60):
            raise ApiError.invalid(f"filter on {field}: bad time", field)
        return base.replace(hour=hours, minute=minutes), "hours" in value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return _EPOCH + dt.timedelta(milliseconds=float(value)), True
        except (OverflowError, ValueError) as exc:
            raise ApiError.invalid(f"filter on {field}: bad timestamp", field) from exc
    if not isinstance(value, str) or not value.strip():
        raise ApiError.invalid(f"filter on {field}: a date value is required", field)
    s = value.strip()
    for fmt, has_time in (("%m/%d/%Y", False), ("%m/%d/%Y %I:%M%p", True),
                          ("%m/%d/%Y %I:%M %p", True), ("%m/%d/%Y %H:%M", True),
                          ("%Y-%m-%d", False), ("%Y-%m-%dT%H:%M", True),
                          ("%Y-%m-%dT%H:%M:%S", True), ("%Y-%m-%d %H:%M", True),
                          ("%Y-%m-%d %H:%M:%S", True)):
        try:
            return dt.datetime.strptime(s, fmt), has_time
        except ValueError:
            continue
    try:
        d = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
        return d.replace(tzinfo=None), True
    except ValueError as exc:
        raise ApiError.invalid(f"filter on {field}: unreadable date {value!r}", field) from exc


def _add(d: dt.datetime, n: int, unit: str) -> dt.datetime:
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
    def __init__(self, app: AppDef, obj: ObjectDef, now: dt.datetime) -> None:
        self.app, self.obj, self.now = app, obj, now
        self.params: list[Any] = []

    def p(self, value: Any) -> str:
        self.params.append(value)
        return "?"

    def rule(self, rule: Mapping[str, Any], allowed: Collection[str] | None) -> str:
        if not isinstance(rule, Mapping):
            raise ApiError.invalid("filters: each rule must be an object with field and operator")
        if "rules" in rule and "field" not in rule:  # a nested group
            return self.group(rule, allowed)
        fkey = rule.get("field")
        op = rule.get("operator")
        if not isinstance(fkey, str) or not fkey:
            raise ApiError.invalid("filters: a rule has no 'field'")
        if not self.obj.has_field(fkey) or (allowed is not None and fkey not in allowed):
            raise ApiError.invalid(f"filters: unknown field {fkey!r}", fkey)
        if not isinstance(op, str) or op not in OPERATORS:
            raise ApiError.invalid(f"filters: unknown operator {op!r} on {fkey}", fkey)
        spec = self.obj.field(fkey)
        kind = spec.kind
        value = rule.get("value")
        if op not in NO_VALUE and not op.startswith("is during") and op != "near" \
                and value is None:
            raise ApiError.invalid(f"filters: operator {op!r} on {fkey} needs a value", fkey)
        T, N = _col(fkey), _col(fkey, "#n")
        if op == "is any":
            return "1"
        if op in ("is blank", "is not blank"):
            if kind == "connection":
                blank = ("(NOT EXISTS (SELECT 1 FROM links l WHERE l.obj = r.obj AND "
                         f"l.id = r.id AND l.field = {self.p(fkey)}))")
            else:
                blank = (f"(json_type(r.vals, '$.\"{fkey}\"') IS NULL AND "
                         f"json_type(r.vals, '$.\"{fkey}#n\"') IS NULL)")
            return blank if op == "is blank" else f"(NOT {blank})"
        if op in ("is", "is not"):
            cond = self._equals(kind, fkey, value, T, N)
            return cond if op == "is" else f"(NOT COALESCE({cond}, 0))"
        if op in ("contains", "does not contain", "starts with", "ends with"):
            if isinstance(value, (dict, list)):
                raise ApiError.invalid(f"filters: operator {op!r} on {fkey} needs a text value",
                                       fkey)
            v = _text(value)
            if op == "contains":
                return f"(instr(COALESCE({T}, ''), {self.p(v)}) > 0)"
            if op == "does not contain":
                return f"(instr(COALESCE({T}, ''), {self.p(v)}) = 0)"
            if op == "starts with":
                return f"(substr(COALESCE({T}, ''), 1, {len(v)}) = {self.p(v)})"
            return f"({len(v)} = 0 OR substr(COALESCE({T}, ''), -{len(v)}) = {self.p(v)})"
        if op in ("higher than", "lower than"):
            if kind in DATE_KINDS:
                num = wall_ms(parse_date(value, fkey)[0])
            else:
                num = _number(value, fkey)
            return f"({N} {'>' if op == 'higher than' else '<'} {self.p(num)})"
        if op in ("is before", "is after"):
            d, has_time = parse_date(value, fkey)
            if op == "is after" and not has_time:
                d += dt.timedelta(days=1)  # after a day = from the next day on
                return f"({N} >= {self.p(wall_ms(d))})"
            return f"({N} {'<' if op == 'is before' else '>'} {self.p(wall_ms(d))})"
        if op == "is today":
            start = _period_start(self.now, "days")
            return self._between(N, start, start + dt.timedelta(days=1))
        if op.startswith("is during"):
            unit = rule.get("type")
            if isinstance(unit, str) and unit + "s" in PERIOD_TYPES:
                unit = unit + "s"  # "week" as well as "weeks"
            if unit not in PERIOD_TYPES:
                raise ApiError.invalid(f"filters: {op!r} on {fkey} needs type days, weeks, "
                                       "months or years", fkey)
            if op == "is during the current":
                start = _period_start(self.now, unit)
                return self._between(N, start, _add(start, 1, unit))
            try:
                n = int(rule.get("range", value if value not in (None, "") else 1))
            except (TypeError, ValueError) as exc:
                raise ApiError.invalid(f"filters: {op!r} on {fkey} needs an integer range",
                                       fkey) from exc
            if not 0 <= n <= 100000:
                raise ApiError.invalid(f"filters: range {n} out of bounds", fkey)
            try:
                if op == "is during the previous":
                    return self._between(N, _add(self.now, -n, unit), self.now)
                return self._between(N, self.now, _add(self.now, n, unit))
            except (OverflowError, ValueError) as exc:
                raise ApiError.invalid(f"filters: range {n} out of bounds", fkey) from exc
        # near: {"value": "lat,lon" or {"latitude","longitude"}, "range": miles}
        if kind != "address":
            raise ApiError.invalid(f"filters: 'near' applies to address fields, not {fkey}", fkey)
        lat, lon = self._latlon(value, fkey)
        try:
            miles = float(rule.get("range", 10))
        except (TypeError, ValueError) as exc:
            raise ApiError.invalid(f"filters: 'near' on {fkey} needs a numeric range", fkey) \
                from exc
        if rule.get("type") in ("km", "kilometers"):
            miles /= 1.609344
        kx = math.cos(math.radians(lat))
        la, lo = _col(fkey, "#lat"), _col(fkey, "#lon")
        return (f"(({la} - {self.p(lat)}) * ({la} - {self.p(lat)}) + "
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

    def _equals(self, kind: str, fkey: str, value: Any, T: str, N: str) -> str:
        if kind == "connection":
            ids = value if isinstance(value, list) else [value]
            conds = []
            for v in ids:
                if isinstance(v, Mapping):
                    v = v.get("id")
                if not isinstance(v, str):
                    raise ApiError.invalid(f"filters: {fkey} is compared with a record id",
                                           fkey)
                conds.append("EXISTS (SELECT 1 FROM links l WHERE l.obj = r.obj AND "
                             f"l.id = r.id AND l.field = {self.p(fkey)} AND "
                             f"l.target = {self.p(v)})")
                conds.append(f"(COALESCE({T}, '') = {self.p(v.lower())})")
            return "(" + " OR ".join(conds) + ")" if conds else "0"
        if kind in NUMERIC_KINDS:
            return f"({N} = {self.p(_number(value, fkey))})"
        if kind in DATE_KINDS:
            d, has_time = parse_date(value, fkey)
            if has_time:
                return f"({N} = {self.p(wall_ms(d))})"
            return self._between(N, d, d + dt.timedelta(days=1))
        if kind == "boolean":
            v = _text(value)
            if v in ("true", "yes", "on", "1"):
                v = "yes"
            elif v in ("false", "no", "off", "0"):
                v = "no"
            return f"(COALESCE({T}, 'no') = {self.p(v)})"
        if kind == "multiple_choice" and bool((self.obj.field(fkey).format or {}).get("type")
                                              == "multi"):
            vals = value if isinstance(value, list) else [value]
            return "(" + " OR ".join(
                f"instr(COALESCE({T}, ''), {self.p('|' + _text(v) + '|')}) > 0"
                for v in vals) + ")" if vals else "0"
        if kind == "multiple_choice" and isinstance(value, list):
            return "(" + " OR ".join(f"COALESCE({T}, '') = {self.p(_text(v))}"
                                     for v in value) + ")" if value else "0"
        return f"(COALESCE({T}, '') = {self.p(_text(value))})"

    def group(self, spec: Mapping[str, Any], allowed: Collection[str] | None) -> str:
        match = str(spec.get("match") or "and").lower()
        if match not in ("and", "or", "all", "any"):
            raise ApiError.invalid(f"filters: match must be 'and' or 'or', not {match!r}")
        rules = spec.get("rules")
        if rules is None:
            rules = []
        if not isinstance(rules, list):
            raise ApiError.invalid("filters: 'rules' must be an array")
        if len(rules) > 200:
            raise ApiError.invalid("filters: at most 200 rules")
        parts = [self.rule(r, allowed) for r in rules]
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
        raise ApiError.invalid(f"filters is not valid JSON: {exc}") from exc
    if isinstance(data, list):
        return {"match": "and", "rules": data}
    if isinstance(data, dict):
        return data
    raise ApiError.invalid("filters must be a JSON object {match, rules} or an array of rules")


def build_filters(app: AppDef, obj: ObjectDef, filters: Any, now: dt.datetime,
                  allowed: Collection[str] | None = None) -> tuple[str, list[Any]]:
    """SQL condition over ``records r`` and its parameters for parsed ``filters``."""
    if filters is None:
        return "1", []
    b = _Builder(app, obj, now)
    if isinstance(filters, list):
        filters = {"match": "and", "rules": filters}
    if not isinstance(filters, Mapping):
        raise ApiError.invalid("filters must be a JSON object {match, rules} or an array")
    sql = b.group(filters, allowed)
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
    expr = _col(sort_field, "#n") if kind in NUMERIC_KINDS | DATE_KINDS else _col(sort_field)
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
