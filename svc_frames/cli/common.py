"""What the client subcommands share: the credential flags, the ``Client`` they make, and
typed errors turned into one line on stderr."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from ..errors import SvcError, UsageError
from ..http.hints import KEY_FROM_FLAG
from ..records import Client


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
