"""plot_over_time: records per day, week, month, quarter or year of a date field."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..errors import UsageError
from ..frames import Frames
from .fields import column_prefix, new_axes, require_kind, resolve_field, set_title

if TYPE_CHECKING:  # matplotlib is imported lazily: importing svc_frames must stay cheap
    from matplotlib.axes import Axes

TIME_KINDS = ("date_time", "timer")

# Period frequencies offered, and the word used in titles.
_FREQS = {"D": "day", "W": "week", "M": "month", "Q": "quarter", "Y": "year"}
_DAYS = {"D": 1.0, "W": 7.0, "M": 30.44, "Q": 91.31, "Y": 365.25}  # a bin's mean length
MAX_BARS = 600  # more bars draw slowly and no screen shows them apart


def plot_over_time(frames: Frames, date_field: str, freq: str = "W", *,
                   ax: Axes | None = None, title: str | None = None) -> Axes:
    """Bars of records per day, week, month, quarter or year of a date field.

    Dates are counted on the application's wall clock (the frames' timezone); records
    without a date are left out and counted in the title. When ``freq`` would draw more
    than ``MAX_BARS`` (600) bars, the finest coarser period that fits is used and the
    title says so. A field is given by key (``"field_29"``) or by label (``"Due"``, any
    case); columns are found as the frames name them (docs/column-names.md).

    Parameters
    ----------
    frames : Frames
        Loaded frames.
    date_field : str
        A date/time or timer field (its start is counted).
    freq : {"D", "W", "M", "Q", "Y"}, default "W"
        The period of a bar.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new figure.
    title : str, optional
        Replaces the generated title (the counts stay below it).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    UsageError
        An unknown field (or a label naming several), a field of another kind, frames
        without its column (or one that does not hold dates), or an unknown ``freq``.

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> ax = plot_over_time(frames, "Due", freq="M")
    >>> ax.get_ylabel()
    'Records per month'
    >>> int(sum(bar.get_height() for bar in ax.patches)), int(frames.main["Due"].notna().sum())
    (28, 28)
    """
    spec = resolve_field(frames, date_field)
    require_kind(spec, TIME_KINDS, "plot_over_time")
    if freq not in _FREQS:
        raise UsageError(f"freq must be one of {', '.join(_FREQS)}, got {freq!r}")
    unit = _FREQS[freq]
    col = column_prefix(frames, spec)
    if col not in frames.main.columns:
        raise UsageError(f"{spec.key} ({spec.label!r}) has no column {col!r} in these frames",
                         field=spec.key)
    when = frames.main[col]
    if not isinstance(when.dtype, pd.DatetimeTZDtype) and not pd.api.types.is_datetime64_dtype(
            when.dtype):
        raise UsageError(f"column {col!r} is {when.dtype}, not dates", field=spec.key)
    dated = when.dropna()
    if ax is None:
        ax = new_axes((9.0, 4.2))
    missing = len(when) - len(dated)
    note = f"{len(dated)} records" + (f"; {missing} without a date" if missing else "")
    set_title(ax, f"Records per {unit} by {spec.label}", frames, note, title)
    ax.set_ylabel(f"Records per {unit}")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if dated.empty:
        ax.set_xlabel(spec.label)
        ax.text(0.5, 0.5, "No dates", ha="center", va="center", transform=ax.transAxes,
                color="0.4")
        return ax
    tz = getattr(dated.dtype, "tz", None)
    # Count on the app's wall clock (the frame is tz-aware in the app timezone) by period.
    wall = dated.dt.tz_localize(None) if tz is not None else dated
    freq, wall, said = _bins(wall, freq)
    if said:
        unit = _FREQS[freq]
        set_title(ax, f"Records per {unit} by {spec.label}", frames, f"{note}; {said}", title)
        ax.set_ylabel(f"Records per {unit}")
    periods = wall.dt.to_period(freq)
    full = pd.period_range(periods.min(), periods.max(), freq=freq)
    counts = periods.value_counts().reindex(full, fill_value=0)
    starts = full.start_time
    widths = ((full.end_time - starts).total_seconds() / 86400 * 0.85).to_numpy()
    ax.bar(starts.to_pydatetime(), counts.to_numpy(dtype=float), width=widths,
           align="edge", color="C0")
    import matplotlib.dates as mdates
    from matplotlib.ticker import MaxNLocator

    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]  # untyped in matplotlib
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(
        mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_xlabel(f"{spec.label}" + (f" ({tz})" if tz is not None else ""))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return ax


def _bins(wall: pd.Series, freq: str) -> tuple[str, pd.Series, str]:
    """(freq, dates, what was changed) so that at most ``MAX_BARS`` bars are drawn: the
    asked bins when they fit, else the finest coarser ones that do; when even years do
    not, the ``MAX_BARS`` years around the median, the records outside left out (said)."""
    days = (wall.max() - wall.min()).total_seconds() / 86400
    order = list(_FREQS)
    asked = freq
    for f in order[order.index(freq):]:
        freq = f
        if days / _DAYS[f] + 2 <= MAX_BARS:
            break
    said = "" if freq == asked else (f"per {_FREQS[freq]}: per {_FREQS[asked]} would be "
                                     f"{int(days / _DAYS[asked]) + 1:,} bars")
    if days / _DAYS[freq] + 2 <= MAX_BARS:
        return freq, wall, said
    mid = pd.Timestamp(wall.median())
    half = pd.Timedelta(days=_DAYS["Y"] * (MAX_BARS - 2) / 2)
    lo, hi = mid - half, mid + half
    keep = (wall >= lo) & (wall <= hi)
    said += (f"; {int((~keep).sum()):,} records outside {lo:%Y}-{hi:%Y} not shown")
    return freq, wall[keep], said.lstrip("; ")
