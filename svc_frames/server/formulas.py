"""Text formulas and equations as the local service computes them.

A text formula (kind ``concatenation``) is text with field references (``{field_N}``, or
``{field_C.field_M}`` for a field of the records connection ``field_C`` holds) and calls
of the hosted service's text functions (``left({field_7}, 2) two three``); an equation
(kind ``equation``) is arithmetic over references and the hosted service's numeric and
date functions. docs/local-service.md lists every function with its arguments and the
choices made where the hosted documentation is silent.

Arguments are split on commas; the last argument takes the rest of the call's text
(``formatDate({field_13}, MMMM D, YYYY)``), and quotes around an argument are dropped.
Neither ever raises: a call the service cannot evaluate (an unknown name is plain text, but
too few arguments, a count that is not a number, an invalid regular expression, a
date it cannot read) gives an empty text in a text formula and no value (blank) for an
equation.

Usage::

    text_formula("left({field_7}, 2) two", lambda key, sub: Ref("hello"))  # "he two"
    equation("{field_1} * 2", lambda key, sub: Ref("3", 3.0))               # 6.0
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
import random
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Ref", "RefLookup", "TEXT_FUNCTIONS", "NUMERIC_FUNCTIONS", "equation",
           "number_to_words", "text_formula"]

_REF = re.compile(r"\{(field_\d+)(?:\.(field_\d+))?\}")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_MAX_TEXT = 100_000  # longer results are cut: a formula never makes an unbounded value


@dataclass(frozen=True)
class Ref:
    """The value of one field reference: its display text, and its number or wall-clock
    date when it has one (dates as the hosted service labels them: local time, naive)."""

    text: str
    number: float | None = None
    date: dt.datetime | None = None


RefLookup = Callable[[str, "str | None"], Ref]
"""``lookup(field_key, connected_field_key_or_None) -> Ref``."""


# ---- dates ----------------------------------------------------------------------------------
_DATE_TEXT = ("%m/%d/%Y %H:%M", "%m/%d/%Y %I:%M%p", "%m/%d/%Y", "%Y-%m-%dT%H:%M:%S",
              "%Y-%m-%d %H:%M", "%Y-%m-%d")


def _date_of(arg: Ref) -> dt.datetime:
    """The date of an argument: a date field's own value, else its text read as a date
    (a range: its start)."""
    if arg.date is not None:
        return arg.date
    text = arg.text.replace("\u00a0", " ").split(" to ")[0].strip()
    text = re.sub(r"\s*(am|pm)$", lambda m: m.group(1).upper(), text, flags=re.I)
    for fmt in _DATE_TEXT:
        try:
            return dt.datetime.strptime(text[:25], fmt)
        except ValueError:
            continue
    raise ValueError(f"not a date: {arg.text!r}")


_MOMENT = re.compile(r"\[[^\]]*\]|YYYY|YY|MMMM|MMM|MM|Mo|M|Do|DDDD|DD|D|dddd|ddd|dd|d|"
                     r"HH|H|hh|h|mm|m|ss|s|A|a|X|x|E|e|Q|ww|w|WW|W")


def format_date(d: dt.datetime, fmt: str) -> str:
    """``d`` in a moment.js-style format (the hosted service's date library):
    ``formatDate({field_13}, MMMM Do YYYY, h:mm a)`` -> ``July 3rd 2018, 10:26 am``."""
    def ordinal(n: int) -> str:
        suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"{n}{suffix}"

    def token(m: re.Match[str]) -> str:
        t = m.group(0)
        if t.startswith("["):
            return t[1:-1]
        h12 = d.hour % 12 or 12
        table: dict[str, Callable[[], str]] = {
            "YYYY": lambda: f"{d.year:04d}", "YY": lambda: f"{d.year % 100:02d}",
            "MMMM": lambda: _MONTHS[d.month - 1], "MMM": lambda: _MONTHS[d.month - 1][:3],
            "MM": lambda: f"{d.month:02d}", "Mo": lambda: ordinal(d.month),
            "M": lambda: str(d.month), "Do": lambda: ordinal(d.day),
            "DDDD": lambda: f"{d.timetuple().tm_yday:03d}", "DD": lambda: f"{d.day:02d}",
            "D": lambda: str(d.day), "dddd": lambda: _DAYS[d.weekday()],
            "ddd": lambda: _DAYS[d.weekday()][:3], "dd": lambda: _DAYS[d.weekday()][:2],
            "d": lambda: str((d.weekday() + 1) % 7), "E": lambda: str(d.isoweekday()),
            "e": lambda: str((d.weekday() + 1) % 7),
            "HH": lambda: f"{d.hour:02d}", "H": lambda: str(d.hour),
            "hh": lambda: f"{h12:02d}", "h": lambda: str(h12),
            "mm": lambda: f"{d.minute:02d}", "m": lambda: str(d.minute),
            "ss": lambda: f"{d.second:02d}", "s": lambda: str(d.second),
            "A": lambda: "AM" if d.hour < 12 else "PM", "a": lambda: "am" if d.hour < 12 else "pm",
            "X": lambda: str(int(d.replace(tzinfo=dt.timezone.utc).timestamp())),
            "x": lambda: str(int(d.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)),
            "Q": lambda: str((d.month - 1) // 3 + 1),
            "WW": lambda: f"{d.isocalendar()[1]:02d}", "W": lambda: str(d.isocalendar()[1]),
            "ww": lambda: f"{_us_week(d):02d}", "w": lambda: str(_us_week(d)),
        }
        return table[t]()

    return _MOMENT.sub(token, fmt)


def _us_week(d: dt.datetime) -> int:
    """Week of the year, weeks starting on Sunday, week 1 holding January 1st (moment's
    ``w`` in the en-US locale)."""
    jan1 = dt.date(d.year, 1, 1)
    start = jan1 - dt.timedelta(days=(jan1.weekday() + 1) % 7)
    return (d.date() - start).days // 7 + 1


# ---- numbers in words -----------------------------------------------------------------------
_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ["", "thousand", "million", "billion", "trillion", "quadrillion"]


def number_to_words(n: int) -> str:
    """``123`` -> ``one hundred twenty three`` (whole numbers; no "and", no hyphens)."""
    if n == 0:
        return "zero"
    if n < 0:
        return "minus " + number_to_words(-n)
    if n >= 1000 ** len(_SCALES):
        raise ValueError("number too large")
    words: list[str] = []
    for scale in range(len(_SCALES) - 1, -1, -1):
        chunk = (n // 1000 ** scale) % 1000
        if not chunk:
            continue
        hundreds, rest = divmod(chunk, 100)
        if hundreds:
            words += [_UNITS[hundreds], "hundred"]
        if rest >= 20:
            words.append(_TENS[rest // 10])
            if rest % 10:
                words.append(_UNITS[rest % 10])
        elif rest:
            words.append(_UNITS[rest])
        if _SCALES[scale]:
            words.append(_SCALES[scale])
    return " ".join(words)


# ---- text functions -------------------------------------------------------------------------
def _count(arg: Ref) -> int:
    try:
        v = float(arg.text.strip())
    except ValueError as exc:
        raise ValueError(f"not a number: {arg.text!r}") from exc
    if not math.isfinite(v) or abs(v) > 1e9:
        raise ValueError("count out of range")
    return int(v)


def _regex(pattern: str) -> re.Pattern[str]:
    p = pattern.strip()
    m = re.fullmatch(r"/(.*)/([gimsuy]*)", p, re.S)  # a JavaScript literal: /\d+/g
    flags = 0
    if m:
        p = m.group(1)
        flags = re.I if "i" in m.group(2) else 0
    if len(p) > 1000:
        raise ValueError("pattern too long")
    try:
        return re.compile(p, flags)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}") from exc


def _js_replacement(repl: str) -> str:
    """A JavaScript replacement (``$1``, ``$&``) as Python's ``re`` takes it."""
    out = repl.replace("\\", "\\\\")
    out = re.sub(r"\$(\d{1,2})", r"\\g<\1>", out)
    return out.replace("$&", r"\g<0>")


def _left(s: str, n: int) -> str:
    return s[:n] if n >= 0 else _right(s, -n)


def _right(s: str, n: int) -> str:
    return (s[-n:] if n else "") if n >= 0 else _left(s, -n)


def _capitalize(s: str) -> str:
    return s[:1].upper() + s[1:].lower()


def _random_text(n: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(random.choice(alphabet) for _ in range(max(0, min(n, 1000))))


def _words(arg: Ref) -> str:
    try:
        v = float(arg.text.replace(",", "").strip())
    except ValueError as exc:
        raise ValueError(f"not a number: {arg.text!r}") from exc
    if not math.isfinite(v):
        raise ValueError("not a finite number")
    return number_to_words(int(v))


# name -> (arity, function of the evaluated arguments)
TEXT_FUNCTIONS: dict[str, tuple[int, Callable[[Sequence[Ref]], str]]] = {
    "left": (2, lambda a: _left(a[0].text, _count(a[1]))),
    "right": (2, lambda a: _right(a[0].text, _count(a[1]))),
    "mid": (3, lambda a: a[0].text[max(0, _count(a[1])):][:max(0, _count(a[2]))]),
    "length": (1, lambda a: str(len(a[0].text))),
    "lower": (1, lambda a: a[0].text.lower()),
    "upper": (1, lambda a: a[0].text.upper()),
    "capitalize": (1, lambda a: _capitalize(a[0].text)),
    "trim": (1, lambda a: a[0].text.strip()),
    "trimLeft": (1, lambda a: a[0].text.lstrip()),
    "trimRight": (1, lambda a: a[0].text.rstrip()),
    "replace": (3, lambda a: a[0].text.replace(a[1].text, a[2].text) if a[1].text
                else a[0].text),
    "regexReplace": (3, lambda a: _regex(a[1].text).sub(_js_replacement(a[2].text),
                                                         a[0].text)),
    "extractRegex": (2, lambda a: (lambda m: m.group(0) if m else "")(
        _regex(a[1].text).search(a[0].text))),
    "random": (1, lambda a: _random_text(_count(a[0]))),
    "numberToWords": (1, lambda a: _words(a[0])),
    "getDateDayOfWeekName": (1, lambda a: _DAYS[_date_of(a[0]).weekday()]),
    "getDateMonthOfYearName": (1, lambda a: _MONTHS[_date_of(a[0]).month - 1]),
    "formatDate": (2, lambda a: format_date(_date_of(a[0]), a[1].text)),
}
_CALL = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(TEXT_FUNCTIONS, key=len,
                                                            reverse=True)) + r")\(")
