"""The pacing of requests: the sliding window against a service whose clock is offset
from ours, what the limiter learns from the answers, sharing one pace between threads,
clients and processes (a pace file), and a process killed while holding it.

Exact behaviour runs on injected clocks; the real runs (loopback, subprocesses) count
429s and the order of starts, never time."""

from __future__ import annotations

import collections
import json
import math
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from svc_frames.errors import UsageError
from svc_frames.http.limiter import RateLimiter, shared_limiter
from svc_frames.http.paceledger import FileLedger, pace_file
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService

KEY = "sk-pace-test-key"


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def starts_of(limiter: RateLimiter, clock: FakeClock, n: int) -> list[float]:
    """When each of ``n`` requests, asked for one after another, would start."""
    starts = []
    for _ in range(n):
        limiter.acquire()
        starts.append(clock.now)
    return starts


class OffsetService:
    """The hosted rate limit on a fake clock: ``limit`` requests per second of a clock
    ``offset`` s ahead of ours, counted when the request arrives (``delay`` after it
    leaves, plus up to ``jitter``); its answers carry the X-RateLimit-* headers."""

    def __init__(self, offset: float, *, limit: int = 10, delay: float = 0.0,
                 jitter: float = 0.0, seed: int = 0) -> None:
        self.offset, self.limit, self.delay, self.jitter = offset, limit, delay, jitter
        self.counted: collections.Counter[int] = collections.Counter()
        self.refused = 0
        self._rng = random.Random(seed)

    def answer(self, sent: float) -> tuple[bool, dict[str, str], float]:
        """(refused?, headers, arrival on our clock) of a request leaving at ``sent``."""
        arrival = sent + self.delay + self._rng.uniform(0, self.jitter)
        second = math.floor(arrival + self.offset)
        self.counted[second] += 1
        over = self.counted[second] > self.limit
        self.refused += over
        return over, {"X-RateLimit-Limit": str(self.limit),
                      "X-RateLimit-Remaining": str(max(0, self.limit
                                                       - self.counted[second])),
                      "X-RateLimit-Reset": str(second + 1)}, arrival


def run_load(limiter: RateLimiter, clock: FakeClock, svc: OffsetService, n: int,
             rtt: float = 0.1) -> list[float]:
    """``n`` requests one after another (each answered ``rtt`` after it leaves, on the
    fake clock, which only ``acquire`` moves on); returns their starts."""
    starts = []
    for _ in range(n):
        limiter.acquire()
        sent = clock.now
        refused, headers, arrival = svc.answer(sent)
        answered = max(arrival, sent + rtt)
        limiter.observe(headers, sent=sent, answered=answered)
        if refused:
            limiter.refused(headers, sent=sent, answered=answered)
        starts.append(sent)
    return starts


# ---- the window, whatever the offset ------------------------------------------------------
@pytest.mark.parametrize("offset", [-1.0, -0.5, -0.15, 0.0, 0.15, 0.5, 1.0, 0.37, -0.93])
@pytest.mark.parametrize("jitter", [0.0, 0.05])
def test_no_second_of_the_service_gets_more_than_the_limit(offset: float,
                                                            jitter: float) -> None:
    clock = FakeClock(1000.0 + random.Random(7).random())
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    svc = OffsetService(offset, delay=0.02, jitter=jitter, seed=int(offset * 100))
    starts = run_load(limiter, clock, svc, 95)
    assert svc.refused == 0 and max(svc.counted.values()) <= 10
    # never slower than the sliding window (95 starts in 10 windows), and once the
    # first answers are in, by the service's seconds: a full second apart, not 1.05
    assert starts[-1] - starts[0] <= 9 * limiter.window + 1e-9
    assert starts[-1] - starts[-11] == pytest.approx(1.0)
    assert limiter.state.margin == 0.05  # never widened: no 429


def test_starts_leave_by_the_window_and_a_lone_request_never_waits() -> None:
    clock = FakeClock()
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    starts = starts_of(limiter, clock, 21)
    assert starts == pytest.approx([1000.0] * 10 + [1001.05] * 10 + [1002.1])
    clock.now += 3.3  # idle, then one more: at once
    assert starts_of(limiter, clock, 1) == pytest.approx([1005.4])
    # any window of 1.05 s holds at most ten starts
    assert all(sum(1 for s in starts if t <= s < t + 1.05) <= 10 for t in starts)


