"""Quick, readable matplotlib plots of loaded frames: where, how many, and when.

Every function takes the ``Frames`` a loader returned and a field given by key
(``"field_21"``) or by label (``"Address"``), draws on ``ax`` (a new figure when omitted),
and returns the Axes. Titles and axis labels come from the field labels.

Usage::

    from svc_frames.plot import plot_counts, plot_locations, plot_over_time
    ax = plot_locations(frames, "Address", color_by="Status")
    ax.figure.savefig("locations.png")
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from .errors import UsageError
from .frames import Frames
from .kinds import BLANK
from .kinds.base import FieldSpec

if TYPE_CHECKING:  # matplotlib is imported lazily: importing svc_frames must stay cheap
    from matplotlib.axes import Axes

__all__ = ["plot_locations", "plot_counts", "plot_over_time", "LOCATION_KINDS",
           "COUNT_KINDS", "TIME_KINDS"]

LOCATION_KINDS = ("address",)
COUNT_KINDS = ("multiple_choice", "connection", "boolean", "user_roles")
TIME_KINDS = ("date_time", "timer")

# Period frequencies offered, and the word used in titles.
_FREQS = {"D": "day", "W": "week", "M": "month", "Q": "quarter", "Y": "year"}
_DAYS = {"D": 1.0, "W": 7.0, "M": 30.44, "Q": 91.31, "Y": 365.25}  # a bin's mean length
MAX_BARS = 600  # more bars draw slowly and no screen shows them apart
_MAX_LEGEND = 12  # categorical colours beyond this are folded into "other"


# ---- resolving a field given by key or label ---------------------------------------------
def _fields(frames: Frames) -> list[FieldSpec]:
    return list(frames.source.fields) if frames.source is not None else []


def _prefix(frames: Frames, spec: FieldSpec) -> str:
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


def _require_kind(spec: FieldSpec, kinds: tuple[str, ...], what: str) -> None:
    if spec.kind not in kinds:
        allowed = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
        raise UsageError(f"{what} takes a field of kind {allowed}; "
                         f"{spec.key} ({spec.label!r}) is {spec.kind}", field=spec.key)


def _column(frames: Frames, name: str) -> pd.Series:
    """A main-frame column for ``color_by``: a column name, or a field key/label whose
    value column (the bare ``field_N``) exists."""
    main = frames.main
    if name in main.columns:
        return main[name].rename(_column_label(frames, name))
    spec = resolve_field(frames, name)
    col = _prefix(frames, spec)
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
        if _prefix(frames, spec) == base:
            return spec.label + dot + rest
    return str(column)


def _new_axes(figsize: tuple[float, float]) -> Axes:
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


def _title(ax: Axes, text: str, frames: Frames, note: str = "",
           title: str | None = None) -> None:
    sub = ", ".join(p for p in (_source_name(frames) if title is None else "", note) if p)
    ax.set_title((text if title is None else title) + (f"\n{sub}" if sub else ""),
                 fontsize=12)


# ---- plots ---------------------------------------------------------------------------------
Density = Literal["auto", "scatter", "jitter", "hexbin"]
BasemapOption = bool | str | Callable[["Axes"], None] | None

HEXBIN_FROM = 3000
"""With ``density="auto"`` and no colour, this many points or more are drawn as hexagons
coloured by how many records each holds: single points would only make a blot."""


def plot_locations(frames: Frames, address_field: str, color_by: str | None = None, *,
                   ax: Axes | None = None, size: float | None = None,
                   title: str | None = None, density: Density = "auto",
                   basemap: BasemapOption = "auto") -> Axes:
    """Scatter the records of an address field at their longitude and latitude.

    Records without coordinates are left out and counted in the title. Overlapping
    records stay visible (``density``), and a map drawn without tiles still reads as one
    (ticks in degrees with their hemisphere). Titles and axis labels come from the field
    labels; records without a ``color_by`` value are drawn grey as ``(blank)``.
    A field is given by key (``"field_34"``) or by label (``"Site"``, any case);
    columns are found as the frames name them (docs/column-names.md).

    Parameters
    ----------
    frames : Frames
        Loaded frames (``read_object``, ``read_view``, ``read_parquet``).
    address_field : str
        An address field, whose ``.latitude`` and ``.longitude`` columns are drawn.
    color_by : str, optional
        A field (key or label) or a main-frame column colouring the points: a legend
        for categories (the 11 most frequent, the rest as "other"), a colour bar for
        numbers.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new figure.
    size : float, optional
        The marker area; default: smaller as points get more numerous.
    title : str, optional
        Replaces the generated title (the counts stay below it).
    density : {"auto", "scatter", "jitter", "hexbin"}, default "auto"
        ``"jitter"`` spreads records that share a place on a small ring around it,
        ``"hexbin"`` draws hexagons coloured by how many records each holds,
        ``"scatter"`` draws the points as they are; ``"auto"`` jitters shared places,
        draws points lighter as they crowd, and hexagons from ``HEXBIN_FROM`` (3000)
        points on when nothing is coloured.
    basemap : bool, str or callable, default "auto"
        Map tiles under the points (the ``maps`` extra, contextily): ``"auto"`` when it
        is installed, True to require it, False or None for none, a provider name
        (``"OpenStreetMap.Mapnik"``), or ``draw(ax)`` drawing its own. Offline, or when
        the tiles fail, the plot says so in a corner.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    UsageError
        An unknown field (or a label naming several), a field that is not an address,
        frames without its coordinate columns, a ``color_by`` that names no column (or a
        field of several columns), a bad ``density``, or ``basemap=True`` (or a
        provider) without the tile library or with an unknown provider.

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> ax = plot_locations(frames, "Site", color_by="Status", basemap=False)
    >>> ax.get_xlabel(), ax.get_legend().get_title().get_text()
    ('Longitude (Site)', 'Status')
    >>> ax.figure.savefig(tmp_path / "sites.png")
    """
    if density not in ("auto", "scatter", "jitter", "hexbin"):
        raise UsageError(f"density must be 'auto', 'scatter', 'jitter' or 'hexbin', got "
                         f"{density!r}")
    draw_tiles = _basemap_drawer(basemap)  # before drawing: a missing extra is refused
    spec = resolve_field(frames, address_field)
    _require_kind(spec, LOCATION_KINDS, "plot_locations")
    prefix = _prefix(frames, spec)
    main = frames.main
    lat_col, lon_col = f"{prefix}.latitude", f"{prefix}.longitude"
    if lat_col not in main.columns or lon_col not in main.columns:
        raise UsageError(f"{spec.key} ({spec.label!r}) has no {lat_col}/{lon_col} columns "
                         "in these frames", field=spec.key)
    colour = _column(frames, color_by) if color_by is not None else None
    lat = pd.to_numeric(main[lat_col], errors="coerce").astype("Float64")
    lon = pd.to_numeric(main[lon_col], errors="coerce").astype("Float64")
    keep = (lat.notna() & lon.notna()).to_numpy(dtype=bool)
    if ax is None:
        ax = _new_axes((8.0, 6.5))
    x = lon[keep].to_numpy(dtype=float)
    y = lat[keep].to_numpy(dtype=float)
    missing = int((~keep).sum())
    places, crowd = _overlaps(x, y)
    note = f"{int(keep.sum())} of {len(main)} records" + (
        f" at {places} places" if 0 < places < len(x) else "") + (
        f"; {missing} without coordinates" if missing else "")
    _title(ax, f"Locations: {spec.label}", frames, note, title)
    ax.set_xlabel(f"Longitude ({spec.label})")
    ax.set_ylabel(f"Latitude ({spec.label})")
    _degree_axes(ax)
    ax.grid(True, alpha=0.3, linewidth=0.5)
    if not keep.any():
        ax.text(0.5, 0.5, "No records with coordinates", ha="center", va="center",
                transform=ax.transAxes, color="0.4")
        return ax
    mode = density
    if mode == "auto":
        mode = "hexbin" if colour is None and len(x) >= HEXBIN_FROM else (
            "jitter" if places < len(x) else "scatter")
    if mode == "hexbin":
        cells = ax.hexbin(x, y, gridsize=max(10, min(60, int(math.sqrt(len(x)) / 2))),
                          mincnt=1, cmap="viridis", bins="log" if crowd > 50 else None)
        ax.figure.colorbar(cells, ax=ax, label="records", shrink=0.85)
    else:
        if mode == "jitter":
            x, y = _spread(x, y)
        if size is None:  # smaller points when there are many
            size = 18.0 if len(x) <= 300 else 10.0 if len(x) <= 3000 else 4.0
        # crowded maps get lighter points, so where many overlap shows darker
        alpha = float(min(0.85, max(0.15, 1.6 / math.sqrt(max(len(x) / 100, crowd, 1)))))
        if colour is None:
            ax.scatter(x, y, s=size, alpha=alpha, edgecolors="none")
        else:
            _scatter_coloured(ax, x, y, colour[keep], size, alpha)
    # Degrees of longitude shrink with latitude: keep the map from looking stretched.
    mid = float(y.mean())
    ax.set_aspect(1.0 / max(math.cos(math.radians(mid)), 0.1), adjustable="datalim")
    if draw_tiles is not None:
        try:
            draw_tiles(ax)
        except Exception as exc:  # offline, a tile server down, a bad provider: no map
            ax.text(0.01, 0.01, f"basemap unavailable ({type(exc).__name__})",
                    transform=ax.transAxes, fontsize=7, color="0.45", ha="left",
                    va="bottom")
    return ax


def _degree_axes(ax: Axes) -> None:
    """Ticks read as degrees with their hemisphere (``97.75°W``, ``30.27°N``), so a map
    drawn without tiles still reads as a map."""
    from matplotlib.ticker import FuncFormatter

    def fmt(pos: str, neg: str) -> FuncFormatter:
        return FuncFormatter(lambda v, _: f"{abs(v):.4g}°{pos if v >= 0 else neg}")

    ax.xaxis.set_major_formatter(fmt("E", "W"))
    ax.yaxis.set_major_formatter(fmt("N", "S"))


def _overlaps(x: np.ndarray, y: np.ndarray) -> tuple[int, int]:
    """(distinct places, records at the most crowded place); a place is ~1 m across."""
    if not len(x):
        return 0, 0
    keys = pd.Series(list(zip(np.round(x, 5), np.round(y, 5), strict=True)))
    counts = keys.value_counts()
    return int(len(counts)), int(counts.iloc[0])


def _spread(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Records sharing a place set on a small ring (sunflower pattern) around it, so each
    stays visible; the ring grows with the count and stays under 1% of the map's span.
    Deterministic: the same frames give the same picture."""
    span = max(float(np.ptp(x)) if len(x) else 0.0, float(np.ptp(y)) if len(y) else 0.0)
    _, crowd = _overlaps(x, y)
    # the most crowded place fills a disc of 0.8% of the span, evenly (sunflower)
    step = (span or 0.01) * 0.008 / math.sqrt(max(crowd - 1, 1))
    keys = list(zip(np.round(x, 5), np.round(y, 5), strict=True))
    seen: dict[tuple[float, float], int] = {}
    x2, y2 = x.copy(), y.copy()
    golden = math.pi * (3 - math.sqrt(5))
    for i, k in enumerate(keys):
        n = seen.get(k, 0)
        seen[k] = n + 1
        if n:
            r = step * math.sqrt(n)
            x2[i] += r * math.cos(n * golden)
            y2[i] += r * math.sin(n * golden)
    return x2, y2


