"""Schema changes between two runs, followed and never silent.

Per object, the fields the last run mirrored against the fields the application has now:

* added: a new column in the current table and in the history (earlier versions empty);
* removed: gone from the current table; the history keeps the column and its values, and
  the schema version records the field as removed;
* relabelled: nothing to move: every column is named by the field's key (``field_12``),
  which a relabel leaves as it is, and every table by the object's name when first seen
  (exploded tables by the field key): no query written against the mirror breaks; the
  labels of each version are in ``svc_mirror_schema`` and ``svc_sources``;
* of another kind: under ``schema="stop"`` (the default) the run is refused before
  anything is written (``SchemaChanged`` naming the object, field, old and new kind, and
  the choices); under ``"evolve"`` the history keeps both: the old kind's columns are
  renamed ``<column>__<old kind>`` (their values stay there), the field's columns hold the
  new kind from this run on, and every record holding a value gets a version.

Objects added are mirrored from their first run; an object removed from the application
has its records closed (a ``delete`` version each) and its current tables dropped; its
history stays.

Usage::

    change = compare_fields("object_3", old_fields, new_fields)
    change.describe()     # ["field_47 added (short_text)", ...]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SchemaChanged

__all__ = ["FieldChanges", "compare_fields", "refuse_kind_changes", "SCHEMA_MODES"]

SCHEMA_MODES = ("stop", "evolve")


@dataclass
class FieldChanges:
    """The differences between an object's fields at the last run and now."""

    object_key: str
    added: dict[str, str] = field(default_factory=dict)        # key -> kind
    removed: dict[str, str] = field(default_factory=dict)      # key -> kind
    relabelled: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> old, new
    rekinded: dict[str, tuple[str, str]] = field(default_factory=dict)    # key -> old, new

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.relabelled or self.rekinded)

    @property
    def needs_full_load(self) -> bool:
        """A change of the columns (not a relabel alone): the object is listed again."""
        return bool(self.added or self.removed or self.rekinded)

    def describe(self) -> list[str]:
        out = [f"{k} added ({kind})" for k, kind in self.added.items()]
        out += [f"{k} removed ({kind}; kept in the history)" for k, kind in self.removed.items()]
        out += [f"{k} relabelled {old!r} -> {new!r}" for k, (old, new) in self.relabelled.items()]
        out += [f"{k} kind {old} -> {new}" for k, (old, new) in self.rekinded.items()]
        return out


def compare_fields(object_key: str, old: Sequence[Mapping[str, Any]],
                   new: Sequence[Mapping[str, Any]]) -> FieldChanges:
    """The changes from ``old`` to ``new`` fields (schema dicts: key, name, type)."""
    before = {str(f["key"]): f for f in old}
    after = {str(f["key"]): f for f in new}
    out = FieldChanges(object_key)
    for key, f in after.items():
        if key not in before:
            out.added[key] = str(f.get("type"))
            continue
        was = before[key]
        if str(was.get("type")) != str(f.get("type")):
            out.rekinded[key] = (str(was.get("type")), str(f.get("type")))
        if (was.get("name") or key) != (f.get("name") or key):
            out.relabelled[key] = (str(was.get("name") or key), str(f.get("name") or key))
    for key, f in before.items():
        if key not in after:
            out.removed[key] = str(f.get("type"))
    return out


def refuse_kind_changes(changes: Sequence[FieldChanges], names: Mapping[str, str],
                        target: str) -> None:
    """``schema="stop"``: SchemaChanged naming every field of another kind and the choices."""
    found = [(c.object_key, k, old, new) for c in changes for k, (old, new) in c.rekinded.items()]
    if not found:
        return
    what = "; ".join(f"{names.get(o) or o} ({o}).{k}: {old} -> {new}" for o, k, old, new in found)
    raise SchemaChanged(
        f"the kind of a field changed since the last mirror run to {target}: {what}. "
        "Nothing was written. Choices: mirror(..., schema='evolve') keeps both (the old "
        "values in <field>__<old kind> columns of the history, the field's columns in its "
        "new kind from now on); or mirror to a new target; or leave out the object "
        "(objects=[...])")