_MAX_DEPTH = 20


def _unquote(s: str) -> str:
    t = s.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    return t


def _closing(template: str, start: int) -> tuple[list[str], int] | None:
    """The arguments of the call whose ``(`` is just before ``start`` (split on commas at
    depth 0, outside references and quotes) and the index after its ``)``; None when the
    call is not closed."""
    args: list[str] = []
    depth = 0
    quote = ""
    begin = i = start
    while i < len(template):
        c = template[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'" and template[begin:i].strip() == "":
            quote = c
        elif c == "{":
            j = template.find("}", i)
            i = j if j > 0 else i
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                args.append(template[begin:i])
                return args, i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append(template[begin:i])
            begin = i + 1
        i += 1
    return None


def text_formula(template: str, lookup: RefLookup) -> str:
    """The text of a text formula: references replaced by their display text, function
    calls by their result (an unknown name stays text; a call that cannot be evaluated
    gives an empty text)."""
    return _render(template, lookup, 0).text[:_MAX_TEXT]


def _render(template: str, lookup: RefLookup, depth: int) -> Ref:
    """A piece of formula: its text, and the reference's own value when the piece is
    exactly one reference (so date functions read a date field's date, not its text)."""
    whole = _REF.fullmatch(template.strip())
    if whole and depth:
        return lookup(whole.group(1), whole.group(2))
    out: list[str] = []
    pos = 0
    while pos < len(template):
        m = _CALL.search(template, pos)
        ref = _REF.search(template, pos)
        if ref and (m is None or ref.start() < m.start()):
            out.append(template[pos:ref.start()])
            out.append(lookup(ref.group(1), ref.group(2)).text)
            pos = ref.end()
            continue
        if m is None:
            out.append(template[pos:])
            break
        out.append(template[pos:m.start()])
        closed = _closing(template, m.end())
        if closed is None or depth >= _MAX_DEPTH:
            out.append(template[m.start():m.end()])
            pos = m.end()
            continue
        args, pos = closed
        arity, fn = TEXT_FUNCTIONS[m.group(1)]
        try:
            if len(args) > arity:  # the last argument takes the rest: "MMMM D, YYYY"
                args = [*args[:arity - 1], ",".join(args[arity - 1:])]
            if len(args) != arity:
                raise ValueError(f"{m.group(1)} takes {arity} arguments")
            values = [_render(_unquote(a), lookup, depth + 1) for a in args]
            out.append(fn(values))
        except (ValueError, IndexError, OverflowError, re.error, RecursionError):
            out.append("")
    return Ref("".join(out))


# ---- equations ------------------------------------------------------------------------------
_DAY_MS = 86_400_000.0
_UNIT_MS = {"seconds": 1000.0, "minutes": 60_000.0, "hours": 3_600_000.0, "days": _DAY_MS,
            "weeks": 7 * _DAY_MS, "months": 30.4375 * _DAY_MS, "years": 365.25 * _DAY_MS}


def _median(*xs: float) -> float:
    return float(statistics.median(xs))


def _round(x: float, places: float = 0) -> float:
    p = int(places)
    if abs(p) > 15:
        raise ValueError("precision out of range")
    q = 10.0 ** p
    return math.floor(x * q + 0.5) / q  # half up, as JavaScript's Math.round


def _factorial(x: float) -> float:
    if x < 0 or x > 170 or not float(x).is_integer():
        raise ValueError("factorial of a whole number up to 170")
    return float(math.factorial(int(x)))


def _gcd(*xs: float) -> float:
    return float(math.gcd(*(int(x) for x in xs)))


def _log(x: float, base: float = math.e) -> float:
    return math.log(x, base)


def _random_between(a: float = 0.0, b: float = 1.0) -> float:
    return random.uniform(a, b)


def _random_int(a: float, b: float) -> float:
    lo, hi = int(math.ceil(a)), int(math.floor(b))
    return float(random.randrange(lo, hi)) if hi > lo else float(lo)


def _date_fn(part: Callable[[dt.datetime], int]) -> Callable[..., float]:
    def fn(value: Any) -> float:
        if not isinstance(value, dt.datetime):
            raise ValueError("not a date")
        return float(part(value))
    return fn


NUMERIC_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs, "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x), "ceil": math.ceil,
    "cos": math.cos, "sin": math.sin, "tan": math.tan, "acos": math.acos, "asin": math.asin,
    "atan": math.atan, "exp": math.exp, "factorial": _factorial, "floor": math.floor,
    "gcd": _gcd, "log": _log, "log10": math.log10, "ln": math.log,
    "max": max, "min": min, "mean": lambda *xs: sum(xs) / len(xs), "median": _median,
    "pow": lambda a, b: _pow(a, b), "random": _random_between, "randomInt": _random_int,
    "round": _round, "sqrt": math.sqrt, "sign": lambda x: float((x > 0) - (x < 0)),
    "getDateYear": _date_fn(lambda d: d.year),
    "getDateMonthOfYear": _date_fn(lambda d: d.month),
    "getDateDayOfMonth": _date_fn(lambda d: d.day),
    "getDateDayOfWeek": _date_fn(lambda d: (d.weekday() + 1) % 7),
    "getDateWeekOfYear": _date_fn(_us_week),
    "getDateHours": _date_fn(lambda d: d.hour),
    "getDateMinutes": _date_fn(lambda d: d.minute),
}


