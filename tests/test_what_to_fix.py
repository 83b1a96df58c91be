"""What a new user meets in the first afternoon, each as the local service shows it: errors
that say what to fix, and the smaller things.

- A wrong API key: ``svc-frames schema`` needs no key (the schema is public, as on the
  hosted service) and succeeds; the first call that needs the key names where it came from
  (``SVC_API_KEY``, ``--api-key``, the argument). ``Client.from_env()`` with neither a key
  nor a user is refused at once, naming ``SVC_API_KEY``.
- A base URL that answers but is not the service (another web server) says to check the
  base URL, not that "this service does not expose its application schema".
- ``Field("Priority") >= 4`` raised a bare TypeError: ``Field`` takes all six comparisons.
- A naive time given to a (tz-aware) date column is read on the application's clock; one
  that clock skips or repeats is refused with the fix named, before any request.
- Warnings in the CLI print one line each, no source line; a label with a space ("Work
  Time") is no collision and gives no warning.
- An unknown object key is refused before any record request; ``svc-frames --version``.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from fixtures.hostile_app import hostile_document, seed

from svc_frames import __version__
from svc_frames.cli import main
from svc_frames.errors import (
    AuthenticationError,
    ConfigurationError,
    InvalidValue,
    NameWarning,
    ServiceUnreachable,
    UsageError,
)
from svc_frames.filters import Field
from svc_frames.loaders import read_object
from svc_frames.names import path_names, paths_changed
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import diff

CLI = [sys.executable, "-m", "svc_frames.cli"]


def _env(monkeypatch: pytest.MonkeyPatch, svc: LocalService, **over: str | None) -> None:
    values: dict[str, str | None] = {"SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
                                     "SVC_BASE_URL": svc.base_url, "SVC_TOKEN": None,
                                     "SVC_EMAIL": None, "SVC_PASSWORD": None, **over}
    for name, value in values.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


def _record_requests(svc: LocalService) -> int:
    return svc.request_log.count(path_prefix="/v1/objects/") + svc.request_log.count(
        path_prefix="/v1/pages/")


# ---- a wrong or missing API key ---------------------------------------------------------
def test_a_refused_key_names_the_argument_it_came_from(service: LocalService) -> None:
    client = Client(service.app_id, api_key="wrongkey", base_url=service.base_url,
                    rate_limit=0)
    with pytest.raises(AuthenticationError, match="Invalid API key") as err:
        read_object(client, "object_3", columns="keys", progress=False)
    assert "from the api_key argument" in str(err.value)
    assert service.app_id in str(err.value) and "wrongkey" not in str(err.value)


def test_a_wrong_key_in_the_environment_is_named_at_the_first_call_that_needs_it(
        service: LocalService, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _env(monkeypatch, service, SVC_API_KEY="wrongkey")
    assert main(["schema"]) == 0    # the schema needs no key, here as on the hosted service
    capsys.readouterr()
    assert main(["export", "object_3", "--out", str(tmp_path / "a"), "--no-progress",
                 "--columns", "keys"]) == 1
    err = capsys.readouterr().err
    assert "Invalid API key" in err and "from SVC_API_KEY" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    _env(monkeypatch, service)
    assert main(["export", "object_3", "--out", str(tmp_path / "b"), "--no-progress",
                 "--columns", "keys", "--api-key", "wrongkey"]) == 1
    assert "from --api-key" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_from_env_without_a_key_or_a_user_is_refused_naming_the_variable(
        service: LocalService, monkeypatch: pytest.MonkeyPatch) -> None:
    _env(monkeypatch, service, SVC_API_KEY=None)
    with pytest.raises(ConfigurationError, match="SVC_API_KEY is not set"):
        Client.from_env()
    monkeypatch.setenv("SVC_API_KEY", "")
    with pytest.raises(ConfigurationError, match="SVC_API_KEY"):
        Client.from_env()
    # a client for views behind a login alone needs no key until an object request
    monkeypatch.setenv("SVC_TOKEN", "a-user-token")
    viewer = Client.from_env(rate_limit=0)
    with pytest.raises(ConfigurationError, match="SVC_API_KEY"):
        viewer.get_page("object_3")
    _env(monkeypatch, service)
    assert Client.from_env(rate_limit=0).api_key_source == "SVC_API_KEY"


# ---- a base URL that is not the service --------------------------------------------------
class _OtherServer(http.server.BaseHTTPRequestHandler):
    """Another web server on loopback: an HTML 404 for every address."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        body = (b"<!DOCTYPE HTML><html><head><title>Error response</title></head><body>"
                b"<h1>Error response</h1><p>Error code: 404</p></body></html>")
        self.send_response(404)
        self.send_header("Content-Type", "text/html;charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def other_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OtherServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_another_web_server_at_the_base_url_says_check_the_base_url(
        other_server: str, service: LocalService, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    client = Client("app", api_key="key", base_url=other_server, rate_limit=0)
    with pytest.raises(ServiceUnreachable, match="check the base URL") as err:
        client.schema()
    assert "web page" in str(err.value) and "404" in str(err.value)
    with pytest.raises(ServiceUnreachable, match="check the base URL"):
        read_object(client, "object_3", columns="keys", progress=False)
    _env(monkeypatch, service, SVC_BASE_URL=other_server)
    assert main(["schema"]) == 1
    err_text = capsys.readouterr().err
    assert "check the base URL" in err_text and "does not expose" not in err_text


def test_another_web_server_refusing_the_login_says_check_the_base_url(
        other_server: str, service: LocalService, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With a user set (as the local service's env file sets one), the first request is
    the login, a POST another web server refuses with its own 501 page."""
    client = Client("app", api_key="key", base_url=other_server, rate_limit=0)
    with pytest.raises(ServiceUnreachable, match="check the base URL") as err:
        client.login("someone@example.com", "secret")
    assert "web page" in str(err.value) and "501" in str(err.value)
    _env(monkeypatch, service, SVC_BASE_URL=other_server, SVC_EMAIL="someone@example.com",
         SVC_PASSWORD="secret")
    assert main(["schema"]) == 1
    assert "check the base URL" in capsys.readouterr().err


# ---- Field takes all six comparisons -----------------------------------------------------
def test_field_takes_all_six_comparisons(client: Client) -> None:
    every = read_object(client, "Work Orders", columns="keys", progress=False).main
    priority = every["field_25"]
    cases = {"==": (Field("Priority") == 4, priority == 4),
             "!=": (Field("Priority") != 4, priority != 4),
             ">": (Field("Priority") > 3, priority > 3),
             "<": (Field("Priority") < 3, priority < 3),
             ">=": (Field("Priority") >= 4, priority >= 4),
             "<=": (Field("Priority") <= 2, priority <= 2)}
    for op, (flt, mask) in cases.items():
        got = read_object(client, "Work Orders", filters=flt, columns="keys",
                          progress=False).main
        want = set(every.index[mask.fillna(op == "!=").to_numpy(dtype=bool)])
        assert set(got.index) == want, op
        assert 0 < len(want) < len(every), op   # the case tells something
    either = (Field("Priority") >= 5) | (Field("Status") == "Open")
    got = read_object(client, "Work Orders", filters=either, columns="keys", progress=False)
    high = (priority >= 5).fillna(False).to_numpy(dtype=bool)
    is_open = (every["field_27"] == "Open").fillna(False).to_numpy(dtype=bool)
    assert set(got.main.index) == set(every.index[high | is_open])
    with pytest.raises(UsageError, match="cannot be mixed"):
        _ = (Field("Priority") >= 4) & (Field("Status") == "Open")


# ---- a naive time given to a date column -------------------------------------------------
def test_a_naive_time_is_read_on_the_applications_clock(client: Client,
                                                        service: LocalService) -> None:
    orders = read_object(client, "object_3", columns="keys", progress=False)
    tz = orders.source.timezone if orders.source else None
    assert tz and str(orders.main["field_29"].dtype).endswith(f"{tz}]")
    # pandas refuses a naive Timestamp in one cell of a tz-aware column (its own rule);
    # the documented fix, the time with the application's zone, is what is sent
    first = orders.main.index[:1]
    orders.main.loc[first, "field_29"] = pd.Timestamp("2024-05-01 10:00", tz=tz)
    # a whole column of naive times (or a column made object) means the app's wall clock
    second = orders.main.index[1]
    due = orders.main["field_29"].astype(object)
    due[second] = pd.Timestamp("2024-05-02 09:30")
    orders.main["field_29"] = due
    changes = diff(orders).changes
    new = dict(zip(changes["record_id"], changes["new"], strict=True))
    assert new[second] == pd.Timestamp("2024-05-02 09:30", tz=tz)
    assert new[first[0]] == pd.Timestamp("2024-05-01 10:00", tz=tz)
    before = _record_requests(service)
    due[second] = pd.Timestamp("2024-03-10 02:30")   # the hour clocks skip there
    orders.main["field_29"] = due
    with pytest.raises(InvalidValue, match="tz_localize") as err:
        diff(orders)
    assert "field_29" in str(err.value) and str(second) in str(err.value)
    assert f"{tz} skips or repeats" in str(err.value)
    assert _record_requests(service) == before


# ---- warnings: one line each, and no warning for a space ---------------------------------
def test_a_space_in_a_label_is_no_collision() -> None:
    dirs = path_names(["Work Time", "Created By", "In/Out"])
    assert dirs["Work Time"] == "Work_Time" and dirs["Created By"] == "Created_By"
    assert paths_changed(dirs) == {"In/Out": dirs["In/Out"]}
    assert paths_changed(path_names(["Work Time", "Work_Time"]))   # a real clash warns


def _cli(svc: LocalService, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"SVC_APP_ID": svc.app_id, "SVC_API_KEY": svc.api_key,
           "SVC_BASE_URL": svc.base_url, "PATH": "/usr/bin:/bin"}
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=120, check=False)


def test_export_by_labels_warns_in_one_line_and_not_for_a_space(
        service: LocalService, tmp_path: Path) -> None:
    done = _cli(service, "export", "object_3", "--out", "f3", "--columns", "labels",
                "--format", "csv", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr   # "Work Time" is no collision
    assert (tmp_path / "f3.tables" / "Work_Time").is_dir()
    with LocalService(demo=False, app=hostile_document(), records=0) as hostile:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seed(client_for(hostile))
        done = _cli(hostile, "export", "object_1", "--out", "h", "--columns", "labels",
                    "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "Warning" in line]
    assert any(line.startswith("svc-frames: NameWarning: ") for line in lines), done.stderr
    assert all(line.startswith("svc-frames: ") for line in lines), done.stderr
    assert "sys.exit" not in done.stderr and ".py:" not in done.stderr


def test_the_demo_shows_warnings_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from svc_frames.errors import warnings_as_lines

    with warnings_as_lines("demo"), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a name changed", NameWarning, stacklevel=1)
    assert capsys.readouterr().err == "demo: NameWarning: a name changed\n"


# ---- an unknown object key; --version ----------------------------------------------------
def test_an_unknown_object_key_is_refused_before_any_record_request(
        service: LocalService) -> None:
    client = client_for(service)
    before = _record_requests(service)
    with pytest.raises(UsageError, match="unknown object 'object_99'") as err:
        read_object(client, "object_99", columns="keys", progress=False)
    assert "'Work Orders' (object_3)" in str(err.value)
    with pytest.raises(UsageError, match="unknown object 'object_99'"):
        read_object(client, "object_99", columns="labels", progress=False,
                    filters=Field("field_1").is_blank())
    assert _record_requests(service) == before


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"svc-frames {__version__}"
