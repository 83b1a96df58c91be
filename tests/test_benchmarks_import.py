"""Every benchmark module imports: a rename in the package breaks ``make bench`` here,
in ``make test``, rather than on the evening the figures are wanted (mypy and ruff do not
see a name that no longer exists in another module)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py")
                 if p.stem not in ("__init__", "__main__"))


def test_the_benchmarks_are_found() -> None:
    assert "bench_load" in MODULES and "compare_revisions" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_benchmark_module_imports(name: str) -> None:
    module = importlib.import_module(f"benchmarks.{name}")
    assert module.__name__ == f"benchmarks.{name}"
