"""Hosted-service emulation: rate limit, daily quota, latency, faults, and a request log.

All knobs live on ``Emulation`` and may be changed while the service runs
(``svc.emulation.rate_limit = 10``). The middleware runs before the routes:

* the service keeps its own clock, ``clock_offset_ms`` ahead of this machine's
  (``Emulation.now()``; negative: behind; at most ``MAX_CLOCK_OFFSET_MS``, an hour, either
  way): its seconds (the rate limit's windows), its quota day, every reset header, the
  ``Date`` header, record stamps and new ids all read that clock, as the hosted service's
  do (it is not the client's: docs/hosted-behaviour.md §4);

* every response carries ``X-RateLimit-Limit/Remaining/Reset`` (reset: epoch seconds of the
  next second) and ``X-PlanLimit-Limit/Remaining/Reset`` (reset: ms until the next UTC day);
* over ``rate_limit`` requests in the same wall-clock second (per application) -> 429
  ``Rate limit exceeded`` (or, with ``throttle_status=403``, a 403 whose body says it is
  throttling: ``THROTTLED_403``); with ``retry_after_s`` set, those answers carry
  ``Retry-After`` and the service keeps refusing until it has passed (never kinder than a
  deployment that sends one);
* the daily quota (``daily_quota``; docs/hosted-behaviour.md §4): every request counts
  (object calls, view calls with or without a user token, uploads, the schema, logins),
  refused and faulted ones too; once spent, every request is 429 ``Daily limit
  exceeded`` until the next UTC day or ``new_quota_day()`` (tests and benchmarks cannot
  wait a day); ``daily_quota=0`` (off): the headers show a full 25,000;
* ``latency_ms`` (+ uniform ``jitter_ms``) is added before the request is handled; the
  jitter is split at random between the trip there (before the request is counted: it
  moves which of the service's seconds counts it, as on a real network) and the trip back;
* a new connection's handshake takes ``handshake_ms`` (protocol.py): a hosted
  connection's TCP and TLS 1.3 handshakes, about twice ``latency_ms``. Over HTTPS
  (``LocalService(tls=True)``) the server's side of the TLS handshake waits that long, so
  the client's connect does, as on a hosted service; over plain HTTP the connection's
  first bytes are held that long, as for a client that writes its first request as soon
  as it connects. Off by default (0; docs/pacing.md: what the pace does with it);
* ``expose_schema=False`` makes ``GET /v1/applications/<id>`` answer 404 (deployments
  that do not expose the schema);
* with probability ``fault_rate`` a fault is chosen among ``faults`` (only for requests
  whose method is in ``fault_methods`` when that is set), or ``inject()`` queues one for
  the next matching requests. Faults **before** the request is applied (a faulted write was
  not written, so a client may retry it): "500", "502", "503", "429", "403" (a throttling
  403) and "drop" (a response started, then the connection closed without a body).
  Faults **after** the request was applied (the write is in the store, the answer is
  lost): "cut" (the routes' answer is cut mid-body and the connection closed) and
  "500-after" (a 500 instead of the routes' answer). Only for ``inject()``: "quota" (the
  day's quota, when one is set, is spent by someone else just before the request: it and
  every later request get the daily 429 until the next quota day).

The request log records each request before the client can see its answer: ``status``
(what the client got, 0 = no complete answer), ``fault`` and ``app_status`` (what the
routes answered, None when they never ran); ``entry.applied`` says a request reached the
routes and succeeded (for a write: it is in the store).

Usage::

    emu = Emulation(rate_limit=10)
    app = EmulationMiddleware(inner_app, emu)
    emu.log.counts()[("GET", "/v1/objects/object_3/records")]
    emu.inject("cut", method="PUT")       # the next PUT is applied, its answer cut
    emu.log.count(method="PUT", applied=True)
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from ..errors import UsageError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

BEFORE_FAULTS = ("500", "502", "503", "429", "403", "drop")
"""Faults answered instead of the routes: the request is not applied."""
AFTER_FAULTS = ("cut", "500-after")
"""Faults after the routes ran: the request is applied, its answer lost."""
FAULT_KINDS = BEFORE_FAULTS + AFTER_FAULTS
INJECT_ONLY = ("quota",)
"""Faults only ``inject()`` makes: "quota" spends the day's quota before the request."""

