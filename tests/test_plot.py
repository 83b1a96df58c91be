"""svc_frames.plot: the plots draw what the frames hold, label from fields, refuse bad fields."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from svc_frames import FieldSpec, Frames, Source
from svc_frames.errors import UsageError
from svc_frames.kinds import BLANK
from svc_frames.plot import plot_counts, plot_locations, plot_over_time

TZ = "America/Chicago"


def synthetic(n: int = 60, seed: int = 1, columns: str = "keys") -> Frames:
    """Frames shaped per ARCHITECTURE.md (used where the point is the plotting itself)."""
    rng = np.random.default_rng(seed)
    ids = pd.Index([f"r{i:03d}" for i in range(n)], name="id", dtype="string")
    fields = [
        FieldSpec("field_1", "short_text", "Name"),
        FieldSpec("field_2", "address", "Site Address"),
        FieldSpec("field_3", "multiple_choice", "Status", format={"type": "single"}),
        FieldSpec("field_4", "multiple_choice", "Tags", format={"type": "multi"}),
        FieldSpec("field_5", "date_time", "Visit Date"),
        FieldSpec("field_6", "connection", "Customer"),
        FieldSpec("field_7", "number", "Amount"),
    ]
    lat = pd.array(rng.normal(30.3, 0.1, n), dtype="Float64")
    lat[:3] = pd.NA
    dates = pd.Series(pd.Timestamp("2026-03-01", tz=TZ)
                      + pd.to_timedelta(rng.integers(0, 90 * 24, n), unit="h"), index=ids)
    dates.iloc[-2:] = pd.NaT
    main = pd.DataFrame({
        "field_1": pd.array([f"name {i}" for i in range(n)], dtype="string"),
        "field_2.latitude": lat,
        "field_2.longitude": pd.array(rng.normal(-97.7, 0.1, n), dtype="Float64"),
        "field_3": pd.array(rng.choice(["open", "closed", "pending", None], n), dtype="string"),
        "field_4": [list(rng.choice(["a", "b", "c"], int(rng.integers(0, 3)), replace=False))
                    for _ in range(n)],
        "field_5": dates,
        "field_7": pd.array(rng.gamma(2, 50, n), dtype="Float64"),
    }, index=ids)
    rid = [i for i in ids for _ in range(int(rng.integers(0, 3)))]
    cid = rng.choice(["c1", "c2", "c3"], len(rid))
    names = {"c1": "Ann Lee", "c2": "Bo Chan", "c3": "Ann Lee"}  # two customers share a name
    table = pd.DataFrame({"record_id": pd.array(rid, dtype="string"),
                          "connected_id": pd.array(cid, dtype="string"),
                          "identifier": pd.array([names[c] for c in cid], dtype="string")})
    source = Source(kind="object", object_key="object_1", fields=fields, timezone=TZ)
    if columns == "labels":
        by_key = {f.key: f.label for f in fields}
        main = main.rename(columns=lambda c: by_key[c.split(".")[0]] + c[len(c.split(".")[0]):])
        source.columns = "labels"
    return Frames(main, {"field_6": table}, source)


@pytest.fixture(autouse=True)
def _close_figures():
    # imported here, not at collection: each of make test's workers would import pyplot
    import matplotlib
    matplotlib.use("Agg")  # headless: before svc_frames.plot imports pyplot
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def bar_values(ax) -> dict[str, float]:
    labels = [t.get_text() for t in ax.get_yticklabels()]
    widths = [p.get_width() for p in ax.patches]
    # barh draws bottom-up in tick order; ticks are set on the same positions.
    pos = [p.get_y() + p.get_height() / 2 for p in ax.patches]
    ticks = list(ax.get_yticks())
    return {labels[ticks.index(round(y))]: w for y, w in zip(pos, widths, strict=True)}


def test_locations_plots_every_record_with_coordinates_labelled_from_the_field() -> None:
    frames = synthetic()
    ax = plot_locations(frames, "Site Address")
    points = sum(len(c.get_offsets()) for c in ax.collections)
    expected = int((frames.main["field_2.latitude"].notna()
                    & frames.main["field_2.longitude"].notna()).sum())
    assert points == expected
    assert "Site Address" in ax.get_title()
    assert "Longitude" in ax.get_xlabel() and "Site Address" in ax.get_xlabel()
    assert "Latitude" in ax.get_ylabel()
    assert f"{len(frames) - expected} without coordinates" in ax.get_title()


def test_locations_colour_by_category_gives_a_legend_and_by_number_a_colour_bar() -> None:
    frames = synthetic()
    ax = plot_locations(frames, "field_2", color_by="field_3")  # a key: titled by label
    assert ax.get_legend().get_title().get_text() == "Status"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    keep = frames.main["field_2.latitude"].notna()
    for status, n in frames.main.loc[keep, "field_3"].value_counts().items():
        assert f"{status} ({n})" in legend
    assert any(t.startswith(BLANK) for t in legend)

    import matplotlib.pyplot as plt
    fig, ax2 = plt.subplots()
    out = plot_locations(frames, "field_2", color_by="Amount", ax=ax2)
    assert out is ax2
    assert len(fig.axes) == 2  # the plot and its colour bar
    assert fig.axes[1].get_ylabel() == "Amount"


def test_counts_of_a_single_choice_match_value_counts() -> None:
    frames = synthetic()
    ax = plot_counts(frames, "Status")
    bars = bar_values(ax)
    expected = frames.main["field_3"].value_counts()
    for value, n in expected.items():
        assert bars[value] == n
    assert bars[BLANK] == frames.main["field_3"].isna().sum()
    assert ax.get_ylabel() == "Status" and "Status" in ax.get_title()


def test_counts_of_a_multi_choice_count_each_option() -> None:
    frames = synthetic()
    bars = bar_values(plot_counts(frames, "field_4"))
    exploded = frames.main["field_4"].explode().dropna()
    for value, n in exploded.value_counts().items():
        assert bars[value] == n
    assert bars[BLANK] == sum(1 for v in frames.main["field_4"] if not v)


def test_counts_of_a_connection_use_identifiers_and_keep_namesakes_apart() -> None:
    frames = synthetic()
    bars = bar_values(plot_counts(frames, "Customer"))
    table = frames.tables["field_6"]
    per_id = table["connected_id"].value_counts()
    assert bars["Ann Lee (c1)"] == per_id["c1"]
    assert bars["Ann Lee (c3)"] == per_id["c3"]
    assert bars["Bo Chan"] == per_id["c2"]
    assert bars[BLANK] == len(set(frames.main.index) - set(table["record_id"]))


def test_counts_fold_the_tail_into_one_bar() -> None:
    frames = synthetic()
    bars = bar_values(plot_counts(frames, "Status", top=2))
    assert len(bars) == 2
    folded = [k for k in bars if k.endswith("others")]
    assert folded and sum(bars.values()) == len(frames)
    ax = plot_counts(frames, "Status", top=2, others=False)
    every = frames.main["field_3"].astype(object).fillna(BLANK).value_counts()
    shown = bar_values(ax)
    assert sorted(shown.values()) == sorted(every.iloc[:2].tolist())  # ties may swap names
    assert all(shown[k] == every[k] for k in shown)
    assert "top 2 of" in ax.get_title()


def test_over_time_bars_sum_to_the_dated_records() -> None:
    frames = synthetic()
    for freq in ("D", "W", "M"):
        ax = plot_over_time(frames, "Visit Date", freq=freq)
        heights = [p.get_height() for p in ax.patches]
        assert sum(heights) == frames.main["field_5"].notna().sum()
        assert "Visit Date" in ax.get_title() and TZ in ax.get_xlabel()
    month = plot_over_time(frames, "field_5", freq="M")
    months = frames.main["field_5"].dropna().dt.tz_localize(None).dt.to_period("M")
    assert len(month.patches) == len(pd.period_range(months.min(), months.max(), freq="M"))


def test_columns_by_label_work_the_same() -> None:
    frames = synthetic(columns="labels")
    assert "Site Address.latitude" in frames.main.columns
    ax = plot_locations(frames, "field_2", color_by="Status")
    assert sum(len(c.get_offsets()) for c in ax.collections) == int(
        frames.main["Site Address.latitude"].notna().sum())
    bars = bar_values(plot_counts(frames, "Status"))
    assert sum(bars.values()) == len(frames)
    plot_over_time(frames, "Visit Date")


@pytest.mark.parametrize(("call", "kinds"), [
    (lambda f: plot_locations(f, "Status"), "address"),
    (lambda f: plot_counts(f, "Amount"), "multiple_choice, connection, boolean or user_roles"),
    (lambda f: plot_over_time(f, "Name"), "date_time or timer"),
])
def test_a_field_of_the_wrong_kind_says_which_kinds_it_takes(call, kinds) -> None:
    with pytest.raises(UsageError) as info:
        call(synthetic())
    assert kinds in str(info.value)


def test_unknown_fields_and_bad_options_are_named() -> None:
    frames = synthetic()
    with pytest.raises(UsageError, match="Nope"):
        plot_counts(frames, "Nope")
    with pytest.raises(UsageError, match="freq"):
        plot_over_time(frames, "Visit Date", freq="H")
    with pytest.raises(UsageError, match="Customer"):
        plot_locations(frames, "Site Address", color_by="Customer")  # no main column
    with pytest.raises(UsageError, match="top"):
        plot_counts(frames, "Status", top=0)


# ---- on frames loaded from the local service (the real pipeline) -------------------------
def test_plots_of_loaded_work_orders(client) -> None:
    from svc_frames.loaders import read_object

    frames = read_object(client, "object_3", progress=False, columns="keys")  # Work Orders (server/demo_app.py)
    site = frames.source.field("field_34").label
    ax = plot_locations(frames, site, color_by="field_27", title="Work order sites")
    assert ax.get_title().startswith("Work order sites")
    located = frames.main["field_34.latitude"].notna() & frames.main["field_34.longitude"].notna()
    assert sum(len(c.get_offsets()) for c in ax.collections) == int(located.sum())

    bars = bar_values(plot_counts(frames, "field_41", top=100))  # connection to Parts
    table = frames.tables["field_41"]
    for ident, n in table.groupby("identifier")["record_id"].count().items():
        if ident in bars:  # namesakes are shown with their id
            assert bars[ident] == n

    urgent = bar_values(plot_counts(frames, "field_26"))  # boolean: Yes / No / (blank)
    assert urgent.get("Yes", 0) == int((frames.main["field_26"] == True).sum())  # noqa: E712
    assert sum(urgent.values()) == len(frames)

    ax = plot_over_time(frames, "field_29", freq="M")
    assert sum(p.get_height() for p in ax.patches) == frames.main["field_29"].notna().sum()
    assert str(frames.main["field_29"].dt.tz) in ax.get_xlabel()
    with pytest.raises(UsageError, match="date_time or timer"):
        plot_over_time(frames, "field_34")  # an address


def test_plot_counts_on_a_view_loaded_with_label_columns(client) -> None:
    from svc_frames.loaders import read_view

    frames = read_view(client, "scene_1", "view_1", columns="labels", progress=False)
    status = frames.source.field("field_27").label
    assert status in frames.main.columns
    bars = bar_values(plot_counts(frames, status))
    assert sum(bars.values()) == len(frames)


def stacked(n: int, places: int) -> Frames:
    """``n`` records at ``places`` sites: what work orders at a few depots look like."""
    fields = [FieldSpec("field_2", "address", "Site")]
    ids = pd.Index([f"r{i:05d}" for i in range(n)], name="id", dtype="string")
    rng = np.random.default_rng(3)
    lat_site = rng.normal(30.3, 0.2, places)
    lon_site = rng.normal(-97.7, 0.2, places)
    main = pd.DataFrame({"field_2.latitude": pd.array(lat_site[np.arange(n) % places],
                                                      dtype="Float64"),
                         "field_2.longitude": pd.array(lon_site[np.arange(n) % places],
                                                       dtype="Float64")}, index=ids)
    return Frames(main, {}, Source(kind="object", object_key="object_1", fields=fields,
                                   timezone=TZ))


def offsets(ax) -> np.ndarray:
    return np.concatenate([c.get_offsets() for c in ax.collections])


def test_locations_spread_records_that_share_a_place() -> None:
    frames = stacked(40, 4)
    ax = plot_locations(frames, "Site", basemap=False)
    pts = offsets(ax)
    assert len(pts) == 40 and len({tuple(p) for p in pts}) == 40  # each one visible
    assert "40 of 40 records at 4 places" in ax.get_title()
    # each point stays next to its own place (well under 1% of the map's span away)
    main = frames.main
    truth = np.column_stack([main["field_2.longitude"].to_numpy(float),
                             main["field_2.latitude"].to_numpy(float)])
    span = np.ptp(truth, axis=0).max()
    assert np.abs(pts - truth).max() < 0.01 * span
    plain = plot_locations(frames, "Site", density="scatter", basemap=False)
    assert len({tuple(p) for p in offsets(plain)}) == 4  # as they are: stacked
    # crowded points are lighter, so density shows
    assert ax.collections[0].get_alpha() < plot_locations(
        stacked(40, 40), "Site", basemap=False).collections[0].get_alpha()


def test_locations_of_many_records_are_binned_by_density() -> None:
    n = 3500
    ax = plot_locations(stacked(n, 700), "Site", basemap=False)
    cells = ax.collections[0]
    assert int(np.asarray(cells.get_array()).sum()) == n  # every record in a hexagon
    assert ax.figure.axes[1].get_ylabel() == "records"
    # coloured by a field: points (a legend needs them), not hexagons
    frames = stacked(n, 700)
    frames.main["kind"] = pd.array(["a", "b"] * (n // 2), dtype="string")
    assert len(offsets(plot_locations(frames, "Site", color_by="kind", basemap=False))) == n


def test_basemap_is_optional_and_falls_back_cleanly() -> None:
    frames = stacked(10, 2)
    drawn: list[object] = []
    ax = plot_locations(frames, "Site", basemap=drawn.append)
    assert drawn == [ax]

    def offline(ax: object) -> None:
        raise OSError("no network")

    ax = plot_locations(frames, "Site", basemap=offline)
    assert len(offsets(ax)) == 10  # the points are drawn all the same
    assert any("basemap unavailable" in t.get_text() for t in ax.texts)
    try:
        import contextily  # noqa: F401
    except ImportError:
        ax = plot_locations(frames, "Site")  # "auto" without the extra: no map, no fuss
        assert not ax.texts
        with pytest.raises(UsageError, match=r"svc-frames\[maps\]"):
            plot_locations(frames, "Site", basemap=True)
    with pytest.raises(UsageError, match="density"):
        plot_locations(frames, "Site", density="blobs")  # type: ignore[arg-type]


def test_a_map_without_tiles_reads_as_a_map() -> None:
    """Offline (basemap=False): degrees with their hemisphere on the axes, the aspect
    corrected for latitude, a light grid, and the legend outside the points."""
    frames = synthetic()
    ax = plot_locations(frames, "field_2", color_by="field_3", basemap=False)
    ax.figure.canvas.draw()
    xt = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    yt = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert xt and all("°" in t and t[-1] in "EW" for t in xt)
    assert yt and all("°" in t and t[-1] in "NS" for t in yt)
    lat = frames.main["field_2.latitude"].dropna().astype(float).mean()
    assert ax.get_aspect() == pytest.approx(1 / np.cos(np.radians(lat)), rel=0.05)
    assert any(line.get_visible() for line in ax.get_xgridlines())
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # beside the points, not over them


def test_over_time_chooses_bins_from_the_data_and_says_so() -> None:
    frames = synthetic()
    n = len(frames.main)
    span = pd.date_range("1900-01-01", "2249-12-31", periods=n).tz_localize(TZ)
    frames.main["field_5"] = pd.Series(span, index=frames.main.index)
    ax = plot_over_time(frames, "Visit Date", freq="W")
    assert len(ax.patches) <= 600
    assert sum(p.get_height() for p in ax.patches) == n
    assert "per year: per week would be 18," in ax.get_title()
    assert ax.get_ylabel() == "Records per year"
    ax = plot_over_time(frames, "Visit Date", freq="M")   # 4,200 months: years again
    assert len(ax.patches) == 350 and "per month would be 4,2" in ax.get_title()


def test_over_time_leaves_out_what_no_bins_fit_and_says_how_many(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import svc_frames.plot.overtime as overtime

    monkeypatch.setattr(overtime, "MAX_BARS", 100)
    frames = synthetic()
    n = len(frames.main)
    span = pd.date_range("1900-01-01", "2249-12-31", periods=n).tz_localize(TZ)
    frames.main["field_5"] = pd.Series(span, index=frames.main.index)
    ax = plot_over_time(frames, "Visit Date", freq="Y")
    shown = sum(p.get_height() for p in ax.patches)
    assert len(ax.patches) <= 100 and 0 < shown < n
    assert f"{n - int(shown):,} records outside" in ax.get_title()
