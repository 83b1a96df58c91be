"""Frame columns by field label or by field key: the unique label of each field
(``label_map``), a column renamed from one naming to the other (``relabel``), the warning
for labels that had to change, and loaded frames switched from one naming to the other
(``renamed``: ``Frames.with_labels`` / ``with_keys``). Below frames.py: it reads frames
by shape (a dataclass with ``main``, ``tables``, ``source``, ``original``, ``skipped``).

Usage::

    labels = label_map(source.fields)          # {"field_27": "Status", ...}
    relabel("field_34.city", labels)           # "Site.city"
    by_key = renamed(frames, "keys")           # field_27, field_34.city ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from .errors import NameWarning, warn_user
from .kinds import codec_for
from .kinds.base import FieldSpec
from .names import SHOWN_NAMES, unique_labels

__all__ = ["label_map", "label_renames", "warn_renamed", "relabel", "column_names",
           "renamed"]


def label_map(fields: Sequence[FieldSpec]) -> dict[str, str]:
    """field key -> unique label: ``"Label (field_N)"`` when a field's columns would equal
    another's case-insensitively (a shared label, ``Status``/``status``, a label ``Site.city``
    beside an address ``Site``) or the record id column ``id`` (names.unique_labels)."""
    entries = []
    for f in fields:
        cols = codec_for(f).columns(f)
        entries.append((f.key, f.label, [c[len(f.key):] for c in cols if c.startswith(f.key)]))
    return unique_labels(entries)


def label_renames(fields: Sequence[FieldSpec]) -> list[tuple[str, str, str]]:
    """(key, label, column label used) of each field whose label had to change to stay
    unique as a column name (:func:`label_map`)."""
    labels = label_map(fields)
    return [(f.key, f.label, labels[f.key]) for f in fields
            if f.key in labels and labels[f.key] != f.label]


def warn_renamed(labels: Mapping[str, str], fields: Sequence[FieldSpec],
                 where: str = "") -> None:
    """A NameWarning listing the fields whose label had to change to stay unique
    (``where``: the object or view, named first, so that the loads of ``read_app`` say
    whose fields they are)."""
    renamed = [f"{f.label!r} -> {labels[f.key]!r}" for f in fields
               if f.key in labels and labels[f.key] != f.label]
    if renamed:
        warn_user(f"{where + ': ' if where else ''}{len(renamed)} field labels clash as column names (case-insensitively, "
                  f"with the record id or a part column): {', '.join(renamed[:SHOWN_NAMES])}"
                  + (" ..." if len(renamed) > SHOWN_NAMES else ""), NameWarning)


def relabel(name: str, labels: Mapping[str, str]) -> str:
    """``field_N`` / ``field_N.part`` -> ``Label`` / ``Label.part``."""
    key, dot, rest = name.partition(".")
    return labels.get(key, key) + dot + rest


def column_names(fields: Sequence[FieldSpec], naming: Literal["keys", "labels"]
                 ) -> dict[str, str]:
    """Field key -> the name frames of this naming give the field (its bare column or
    table, or the stem of its part columns): its unique label, or its key.

    Usage: ``column_names(source.fields, source.columns)["field_27"]  # "Status"``"""
    if naming == "keys":
        return {f.key: f.key for f in fields}
    labels = label_map(fields)
    return {f.key: labels.get(f.key, f.key) for f in fields}


class _Source(Protocol):
    fields: list[FieldSpec]
    columns: Literal["keys", "labels"]


class _Frames(Protocol):
    main: Any
    tables: dict[str, Any]
    skipped: dict[str, list[str]]

    @property
    def source(self) -> Any: ...

    @property
    def original(self) -> Any: ...


F = TypeVar("F", bound=_Frames)


def renamed(frames: F, naming: Literal["keys", "labels"]) -> F:
    """The same frames (new objects, the data shared as pandas' ``rename`` shares it) with
    columns and tables named by field key or by field label; the as-loaded copy follows,
    so they diff, write back, refresh and save as before. Frames already so named, or
    without a source, come back as they are.

    Usage: ``renamed(frames, "labels").main.columns  # Title, Due, Site.city ...``"""
    src = frames.source
    if src is None or src.columns == naming:
        return frames
    names = label_map(src.fields)
    by_key: dict[str, str] = {}
    for f in src.fields:
        for col in [*codec_for(f).columns(f), f.key]:
            by_key[col] = relabel(col, names)
    mapping = by_key if naming == "labels" else {v: k for k, v in by_key.items()}
    source = dataclasses.replace(src, columns=naming)

    def one(fr: Any) -> Any:
        return dataclasses.replace(
            fr, main=fr.main.rename(columns=lambda c: mapping.get(str(c), str(c))),
            tables={mapping.get(k, k): v for k, v in fr.tables.items()}, source=source,
            skipped={mapping.get(k, k): v for k, v in fr.skipped.items()}, original=None)

    out = one(frames)
    out.original = one(frames.original) if frames.original is not None else None
    return out  # type: ignore[no-any-return]
