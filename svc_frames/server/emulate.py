"""Hosted-service emulation: rate limit, daily quota, latency, faults, and a request log.

All knobs live on ``Emulation`` and may be changed while the service runs
(``svc.emulation.rate_limit = 10``). The middleware runs before the routes:

* every response carries ``X-RateLimit-Limit/Remaining/Reset`` (reset: epoch seconds of the
  next second) and ``X-PlanLimit-Limit/Remaining/Reset`` (reset: ms until the next UTC day);
* over ``rate_limit`` requests in the same wall-clock second (per application) -> 429
  ``Rate limit exceeded``; over ``daily_quota`` in a UTC day -> 429 ``Daily limit exceeded``;
* ``latency_ms`` (+ uniform ``jitter_ms``) is added before the request is handled;
* ``expose_schema=False`` makes ``GET /v1/applications/<id>`` answer 404 (deployments
  that do not expose the schema);
* with probability ``fault_rate`` a fault is chosen among ``faults`` ("500", "502", "503",
  "429", "drop"). **A fault happens before the request is applied**: a faulted write was
  not written, so a client may retry it. "drop" starts a response and closes the
  connection without a body (the client sees a broken connection).

Usage::

    emu = Emulation(rate_limit=10)
    app = EmulationMiddleware(inner_app, emu)
    emu.log.counts()[("GET", "/v1/objects/object_3/records")]
"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

FAULT_KINDS = ("500", "502", "503", "429", "drop")


@dataclass(frozen=True)
class LogEntry:
    """One request the service answered."""

    time: float
    method: str
    path: str
    status: int
    fault: str | None = None


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
              status: int | None = None) -> int:
        """Requests matching a method, a path prefix and/or a status."""
        with self._lock:
            return sum(1 for e in self._entries
                       if (method is None or e.method == method.upper())
                       and (path_prefix is None or e.path.startswith(path_prefix))
                       and (status is None or e.status == status))

    @property
    def entries(self) -> list[LogEntry]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._counts.clear()


@dataclass
class Emulation:
    """Live emulation knobs (0 disables a limit)."""

    rate_limit: float = 0
    daily_quota: int = 0
    latency_ms: float = 0
    jitter_ms: float = 0
    fault_rate: float = 0.0
    faults: tuple[str, ...] = ("500", "502", "503", "429", "drop")
    upload_limit_bytes: int = 50 * 1024 * 1024
    expose_schema: bool = True  # False: the schema endpoint answers 404, as on deployments
    #                             that do not expose it (clients then infer kinds)
    seed: int | None = None
    log: RequestLog = field(default_factory=RequestLog)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._second = 0
        self._in_second = 0
        self._day = ""
        self._in_day = 0
        self._rng = random.Random(self.seed)

    def validate(self) -> None:
        """ValueError naming a knob out of range."""
        if self.rate_limit < 0:
            raise ValueError("rate_limit must be >= 0")
        if self.daily_quota < 0:
            raise ValueError("daily_quota must be >= 0")
        if self.latency_ms < 0 or self.jitter_ms < 0:
            raise ValueError("latency_ms and jitter_ms must be >= 0")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ValueError("fault_rate must be between 0 and 1")
        bad = [f for f in self.faults if f not in FAULT_KINDS]
        if bad:
            raise ValueError(f"unknown fault kinds {bad}; choose from {FAULT_KINDS}")

    def admit(self, now: float) -> tuple[int | None, str, dict[str, str], str | None]:
        """Decide one request: (status to refuse with or None, body, headers, fault)."""
        with self._lock:
            sec = int(now)
            if sec != self._second:
                self._second, self._in_second = sec, 0
            day = dt.datetime.fromtimestamp(now, dt.timezone.utc).strftime("%Y-%m-%d")
            if day != self._day:
                self._day, self._in_day = day, 0
            self._in_second += 1
            self._in_day += 1
            limit = int(self.rate_limit) if self.rate_limit else 0
            quota = int(self.daily_quota) if self.daily_quota else 0
            tomorrow = (dt.datetime.fromtimestamp(now, dt.timezone.utc)
                        .replace(hour=0, minute=0, second=0, microsecond=0)
                        + dt.timedelta(days=1)).timestamp()
            headers = {
                "X-RateLimit-Limit": str(limit or 10),
                "X-RateLimit-Remaining": str(max((limit or 10) - self._in_second, 0)),
                "X-RateLimit-Reset": str(sec + 1),
                "X-PlanLimit-Limit": str(quota or 25000),
                "X-PlanLimit-Remaining": str(max((quota or 25000) - self._in_day, 0)),
                "X-PlanLimit-Reset": str(int((tomorrow - now) * 1000)),
            }
            if limit and self._in_second > limit:
                return 429, "Rate limit exceeded", headers, None
            if quota and self._in_day > quota:
                return 429, "Daily limit exceeded", headers, None
            fault = None
            if self.fault_rate and self.faults and self._rng.random() < self.fault_rate:
                fault = self._rng.choice(self.faults)
            return None, "", headers, fault

    def delay(self) -> float:
        with self._lock:
            jitter = self._rng.uniform(0, self.jitter_ms) if self.jitter_ms else 0.0
        return (self.latency_ms + jitter) / 1000.0


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
        now = time.time()
        refuse, body, headers, fault = self.emu.admit(now)
        delay = self.emu.delay()
        if delay > 0:
            await asyncio.sleep(delay)
        hdrs = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        if refuse is not None or fault is not None:
            status = refuse if refuse is not None else (503 if fault == "drop" else
                                                         int(fault or 500))
            text = body or {"500": "Internal Server Error (emulated fault)",
                            "502": "Bad Gateway (emulated fault)",
                            "503": "Service Unavailable (emulated fault)",
                            "429": "Rate limit exceeded"}.get(str(fault), "")
            self.emu.log.add(LogEntry(now, method, path, status if fault != "drop" else 0,
                                      fault))
            if fault == "drop":
                await send({"type": "http.response.start", "status": 200,
                            "headers": [*hdrs, (b"content-length", b"1000"),
                                        (b"content-type", b"application/json")]})
                raise _DroppedConnection("emulated dropped connection")
            data = text.encode()
            await send({"type": "http.response.start", "status": status,
                        "headers": [*hdrs, (b"content-type", b"text/plain; charset=utf-8"),
                                    (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data})
            return
        logged = [False]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *hdrs]
                # logged before the client can see the answer, so a test that reads the log
                # right after a response never races the log entry
                self.emu.log.add(LogEntry(now, method, path, int(message["status"])))
                logged[0] = True
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            if not logged[0]:
                self.emu.log.add(LogEntry(now, method, path, 0))