RATE_LIMITED = "Rate limit exceeded"
DAILY_LIMITED = "Daily limit exceeded"
THROTTLED_403 = "Rate limit exceeded: too many requests, throttled; retry later"
"""The body of a throttling 403 (a token or right refusal names the token or the view)."""

MAX_CLOCK_OFFSET_MS = 3_600_000
"""How far (ms) the service's clock may be set from this machine's, either way: an hour,
beyond which a client's reading of the service's clock from ``X-PlanLimit-Reset`` (which
counts to its midnight) no longer tells a skew from another reset time."""

_FAULT_BODIES = {"500": "Internal Server Error (emulated fault)",
                 "502": "Bad Gateway (emulated fault)",
                 "503": "Service Unavailable (emulated fault)",
                 "429": RATE_LIMITED, "403": THROTTLED_403,
                 "500-after": "Internal Server Error (emulated fault after the request "
                              "was applied)"}


@dataclass(frozen=True)
class LogEntry:
    """One request the service answered (or cut).

    ``time``: when it arrived, in the service's clock (``Emulation.now()``); ``status``: what the client got (0: no complete answer); ``app_status``: what the
    routes answered (None: they never ran: refused or faulted first)."""

    time: float
    method: str
    path: str
    status: int
    fault: str | None = None
    app_status: int | None = None
    query: str = ""  # the query string as sent (percent-encoded): what a request asked for

    @property
    def applied(self) -> bool:
        """The routes ran and succeeded: a write is in the store (whatever the client saw)."""
        return self.app_status is not None and 200 <= self.app_status < 300


class RequestLog:
    """Thread-safe log of answered requests: counts by method and path, with status."""

    def __init__(self, maxlen: int = 200_000) -> None:
        self._lock = threading.Lock()
        self._entries: deque[LogEntry] = deque(maxlen=maxlen)
        self._counts: Counter[tuple[str, str]] = Counter()

    def add(self, entry: LogEntry) -> None:
        with self._lock:
            self._entries.append(entry)
            self._counts[(entry.method, entry.path)] += 1

    def counts(self) -> dict[tuple[str, str], int]:
        """``{(method, path): n}`` since the last clear."""
        with self._lock:
            return dict(self._counts)

    def count(self, method: str | None = None, path_prefix: str | None = None,
              status: int | None = None, *, applied: bool | None = None,
              fault: str | None = None) -> int:
        """Requests matching a method, a path prefix, a status, applied or not, a fault.

        Usage: ``log.count(method="PUT", applied=True)``"""
        with self._lock:
            return sum(1 for e in self._entries
                       if (method is None or e.method == method.upper())
                       and (path_prefix is None or e.path.startswith(path_prefix))
                       and (status is None or e.status == status)
                       and (applied is None or e.applied == applied)
                       and (fault is None or e.fault == fault))

    @property
    def entries(self) -> list[LogEntry]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._counts.clear()


@dataclass
class _Injected:
    fault: str
    method: str | None
    path_prefix: str | None
    times: int


