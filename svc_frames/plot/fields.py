"""What every plot shares: the field it draws, given by key or label, that field's
column in the frames, category labels for its values, and a new figure's axes and title."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..frames import Frames
from ..kinds import BLANK
from ..kinds.base import FieldSpec

if TYPE_CHECKING:  # matplotlib is imported lazily: importing svc_frames must stay cheap
    from matplotlib.axes import Axes


# ---- resolving a field given by key or label ---------------------------------------------
def _fields(frames: Frames) -> list[FieldSpec]:
    return list(frames.source.fields) if frames.source is not None else []


def column_prefix(frames: Frames, spec: FieldSpec) -> str:
    """The column prefix of a field in this frame: its key, or its label (columns="labels")."""
    if frames.source is not None and frames.source.columns == "labels":
        return spec.label
    return spec.key


def resolve_field(frames: Frames, field: str) -> FieldSpec:
    """The FieldSpec of ``field`` (a key or a label, case-insensitive for labels).

    Usage: ``spec = resolve_field(frames, "Address")``."""
    if not isinstance(field, str) or not field:
        raise UsageError(f"field must be a field key or label, got {field!r}")
    specs = _fields(frames)
    for spec in specs:
        if spec.key == field:
            return spec
    matches = [s for s in specs if s.name == field] or \
              [s for s in specs if s.name.casefold() == field.casefold()]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        keys = ", ".join(s.key for s in matches)
        raise UsageError(f"label {field!r} names several fields ({keys}); pass the key",
                         field=field)
    if not specs:
        raise UsageError(f"cannot find field {field!r}: these frames carry no field "
                         "descriptions (frames.source is missing)", field=field)
    known = ", ".join(f"{s.key} ({s.label})" for s in specs[:30])
    raise UsageError(f"no field {field!r} in {frames.source.object_key if frames.source else ''}"
                     f"; fields: {known}", field=field)


def require_kind(spec: FieldSpec, kinds: tuple[str, ...], what: str) -> None:
    if spec.kind not in kinds:
        allowed = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
        raise UsageError(f"{what} takes a field of kind {allowed}; "
                         f"{spec.key} ({spec.label!r}) is {spec.kind}", field=spec.key)


def color_column(frames: Frames, name: str) -> pd.Series:
    """A main-frame column for ``color_by``: a column name, or a field key/label whose
    value column (the bare ``field_N``) exists."""
    main = frames.main
    if name in main.columns:
        return main[name].rename(_column_label(frames, name))
    spec = resolve_field(frames, name)
    col = column_prefix(frames, spec)
    if col in main.columns:
        return main[col].rename(spec.label)
    own = [c for c in main.columns if str(c).startswith(col + ".")]
    if own:
        raise UsageError(f"{spec.key} ({spec.label!r}) has several columns; pass one of "
                         f"{', '.join(map(str, own))}", field=spec.key)
    raise UsageError(f"{spec.key} ({spec.label!r}, {spec.kind}) has no column in the main "
                     "frame to colour by", field=spec.key)


def _column_label(frames: Frames, column: str) -> str:
    """``field_34.city`` -> ``Site.city`` (the field label, the column's suffix kept)."""
    base, dot, rest = str(column).partition(".")
    for spec in _fields(frames):
        if column_prefix(frames, spec) == base:
            return spec.label + dot + rest
    return str(column)


def new_axes(figsize: tuple[float, float]) -> Axes:
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _source_name(frames: Frames) -> str:
    src = frames.source
    if src is None:
        return ""
    key = f"{src.scene_key}/{src.view_key}" if src.kind == "view" and src.view_key \
        else src.object_key
    return f"{src.name} ({key})" if src.name else key


def set_title(ax: Axes, text: str, frames: Frames, note: str = "",
           title: str | None = None) -> None:
    sub = ", ".join(p for p in (_source_name(frames) if title is None else "", note) if p)
    ax.set_title((text if title is None else title) + (f"\n{sub}" if sub else ""),
                 fontsize=12)



def category_labels(values: pd.Series) -> pd.Series:
    """Values as display strings; list cells (multi choices) joined; blanks as ``BLANK``."""
    def one(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            items = [str(i) for i in v if i is not None and not is_missing(i)]
            return ", ".join(items) if items else BLANK
        if is_missing(v) or v == "":
            return BLANK
        if isinstance(v, (bool, np.bool_)):  # boolean columns iterate as numpy bools
            return "Yes" if v else "No"
        return str(v)

    return pd.Series([one(v) for v in values], index=values.index, dtype=object)


def is_missing(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # arrays are not scalars: not NA
        return False
