"""docs/saved-frames-in-other-engines.md: its examples run, in order, as a reader would
run them (one namespace, a fresh directory), against the local service and local Spark.
An example that stops working fails here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from svc_frames.records import Client
from svc_frames.server import LocalService

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "saved-frames-in-other-engines.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_the_guide_examples_run(spark: Any, fresh_service: LocalService, client: Client,
                                tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = BLOCK.findall(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"client": client, "spark": spark}
    for n, code in enumerate(blocks, 1):
        try:
            exec(compile(code, f"{GUIDE.name}, example {n}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"example {n} of {GUIDE.name} failed: "
                                 f"{type(exc).__name__}: {exc}\n{code}") from exc
    # each push sent one record's update: three pushes, three writes
    writes = fresh_service.request_log.count(method="PUT")
    assert writes == 3
