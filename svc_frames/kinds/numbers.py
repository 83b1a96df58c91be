"""Numeric kinds: number, currency, rating, computed numbers (read-only), auto increment,
and boolean."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ..errors import PrecisionWarning, ReadOnlyField
from ._util import (
    float_series,
    float_values,
    get_value,
    html_to_text,
    int_series,
    invalid,
    is_blank,
    parse_number_text,
    to_number,
)
from .base import Codec, FieldSpec, ReadContext, ServiceHooks
from .celltext import Verdict, bool_verdict, loaded_verdict, number_of, value_verdict

_EXACT = 2**53   # every integer up to this is exact in a double


def _slow_number(raw: Any, display: Any) -> float | None:
    if raw is None:
        return parse_number_text(display) if display not in (None, "") else None
    if isinstance(raw, bool):
        return None
    if isinstance(raw, str):
        try:
            return float(raw)
        except ValueError:
            return parse_number_text(raw)
    return parse_number_text(raw)


def _read_only(field: FieldSpec) -> ReadOnlyField:
    return ReadOnlyField(f"{field.key} ({field.kind}) is computed by the service and cannot "
                         "be written", field=field.key)


class NumberCodec(Codec):
    """number: raw and display are the number; writes take a number or a numeric string."""

    kinds: ClassVar[tuple[str, ...]] = ("number",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if self.read_only:
            raise _read_only(field)
        if is_blank(value):
            return None
        return to_number(value, field)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        return raw

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, (int, float)) and not isinstance(raw, bool)

    def _numbers(self, raws: Sequence[Any], displays: Sequence[Any]) -> list[Any]:
        # fast path: JSON numbers as they are (float_series makes them Float64), and a
        # blank (no raw, no display: a raw page's empty number) without a call
        return [r if (t := type(r)) is int or t is float
                else None if r is None and d is None else _slow_number(r, d)
                for r, d in zip(raws, displays, strict=False)]

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        nums = self._numbers(raws, displays)
        values = float_values(nums)
        out = float_series(values)
        with np.errstate(invalid="ignore"):  # NaN (NA) compares False: not big
            big = np.flatnonzero(np.abs(values) >= _EXACT)
        lost = [nums[i] for i in big.tolist() if type(nums[i]) is int
                and int(float(nums[i])) != nums[i]]
        if lost:
            warnings.warn(f"{field.key} ({field.label}): {len(lost)} integers past 2**53 "
                          f"(e.g. {lost[0]}) lose precision in the float column",
                          PrecisionWarning, stacklevel=2)
        return {field.key: out}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        if self.read_only:
            raise _read_only(field)
        value = get_value(values, field.key)
        if value is None:
            return ""
        number = to_number(value, field)
        # 3.0 from a Float64 column goes back as 3, as it was stored; past 2**53 a float
        # is no exact integer, and it stays a float (up to 1e308, as the service holds)
        return int(number) if isinstance(number, float) and number.is_integer() \
            and abs(number) <= _EXACT else number


class ComputedNumberCodec(NumberCodec):
    """sum, count, average, min, max (and a numeric equation, equation.py): computed by the
    service, read-only.

    The fixtures show the equation's display as the raw value rounded to a whole number
    (1.333 -> 1) although its format says precision 2; equations follow the fixtures, the
    other computed kinds round to the format's precision (default 2)."""

    kinds: ClassVar[tuple[str, ...]] = ("sum", "count", "average", "min", "max")
    read_only: ClassVar[bool] = True

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if not isinstance(raw, (int, float)) or isinstance(raw, bool):
            return raw
        if field.kind in ("equation", "count"):
            return int(round(raw))
        try:
            digits = int(field.format.get("precision", 2))
        except (TypeError, ValueError):
            digits = 2
        rounded = round(float(raw), digits)
        return int(rounded) if rounded.is_integer() else rounded

    def same_cell(self, text: str, loaded: Any, column: str, field: FieldSpec,
                  ctx: ReadContext, shown: str = "") -> Verdict:
        """A computed number is the loaded one when it shows the same (the export and a
        spreadsheet keep what the service shows, rounded as it rounds)."""
        verdict = value_verdict(text, loaded, ctx.timezone, shown)
        x = number_of(text)
        if verdict == "edit" and x is not None and isinstance(loaded, (int, float, np.number)):
            return "same" if self.render(x, field) == self.render(float(loaded), field) \
                else "edit"
        return verdict


