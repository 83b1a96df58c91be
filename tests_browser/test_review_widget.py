"""The review widget as a person sees it: a 60-record plan is readable and scrollable in
JupyterLab (light and dark themes) and Notebook 7, its text with enough contrast; in
JupyterLab, three records unticked, Apply sends exactly the others to the local service
(but one a colleague changed meanwhile, reported as a conflict), and the progress bar and
report appear in the widget (nothing on stderr or in the log
console, no browser errors). Screenshots go to build/browser/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from svc_frames.server import LocalService

from .conftest import SHOTS, Browser, Lab

ORDERS, TITLE, NOTES = "object_3", "field_12", "field_13"   # Work Orders: Title, Description
N = 60


@pytest.fixture()
def service() -> Iterator[LocalService]:
    # each request waits 150 ms, as on the hosted service: Apply lasts long enough for a
    # person (and this test) to see its bar
    with LocalService(demo=True, records=80, rate_limit=0, latency_ms=150, seed=3) as svc:
        yield svc


def review_notebook(lab: Lab, svc: LocalService) -> str:
    setup = f"""
from svc_frames import Client
from svc_frames.loaders import read_object
from svc_frames.widgets import review
from svc_frames.writeback import diff

client = Client({svc.app_id!r}, api_key={svc.api_key!r}, base_url={svc.base_url!r},
                rate_limit=0)
frames = read_object(client, {ORDERS!r}, columns="keys")
ids = list(frames.main.index[:{N}])
for i, rid in enumerate(ids):
    frames.main.loc[rid, {TITLE!r}] = f"{{frames.main.loc[rid, {TITLE!r}]}} (checked {{i}})"
    if i % 7 == 0:   # some long values: they wrap or are cut, the full value on hover
        frames.main.loc[rid, {NOTES!r}] = "Replace the seal and test the pressure. " * 8
