"""Opening a service on a data directory, and ``LocalService`` (uvicorn in a thread).

A data directory holds ``app.json`` (the application document with its id, API key and
utility key, written once) and ``service.db`` (SQLite). Reopening the same directory
serves the same application and data; ``app``/``demo``/``records`` only apply when the
directory is new.

Usage::

    with LocalService(demo=True, records=300) as svc:
        requests.get(f"{svc.base_url}/v1/objects/object_3/records", headers=svc.headers())
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import uvicorn

from .activity import Activity, ActivityRunner
from .app import build_app
from .builder import Builder
from .demo_app import DEMO_USERS, demo_document, generate_demo
from .emulate import Emulation, RequestLog
from .generate import generate_generic, seed_users
from .pages import AppPages
from .private import private_dir, write_private
from .protocol import MAX_HEAD_BYTES, REQUEST_TIMEOUT_S, bounded_protocol
from .render import Renderer
from .schema import AppDef
from .state import ServiceState
from .store import Store
from .tls import CA_FILE, server_context


def _load_document(app: str | os.PathLike[str] | Mapping[str, Any] | None,
                   demo: bool) -> dict[str, Any]:
    if app is None:
        if not demo:
            raise ValueError("give an application document (app=...) or demo=True")
        return demo_document()
    if isinstance(app, Mapping):
        copied: dict[str, Any] = json.loads(json.dumps(app))
        return copied
    text = Path(app).read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{app}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"{app}: the application document must be a JSON object")
    return doc


def open_state(data_dir: str | os.PathLike[str], *, app: Any = None, demo: bool = True,
               records: int = 300, seed: int = 0, token_ttl_s: float | None = None,
               emulation: Emulation | None = None,
               activity: Activity | None = None) -> ServiceState:
    """Open (or create and fill) the service of a data directory.

    The directory is made owner-only (0700, its files 0600); ``app.json`` keeps no
    password: seed users' passwords live hashed in the database only."""
    data = Path(data_dir)
    meta_path = data / "app.json"
    created = not meta_path.exists()
    private_dir(data)
    if created:
        doc = _load_document(app, demo)
        inner = doc.get("application", doc)
        app_id = str(inner.get("id") or secrets.token_hex(12))
        meta = {"app_id": app_id, "api_key": secrets.token_hex(16),
                "utility_key": secrets.token_hex(12), "demo": app is None,
                "document": inner}
        # a directory whose creation was interrupted (no app.json yet) is made again
        for leftover in data.glob("service.db*"):
            leftover.unlink()
        shutil.rmtree(data / "assets", ignore_errors=True)
    else:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    app_def = AppDef.from_document(meta["document"], app_id=meta["app_id"])
    emu = emulation or Emulation()
    emu.validate()
    app_def.clock = emu.now   # stamps, ids and date filters read the service's clock
    if activity is not None:
        activity.check(app_def)   # before the store is opened or filled
    known = ({str(u["email"]): str(u["password"]) for u in DEMO_USERS} if meta.get("demo")
             else {})
    renderer = Renderer(app_def)
    store = Store(data, app_def, renderer)
    if token_ttl_s is not None:
        store.accounts.token_ttl = float(token_ttl_s)
    profile_of = {o.key: o.profile_key or "" for o in app_def.objects.values()}
    state = ServiceState(app=app_def, store=store, renderer=renderer, emulation=emu,
                         api_key=meta["api_key"], utility_key=meta["utility_key"],
                         data_dir=data, users=listed_users(app_def.users, profile_of, known),
                         created=created)
    if created:
        if meta.get("demo"):
            state.counts = generate_demo(state, max(int(records), 0), seed=seed)
        else:
            seed_users(state)
            if records > 0:
                generate_generic(state, int(records), seed=seed)
    if created or has_passwords(meta["document"]):
        meta["document"] = without_passwords(meta["document"])
        tmp = meta_path.with_suffix(".tmp")
        write_private(tmp, json.dumps(meta).encode())
        os.replace(tmp, meta_path)  # written last: a half-made directory is remade
    state.counts = {k: store.count(k) for k in app_def.objects}
    return state


