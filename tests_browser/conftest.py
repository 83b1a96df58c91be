"""JupyterLab and Notebook 7 on 127.0.0.1 with the project's kernel, driven by playwright
in Debian's Chromium (``make test-browser`` installs them; nothing is downloaded by
playwright). Fixtures: ``lab`` (JupyterLab, light), ``lab_dark`` (its dark theme set by a
settings override), ``notebook7``; ``browser`` is a page on ``lab``, ``front`` a page on
each of the three in turn.

Each server serves a temporary root holding copies of notebooks/*.ipynb (runs there do not
touch the repository); its config, data, runtime, settings and workspaces live in the
same temporary tree. ``window.jupyterapp`` is exposed so a test can run JupyterLab's own
commands (open a document, run all cells, change the theme).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SHOTS = REPO / "build" / "browser"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SVC_VARS = ("SVC_APP_ID", "SVC_API_KEY", "SVC_BASE_URL", "SVC_TOKEN", "SVC_EMAIL",
            "SVC_PASSWORD", "SVC_ALLOW_WRITES", "SVC_OBJECT", "SVC_VIEW", "SVC_LIST",
            "SVC_FORM", "SVC_EDIT_FIELD", "SVC_EDIT_FROM", "SVC_EDIT_TO", "SVC_TITLE_FIELD",
            "SVC_FILE_FIELD", "SVC_IMAGE_FIELD", "SVC_LOCAL")

# Notebook 7.6's keyboard-shortcuts plugin throws this (an unhandled rejection) as
# /notebooks/<path> loads, with none of the project's code or settings involved (seen on an
# unrun notebook with the user settings removed): on Notebook 7 pages it is not counted
NOTEBOOK7_LOAD_ERROR = "page error: Cannot read properties of undefined (reading 'schema')"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running Jupyter server: its URL, token, root directory and front end, ``"lab"``
    (JupyterLab) or ``"notebook"`` (Notebook 7: one document a page, /notebooks/<path>)."""

    url: str
    token: str
    root: Path
    log: Path
    proc: subprocess.Popen[bytes] = field(repr=False)
    ui: str = "lab"

    def api(self, path: str) -> Any:
        req = urllib.request.Request(f"{self.url}{path}",
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())


def _settings(base: Path, plugin: str, values: dict[str, Any]) -> None:
    """A user setting of JupyterLab's ``plugin`` (``@jupyterlab/x-extension:name``)."""
    package, name = plugin.split(":")
    folder = base / "settings" / package
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values))