@pytest.mark.parametrize("shared", [False, True])
def test_next_start_says_when_a_start_would_go_and_books_nothing(shared: bool,
                                                                 tmp_path: Path) -> None:
    clock = FakeClock()
    ledger = FileLedger(tmp_path / "peek.pace") if shared else None
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep, ledger=ledger)
    for expected in [1000.0] * 10 + [1001.05] * 10 + [1002.1]:
        # asked twice, then taken: the start booked is the one it said
        assert limiter.next_start() == limiter.next_start() == pytest.approx(expected)
        limiter.acquire()
        assert clock.now == pytest.approx(expected)
    limiter.block_for(5.0)   # a Retry-After holds it, a peek included
    assert limiter.next_start() == pytest.approx(clock.now + 5.0)
    assert RateLimiter(0, clock=clock).next_start() == clock.now   # unpaced: now


def test_limiter_below_one_per_second_spaces_starts() -> None:
    clock = FakeClock()
    limiter = RateLimiter(0.5, clock=clock, sleep=clock.sleep)
    assert starts_of(limiter, clock, 3) == pytest.approx([1000.0, 1002.05, 1004.1])


def test_unpaced_limiter_never_waits() -> None:
    clock = FakeClock()
    limiter = RateLimiter(0, clock=clock, sleep=clock.sleep)
    assert starts_of(limiter, clock, 50) == [1000.0] * 50
    assert limiter.state.rate == 0 and limiter.state.shared_file is None


# ---- what it learns ------------------------------------------------------------------------
@pytest.mark.parametrize("offset", [-1.0, -0.3, 0.0, 0.45, 1.0])
def test_the_offset_is_learned_from_the_reset_headers(offset: float) -> None:
    clock = FakeClock(5000.3)
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    svc = OffsetService(offset)
    assert limiter.state.service_offset is None
    run_load(limiter, clock, svc, 25, rtt=0.05)
    first = limiter.state.offset_bounds
    assert first is not None and first[0] <= offset <= first[1] and first[1] - first[0] <= 1
    # requests now and then (at every phase of the service's second): the bounds close in
    rng = random.Random(offset)
    for _ in range(200):
        clock.now += rng.uniform(0.0, 2.0)
        run_load(limiter, clock, svc, 1, rtt=0.05)
    state = limiter.state
    assert state.offset_bounds is not None and state.service_offset is not None
    lo, hi = state.offset_bounds
    assert lo <= offset <= hi
    assert hi - lo <= 0.1 and abs(state.service_offset - offset) <= 0.05
    assert svc.refused == 0


def test_remaining_zero_from_our_own_starts_costs_nothing() -> None:
    # the service's clock a second ahead: its reset is a second later than ours would be;
    # our own tenth start of a second reads Remaining 0, which the window already keeps
    clock = FakeClock(2000.0)
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    svc = OffsetService(1.0)
    starts = run_load(limiter, clock, svc, 21)
    assert starts == pytest.approx([2000.0] * 10 + [2001.05] * 10 + [2002.05])
    assert svc.refused == 0


def test_what_others_spent_of_the_second_is_booked() -> None:
    # Other users of the application spend the same per-second limit: the headers say how
    # much of the service's second is gone, and that is booked until the second ends.
    clock = FakeClock(1000.2)
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    limiter.observe({"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "3",
                     "X-RateLimit-Reset": "1001"}, sent=1000.2, answered=1000.3)
    # the request left at 1000.2 and was counted in the service's second 1000: that
    # second ends by 1001.2 on our clock, and a start surely past it waits the margin more
    starts = starts_of(limiter, clock, 5)
    assert starts[:3] == pytest.approx([1000.25] * 3)
    assert starts[3:] == pytest.approx([1001.25] * 2)
    # the same second reported again is not booked twice
    limiter.observe({"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0",
                     "X-RateLimit-Reset": "1001"}, sent=1000.25, answered=1000.35)
    assert starts_of(limiter, clock, 1) == pytest.approx([1001.25])


def test_ratelimit_limit_lowers_the_rate() -> None:
    limiter = RateLimiter(10)
    limiter.observe({"X-RateLimit-Limit": "4"}, sent=1.0, answered=1.1)
    assert limiter.state.rate == 4 and limiter.state.per_window == 4