def listed_users(app_users: Sequence[dict[str, Any]], profile_of: dict[str, str],
                 known: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """``[{"email", "password", "profile_keys", "name"}]`` as LocalService.users lists them.

    A password comes from the document while it is being created, or from ``known`` (the
    demo users', published in ``demo_app``); else it is None: a reopened data directory
    keeps only hashes."""
    out = []
    for u in app_users:
        own = profile_of.get(u.get("object", ""))
        keys = ([own] if own else []) + [p for p in u.get("profile_keys") or [] if p != own]
        password = u.get("password") or (known or {}).get(u["email"])
        out.append({"email": u["email"], "password": password, "name": u.get("name", ""),
                    "profile_keys": keys})
    return out


def has_passwords(document: Mapping[str, Any]) -> bool:
    """Whether an application document's seed users carry passwords."""
    users = document.get("users")
    return isinstance(users, list) and any(isinstance(u, dict) and "password" in u
                                           for u in users)


def without_passwords(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document as stored in ``app.json``: seed users without their passwords."""
    doc = dict(document)
    if isinstance(doc.get("users"), list):
        doc["users"] = [{k: v for k, v in u.items() if k != "password"}
                        if isinstance(u, dict) else u for u in doc["users"]]
    return doc


class _DropFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "emulated dropped connection" not in str(record.exc_info and record.exc_info[1])


class LocalService:
    """The local service on a free loopback port, in a background thread.

    Parameters
    ----------
    demo, records, data_dir, seed, app, host, port
        What is served, and where (module docstring).
    rate_limit, daily_quota, latency_ms, jitter_ms, handshake_ms, faults, upload_limit_bytes
        The first values of the emulation's live knobs (``svc.emulation``, emulate.py;
        ``handshake_ms``: how long a new connection's handshake takes, protocol.py).
    tls : bool
        Serve HTTPS with the loopback certificate (tls.py): a client's connect then
        waits out ``handshake_ms`` as a hosted one does; clients trust ``svc.ca_file``
        (``testing.client_for`` does). Default False: plain HTTP.
    token_ttl_s : float, optional
        Lifetime of user tokens issued (default 48 hours).
    clock_offset_ms : float
        How far the service's clock runs ahead of this machine's (negative: behind), at
        most ``emulate.MAX_CLOCK_OFFSET_MS`` (an hour) either way; live as
        ``svc.emulation.clock_offset_ms``.
    activity : Activity, mapping or str, optional
        Other users editing records while the service runs (activity.py); None: nobody.

    Raises
    ------
    UsageError
        ``clock_offset_ms`` out of range, or a bad ``activity`` setting (here); an
        activity object the application lacks (at ``start``, before the store opens).
    ValueError
        Another emulation knob out of range.

    Examples
    --------
    >>> with LocalService(demo=True, records=300, clock_offset_ms=400,
    ...                   activity="object_3:2/s") as svc:   # doctest: +SKIP
    ...     svc.base_url, svc.app_id, svc.api_key, svc.users, svc.emulation
    ...     svc.activity.pause()
    """

    def __init__(self, demo: bool = True, records: int = 300,
                 data_dir: str | os.PathLike[str] | None = None, rate_limit: float = 0,
                 latency_ms: float = 0, faults: float = 0.0, seed: int = 0,
                 app: Any = None, host: str = "127.0.0.1", port: int = 0,
                 daily_quota: int = 0, jitter_ms: float = 0,
                 handshake_ms: float = 0,
                 upload_limit_bytes: int = 50 * 1024 * 1024,
                 token_ttl_s: float | None = None, clock_offset_ms: float = 0,
                 activity: Activity | Mapping[str, Any] | str | None = None,
                 public_url: str | None = None,
                 request_timeout_s: float = REQUEST_TIMEOUT_S, tls: bool = False) -> None:
        self.emulation = Emulation(rate_limit=rate_limit, daily_quota=daily_quota,
                                   latency_ms=latency_ms, jitter_ms=jitter_ms,
                                   handshake_ms=handshake_ms,
                                   fault_rate=faults, upload_limit_bytes=upload_limit_bytes,
                                   clock_offset_ms=clock_offset_ms, seed=seed)
        self.emulation.validate()
        self._activity = Activity.of(activity) if activity is not None else None
        self.activity: ActivityRunner | None = None
        self._tmp: str | None = None
        if data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="svc_frames_")
            data_dir = self._tmp
        self.data_dir = Path(data_dir)
        self._opts = {"app": app, "demo": demo, "records": records, "seed": seed,
                      "token_ttl_s": token_ttl_s}
        self.host, self.port = host, port
        # asset URLs in answers start with this, never with a request's Host header
        self.public_url = public_url
        self.request_timeout_s = float(request_timeout_s)
        self.tls = bool(tls)
        self.state: ServiceState | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self) -> LocalService:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        self.state = open_state(self.data_dir, emulation=self.emulation,
                                activity=self._activity, **self._opts)
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on accepted sockets whose proto
        # says TCP, and without it an answer's body, written after its head, waited for
        # the client's delayed ACK (40 ms on Linux) behind Nagle's algorithm
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock = sock
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        self.state.base_url = (self.public_url or self.base_url).rstrip("/")
        config = uvicorn.Config(build_app(self.state), log_level="critical", access_log=False,
                                lifespan="off", timeout_keep_alive=30,
                                http=bounded_protocol(
                                    self.request_timeout_s,
                                    handshake_s=self.emulation.handshake_s,
                                    tls=server_context() if self.tls else None),
                                date_header=False,  # emulate.py sends the service's own
                                h11_max_incomplete_event_size=MAX_HEAD_BYTES)
        self._server = uvicorn.Server(config)
        log = logging.getLogger("uvicorn.error")
        if not any(isinstance(f, _DropFilter) for f in log.filters):
            log.addFilter(_DropFilter())
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name=f"svc-frames-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the local service did not start")
            time.sleep(0.01)
        self._sock = sock  # uvicorn serves on it; closed after stop
        if self._activity is not None:
            self.activity = ActivityRunner(self.state, self._activity, self.emulation.now)
            self.activity.start()

    def stop(self) -> None:
        if self.activity is not None:
            self.activity.stop()   # before the store closes under it
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        self._server = self._thread = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self.state is not None:
            self.state.store.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> LocalService:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what clients need --------------------------------------------------------------
    def _st(self) -> ServiceState:
        if self.state is None:
            raise RuntimeError("the service is not started")
        return self.state

    @property
    def base_url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def ca_file(self) -> str | None:
        """What a client trusts to reach the service over HTTPS (None over plain HTTP):
        ``requests.Session().verify = svc.ca_file``."""
        return CA_FILE if self.tls else None

    @property
    def app_id(self) -> str:
        return self._st().app.id

    @property
    def api_key(self) -> str:
        return self._st().api_key

    @property
    def users(self) -> list[dict[str, Any]]:
        return [dict(u) for u in self._st().users]

    @property
    def request_log(self) -> RequestLog:
        return self.emulation.log

    @property
    def app(self) -> AppDef:
        return self._st().app

    @property
    def store(self) -> Store:
        return self._st().store

    @property
    def builder(self) -> Builder:
        """The application's builder: its schema changed while it runs (add, remove,
        relabel a field, change its kind, add or remove an object; server/builder.py):
        ``svc.builder.add_field("object_3", "Note", "short_text")``."""
        return Builder(self._st())

    @property
    def pages(self) -> AppPages:
        """Another user editing on the application's own pages (record rules run, so the
        stamp is set): ``svc.pages.update_record("object_3", rid, {...})``."""
        return AppPages(self._st().store, self.base_url)

    def headers(self, view: bool = False, token: str | None = None) -> dict[str, str]:
        """Auth headers (docs/service-interface.md §5): object requests, or views with a token."""
        h = {"X-Service-Application-Id": self.app_id,
             "X-Service-REST-API-KEY": "service" if view else self.api_key}
        if token:
            h["Authorization"] = token
        return h

    def set_token_ttl(self, seconds: float) -> None:
        """Lifetime of tokens issued from now on (tests of expiry)."""
        self._st().store.accounts.token_ttl = float(seconds)
