"""plot_counts: how many records hold each value of a choice or connection field."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..errors import UsageError
from ..frames import Frames
from ..kinds import BLANK
from ..kinds.base import FieldSpec
from .fields import (
    category_labels,
    column_prefix,
    is_missing,
    new_axes,
    require_kind,
    resolve_field,
    set_title,
)

if TYPE_CHECKING:  # matplotlib is imported lazily: importing svc_frames must stay cheap
    from matplotlib.axes import Axes

COUNT_KINDS = ("multiple_choice", "connection", "boolean", "user_roles")


def plot_counts(frames: Frames, field: str, *, ax: Axes | None = None, top: int = 20,
                others: bool = True, title: str | None = None) -> Axes:
    """Horizontal bars: how many records have each value of a choice or connection field.

    Multi choices count every chosen option; connections count the records connected to
    each connected record (labelled by its identifier, from the connection's table; two
    that share one are told apart by their id). Records without a value (or without a
    connection) are counted as ``(blank)``. A field is given by key (``"field_27"``) or
    by label (``"Status"``, any case); columns and tables are found as the frames name
    them (docs/column-names.md).

    Parameters
    ----------
    frames : Frames
        Loaded frames.
    field : str
        A multiple choice, connection, boolean or user roles field.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new figure.
    top : int, default 20
        How many bars at most, the most frequent values first.
    others : bool, default True
        Fold the values beyond ``top`` into one last bar ("N others"); False leaves them
        out and says so in the title.
    title : str, optional
        Replaces the generated title.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    UsageError
        An unknown field (or a label naming several), a field of another kind, frames
        without its column or table, or a ``top`` that is not a positive integer.

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> ax = plot_counts(frames, "Status")
    >>> ax.get_ylabel(), ax.get_xlabel()
    ('Status', 'Number of records')
    >>> sorted(t.get_text() for t in ax.get_yticklabels())
    ['(blank)', 'Cancelled', 'Done', 'In Progress', 'On Hold', 'Open']
    """
    spec = resolve_field(frames, field)
    require_kind(spec, COUNT_KINDS, "plot_counts")
    if not isinstance(top, int) or top < 1:
        raise UsageError(f"top must be a positive integer, got {top!r}")
    counts = _connection_counts(frames, spec) if spec.kind == "connection" else \
        _value_counts(frames, spec)
    counts = counts.sort_values(ascending=False, kind="stable")
    note = f"{len(frames.main)} records"
    if len(counts) > top and not others:
        note += f"; top {top} of {len(counts)} values"
        counts = counts.iloc[:top]
    elif len(counts) > top:
        rest = counts.iloc[top - 1:]
        counts = pd.concat([counts.iloc[: top - 1],
                            pd.Series({f"{len(rest)} others": int(rest.sum())})])
    if ax is None:
        ax = new_axes((8.0, min(2.0 + 0.38 * max(len(counts), 1), 12.0)))
    labels = [_shorten(str(i)) for i in counts.index]
    pos = list(range(len(counts)))[::-1]  # most frequent on top
    colours = ["0.7" if str(i) == BLANK or str(i).endswith(" others")
               else "C0" for i in counts.index]
    bars = ax.barh(pos, counts.to_numpy(dtype=float), color=colours)
    ax.set_yticks(pos, labels)
    ax.bar_label(bars, labels=[f"{int(v)}" for v in counts], padding=3, fontsize=8)
    ax.margins(x=0.12)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 2.5 ticks
    ax.set_xlabel("Number of records")
    ax.set_ylabel(spec.label)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    set_title(ax, f"Records by {spec.label}", frames, note, title)
    if counts.empty:
        ax.text(0.5, 0.5, "No values", ha="center", va="center", transform=ax.transAxes,
                color="0.4")
    return ax


def _shorten(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _value_counts(frames: Frames, spec: FieldSpec) -> pd.Series:
    col = column_prefix(frames, spec)
    if col not in frames.main.columns:
        raise UsageError(f"{spec.key} ({spec.label!r}) has no column {col!r} in these frames",
                         field=spec.key)
    values = frames.main[col]
    if values.map(lambda v: isinstance(v, (list, tuple))).any():  # multi choice / roles
        values = values.map(lambda v: [i for i in v if i is not None and not is_missing(i)] or pd.NA
                            if isinstance(v, (list, tuple)) else v).explode()
    labels = category_labels(values)
    return labels.value_counts().astype(int)


def _connection_counts(frames: Frames, spec: FieldSpec) -> pd.Series:
    table = frames.tables.get(spec.key)
    if table is None:
        table = frames.tables.get(column_prefix(frames, spec))
    if table is None:
        raise UsageError(f"connection {spec.key} ({spec.label!r}) has no table in "
                         f"frames.tables; tables: {', '.join(frames.tables) or 'none'}",
                         field=spec.key)
    ids = table["connected_id"].astype("string")
    names = table["identifier"].astype("string") if "identifier" in table.columns else ids
    names = names.fillna(ids)
    # Two connected records may share an identifier: keep them apart by their id.
    per_name = pd.DataFrame({"id": ids, "name": names}).drop_duplicates()
    shared = per_name["name"].duplicated(keep=False)
    label_of = {r.id: (f"{r.name} ({r.id})" if s else r.name)
                for r, s in zip(per_name.itertuples(), shared, strict=True)}
    counts = ids.map(label_of).value_counts().astype(int)
    unconnected = len(set(frames.main.index) - set(table["record_id"].astype(str)))
    if unconnected:
        counts = pd.concat([counts, pd.Series({BLANK: unconnected})])
    return counts
