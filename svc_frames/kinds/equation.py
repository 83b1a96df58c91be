"""equation: a number, or a date when the field's format says its result is a date.

An equation whose ``format.equation_type`` is ``"date"`` and ``format.date_result`` is
``"date"`` (the hosted builder's "Result Type: Date") holds a date: its raw value is a
date_time's raw date object and its display follows the format's ``date_format`` and
``time_format``, so it reads as a tz-aware date column exactly as a date_time does. Every
other equation (numeric, or a date equation whose result is a number: the time between
two dates) holds a number and reads as Float64. Both are computed by the service and
read-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from .base import FieldSpec, ReadContext
from .dates import DateTimeCodec
from .numbers import ComputedNumberCodec

_DATES = DateTimeCodec()


def is_date_result(field: FieldSpec) -> bool:
    """Whether an equation field's result is a date (its format's date equation type with
    the date result type). Usage: ``is_date_result(spec)``"""
    fmt = field.format or {}
    return field.kind == "equation" and fmt.get("equation_type") == "date" \
        and fmt.get("date_result") == "date"


class EquationCodec(ComputedNumberCodec):
    """equation: Float64, or a tz-aware date column for a date result (see the module)."""

    kinds: ClassVar[tuple[str, ...]] = ("equation",)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if is_date_result(field):
            return _DATES.render(raw, field) if isinstance(raw, Mapping) else ""
        return super().render(raw, field)

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        if is_date_result(field):
            return _DATES.decode(raws, displays, field, ctx)
        return super().decode(raws, displays, field, ctx)
