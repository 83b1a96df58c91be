"""``svc-frames export``: an object or a view streamed to a Parquet (or CSV) dataset,
kept current with ``--incremental``, or the whole application (``--app``) to DuckDB or
Parquet."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..application import read_app
from ..query import validate_filters
from ..refreshing.cache import export_incremental
from ..saved.export import export
from ..saved.snapshot import check_destination, import_duckdb
from .common import add_credentials, client_from_args, run_client_command


def export_incremental_cmd(args: argparse.Namespace, client: Any, filters: Any) -> int:
    """``export --incremental``: svc_frames.refreshing.cache.export_incremental, one JSON line."""
    from ..errors import UsageError

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
    p.add_argument("--format", choices=["parquet", "csv", "xlsx"], default="parquet",
                   help="parquet (default), csv, or xlsx (Excel: dates in the "
                        "application's wall time)")
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