class AutoIncrementCodec(NumberCodec):
    """auto_increment: an integer the service assigns, read-only."""

    kinds: ClassVar[tuple[str, ...]] = ("auto_increment",)
    read_only: ClassVar[bool] = True

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, int) and not isinstance(raw, bool)

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        nums = self._numbers(raws, displays)
        return {field.key: int_series([n if type(n) is int or n is None else int(n)
                                       for n in nums])}


class CurrencyCodec(NumberCodec):
    """currency: raw is a string with two decimals ("100.43"); display "$100.43"."""

    kinds: ClassVar[tuple[str, ...]] = ("currency",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        number = to_number(value, field)
        if abs(number) >= 1e15:  # beyond that a double no longer holds the cents
            raise invalid(field, f"amount out of range (at most 15 digits): {value!r}")
        amount = Decimal(str(number)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        return f"{amount:.2f}"

    def render(self, raw: Any, field: FieldSpec) -> Any:
        symbol = str(field.format.get("format") or "$")
        try:
            amount = Decimal(str(raw).replace(",", ""))
        except ArithmeticError:
            return f"{symbol}{raw}"
        sign = "-" if amount < 0 else ""
        return f"{sign}{symbol}{abs(amount):,.2f}"

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, str) and parse_number_text(raw) is not None

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = get_value(values, field.key)
        return "" if value is None else to_number(value, field)


class RatingCodec(NumberCodec):
    """rating: raw a number, display with two decimals ("4.00"); at most format["max"]."""

    kinds: ClassVar[tuple[str, ...]] = ("rating",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        number = to_number(value, field)
        top = parse_number_text(field.format.get("max")) or 5.0
        if number < 0 or number > top:
            raise invalid(field, f"a rating must be between 0 and {top:g}, got {number!r}")
        step = 0.5 if field.format.get("allow_half") else 1.0
        if (number / step) != int(number / step):
            raise invalid(field, f"a rating must be a multiple of {step:g}, got {number!r}")
        return number

    def render(self, raw: Any, field: FieldSpec) -> Any:
        return f"{float(raw):.2f}"


_TRUE = {"yes", "on", "true", "1", "y", "t"}
_FALSE = {"no", "off", "false", "0", "n", "f"}
_BOOL_WORDS = {"yes_no": ("Yes", "No"), "on_off": ("On", "Off"), "true_false": ("True", "False")}


class BooleanCodec(Codec):
    """boolean: raw true/false, display "Yes"/"No" (or On/Off, True/False per format)."""

    kinds: ClassVar[tuple[str, ...]] = ("boolean",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if isinstance(value, bool):
            return value
        if is_blank(value):
            return None
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            word = value.strip().lower()
            if word in _TRUE:
                return True
            if word in _FALSE:
                return False
        raise invalid(field, "expected a boolean or yes/no/on/off/true/false, got "
                             f"{value!r}")

    def render(self, raw: Any, field: FieldSpec) -> Any:
        yes, no = _BOOL_WORDS.get(str(field.format.get("format") or "yes_no"), ("Yes", "No"))
        return yes if raw else no

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, bool)

    def same_cell(self, text: str, loaded: Any, column: str, field: FieldSpec,
                  ctx: ReadContext, shown: str = "") -> Verdict:
        """Yes/no as the field shows it (its own words), as pandas writes it (``True``,
        ``1.0``) or a spreadsheet (``TRUE``)."""
        shared = loaded_verdict(text, loaded)
        if shared is not None:
            return shared
        if not isinstance(loaded, (bool, np.bool_)):
            return value_verdict(text, loaded, ctx.timezone, shown)
        return bool_verdict(text, bool(loaded), (str(self.render(True, field)),
                                                 str(self.render(False, field))))

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        # a raw that is not a bool: a format=raw answer's "" for an empty field (NA), or text
        out = [r if type(r) is bool else _display_bool(d if r is None else r)
               for r, d in zip(raws, displays, strict=False)]
        return {field.key: pd.Series(pd.array(out, dtype="boolean"))}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = get_value(values, field.key)
        if value is None:
            return ""
        return self.normalize(value.item() if hasattr(value, "item") else value, field)


def _display_bool(display: Any) -> bool | None:
    if isinstance(display, bool):
        return display
    if not isinstance(display, str) or not display:
        return None
    word = html_to_text(display).strip().lower()
    return True if word in _TRUE else False if word in _FALSE else None