def _basemap_drawer(basemap: BasemapOption) -> Callable[[Axes], None] | None:
    """What draws the tiles, or None; UsageError when they are asked for and cannot be."""
    if basemap is None or basemap is False:
        return None
    if callable(basemap):
        return basemap
    if basemap not in ("auto", True) and not isinstance(basemap, str):
        raise UsageError(f"basemap must be 'auto', True, False, a provider name or a "
                         f"callable, got {basemap!r}")
    try:
        import contextily  # the optional 'maps' extra
    except ImportError:
        if basemap == "auto":
            return None
        raise UsageError("a basemap needs the optional tile library: "
                         "pip install 'svc-frames[maps]' (contextily)") from None
    provider: Any = None
    if isinstance(basemap, str) and basemap != "auto":
        try:
            provider = contextily.providers.query_name(basemap)
        except (ValueError, KeyError):
            raise UsageError(f"unknown basemap provider {basemap!r} (e.g. "
                             "'OpenStreetMap.Mapnik', 'CartoDB.Positron')") from None

    def draw(ax: Axes) -> None:
        options: dict[str, Any] = {"crs": "EPSG:4326", "attribution_size": 6}
        if provider is not None:
            options["source"] = provider
        contextily.add_basemap(ax, **options)

    return draw


def _scatter_coloured(ax: Axes, x: Any, y: Any, colour: pd.Series, size: float,
                      alpha: float = 0.8) -> None:
    name = str(colour.name)
    if pd.api.types.is_numeric_dtype(colour.dtype) and not pd.api.types.is_bool_dtype(
            colour.dtype):
        values = pd.to_numeric(colour, errors="coerce").astype("Float64")
        known = values.notna().to_numpy(dtype=bool)
        if (~known).any():
            ax.scatter(x[~known], y[~known], s=size, c="0.75", alpha=0.6, edgecolors="none",
                       label=BLANK)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
        points = ax.scatter(x[known], y[known], s=size, c=values[known].to_numpy(dtype=float),
                            cmap="viridis", alpha=alpha, edgecolors="none")
        ax.figure.colorbar(points, ax=ax, label=name, shrink=0.85)
        return
    labels = _category_labels(colour)
    order = labels.value_counts().index.tolist()
    if len(order) > _MAX_LEGEND:
        keep = set(order[: _MAX_LEGEND - 1])
        labels = labels.where(labels.isin(keep), "other")
        order = order[: _MAX_LEGEND - 1] + ["other"]
    import matplotlib as mpl

    cmap = mpl.colormaps["tab20" if len(order) > 10 else "tab10"]
    arr = labels.to_numpy(dtype=object)
    for i, cat in enumerate(order):
        sel = arr == cat
        grey = cat in (BLANK, "other")
        # grey groups go underneath, so they never hide a coloured point
        ax.scatter(x[sel], y[sel], s=size, alpha=alpha, edgecolors="none",
                   color="0.7" if grey else cmap(i % cmap.N), label=f"{cat} ({int(sel.sum())})",
                   zorder=1 if grey else 2)
    ax.legend(title=name, loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8,
              title_fontsize=9, frameon=False)