def _pow(a: float, b: float) -> float:
    if abs(b) > 1000:
        raise ValueError("exponent too large")
    return math.pow(float(a), float(b))


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Mod: operator.mod,
}
_ELAPSED = frozenset({"seconds", "minutes", "hours"})  # time passing, not calendar steps


@dataclass(frozen=True)
class _Units:
    """The equation's ``date_type`` (a number added to a date, a span between dates), the
    application's timezone its wall-clock dates live in (None: wall clock only) and its
    wall-clock time now (``currentTime()``; None: no clock, the call is blank)."""

    name: str
    ms: float
    zone: dt.tzinfo | None
    now: dt.datetime | None = None

    def span(self, a: dt.datetime, b: dt.datetime) -> float:
        """``a - b`` in these units: hours and less as time elapsed between the instants
        (a daylight-saving change counts), days and more on the wall clock."""
        if self.name in _ELAPSED and self.zone is not None:
            delta = _instant(a, self.zone) - _instant(b, self.zone)
        else:
            delta = a - b
        return delta.total_seconds() * 1000 / self.ms

    def move(self, date: dt.datetime, n: float) -> dt.datetime:
        """``date`` moved by ``n`` units: hours and less as time elapsed (the wall clock
        jumps with a daylight-saving change), whole months and years as calendar steps
        (the day of the month kept, or the month's last), the rest on the wall clock."""
        if self.name in _ELAPSED and self.zone is not None:
            moved = _instant(date, self.zone) + dt.timedelta(milliseconds=n * self.ms)
            return moved.astimezone(self.zone).replace(tzinfo=None)
        if self.name in ("months", "years") and float(n).is_integer():
            months = int(n) * (12 if self.name == "years" else 1)
            return _add_months(date, months)
        return date + dt.timedelta(milliseconds=n * self.ms)


