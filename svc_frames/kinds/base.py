"""The field-kind codec contract: one codec per kind, reading and writing side by side.

A codec serves both halves of the package from one table of rules (docs/hosted-behaviour.md §7):

* the local service calls ``normalize`` (an accepted write input -> the stored raw value,
  or ``None`` for empty) and ``render`` (raw -> display value);
* the toolkit calls ``decode`` (a column of raw/display values -> frame columns),
  ``tables`` (exploded tables, for connections and multi choices) and ``encode``
  (one row's column values -> the value a write request sends).

So a value loaded and written back unchanged encodes to what the service stores, and an
edit encodes to exactly what the service accepts.

Usage::

    codec = codec_for(FieldSpec(key="field_21", kind="address"))
    cols = codec.decode(raws, displays, field, ReadContext())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any, ClassVar, Protocol
from zoneinfo import ZoneInfo

import pandas as pd

from ..errors import InvalidValue
from .celltext import Verdict, value_verdict


@dataclass(frozen=True)
class FieldSpec:
    """One field of an object, as the application schema describes it.

    Parameters
    ----------
    key : str
        The field key (``field_27``).
    kind : str
        The field's type in the schema (``short_text``, ``multiple_choice``,
        ``connection``, ...; ``unknown`` when the schema gave none).
    name : str, default ""
        The label the application shows.
    format : mapping, optional
        The schema's ``format`` (choices, date format, equation, ...).
    relationship : mapping, optional
        A connection's ``{"object", "has", "belongs_to"}``.
    required, unique : bool, default False
        As the schema says.
    object_key : str, default ""
        The object the field belongs to.

    Examples
    --------
    >>> spec = read_object(client, "Work Orders").source.field("field_27")
    >>> spec.kind, spec.label, spec.format["options"][:2]
    ('multiple_choice', 'Status', ['Open', 'In Progress'])
    """

    key: str
    kind: str
    name: str = ""
    format: Mapping[str, Any] = dc_field(default_factory=dict)
    relationship: Mapping[str, Any] | None = None
    required: bool = False
    unique: bool = False
    object_key: str = ""

    @property
    def label(self) -> str:
        """The field's name, or its key when it has none.

        Examples
        --------
        >>> FieldSpec("field_1", "short_text", name="Title").label
        'Title'
        >>> FieldSpec("field_1", "short_text").label
        'field_1'
        """
        return self.name or self.key

    @classmethod
    def from_schema(cls, raw: Mapping[str, Any], object_key: str = "") -> FieldSpec:
        """A field from its entry in the application schema (``type`` becomes ``kind``).

        Parameters
        ----------
        raw : mapping
            The schema's field: ``key``, ``type``, ``name``, ``format``,
            ``relationship``, ``required``, ``unique`` (all but ``key`` optional).
        object_key : str, default ""
            The object it belongs to, when ``raw`` does not say.

        Returns
        -------
        FieldSpec

        Raises
        ------
        KeyError
            ``raw`` has no ``key``.

        Examples
        --------
        >>> FieldSpec.from_schema({"key": "field_27", "type": "multiple_choice",
        ...                        "name": "Status"}, "object_3").object_key
        'object_3'
        """
        return cls(
            key=raw["key"],
            kind=raw.get("type") or "unknown",
            name=raw.get("name") or "",
            format=dict(raw.get("format") or {}),
            relationship=dict(raw["relationship"]) if raw.get("relationship") else None,
            required=bool(raw.get("required")),
            unique=bool(raw.get("unique")),
            object_key=raw.get("object_key") or object_key,
        )

    def to_schema(self) -> dict[str, Any]:
        """The field in the schema's shape, which ``from_schema`` reads back.

        Returns
        -------
        dict

        Examples
        --------
        >>> FieldSpec("field_1", "short_text", name="Title").to_schema()["type"]
        'short_text'
        """
        out: dict[str, Any] = {"key": self.key, "type": self.kind, "name": self.name,
                               "required": self.required, "unique": self.unique,
                               "format": dict(self.format), "object_key": self.object_key}
        if self.relationship is not None:
            out["relationship"] = dict(self.relationship)
        return out


@dataclass(frozen=True)
class ReadContext:
    """What decoding and encoding need beyond the values: the application's timezone.

    ``ids`` (the records being decoded, in order) and ``skipped`` (filled by the date
    codecs: column -> the records whose wall time the timezone skips) let one load name
    the values a frame cannot hold exactly; both None outside a load. ``decoded`` (field
    key -> what that field's ``decode`` built) lets a codec's ``tables`` reuse its own
    ``decode`` of the same values, which ``build_frames`` asks for first; None outside a
    load, where ``tables`` works from the values alone."""

    timezone: ZoneInfo | None = None
    ids: Sequence[str] | None = dc_field(default=None, compare=False)
    skipped: dict[str, list[str]] | None = dc_field(default=None, compare=False)
    decoded: dict[str, Any] | None = dc_field(default=None, compare=False)


class ServiceHooks(Protocol):
    """What the local service lends a codec while normalizing a write."""

    app_id: str
    base_url: str

    def connected(self, object_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        """``[{id, identifier}]`` for ids of ``object_key``; InvalidValue for an unknown id."""
        ...

    def asset(self, asset_id: str, field_key: str) -> dict[str, Any]:
        """The raw asset shape for ``asset_id`` placed in ``field_key``; InvalidValue if the
        asset is unknown or already placed in another field (docs/service-interface.md §2.5)."""
        ...


class Codec:
    """Base of every kind codec. Subclasses set ``kinds`` and override what applies."""

    kinds: ClassVar[tuple[str, ...]] = ()
    read_only: ClassVar[bool] = False  # computed by the service: equation, sums, formulas...

    # ---- service side -------------------------------------------------------------------
    def normalize(self, value: Any, field: FieldSpec, hooks: ServiceHooks | None = None) -> Any:
        """An accepted write input -> the raw value to store; None means empty.

        Raises InvalidValue naming ``field.key`` when the input is not accepted."""
        raise InvalidValue(f"{field.key} ({field.kind}) cannot be written", field=field.key)

    def render(self, raw: Any, field: FieldSpec) -> Any:
        """The display value (``field_N``) of a stored raw value (never called with None)."""
        return "" if raw is None else str(raw)

    # ---- toolkit side -------------------------------------------------------------------
    @classmethod
    def detect(cls, raw: Any) -> bool:
        """Whether a non-empty raw value has this kind's shape (used without a schema)."""
        return False

    def columns(self, field: FieldSpec) -> list[str]:
        """Names of the main-frame columns this field produces (may be empty)."""
        return [field.key]

    def decodes_raw_alone(self, raws: Sequence[Any]) -> bool:
        """Whether these raw values decode without their display values, so ``format=raw``
        pages (fewer bytes: no display values) will do. Usage: ``codec.decodes_raw_alone(raws)``"""
        return True

    def decode(self, raws: Sequence[Any], displays: Sequence[Any], field: FieldSpec,
               ctx: ReadContext) -> dict[str, pd.Series]:
        """Column-wise: raws[i] is record i's ``field_N_raw`` (None when absent), displays[i]
        its ``field_N``. Returns {column name: Series} positionally aligned with the input;
        empty values are NA."""
        raise NotImplementedError

    def tables(self, ids: Sequence[str], raws: Sequence[Any], displays: Sequence[Any],
               field: FieldSpec, ctx: ReadContext) -> dict[str, pd.DataFrame]:
        """Exploded tables keyed by name (usually ``field.key``); none by default."""
        return {}

    def encode(self, values: Mapping[str, Any], field: FieldSpec, ctx: ReadContext) -> Any:
        """One record's column values for this field ({column: value}, NA for empty) -> the
        value a create/update request sends. Raises InvalidValue / ReadOnlyField."""
        raise NotImplementedError

    def same_cell(self, text: str, loaded: Any, column: str, field: FieldSpec,
                  ctx: ReadContext, shown: str = "") -> Verdict:
        """Whether ``text``, a cell of ``column`` in a file a tool wrote back (pandas, a
        spreadsheet, ``astype(str)``), stands for ``loaded``, the value as loaded there:
        "same", "edit" or "unsure" (the file cannot tell; kinds/celltext.py). ``shown``:
        the export's own text of ``loaded``. By the loaded value's type unless the kind
        has a rule of its own."""
        return value_verdict(text, loaded, ctx.timezone, shown)
