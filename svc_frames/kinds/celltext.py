"""What a tool's text of a value means: is a file's cell the value as loaded?

Saved frames come back edited by other tools, and those tools rewrite cells they were not
asked to touch: pandas reads a column of digits with blanks as floats and writes
``78742.0`` for ``78742``, ``1.0`` for ``1``, ``True`` for ``true``; a spreadsheet writes
``TRUE``, drops a time's offset or writes a date another way; ``astype(str)`` writes
``nan`` for an empty cell and numpy's ``['A' 'B']`` for a list. Each codec says, for its
kind (``Codec.same_cell``), whether such a cell stands for the loaded value with the
helpers here, so a round trip through pandas or a spreadsheet plans only the user's edits.

Three answers (:data:`Verdict`): ``"same"`` (the loaded value, unchanged), ``"edit"``
(another value: read the cell as the user's), ``"unsure"`` (the tool's text of the loaded
value is also the text of another value, such as ``1234.0`` for the text ``01234``: the
file cannot tell, and the caller refuses it rather than guess).

Usage: ``text_verdict("78742.0", "78742") == "same"``
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

Verdict = Literal["same", "edit", "unsure"]

# pandas' default na_values (what read_csv turns into NaN) and what astype(str) writes for
# an empty value: a cell holding one of them is empty to the tool that wrote it
NA_TEXT = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                     "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                     "nan", "null", "NaT"})
TRUE_TEXT = frozenset({"true", "yes", "on", "y", "t", "1", "1.0"})
FALSE_TEXT = frozenset({"false", "no", "off", "n", "f", "0", "0.0"})
# a number as pandas' CSV reader takes one (no thousands separator, no currency sign)
_PANDAS_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_NUMBER_JUNK = re.compile(r"[,$\s]")
_DURATION = re.compile(r"^(-)?(\d+):([0-5]\d)(?::([0-5]\d(?:\.\d+)?))?$")
_WHOLE = re.compile(r"^-?\d+$")
_WHOLE_FLOAT = re.compile(r"^\s*-?\d+\.0\s*$")
_QUOTED = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""")


def empty_text(text: str) -> bool:
    """Whether a cell is empty as the tools write one (``""``, ``nan``, ``None``, ``NaT``...).

    Usage: ``empty_text("nan") is True``"""
    return text.strip() in NA_TEXT


def _empty_value(v: Any) -> bool:
    if isinstance(v, str):
        return v == ""
    if isinstance(v, (list, tuple, np.ndarray)):
        return len(v) == 0
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def loaded_verdict(text: str, loaded: Any) -> Verdict | None:
    """The verdict every kind shares, or None when the kind must decide: an empty loaded
    value is kept by any empty cell; an empty cell of a loaded value is an edit (it was
    cleared), unless the loaded text is itself one the tools read as empty (``NA``,
    ``None``: pandas turns it into NaN, so the file cannot tell)."""
    if isinstance(loaded, str) and text == loaded:
        return "same"
    blank = empty_text(text)
    if _empty_value(loaded):
        return "same" if blank else None
    if not blank:
        return None
    if isinstance(loaded, str):
        if loaded.strip() in NA_TEXT or text.strip() != "":
            return "unsure"   # "nan" in a text column: the tool's empty, or the word?
    return "edit"


def number_of(text: str) -> float | None:
    """A number as a tool or a spreadsheet writes it (``1,234.50``, ``$3``, ``1e3``), or
    None. Usage: ``number_of("78742.0") == 78742.0``"""
    cleaned = _NUMBER_JUNK.sub("", text)
    try:
        x = float(cleaned)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def same_number(x: float, y: float) -> bool:
    """Equal, or equal to the 15 significant digits a double holds without noise (what
    the CSV export and a spreadsheet keep). Usage: ``same_number(842.85, 842.8499999999999)``"""
    return x == y or f"{x:.15g}" == f"{y:.15g}"


def number_verdict(text: str, loaded: float) -> Verdict:
    """A number cell against a loaded number. Usage: ``number_verdict("3.0", 3)``"""
    x = number_of(text)
    return "same" if x is not None and same_number(x, float(loaded)) else "edit"


