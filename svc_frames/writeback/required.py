"""required: the schema's required fields in a diff. A new row must fill them and an
update must not empty them; both are refused before any request (the hosted service
would create or keep the record blank: the refusal is about intent)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidValue, UsageError
from ..frames import Source
from .plan import ColumnMap


def refuse_blanked_required(layout: ColumnMap, rid: str, key: str, cols: Sequence[str]) -> None:
    """An update that empties a field the schema marks required is refused before any
    request, like a new row without it: whatever the service makes of the blank, the
    value as loaded would be lost, and a required field left empty is not intent."""
    f = layout.fields[key]
    where = ", ".join(repr(c) for c in cols)
    raise InvalidValue(
        f"record {rid}: {key} ({f.label}, {f.kind}) is required by the schema but "
        f"{where} was emptied: put a value back, or leave the field as loaded "
        "(nothing was sent)", field=key, column=cols[0] if cols else None, record_id=rid)


def require_fields_of_creates(layout: ColumnMap, source: Source | None,
                              create_rows: Mapping[str, int],
                              payloads: Mapping[str, Mapping[str, Any]]) -> None:
    """A new row must fill every field the schema marks required (after connections:
    a connection is filled from its table). The hosted service creates a record
    without them (``POST {}`` makes a blank one), so only this check can say the row
    is incomplete. Fields a frame cannot hold (no column, not a connection, e.g. a
    password) and computed ones are not asked for."""
    required = [k for k, f in layout.fields.items()
                if f.required and not layout.codecs[k].read_only
                and (layout.field_cols.get(k) or f.kind == "connection")]
    if source is not None and source.some_fields and create_rows:
        # a frame of some fields (columns=[...]) cannot tell which others a new record
        # needs: refused rather than created without them
        rid = next(iter(create_rows))
        loaded = [layout.names.get(f.key, f.key) for f in source.fields]
        raise UsageError(f"new row {rid}: these frames hold some fields only (loaded "
                         f"with columns={loaded!r}), so a new record would miss the "
                         "others: add rows to frames loaded with every field (nothing "
                         "was sent)")
    if not required:
        return
    for rid in create_rows:
        payload = payloads.get(rid, {})
        for key in required:
            if key in payload:
                continue
            f = layout.fields[key]
            cols = layout.field_cols.get(key) or [t for t, k in layout.tables.items() if k == key][:1]
            where = ", ".join(repr(c) for c in cols)
            raise InvalidValue(
                f"new row {rid}: {key} ({f.label}, {f.kind}) is required by the schema "
                f"but empty: fill {where} or drop the row (nothing was sent)",
                field=key, column=cols[0] if cols else None, record_id=rid)
