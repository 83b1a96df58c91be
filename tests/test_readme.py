"""Every example of README.md runs as written, twice, in the repository, and leaves the work
tree as it found it.

A reader runs the README from the repository (its blocks say so: ``. .venv/bin/activate``,
``notebooks/...``), and may run it again: so the examples run here in the repository itself,
each twice in a row, and ``git status`` (untracked files included) is the same before and
after. What they write lands in the git-ignored ``demo-output/``, and a second run replaces
it. Each ```bash block runs as one bash script (its lines depend on each other: the CLI
block starts a service in the background and sources its address); the Python example
of "Ten lines" runs in a fresh interpreter. Two things differ from a reader's run, and why:

- ``make ...`` lines are left out: ``make test`` is this test suite (running it here would
  recurse) and ``make demo`` is the whole demo job, which ``tests/test_demo.py`` runs;
- the long-running ``svc-frames serve`` runs with ``--port 0`` instead of 8765 (a
  developer's own ``make serve`` or a parallel run may hold 8765; the address reaches the
  other commands through the env file, so the block reads the same otherwise); the CLI
  block's service holds 60 work orders instead of 200 and the "Ten lines" demo 60 records
  instead of 500 (fewer paced writes: the push is paced as on the hosted service). A trap
  stops the service if a command fails.

The environment is cleaned of ``SVC_*`` settings; the notebook run gets a small demo and no
client pacing (``SVC_DEMO_RECORDS``, ``SVC_RATE_LIMIT``, documented knobs) to stay quick,
and Jupyter's runtime files go to a temporary directory.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(?:bash|sh|shell)\n(.*?)^```", re.S | re.M)
OUT = ROOT / "demo-output"
CLI_RECORDS = 60   # the CLI block's service, as it runs here (module docstring)


def shell_blocks() -> list[str]:
    return BLOCK.findall(README.read_text())


def ten_lines() -> str:
    section = README.read_text().split("## Ten lines", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def as_here(line: str) -> str:
    """A line as it runs here: the demo port made free, the CLI block's service smaller
    (module docstring)."""
    return line.replace("--port 8765", "--port 0").replace("--records 200",
                                                            f"--records {CLI_RECORDS}")


def runnable(block: str) -> str:
    """The block as it runs here: ``make`` lines out, the others :func:`as_here`."""
    lines = [as_here(line) for line in block.splitlines()
             if not line.lstrip().startswith("make ")]
    return "\n".join(lines) + "\n"


def work_tree() -> str:
    """``git status`` of the repository, untracked files one by one."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          text=True, capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"not a git work tree: {done.stderr.strip()}")
    return done.stdout


@pytest.fixture()
def repo() -> Path:
    """The repository, as a reader runs the README in it (``make`` created ``.venv``)."""
    if not (ROOT / ".venv" / "bin" / "activate").is_file():
        pytest.skip("the README runs from a repository whose .venv `make` created")
    return ROOT


def run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DEMO_RECORDS="60", SVC_RATE_LIMIT="0",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"))
    # the timeout bounds a hung command (a service that never starts); no timing is tested
    return subprocess.run(argv, cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=400, check=False)


def run_block(block: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = ("set -euo pipefail\n"
              "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + runnable(block))
    return run(["bash", "-c", script], tmp_path)


def test_readme_has_the_blocks_this_test_knows() -> None:
    blocks = shell_blocks()
    assert len(blocks) == 3, "a new shell block: say below what it must leave behind"
    assert any("svc-frames push" in b and "--records 200" in b for b in blocks)
    assert any("jupyter execute" in b and "--output" in b for b in blocks)
    assert "records=500" in ten_lines()


# each example runs twice, its commands starting Python processes: on a loaded machine that
# is minutes (a hung command is bounded by run()'s timeout); no timing is tested
TWICE = pytest.mark.timeout(1200)


@TWICE
@pytest.mark.slow(seconds=30)
def test_ten_lines_run_twice_and_leave_the_tree_clean(repo: Path, tmp_path: Path) -> None:
    before = work_tree()
    code = ten_lines().replace("records=500", "records=60")  # fewer paced writes
    for attempt in (1, 2):
        done = run([sys.executable, "-c", code], tmp_path)
        assert done.returncode == 0, (attempt, done.stdout[-3000:] + done.stderr[-3000:])
        assert "applied" in done.stdout and "Work Orders" in done.stdout
    assert work_tree() == before
    saved = pd.read_parquet(OUT / "orders")
    assert len(saved) and (saved["Status"] == "Open").all()   # named by label


@TWICE
@pytest.mark.slow(seconds=130)
def test_cli_round_trip_block_runs_twice(repo: Path, tmp_path: Path) -> None:
    (block,) = [b for b in shell_blocks() if "svc-frames serve" in b]
    before = work_tree()
    for attempt in (1, 2):
        done = run_block(block, tmp_path)
        assert done.returncode == 0, (attempt, done.stdout[-3000:] + done.stderr[-3000:])
        out = done.stdout
        assert "object_3" in out and "view_3" in out  # schema
        # the dry run listed the On Hold changes and sent nothing; the push applied them
        assert "On Hold" in out
        summaries = [line for line in out.splitlines() if line.startswith('{"dry_run"')]
        assert len(summaries) == 2 and '"dry_run": true' in summaries[0]
        assert '"applied"' in summaries[1] and '"failed"' not in summaries[1]
        # no warning shows a source line (the CLI prints each on one line)
        assert "sys.exit(main())" not in done.stderr, done.stderr[-2000:]
    assert work_tree() == before
    cli = OUT / "cli"
    assert len(pd.read_parquet(cli / "orders")) == CLI_RECORDS
    assert (cli / "orders.svc_frames.json").is_file()
    board = list((cli / "board").glob("*.csv"))
    assert board and len(pd.read_csv(board[0])) > 0
    assert not (cli / "svc.env").exists()  # the service was stopped: its env file is gone


@TWICE
@pytest.mark.slow(seconds=60)
def test_notebook_execute_block_runs_twice(repo: Path, tmp_path: Path) -> None:
    (block,) = [b for b in shell_blocks() if "jupyter execute" in b]
    before = work_tree()
    for attempt in (1, 2):
        done = run_block(block, tmp_path)
        assert done.returncode == 0, (attempt, done.stdout[-3000:] + done.stderr[-3000:])
    assert work_tree() == before
    kept = OUT / "notebooks" / "01_quickstart_executed.ipynb"
    import nbformat  # here, not at collection (each worker would import it)
    nb = nbformat.read(kept, as_version=4)
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert outputs and not any(o.get("output_type") == "error" for o in outputs)


def test_make_lines_are_the_only_ones_left_out() -> None:
    for block in shell_blocks():
        kept = runnable(block).splitlines()
        dropped = [line for line in block.splitlines()
                   if as_here(line) not in kept]
        assert all(line.lstrip().startswith("make ") for line in dropped), dropped
