"""The name a review shows for each record: the object's display field (its schema
``identifier``), as loaded for a record the plan changes or deletes and as edited for one
it creates."""

from __future__ import annotations

import pandas as pd

from ..errors import SvcError
from ..frames import Frames, Source
from ..records import Client
from ..schema import Schema
from ..writeback import Plan
from ..writeback.plan import ColumnMap

__all__ = ["identifier_field", "identifier_texts"]


def identifier_field(client: Client, source: Source | None) -> str | None:
    """The key of the object's display field (the schema's ``identifier``); else its first
    text field; None when neither is known."""
    if source is None:
        return None
    try:
        app = client.schema()
    except SvcError:   # the identifier is a nicety: the review works without it
        app = None
    obj = Schema.of(app).object(source.object_key)
    key = obj.get("identifier") if obj else None
    known = {f.key for f in source.fields}
    if isinstance(key, str) and key in known:
        return key
    return next((f.key for f in source.fields if f.kind in ("short_text", "name", "email")),
                None)


def identifier_texts(plan: Plan, edited: Frames, key: str | None) -> dict[str, str]:
    """Record id -> the text of field ``key``: as loaded (the name the record has on the
    service, even when the edit changes it); a create's from the edited frame."""
    if key is None or plan.source is None:
        return {}
    cols = ColumnMap.of(plan.source).field_cols.get(key) or []
    if not cols:
        return {}
    out: dict[str, str] = {}
    base = plan.base if plan.base is not None else edited.original
    existing = [r for r, a in plan.actions.items() if a != "create"]
    for frame in (base.main if base is not None else None, edited.main):
        todo = [r for r in existing if r not in out]
        if frame is None or not todo or not all(c in frame.columns for c in cols):
            continue
        present = [r for r in todo if r in frame.index]
        out.update((str(r), str(t)) for r, t in _joined_text(frame.loc[present, cols]).items())
    creates = {r: p for r, p in plan.create_rows.items() if plan.actions.get(r) == "create"}
    if creates and all(c in edited.main.columns for c in cols):
        rows = edited.main.iloc[list(creates.values())][cols]
        rows.index = pd.Index(list(creates))
        out.update((str(r), str(t)) for r, t in _joined_text(rows).items())
    return out


def _joined_text(frame: pd.DataFrame) -> pd.Series:
    """A row's columns as one text (a name's parts joined by spaces)."""
    parts = frame.astype("string").fillna("")
    text = parts.iloc[:, 0]
    for col in parts.columns[1:]:
        text = text.str.cat(parts[col], sep=" ")
    return text.str.replace(r"\s+", " ", regex=True).str.strip()

