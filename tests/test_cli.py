"""The svc-frames command line: argument errors and the serve start-up line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import requests

from svc_frames.cli import SUBCOMMANDS, build_parser, main
from svc_frames.server import LocalService


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


def _stopped(proc: subprocess.Popen[str]) -> int:
    """SIGTERM, and the exit status; a process still running 30 s later is killed and the
    test fails (rather than hanging in Popen.__exit__, which waits without a limit)."""
    proc.terminate()
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("serve did not stop within 30 s of SIGTERM") from None


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
            assert _stopped(proc) == 0


def test_serve_over_https_prints_what_clients_trust(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-m", "svc_frames.cli", "serve", "--demo",
                           "--records", "5", "--port", "0", "--data", str(tmp_path), "--tls",
                           "--handshake-ms", "100"], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            info = json.loads(proc.stdout.readline())
            assert info["base_url"].startswith("https://127.0.0.1:")
            answer = requests.get(f"{info['base_url']}/v1/applications/{info['app_id']}",
                                  verify=info["ca_file"], timeout=10)
            assert answer.status_code == 200 and answer.json()["application"]["id"]
        finally:
            assert _stopped(proc) == 0


# ---- the round trip: export, edit with any tool, push ------------------------------------
def _env(monkeypatch: pytest.MonkeyPatch, svc: LocalService) -> None:
    monkeypatch.setenv("SVC_APP_ID", svc.app_id)
    monkeypatch.setenv("SVC_API_KEY", svc.api_key)
    monkeypatch.setenv("SVC_BASE_URL", svc.base_url)


def _exported(monkeypatch: pytest.MonkeyPatch, svc: LocalService, tmp_path: Path,
              capsys: pytest.CaptureFixture[str], *flags: str) -> Path:
    """`svc-frames export object_3 --out <tmp>/orders` against ``svc``; its output read."""
    _env(monkeypatch, svc)
    out = tmp_path / "orders"
    assert main(["export", "object_3", "--out", str(out), *flags, "--no-progress", "--columns", "keys"]) == 0
    capsys.readouterr()
    return out


def _server_record(svc: LocalService, rid: str) -> dict[str, Any]:
    r = requests.get(f"{svc.base_url}/v1/objects/object_3/records/{rid}",
                     headers=svc.headers(), timeout=30)
    r.raise_for_status()
    return dict(r.json())


def _writes(svc: LocalService) -> int:
    return sum(svc.request_log.count(method=m, path_prefix="/v1/objects/object_3/records")
               for m in ("PUT", "POST", "DELETE"))


def _only_file(out: Path, name: str) -> Path:
    """Where a tool writes its edited copy: every old part removed first, as a user
    replacing the data would (a part left beside it would show every record twice)."""
    for p in out.iterdir():
        p.unlink()
    return out / name


def _edit_pandas(out: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    df = pd.read_parquet(out)
    df = df.set_index("id")
    df.loc[ids[0], "field_12"] = "edited by pandas"
    old_tags = df.loc[ids[1], "field_28"]
    tags = [] if old_tags is None else list(old_tags)
    df.at[ids[1], "field_28"] = [*[t for t in tags if t != "Electrical"], "Electrical"]
    df.to_parquet(_only_file(out, "edited.parquet"))
    return {ids[0]: {"field_12": "edited by pandas"}}


def _edit_pyarrow(out: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    table = ds.dataset(out).to_table()
    hit = pc.equal(table.column("id"), ids[0])
    qty = pc.if_else(hit, pa.scalar(77.0), table.column("field_16"))
    table = table.set_column(table.column_names.index("field_16"), "field_16", qty)
    pq.write_table(table.replace_schema_metadata(None), _only_file(out, "edited.parquet"))
    return {ids[0]: {"field_16": 77}}


def _edit_duckdb(out: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    import duckdb

    tmp = out.with_name("duck.parquet")
    duckdb.sql(f"COPY (SELECT * REPLACE (CASE WHEN id = '{ids[0]}' THEN 'edited by duckdb' "
               f"ELSE field_12 END AS field_12) FROM read_parquet('{out}/*.parquet')) "
               f"TO '{tmp}' (FORMAT parquet)")
    tmp.replace(_only_file(out, "duck.parquet"))
    return {ids[0]: {"field_12": "edited by duckdb"}}


def _edit_polars(out: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    import polars as pl

    df = pl.read_parquet(out)
    df = df.with_columns(pl.when(pl.col("id") == ids[0]).then(pl.lit("edited by polars"))
                         .otherwise(pl.col("field_45")).alias("field_45"))
    df.write_parquet(_only_file(out, "polars.parquet"))
    return {ids[0]: {"field_45": "edited by polars"}}


@pytest.mark.parametrize("edit", [_edit_pandas, _edit_pyarrow, _edit_duckdb, _edit_polars],
                         ids=["pandas", "pyarrow", "duckdb", "polars"])
def test_export_edit_with_any_tool_push_sends_exactly_the_edits(
        fresh_service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], edit: Any) -> None:
    _env(monkeypatch, fresh_service)
    out = tmp_path / "orders"
    assert main(["export", "object_3", "--out", str(out), "--no-progress", "--columns", "keys"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == 30
    assert len(pd.read_parquet(out)) == 30  # the records once, with their id
    ids = sorted(pd.read_parquet(out)["id"])[:2]
    wanted = edit(out, ids)
    edited_records = 2 if edit is _edit_pandas else 1  # pandas also edits a list column
    before = _writes(fresh_service)
    assert main(["push", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["status"] == {"applied": edited_records}
    assert _writes(fresh_service) - before == edited_records  # only the edited records
    for rid, fields in wanted.items():
        rec = _server_record(fresh_service, rid)
        for key, value in fields.items():
            assert rec[f"{key}_raw"] == value
    if edit is _edit_pandas:
        assert "Electrical" in _server_record(fresh_service, ids[1])["field_28_raw"]
    # the as-loaded copy followed the server: pushing again sends nothing
    again = _writes(fresh_service)
    assert main(["push", str(out)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["plan"] == {
        "update": 0, "create": 0, "delete": 0}
    assert _writes(fresh_service) == again


def test_csv_export_reads_as_the_service_shows_and_pushes_back(
        fresh_service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _exported(monkeypatch, fresh_service, tmp_path, capsys, "--format", "csv")
    (part,) = out.iterdir()
    text = pd.read_csv(part, dtype=str, keep_default_na=False)
    assert len(text) == 30
    due = [v for v in text["field_29"] if v]
    assert due and all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", v)
                       for v in due)  # ISO with the offset
    totals = [v for v in text["field_31.total"] if v]
    assert totals and all(re.fullmatch(r"\d+:\d\d:\d\d", v) for v in totals)
    for col in ("field_16", "field_17", "field_21", "field_34.latitude"):
        # no float noise: at most the digits the service shows
        assert all(len(v.partition(".")[2]) <= 6 for v in text[col] if v), col
    assert all(len(v.partition(".")[2]) == 2 for v in text["field_17"] if v)  # currency
    tags = [v for v in text["field_28"] if ", " in v]
    assert tags and not any(v.startswith("[") for v in text["field_28"])  # joined, not JSON
    # a spreadsheet round trip: every cell read and written back as text, two edited
    rid = text["id"].iloc[0]
    text.loc[0, "field_12"] = "edited in a spreadsheet"
    text.loc[1, "field_16"] = "12.5"
    text.to_csv(part, index=False)
    before = _writes(fresh_service)
    assert main(["push", str(out)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == {"applied": 2}
    assert _writes(fresh_service) - before == 2
    assert _server_record(fresh_service, rid)["field_12_raw"] == "edited in a spreadsheet"
    assert _server_record(fresh_service, text["id"].iloc[1])["field_16_raw"] == 12.5
    # a row added in the spreadsheet (empty id): created, and the CSV rewritten with its id
    text = pd.read_csv(part, dtype=str, keep_default_na=False)
    row = {c: "" for c in text.columns} | {"field_12": "added in a spreadsheet"}
    pd.concat([text, pd.DataFrame([row])], ignore_index=True).to_csv(part, index=False)
    assert main(["push", str(out), "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == {"applied": 1}
    (part,) = out.iterdir()
    back = pd.read_csv(part, dtype=str, keep_default_na=False)
    assert part.suffix == ".csv" and len(back) == 31 and (back["id"] != "").all()
    new_id = back.loc[back["field_12"] == "added in a spreadsheet", "id"].item()
    assert _server_record(fresh_service, new_id)["field_12_raw"] == "added in a spreadsheet"
    before = _writes(fresh_service)
    assert main(["push", str(out)]) == 0  # read back as written: nothing to send
    assert _writes(fresh_service) == before


def test_push_refuses_a_damaged_directory_before_any_request(
        fresh_service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _exported(monkeypatch, fresh_service, tmp_path, capsys)
    good = pd.read_parquet(out)
    cases = {
        "dropped": (good.drop(columns=["field_16"]), "'field_16' is missing"),
        "retyped": (good.assign(field_16=good["field_16"].astype(str) + " units"),
                    "column 'field_16', row 1: cannot read '230.0 units' as a number"),
        "id edited": (good.assign(id=good["id"].str.upper()), "was not loaded"),
        "added": (good.assign(field_99=1), "'field_99' looks like a field key"),
    }
    for name, (df, message) in cases.items():
        df.to_parquet(_only_file(out, "edited.parquet"))
        sent = fresh_service.request_log.count()
        assert main(["push", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert message in err and "edited.parquet" in err, (name, err)
        assert fresh_service.request_log.count() == sent, name  # refused before any request
    # a part left beside the edited file: every record twice
    good.to_parquet(_only_file(out, "a.parquet"))
    good.to_parquet(out / "b.parquet")
    assert main(["push", str(out)]) == 2
    assert "appears twice" in capsys.readouterr().err


def test_push_metadata_errors_name_the_file(fresh_service: LocalService, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _env(monkeypatch, fresh_service)
    orders, parts = tmp_path / "orders", tmp_path / "parts"
    assert main(["export", "object_3", "--out", str(orders), "--no-progress", "--columns", "keys"]) == 0
    assert main(["export", "object_2", "--out", str(parts), "--no-progress", "--columns", "keys"]) == 0
    capsys.readouterr()
    meta = tmp_path / "orders.svc_frames.json"
    good = meta.read_text()
    for broken, why in (("{not json", "not JSON"), ("[1, 2]", "a JSON object"),
                        (good.replace('"columns"', '"kolumns"'), "'columns' is missing")):
        meta.write_text(broken)
        assert main(["push", str(orders)]) == 2
        err = capsys.readouterr().err
        assert str(meta) in err and "corrupt svc_frames metadata" in err and why in err
    meta.write_text(good)
    # the frame of another object put in the directory: the metadata and it disagree
    for p in orders.iterdir():
        p.unlink()
    for p in parts.iterdir():
        shutil.copy(p, orders / p.name)
    assert main(["push", str(orders)]) == 2
    err = capsys.readouterr().err
    assert "disagree" in err and "object_3" in err and "object_2" in err
    meta.unlink()
    assert main(["push", str(orders)]) == 2
    assert "orders.svc_frames.json is missing" in capsys.readouterr().err


def test_new_rows_need_overwrite_and_get_their_ids(fresh_service: LocalService,
                                                   tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = _exported(monkeypatch, fresh_service, tmp_path, capsys)
    df = pd.read_parquet(out)
    new = df.iloc[:1].copy()
    new["id"] = None
    keep = ["id", "field_12"]
    for col in df.columns:
        if col not in keep:
            new[col] = None  # only a title
    new["field_12"] = "a new work order"
    pd.concat([df, new], ignore_index=True).to_parquet(_only_file(out, "with_new.parquet"))
    sent = fresh_service.request_log.count()
    assert main(["push", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert fresh_service.request_log.count() == sent
    assert (out / "with_new.parquet").exists()  # nothing of the user's touched
    assert main(["push", str(out), "--overwrite"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == {"applied": 1}
    back = pd.read_parquet(out)
    assert len(back) == 31 and back["id"].notna().all()  # the new id written back
    before = _writes(fresh_service)
    assert main(["push", str(out)]) == 0  # nothing new: no --overwrite needed, no write
    assert _writes(fresh_service) == before


def test_serve_env_file_is_sourceable_private_and_removed_on_stop(tmp_path: Path) -> None:
    env_file = tmp_path / "svc.env"
    env_file.write_text("export SVC_APP_ID=stale\n")  # left by a killed run: replaced
    with subprocess.Popen([sys.executable, "-m", "svc_frames.cli", "serve", "--demo",
                           "--records", "5", "--port", "0", "--data", str(tmp_path / "d"),
                           "--env-file", str(env_file)],
                          stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            info = json.loads(proc.stdout.readline())  # printed before the file is written
            proc.stdout.readline()
            while not env_file.exists() or "stale" in env_file.read_text():
                assert proc.poll() is None
                time.sleep(0.05)
            assert env_file.stat().st_mode & 0o777 == 0o600  # it holds the API key
            shown = subprocess.run(["bash", "-c", f". {env_file}; echo $SVC_BASE_URL "
                                    "$SVC_APP_ID $SVC_EMAIL"], capture_output=True,
                                   text=True, check=True).stdout.split()
            assert shown == [info["base_url"], info["app_id"], info["users"][0]["email"]]
        finally:
            assert _stopped(proc) == 0
    assert not env_file.exists()  # stale credentials would mislead the next shell


def test_push_reports_applied_writes_even_when_the_refresh_fails(
        fresh_service: LocalService, tmp_path: Path) -> None:
    from svc_frames.records import Client
    from svc_frames.saved.export import export
    from svc_frames.saved.push import push

    client = Client(fresh_service.app_id, api_key=fresh_service.api_key,
                    base_url=fresh_service.base_url, rate_limit=0)
    out = tmp_path / "orders"
    export(client, "object_3", out, progress=False, columns="keys")
    df = pd.read_parquet(out)
    df.loc[0, "field_12"] = "applied before the disk failed"
    df.to_parquet(_only_file(out, "e.parquet"), index=False)
    meta = tmp_path / "orders.svc_frames.json"

    def break_metadata(r: Any, *args: Any, **kwargs: Any) -> None:
        if r.request.method == "PUT":  # the write is in; the refresh will find no metadata
            meta.write_text("{broken")

    client.session.hooks["response"].append(break_metadata)
    with pytest.warns(UserWarning, match="were applied, but .* could not be refreshed"):
        report = push(client, out)
    assert report.counts == {"applied": 1}
    rid = df.loc[0, "id"]
    assert _server_record(fresh_service, rid)["field_12_raw"] == "applied before the disk failed"


def test_push_of_an_edited_connection_table(fresh_service: LocalService, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """orders.tables/<connection>/ is editable too: a row added links, pushed once."""
    out = _exported(monkeypatch, fresh_service, tmp_path, capsys)
    links_dir = tmp_path / "orders.tables" / "field_41"
    links = pd.read_parquet(links_dir)
    parts = requests.get(f"{fresh_service.base_url}/v1/objects/object_2/records",
                         headers=fresh_service.headers(), timeout=30).json()["records"]
    rid = pd.read_parquet(out)["id"].iloc[0]
    have = set(links.loc[links["record_id"] == rid, "connected_id"])
    extra = next(p["id"] for p in parts if p["id"] not in have)
    links = pd.concat([links, pd.DataFrame({"record_id": [rid], "connected_id": [extra],
                                            "identifier": [None]})], ignore_index=True)
    links.to_parquet(_only_file(links_dir, "links.parquet"), index=False)
    before = _writes(fresh_service)
    assert main(["push", str(out)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == {"applied": 1}
    assert _writes(fresh_service) - before == 1
    linked = {c["id"] for c in _server_record(fresh_service, rid)["field_41_raw"]}
    assert linked == have | {extra}
    assert main(["push", str(out)]) == 0  # the as-loaded table followed: nothing to send
    assert _writes(fresh_service) - before == 1
    lines = capsys.readouterr().out.splitlines()
    assert "nothing to send: the frames equal what was loaded" in lines
    assert json.loads(lines[-1])["status"] == {"applied": 0}   # a zero, not a bare {}


def test_export_and_incremental_export_take_names(monkeypatch: pytest.MonkeyPatch,
                                                  service: LocalService, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _env(monkeypatch, service)
    assert main(["export", "work orders", "--out", str(tmp_path / "a"), "--no-progress"]) == 0
    assert main(["export", "Parts", "--out", str(tmp_path / "b"), "--incremental",
                 "--no-progress"]) == 0
    parts = requests.get(f"{service.base_url}/v1/objects/object_2/records",
                         headers=service.headers(), timeout=30).json()["total_records"]
    assert len(pd.read_parquet(tmp_path / "a")) > 0
    assert len(pd.read_parquet(tmp_path / "b")) == parts
    capsys.readouterr()
    assert main(["export", "Work Order", "--out", str(tmp_path / "c"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'Work Orders' (object_3)?" in err and not (tmp_path / "c").exists()


def test_a_closed_pipe_ends_the_command_quietly(service: LocalService) -> None:
    env = {**__import__("os").environ, "SVC_APP_ID": service.app_id,
           "SVC_API_KEY": service.api_key, "SVC_BASE_URL": service.base_url}
    with subprocess.Popen([sys.executable, "-m", "svc_frames.cli", "schema"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()   # `| head -1`: the reader is gone
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code in (0, 141)


def test_serve_gives_the_callers_signal_handlers_back() -> None:
    """`serve` handles Ctrl-C and SIGTERM itself while it runs; called in a process that
    goes on (a test, a notebook), it leaves that process's own handlers as they were, even
    when it refuses to start, so a later Ctrl-C still raises KeyboardInterrupt."""
    import signal

    from svc_frames.cli import main

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert main(["serve", "--activity", "no such object:fast"]) == 1
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