@contextmanager
def serve(base: Path, ui: str = "lab", theme: str | None = None) -> Iterator[Lab]:
    """Start JupyterLab (``ui="lab"``) or Notebook 7 (``ui="notebook"``) under ``base``
    and stop it on exit. ``theme`` (e.g. ``"JupyterLab Dark"``) becomes the default of the
    themes setting: a default_setting_overrides.json in the temporary Jupyter config dir,
    the layer JupyterLab reads under the user's own settings."""
    root = base / "root"
    root.mkdir()
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        shutil.copy(nb, root / nb.name)
    kernels = base / "data" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    # the kernel is this interpreter (the venv), whatever kernels the machine has
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (svc_frames venv)", "language": "python"}))
    # no "get Jupyter news?" prompt over the page: the news are not fetched at all
    _settings(base, "@jupyterlab/apputils-extension:notification",
              {"fetchNews": "false", "checkForUpdates": False})
    # every cell drawn (no windowing): what is checked in the page is all there
    _settings(base, "@jupyterlab/notebook-extension:tracker", {"windowingMode": "none"})
    if theme is not None:
        labconfig = base / "config" / "labconfig"
        labconfig.mkdir(parents=True)
        (labconfig / "default_setting_overrides.json").write_text(json.dumps(
            {"@jupyterlab/apputils-extension:themes": {"theme": theme}}))
    env = {k: v for k, v in os.environ.items() if k not in SVC_VARS}
    env.update(JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTER_DATA_DIR=str(base / "data"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"), JUPYTER_PATH=str(base / "data"),
               IPYTHONDIR=str(base / "ipython"), SVC_DEMO_RECORDS="80", SVC_RATE_LIMIT="0",
               SVC_NOTEBOOK_OUT=str(base / "out"), PYTHONUNBUFFERED="1")
    token = secrets.token_hex(16)
    port = free_port()
    log = base / f"jupyter{ui}.log"
    # Notebook 7 is a JupyterLab-based app of its own class; its page, settings and
    # workspaces take the same options under that class's name
    app = {"lab": "LabApp", "notebook": "JupyterNotebookApp"}[ui]
    cmd = [sys.executable, "-m", {"lab": "jupyterlab", "notebook": "notebook"}[ui],
           "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.allow_root=True",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--{app}.expose_app_in_browser=True", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly",
           f"--{app}.workspaces_dir={base / 'workspaces'}",
           f"--{app}.user_settings_dir={base / 'settings'}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    running = Lab(f"http://127.0.0.1:{port}", token, root, log, proc, ui)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                running.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter {ui} did not start:\n"
                                       + log.read_text(errors="replace")[-3000:]) from None
                time.sleep(0.3)
        yield running
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab, light theme."""
    with serve(tmp_path_factory.mktemp("lab")) as running:
        yield running


@pytest.fixture(scope="session")
def lab_dark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with "JupyterLab Dark" as its theme from the start."""
    with serve(tmp_path_factory.mktemp("lab_dark"), theme="JupyterLab Dark") as running:
        yield running


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """Notebook 7 (``jupyter notebook``), light theme."""
    with serve(tmp_path_factory.mktemp("notebook7"), ui="notebook") as running:
        yield running


@dataclass
class Browser:
    """A page of JupyterLab with everything it logs as an error collected."""

    page: Any
    errors: list[str]
    lab: Lab

    def open_lab(self) -> None:
        self.page.goto(f"{self.lab.url}/lab?token={self.lab.token}&reset")
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started"
                                    " !== undefined", timeout=60_000)
        self.page.evaluate("() => window.jupyterapp.started")
        self.page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)

    def open_notebook(self, name: str) -> str:
        """Open ``name`` and wait for its kernel; returns the panel's DOM id."""
        return str(self.page.evaluate(
            """async (path) => {
                 const app = window.jupyterapp;
                 const panel = await app.commands.execute('docmanager:open',
                                                          {path, factory: 'Notebook'});
                 await panel.context.ready;
                 await panel.sessionContext.ready;
                 app.shell.activateById(panel.id);
                 return panel.id;
               }""", name))

    def open(self, name: str) -> str:
        """Open notebook ``name`` as its front end does and wait for its kernel: in
        JupyterLab, the lab then the document; in Notebook 7, the document's own page.
        Returns the notebook panel's DOM id."""
        if self.lab.ui == "lab":
            self.open_lab()
            return self.open_notebook(name)
        self.page.goto(f"{self.lab.url}/notebooks/{name}?token={self.lab.token}")
        self.page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell"
                                    " && window.jupyterapp.shell.currentWidget"
                                    " && window.jupyterapp.shell.currentWidget.context",
                                    timeout=60_000)
        return str(self.page.evaluate(
            """async () => {
                 const panel = window.jupyterapp.shell.currentWidget;
                 await panel.context.ready;
                 await panel.sessionContext.ready;
                 return panel.id;
               }"""))

    def run_all(self) -> bool:
        """Run every cell of the active notebook and wait for the last; True when none
        failed (JupyterLab's own command resolves when the run ends)."""
        return bool(self.page.evaluate(
            "() => window.jupyterapp.commands.execute('notebook:run-all-cells')"))

    def cells(self, panel: str) -> list[dict[str, Any]]:
        """The code cells of notebook ``panel`` as its model holds them: execution count
        and outputs (nbformat JSON), whether or not they are drawn."""
        return list(self.page.evaluate(
            """(id) => {
                 const panel = Array.from(window.jupyterapp.shell.widgets('main'))
                   .find(w => w.id === id);
                 const out = [];
                 for (const cell of panel.content.model.cells) {
                   if (cell.type !== 'code') continue;
                   out.push({count: cell.executionCount, outputs: cell.outputs.toJSON()});
                 }
                 return out;
               }""", panel))

    def shot(self, locator: Any, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / name
        locator.screenshot(path=str(path))
        return path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: make test-browser installs Debian's chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                    headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def browsing(chromium: Any, lab: Lab) -> Iterator[Browser]:
    """A fresh page on ``lab``; on exit, fails if a request left 127.0.0.1."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1500})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}")
            if msg.type == "error" else None)
    known = {NOTEBOOK7_LOAD_ERROR} if lab.ui == "notebook" else set()
    page.on("pageerror", lambda exc: None if f"page error: {exc}" in known
            else errors.append(f"page error: {exc}"))
    # everything stays on 127.0.0.1: any other address is refused and reported
    outside: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            r.continue_()
        else:
            outside.append(url)
            r.abort()

    page.route("**/*", route)
    try:
        yield Browser(page, errors, lab)
    finally:
        context.close()
    assert outside == [], f"requests left 127.0.0.1: {outside}"


@pytest.fixture()
def browser(chromium: Any, lab: Lab) -> Iterator[Browser]:
    """A page on JupyterLab (light)."""
    with browsing(chromium, lab) as running:
        yield running


# the front ends a look-and-feel test runs in: id -> the server fixture serving it
FRONTS = {"lab-light": "lab", "lab-dark": "lab_dark", "notebook7": "notebook7"}


@pytest.fixture(params=list(FRONTS))
def front(request: pytest.FixtureRequest, chromium: Any) -> Iterator[Browser]:
    """A page on each front end of FRONTS in turn (JupyterLab light and dark, Notebook 7);
    ``front.lab.ui`` and the parameter id say which."""
    with browsing(chromium, request.getfixturevalue(FRONTS[request.param])) as running:
        yield running