def _category_labels(values: pd.Series) -> pd.Series:
    """Values as display strings; list cells (multi choices) joined; blanks as ``BLANK``."""
    def one(v: Any) -> str:
        if isinstance(v, (list, tuple)):
            items = [str(i) for i in v if i is not None and not _isna(i)]
            return ", ".join(items) if items else BLANK
        if _isna(v) or v == "":
            return BLANK
        if isinstance(v, (bool, np.bool_)):  # boolean columns iterate as numpy bools
            return "Yes" if v else "No"
        return str(v)

    return pd.Series([one(v) for v in values], index=values.index, dtype=object)


def _isna(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):  # arrays are not scalars: not NA
        return False


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
    _require_kind(spec, COUNT_KINDS, "plot_counts")
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
        ax = _new_axes((8.0, min(2.0 + 0.38 * max(len(counts), 1), 12.0)))
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
    _title(ax, f"Records by {spec.label}", frames, note, title)
    if counts.empty:
        ax.text(0.5, 0.5, "No values", ha="center", va="center", transform=ax.transAxes,
                color="0.4")
    return ax


def _shorten(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _value_counts(frames: Frames, spec: FieldSpec) -> pd.Series:
    col = _prefix(frames, spec)
    if col not in frames.main.columns:
        raise UsageError(f"{spec.key} ({spec.label!r}) has no column {col!r} in these frames",
                         field=spec.key)
    values = frames.main[col]
    if values.map(lambda v: isinstance(v, (list, tuple))).any():  # multi choice / roles
        values = values.map(lambda v: [i for i in v if i is not None and not _isna(i)] or pd.NA
                            if isinstance(v, (list, tuple)) else v).explode()
    labels = _category_labels(values)
    return labels.value_counts().astype(int)


def _connection_counts(frames: Frames, spec: FieldSpec) -> pd.Series:
    table = frames.tables.get(spec.key)
    if table is None:
        table = frames.tables.get(_prefix(frames, spec))
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
    _require_kind(spec, TIME_KINDS, "plot_over_time")
    if freq not in _FREQS:
        raise UsageError(f"freq must be one of {', '.join(_FREQS)}, got {freq!r}")
    unit = _FREQS[freq]
    col = _prefix(frames, spec)
    if col not in frames.main.columns:
        raise UsageError(f"{spec.key} ({spec.label!r}) has no column {col!r} in these frames",
                         field=spec.key)
    when = frames.main[col]
    if not isinstance(when.dtype, pd.DatetimeTZDtype) and not pd.api.types.is_datetime64_dtype(
            when.dtype):
        raise UsageError(f"column {col!r} is {when.dtype}, not dates", field=spec.key)
    dated = when.dropna()
    if ax is None:
        ax = _new_axes((9.0, 4.2))
    missing = len(when) - len(dated)
    note = f"{len(dated)} records" + (f"; {missing} without a date" if missing else "")
    _title(ax, f"Records per {unit} by {spec.label}", frames, note, title)
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
        _title(ax, f"Records per {unit} by {spec.label}", frames, f"{note}; {said}", title)
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
