"""The service's own clock (``clock_offset_ms``): its seconds, quota day, reset and Date
headers and stamps read it, not the client's. Behavioural only: every bound below holds
however slow the machine, since each request is bracketed by our clock before and after."""

from __future__ import annotations

import datetime as dt
import email.utils
import time

import pytest
import requests

from svc_frames.errors import UsageError
from svc_frames.server import LocalService
from svc_frames.server.emulate import MAX_CLOCK_OFFSET_MS, Emulation
from svc_frames.testing import object_url

OFFSET_S = 0.4


def _timed_get(s: requests.Session, svc: LocalService) -> tuple[float, float, requests.Response]:
    before = time.time()
    r = s.get(object_url(svc, "object_2"), headers=svc.headers(),
              params={"rows_per_page": 1}, timeout=30)
    return before, time.time(), r


def test_rate_limit_seconds_start_at_the_services_tick() -> None:
    # the service's clock is 400 ms ahead, so its seconds begin at our .600: the first
    # answer of each of its seconds after a refusal crosses one of its ticks, never ours
    with LocalService(demo=True, records=5, rate_limit=2,
                      clock_offset_ms=OFFSET_S * 1000) as svc:
        s = requests.Session()
        ticks: list[tuple[float, float]] = []   # (last refused started, first admitted ended)
        last_refused: float | None = None
        deadline = time.monotonic() + 10   # 3 ticks take about 3 s, however fast a request
        while time.monotonic() < deadline:
            before, after, r = _timed_get(s, svc)
            assert r.status_code in (200, 429)
            if r.status_code == 429:
                last_refused = before
            elif last_refused is not None:
                ticks.append((last_refused, after))
                last_refused = None
                if len(ticks) >= 3:
                    break
        assert len(ticks) >= 3
        for refused, admitted in ticks:
            # a tick of the service's clock lies between the two requests...
            assert int(admitted + OFFSET_S) > int(refused + OFFSET_S)
        # ...and where two quick requests bracket it, that is not a tick of ours
        close = [(a, b) for a, b in ticks if b - a < 0.3]
        assert close, "every pair of requests took 300 ms or more"
        assert all(int(b) == int(a) for a, b in close)


def test_headers_read_the_services_clock() -> None:
    with LocalService(demo=True, records=5, clock_offset_ms=OFFSET_S * 1000) as svc:
        s = requests.Session()
        seen_ahead = False
        for _ in range(200):
            before, after, r = _timed_get(s, svc)
            reset = int(r.headers["X-RateLimit-Reset"])
            # the next second of the service's clock, somewhere while the request ran
            assert int(before + OFFSET_S) + 1 <= reset <= int(after + OFFSET_S) + 1
            ms_left = int(r.headers["X-PlanLimit-Reset"])
            midnight = (dt.datetime.fromtimestamp(before + OFFSET_S, dt.timezone.utc)
                        .replace(hour=0, minute=0, second=0, microsecond=0)
                        + dt.timedelta(days=1)).timestamp()
            if after + OFFSET_S < midnight:   # no UTC midnight while the request ran
                assert ((midnight - after - OFFSET_S) * 1000 - 1 <= ms_left
                        <= (midnight - before - OFFSET_S) * 1000)
            date = email.utils.parsedate_to_datetime(r.headers["Date"]).timestamp()
            assert int(before + OFFSET_S) <= date <= after + OFFSET_S
            if int(before) == int(after) and reset == int(before) + 2:
                seen_ahead = True   # the service is already in our next second
                break
            time.sleep(0.037)
        assert seen_ahead


def test_negative_offset_and_live_change() -> None:
    with LocalService(demo=True, records=5, clock_offset_ms=-2500) as svc:
        s = requests.Session()
        before, after, r = _timed_get(s, svc)
        assert int(before - 2.5) + 1 <= int(r.headers["X-RateLimit-Reset"]) <= int(after - 2.5) + 1
        svc.emulation.clock_offset_ms = 5000   # a live knob
        before, after, r = _timed_get(s, svc)
        assert int(before + 5) + 1 <= int(r.headers["X-RateLimit-Reset"]) <= int(after + 5) + 1
        with pytest.raises(UsageError, match="clock_offset_ms"):
            svc.emulation.clock_offset_ms = MAX_CLOCK_OFFSET_MS + 1
        assert svc.emulation.clock_offset_ms == 5000   # the bad value was not kept


@pytest.mark.parametrize("bad", [MAX_CLOCK_OFFSET_MS + 1, -MAX_CLOCK_OFFSET_MS - 1,
                                 float("nan"), float("inf"), "400", True])
def test_out_of_range_offsets_are_refused_before_start(bad: object) -> None:
    with pytest.raises(UsageError, match="clock_offset_ms"):
        LocalService(demo=True, records=0, clock_offset_ms=bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="clock_offset_ms"):
        Emulation(clock_offset_ms=bad)  # type: ignore[arg-type]


def test_stamps_and_ids_follow_the_services_clock() -> None:
    # a day ahead is refused, so an hour: a form's stamp carries the service's hour
    with LocalService(demo=True, records=5, clock_offset_ms=-MAX_CLOCK_OFFSET_MS) as svc:
        app = svc.app
        now_local = dt.datetime.fromtimestamp(time.time(), app.zone).replace(tzinfo=None)
        local = app.local_now()
        assert dt.timedelta(minutes=59) <= now_local - local <= dt.timedelta(minutes=61)
        rid, _ = svc.store.write("object_2", {})
        assert abs(int(rid[:8], 16) - (time.time() - 3600)) < 60
