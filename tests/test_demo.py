"""The `make demo` job, end to end on a tiny demo, and `connect()` (the notebooks' first cell)."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from svc_frames.demo import _bulk_edit, connect, frame_summary, main, run
from svc_frames.errors import ConfigurationError
from svc_frames.saved.parquet import read_parquet


@pytest.mark.slow
def test_demo_job_writes_parquet_plots_and_applies_its_bulk_edit(tmp_path: Path) -> None:
    log = io.StringIO()
    made = run(records=25, out_dir=tmp_path / "out", stream=log)
    text = log.getvalue()

    # every demo object and at least one login-protected view was loaded and exported
    names = set(made["frames"])
    assert {"object_1", "object_2", "object_3"} <= names
    assert any(n.startswith("scene_") for n in names)
    for path in made["parquet"]:
        back = read_parquet(path)
        original = made["frames"][path.name]
        assert len(back.main) == len(original.main)
        # saved with the field labels the console shows, as the frames name them
        assert list(back.main.columns) == list(original.main.columns)
        assert list(original.main.columns) == list(original.with_labels().main.columns)
        assert list(original.main.columns) != list(original.with_keys().main.columns)
        assert (back.main.dtypes.to_numpy() == original.main.dtypes.to_numpy()).all()
        # any reader gets each record once, with its id
        plain = pd.read_parquet(path)
        assert len(plain) == len(original.main) and plain["id"].is_unique

    # PNGs of the three plot sorts, real images
    pngs = {p.name: p for p in made["plots"]}
    for prefix in ("locations_", "counts_", "over_time_", "overview"):
        assert any(n.startswith(prefix) for n in pngs), prefix
    # named by the object's name and the field's label, never by keys
    assert "counts_work_orders_status.png" in pngs, sorted(pngs)
    assert not any("object_" in n or "field_" in n for n in pngs), sorted(pngs)
    for p in pngs.values():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000

    # the bulk edit was planned (dry run printed) and applied: one row per record it named
    report = made["report"]
    assert report is not None and len(report.table) > 0
    named = re.search(r"set Urgent on the (\d+) Open work orders", text)
    assert named is not None and int(named.group(1)) == len(report.table)
    assert set(report.table["status"]) == {"applied"}
    assert "dry run, nothing sent" in text
    assert "the server now holds every edited value" in text
    csv = pd.read_csv(made["report_csv"])
    assert len(csv) == len(report.table)
    assert set(csv["fields"]) == {"Urgent"}  # the field's label, not its key
    # the job says where its outputs are
    assert str((tmp_path / "out").resolve()) in text
    for name in ("rows x", "columns"):
        assert name in text


@pytest.mark.parametrize("top", [5.0, 2.0, None])
def test_bulk_edit_always_has_something_to_do(top: float | None) -> None:
    """Whatever the data, the demo's bulk edit changes something: the Open, non-urgent work
    orders at Priority >= 4, else at the highest priority there is, else the fallback edit."""
    from svc_frames.loaders import read_object
    from svc_frames.writeback import diff

    client, service = connect(records=12, local=True, login=False)
    try:
        schema = client.schema() or {}
        objects = {o["key"]: o for o in schema["objects"]}
        frames = {k: read_object(client, k, progress=False, columns="labels")
                  for k in objects}
        main = frames["object_3"].main
        # two Open, non-urgent orders at `top` (None: no priority at all), the rest lower
        calm = main.index[:2]
        main["Status"] = pd.array(["Open"] * 2 + ["Done"] * (len(main) - 2), dtype="string")
        main["Urgent"] = pd.array([False] * len(main), dtype="boolean")
        main["Priority"] = pd.array([top] * 2 + [1.0] * (len(main) - 2), dtype="Float64")
        frames["object_3"].original = frames["object_3"].snapshot()  # the base of the edit
        key, edited, description = _bulk_edit(frames, objects) or ("", None, "")
        assert edited is not None
        plan = diff(edited)
        assert not plan.empty, description
        if top is None:   # nothing to flag: the fallback edit on another field
            assert set(plan.changes["field"]) != {"field_26"}
        else:
            assert key == "object_3" and f"Priority >= {min(top, 4.0):g}" in description
            assert sorted(plan.changes["record_id"]) == sorted(calm)
            assert set(plan.changes["field"]) == {"field_26"}
    finally:
        service.stop()


@pytest.mark.slow
def test_demo_entry_point_takes_its_size_and_output_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    monkeypatch.setenv("SVC_DEMO_RECORDS", "12")
    monkeypatch.setenv("SVC_DEMO_OUT", str(out))
    assert main([]) == 0  # what `python -m svc_frames.demo` runs
    text = capsys.readouterr().out
    assert "(12 records)" in text and f"Outputs are in {out.resolve()}" in text
    assert (out / "bulk_edit_report.csv").exists()
    assert len(list((out / "plots").glob("*.png"))) >= 3
    for bad in (["--records", "many"], ["--records", "0"]):
        with pytest.raises(SystemExit):
            main(bad)
    assert "--records" in capsys.readouterr().err


def test_the_demo_module_is_runnable() -> None:
    proc = subprocess.run([sys.executable, "-m", "svc_frames.demo", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "--records" in proc.stdout


def test_frame_summary_names_rows_columns_and_dtypes() -> None:
    client, service = connect(records=15, local=True)
    from svc_frames.loaders import read_object

    frames = read_object(client, "object_3", progress=False, columns="keys")
    text = frame_summary("Work Orders", frames)
    assert f"{len(frames.main)} rows x {frames.main.shape[1]} columns" in text
    for dtype in set(map(str, frames.main.dtypes)):
        assert dtype in text
    assert "Status" in text  # labels, not only keys
    assert client.token  # connect() logged in as the first demo user
    service.stop()


def test_connect_without_local_service_or_settings_says_what_to_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SVC_APP_ID", "SVC_API_KEY", "SVC_BASE_URL", "SVC_TOKEN", "SVC_EMAIL",
                "SVC_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SVC_LOCAL", "0")
    with pytest.raises(ConfigurationError) as info:
        connect()
    for var in ("SVC_APP_ID", "SVC_BASE_URL", "SVC_API_KEY"):
        assert var in str(info.value)


def test_connect_uses_the_environment_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    client, service = connect(records=10, local=True, login=False)
    try:
        monkeypatch.setenv("SVC_APP_ID", service.app_id)
        monkeypatch.setenv("SVC_API_KEY", service.api_key)
        monkeypatch.setenv("SVC_BASE_URL", service.base_url)
        monkeypatch.delenv("SVC_TOKEN", raising=False)
        monkeypatch.delenv("SVC_EMAIL", raising=False)
        remote, none = connect()
        assert none is None
        assert remote.base_url == service.base_url
        before = service.request_log.count()
        remote.get_page("object_2")
        assert service.request_log.count() == before + 1
    finally:
        service.stop()