def bool_verdict(text: str, loaded: bool, words: Sequence[str] = ()) -> Verdict:
    """A yes/no cell (``TRUE``, ``True``, ``1.0``, ``Yes``, the field's own words) against
    a loaded boolean. Usage: ``bool_verdict("TRUE", True) == "same"``"""
    word = text.strip().lower()
    yes, no = (words[0].lower(), words[1].lower()) if len(words) == 2 else ("", "")
    if word in TRUE_TEXT or word == yes:
        return "same" if loaded else "edit"
    if word in FALSE_TEXT or word == no:
        return "edit" if loaded else "same"
    return "edit"


def instant_of(text: str, timezone: ZoneInfo | str | None) -> pd.Timestamp | None:
    """A time written any way pandas reads one (ISO, ``03/04/2026 9:30``, with or without
    an offset); a time without an offset is the application's wall clock. None: not a time."""
    try:
        ts = pd.Timestamp(text.strip())
    except (ValueError, TypeError, OverflowError):
        return None
    if pd.isna(ts):
        return None
    if ts.tzinfo is None:
        if timezone is None:
            return ts
        try:
            local = ts.tz_localize(timezone, ambiguous="NaT", nonexistent="NaT")
        except (ValueError, TypeError):
            return None
        return None if pd.isna(local) else pd.Timestamp(local)
    return ts


def instant_verdict(text: str, loaded: Any, timezone: ZoneInfo | str | None, *,
                    day_only: bool = False) -> Verdict:
    """A time cell against a loaded time: the same instant, or (``day_only``: a field
    that holds no time of day) the same day in the application's timezone.

    Usage: ``instant_verdict("2026-03-04 09:30", loaded, "America/Chicago")``"""
    ts = instant_of(text, timezone)
    was = pd.Timestamp(loaded)
    if ts is None or pd.isna(ts):
        return "edit"
    if (ts.tzinfo is None) != (was.tzinfo is None):
        return "edit"   # one naive and one not, with no timezone to place the naive one
    if ts == was:
        return "same"
    if day_only:
        if timezone is not None and was.tzinfo is not None:
            ts, was = ts.tz_convert(timezone), was.tz_convert(timezone)
        if ts.date() == was.date():
            return "same"
    return "edit"


def duration_of(text: str) -> pd.Timedelta | None:
    """``H:MM:SS`` (hours past 24 kept) or anything ``pd.Timedelta`` reads
    (``1 days 03:05:00``, what pandas writes). Usage: ``duration_of("27:05:00")``"""
    m = _DURATION.match(text.strip())
    try:
        if m:
            sign, h, mi, s = m.groups()
            td = pd.Timedelta(hours=int(h), minutes=int(mi), seconds=float(s or 0))
            return -td if sign else td
        out = pd.Timedelta(text.strip())
    except (ValueError, TypeError, OverflowError):
        return None
    return None if pd.isna(out) else out


def duration_verdict(text: str, loaded: Any) -> Verdict:
    """A duration cell against a loaded duration (to the second the export shows)."""
    td = duration_of(text)
    if td is None:
        return "edit"
    was = pd.Timedelta(loaded)
    return "same" if td == was or round(td.total_seconds()) == round(was.total_seconds()) \
        else "edit"


def list_items(text: str) -> list[str] | None:
    """The items of a list written as a list (JSON ``["a", "b"]``, Python's ``['a', 'b']``
    as pandas writes a list cell, numpy's ``['a' 'b']`` as ``astype(str)`` writes an
    array), or None when the text is no such list (``"a, b"``: the caller splits it by the
    field's options). Usage: ``list_items("['A' 'B']") == ["A", "B"]``"""
    t = text.strip()
    if not (t.startswith("[") and t.endswith("]")):
        return None
    try:
        items = json.loads(t)
    except ValueError:
        # Python's ['a', 'b'] or numpy's ['a' 'b'] (no commas, which literal_eval would
        # read as one concatenated string): each quoted item on its own
        inner = t[1:-1]
        between = _QUOTED.sub("\0", inner).split("\0")
        sep = {b.strip() for b in between[1:-1]}
        if between[0].strip() or between[-1].strip() or sep - {"", ","} or sep == {"", ","}:
            return None
        try:
            items = [ast.literal_eval(tok) for tok in _QUOTED.findall(inner)]
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if isinstance(items, list) and all(isinstance(x, str) for x in items):
        return list(items)
    return None


