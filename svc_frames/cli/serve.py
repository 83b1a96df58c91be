"""``svc-frames serve``: the local service over HTTP (the demo application or ``--app``),
its address and credentials printed as one JSON line (and ``--env-file``), until a signal."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from typing import Any


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
    # handlers first: a SIGTERM during start-up still ends in a clean stop; the caller's
    # own back when the service stops (main() called in a process that goes on, as a
    # test or a notebook does, must not keep a Ctrl-C that raises nothing)
    before = (signal.signal(signal.SIGINT, _stop), signal.signal(signal.SIGTERM, _stop))
    try:
        return _serve(args, stop)
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])


def _serve(args: argparse.Namespace, stop: list[bool]) -> int:
    """The service started, its line and summary printed, run until ``stop[0]``."""
    # the server (FastAPI, uvicorn) loads only for `serve`: client commands start faster
    from ..server import LocalService
    from ..server.activity import Activity

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
