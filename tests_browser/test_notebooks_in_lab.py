"""Every notebook under notebooks/ runs in JupyterLab (Run All, as a person would) without
an error or anything on stderr, its widgets drawn, and no browser error."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import REPO, Browser

NAMES = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))


def test_the_notebooks_are_found() -> None:
    assert len(NAMES) == 5


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_in_jupyterlab_without_an_error_output(browser: Browser,
                                                             name: str) -> None:
    page = browser.page
    browser.open_lab()
    panel = browser.open_notebook(name)
    ok = browser.run_all()
    nb = page.locator(f"#{panel}")
    cells = browser.cells(panel)
    bad = [o for c in cells for o in c["outputs"]
           if o["output_type"] == "error" or o.get("name") == "stderr"]
    assert bad == [], bad              # no error, no pink band
    assert ok, "a cell failed"
    assert cells and all(isinstance(c["count"], int) for c in cells), cells  # every cell ran
    assert nb.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    assert nb.locator("text=Error displaying widget").count() == 0
    if name.startswith(("01", "04", "05")):
        assert nb.locator(".jp-OutputArea-output img").count() >= 1   # the plots, images
    if name.startswith("02"):
        assert nb.locator(".svcf-review .svcf-row").count() == 10     # the review, drawn
        assert "Report:" in nb.locator(".svcf-review").inner_text()
    browser.shot(nb, f"notebook_{Path(name).stem}.png")
    assert browser.errors == []
