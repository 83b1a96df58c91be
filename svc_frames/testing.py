"""Helpers for tests, notebooks and benchmarks that talk to the local service.

Usage::

    with LocalService(records=50) as svc:
        token = login(svc)                        # the first demo user's token
        rec = create(svc, "object_3", {"field_12": "Fix pump"})
        client = client_for(svc)                  # unpaced, quick retries
        orders = widest_object(client)            # the object that uses every kind
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import requests

from .records import Client
from .server import LocalService

__all__ = ["LocalService", "object_url", "view_url", "login", "create", "field_of_kind",
           "hosted_sample_dir", "client_for", "widest_object"]

FIXTURES_ENV = "SVC_FIXTURES_DIR"
_HOSTED_SAMPLE = Path("shared") / "fixtures" / "hosted-sample"


def hosted_sample_dir() -> Path:
    """The hosted fixtures (``application.json``, ``records.json``): ``$SVC_FIXTURES_DIR``,
    else ``<repo>/../shared/fixtures/hosted-sample`` (CI keeps them beside the clone),
    else ``/work/shared/fixtures/hosted-sample``. Missing: FileNotFoundError saying what to
    set, so tests fail loudly instead of skipping.

    Usage: ``app = json.loads((hosted_sample_dir() / "application.json").read_text())``"""
    env = os.environ.get(FIXTURES_ENV)
    candidates = [Path(env)] if env else []
    candidates += [Path(__file__).resolve().parents[2] / _HOSTED_SAMPLE,
                   Path("/work") / _HOSTED_SAMPLE]
    candidates = list(dict.fromkeys(p.resolve() for p in candidates))  # one try each
    for path in candidates:
        if (path / "application.json").is_file():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise FileNotFoundError(
        f"hosted fixtures (application.json, records.json) not found; tried {tried}. "
        f"Set {FIXTURES_ENV} to the hosted-sample directory.")


def object_url(svc: LocalService, object_key: str, record_id: str | None = None) -> str:
    """``{base}/v1/objects/<key>/records[/<id>]``."""
    url = f"{svc.base_url}/v1/objects/{object_key}/records"
    return f"{url}/{record_id}" if record_id else url


def view_url(svc: LocalService, scene: str, view: str, record_id: str | None = None) -> str:
    """``{base}/v1/pages/<scene>/views/<view>/records[/<id>]``."""
    url = f"{svc.base_url}/v1/pages/{scene}/views/{view}/records"
    return f"{url}/{record_id}" if record_id else url


def login(svc: LocalService, user: int | str = 0) -> str:
    """Log a demo user in (index or email) and return the token."""
    users = svc.users
    u = users[user] if isinstance(user, int) else next(x for x in users if x["email"] == user)
    r = requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/session",
                      json={"email": u["email"], "password": u["password"]}, timeout=30)
    r.raise_for_status()
    return str(r.json()["session"]["user"]["token"])


def create(svc: LocalService, object_key: str, values: dict[str, Any]) -> dict[str, Any]:
    """Create a record through the object endpoint; the answered record."""
    r = requests.post(object_url(svc, object_key), json=values, headers=svc.headers(),
                      timeout=30)
    r.raise_for_status()
    out: dict[str, Any] = r.json()
    return out


def field_of_kind(svc: LocalService, object_key: str, kind: str,
                  **format_match: Any) -> str:
    """The key of the first field of a kind (and format members) in the served schema."""
    r = requests.get(f"{svc.base_url}/v1/applications/{svc.app_id}", timeout=30)
    r.raise_for_status()
    for obj in r.json()["application"]["objects"]:
        if obj["key"] != object_key:
            continue
        for f in obj["fields"]:
            fmt = f.get("format") or {}
            if f["type"] == kind and all(fmt.get(k) == v for k, v in format_match.items()):
                return str(f["key"])
    raise KeyError(f"no {kind} field in {object_key}")


def client_for(svc: LocalService, **kw: Any) -> Client:
    """A client of the local service's application: unpaced unless ``rate_limit`` is
    given, and retrying after 10 ms (a test's faults need not wait out real backoffs).

    Usage: ``client_for(svc, rate_limit=10)``"""
    kw.setdefault("rate_limit", 0)
    kw.setdefault("backoff", 0.01)
    if svc.ca_file is not None:
        kw.setdefault("verify", svc.ca_file)  # the loopback certificate (server/tls.py)
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, **kw)


def widest_object(client: Client) -> str:
    """The key of the object that uses the most field kinds (the demo's work orders),
    found through the schema rather than a fixed key.

    Usage: ``widest_object(client_for(svc))  # "object_3"``"""
    best = max(client.schema().get("objects") or [], key=lambda o: len({f["type"] for f in o["fields"]}))
    return str(best["key"])
