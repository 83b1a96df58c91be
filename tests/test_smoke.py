from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import cast

import svc_frames
from svc_frames.server import LocalService


def test_package_imports() -> None:
    assert svc_frames.__version__


def test_every_public_name_resolves() -> None:
    """The names imported on first use (PEP 562) resolve like the eager ones."""
    for name in svc_frames.__all__:
        assert getattr(svc_frames, name) is not None, name
    assert set(svc_frames.__all__) <= set(dir(svc_frames))
    from svc_frames import write_back
    from svc_frames.writeback import write_back as defined
    assert write_back is defined
    assert svc_frames.saved.parquet.to_parquet is svc_frames.to_parquet  # a submodule too


def test_unknown_name_is_an_attribute_error() -> None:
    try:
        svc_frames.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def run_fresh(code: str, *args: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parent.parent)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_fresh_load_imports_only_the_load_path() -> None:
    """What a notebook's first load pays for: not parquet, caches, refresh, write-back,
    plots, widgets or the local service, until one of their names is used."""
    loaded = run_fresh(
        "import json, sys; from svc_frames.records import Client; "
        "from svc_frames.loaders import read_object; import svc_frames; "
        "before = sorted(m for m in sys.modules if m.startswith('svc_frames')); "
        "svc_frames.write_back; "
        "print(json.dumps({'before': before, 'after': sorted(sys.modules)}))")
    before = set(cast(list[str], loaded["before"]))
    for lazy in ("parquet", "cache", "incremental", "writeback", "application", "plot",
                 "widgets", "assets", "database", "server"):
        assert f"svc_frames.{lazy}" not in before, lazy
    assert "svc_frames.writeback" in cast(list[str], loaded["after"])


def test_cache_argument_works_without_importing_the_cache(service: LocalService,
                                                           tmp_path: Path) -> None:
    """``read_object(cache=)`` from ``svc_frames.loaders`` alone, in a fresh process: the
    package's stand-in imports the cache on first use; a second run reads the cache."""
    code = (
        "import json, sys; from svc_frames.records import Client; "
        "from svc_frames.loaders import read_object; "
        "c = Client(sys.argv[1], api_key=sys.argv[2], base_url=sys.argv[3], rate_limit=0); "
        "f = read_object(c, 'object_1', cache=sys.argv[4], progress=False); "
        "print(json.dumps({'rows': len(f.main), 'requests': c.request_count}))")
    args = (service.app_id, service.api_key, service.base_url, str(tmp_path / "cache"))
    first = run_fresh(code, *args)
    assert first["rows"] and (tmp_path / "cache" / "CURRENT.json").exists()
    second = run_fresh(code, *args)
    assert second["rows"] == first["rows"]