def list_verdict(text: str, loaded: Any, shown: str) -> Verdict:
    """A list cell against a loaded list; ``shown``: the export's text of it."""
    items = [str(x) for x in (loaded.tolist() if hasattr(loaded, "tolist") else loaded)]
    if text.strip() in (shown, str(items), str(np.array(items, dtype=object)),
                        str(np.array(items))):
        return "same"
    parsed = list_items(text)
    return "same" if parsed is not None and parsed == items else "edit"


def _canonical_number_text(text: str, x: float) -> bool:
    """Whether ``text`` is the one way a tool writes the number ``x`` back (``78742``,
    ``1.5``): a text such as ``01234``, ``1.50`` or ``+3`` is not, and cannot be told
    from another text of the same number once a tool has read it as a number."""
    t = text.strip()
    if x.is_integer() and abs(x) < 2 ** 53:
        return t == str(int(x)) or t == repr(x)
    return t == repr(x)


def text_verdict(text: str, loaded: str) -> Verdict:
    """A text cell against a loaded text. The same text is the same; a text that a tool
    read as a number or a yes/no and wrote back its way (``78742.0`` for ``78742``,
    ``True`` for ``true``) is the same when the loaded text is that value's usual
    spelling, and ``unsure`` when it is not (``01234``, ``1.50``: the tool's ``1234.0``
    could be an edit to ``1234``); anything else is an edit.

    Usage: ``text_verdict("1234.0", "01234") == "unsure"``"""
    if text == loaded:
        return "same"
    was = loaded.strip()
    if _PANDAS_NUMBER.match(was):
        x = float(was)
        y = number_of(text) if _PANDAS_NUMBER.match(text.strip()) else None
        if y is None or not same_number(x, y):
            return "edit"
        return "same" if _canonical_number_text(was, x) else "unsure"
    if was.lower() in ("true", "false") and text.strip().lower() == was.lower():
        return "same" if was in ("True", "False") else "unsure"
    return "edit"


def whole_numbers(loaded: Sequence[Any]) -> bool:
    """Whether a text column as loaded holds whole numbers alone (and some): a column
    pandas reads as numbers and writes back as floats (zip codes with blanks).

    Usage: ``whole_numbers(["78742", None, "60638"]) is True``"""
    texts = [v.strip() for v in loaded if isinstance(v, str) and v.strip()]
    return bool(texts) and all(_WHOLE.match(t) and _canonical_number_text(t, float(t))
                               for t in texts)


def meant_text(text: str, whole_column: bool) -> str:
    """The text an edited cell means in a text column of whole numbers (``whole_numbers``)
    that a tool wrote as floats: ``99999.0`` is ``99999`` (pandas read the zip codes as
    numbers, the user typed 99999); any other text as it is.

    Usage: ``meant_text("99999.0", True) == "99999"``"""
    if whole_column and _WHOLE_FLOAT.match(text):
        return text.strip()[:-2]
    return text


def value_verdict(text: str, loaded: Any, timezone: ZoneInfo | str | None,
                  shown: str = "") -> Verdict:
    """Whether a cell stands for ``loaded`` by the loaded value's type alone (what
    ``Codec.same_cell`` does for a kind with no rule of its own).

    Usage: ``value_verdict("78742.0", "78742", None) == "same"``"""
    if shown and text == shown:
        return "same"
    shared = loaded_verdict(text, loaded)
    if shared is not None:
        return shared
    if isinstance(loaded, (bool, np.bool_)):
        return bool_verdict(text, bool(loaded))
    if isinstance(loaded, (int, float, np.integer, np.floating)):
        return number_verdict(text, float(loaded))
    if isinstance(loaded, (pd.Timestamp, datetime, date)):
        return instant_verdict(text, loaded, timezone)
    if isinstance(loaded, (pd.Timedelta, timedelta)):
        return duration_verdict(text, loaded)
    if isinstance(loaded, (list, tuple, np.ndarray)):
        return list_verdict(text, loaded, shown)
    if isinstance(loaded, str):
        return text_verdict(text, loaded)
    return "same" if text == str(loaded) else "edit"
