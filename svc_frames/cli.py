"""The ``svc-frames`` command line.

Each subcommand is one ``cmd_<name>(args) -> int`` function and one ``add_<name>(sub)``
function that declares its arguments; both are registered in ``SUBCOMMANDS``. Adding a
subcommand is writing those two functions and one line in ``SUBCOMMANDS``.

Usage::

    svc-frames serve --demo --records 1000 --port 8765
    python -m svc_frames.cli serve --data ./data --rate-limit 10
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from .application import read_app
from .errors import SvcError, UsageError, warnings_as_lines
from .http.hints import KEY_FROM_FLAG
from .query import validate_filters
from .records import Client
from .refreshing.cache import export_incremental
from .saved.export import export
from .saved.push import push
from .saved.snapshot import check_destination, import_duckdb
from .undoing import undo

Handler = Callable[[argparse.Namespace], int]


# ---- serve ------------------------------------------------------------------------------
def add_serve(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "serve", help="run the local service (demo application or --app FILE)",
        description="Serve an application over HTTP as the hosted service would. Prints one "
                    "JSON line (base_url, app_id, api_key, users) then a summary.")
    p.add_argument("--demo", action="store_true",
                   help="serve the demo application (default when --app is not given)")
    p.add_argument("--records", type=int, default=1000,
                   help="records to generate in a new data directory: demo work orders, "
                        "or per object with --app (default 1000)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 = any free)")
    p.add_argument("--data", default=None,
                   help="data directory (kept across restarts; default: a temporary one)")
    p.add_argument("--app", default=None, help="application document (JSON, schema shape)")
    p.add_argument("--rate-limit", type=float, default=10,
                   help="requests per second per application, 0 = off (default 10)")
    p.add_argument("--daily-quota", type=int, default=0, help="requests per day, 0 = off")
    p.add_argument("--latency-ms", type=float, default=0, help="added latency per request")
    p.add_argument("--jitter-ms", type=float, default=0, help="random extra latency (max)")
    p.add_argument("--handshake-ms", type=float, default=0,
                   help="how long a new connection's handshake takes (TCP and TLS, about "
                        "twice --latency-ms on a hosted service; default 0): with --tls "
                        "the client's connect waits it out, without it the connection's "
                        "first request is held")
    p.add_argument("--tls", action="store_true",
                   help="serve HTTPS with the loopback test certificate; clients trust "
                        "the file printed as ca_file (requests' verify=)")
    p.add_argument("--faults", type=float, default=0.0,
                   help="probability of an emulated fault (500/502/503/429/dropped "
                        "connection), applied before the request is handled")
    p.add_argument("--upload-limit-mb", type=float, default=50, help="upload size limit")
    p.add_argument("--token-hours", type=float, default=48, help="user token lifetime (48)")
    p.add_argument("--clock-offset-ms", type=float, default=0,
                   help="the service's clock runs this many ms ahead of this machine's "
                        "(negative: behind; at most an hour either way): its rate-limit "
                        "seconds, quota day, reset and Date headers and stamps follow it")
    p.add_argument("--activity", default=None, metavar="OBJECTS:RATE/s[:WEIGHTS]",
                   help="other users editing while the service runs, e.g. 'object_3:2/s' or "
                        "'object_3,object_2:0.5/s:inserts=1,updates=3,deletes=1' (seeded by "
                        "--seed; off by default)")
    p.add_argument("--seed", type=int, default=0, help="demo generator seed")
    p.add_argument("--env-file", default=None,
                   help="once listening, write FILE (mode 0600) with `export SVC_BASE_URL=... "
                        "SVC_APP_ID SVC_API_KEY SVC_EMAIL SVC_PASSWORD` (the first demo user) "
                        "for a shell to source; removed when the service stops")
    return p


def write_env_file(path: str, svc: Any) -> None:
    """The service's address and credentials as shell ``export`` lines, written whole
    (a reader polling for the file never sees half of it), readable by the owner only."""
    values = {"SVC_BASE_URL": svc.base_url, "SVC_APP_ID": svc.app_id,
              "SVC_API_KEY": svc.api_key}
    if svc.users:
        values["SVC_EMAIL"] = svc.users[0]["email"]
        values["SVC_PASSWORD"] = svc.users[0]["password"]
    text = "".join(f"export {k}={shlex.quote(str(v))}\n" for k, v in values.items())
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def cmd_serve(args: argparse.Namespace) -> int:
    # the server (FastAPI, uvicorn) loads only for `serve`: client commands start faster
    from .server import LocalService
    from .server.activity import Activity

    if args.records < 0:
        print("error: --records must be >= 0", file=sys.stderr)
        return 2
    if not 0 <= args.faults <= 1:
        print("error: --faults is a probability between 0 and 1", file=sys.stderr)
        return 2
    # a plain flag, not a threading.Event: the handler runs in the main thread between
    # two bytecodes, possibly while that thread holds the Event's lock inside wait(), and
    # Event.set() would then wait for it forever (a SIGTERM that never stopped the service)
    stop = [False]

    def _stop(*_: Any) -> None:
        stop[0] = True

    if args.env_file:
        with contextlib.suppress(FileNotFoundError):  # a stale one from a killed run
            os.remove(args.env_file)
    # handlers first: a SIGTERM during start-up still ends in a clean stop
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        activity = Activity.parse(args.activity, seed=args.seed) if args.activity else None
        svc = LocalService(demo=args.app is None, records=args.records, data_dir=args.data,
                           rate_limit=args.rate_limit, latency_ms=args.latency_ms,
                           faults=args.faults, seed=args.seed, app=args.app, host=args.host,
                           port=args.port, daily_quota=args.daily_quota,
                           jitter_ms=args.jitter_ms, handshake_ms=args.handshake_ms,
                           upload_limit_bytes=int(args.upload_limit_mb * 1024 * 1024),
                           token_ttl_s=args.token_hours * 3600,
                           clock_offset_ms=args.clock_offset_ms, activity=activity,
                           tls=args.tls)
        svc.start()
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    info = {"base_url": svc.base_url, "app_id": svc.app_id, "api_key": svc.api_key,
            **({"ca_file": svc.ca_file} if svc.tls else {}),
            "users": [{"email": u["email"], "password": u["password"],
                       "profile_keys": u["profile_keys"]} for u in svc.users]}
    print(json.dumps(info), flush=True)
    if args.env_file:
        try:
            write_env_file(args.env_file, svc)
        except OSError as exc:
            svc.stop()
            print(f"error: --env-file {args.env_file}: {exc}", file=sys.stderr)
            return 1
    counts = svc.state.counts if svc.state else {}
    lines = [f"svc-frames local service: {svc.app.name}",
             f"  base URL     {svc.base_url}",
             f"  schema       {svc.base_url}/v1/applications/{svc.app_id}",
             f"  OpenAPI      {svc.base_url}/docs",
             f"  data dir     {svc.data_dir}",
             "  records      " + ", ".join(f"{svc.app.objects[k].name}: {n}"
                                           for k, n in counts.items()),
             f"  rate limit   {args.rate_limit or 'off'} req/s; latency {args.latency_ms} ms; "
             f"faults {args.faults}"]
    for u in svc.users:
        lines.append(f"  user         {u['email']} / {u['password']} "
                     f"({', '.join(u['profile_keys'])})")
    lines.append("  Ctrl-C to stop")
    print("\n".join(lines), flush=True)
    try:
        while not stop[0]:
            time.sleep(0.2)  # a signal ends the sleep; the handler sets the flag
    finally:
        svc.stop()
        if args.env_file:
            with contextlib.suppress(OSError):  # stale credentials would mislead
                os.remove(args.env_file)
    return 0


# ---- credentials shared by client subcommands -------------------------------------------
def add_credentials(p: argparse.ArgumentParser) -> None:
    """--app-id/--api-key/--base-url/--token/--email/--password (else SVC_* variables)."""
    g = p.add_argument_group("credentials (default: SVC_APP_ID, SVC_API_KEY, SVC_BASE_URL, "
                             "SVC_TOKEN, SVC_EMAIL, SVC_PASSWORD)")
    g.add_argument("--app-id", default=None, help="application id")
    g.add_argument("--api-key", default=None, help="API key (prefer SVC_API_KEY)")
    g.add_argument("--base-url", default=None, help="service address, e.g. http://127.0.0.1:8765")
    g.add_argument("--token", default=None, help="user token for views behind a login")
    g.add_argument("--email", default=None, help="log in as this user (views behind a login)")
    g.add_argument("--password", default=None, help="password for --email (prefer SVC_PASSWORD)")
    g.add_argument("--rate-limit", type=float, default=10.0,
                   help="client pace, requests per second (default 10; 0 = off)")


def client_from_args(args: argparse.Namespace) -> Client:
    """A Client from flags, falling back to the environment; logs in when asked to."""
    client = Client.from_env(app_id=args.app_id, api_key=args.api_key, base_url=args.base_url,
                             token=args.token, rate_limit=args.rate_limit)
    if args.api_key:
        client.api_key_source = KEY_FROM_FLAG  # a refusal names the flag to fix
    email = args.email or (os.environ.get("SVC_EMAIL") if args.password else None)
    password = args.password or os.environ.get("SVC_PASSWORD")
    if args.email and not password:
        raise SystemExit("error: --email needs --password or SVC_PASSWORD")
    if email and password and (args.email or not client.token):
        client.login(email, password)
    return client


def run_client_command(fn: Callable[[], int]) -> int:
    """Typed errors become one clear line on stderr (2: bad input, 1: the service)."""
    try:
        return fn()
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SvcError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


# ---- export -------------------------------------------------------------------------------
def export_incremental_cmd(args: argparse.Namespace, client: Any, filters: Any) -> int:
    """``export --incremental``: svc_frames.refreshing.cache.export_incremental, one JSON line."""
    from .errors import UsageError

    if args.format != "parquet" or args.limit is not None or args.sort_field:
        raise UsageError("--incremental keeps a whole parquet dataset current: no --format "
                         "csv, --limit or --sort-field")
    res = export_incremental(client, args.target, args.out, filters=filters,
                             columns=args.columns, timezone=args.timezone,
                             modified_field=args.modified_field,
                             progress=False if args.no_progress else None)
    print(json.dumps({"path": str(res.path), "records": res.records, "written": res.written,
                      "refresh": res.report.counts if res.report else None,
                      "full": res.report is None or res.report.full,
                      "cache": str(res.cache), "requests": client.request_count}))
    return 0


def add_export(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "export", help="stream an object or a view to a Parquet (or CSV) dataset",
        description="Write every record of OBJECT (object_N) or SCENE/VIEW (scene_N/view_N) "
                    "to part files in DIR as pages arrive; memory stays flat. DIR is a "
                    "dataset pyarrow.dataset, DuckDB, Polars or Spark read as is.")
    p.add_argument("target", nargs="?", help="an object or a view, by key (object_N, scene_N/view_N) or name (not with --app)")
    p.add_argument("--out", default=None,
                   help="output directory (must not exist or be empty); OUT.tables, "
                        "OUT.svc_frames.json and OUT.svc_frames are written beside it "
                        "(with --app: a directory of Parquet datasets, one per table)")
    add_app_export(p)
    p.add_argument("--filters", default=None, help='filters as JSON, e.g. \'[{"field": '
                   '"field_3", "operator": "is", "value": "Open"}]\'')
    p.add_argument("--format", choices=["parquet", "csv"], default="parquet")
    p.add_argument("--sort-field", default=None)
    p.add_argument("--sort-order", choices=["asc", "desc"], default=None)
    p.add_argument("--limit", type=int, default=None, help="at most this many records")
    p.add_argument("--rows-per-page", type=int, default=1000, help="1..1000 (default 1000)")
    p.add_argument("--columns", type=columns_arg, default="labels",
                   help="labels (default: columns named by field label), keys, or the "
                        "fields to export, comma separated (by label or key; named by "
                        "label)")
    p.add_argument("--timezone", default=None, help="IANA zone overriding the app's")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true",
                   help="replace saved frames already at --out")
    p.add_argument("--incremental", action="store_true",
                   help="keep DIR current: refresh a cache (DIR.cache) with a few requests "
                        "and rewrite DIR only when records changed (parquet only)")
    p.add_argument("--modified-field", default=None,
                   help="with --incremental: the date field stamped on every change")
    add_credentials(p)
    return p


def columns_arg(text: str) -> str | list[str]:
    """``--columns``: "labels", "keys", or a comma-separated list of fields."""
    if text in ("keys", "labels"):
        return text
    fields = [f.strip() for f in text.split(",") if f.strip()]
    if not fields:
        raise argparse.ArgumentTypeError("labels, keys or a comma-separated list of fields")
    return fields


def add_app_export(p: argparse.ArgumentParser) -> None:
    """``export --app``: every object (read_app) to a DuckDB file and/or a Parquet dir."""
    g = p.add_argument_group("the whole application (read_app)")
    g.add_argument("--app", action="store_true",
                   help="every object (or --objects) with its connections, instead of TARGET")
    g.add_argument("--objects", default=None,
                   help="with --app: comma-separated object keys or names (default: all)")
    g.add_argument("--duckdb", default=None, metavar="FILE",
                   help="with --app: write one DuckDB file (needs svc-frames[duckdb]); "
                        "--overwrite replaces an existing one (and an --out directory)")


def cmd_export_app(args: argparse.Namespace) -> int:
    def run() -> int:

        if args.target:
            raise SystemExit("error: --app exports every object: drop TARGET")
        if not args.duckdb and not args.out:
            raise SystemExit("error: --app needs --duckdb FILE and/or --out DIR")
        # destinations checked before any request
        if args.duckdb:
            check_destination(args.duckdb, args.overwrite, "--duckdb", directory=False)
            import_duckdb()
        if args.out:
            check_destination(args.out, args.overwrite, "--out", directory=True)
        client = client_from_args(args)
        objects = [o.strip() for o in args.objects.split(",")] if args.objects else None
        app = read_app(client, objects, columns=args.columns, timezone=args.timezone,
                       progress=False if args.no_progress else True,
                       rows_per_page=args.rows_per_page)
        out: dict[str, Any] = {"objects": {k: len(f.main) for k, f in app.items()},
                               "connections": len(app.connections)}
        if args.duckdb:
            out["duckdb"] = str(app.to_duckdb(args.duckdb, overwrite=args.overwrite))
        if args.out:
            out["parquet"] = str(app.to_parquet(args.out, overwrite=args.overwrite))
        out["requests"] = client.request_count
        print(json.dumps(out))
        return 0

    return run_client_command(run)


def cmd_export(args: argparse.Namespace) -> int:
    if args.app:
        return cmd_export_app(args)
    if not args.target or not args.out:
        raise SystemExit("error: export needs TARGET and --out DIR (or --app)")

    def run() -> int:
        filters = validate_filters(args.filters) if args.filters else None
        client = client_from_args(args)
        if args.incremental:
            return export_incremental_cmd(args, client, filters)
        res = export(client, args.target, args.out, filters=filters, format=args.format,
                     sort_field=args.sort_field, sort_order=args.sort_order, limit=args.limit,
                     columns=args.columns, timezone=args.timezone,
                     progress=False if args.no_progress else True,
                     rows_per_page=args.rows_per_page, overwrite=args.overwrite)
        print(json.dumps({"path": str(res.path), "records": res.records, "parts": res.parts,
                          "tables": res.tables, "passes": res.passes,
                          "tables_path": str(res.tables_path) if res.tables_path else None,
                          "metadata": str(res.meta_path),
                          "requests": client.request_count}))
        return 0

    return run_client_command(run)


# ---- schema -------------------------------------------------------------------------------
def add_schema(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "schema", help="print the application's objects, fields and kinds, scenes and views")
    p.add_argument("--json", action="store_true", help="the schema as JSON")
    add_credentials(p)
    return p


def cmd_schema(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        schema = client.schema()
        if not schema:
            print(f"error: {client.base_url} shows no schema for application "
                  f"{client.app_id!r}: the service hides it (loads then infer kinds from the "
                  "records), or that is not the service's address or the application's id: "
                  "check SVC_BASE_URL (--base-url) and SVC_APP_ID (--app-id)", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(dict(schema), indent=1))
            return 0
        print(f"{schema.name or '?'} (id {schema.get('id', client.app_id)}, "
              f"timezone {schema.timezone_name or '?'})")
        for okey in schema.object_keys():
            print(f"\n{okey}  {schema.object_name(okey)}")
            for f in schema.object_fields(okey) or ():
                extra = ""
                if f.kind == "multiple_choice" and f.format.get("type"):
                    extra = f" ({f.format['type']})"
                if f.relationship:
                    rel = f.relationship
                    extra = f" -> {rel.get('object')} ({rel.get('has', '?')})"
                print(f"  {f.key:<10} {f.kind:<16} {f.name}{extra}")
        if schema.scenes():
            print("\nscenes and views")
        for skey, sc in schema.scenes():
            login = " (login)" if sc.get("authenticated") else ""
            print(f"  {skey}{login} {sc.get('name', '')}")
            for vkey, v in schema.scene_views(skey):
                print(f"    {vkey:<9} {v.get('type', '?'):<9} "
                      f"{schema.view_object(skey, vkey):<10} {v.get('name', '')}")
        return 0

    return run_client_command(run)


# ---- push ---------------------------------------------------------------------------------
def add_push(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "push", help="write the edits of a saved Parquet directory back to the service",
        description="Diff PATH (saved frames: written by export or to_parquet, then edited "
                    "with any tool: pandas, pyarrow, DuckDB, Polars, a spreadsheet through "
                    "CSV) against the values it was loaded with, and send only the changes "
                    "(write_back). PATH is checked against the metadata beside it "
                    "(PATH.svc_frames.json) before any request. After a run, the as-loaded "
                    "copy follows the server, so pushing again sends nothing; PATH itself is "
                    "rewritten (new ids, server values) only with --overwrite, which new rows "
                    "need.")
    p.add_argument("path", help="directory written by export or to_parquet")
    p.add_argument("--dry-run", action="store_true", help="print the plan, send nothing")
    p.add_argument("--on-conflict", choices=["skip", "overwrite", "raise"], default="skip",
                   help="a record changed on the server since it was loaded (default: skip)")
    p.add_argument("--delete-missing", action="store_true",
                   help="delete records whose rows were removed")
    p.add_argument("--journal", default=None,
                   help="JSON-lines journal of acknowledged writes (resume a cut run)")
    p.add_argument("--view", default=None,
                   help="write through a form or inline-editing view: scene_N/view_N")
    p.add_argument("--overwrite", action="store_true",
                   help="rewrite PATH with the server's values and new ids after the run "
                        "(needed to create new rows)")
    add_credentials(p)
    return p


def cmd_push(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        target = tuple(args.view.split("/", 1)) if args.view else None
        report = push(client, args.path, dry_run=args.dry_run, on_conflict=args.on_conflict,
                      delete_missing=args.delete_missing, journal=args.journal,
                      target=target, overwrite=args.overwrite)
        estimate = report.plan.estimate_requests(
            rate=client.limiter.rate, delete_missing=args.delete_missing,
            on_conflict=args.on_conflict)
        with pd.option_context("display.width", 160, "display.max_colwidth", 60,
                               "display.max_rows", 200):
            if report.nothing_to_send:
                print(report.nothing_to_send)
            elif args.dry_run:
                print(report.plan.changes.to_string(index=False))
                # what the run would take, up front: requests and time at the pace
                print(f"{', '.join(f'{n} {a}' for a, n in report.plan.counts.items())}: "
                      f"{estimate}")
            else:
                print(report.table.to_string(index=False))
        if report.plan.left_out:
            print("left out (no field, never sent): "
                  + ", ".join(map(str, report.plan.left_out)))
        print(json.dumps({"dry_run": args.dry_run, "plan": report.plan.counts,
                          "status": report.counts, "requests": report.requests,
                          "estimate": {"requests": estimate.total,
                                       "seconds": None if estimate.seconds is None
                                       else round(estimate.seconds, 1)}}))
        return 0 if report.ok else 1

    return run_client_command(run)


# ---- undo ---------------------------------------------------------------------------------
def add_undo(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "undo", help="reverse one write_back run from its journal",
        description="Plan the reversal of the last run JOURNAL records (write_back or push "
                    "with --journal): updates back to their values as loaded, created "
                    "records deleted, deleted records created again (new ids, printed as "
                    "old -> new). What cannot come back is printed before anything is "
                    "sent. The live guard leaves every cell someone else changed after the "
                    "run as it is (a conflict) unless --force names the record. Running "
                    "the same command again with the same --journal resumes an "
                    "interrupted undo; the undo's own journal undoes the undo.")
    p.add_argument("journal", help="the run's journal (JSON lines)")
    p.add_argument("--dry-run", action="store_true", help="print the plan, send nothing")
    p.add_argument("--journal", dest="undo_journal", default=None,
                   help="the undo's own journal (resume an interrupted undo; undo it)")
    p.add_argument("--object", default=None,
                   help="refuse a journal of another object (key or name)")
    p.add_argument("--run", type=int, default=-1,
                   help="which run of a journal holding several (default -1: the last)")
    p.add_argument("--force", action="append", default=[], metavar="ID",
                   help="overwrite this record even where someone changed it after the "
                        "run (repeatable)")
    add_credentials(p)
    return p


def cmd_undo(args: argparse.Namespace) -> int:
    def run() -> int:
        client = client_from_args(args)
        plan = undo(client, args.journal, object=args.object, run=args.run)
        with pd.option_context("display.width", 160, "display.max_colwidth", 60,
                               "display.max_rows", 200):
            print(repr(plan))
            if len(plan.lost):
                print("cannot come back:")
                print(plan.lost.to_string(index=False))
            if len(plan.missing):
                print("not undone (the journal cannot reverse them):")
                print(plan.missing.to_string(index=False))
            if args.dry_run:
                print(plan.changes.to_string(index=False))
                print(json.dumps({"dry_run": True, "plan": plan.counts,
                                  "lost": len(plan.lost), "missing": len(plan.missing)}))
                return 0
            report = plan.apply(force=args.force, journal=args.undo_journal)
            print(report.table.to_string(index=False))
        for old, new in plan.id_map.items():
            print(f"{old} -> {new}")
        print(json.dumps({"dry_run": False, "plan": plan.counts, "status": report.counts,
                          "requests": report.requests, "id_map": plan.id_map}))
        return 0 if report.ok else 1

    return run_client_command(run)


# ---- mirror -------------------------------------------------------------------------------
def add_mirror(sub: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "mirror", help="bring a DuckDB file, PostgreSQL database or Parquet directory up "
                       "to date with the application, every version of every record kept",
        description="Mirror the application into TARGET (a DuckDB file path, a directory "
                    "of Parquet datasets, or postgresql://...): the current state as tables, and every version "
                    "of every record in <table>__history; deletions and schema changes "
                    "followed (docs/mirror.md). Prints one summary line (--json: the "
                    "report as JSON); exit 0 on success, 2 on bad input, 1 when the "
                    "service or the target failed, 130 when interrupted (nothing half-"
                    "written). Cron-friendly.")
    p.add_argument("--to", required=True, dest="to", metavar="TARGET",
                   help="a DuckDB file, a directory (dir/) or postgresql://user@host/db")
    p.add_argument("--objects", nargs="+", default=None, metavar="OBJECT",
                   help="the objects to mirror, by key or name (default: all)")
    p.add_argument("--schema", choices=["stop", "evolve"], default="stop",
                   help="a field of another kind: refuse the run (stop, default) or keep "
                        "both kinds in the history (evolve)")
    p.add_argument("--sweep-every", type=int, default=10,
                   help="every Nth run lists every record of an object (default 10; 0: "
                        "never)")
    p.add_argument("--wait", type=float, default=0.0,
                   help="seconds to wait for another run holding the target (default 0)")
    p.add_argument("--repair", action="store_true",
                   help="write again tables edited by hand (from the service)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON line")
    add_credentials(p)
    return p


def cmd_mirror(args: argparse.Namespace) -> int:
    from .mirroring.past import last_run
    from .mirroring.run import mirror

    def run() -> int:
        client = client_from_args(args)
        try:
            report = mirror(client, args.to, args.objects, schema=args.schema,
                            sweep_every=args.sweep_every, wait=args.wait, repair=args.repair)
        except KeyboardInterrupt:
            # the run's one transaction was rolled back, or had committed just before
            print(f"mirror interrupted: {args.to} holds run {last_run(args.to)} whole; "
                  "nothing half-written", file=sys.stderr)
            return 130
        print(report.to_json() if args.json else str(report))
        return 0

    return run_client_command(run)


# ---- registry ---------------------------------------------------------------------------
SUBCOMMANDS: dict[str, tuple[Callable[[Any], argparse.ArgumentParser], Handler]] = {
    "serve": (add_serve, cmd_serve),
    "export": (add_export, cmd_export),
    "schema": (add_schema, cmd_schema),
    "push": (add_push, cmd_push),
    "undo": (add_undo, cmd_undo),
    "mirror": (add_mirror, cmd_mirror),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    from . import __version__

    parser = argparse.ArgumentParser(prog="svc-frames", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (add, handler) in SUBCOMMANDS.items():
        add(sub).set_defaults(handler=handler, command=name)
    return parser


def interrupted_line(args: argparse.Namespace, exc: KeyboardInterrupt) -> str:
    """The one line a Ctrl-C prints: for push, what the run did (its partial report) and
    that pushing again sends only the rest; for an export, that its output was left as
    it was (the export writes nothing until its last page: saved/layout.py Staging)."""
    report = getattr(exc, "report", None)
    command = getattr(args, "command", None)
    if command == "push" and report is not None:
        status = report.table["status"]
        applied = int((status == "applied").sum())
        rest = len(status) - applied
        unknown = int((status == "unknown").sum())
        lost = (f" ({unknown} sent without an answer: the next push re-reads them)"
                if unknown else "")
        return (f"svc-frames push: interrupted: {applied} of {len(status)} records applied, "
                f"{rest} left{lost}; run "
                f"`svc-frames push {args.path}` again to send only the rest")
    if command == "push":
        return (f"svc-frames push: interrupted; run `svc-frames push {args.path} --dry-run` "
                "to see what is left to send")
    if command == "export" and getattr(args, "out", None):
        return (f"svc-frames export: interrupted; {args.out} was left as it was (an export "
                "writes nothing until it has every page): run the same command again")
    return "svc-frames" + (f" {command}" if command else "") + ": interrupted"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``svc-frames``: ``main(["serve", "--demo"])``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    try:
        with warnings_as_lines("svc-frames"):  # one line each, not the entry point's source
            code = int(args.handler(args))
        sys.stdout.flush()
    except KeyboardInterrupt as exc:
        # Ctrl-C: one line (what was done, how to go on), not a traceback; 130 as a
        # shell reports a command ended by SIGINT
        print(interrupted_line(args, exc), file=sys.stderr, flush=True)
        return 130
    except BrokenPipeError:
        # the reader went away (`svc-frames schema | head`): stop quietly, as a Unix tool
        # ended by SIGPIPE does; stdout goes to devnull so the exit's flush cannot fail
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    return code


if __name__ == "__main__":
    sys.exit(main())
