"""plot_locations: the records of an address field scattered at their coordinates."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ..errors import UsageError
from ..frames import Frames
from ..kinds import BLANK
from .fields import (
    category_labels,
    color_column,
    column_prefix,
    new_axes,
    require_kind,
    resolve_field,
    set_title,
)

if TYPE_CHECKING:  # matplotlib is imported lazily: importing svc_frames must stay cheap
    from matplotlib.axes import Axes

LOCATION_KINDS = ("address",)
_MAX_LEGEND = 12  # categorical colours beyond this are folded into "other"

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
    require_kind(spec, LOCATION_KINDS, "plot_locations")
    prefix = column_prefix(frames, spec)
    main = frames.main
    lat_col, lon_col = f"{prefix}.latitude", f"{prefix}.longitude"
    if lat_col not in main.columns or lon_col not in main.columns:
        raise UsageError(f"{spec.key} ({spec.label!r}) has no {lat_col}/{lon_col} columns "
                         "in these frames", field=spec.key)
    colour = color_column(frames, color_by) if color_by is not None else None
    lat = pd.to_numeric(main[lat_col], errors="coerce").astype("Float64")
    lon = pd.to_numeric(main[lon_col], errors="coerce").astype("Float64")
    keep = (lat.notna() & lon.notna()).to_numpy(dtype=bool)
    if ax is None:
        ax = new_axes((8.0, 6.5))
    x = lon[keep].to_numpy(dtype=float)
    y = lat[keep].to_numpy(dtype=float)
    missing = int((~keep).sum())
    places, crowd = _overlaps(x, y)
    note = f"{int(keep.sum())} of {len(main)} records" + (
        f" at {places} places" if 0 < places < len(x) else "") + (
        f"; {missing} without coordinates" if missing else "")
    set_title(ax, f"Locations: {spec.label}", frames, note, title)
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
    labels = category_labels(colour)
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
