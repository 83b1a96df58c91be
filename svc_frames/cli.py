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
import json
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

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
                   help="demo work orders to generate in a new data directory (default 1000)")
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
    p.add_argument("--faults", type=float, default=0.0,
                   help="probability of an emulated fault (500/502/503/429/dropped "
                        "connection), applied before the request is handled")
    p.add_argument("--upload-limit-mb", type=float, default=50, help="upload size limit")
    p.add_argument("--seed", type=int, default=0, help="demo generator seed")
    return p


def cmd_serve(args: argparse.Namespace) -> int:
    from .server import LocalService

    if args.records < 0:
        print("error: --records must be >= 0", file=sys.stderr)
        return 2
    if not 0 <= args.faults <= 1:
        print("error: --faults is a probability between 0 and 1", file=sys.stderr)
        return 2
    try:
        svc = LocalService(demo=args.app is None, records=args.records, data_dir=args.data,
                           rate_limit=args.rate_limit, latency_ms=args.latency_ms,
                           faults=args.faults, seed=args.seed, app=args.app, host=args.host,
                           port=args.port, daily_quota=args.daily_quota,
                           jitter_ms=args.jitter_ms,
                           upload_limit_bytes=int(args.upload_limit_mb * 1024 * 1024))
        svc.start()
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    info = {"base_url": svc.base_url, "app_id": svc.app_id, "api_key": svc.api_key,
            "users": [{"email": u["email"], "password": u["password"],
                       "profile_keys": u["profile_keys"]} for u in svc.users]}
    print(json.dumps(info), flush=True)
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
    stop = threading.Event()

    def _stop(*_: Any) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        svc.stop()
    return 0


# ---- registry ---------------------------------------------------------------------------
SUBCOMMANDS: dict[str, tuple[Callable[[Any], argparse.ArgumentParser], Handler]] = {
    "serve": (add_serve, cmd_serve),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="svc-frames", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (add, handler) in SUBCOMMANDS.items():
        add(sub).set_defaults(handler=handler, command=name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``svc-frames``: ``main(["serve", "--demo"])``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help()
        return 2
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