@dataclass
class Emulation:
    """Live emulation knobs (0 disables a limit).

    Usage: ``Emulation(rate_limit=10, daily_quota=5000, retry_after_s=1)``"""

    rate_limit: float = 0
    daily_quota: int = 0
    latency_ms: float = 0
    jitter_ms: float = 0
    handshake_ms: float = 0  # module docstring
    fault_rate: float = 0.0
    faults: tuple[str, ...] = ("500", "502", "503", "429", "drop")
    fault_methods: tuple[str, ...] = ()  # () = every method; ("POST", "PUT") = writes only
    upload_limit_bytes: int = 50 * 1024 * 1024
    expose_schema: bool = True  # False: the schema endpoint answers 404, as on deployments
    #                             that do not expose it (clients then infer kinds)
    retry_after_s: int = 0  # > 0: throttling answers carry Retry-After and it is enforced
    throttle_status: int = 429  # 403: throttle as some hosted deployments do
    clock_offset_ms: float = 0  # the service's clock less this machine's (module docstring)
    seed: int | None = None
    log: RequestLog = field(default_factory=RequestLog)

    def __setattr__(self, name: str, value: Any) -> None:
        # a live change of the clock is checked as it is made: a bad offset would
        # otherwise surface as a wrong stamp long after the assignment
        if name == "clock_offset_ms":
            check_clock_offset(value)
        super().__setattr__(name, value)

    def now(self) -> float:
        """The service's clock: epoch seconds, ``clock_offset_ms`` ahead of ``time.time()``.

        Usage: ``svc.emulation.now()``"""
        return time.time() + self.clock_offset_ms / 1000.0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._second = 0
        self._in_second = 0
        self._day = ""
        self._in_day = 0
        self._retry_at = 0.0
        self._injected: list[_Injected] = []
        self._rng = random.Random(self.seed)

    def validate(self) -> None:
        """ValueError naming a knob out of range (UsageError for the clock offset)."""
        check_clock_offset(self.clock_offset_ms)
        if self.rate_limit < 0:
            raise ValueError("rate_limit must be >= 0")
        if self.daily_quota < 0:
            raise ValueError("daily_quota must be >= 0")
        if self.latency_ms < 0 or self.jitter_ms < 0:
            raise ValueError("latency_ms and jitter_ms must be >= 0")
        if not 0 <= self.handshake_ms <= 10_000:
            raise ValueError(f"handshake_ms must be between 0 and 10000, got "
                             f"{self.handshake_ms!r}")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("fault_rate must be between 0 and 1")
        bad = [f for f in self.faults if f not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kinds {bad}; choose from {FAULT_KINDS}")
        if not isinstance(self.retry_after_s, int) or self.retry_after_s < 0:
            raise ValueError(f"retry_after_s must be a whole number of seconds >= 0, "
                             f"got {self.retry_after_s!r}")
        if self.throttle_status not in (429, 403):
            raise ValueError(f"throttle_status must be 429 or 403, got "
                             f"{self.throttle_status!r}")

    # ---- quota day and injected faults -------------------------------------------------
    def new_quota_day(self) -> None:
        """Start a new quota day now: the daily count is back to 0 (the hosted reset,
        without waiting for it). Usage: ``svc.emulation.new_quota_day()``"""
        with self._lock:
            self._in_day = 0

    @property
    def quota_used(self) -> int:
        """Requests the daily quota counted since the day (or ``new_quota_day``) began."""
        with self._lock:
            return self._in_day

    def inject(self, fault: str, *, method: str | None = None,
               path_prefix: str | None = None, times: int = 1) -> None:
        """Make the next ``times`` requests matching ``method``/``path_prefix`` fault with
        ``fault`` (before any random fault). Usage: ``emu.inject("cut", method="PUT")``"""
        if fault not in FAULT_KINDS + INJECT_ONLY:
            raise ValueError(f"unknown fault kind {fault!r}; choose from "
                             f"{FAULT_KINDS + INJECT_ONLY}")
        if times < 1:
            raise ValueError(f"times must be >= 1, got {times!r}")
        with self._lock:
            self._injected.append(_Injected(fault, method.upper() if method else None,
                                            path_prefix, times))

    def _pick_fault(self, method: str, path: str) -> str | None:
        for inj in self._injected:
            if ((inj.method is None or inj.method == method)
                    and (inj.path_prefix is None or path.startswith(inj.path_prefix))):
                inj.times -= 1
                if inj.times <= 0:
                    self._injected.remove(inj)
                return inj.fault
        if (self.fault_rate and self.faults
                and (not self.fault_methods or method in self.fault_methods)
                and self._rng.random() < self.fault_rate):
            return self._rng.choice(self.faults)
        return None

    # ---- admission ---------------------------------------------------------------------
    def admit(self, now: float, method: str = "GET", path: str = "",
              ) -> tuple[int | None, str, dict[str, str], str | None]:
        """Decide one request: (status to refuse with or None, body, headers, fault)."""
        with self._lock:
            sec = int(now)
            if sec != self._second:
                self._second, self._in_second = sec, 0
            day = dt.datetime.fromtimestamp(now, dt.timezone.utc).strftime("%Y-%m-%d")
            if day != self._day:
                self._day, self._in_day = day, 0
            self._in_second += 1
            limit = int(self.rate_limit) if self.rate_limit else 0
            quota = int(self.daily_quota) if self.daily_quota else 0
            # every call counts, view calls without a token too (docs/hosted-behaviour.md
            # §4; what else counts is not documented, so everything does: never kinder)
            spent = bool(quota) and self._in_day >= quota
            if not spent:
                self._in_day += 1  # a refusal of a spent quota costs nothing (hosted)
            tomorrow = (dt.datetime.fromtimestamp(now, dt.timezone.utc)
                        .replace(hour=0, minute=0, second=0, microsecond=0)
                        + dt.timedelta(days=1)).timestamp()
            headers = {
                "X-RateLimit-Limit": str(limit or 10),
                "X-RateLimit-Remaining": str(max((limit or 10) - self._in_second, 0)),
                "X-RateLimit-Reset": str(sec + 1),
                # quota off: a full Plus-plan quota, never spent (so a long test session
                # or benchmark on one service never looks out of quota to a client)
                "X-PlanLimit-Limit": str(quota or 25000),
                "X-PlanLimit-Remaining": str(max(quota - self._in_day, 0) if quota
                                             else 25000),
                "X-PlanLimit-Reset": str(int((tomorrow - now) * 1000)),
            }
            if spent:
                return 429, DAILY_LIMITED, headers, None
            if (limit and self._in_second > limit) or now < self._retry_at:
                return (*self._throttle(now, headers, self.throttle_status), None)
            fault = self._pick_fault(method, path)
            if fault == "quota":
                if not quota:
                    return None, "", headers, None
                # someone else spent the day's quota just before this request; the
                # refusal itself costs nothing (hosted), so this request is not counted
                self._in_day = quota
                return 429, DAILY_LIMITED, {**headers, "X-PlanLimit-Remaining": "0"}, None
            if fault in ("429", "403"):
                status, body, headers = self._throttle(now, headers, int(fault))
                return None, body, headers, fault
            return None, "", headers, fault

    def _throttle(self, now: float, headers: dict[str, str],
                  status: int) -> tuple[int, str, dict[str, str]]:
        """A throttling answer (429, or 403 saying so), with Retry-After when configured."""
        if self.retry_after_s:
            if now >= self._retry_at:  # a refusal inside the window does not extend it
                self._retry_at = now + self.retry_after_s
            headers = {**headers,
                       "Retry-After": str(max(1, math.ceil(self._retry_at - now)))}
        return status, (THROTTLED_403 if status == 403 else RATE_LIMITED), headers

    def handshake_s(self) -> float:
        """Seconds a new connection's first request is held before it arrives."""
        return self.handshake_ms / 1000.0

    def delays(self) -> tuple[float, float]:
        """Seconds before a request is counted and after it: the jitter (uniform in
        [0, ``jitter_ms``]) split at random between the trip there and the trip back,
        the latency after. A service counts a request when it arrives, so the jitter of
        the trip there moves which of its seconds counts it; here too (a client that
        paces by the service's seconds must allow for it)."""
        with self._lock:
            if not self.jitter_ms:
                return 0.0, self.latency_ms / 1000.0
            jitter = self._rng.uniform(0, self.jitter_ms)
            there = jitter * self._rng.random()
        return there / 1000.0, (self.latency_ms + jitter - there) / 1000.0


def check_clock_offset(value: Any) -> None:
    """UsageError unless ``value`` is a finite number of ms within ``MAX_CLOCK_OFFSET_MS``."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not math.isfinite(value) or abs(value) > MAX_CLOCK_OFFSET_MS):
        raise UsageError(f"clock_offset_ms must be a number of milliseconds between "
                         f"-{MAX_CLOCK_OFFSET_MS} and {MAX_CLOCK_OFFSET_MS} (an hour), got "
                         f"{value!r}", field="clock_offset_ms")


class _DroppedConnection(Exception):
    """Raised after a started response so the server closes the connection (fault "drop")."""


class EmulationMiddleware:
    """ASGI middleware applying an ``Emulation`` to every HTTP request."""

    def __init__(self, app: ASGIApp, emulation: Emulation) -> None:
        self.app = app
        self.emu = emulation

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        path = scope.get("path", "")
        query = bytes(scope.get("query_string", b"")).decode("latin-1")
        there, back = self.emu.delays()
        if there > 0:   # the trip there: counted when it arrives
            await asyncio.sleep(there)
        now = self.emu.now()
        refuse, body, headers, fault = self.emu.admit(now, method, path)
        # uvicorn's own Date header is off (service.py): this one reads the service's clock
        headers["Date"] = formatdate(now, usegmt=True)
        if back > 0:
            await asyncio.sleep(back)
        hdrs = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        if refuse is not None or fault in BEFORE_FAULTS:
            status = refuse if refuse is not None else (503 if fault == "drop" else
                                                         int(fault or 500))
            text = body or _FAULT_BODIES.get(str(fault), "")
            self.emu.log.add(LogEntry(now, method, path, status if fault != "drop" else 0,
                                      fault))
            if fault == "drop":
                await send({"type": "http.response.start", "status": 200,
                            "headers": [*hdrs, (b"content-length", b"1000"),
                                        (b"content-type", b"application/json")]})
                raise _DroppedConnection("emulated dropped connection")
            await _send_text(send, status, text, hdrs)
            return
        if fault in AFTER_FAULTS:
            await self._apply_then_lose(scope, receive, send, fault or "", now, hdrs)
            return
        logged = [False]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *hdrs]
                # logged before the client can see the answer, so a test that reads the log
                # right after a response never races the log entry
                status = int(message["status"])
                self.emu.log.add(LogEntry(now, method, path, status, app_status=status,
                                          query=query))
                logged[0] = True
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            if not logged[0]:
                self.emu.log.add(LogEntry(now, method, path, 0))

    async def _apply_then_lose(self, scope: Scope, receive: Receive, send: Send,
                               fault: str, now: float,
                               hdrs: list[tuple[bytes, bytes]]) -> None:
        """Run the routes (the request is applied), then lose their answer: cut it
        mid-body ("cut") or answer 500 instead ("500-after")."""
        method, path = scope.get("method", "GET"), scope.get("path", "")
        start: Message = {}
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(bytes(message.get("body", b"")))

        await self.app(scope, receive, capture)
        app_status = int(start.get("status", 0)) or None
        if fault == "500-after":
            self.emu.log.add(LogEntry(now, method, path, 500, fault, app_status))
            await _send_text(send, 500, _FAULT_BODIES[fault], hdrs)
            return
        data = b"".join(chunks)
        self.emu.log.add(LogEntry(now, method, path, 0, fault, app_status))
        # the routes' status and headers, a Content-Length the body never reaches, half
        # the body: the client sees the answer break off and cannot know the outcome
        kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({"type": "http.response.start", "status": app_status or 200,
                    "headers": [*kept, *hdrs,
                                (b"content-length", str(len(data) + 1000).encode())]})
        await send({"type": "http.response.body", "body": data[: len(data) // 2],
                    "more_body": True})
        raise _DroppedConnection("emulated dropped connection (answer cut after apply)")


async def _send_text(send: Send, status: int, text: str,
                     hdrs: list[tuple[bytes, bytes]]) -> None:
    data = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [*hdrs, (b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