def test_bad_headers_are_ignored() -> None:
    limiter = RateLimiter(10)
    limiter.observe({"X-RateLimit-Limit": "x", "X-RateLimit-Reset": "nan"},
                    sent=1.0, answered=1.1)
    limiter.observe({"X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "inf"},
                    sent=1.0, answered=1.1)
    assert limiter.state.rate == 10 and limiter.state.service_offset is None


def test_a_429_books_the_second_full_and_widens_the_margin() -> None:
    clock = FakeClock(3000.5)
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    headers = {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0",
               "X-RateLimit-Reset": "3001"}
    limiter.observe(headers, sent=3000.5, answered=3000.6)
    limiter.refused(headers, sent=3000.5, answered=3000.6)
    assert limiter.state.margin == 0.1
    # the service's second may run until 3001.6 on our clock: nothing starts before
    limiter.acquire()
    assert clock.now >= 3001.6


def test_retry_after_holds_every_thread() -> None:
    clock = FakeClock()
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    limiter.acquire()
    limiter.block_for(0.7)
    limiter.acquire()
    assert clock.now >= 1000.7


# ---- one pace per application: threads, clients, processes ------------------------------
def test_threads_book_in_order() -> None:
    # Eight threads ask one after another (a known order) on a clock standing still:
    # each thread's wait is exactly its place in the window.
    limiter = RateLimiter(3, clock=lambda: 1000.0, sleep=lambda s: held(s))
    n = 8
    turn = [threading.Event() for _ in range(n + 1)]
    sleeping = threading.Barrier(5, timeout=10)  # the five that wait
    mine = threading.local()
    waits: dict[int, float] = {}

    def held(seconds: float) -> None:
        turn[mine.i + 1].set()  # booked: the next thread may ask
        sleeping.wait()

    def worker(i: int) -> None:
        mine.i = i
        assert turn[i].wait(10)
        waits[i] = limiter.acquire()
        turn[i + 1].set()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    turn[0].set()
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert [waits[i] for i in range(n)] == pytest.approx([0.0] * 3 + [1.05] * 3 + [2.1] * 2)


def test_clients_of_one_application_share_the_pace(tmp_path: Path) -> None:
    a = Client("appx", api_key=KEY, base_url="http://127.0.0.1:9", rate_limit=10)
    b = Client("appx", api_key=KEY, base_url="http://127.0.0.1:9/", rate_limit=5)
    c = Client("appy", api_key=KEY, base_url="http://127.0.0.1:9", rate_limit=10)
    off = Client("appx", api_key=KEY, base_url="http://127.0.0.1:9", rate_limit=0)
    assert a.limiter is b.limiter and a.pace.rate == 5
    assert c.limiter is not a.limiter and off.limiter is not a.limiter
    assert a.pace.shared_file == pace_file("http://127.0.0.1:9", "appx")
    assert c.pace.shared_file != a.pace.shared_file and off.pace.shared_file is None


def test_limiters_on_one_pace_file_share_the_window(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "one.pace"
    one = RateLimiter(10, clock=clock, sleep=clock.sleep, ledger=FileLedger(path))
    two = RateLimiter(10, clock=clock, sleep=clock.sleep, ledger=FileLedger(path))
    starts = []
    for i in range(25):
        (one if i % 2 else two).acquire()
        starts.append(clock.now)
    assert starts == pytest.approx([1000.0] * 10 + [1001.05] * 10 + [1002.1] * 5)
    assert one.state.shared_file == two.state.shared_file == path


CHILD = textwrap.dedent("""
    import json, sys
    from svc_frames.records import Client
    from svc_frames.loaders import read_object
    base_url, app_id, api_key, ca_file = sys.argv[1:5]
    client = Client(app_id, api_key=api_key, base_url=base_url, rate_limit=10,
                    max_workers=8, verify=ca_file)
    print("ready", flush=True)
    sys.stdin.readline()
    frames = read_object(client, "object_3", progress=False, rows_per_page=50)
    print(json.dumps({"rows": len(frames.main), "429": client.status_counts[429],
                      "shared": str(client.pace.shared_file)}), flush=True)
""")


@pytest.mark.slow
def test_two_processes_share_one_pace(tmp_path: Path) -> None:
    env = {**os.environ, "SVC_PACE_DIR": str(tmp_path)}
    # over HTTPS, each new connection's handshake taking two round trips, as hosted
    with LocalService(demo=True, records=1000, rate_limit=10, latency_ms=20,
                      handshake_ms=40, tls=True, clock_offset_ms=-300, seed=3) as svc:
        args = [sys.executable, "-c", CHILD, svc.base_url, svc.app_id, svc.api_key,
                str(svc.ca_file)]
        kids = [subprocess.Popen(args, env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for _ in range(2)]
        for kid in kids:
            assert kid.stdout is not None and kid.stdout.readline().strip() == "ready"
        svc.request_log.clear()
        for kid in kids:  # go together
            assert kid.stdin is not None
            kid.stdin.write("go\n")
            kid.stdin.flush()
        outs = [json.loads(kid.communicate(timeout=120)[0]) for kid in kids]
        log = [e for e in svc.request_log.entries if e.path.startswith("/v1/")]
    assert [o["rows"] for o in outs] == [1000, 1000]
    assert [o["429"] for o in outs] == [0, 0]
    assert outs[0]["shared"] == outs[1]["shared"] and outs[0]["shared"].startswith(
        str(tmp_path))
    per_second = collections.Counter(math.floor(e.time) for e in log)
    assert sum(1 for e in log if e.status == 429) == 0 and max(per_second.values()) <= 10
    assert len(log) >= 2 * 21  # both loaded: 20 pages and the schema each


HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from svc_frames.http.paceledger import FileLedger
    ledger = FileLedger(Path(sys.argv[1]))
    def hold(starts):
        starts.extend([time.time()] * 3)
        print("holding", flush=True)
        time.sleep(600)
    ledger.update(hold)
""")


def test_a_process_killed_holding_the_pace_never_blocks_the_others(tmp_path: Path) -> None:
    path = tmp_path / "app.pace"
    kid = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)],
                           stdout=subprocess.PIPE, text=True)
    assert kid.stdout is not None and kid.stdout.readline().strip() == "holding"
    limiter = RateLimiter(10, ledger=FileLedger(path))
    done = threading.Event()

    def load() -> None:
        for _ in range(12):
            limiter.acquire()
        done.set()

    waiter = threading.Thread(target=load, daemon=True)
    waiter.start()
    assert not done.wait(0.3)  # the lock is held: nobody books meanwhile
    os.kill(kid.pid, signal.SIGKILL)
    kid.wait(10)
    assert done.wait(30), "the pace stayed locked after its holder died"
    # the dead process wrote nothing (killed inside its update): only our twelve remain
    counted = FileLedger(path).update(lambda starts: len(starts))
    assert counted == 12


BOOKER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from svc_frames.http.limiter import RateLimiter
    from svc_frames.http.paceledger import FileLedger
    limiter = RateLimiter(10, ledger=FileLedger(Path(sys.argv[1])))
    for _ in range(10):
        limiter.acquire()
    print(repr(time.time()), flush=True)
    time.sleep(600)
""")


def test_the_slots_of_a_killed_process_age_out(tmp_path: Path) -> None:
    # A process books every slot of the window, then dies before sending: the others
    # wait for those slots to age out of the window (they may have been sent), no longer.
    path = tmp_path / "app.pace"
    kid = subprocess.Popen([sys.executable, "-c", BOOKER, str(path)],
                           stdout=subprocess.PIPE, text=True)
    assert kid.stdout is not None
    booked_by = float(kid.stdout.readline())
    os.kill(kid.pid, signal.SIGKILL)
    kid.wait(10)
    limiter = RateLimiter(10, ledger=FileLedger(path))
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (limiter.acquire(), done.set()), daemon=True)
    waiter.start()
    assert done.wait(30), "the dead process's slots never aged out"
    starts = FileLedger(path).update(lambda s: [t for t, _ in s])
    assert len(starts) == 11 and starts[-1] >= starts[0] + limiter.window - 1e-6
    assert starts[0] <= booked_by


# ---- over loopback, the service's clock offset ---------------------------------------------
@pytest.mark.parametrize("offset_ms", [-450, 1000])
def test_a_load_against_an_offset_service_draws_no_429(offset_ms: int) -> None:
    # HTTPS with a hosted connection's handshake (two round trips): a request booked
    # before its connection opened would land late, in a second given to later ones
    with LocalService(demo=True, records=600, rate_limit=10, latency_ms=30, jitter_ms=30,
                      handshake_ms=60, tls=True, clock_offset_ms=offset_ms, seed=5) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=10, max_workers=8, verify=svc.ca_file)
        frames = read_object(client, "object_3", progress=False, rows_per_page=25, columns="keys")
        assert len(frames.main) == 600
        assert client.status_counts[429] == 0 and svc.request_log.count(status=429) == 0
        pace = client.pace
        assert pace.offset_bounds is not None and pace.service_offset is not None
        lo, hi = pace.offset_bounds
        # the bounds are of the service's clock less ours plus the trip to it (30 ms
        # latency, up to 30 ms jitter here): they may sit up to one trip above the offset
        trip = 0.06 + 0.04
        assert lo <= offset_ms / 1000 + trip and offset_ms / 1000 <= hi


def test_rate_out_of_range_is_refused() -> None:
    for bad in (-1, math.nan, math.inf, 5000, True, "10"):
        with pytest.raises(UsageError, match="rate_limit"):
            RateLimiter(bad)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="rate_limit"):
            shared_limiter("http://127.0.0.1:9", "appz", bad)  # type: ignore[arg-type]


def test_a_service_clock_that_steps_is_learned_afresh() -> None:
    clock = FakeClock(7000.1)
    limiter = RateLimiter(10, clock=clock, sleep=clock.sleep)
    rng = random.Random(3)
    for offset in (-0.2, 0.6):
        svc = OffsetService(offset)
        for _ in range(200):
            clock.now += rng.uniform(0.0, 2.0)
            run_load(limiter, clock, svc, 1)
        bounds = limiter.state.offset_bounds
        assert bounds is not None and bounds[0] <= offset <= bounds[1]
        assert bounds[1] - bounds[0] <= 0.1
