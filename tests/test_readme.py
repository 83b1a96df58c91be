"""Every shell command in README's code blocks runs as written, on a fresh service.

Each ```bash block runs as one bash script (its lines depend on each other: the CLI
block starts a service in the background and sources its address) in a scratch directory
laid out like a fresh clone: ``.venv`` (this interpreter's environment) and a copy of
``notebooks/``, nothing else, so nothing is written into the repository. Two kinds of line
are left out, and why:

- ``make ...`` lines: ``make test`` is this test suite (running it here would recurse)
  and ``make demo`` is the whole demo job, which ``tests/test_demo.py`` runs;
- nothing else: the long-running ``svc-frames serve`` is run too, in the background as
  README shows it, with ``--port 0`` instead of 8765 (a developer's own ``make serve`` or a
  parallel run may hold 8765; the address reaches the other commands through the env file,
  so the block reads the same otherwise). A trap stops it if a command fails.

The environment is cleaned of ``SVC_*`` settings; the notebook run gets a small demo and no
client pacing (``SVC_DEMO_RECORDS``, ``SVC_RATE_LIMIT``, documented knobs) to stay quick.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.S | re.M)


def shell_blocks() -> list[str]:
    return BLOCK.findall(README.read_text())


def runnable(block: str) -> str:
    """The block as it runs here: ``make`` lines out, the demo port made free (module
    docstring)."""
    lines = [line for line in block.splitlines() if not line.lstrip().startswith("make ")]
    return "\n".join(lines).replace("--port 8765", "--port 0") + "\n"


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    """A scratch directory laid out like a fresh clone that ran ``make``."""
    (tmp_path / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    return tmp_path


def run_block(block: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DEMO_RECORDS="60", SVC_RATE_LIMIT="0",
               JUPYTER_RUNTIME_DIR=str(cwd / ".jupyter-runtime"))
    script = ("set -euo pipefail\n"
              "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + runnable(block))
    # the timeout bounds a hung command (a service that never starts); no timing is tested
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=400, check=False)


def test_readme_has_the_blocks_this_test_knows() -> None:
    blocks = shell_blocks()
    assert len(blocks) == 3, "a new shell block: say below what it must leave behind"
    assert any("svc-frames push" in b for b in blocks)
    assert any("jupyter execute" in b and "--output" in b for b in blocks)


@pytest.mark.slow(seconds=30)
def test_cli_round_trip_block(clone: Path) -> None:
    (block,) = [b for b in shell_blocks() if "svc-frames serve" in b]
    done = run_block(block, clone)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "object_3" in out and "view_3" in out  # schema
    # the dry run listed the On Hold changes and sent nothing; the push applied them all
    assert "On Hold" in out
    summaries = [line for line in out.splitlines() if line.startswith('{"dry_run"')]
    assert len(summaries) == 2 and '"dry_run": true' in summaries[0]
    assert '"applied"' in summaries[1] and '"failed"' not in summaries[1]
    assert len(pd.read_parquet(clone / "orders")) == 200
    assert (clone / "orders.svc_frames.json").is_file()
    board = list((clone / "board").glob("*.csv"))
    assert board and len(pd.read_csv(board[0])) > 0
    assert not (clone / "svc.env").exists()  # the service was stopped: its env file is gone


@pytest.mark.slow
def test_notebook_execute_block_keeps_the_executed_copy(clone: Path) -> None:
    (block,) = [b for b in shell_blocks() if "jupyter execute" in b]
    done = run_block(block, clone)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    kept = clone / "demo-output" / "notebooks" / "01_quickstart_executed.ipynb"
    import nbformat  # here, not at collection (each worker would import it)
    nb = nbformat.read(kept, as_version=4)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)


def test_make_lines_are_the_only_ones_left_out() -> None:
    for block in shell_blocks():
        kept = runnable(block).splitlines()
        dropped = [line for line in block.splitlines()
                   if line not in kept and line.replace("--port 8765", "--port 0") not in kept]
        assert all(line.lstrip().startswith("make ") for line in dropped), dropped