plan = diff(frames)
box = review(plan, client)
box
"""
    nb = new_notebook(cells=[new_code_cell(setup.strip())])
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                  "language": "python"}}
    nbformat.write(nb, lab.root / "review_60.ipynb")
    return "review_60.ipynb"


def puts(svc: LocalService) -> list[str]:
    prefix = f"/v1/objects/{ORDERS}/records/"
    return [e.path[len(prefix):] for e in svc.request_log.entries
            if e.method == "PUT" and e.path.startswith(prefix)]


def box_of(el: Any) -> dict[str, float]:
    b = el.bounding_box()
    assert b is not None, "not rendered"
    return dict(b)


def open_review(browser: Browser, svc: LocalService) -> tuple[str, Any]:
    """Open and run the 60-record review notebook; returns the panel's DOM id and the
    widget, once its first page of 50 rows is drawn."""
    page = browser.page
    panel = browser.open(review_notebook(browser.lab, svc))
    assert browser.run_all()
    widget = page.locator(f"#{panel} .svcf-review")
    widget.wait_for()
    page.wait_for_function(f"() => document.querySelectorAll('#{panel} .svcf-row').length"
                           " === 50")
    assert "60 records selected" in widget.inner_text()
    assert "1–50 of 60" in widget.inner_text()          # page 1 of 2
    return panel, widget


# the text of a row read against what is behind it: the record's identifier, id and
# action, and the changes table's headers and cells
READ = (".svcf-ident", ".svcf-id", ".svcf-act", "th", "td", "td.svcf-old", "td.svcf-new")


def test_a_60_record_plan_is_readable(front: Browser, service: LocalService,
                                      request: pytest.FixtureRequest) -> None:
    which = request.node.callspec.id
    page = front.page
    titles = {rid: str(t) for rid, t in _titles(service).items()}
    panel, widget = open_review(front, service)
    theme = page.evaluate("() => document.body.dataset.jpThemeName")
    assert theme == ("JupyterLab Dark" if which == "lab-dark" else "JupyterLab Light"), theme
    rows = widget.locator(".svcf-row")

    # rows keep their height: checkboxes at least a text line apart, each reachable
    line = float(page.evaluate(
        f"() => parseFloat(getComputedStyle(document.querySelector('#{panel} .svcf-ident'))"
        ".lineHeight)"))
    assert line >= 12
    boxes = widget.locator(".svcf-row input[type=checkbox]")
    assert boxes.count() == 50
    listbox = widget.locator(".svcf-list")
    scroll = page.evaluate(f"() => {{ const e = document.querySelector('#{panel} .svcf-list');"
                           " return [e.scrollHeight, e.clientHeight]; }")
    assert scroll[0] > scroll[1] + 10 * line, scroll   # the list scrolls inside its box
    assert box_of(listbox)["height"] <= 560
    tops = []
    for i in range(50):
        row = rows.nth(i)
        row.scroll_into_view_if_needed()
        tops.append(box_of(boxes.nth(i))["y"] + listbox.evaluate("e => e.scrollTop"))
        assert box_of(row)["height"] >= 2 * line      # identifier, id, action: not squashed
        ident = row.locator(".svcf-ident")
        rid = str(row.locator(".svcf-id").get_attribute("title"))
        assert ident.is_visible() and ident.inner_text() == titles[rid]  # display field
        # the id's text stays in its column, left of the field table
        assert box_of(row.locator(".svcf-id"))["x"] + box_of(row.locator(".svcf-id"))[
            "width"] <= box_of(row.locator(".svcf-fields"))["x"] + 1
        act = row.locator(".svcf-act")
        assert act.inner_text() == "update"
        assert act.evaluate("e => e.scrollWidth <= e.clientWidth + 1")   # not clipped
        heads = row.locator("th").all_inner_texts()
        assert heads == ["field", "value as loaded", "new value"], heads
    gaps = [b - a for a, b in zip(tops, tops[1:], strict=False)]
    assert min(gaps) >= line, gaps

    # WCAG AA for text: a contrast ratio of at least 4.5 against what is behind it
    measured = {}
    for i in (0, 7):       # a row with short values, one with long ones
        ratios = {sel: round(contrast(rows.nth(i).locator(sel).first), 2) for sel in READ}
        measured[f"row {i}"] = ratios
        low = {sel: r for sel, r in ratios.items() if r < 4.5}
        assert low == {}, f"row {i} in {which}: {low}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / f"contrast_{which}.json").write_text(json.dumps(measured, indent=1))

    listbox.evaluate("e => { e.scrollTop = 0; }")
    widget.scroll_into_view_if_needed()
    shot = front.shot(widget, f"review_{which}.png")
    assert shot.stat().st_size > 10_000
    assert page.locator(f"#{panel} [data-mime-type='application/vnd.jupyter.stderr']") \
        .count() == 0
    assert front.errors == []


def test_apply_in_the_widget_sends_the_ticked_ones(
        browser: Browser, service: LocalService) -> None:
    page = browser.page
    panel, widget = open_review(browser, service)
    rows = widget.locator(".svcf-row")
    listbox = widget.locator(".svcf-list")

    listbox.evaluate("e => { e.scrollTop = 0; }")
    before = browser.shot(widget, "review_before.png")
    assert before.stat().st_size > 10_000

    # untick three, one of them far down the list (scrolled to first)
    left_out = []
    for i in (1, 4, 40):
        row = rows.nth(i)
        row.scroll_into_view_if_needed()
        row.locator("input[type=checkbox]").click()
        left_out.append(str(row.locator(".svcf-id").get_attribute("title")))
    page.wait_for_function(f"() => document.querySelector('#{panel} .svcf-bar')"
                           ".innerText.includes('57 of 60')")

    # a colleague changes one of the ticked records meanwhile: Apply must skip it and the
    # report must show it, highlighted, with its reason
    moved = str(rows.nth(2).locator(".svcf-id").get_attribute("title"))
    _client(service).update_record(ORDERS, moved, {TITLE: "changed by a colleague"})
    _open_log_console(browser)   # it shows what arrives while it is open
    service.request_log.clear()
    widget.locator("button", has_text="Apply").click()
    # the bar shows in the widget while Apply runs, then the report replaces it
    widget.locator(".widget-hprogress").first.wait_for(timeout=30_000)
    during = browser.shot(widget, "review_during.png")
    assert during.exists()
    page.wait_for_function(f"() => document.querySelector('#{panel} .svcf-review')"
                           ".innerText.includes('box.report.table')", timeout=120_000)
    text = widget.inner_text()
    assert "Report:" in text and "56 applied" in text and "1 conflict" in text
    bad = widget.locator("tr.svcf-bad")
    assert bad.count() == 1 and bad.is_visible()
    assert "conflict" in bad.inner_text() and "changed on the server" in bad.inner_text()
    logged = _log_console_messages(browser)
    assert logged == [], logged
    page.locator(".lm-TabBar-tab", has_text="Log:").locator(".lm-TabBar-tabCloseIcon").click()
    widget.scroll_into_view_if_needed()
    listbox.evaluate("e => { e.scrollTop = 0; }")
    browser.shot(widget, "review_after.png")

    sent = puts(service)
    assert len(sent) == len(set(sent)) == 56
    now = _titles(service)
    assert set(sent) == {rid for rid, title in now.items()
                         if re.search(r"\(checked \d+\)$", title)}
    assert not set(sent) & {*left_out, moved} and now[moved] == "changed by a colleague"

    widget.locator("button", has_text="Report table").click()
    widget.locator(".svcf-review table.dataframe, table.dataframe").first.wait_for()

    # nothing reached stderr (no pink band) nor the log console; no browser errors
    assert page.locator(f"#{panel} [data-mime-type='application/vnd.jupyter.stderr']") \
        .count() == 0
    assert browser.errors == []

    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme',"
                  " {theme: 'JupyterLab Dark'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_timeout(500)
    browser.shot(widget, "review_after_dark.png")
    # the choice is saved in the lab's settings: back to light for whatever runs next
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme',"
                  " {theme: 'JupyterLab Light'})")
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'")


def _rgba(css: str) -> tuple[float, float, float, float]:
    """A computed CSS colour, ``rgb(r, g, b)`` or ``rgba(r, g, b, a)``."""
    m = re.fullmatch(r"rgba?\(([^)]*)\)", css.strip())
    assert m, f"not an rgb() colour: {css!r}"
    parts = [float(x) for x in re.split(r"[\s,/]+", m.group(1).strip()) if x]
    return parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0


def _over(top: tuple[float, float, float, float],
          under: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """``top`` painted over the opaque colour ``under``."""
    a = top[3]
    return (top[0] * a + under[0] * (1 - a), top[1] * a + under[1] * (1 - a),
            top[2] * a + under[2] * (1 - a), 1.0)


def _luminance(c: tuple[float, float, float, float]) -> float:
    """WCAG relative luminance of an sRGB colour."""
    lin = [v / 255 / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4
           for v in c[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(el: Any) -> float:
    """WCAG contrast ratio of ``el``'s text colour against what is behind it: the
    backgrounds of it and its ancestors painted from the page's white canvas up."""
    seen = el.evaluate("""e => {
        const bgs = [];
        for (let n = e; n; n = n.parentElement) bgs.push(getComputedStyle(n).backgroundColor);
        return {fg: getComputedStyle(e).color, bgs};
    }""")
    back = (255.0, 255.0, 255.0, 1.0)
    for bg in reversed(seen["bgs"]):
        back = _over(_rgba(bg), back)
    lum = sorted((_luminance(_over(_rgba(seen["fg"]), back)), _luminance(back)))
    return (lum[1] + 0.05) / (lum[0] + 0.05)


