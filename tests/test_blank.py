"""One word for a missing value wherever a person reads one: ``svc_frames.kinds.BLANK``.

Plots (bars, legends), the review widget (values as loaded / new, a record without an
identifier) and the demo's printed tables say ``(blank)`` for an empty cell, an empty
multi choice and a record without a connection; the frames themselves keep NA.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

from svc_frames.kinds import BLANK
from svc_frames.loaders import read_object
from svc_frames.plot import plot_counts, plot_locations
from svc_frames.records import Client
from svc_frames.widgets import changes_html, format_change_value, record_html
from svc_frames.writeback import diff

# the words that stood for a missing value before there was one, and the ones a
# formatter would print by accident
OTHER_WORDS = ("(none)", "∅", "(empty)", "(missing)", "(no identifier)", "<NA>", "NaT",
               "nan", "None")
STATUS, TAGS, URGENT, PRIORITY, PARTS = "field_27", "field_28", "field_26", "field_25", \
    "field_41"


@pytest.fixture(autouse=True)
def _close_figures():
    # imported here, not at collection: each of make test's workers would import pyplot
    import matplotlib
    matplotlib.use("Agg")  # headless: before svc_frames.plot imports pyplot
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


@pytest.fixture()
def orders(client: Client):
    return read_object(client, "Work Orders", progress=False, columns="keys")


def bar_values(ax) -> dict[str, int]:
    labels = [t.get_text() for t in ax.get_yticklabels()]
    ticks = list(ax.get_yticks())
    return {labels[ticks.index(round(p.get_y() + p.get_height() / 2))]: int(p.get_width())
            for p in ax.patches}


def shows_no_other_word(texts: list[str]) -> None:
    for text in texts:
        for word in OTHER_WORDS:
            assert not re.search(rf"(^|[\s(]){re.escape(word)}($|[\s)])", text), \
                f"{text!r} shows {word!r} for a missing value, not {BLANK!r}"


def test_the_word_is_blank_in_brackets() -> None:
    assert BLANK == "(blank)"


def test_bars_count_missing_values_under_the_one_word(orders) -> None:
    main = orders.main
    assert main[STATUS].isna().any() and main[URGENT].isna().any()  # the demo holds some
    for field, missing in ((STATUS, int(main[STATUS].isna().sum())),
                           (URGENT, int(main[URGENT].isna().sum())),
                           (TAGS, sum(1 for v in main[TAGS] if not isinstance(v, list) or not v))):
        bars = bar_values(plot_counts(orders, field, top=100))
        assert bars.get(BLANK, 0) == missing, field
        assert sum(bars.values()) >= len(main)
        shows_no_other_word(list(bars))


def test_records_without_a_connection_are_counted_under_the_one_word(orders) -> None:
    table = orders.tables[PARTS]
    unconnected = len(set(orders.main.index) - set(table["record_id"]))
    bars = bar_values(plot_counts(orders, "Parts", top=500))
    assert unconnected > 0 and bars[BLANK] == unconnected
    shows_no_other_word(list(bars))


def test_legends_name_missing_values_with_the_one_word(orders) -> None:
    ax = plot_locations(orders, "Site", color_by="Status", basemap=False)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    located = orders.main["field_34.latitude"].notna() & orders.main["field_34.longitude"].notna()
    blank = int((orders.main[STATUS].isna() & located).sum())
    assert f"{BLANK} ({blank})" in legend
    shows_no_other_word(legend)

    orders.main.loc[orders.main.index[:3], PRIORITY] = pd.NA   # a number with gaps
    ax = plot_locations(orders, "Site", color_by="Priority", basemap=False)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [BLANK]


@pytest.mark.parametrize("value", [pd.NA, None, pd.NaT, float("nan"), [], ()])
def test_the_widget_shows_a_missing_value_as_the_one_word(value) -> None:
    assert format_change_value(value) == BLANK


def test_the_review_shows_an_emptied_cell_and_a_nameless_record_with_the_one_word(
        orders) -> None:
    main = orders.main
    known = main.index[main[URGENT].notna()][0]
    unknown = main.index[main[URGENT].isna()][0]
    main.loc[known, URGENT] = pd.NA          # a value emptied
    main.loc[unknown, URGENT] = True         # a blank filled
    plan = diff(orders)
    html = changes_html(plan.changes, {URGENT: "Urgent"})
    cells = re.findall(r"<td class='svcf-(?:old|new)'[^>]*>([^<]*)</td>", html)
    assert sorted(cells) == sorted([BLANK, BLANK, "True", "True"])   # old and new of each
    shows_no_other_word(cells)
    page = record_html(str(known), "", "update", [], {})
    assert f"<i>{BLANK}</i>" in page and "no identifier" not in page


def literals(path: Path) -> list[str]:
    """The string constants of a module's code (docstrings left out: their examples show
    what a person reads, ``(blank)`` included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            docs.add(id(body[0].value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_display_module_spells_another_word() -> None:
    """New display code takes ``BLANK`` rather than a word of its own."""
    package = Path(__file__).resolve().parent.parent / "svc_frames"
    shown = [*sorted((package / "plot").glob("*.py")),
             *sorted((package / "reviewing").glob("*.py")),
             package / "demo.py", package / "catalog.py",
             package / "writeback" / "report.py", package / "writeback" / "plan.py"]
    for path in shown:
        for text in literals(path):
            for word in ("(none)", "∅", "(empty)", "(missing)", "(no identifier)"):
                assert word not in text, f"{path.name} spells {word!r}: use kinds.BLANK"
            assert text != BLANK, f"{path.name} spells {BLANK!r}: import kinds.BLANK"