def _instant(wall: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """A wall-clock time's instant in ``zone`` (a repeated hour: its first reading)."""
    return wall.replace(tzinfo=zone, fold=0).astimezone(dt.timezone.utc)


def _add_months(date: dt.datetime, months: int) -> dt.datetime:
    if abs(months) > 12 * 10_000:
        raise OverflowError("too many months")
    total = date.year * 12 + date.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise OverflowError("year out of range")
    first_next = dt.date(year + (month == 11), (month + 1) % 12 + 1, 1)
    last = (first_next - dt.timedelta(days=1)).day
    return date.replace(year=year, month=month + 1, day=min(date.day, last))


def _arith(op: ast.operator, a: Any, b: Any, units: _Units) -> Any:
    """``a op b`` over numbers and dates: date - date is a span (a number of units), date
    +/- number moves the date by that many units (the equation's ``date_type``, days by
    default)."""
    da, db = isinstance(a, dt.datetime), isinstance(b, dt.datetime)
    if da and db:
        if isinstance(op, ast.Sub):
            return units.span(a, b)
        raise ValueError("dates only subtract")
    if da or db:
        date, num = (a, b) if da else (b, a)
        if isinstance(op, ast.Add) or (isinstance(op, ast.Sub) and da):
            return units.move(date, float(num) * (1 if isinstance(op, ast.Add) else -1))
        raise ValueError("a date takes only + and - of a number")
    if isinstance(op, ast.Pow):
        return _pow(a, b)
    return _BINOPS[type(op)](float(a), float(b))


def equation(expr: str, lookup: RefLookup, *, unit: str = "days",
             zone: dt.tzinfo | None = None,
             now: dt.datetime | None = None) -> float | dt.datetime | None:
    """The value of an equation: a number, a wall-clock date (date arithmetic), or None
    when it cannot be evaluated. A reference with neither number nor date (``lookup``
    gives blank numbers as 0) makes the result blank. A span between dates is given in
    ``unit``; ``zone`` is the application's timezone, where hours pass across a
    daylight-saving change (``_Units``), and ``now`` its wall clock (``currentTime()``)."""
    units = _Units(unit if unit in _UNIT_MS else "days", _UNIT_MS.get(unit, _DAY_MS), zone,
                   now)
    names: dict[str, Any] = {}

    def sub(m: re.Match[str]) -> str:
        ref = lookup(m.group(1), m.group(2))
        name = f"v_{len(names)}"
        names[name] = ref.date if ref.date is not None else ref.number
        return name

    text = _REF.sub(sub, expr).replace("^", "**")
    if len(text) > 5000:
        return None
    try:
        tree = ast.parse(text.strip() or "0", mode="eval")
        result = _eval(tree.body, names, units, 0)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError,
            ArithmeticError, RecursionError, statistics.StatisticsError):
        return None
    if isinstance(result, dt.datetime):
        return result
    if result is None:
        return None
    value = float(result)
    return value if math.isfinite(value) else None


def _eval(node: ast.AST, names: dict[str, Any], units: _Units, depth: int) -> Any:
    if depth > 60:
        raise ValueError("too deep")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in names:
        value = names[node.id]
        if value is None:
            raise ValueError("a blank value where a number or date is needed")
        return value
    if isinstance(node, ast.BinOp) and type(node.op) in (*_BINOPS, ast.Pow):
        return _arith(node.op, _eval(node.left, names, units, depth + 1),
                      _eval(node.right, names, units, depth + 1), units)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, names, units, depth + 1)
        if not isinstance(v, float):
            raise ValueError("sign of a date")
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "currentTime" and not node.args and not node.keywords:
        if units.now is None:
            raise ValueError("no clock")
        return units.now
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in NUMERIC_FUNCTIONS and not node.keywords:
        args = [_eval(a, names, units, depth + 1) for a in node.args]
        if not node.func.id.startswith("getDate") and node.func.id not in ("max", "min") \
                and any(isinstance(a, dt.datetime) for a in args):
            raise ValueError("a date in a numeric function")
        out = NUMERIC_FUNCTIONS[node.func.id](*args)
        return out if isinstance(out, dt.datetime) else float(out)
    raise ValueError("unsupported element")