def _client(svc: LocalService) -> Any:
    from svc_frames import Client

    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)


def _titles(svc: LocalService) -> dict[str, str]:
    """Record id -> Title on the service now (read over HTTP like any client)."""
    from svc_frames.loaders import read_object

    main = read_object(_client(svc), ORDERS, progress=False, columns="keys").main
    return {str(k): str(v) for k, v in main[TITLE].items()}


def _open_log_console(browser: Browser) -> None:
    """Open JupyterLab's log console at its default level, warning. JupyterLab copies
    every output there at level info, and logs at warning (error for stderr or an
    exception) an output that no output area took: one printed by a click's handler
    outside any Output widget, which is how Apply's bar and summary used to end up there.
    """
    page = browser.page
    page.evaluate("() => window.jupyterapp.commands.execute('logconsole:open',"
                  " {insertMode: 'split-bottom'})")
    page.locator(".jp-LogConsole").first.wait_for()
    assert page.locator("select[aria-label='Log level']").first.input_value() == "warning"


def _log_console_messages(browser: Browser) -> list[str]:
    """What JupyterLab's log console holds (at its level)."""
    page = browser.page
    page.wait_for_timeout(300)
    return [m for m in page.locator(".jp-LogConsole .jp-OutputArea-output").all_inner_texts()
            if not m.startswith("Log level set to")]
