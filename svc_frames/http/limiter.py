"""Client-side pacing: at most ``rate`` request starts in each second the service counts.

One ``RateLimiter`` per application and process (``shared_limiter``), shared by every
``Client`` of that application, since the hosted limit is per application.

Usage::

    limiter = shared_limiter(base_url, app_id, 10)
    limiter.acquire()            # before each request
    limiter.observe(headers)     # after each answer
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping

from ..errors import (
    UsageError,
)


class RateLimiter:
    """At most ``rate`` request starts in each second of the wall clock, the unit the
    hosted service counts in (docs/hosted-behaviour.md §4: requests after the limit in the
    same second are refused), first come first served across threads.

    ``acquire`` books the earliest second with a free slot and starts the request at once
    when that is now, else at the next second's start (plus ``margin``). So a load that
    keeps requests waiting sends each second's share together and uses every second
    whole: 52 requests take five seconds and a round trip, where requests spaced evenly
    (1/rate apart, plus a margin for jitter) took 5.3 s. A request is only started where
    it lands inside its second: ``margin`` from each end for clock skew and jitter, and
    the tail also kept free for the trip to the server (``transit``, the shortest round
    trip seen, at most 0.25 s), since a late request counted in the next second would make
    that second's share one too many; or started in the tail at once, booked in both
    seconds, when both have a slot (a lone request need not wait). After a 429 the margin
    doubles (``widen``). The wall clock is assumed in step with the service's to within
    the margin (an NTP-synced machine); ``X-RateLimit-*`` headers also bind (``observe``).
    ``rate=0``: no pacing; a rate below 1 spaces starts ``1/rate`` apart.

    Usage: ``limiter = RateLimiter(10); limiter.acquire()`` before each request."""

    MAX_MARGIN = 0.2
    MAX_TRANSIT = 0.25

    def __init__(self, rate: float = 10.0, margin: float = 0.05, *,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        # ``clock`` is the wall clock (epoch seconds), whose seconds the service counts in;
        # injectable for exact tests
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._blocked_until = 0.0
        self._booked: dict[int, int] = {}  # second -> starts booked in it
        self._last = -math.inf  # the latest booked start (for a rate below 1)
        self._base_margin = margin
        self.margin = margin
        self.transit = 0.0  # the shortest round trip seen (``note_round_trip``)
        self.rate = float(rate)

    @property
    def rate(self) -> float:
        return self._rate

    @rate.setter
    def rate(self, value: float) -> None:
        if value < 0:
            raise UsageError(f"rate_limit must be >= 0, got {value!r}")
        self._rate = float(value)
        self._per_second = max(1, int(value)) if value else 0

    def acquire(self) -> float:
        """Block until this request's booked start; returns the seconds waited."""
        if not self._rate and self._blocked_until == 0.0:
            return 0.0
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                start = max(now, self._blocked_until)
                if self._rate:
                    start = self._book(start)
            if start <= now:
                return waited
            self._sleep(start - now)
            waited += start - now
            if self._clock() >= self._blocked_until:  # no 429 came in meanwhile
                return waited

    def _book(self, t: float) -> float:
        """The earliest start at or after ``t`` in a second with a free slot (lock held)."""
        if self._rate < 1:
            t = max(t, self._last + 1.0 / self._rate)
        head = self.margin
        tail = 1.0 - self.margin - min(self.transit, self.MAX_TRANSIT)
        while True:
            second = math.floor(t)
            t = max(t, second + head)
            free = self._booked.get(second, 0) < self._per_second
            if t < second + tail and free:
                break
            # in the tail it may be counted in the next second: it goes now if it has a
            # slot in both (and takes both), rather than wait for the next second
            if (t < second + 1.0 - self.margin and free
                    and self._booked.get(second + 1, 0) < self._per_second):
                self._booked[second + 1] = self._booked.get(second + 1, 0) + 1
                break
            t = second + 1 + head
        self._booked[second] = self._booked.get(second, 0) + 1
        self._last = t
        if len(self._booked) > 8:  # forget seconds long past
            for old in [s for s in self._booked if s < second - 2]:
                del self._booked[old]
        return t

    def note_round_trip(self, seconds: float) -> None:
        """A request's round trip: the shortest one bounds the trip to the server."""
        if seconds > 0:
            with self._lock:
                self.transit = seconds if not self.transit else min(self.transit, seconds)

    def widen(self) -> None:
        """After a 429: a wider margin at both ends of each second (doubled, up to 0.2 s),
        since the skew or jitter between us and the server was larger than allowed for."""
        with self._lock:
            self.margin = min(self.MAX_MARGIN, max(self._base_margin, self.margin * 2))

    def block_for(self, seconds: float) -> None:
        """Hold every thread back for ``seconds`` (after a 429 or ``Remaining: 0``)."""
        with self._lock:
            self._blocked_until = max(self._blocked_until, self._clock() + seconds)

    def block_until_next_second(self) -> None:
        """Hold every thread back until the next wall-clock second (the hosted limit
        counts per epoch second), plus the margin."""
        self.block_for(1.0 - (self._clock() % 1.0) + self.margin)

    def observe(self, headers: Mapping[str, str]) -> None:
        """Adjust from ``X-RateLimit-Limit/-Remaining/-Reset`` (epoch seconds) headers: a
        lower limit lowers the rate; what the service counted in a second (other clients
        of the application count too) fills our booking of it; none left holds everyone
        back until the reset."""
        if not self._rate:
            return  # pacing switched off by the user: the headers do not bind us
        try:
            limit = headers.get("X-RateLimit-Limit")
            if limit is not None and 0 < float(limit) < self._rate:
                self.rate = float(limit)
            remaining = headers.get("X-RateLimit-Remaining")
            if remaining is None:
                return
            left = int(float(remaining))
            reset = headers.get("X-RateLimit-Reset")
            if reset is not None and limit is not None:
                second = int(float(reset)) - 1
                with self._lock:
                    if second in self._booked or second >= math.floor(self._clock()):
                        used = int(float(limit)) - left
                        self._booked[second] = max(self._booked.get(second, 0), used)
            if left > 0:
                return
            if reset is None:  # no reset given: the limit counts per second
                self.block_until_next_second()
                return
            wait = float(reset) - self._clock()
            # a reset already past: that second is over (the answer came late), no
            # wait; a far-off one is clock skew or a bogus value: at most one second
            if wait > 0:
                self.block_for(min(wait, 1.0) + 0.01)
        except (TypeError, ValueError):
            pass  # headers are advisory; never fail a good response over them


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}


_LIMITERS_LOCK = threading.Lock()


def shared_limiter(base_url: str, app_id: str, rate: float) -> RateLimiter:
    """The limiter of one application, shared by every Client of this process (the limit
    is per application, so two clients must not each spend it). ``rate=0``: a private,
    unpaced limiter. A client asking for a lower rate lowers the shared one.

    Usage: ``shared_limiter(url, app_id, 10).acquire()``"""
    if not rate:
        return RateLimiter(0)
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get((base_url, app_id))
        if limiter is None or not limiter.rate:
            limiter = _LIMITERS[(base_url, app_id)] = RateLimiter(rate)
        elif rate < limiter.rate:
            limiter.rate = rate
        return limiter
