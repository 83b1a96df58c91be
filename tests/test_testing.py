"""svc_frames.testing: locating the hosted fixtures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from svc_frames import testing
from svc_frames.testing import FIXTURES_ENV, hosted_sample_dir


def test_env_var_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(hosted_sample_dir() / "application.json", tmp_path / "application.json")
    monkeypatch.setenv(FIXTURES_ENV, str(tmp_path))
    assert hosted_sample_dir() == tmp_path.resolve()


def test_missing_fixtures_say_what_to_set(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FIXTURES_ENV, str(tmp_path / "absent"))
    monkeypatch.setattr(testing, "_HOSTED_SAMPLE", Path("no-such-dir"))
    with pytest.raises(FileNotFoundError, match=FIXTURES_ENV) as exc:
        hosted_sample_dir()
    assert "absent" in str(exc.value)
