"""Every Python block of the guides in docs/ runs as written, in order, on a fresh service.

A guide's first block starts a local service (``svc``) and a client, as a reader would;
the blocks after it use what the earlier ones defined, so each guide runs in one
namespace, in a scratch directory. The guide to other engines needs Spark and Dask: its
examples run in ``make test-engines`` (tests_engines/test_guide.py). The service is stopped afterwards even when a block
fails. The reference documents (the service's contract) hold no runnable blocks.

Usage: ``.venv/bin/python -m pytest -q tests/test_docs_examples.py``
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
REFERENCE = {"docs/service-interface.md", "docs/hosted-behaviour.md"}
# its examples need Spark and Dask (the engines extra): tests_engines/test_guide.py runs them
ELSEWHERE = {"docs/saved-frames-in-other-engines.md"}
GUIDES = sorted(p for p in DOCS.glob("*.md") if f"docs/{p.name}" not in REFERENCE | ELSEWHERE and BLOCK.search(
    p.read_text(encoding="utf-8")))


def test_the_guides_have_examples() -> None:
    names = {f"docs/{p.name}" for p in GUIDES}
    assert {"docs/loading.md", "docs/bulk-editing.md", "docs/refresh-and-cache.md",
            "docs/whole-app.md", "docs/saved-frames.md"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.name)
def test_guide_runs_as_written(guide: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    blocks = BLOCK.findall(guide.read_text(encoding="utf-8"))
    ns: dict[str, Any] = {"__name__": f"docs.{guide.stem}"}
    try:
        for i, block in enumerate(blocks, 1):
            code = compile(block, f"{guide.name} block {i}", "exec")
            exec(code, ns)
    finally:
        svc = ns.get("svc")
        if svc is not None:
            svc.stop()
    assert capsys.readouterr().out.strip(), f"{guide.name} printed nothing to show"
