"""The svc-frames command line: argument errors and the serve start-up line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from svc_frames.cli import SUBCOMMANDS, build_parser, main


def test_no_command_prints_help() -> None:
    assert main([]) == 2


def test_serve_rejects_bad_numbers(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["serve", "--records", "-1"]) == 2
    assert "records" in capsys.readouterr().err
    assert main(["serve", "--faults", "1.5"]) == 2


def test_registry_builds_every_subcommand(capsys) -> None:  # type: ignore[no-untyped-def]
    parser = build_parser()
    assert "serve" in SUBCOMMANDS
    for name in SUBCOMMANDS:
        with pytest.raises(SystemExit) as exc:
            parser.parse_args([name, "--help"])
        assert exc.value.code == 0
        assert name in capsys.readouterr().out
    assert parser.parse_args(["serve", "--port", "0"]).command == "serve"


def test_serve_prints_one_json_line_then_summary(tmp_path: Path) -> None:
    # `with` closes the stdout pipe (else a ResourceWarning); stderr is inherited, so pytest
    # captures it and shows it on a failure, and no unread pipe can fill and block the server
    with subprocess.Popen([sys.executable, "-m", "svc_frames.cli", "serve", "--demo",
                           "--records", "5", "--port", "0", "--data", str(tmp_path)],
                          stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            info = json.loads(proc.stdout.readline())
            assert info["base_url"].startswith("http://127.0.0.1:")
            assert info["app_id"] and info["api_key"]
            assert {u["email"] for u in info["users"]} == {"manager@example.com",
                                                            "tech@example.com"}
            assert all(u["password"] for u in info["users"])
            summary = proc.stdout.readline()
            assert "svc-frames local service" in summary
        finally:
            proc.terminate()
            assert proc.wait(timeout=30) == 0
