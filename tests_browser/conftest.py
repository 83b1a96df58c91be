"""JupyterLab on 127.0.0.1 with the project's kernel, driven by playwright in Debian's
Chromium (``make test-browser`` installs both; nothing is downloaded by playwright).

The lab serves a temporary root holding copies of notebooks/*.ipynb (runs there do not
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    """A running JupyterLab: its URL, token and root directory."""

    url: str
    token: str
    root: Path
    log: Path
    proc: subprocess.Popen[bytes] = field(repr=False)

    def api(self, path: str) -> Any:
        req = urllib.request.Request(f"{self.url}{path}",
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    base = tmp_path_factory.mktemp("lab")
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
    notify = base / "settings" / "@jupyterlab" / "apputils-extension"
    notify.mkdir(parents=True)
    (notify / "notification.jupyterlab-settings").write_text(json.dumps(
        {"fetchNews": "false", "checkForUpdates": False}))
    # every cell drawn (no windowing): what is checked in the page is all there
    tracker = base / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps(
        {"windowingMode": "none"}))
    env = {k: v for k, v in os.environ.items() if k not in SVC_VARS}
    env.update(JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTER_DATA_DIR=str(base / "data"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"), JUPYTER_PATH=str(base / "data"),
               IPYTHONDIR=str(base / "ipython"), SVC_DEMO_RECORDS="80", SVC_RATE_LIMIT="0",
               SVC_NOTEBOOK_OUT=str(base / "out"), PYTHONUNBUFFERED="1")
    token = secrets.token_hex(16)
    port = free_port()
    log = base / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", "--ServerApp.allow_root=True",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--LabApp.extension_manager=readonly",
           f"--LabApp.workspaces_dir={base / 'workspaces'}",
           f"--LabApp.user_settings_dir={base / 'settings'}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    running = Lab(f"http://127.0.0.1:{port}", token, root, log, proc)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                running.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n"
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


@pytest.fixture()
def browser(chromium: Any, lab: Lab) -> Iterator[Browser]:
    context = chromium.new_context(viewport={"width": 1400, "height": 1500})
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}")
            if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
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
