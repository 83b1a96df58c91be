"""Every notebook runs top to bottom (nbclient, the venv's python3 kernel) on the local
service; the committed notebooks are what notebooks/build.py makes, without outputs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:   # imported where used, not at collection (each worker would import them)
    import nbformat

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
SVC_VARS = ("SVC_APP_ID", "SVC_API_KEY", "SVC_BASE_URL", "SVC_TOKEN", "SVC_EMAIL",
            "SVC_PASSWORD", "SVC_ALLOW_WRITES", "SVC_OBJECT", "SVC_VIEW", "SVC_LIST",
            "SVC_FORM", "SVC_EDIT_FIELD", "SVC_EDIT_FROM", "SVC_EDIT_TO", "SVC_TITLE_FIELD",
            "SVC_FILE_FIELD", "SVC_IMAGE_FIELD", "SVC_LOCAL")


def _builder():
    spec = importlib.util.spec_from_file_location("notebook_build", NOTEBOOKS / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def kernel_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The kernel inherits this environment: local service, small data, outputs in tmp."""
    for var in SVC_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SVC_DEMO_RECORDS", "80")
    monkeypatch.setenv("SVC_RATE_LIMIT", "0")  # no client pacing against the local service
    monkeypatch.setenv("SVC_NOTEBOOK_OUT", str(tmp_path))
    # The kernel must be this interpreter (the venv), whatever "python3" kernels the user
    # has installed elsewhere: JUPYTER_PATH is searched first. Connection files go to tmp.
    spec_dir = tmp_path / "jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (svc_frames venv)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter") + os.pathsep
                       + os.environ.get("JUPYTER_PATH", ""))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path


def execute(name: str) -> nbformat.NotebookNode:
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def outputs_text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "\n".join(parts)


def test_there_are_five_notebooks() -> None:
    assert NAMES == ["01_quickstart.ipynb", "02_bulk_edit.ipynb",
                     "03_views_and_login.ipynb", "04_files_and_images.ipynb",
                     "05_whole_app.ipynb"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_the_built_one_without_outputs(name: str) -> None:
    import nbformat
    on_disk = nbformat.read(NOTEBOOKS / name, as_version=4)
    built = _builder().build(name)
    assert [c.source for c in on_disk.cells] == [c.source for c in built.cells], \
        "run: .venv/bin/python notebooks/build.py"
    for cell in on_disk.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


# the longest tests of the suite (02 writes back under the live guard, twice): started
# first, so that no worker runs one alone at the end
@pytest.mark.slow(seconds=120)
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom(name: str, kernel_env: Path) -> None:
    nb = execute(name)
    text = outputs_text(nb)  # execute() raised on any cell error
    # a success shows no error band: summaries are on stdout, nothing reaches stderr
    assert [o.get("text", "") for c in nb.cells for o in c.get("outputs", [])
            if o.get("name") == "stderr"] == []
    if name.startswith("01"):
        assert "read back equal" in text
        images = [o for c in nb.cells for o in c.get("outputs", [])
                  if "image/png" in o.get("data", {})]
        assert len(images) >= 3  # the three plots
        assert any(kernel_env.glob("quickstart_*/part-*.parquet"))
        assert any(kernel_env.glob("quickstart_*.svc_frames.json"))
        first = next(o for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []) if "text/html" in o.get("data", {})
                     and "<th>Title</th>" in o["data"]["text/html"])
        assert "field_" not in first["data"]["text/html"]  # the first frame shown: labels
        fields = next(o["data"]["text/html"] for c in nb.cells if c.cell_type == "code"
                      for o in c.get("outputs", []) if "<th>dtype</th>" in o.get("data", {})
                      .get("text/html", ""))
        cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
                 for row in re.findall(r"<tr[^>]*>(.*?)</tr>", fields, re.S)]
        rows = {row[1]: " ".join(row) for row in cells if len(row) > 2}
        assert "NaN" not in fields and len(rows) > 20, fields   # every field has its dtype
        assert "Float64" in rows["field_34"] and "string" in rows["field_34"]  # an address
        assert "string" in rows["field_32"]                                    # a name
        assert "table" in rows["field_41"]                                     # a connection
    elif name.startswith("02"):
        assert "sent and now On Hold : True" in text
        assert "left out, still Open : True" in text
        assert "conflict" in text and "applied" in text
    elif name.startswith("03"):
        assert "Forbidden" in text and "logged in:" in text
        assert "is now Done" in text
    elif name.startswith("04"):
        assert "CSV back:" in text
        assert sum(1 for c in nb.cells for o in c.get("outputs", [])
                   if "image/png" in o.get("data", {})) == 2  # the image and its thumbnail
    elif name.startswith("05"):
        assert "same rows and columns" in text and "DuckDB and pandas agree" in text
        assert (kernel_env / "app.duckdb").exists()
        meta = next(o["data"]["text/plain"] for c in nb.cells for o in c.get("outputs", [])
                    if "svc_sources" in o.get("data", {}).get("text/plain", ""))
        rows = dict(re.findall(r"(svc_\w+)\s+meta\s+(\d+)", meta))
        # the meta tables count their own rows (the demo: 3 connections, 3 objects)
        assert rows["svc_connections"] == "3" and rows["svc_sources"] == "3", meta
        assert int(rows["svc_tables"]) > 3, meta
        assert any("image/png" in o.get("data", {}) for c in nb.cells
                   for o in c.get("outputs", []))  # the plot of the SQL result


def test_without_local_service_or_credentials_the_notebook_says_what_to_set(
        kernel_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_LOCAL", "0")
    from nbclient.exceptions import CellExecutionError
    with pytest.raises(CellExecutionError) as info:
        execute("01_quickstart.ipynb")
    message = str(info.value)
    assert "ConfigurationError" in message
    for var in ("SVC_APP_ID", "SVC_API_KEY", "SVC_BASE_URL"):
        assert var in message


def test_a_writing_notebook_refuses_a_real_deployment_without_permission(
        kernel_env: Path, monkeypatch: pytest.MonkeyPatch, service) -> None:
    monkeypatch.setenv("SVC_APP_ID", service.app_id)
    monkeypatch.setenv("SVC_API_KEY", service.api_key)
    monkeypatch.setenv("SVC_BASE_URL", service.base_url)
    service.request_log.clear()
    from nbclient.exceptions import CellExecutionError
    with pytest.raises(CellExecutionError) as info:
        execute("02_bulk_edit.ipynb")
    assert "SVC_ALLOW_WRITES=1" in str(info.value)
    assert service.request_log.count(method="PUT") == 0
    assert service.request_log.count(method="POST") == 0
