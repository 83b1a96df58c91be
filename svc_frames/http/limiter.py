"""Client-side pacing: never more than the service's per-second limit in any second of
*its* clock, whatever that clock's offset from ours.

One ``RateLimiter`` per application and process (``shared_limiter``), shared by every
``Client`` and thread of that application; its starts are booked in a ledger shared by
every process of this machine pacing the same application (``paceledger``).

Usage::

    limiter = shared_limiter(base_url, app_id, 10)
    limiter.acquire()                                   # before each request
    limiter.observe(headers, sent=t0, answered=t1)      # after each answer
    limiter.state                                       # what it believes: PaceState
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..errors import UsageError
from .paceledger import FileLedger, MemoryLedger, Start, open_ledger

MAX_RATE = 1000.0
"""Highest pace a client may ask for (requests per second; the hosted limit is 10)."""


@dataclass(frozen=True)
class PaceState:
    """What a limiter believes and does (``RateLimiter.state``, ``Client.pace``).

    Attributes
    ----------
    rate : float
        Requests per second it allows (0: no pacing).
    window : float
        Seconds in which at most ``per_window`` starts are booked (1 s plus ``margin``).
    per_window : int
        Starts allowed in any ``window``.
    margin : float
        Seconds added to the window for jitter between our clock and the service's
        count; doubled after each 429, up to 0.2.
    service_offset : float or None
        Where the service's seconds fall against our clock: the service's clock less
        ours, plus the trip of a request to it (seconds), learned from
        ``X-RateLimit-Reset``: the middle of ``offset_bounds``; None before an answer.
    offset_bounds : tuple of float, or None
        The narrowest interval the latest answers leave for that offset (answers at
        every phase of the service's second narrow it most).
    shared_file : Path or None
        The file the pace is shared through with other processes (None: this process
        paces alone: pacing off, no ``fcntl``, or a cache directory that cannot be
        written).
    """

    rate: float
    window: float
    per_window: int
    margin: float
    service_offset: float | None
    offset_bounds: tuple[float, float] | None
    shared_file: Path | None


class RateLimiter:
    """At most ``per_window`` starts in any second of the service's clock, whatever
    its offset from ours, first come first served across threads (and the processes
    sharing the ledger), so a load sends each second's share together.

    A start may go when either rule allows it, and either bounds every second of the
    service (the last start booked in a second saw all the others of it):

    * the sliding window: at most ``per_window`` starts in any ``window`` (1 s +
      ``margin``), whatever the phase of the service's second; the rule before the first
      answer, and a little slower (one window per share, not one second);
    * the service's seconds: each answer's ``X-RateLimit-Reset`` names the second that
      counted the request (noted on its start) and bounds the offset of the service's
      seconds from our starts (``state``); a start goes when every second it may land
      in (the bounds widened by ``margin``) has room, counting the answered starts in
      their own second and those still out in every second they may land in.

    ``X-RateLimit-Remaining`` beyond our own starts (other users of the application) is
    booked as phantom starts in that second. After a 429 the second is booked full, the
    margin doubles (up to ``MAX_MARGIN``) and this process waits until that second is
    surely over. ``rate=0``: no pacing; a rate below 1 spaces starts ``1/rate`` apart
    (by the window only).

    Parameters
    ----------
    rate : float
        Requests per second (0 <= rate <= ``MAX_RATE``).
    margin : float
        Seconds added to each window (0 <= margin <= ``MAX_MARGIN``).
    clock, sleep
        The wall clock (epoch seconds) and a sleep; injectable for exact tests.
    ledger
        Where starts are booked (default: this limiter's own memory).

    Raises
    ------
    UsageError
        A rate or margin out of range.

    Examples
    --------
    >>> limiter = RateLimiter(10)
    >>> limiter.acquire()
    0.0
    """

    MAX_MARGIN = 0.2
    KEEP = 4.0  # seconds of past starts kept in the ledger (> the widest window)
    ANSWERS = 256  # latest answers the offset is learned from

    def __init__(self, rate: float = 10.0, margin: float = 0.05, *,
                 clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 ledger: MemoryLedger | FileLedger | None = None) -> None:
        if (isinstance(margin, bool) or not isinstance(margin, (int, float))
                or not 0 <= margin <= self.MAX_MARGIN):
            raise UsageError(f"margin must be between 0 and {self.MAX_MARGIN} seconds, got "
                             f"{margin!r}", field="margin")
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._ledger = ledger if ledger is not None else MemoryLedger()
        self._blocked_until = 0.0
        self._base_margin = float(margin)
        self.margin = float(margin)
        self._offset: tuple[float, float] | None = None
        # (lo, hi) bounds of the offset each recent answer gave
        self._answers: deque[tuple[float, float]] = deque(maxlen=self.ANSWERS)
        self._mine = threading.local()  # .booked: this thread's last booked start
        self.rate = rate

    @property
    def rate(self) -> float:
        return self._rate

    @rate.setter
    def rate(self, value: float) -> None:
        check_rate(value)
        self._rate = float(value)
        self._per_window = max(1, int(value)) if value else 0

    @property
    def window(self) -> float:
        """Seconds in which at most ``per_window`` starts are booked."""
        if not self._rate:
            return 0.0
        return max(1.0, self._per_window / self._rate) + self.margin

    @property
    def state(self) -> PaceState:
        """What the limiter believes now (see ``PaceState``).

        Examples
        --------
        >>> RateLimiter(10).state.per_window
        10
        """
        with self._lock:
            bounds = self._offset
        return PaceState(
            rate=self._rate, window=self.window, per_window=self._per_window,
            margin=self.margin,
            service_offset=(bounds[0] + bounds[1]) / 2 if bounds else None,
            offset_bounds=bounds, shared_file=self._ledger.path)

    def now(self) -> float:
        """The limiter's clock (epoch seconds): what ``sent``/``answered`` are read on."""
        return self._clock()

    def acquire(self) -> float:
        """Block until this request's booked start; returns the seconds waited. The start
        is remembered for this thread, so that its ``observe`` notes which second of the
        service counted it."""
        self._mine.booked = None
        if not self._rate and self._blocked_until == 0.0:
            return 0.0
        waited = 0.0
        while True:
            now = self._clock()
            with self._lock:
                start = max(now, self._blocked_until)
                if self._rate:
                    start = self._ledger.update(partial(self._book, t=start))
                    self._mine.booked = start
            if start <= now:
                return waited
            self._sleep(start - now)
            waited += start - now
            if self._clock() >= self._blocked_until:  # no 429 came in meanwhile
                return waited

    def next_start(self) -> float:
        """When a start asked for now would be booked (on ``now()``), without booking it:
        a caller that chooses what to send in that slot can wait until then for answers
        that change its choice, at no cost to the pace.

        Examples
        --------
        >>> limiter = RateLimiter(1, clock=lambda: 100.0)
        >>> limiter.next_start()
        100.0
        >>> limiter.acquire()
        0.0
        >>> limiter.next_start()
        101.05
        """
        now = self._clock()
        with self._lock:
            start = max(now, self._blocked_until)
            if not self._rate:
                return start
            # booked on a copy: the ledger keeps its starts as they were
            return self._ledger.update(lambda starts: self._book(list(starts), t=start))

    def _book(self, starts: list[Start], t: float) -> float:
        """Book the earliest start at or after ``t`` (``starts`` sorted; lock held) that
        the sliding window allows or, once the offset is bounded, that the service's
        seconds allow: either rule bounds every second of the service (the last start
        booked in a second saw all the others of it). By seconds, a start whose answer
        came counts in the second that counted it, one still out in every second the
        offset bounds allow."""
        del starts[:bisect_left(starts, t - self.KEEP, key=_time)]
        if starts:
            t = max(t, starts[-1][0])  # starts stay sorted (a clock stepping back)
        n = self._per_window
        by_window = max(t, starts[-n][0] + self.window) if len(starts) >= n else t
        bounds = self._wide_bounds() if self._rate >= 1 else None
        if bounds is None:
            t = by_window
        else:
            lo, hi = bounds
            while t < by_window:
                first, last = math.floor(t + lo), math.floor(t + hi)
                if all(_count_in(starts, s, lo, hi) < n for s in range(first, last + 1)):
                    break
                t = first + 1 - lo  # from here on it can no longer land in ``first``
            t = min(t, by_window)
        starts.append((t, math.nan))
        return t

    def _wide_bounds(self) -> tuple[float, float] | None:
        """The offset bounds widened by the margin (jitter), or None before any answer."""
        bounds = self._offset
        if bounds is None:
            return None
        return bounds[0] - self.margin, bounds[1] + self.margin

    def observe(self, headers: Mapping[str, str], *, sent: float | None = None,
                answered: float | None = None) -> None:
        """Learn from an answer's ``X-RateLimit-Limit/-Remaining/-Reset`` headers.

        The request of this thread's last ``acquire``, which left at ``sent`` (on
        ``now()``), was counted in the service's second before the reset: that is noted
        with its start, and bounds the offset of the service's seconds from our starts.
        A lower limit lowers the rate; what the service counted in that second beyond
        our own starts (other users of the application) is booked as well, until that
        second is surely over (``answered``: when the answer came)."""
        if not self._rate:
            return  # pacing switched off by the user: the headers do not bind us
        try:
            limit = headers.get("X-RateLimit-Limit")
            if limit is not None and 0 < float(limit) < self._rate:
                self.rate = float(limit)
            second = _second_of(headers)
            if second is not None and sent is not None:
                self._learn_offset(second, sent)
            remaining = headers.get("X-RateLimit-Remaining")
            used = (None if remaining is None else
                    int(float(limit or self._per_window)) - int(float(remaining)))
            if sent is not None:
                self._note_second(second, used, sent, answered or sent)
        except (TypeError, ValueError):
            pass  # headers are advisory; never fail a good response over them

    def _learn_offset(self, second: int, sent: float) -> None:
        """Narrow the offset bounds: a request leaving at ``sent`` was counted in
        ``second`` of the service's clock. The bounds are what the latest answers agree
        on (back to the first that disagrees: a clock that stepped, ours or the
        service's, is learned afresh)."""
        with self._lock:
            self._answers.append((second - sent, second + 1 - sent))
            lo, hi = -math.inf, math.inf
            for a, b in reversed(self._answers):
                if max(lo, a) > min(hi, b):
                    break
                lo, hi = max(lo, a), min(hi, b)
            self._offset = (lo, hi)

    def _second_start(self, second: int | None, answered: float) -> float:
        """A start at or after which counts in ``second`` or later (never before), and
        holds the sliding window until ``second`` is surely over."""
        with self._lock:
            bounds = self._wide_bounds()
        if second is None or bounds is None:
            # that second began before the answer came, and lasts a second at most
            return answered + 1.0 - self.window
        return second - bounds[0]

    def _note_second(self, second: int | None, used: int | None, sent: float,
                answered: float) -> None:
        """Note the service's ``second`` on this thread's booked start, and book as
        phantom starts what the service counted in it (``used``) beyond our own starts
        (other users of the application): at the start of that second as far as we know
        it, so they count in it and hold the sliding window to its end."""
        booked, self._mine.booked = getattr(self._mine, "booked", None), None
        window, n = self.window, self._per_window
        at = max(self._second_start(second, answered), sent - window + 1e-6)
        tag = math.nan if second is None else float(second)

        def change(starts: list[Start]) -> None:
            if booked is not None and second is not None and booked <= sent:
                i = bisect_left(starts, booked, key=_time)
                while i < len(starts) and starts[i][0] == booked:
                    if math.isnan(starts[i][1]):
                        starts[i] = (booked, tag)
                        break
                    i += 1
            if used is None:
                return
            ours = sum(1 for t, s in starts
                       if s == tag or (math.isnan(s) and sent - window < t <= max(sent, at)))
            for _ in range(min(used, n) - ours):
                insort(starts, (at, tag), key=_time)

        with self._lock:
            self._ledger.update(change)

    def refused(self, headers: Mapping[str, str], *, sent: float,
                answered: float) -> None:
        """After a 429: the rest of the service's second is booked full (for every
        process sharing the pace), this process waits until it is surely over, and the
        margin doubles (up to ``MAX_MARGIN``): the jitter was larger than allowed for."""
        if not self._rate:
            self.block_for(1.0 - (self._clock() % 1.0))  # unpaced: just the next second
            return
        with self._lock:
            self.margin = min(self.MAX_MARGIN, max(self._base_margin, self.margin * 2))
        second = _second_of(headers)
        self._note_second(second, self._per_window, sent, answered)
        over = self._second_start(second, answered) + self.window
        self.block_for(max(0.0, over - self._clock()))

    def block_for(self, seconds: float) -> None:
        """Hold every thread of this process back for ``seconds`` (a ``Retry-After``)."""
        with self._lock:
            self._blocked_until = max(self._blocked_until, self._clock() + seconds)


def _second_of(headers: Mapping[str, str]) -> int | None:
    """The service's second that counted the request (``X-RateLimit-Reset`` less one)."""
    reset = headers.get("X-RateLimit-Reset")
    if reset is None:
        return None
    value = float(reset)
    return int(value) - 1 if math.isfinite(value) else None


def _time(start: Start) -> float:
    return start[0]


def _count_in(starts: list[Start], second: int, lo: float, hi: float) -> int:
    """Starts that count in the service's ``second``: those it said so of, and those
    still out that may land in it (the offset between ``lo`` and ``hi``)."""
    return sum(1 for t, s in starts
               if (s == second if not math.isnan(s)
                   else math.floor(t + lo) <= second <= math.floor(t + hi)))


def check_rate(value: object) -> None:
    """UsageError unless ``value`` is a number of requests per second in [0, MAX_RATE]."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 <= value <= MAX_RATE):
        raise UsageError(f"rate_limit must be a number of requests per second between 0 "
                         f"(no pacing) and {MAX_RATE:g}, got {value!r}", field="rate_limit")


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def shared_limiter(base_url: str, app_id: str, rate: float, *,
                   pace_dir: Path | None = None) -> RateLimiter:
    """The limiter of one application, shared by every Client and thread of this process
    and, through a pace file (``paceledger.open_ledger``), by every process of this
    machine pacing it (the limit is per application, so none may spend it alone).
    ``rate=0``: a private, unpaced limiter. A client asking for a lower rate lowers the
    shared one (in this process).

    Parameters
    ----------
    base_url, app_id
        The service and application.
    rate
        Requests per second (0: no pacing).
    pace_dir
        Directory of the pace files (default ``paceledger.pace_dir()``).

    Returns
    -------
    RateLimiter

    Raises
    ------
    UsageError
        A rate out of range.

    Examples
    --------
    >>> shared_limiter("http://127.0.0.1:8000", "app_1", 10).acquire()  # doctest: +SKIP
    0.0
    """
    check_rate(rate)
    if not rate:
        return RateLimiter(0)
    key = (base_url.rstrip("/"), app_id)
    with _LIMITERS_LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None or not limiter.rate:
            limiter = RateLimiter(rate, ledger=open_ledger(key[0], app_id, pace_dir))
            _LIMITERS[key] = limiter
        elif rate < limiter.rate:
            limiter.rate = rate
        return limiter
