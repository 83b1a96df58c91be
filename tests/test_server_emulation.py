"""Emulation knobs over HTTP: rate limit, daily quota, faults, request log, headers."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections import defaultdict

import pytest
import requests

from svc_frames.server import LocalService
from svc_frames.server.emulate import Emulation
from svc_frames.testing import login, object_url, view_url

LIMIT_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
                 "X-PlanLimit-Limit", "X-PlanLimit-Remaining", "X-PlanLimit-Reset")


def test_headers_on_every_response(service: LocalService) -> None:
    for r in (requests.get(object_url(service, "object_3"), headers=service.headers(),
                           timeout=30),
              requests.get(object_url(service, "object_3"), timeout=30),  # 401
              requests.get(object_url(service, "object_77"), headers=service.headers(),
                           timeout=30)):  # 404
        for h in LIMIT_HEADERS:
            assert h in r.headers, (r.status_code, h)
        assert int(r.headers["X-PlanLimit-Reset"]) <= 24 * 3600 * 1000


def test_rate_limit_per_second(fresh_service: LocalService) -> None:
    # No wall-time expectation: answers are grouped by the window the service itself
    # reports (X-RateLimit-Reset), and each window must hold exactly the first `limit`
    # requests, counted down in Remaining, then only refusals. Requests go on until one
    # window was overfull (however slow the machine, 4 land in one second eventually).
    svc = fresh_service
    svc.emulation.rate_limit = 3
    s = requests.Session()
    windows: dict[str, list[requests.Response]] = defaultdict(list)
    for _ in range(300):
        r = s.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
        windows[r.headers["X-RateLimit-Reset"]].append(r)
        if r.status_code != 200:
            break
    overfull = [w for w in windows.values() if len(w) > 3]
    assert overfull, "300 requests at 3/s never met the limit"
    for answers in windows.values():
        assert [r.status_code for r in answers[:3]] == [200] * len(answers[:3])
        assert [r.headers["X-RateLimit-Remaining"] for r in answers[:3]] == \
            ["2", "1", "0"][:len(answers)]
        for r in answers[3:]:
            assert r.status_code == 429 and r.text == "Rate limit exceeded"
            assert r.headers["X-RateLimit-Remaining"] == "0"
    svc.emulation.rate_limit = 0
    assert s.get(object_url(svc, "object_2"), headers=svc.headers(),
                 timeout=30).status_code == 200


def test_rate_limit_counts_per_wall_second() -> None:
    # the window arithmetic itself, with explicit clock readings
    emu = Emulation(rate_limit=3)
    verdicts = [emu.admit(t) for t in (1000.0, 1000.3, 1000.6, 1000.99, 1001.0, 1001.5)]
    assert [v[0] for v in verdicts] == [None, None, None, 429, None, None]
    assert verdicts[3][1] == "Rate limit exceeded"
    assert [v[2]["X-RateLimit-Reset"] for v in verdicts] == ["1001"] * 4 + ["1002"] * 2
    assert [v[2]["X-RateLimit-Remaining"] for v in verdicts] == ["2", "1", "0", "0", "2", "1"]


def test_daily_quota(fresh_service: LocalService) -> None:
    svc = fresh_service
    requests.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
    svc.emulation.daily_quota = 1
    r = requests.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
    assert r.status_code == 429 and r.headers["X-PlanLimit-Remaining"] == "0"
    svc.emulation.daily_quota = 0


def _count(svc: LocalService) -> int:
    r = requests.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
    return int(r.json()["total_records"])


@pytest.mark.parametrize("fault,status", [("500", 500), ("502", 502), ("503", 503),
                                          ("429", 429)])
def test_faults_happen_before_the_write(fresh_service: LocalService, fault: str,
                                        status: int) -> None:
    svc = fresh_service
    before = _count(svc)
    svc.emulation.faults = (fault,)
    svc.emulation.fault_rate = 1.0
    r = requests.post(object_url(svc, "object_2"), json={"field_8": f"fault {fault}"},
                      headers=svc.headers(), timeout=30)
    svc.emulation.fault_rate = 0.0
    assert r.status_code == status
    assert _count(svc) == before


def test_dropped_connection(fresh_service: LocalService) -> None:
    svc = fresh_service
    before = _count(svc)
    svc.emulation.faults = ("drop",)
    svc.emulation.fault_rate = 1.0
    with pytest.raises(requests.exceptions.RequestException):
        requests.post(object_url(svc, "object_2"), json={"field_8": "dropped"},
                      headers=svc.headers(), timeout=30)
    svc.emulation.fault_rate = 0.0
    assert _count(svc) == before


def test_request_log(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.request_log.clear()
    path = "/v1/objects/object_2/records"
    for _ in range(3):
        requests.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
    requests.get(object_url(svc, "object_2"), timeout=30)
    assert svc.request_log.counts()[("GET", path)] == 4
    assert svc.request_log.count(method="GET", path_prefix="/v1/objects/") == 4
    assert svc.request_log.count(status=401) == 1
    assert [e.status for e in svc.request_log.entries] == [200, 200, 200, 401]


def test_jitter_on_the_way_there_moves_when_a_request_is_counted(
        fresh_service: LocalService) -> None:
    """The jitter is split between the trip there and the trip back: a request can be
    counted well after it left (as a real trip moves which of the service's seconds
    counts it), never before, and the whole delay stays the latency plus the jitter."""
    svc = fresh_service
    svc.emulation.latency_ms, svc.emulation.jitter_ms = 0, 200
    svc.request_log.clear()
    sent, took = [], []
    for _ in range(20):
        t0 = time.time()
        requests.get(object_url(svc, "object_2"), headers=svc.headers(),
                     params={"rows_per_page": 1}, timeout=30)
        sent.append(t0)
        took.append(time.time() - t0)
    counted = [e.time for e in svc.request_log.entries]
    assert len(counted) == 20
    waits = [c - s for c, s in zip(counted, sent, strict=True)]
    # all of the jitter after the count would leave every wait near 0; the chance that
    # 20 splits all put under 30 ms on the way there is below 1e-7
    assert max(waits) >= 0.03
    assert min(waits) >= -0.01
    assert all(w <= t + 0.01 for w, t in zip(waits, took, strict=True))
    assert max(took) <= 0.2 + 0.5   # the latency (0) and the jitter, and loopback's own


def test_knobs_are_validated() -> None:
    with pytest.raises(ValueError, match="fault_rate"):
        LocalService(faults=2.0)
    with pytest.raises(ValueError, match="latency"):
        LocalService(latency_ms=-5)


def test_schema_can_be_hidden(fresh_service: LocalService) -> None:
    url = f"{fresh_service.base_url}/v1/applications/{fresh_service.app_id}"
    assert requests.get(url, timeout=30).status_code == 200
    fresh_service.emulation.expose_schema = False
    assert requests.get(url, timeout=30).status_code == 404
    fresh_service.emulation.expose_schema = True


# ---- daily quota, Retry-After, throttling 403, faults after the write -------
def test_daily_quota_answers_like_hosted(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.daily_quota = 3
    svc.emulation.new_quota_day()
    s = requests.Session()
    answers = [s.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
               for _ in range(5)]
    assert [r.status_code for r in answers] == [200, 200, 200, 429, 429]
    assert [r.headers["X-PlanLimit-Remaining"] for r in answers] == ["2", "1", "0", "0", "0"]
    assert all(r.headers["X-PlanLimit-Limit"] == "3" for r in answers)
    assert answers[3].text == "Daily limit exceeded"
    assert 0 < int(answers[4].headers["X-PlanLimit-Reset"]) <= 24 * 3600 * 1000
    assert "Retry-After" not in answers[3].headers  # the reset header says when
    # refusals of a spent quota cost nothing; a new day starts on demand
    assert svc.emulation.quota_used == 3
    svc.emulation.new_quota_day()
    r = s.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
    assert r.status_code == 200 and r.headers["X-PlanLimit-Remaining"] == "2"


def test_daily_quota_counts_every_call(fresh_service: LocalService) -> None:
    svc = fresh_service
    token = login(svc, 0)
    svc.emulation.daily_quota = 100
    svc.emulation.new_quota_day()
    s = requests.Session()
    s.get(view_url(svc, "scene_1", "view_1"), headers=svc.headers(view=True), timeout=30)
    # a public view call without a token counts too (hosted: every view-based call)
    assert svc.emulation.quota_used == 1
    s.get(view_url(svc, "scene_3", "view_5"), headers=svc.headers(view=True, token=token),
          timeout=30)
    assert svc.emulation.quota_used == 2
    s.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
    s.get(object_url(svc, "object_2"), timeout=30)  # refused (no key): counted all the same
    assert svc.emulation.quota_used == 4
    # once spent, a public view call is refused like any other
    svc.emulation.daily_quota = 4
    r = s.get(view_url(svc, "scene_1", "view_1"), headers=svc.headers(view=True), timeout=30)
    assert r.status_code == 429 and r.text == "Daily limit exceeded"


def test_retry_after_is_sent_and_enforced() -> None:
    # explicit clock readings: refused inside the window, admitted after it
    emu = Emulation(rate_limit=1, retry_after_s=2)
    verdicts = [emu.admit(t) for t in (1000.1, 1000.5, 1001.2, 1002.6, 1002.7)]
    assert [v[0] for v in verdicts] == [None, 429, 429, None, 429]
    assert verdicts[1][2]["Retry-After"] == "2"
    assert verdicts[2][2]["Retry-After"] == "2"  # 1.3 s left of the window, rounded up
    assert "Retry-After" not in verdicts[0][2] and "Retry-After" not in verdicts[3][2]


def test_throttling_403_says_so(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.throttle_status = 403
    svc.emulation.rate_limit = 1
    s = requests.Session()
    answers = [s.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
               for _ in range(3)]
    svc.emulation.rate_limit = 0
    throttled = [r for r in answers if r.status_code == 403]
    assert throttled, [r.status_code for r in answers]  # 3 requests within one second
    assert all("throttl" in r.text for r in throttled)
    # a token refusal is a 403 that names the token, not throttling
    r = s.get(view_url(svc, "scene_3", "view_5"), headers=svc.headers(view=True, token="x"),
              timeout=30)
    assert r.status_code == 403 and "Token" in r.text and "throttl" not in r.text


@pytest.mark.parametrize("fault,status", [("403", 403), ("429", 429)])
def test_injected_throttle_faults_happen_before_the_write(fresh_service: LocalService,
                                                           fault: str, status: int) -> None:
    svc = fresh_service
    before = _count(svc)
    svc.emulation.inject(fault, method="POST")
    r = requests.post(object_url(svc, "object_2"), json={"field_8": "x"},
                      headers=svc.headers(), timeout=30)
    assert r.status_code == status and _count(svc) == before
    assert svc.request_log.count(method="POST", applied=False, fault=fault) == 1


def test_cut_applies_the_write_then_loses_the_answer(fresh_service: LocalService) -> None:
    svc = fresh_service
    before = _count(svc)
    svc.request_log.clear()
    svc.emulation.inject("cut", method="POST")
    with pytest.raises(requests.exceptions.RequestException):
        requests.post(object_url(svc, "object_2"), json={"field_8": "cut after apply"},
                      headers=svc.headers(), timeout=30)
    assert _count(svc) == before + 1  # the server holds the write
    [entry] = [e for e in svc.request_log.entries if e.method == "POST"]
    assert entry.fault == "cut" and entry.status == 0 and entry.app_status == 200
    assert entry.applied
    # only the next matching request was faulted
    r = requests.post(object_url(svc, "object_2"), json={"field_8": "fine"},
                      headers=svc.headers(), timeout=30)
    assert r.status_code == 200


def test_500_after_applies_the_write(fresh_service: LocalService) -> None:
    svc = fresh_service
    rec = requests.get(object_url(svc, "object_2"), headers=svc.headers(),
                       timeout=30).json()["records"][0]
    svc.emulation.inject("500-after", method="PUT")
    r = requests.put(object_url(svc, "object_2", rec["id"]), json={"field_8": "after"},
                     headers=svc.headers(), timeout=30)
    assert r.status_code == 500 and "applied" in r.text
    again = requests.get(object_url(svc, "object_2", rec["id"]), headers=svc.headers(),
                         timeout=30).json()
    assert again["field_8"] == "after"
    assert svc.request_log.count(method="PUT", status=500, applied=True) == 1


def test_fault_methods_limit_random_faults(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.faults = ("cut",)
    svc.emulation.fault_methods = ("POST",)
    svc.emulation.fault_rate = 1.0
    try:
        r = requests.get(object_url(svc, "object_2"), headers=svc.headers(), timeout=30)
        assert r.status_code == 200
        with pytest.raises(requests.exceptions.RequestException):
            requests.post(object_url(svc, "object_2"), json={}, headers=svc.headers(),
                          timeout=30)
    finally:
        svc.emulation.fault_rate = 0.0
    assert svc.request_log.count(method="POST", applied=True, fault="cut") == 1


def test_new_knobs_are_validated() -> None:
    with pytest.raises(ValueError, match="retry_after_s"):
        Emulation(retry_after_s=-1).validate()
    with pytest.raises(ValueError, match="throttle_status"):
        Emulation(throttle_status=500).validate()
    with pytest.raises(ValueError, match="unknown fault"):
        Emulation(faults=("cut", "boom")).validate()
    with pytest.raises(ValueError, match="unknown fault"):
        Emulation().inject("boom")


def test_a_new_connections_first_request_arrives_after_its_handshake() -> None:
    assert Emulation(latency_ms=40).handshake_s() == 0  # off unless asked
    assert Emulation(handshake_ms=80).handshake_s() == pytest.approx(0.08)
    with pytest.raises(ValueError, match="handshake_ms"):
        Emulation(handshake_ms=-1).validate()
    with LocalService(demo=True, records=5, handshake_ms=300) as svc:
        url = f"{svc.base_url}/v1/applications/{svc.app_id}"
        arrived = []
        with requests.Session() as session:
            for _ in range(2):   # the second goes on the connection the first opened
                sent = time.time()
                assert session.get(url, timeout=10).status_code == 200
                arrived.append(svc.request_log.entries[-1].time - sent)
        assert arrived[0] >= 0.29 and arrived[1] < 0.2


def test_over_https_a_new_connections_connect_waits_out_its_handshake() -> None:
    with LocalService(demo=True, records=5, handshake_ms=300, tls=True) as svc:
        assert svc.base_url.startswith("https://") and svc.ca_file is not None
        context = ssl.create_default_context(cafile=svc.ca_file)
        t0 = time.perf_counter()
        with socket.create_connection(("127.0.0.1", svc.port), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            took = time.perf_counter() - t0   # the client's connect, as a hosted one
            assert 0.29 <= took < 5 and tls.version() in ("TLSv1.2", "TLSv1.3")
            sent = time.time()
            tls.sendall(f"GET /v1/applications/{svc.app_id} HTTP/1.1\r\n"
                        f"Host: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while chunk := tls.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        assert svc.request_log.entries[-1].time - sent < 0.2  # counted at once: no hold
        # a client that speaks plain HTTP to it, or leaves mid-handshake, is closed
        # without an answer, and the service goes on
        with pytest.raises(requests.ConnectionError):
            requests.get(svc.base_url.replace("https:", "http:") + "/v1/applications/x",
                         timeout=10)
        socket.create_connection(("127.0.0.1", svc.port), timeout=10).close()
        with requests.Session() as session:
            with pytest.raises(requests.exceptions.SSLError):  # not trusted by default
                session.get(svc.base_url, timeout=10, verify=True)
            url = f"{svc.base_url}/v1/applications/{svc.app_id}"
            assert session.get(url, timeout=10, verify=svc.ca_file).status_code == 200


def test_an_https_service_stops_with_a_client_connection_still_open() -> None:
    svc = LocalService(demo=True, records=5, tls=True).start()
    idle = requests.Session()   # keeps its connection in its pool, never closes it
    try:
        assert idle.get(f"{svc.base_url}/v1/applications/{svc.app_id}", timeout=10,
                        verify=svc.ca_file).status_code == 200
        stopping = threading.Thread(target=svc.stop, daemon=True)
        stopping.start()
        # not held by the TLS close (asyncio waits 30 s for the client's close_notify)
        stopping.join(timeout=10)
        assert not stopping.is_alive()
    finally:
        idle.close()
        svc.stop()
