"""An analyst's own column in a saved file (``df["my_calc"] = df["Priority"] * 2``, written
back with pandas) is pushed as ``write_back`` treats one on frames: left out, never sent,
named in the plan and the report (``left_out``), kept in the file when push rewrites it;
a column that looks like a field (key-shaped, the other naming, a near miss) is refused
before any request, naming the file and the fix. CSV, Parquet and xlsx, Python and the CLI
(a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures.guard import FAST_GUARD
from fixtures.saved_parts import read_part, write_part

from svc_frames.errors import UsageError
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.push import push
from svc_frames.server import LocalService


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def _writes(svc: LocalService) -> int:
    return sum(svc.request_log.count(method=m, path_prefix="/v1/objects/object_3/records")
               for m in ("PUT", "POST", "DELETE"))


def _part(out: Path) -> Path:
    (part,) = out.iterdir()
    return part


def _with_calc(out: Path) -> tuple[Path, pd.DataFrame]:
    """The analyst's habit: read with pandas' defaults, add a column, edit a cell and
    append a row, write back."""
    part = _part(out)
    df = read_part(part)
    df["my_calc"] = df["Priority"] * 2
    df.loc[0, "Title"] = "Edited beside my_calc"
    new = len(df)
    df.loc[new, "Title"] = "Created beside my_calc"
    df.loc[new, "my_calc"] = 7
    df.loc[new, "id"] = None
    write_part(df, part)
    return part, df


@pytest.mark.parametrize("fmt", ["csv", "parquet", "xlsx"])
def test_an_analysis_column_is_left_out_and_kept_in_the_file(
        fresh_service: LocalService, tmp_path: Path, fmt: str) -> None:
    client = _client(fresh_service)
    out = export(client, "object_3", tmp_path / "orders", format=fmt, columns="labels",
                 progress=False).path
    part, df = _with_calc(out)
    before = _writes(fresh_service)
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 2} and plan.left_out == ["my_calc"]
    assert "left out (no field): my_calc" in repr(plan.plan)
    assert "my_calc" not in set(plan.plan.changes["column"])
    assert _writes(fresh_service) == before
    report = push(client, out, overwrite=True, **FAST_GUARD)
    assert report.counts == {"applied": 2} and report.left_out == ["my_calc"]
    assert _writes(fresh_service) == before + 2
    # rewritten with the new record's id: the analyst's column is still there, as it was
    back = read_part(_part(out))
    assert "my_calc" in back.columns and back["id"].notna().all()
    assert back["my_calc"].astype(float).tolist() == pd.Series(df["my_calc"]).astype(float) \
        .tolist()
    meta = json.loads(out.with_name("orders.svc_frames.json").read_text())
    assert "my_calc" not in meta["columns"]     # never among the saved columns
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0
    # dropped again by the analyst: the file still fits
    write_part(back.drop(columns=["my_calc"]), _part(out))
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize(("column", "why"), [
    ("field_99", "looks like a field key"),
    ("field_25", "names the field of column 'Priority' the way this frame does not"),
    ("priority", "differs from the field column 'Priority' only in case"),
    ("unit_cost", "differs from the field column 'Unit Cost' only in case"),
    ("site_zip", "differs from the field column 'Site.zip' only in case"),
])
def test_a_column_that_looks_like_a_field_is_refused_naming_the_file(
        fresh_service: LocalService, tmp_path: Path, fmt: str, column: str, why: str) -> None:
    client = _client(fresh_service)
    out = export(client, "object_3", tmp_path / "orders", format=fmt, columns="labels",
                 progress=False).path
    part = _part(out)
    df = read_part(part)
    df[column] = 1
    write_part(df, part)
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(client, out, dry_run=True)
    assert str(exc.value).startswith(f"{part}: column {column!r}") and why in str(exc.value)
    assert exc.value.field == column
    assert fresh_service.request_log.count() == before


def test_keys_frames_refuse_a_label_column(fresh_service: LocalService,
                                           tmp_path: Path) -> None:
    client = _client(fresh_service)
    out = export(client, "object_3", tmp_path / "orders", columns="keys",
                 progress=False).path
    part = _part(out)
    df = pd.read_parquet(part)
    df["Priority"] = 3
    df.to_parquet(part, index=False)
    with pytest.raises(UsageError, match="names the field of column 'field_25'"):
        push(client, out, dry_run=True)
    df = df.drop(columns=["Priority"]).assign(my_calc=df["field_25"] * 2)
    df.to_parquet(part, index=False)
    assert push(client, out, dry_run=True).left_out == ["my_calc"]


# the CLI reads every format through push (tested above in Python): one format here, a real
# subprocess for the command's own output
@pytest.mark.slow(seconds=12)
@pytest.mark.parametrize("fmt", ["csv"])
def test_cli_push_leaves_the_analysis_column_out(fresh_service: LocalService,
                                                 tmp_path: Path, fmt: str) -> None:
    env = {**os.environ, "SVC_APP_ID": fresh_service.app_id,
           "SVC_API_KEY": fresh_service.api_key, "SVC_BASE_URL": fresh_service.base_url}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "svc_frames.cli", *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    out = tmp_path / "orders"
    done = cli("export", "object_3", "--out", str(out), "--columns", "labels", "--format",
               fmt, "--no-progress")
    assert done.returncode == 0, done.stderr
    _with_calc(out)
    before = _writes(fresh_service)
    dry = cli("push", str(out), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "left out (no field, never sent): my_calc" in dry.stdout
    assert json.loads(dry.stdout.splitlines()[-1])["plan"] == {"update": 1, "create": 1,
                                                               "delete": 0}
    done = cli("push", str(out), "--overwrite")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["status"] == {"applied": 2}
    assert _writes(fresh_service) == before + 2
    assert "my_calc" in read_part(_part(out)).columns
    # a key-shaped name: refused before any request, one line naming the file and the fix
    part = _part(out)
    write_part(read_part(part).assign(field_99=1), part)
    bad = cli("push", str(out), "--dry-run")
    assert bad.returncode == 2 and str(part) in bad.stderr and "field_99" in bad.stderr
    assert "rename it" in bad.stderr and "Traceback" not in bad.stderr
