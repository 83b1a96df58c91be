"""Text kinds: short/paragraph/rich text, text formulas (read-only), password, unknown."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pandas as pd

from ..errors import ReadOnlyField
from ._util import as_text, get_value, html_to_text, invalid, is_blank, string_series
from .base import Codec, FieldSpec, ReadContext, ServiceHooks


class TextCodec(Codec):
    """short_text, paragraph_text: the raw value is the string; display equals raw."""

    kinds: ClassVar[tuple[str, ...]] = ("short_text", "paragraph_text")
    keep_html: ClassVar[bool] = False  # rich text keeps its HTML when only a display exists

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if self.read_only:
            raise ReadOnlyField(f"{field.key} ({field.kind}) is computed by the service and "
                                "cannot be written", field=field.key)
        if is_blank(value):
            return None
        return as_text(value, field)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        return "" if raw is None else str(raw)

    @classmethod
    def detect(cls, raw: Any) -> bool:
        return isinstance(raw, str)

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        keep = self.keep_html
        out = [
            (r if isinstance(r, str) else str(r)) if r is not None
            else (None if not d else (d if keep or not isinstance(d, str) else html_to_text(d)))
            for r, d in zip(raws, displays, strict=False)
        ]
        return {field.key: string_series(out)}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        if self.read_only:
            raise ReadOnlyField(f"{field.key} ({field.kind}) is computed by the service and "
                                "cannot be written", field=field.key)
        value = get_value(values, field.key)
        return "" if value is None else as_text(value, field)


class RichTextCodec(TextCodec):
    """rich_text: HTML in both raw and display."""

    kinds: ClassVar[tuple[str, ...]] = ("rich_text",)
    keep_html: ClassVar[bool] = True


class FormulaTextCodec(TextCodec):
    """concatenation (text formula): computed by the service, read-only."""

    kinds: ClassVar[tuple[str, ...]] = ("concatenation",)
    read_only: ClassVar[bool] = True


class PasswordCodec(Codec):
    """password: write-only. ``normalize`` checks the input and returns it unchanged; the
    service stores only a salted hash of it and never returns a raw value."""

    kinds: ClassVar[tuple[str, ...]] = ("password",)

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        if not isinstance(value, str):
            raise invalid(field, f"a password must be text, got {type(value).__name__}")
        return value

    def render(self, raw: Any, field: FieldSpec) -> Any:
        return "*****"

    def columns(self, field: FieldSpec) -> list[str]:
        return []

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        return {}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = get_value(values, field.key)
        if value is None:
            raise invalid(field, "a password cannot be cleared")
        return self.normalize(value, field)


class UnknownCodec(Codec):
    """A kind this package does not know: the raw value is kept as JSON text."""

    kinds: ClassVar[tuple[str, ...]] = ("unknown",)

    def decodes_raw_alone(self, raws: Sequence[Any]) -> bool:
        return False  # a value without a raw member is known by its display only

    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        if is_blank(value):
            return None
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise invalid(field, f"value is not JSON: {value!r}") from None
        return value

    def render(self, raw: Any, field: FieldSpec) -> Any:
        if raw is None:
            return ""
        return raw if isinstance(raw, (str, int, float)) else json.dumps(raw)

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        # a raw value (or a structured one under field_N) as JSON text; a display-only
        # value (format=html) as clean text
        out = [json.dumps(r, ensure_ascii=False) if r is not None
               else (None if d is None or d == ""
                     else html_to_text(d) if isinstance(d, str)
                     else json.dumps(d, ensure_ascii=False))
               for r, d in zip(raws, displays, strict=False)]
        return {field.key: string_series(out)}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        value = get_value(values, field.key)
        if value is None:
            return ""
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError:  # clean text from a display-only answer goes as it is
            return value
