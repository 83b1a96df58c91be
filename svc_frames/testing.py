"""Helpers for tests, notebooks and benchmarks that talk to the local service.

Usage::

    with LocalService(records=50) as svc:
        token = login(svc)                        # the first demo user's token
        rec = create(svc, "object_3", {"field_12": "Fix pump"})
        client = client_for(svc)                  # unpaced, quick retries
        orders = widest_object(client)            # the object that uses every kind
    with postgres_cluster() as base:              # a PostgreSQL 15 of its own
        url = postgres_database(base, "bench")    # postgresql://postgres@/bench?host=...
    last = mirror_consistent("app.duckdb")        # AssertionError unless whole
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

from .records import Client
from .server import LocalService

__all__ = ["LocalService", "object_url", "view_url", "login", "create", "field_of_kind",
           "hosted_sample_dir", "client_for", "widest_object", "postgres_cluster",
           "postgres_database", "mirror_consistent"]

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


#: The PostgreSQL server's binaries: ``$PG_BIN``, else Debian's server 15.
PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_server_user(args: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *args] if owner else args


@contextmanager
def postgres_cluster(pg_bin: Path = PG_BIN, *, fsync: bool = False) -> Iterator[str]:
    """A fresh PostgreSQL cluster in a temporary directory, stopped and removed on exit;
    yields its base URL (``postgresql://postgres@/?host=<socket dir>``).

    The server refuses to run as root, so when this process is root ``initdb`` and
    ``pg_ctl`` run as the ``postgres`` user (``runuser``) in a directory chowned to it. It
    listens on a Unix socket in that directory only (no TCP port), with ``trust`` for
    local connections. ``fsync=False`` (tests) spares the disk; a benchmark passes True,
    as a user's server runs. FileNotFoundError when ``pg_bin`` holds no server.

    Usage: ``with postgres_cluster() as base: url = postgres_database(base, "t")``"""
    if not (pg_bin / "initdb").exists():
        raise FileNotFoundError(f"no PostgreSQL server at {pg_bin} (make test-postgres "
                                "installs Debian's postgresql package)")
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="svc-frames-pg-"))
    if owner:
        pw = pwd.getpwnam(owner)
        os.chown(root, pw.pw_uid, pw.pw_gid)
    data = root / "data"
    try:
        subprocess.run(_as_server_user([str(pg_bin / "initdb"), "-D", str(data), "-U",
                                        "postgres", "--auth=trust", "-E", "UTF8",
                                        "--no-sync"], owner), check=True, capture_output=True)
        opts = (f"-c listen_addresses='' -c unix_socket_directories='{root}' "
                f"-c fsync={'on' if fsync else 'off'}")
        subprocess.run(_as_server_user([str(pg_bin / "pg_ctl"), "-D", str(data), "-l",
                                        str(root / "log"), "-o", opts, "-w", "start"],
                                       owner), check=True, capture_output=True)
        yield f"postgresql://postgres@/?host={root}"
    finally:
        if data.exists():
            subprocess.run(_as_server_user([str(pg_bin / "pg_ctl"), "-D", str(data), "-m",
                                            "immediate", "-w", "stop"], owner),
                           capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def postgres_database(cluster: str, name: str) -> str:
    """A new (emptied) database ``name`` of a ``postgres_cluster``; its URL.

    Usage: ``postgres_database(base, "t_mirror")``"""
    import psycopg

    with psycopg.connect(cluster.replace("/?", "/postgres?"), autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}"')
        con.execute(f'CREATE DATABASE "{name}"')
    return cluster.replace("/?", f"/{name}?")


def mirror_consistent(target: str) -> int:
    """The last run's number of a mirror, after checking that it is as a whole run left
    it: its runs numbered without a gap, and every present object's current tables equal
    to its history's open versions (and as many rows as the run recorded); 0 for a target
    no run has committed to. AssertionError naming what differs.

    Usage: ``mirror_consistent("app.duckdb")`` after a run was killed (``kill -9``)"""
    import pandas as pd

    from .mirroring.past import open_versions
    from .mirroring.state import MirrorState
    from .mirroring.target import open_target

    tgt = open_target(target)
    tgt.check()
    try:
        state = MirrorState.read(tgt)
        if state is None:
            return 0
        runs = sorted(int(r) for r in state.runs["run_id"])
        if runs != list(range(1, len(runs) + 1)):
            raise AssertionError(f"{target}: runs {runs} are not numbered without a gap")
        for key, obj in state.objects.items():
            if not obj.present:
                continue
            now = state.frames(key)
            kept = open_versions(state, key)
            if kept is None:
                raise AssertionError(f"{target}: {key} has no history")
            pd.testing.assert_frame_equal(now.main.sort_index(), kept.main.sort_index())
            if len(now.main) != obj.rows:
                raise AssertionError(f"{target}: {key} holds {len(now.main)} rows, its "
                                     f"run recorded {obj.rows}")
        return state.last_run
    finally:
        tgt.close()
