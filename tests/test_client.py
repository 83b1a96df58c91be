"""Client: headers, pacing, retries, typed errors, secrets never shown.

Most tests use a tiny real HTTP server on loopback (``http.server``) that answers what the
local service never does: HTML, garbage, a body cut off mid-way, scripted error bodies.
Tests against the local service itself sit at the end.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from svc_frames.errors import (
    AuthenticationError,
    ConfigurationError,
    Forbidden,
    NotFound,
    OutcomeUnknown,
    QuotaExceeded,
    QuotaInsufficient,
    RateLimited,
    SendDeadlinePassed,
    ServerError,
    ServiceError,
    ServiceUnreachable,
    UsageError,
    ValidationError,
)
from svc_frames.http.body import BUFFERED_MIN, BodyBuffers
from svc_frames.loaders import read_object
from svc_frames.read.pager import Page, Paginator
from svc_frames.records import Client
from svc_frames.server import LocalService

KEY = "sk-very-secret-key-42"
TOKEN = "tok-very-secret-99"


class Scripted(ThreadingHTTPServer):
    """Answers each request with the next scripted reply (the last one repeats)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.replies: list[tuple[int, str, bytes | str, dict[str, str]]] = []
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def script(self, *replies: tuple[Any, ...]) -> None:
        self.replies = [(r + ({},))[:4] if len(r) == 3 else r for r in replies]  # type: ignore
        self.seen.clear()


class Handler(BaseHTTPRequestHandler):
    server: Scripted

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with self.server.lock:
            self.server.seen.append((self.command, self.path, dict(self.headers)))
            idx = min(len(self.server.seen), len(self.server.replies)) - 1
            status, ctype, body, headers = self.server.replies[idx]
        data = body.encode() if isinstance(body, str) else body
        if status == -1:  # cut off: promise more bytes than sent, then hang up
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data) * 10))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _answer


@pytest.fixture(scope="module")
def scripted() -> Iterator[Scripted]:
    srv = Scripted()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def make(srv: Scripted, **kw: Any) -> Client:
    kw.setdefault("max_retries", 2)
    kw.setdefault("backoff", 0.01)
    kw.setdefault("rate_limit", 0)
    return Client("app1", api_key=KEY, base_url=srv.url, **kw)


PAGE = json.dumps({"total_pages": 1, "current_page": 1, "total_records": 1,
                   "records": [{"id": "r1", "field_1": "a", "field_1_raw": "a"}]})


def no_secret(text: str) -> None:
    assert KEY not in text and TOKEN not in text


# ---- headers (docs/service-interface.md §5) -----------------------------------------
def test_object_and_view_headers(scripted: Scripted) -> None:
    scripted.script((200, "application/json", PAGE))
    client = make(scripted, token=TOKEN)
    client.get_page("object_1")
    client.get_page(("scene_1", "view_2"))
    (_, opath, oh), (_, vpath, vh) = scripted.seen
    assert opath.startswith("/v1/objects/object_1/records?")
    assert oh["X-Service-Application-Id"] == "app1" and oh["X-Service-REST-API-KEY"] == KEY
    assert "Authorization" not in oh
    assert vpath.startswith("/v1/pages/scene_1/views/view_2/records?")
    assert vh["X-Service-REST-API-KEY"] == "service" and vh["Authorization"] == TOKEN


def test_secrets_never_in_repr() -> None:
    client = Client("app1", api_key=KEY, base_url="http://127.0.0.1:9", token=TOKEN)
    no_secret(repr(client))
    no_secret(str(vars(client).get("limiter")))


# ---- bad input, before any request --------------------------------------------------------
@pytest.mark.parametrize("kwargs, culprit", [
    ({"rows_per_page": 1001}, "rows_per_page"),
    ({"rows_per_page": 0}, "rows_per_page"),
    ({"sort_field": "Name"}, "sort_field"),
    ({"sort_order": "up"}, "sort_order"),
    ({"filters": [{"field": "field_1", "operator": "like", "value": 1}]}, "like"),
])
def test_bad_page_arguments_send_nothing(scripted: Scripted, kwargs: dict[str, Any],
                                         culprit: str) -> None:
    scripted.script((200, "application/json", PAGE))
    with pytest.raises(UsageError, match=culprit):
        make(scripted).get_page("object_1", **kwargs)
    assert scripted.seen == []


@pytest.mark.parametrize("target", ["object_x", "objects_1", ("scene_1",), ("scene_1", "v2")])
def test_bad_target_names_it(target: Any) -> None:
    client = Client("app1", api_key=KEY, base_url="http://127.0.0.1:9")
    with pytest.raises(UsageError, match="target"):
        client.get_page(target)


def test_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="base_url"):
        Client("app1", api_key=KEY)
    with pytest.raises(ConfigurationError, match="API key"):
        Client("app1", base_url="http://127.0.0.1:9").get_page("object_1")


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SVC_APP_ID", "envapp")
    monkeypatch.setenv("SVC_API_KEY", KEY)
    monkeypatch.setenv("SVC_BASE_URL", "http://127.0.0.1:9/")
    client = Client.from_env(rate_limit=3)
    assert client.app_id == "envapp" and client.base_url == "http://127.0.0.1:9"
    assert client.limiter.rate == 3 and client.has_api_key


# ---- error bodies: plain text and JSON, typed, secrets redacted -------------------------
def test_plain_text_401_keeps_server_message(scripted: Scripted) -> None:
    scripted.script((401, "text/plain", "Invalid API key"))
    with pytest.raises(AuthenticationError, match="Invalid API key") as exc:
        make(scripted).get_page("object_1")
    assert exc.value.status == 401
    assert len(scripted.seen) == 1  # not retried


def test_json_400_names_field(scripted: Scripted) -> None:
    body = json.dumps({"errors": [{"message": "Not a number", "field": "field_4"}]})
    scripted.script((400, "application/json", body))
    with pytest.raises(ValidationError, match="Not a number") as exc:
        make(scripted).update_record("object_1", "r1", {"field_4": "x"})
    assert exc.value.field == "field_4"


def test_view_without_token_says_log_in(scripted: Scripted) -> None:
    scripted.script((403, "text/plain", "Invalid or Expired Token"))
    with pytest.raises(Forbidden, match="login") as exc:
        make(scripted).get_page(("scene_2", "view_3"))
    assert "Invalid or Expired Token" in str(exc.value)


def test_expired_token_says_log_in_again(scripted: Scripted) -> None:
    scripted.script((403, "text/plain", f"Invalid or Expired Token {TOKEN}"))
    with pytest.raises(Forbidden, match="log in again") as exc:
        make(scripted, token=TOKEN).get_page(("scene_2", "view_3"))
    no_secret(str(exc.value))


def test_key_echoed_by_server_is_redacted(scripted: Scripted) -> None:
    scripted.script((401, "text/plain", f"Invalid API key {KEY}"))
    with pytest.raises(AuthenticationError) as exc:
        make(scripted).get_page("object_1")
    no_secret(str(exc.value))
    no_secret(repr(exc.value))


def test_unknown_object_named(scripted: Scripted) -> None:
    scripted.script((404, "text/plain", "Object not found"))
    with pytest.raises(NotFound, match="object_77"):
        make(scripted).get_page("object_77")


# ---- misbehaving servers -------------------------------------------------------------
@pytest.mark.parametrize("ctype,body,match", [
    ("text/html", "<html><body><h1>Sign in to the portal</h1></body>",
     "not JSON.*Sign in to the portal.*web page, check the base URL"),  # a login portal
    ("application/json", b"\x00\xff{{garbage", "not JSON"),           # garbage
    ("application/json", '{"hello": 1}', "envelope"),                 # JSON, not a page
], ids=["html", "garbage", "not-an-envelope"])
def test_a_200_that_is_not_a_page_is_a_server_error(scripted: Scripted, ctype: str,
                                                     body: str | bytes, match: str) -> None:
    scripted.script((200, ctype, body))
    with pytest.raises(ServerError, match=match):
        make(scripted).get_page("object_1")


def test_cut_off_page_is_retried_then_reported(scripted: Scripted) -> None:
    scripted.script((-1, "", PAGE[:40]))
    with pytest.raises(ServerError, match="cut off"):
        make(scripted, max_retries=2).get_page("object_1")
    assert len(scripted.seen) == 3


def _large_page() -> str:
    """A page of ``BUFFERED_MIN`` bytes or more (a listing's page, read into buffers)."""
    text = "x" * 100
    records = [{"id": f"r{i}", "field_1": text, "field_1_raw": text} for i in range(300)]
    body = json.dumps({"total_pages": 1, "current_page": 1, "total_records": len(records),
                       "records": records})
    assert len(body) >= BUFFERED_MIN
    return body


def test_large_page_is_read_into_a_buffer_reused_for_the_next(scripted: Scripted) -> None:
    body = _large_page()
    scripted.script((200, "application/json", body))
    client, buffers = make(scripted), BodyBuffers(1)
    given: list[Any] = []

    def parse(b: Any) -> Any:
        given.append((type(b), bytes(b), id(getattr(b, "obj", None))))
        return json.loads(bytes(b))
    for _ in range(2):
        page = client.get_page("object_1", parse=parse, into=buffers)
        assert page["records"] == json.loads(body)["records"]
    (kind1, got1, buf1), (kind2, got2, buf2) = given
    assert kind1 is kind2 is memoryview and got1 == got2 == body.encode()
    assert buf1 == buf2   # one buffer, reused
    client.get_page("object_1", parse=parse)   # not asked: bytes, as before
    assert given[2][0] is bytes
    buffers.close()
    client.get_page("object_1", parse=parse, into=buffers)   # closed: bytes
    assert given[3][0] is bytes
    client.get_page("object_1", parse=parse, into=BodyBuffers(0))   # none free: bytes
    assert given[4][0] is bytes


def test_a_buffer_whose_view_is_kept_is_not_written_again(scripted: Scripted) -> None:
    first, second = _large_page(), _large_page().replace("r1", "s1")
    scripted.script((200, "application/json", first), (200, "application/json", second))
    client, buffers = make(scripted), BodyBuffers(1)
    kept: list[memoryview] = []
    client.request("GET", "/v1/objects/object_1/records", into=buffers,
                   parse=lambda b: kept.append(memoryview(b)) or {})
    out = client.request("GET", "/v1/objects/object_1/records", into=buffers,
                         parse=lambda b: json.loads(bytes(b)))
    assert out["records"][1]["id"] == "s1"
    assert bytes(kept[0]) == first.encode()   # the next body went to a buffer of its own


def test_large_page_cut_off_is_retried_then_reported(scripted: Scripted) -> None:
    buffers = BodyBuffers(1)
    scripted.script((-1, "", _large_page()[:BUFFERED_MIN]))
    with pytest.raises(ServerError, match="cut off"):
        make(scripted, max_retries=1).get_page("object_1", into=buffers)
    assert len(scripted.seen) == 2
    scripted.script((200, "text/html", "<html>" + "x" * BUFFERED_MIN))
    with pytest.raises(ServerError, match="not JSON.*web page"):
        make(scripted).get_page("object_1", into=buffers)
    scripted.script((200, "application/json", _large_page()))   # the buffer was given back
    given: list[Any] = []
    make(scripted).get_page("object_1", into=buffers,
                            parse=lambda b: given.append(type(b)) or json.loads(bytes(b)))
    assert given == [memoryview]


def test_cut_off_page_recovers(scripted: Scripted) -> None:
    scripted.script((-1, "", PAGE[:40]), (200, "application/json", PAGE))
    page = make(scripted).get_page("object_1")
    assert page["records"][0]["id"] == "r1"


def test_get_retried_on_5xx_and_429(scripted: Scripted) -> None:
    scripted.script((503, "text/plain", "busy"), (429, "text/plain", "Rate limit exceeded"),
                    (200, "application/json", PAGE))
    client = make(scripted, max_retries=3)
    assert client.get_page("object_1")["total_records"] == 1
    assert len(scripted.seen) == 3 and client.retry_count == 2


def test_post_never_blindly_repeated(scripted: Scripted) -> None:
    scripted.script((503, "text/plain", "busy"), (200, "application/json", '{"id": "r9"}'))
    with pytest.raises(OutcomeUnknown, match="may or may not"):
        make(scripted, max_retries=3).create_record("object_1", {"field_1": "x"})
    assert len(scripted.seen) == 1


def test_post_refused_by_rate_limit_is_sent_again(scripted: Scripted) -> None:
    scripted.script((429, "text/plain", "Rate limit exceeded"),
                    (200, "application/json", '{"id": "r9"}'))
    assert make(scripted).create_record("object_1", {"field_1": "x"})["id"] == "r9"
    assert len(scripted.seen) == 2


def test_ratelimit_headers_lower_the_pace(scripted: Scripted) -> None:
    scripted.script((200, "application/json", PAGE, {"X-RateLimit-Limit": "4"}))
    client = make(scripted, rate_limit=10)
    client.get_page("object_1")
    assert client.limiter.rate == 4


def test_a_429_widens_the_margins(scripted: Scripted) -> None:
    scripted.script((429, "text/plain", "Rate limit exceeded"), (200, "application/json", PAGE))
    client = Client("app-widen", api_key=KEY, base_url=scripted.url, rate_limit=10,
                    backoff=0.01)
    before = client.limiter.margin
    client.get_page("object_1")
    assert client.pace.margin > before and client.status_counts[429] == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_schema_not_exposed_is_none(scripted: Scripted, status: int) -> None:
    scripted.script((status, "text/plain", "Not available"))
    assert not make(scripted).schema()   # an empty Schema: kinds are inferred


# ---- one retry policy: resend checks, downloads ---------------------------------------------
def test_post_resent_only_when_the_check_says_it_did_not_arrive(scripted: Scripted) -> None:
    scripted.script((503, "text/plain", "busy"), (502, "text/plain", "bad gateway"),
                    (200, "application/json", '{"id": "r9"}'))
    asked: list[OutcomeUnknown] = []

    def absent(exc: OutcomeUnknown) -> bool:
        asked.append(exc)
        return True

    client = make(scripted, max_retries=3)
    assert client.create_record("object_1", {"field_1": "x"}, resend=absent)["id"] == "r9"
    assert len(scripted.seen) == 3 and len(asked) == 2
    assert client.retry_count == 2 and client.status_counts[503] == 1
    # the check says it may have arrived: not sent again
    scripted.script((503, "text/plain", "busy"), (200, "application/json", '{"id": "r9"}'))
    asked.clear()
    with pytest.raises(OutcomeUnknown, match="may or may not"):
        make(scripted, max_retries=3).create_record(
            "object_1", {"field_1": "x"}, resend=lambda exc: bool(asked.append(exc)))
    assert len(scripted.seen) == 1 and len(asked) == 1


def test_resend_is_bounded_by_max_retries(scripted: Scripted) -> None:
    scripted.script((503, "text/plain", "busy"))
    client = make(scripted, max_retries=2)
    with pytest.raises(OutcomeUnknown):
        client.create_record("object_1", {"field_1": "x"}, resend=lambda exc: True)
    assert len(scripted.seen) == 3 and client.retry_count == 2


def test_get_bytes_paced_retried_counted_and_keyless(scripted: Scripted) -> None:
    data = bytes(range(256)) * 4
    scripted.script((503, "text/plain", "busy"), (200, "application/octet-stream", data))
    client = make(scripted, max_retries=2)
    assert client.get_bytes("/assets/a.bin") == data
    assert client.get_bytes(scripted.url + "/assets/a.bin") == data
    assert [p for _m, p, _h in scripted.seen] == ["/assets/a.bin"] * 3
    assert client.request_count == 3 and client.retry_count == 1
    assert client.status_counts[503] == 1 and client.status_counts[200] == 2
    for _m, _p, headers in scripted.seen:   # an asset URL may be another host's
        assert headers.get("X-Service-Application-Id") == "app1"
        no_secret(json.dumps(headers))
    scripted.script((404, "text/plain", "no such asset"))
    with pytest.raises(NotFound, match="a.bin"):
        client.get_bytes("/assets/a.bin")
# ---- quota, throttling, Retry-After, unreachable service ---------------
def _local(svc: LocalService, **kw: Any) -> Client:
    kw.setdefault("rate_limit", 0)
    kw.setdefault("backoff", 0.01)
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, **kw)


def test_quota_is_read_from_every_answer(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.daily_quota = 40
    svc.emulation.new_quota_day()
    client = _local(svc)
    assert client.quota is None and client.quota_left() is None  # no answer yet
    client.get_page("object_3", rows_per_page=5)
    client.get_page("object_3", page=2, rows_per_page=5)
    quota = client.quota
    assert quota is not None and quota.limit == 40 and quota.remaining == 38
    assert client.quota_left() == 38
    now = dt.datetime.now(dt.timezone.utc)
    assert quota.reset_at.tzinfo is not None
    assert now < quota.reset_at <= now + dt.timedelta(days=1)
    svc.emulation.new_quota_day()  # a new day shows as a higher remaining: the latest wins
    client.get_page("object_3", rows_per_page=5)
    assert client.quota is not None and client.quota.remaining == 39


def test_spent_quota_raises_at_once_with_the_reset(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.daily_quota = 1
    svc.emulation.new_quota_day()
    client = _local(svc, max_retries=5)
    client.get_page("object_3", rows_per_page=5)
    svc.request_log.clear()
    with pytest.raises(QuotaExceeded) as info:
        client.update_record("object_3", "nope", {"field_12": "x"})
    err = info.value
    assert isinstance(err, RateLimited) and err.status == 429
    assert err.reset_at is not None and err.reset_at > dt.datetime.now(dt.timezone.utc)
    assert err.limit == 1 and err.remaining == 0
    assert "daily request quota" in str(err)
    assert svc.request_log.count() == 1 and client.retry_count == 0  # never retried


def test_quota_spent_mid_load_raises_at_once(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.daily_quota = 1000
    svc.emulation.new_quota_day()
    client = _local(svc, max_retries=5)
    svc.request_log.clear()

    def others_spend_it(page: Page) -> None:
        if page.number == 1:  # another tool spends the rest of the day meanwhile
            svc.emulation.daily_quota = svc.emulation.quota_used

    # 30 work orders in 2 pages; no verification request, so the counts are exact
    pager = Paginator(client, "object_3", rows_per_page=15, verify="none",
                      on_page=others_spend_it)
    with pytest.raises(QuotaExceeded):
        pager.records()
    path = "/v1/objects/object_3/records"
    assert svc.request_log.count(path_prefix=path, status=200) == 1
    assert svc.request_log.count(path_prefix=path, status=429) == 1  # page 2, once
    assert client.request_count == 2 and client.retry_count == 0


def test_load_the_quota_cannot_finish_is_refused_after_page_1(
        fresh_service: LocalService) -> None:
    svc = fresh_service
    client = _local(svc)
    client.schema()  # cached: the load below sends page requests only
    svc.emulation.daily_quota = svc.emulation.quota_used + 5
    svc.request_log.clear()
    # 30 records in 6 pages of 5, sorted so they page by number: page 1, then 5 more pages
    # and page 1 again to verify, but only 4 are left after page 1 (an unsorted load, or
    # one sorted ascending by the auto-increment field, pages by its ranges: its plan is
    # tests/test_live_loads.py's)
    with pytest.raises(QuotaInsufficient) as info:
        read_object(client, "object_3", rows_per_page=5, sort_field="field_24",
                    sort_order="desc", columns="keys")
    err = info.value
    assert (err.needed, err.remaining) == (6, 4)
    assert isinstance(err, QuotaExceeded) and err.status is None
    assert "needs 6 more requests" in str(err) and "only 4 are left" in str(err)
    assert svc.request_log.count(path_prefix="/v1/objects/object_3/records") == 1
    # with enough left the same load goes through
    svc.emulation.daily_quota = svc.emulation.quota_used + 7  # page 1 and 6 more
    assert len(read_object(client, "object_3", rows_per_page=5, sort_field="field_24",
                           sort_order="desc", columns="keys").main) == 30


def test_retry_after_is_honoured(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.rate_limit = 1
    svc.emulation.retry_after_s = 2
    client = _local(svc)  # unpaced: back-to-back requests meet the limit
    svc.request_log.clear()
    for _ in range(3):
        client.get_page("object_3", rows_per_page=5)
    svc.emulation.rate_limit = 0
    entries = svc.request_log.entries
    statuses = [e.status for e in entries]
    assert 429 in statuses and statuses.count(200) == 3
    # the service refuses anything inside the Retry-After window: a 200 right after each
    # refusal means the client came back only after the window
    for refused, after in zip(entries, entries[1:], strict=False):
        if refused.status == 429:
            assert after.status == 200 and after.time - refused.time >= 1.9
    assert client.retry_count == statuses.count(429)


def test_retry_after_beyond_the_bound_raises_at_once(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.rate_limit = 1
    svc.emulation.retry_after_s = 600
    client = _local(svc)
    try:
        with pytest.raises(RateLimited) as info:
            for _ in range(3):  # two of them share a second, however slow the machine
                client.get_page("object_3", rows_per_page=5)
    finally:
        svc.emulation.rate_limit = 0
        svc.emulation.retry_after_s = 0
    assert info.value.retry_after is not None and info.value.retry_after > 500
    assert not isinstance(info.value, QuotaExceeded) and client.retry_count == 0


def test_throttling_403_is_retried_like_a_429(fresh_service: LocalService) -> None:
    svc = fresh_service
    client = _local(svc)
    svc.emulation.inject("403", method="GET", times=2)
    svc.emulation.inject("403", method="POST")
    svc.request_log.clear()
    assert client.get_page("object_3", rows_per_page=5)["records"]
    rec = client.create_record("object_2", {"field_8": "after a throttling 403"})
    assert rec["id"]
    assert [e.status for e in svc.request_log.entries] == [403, 403, 200, 403, 200]
    assert svc.request_log.count(method="POST", applied=True) == 1  # created once
    assert client.retry_count == 3


def test_throttling_403_from_the_rate_limit(fresh_service: LocalService) -> None:
    svc = fresh_service
    svc.emulation.throttle_status = 403
    svc.emulation.rate_limit = 1
    client = _local(svc)
    for _ in range(4):
        client.get_page("object_3", rows_per_page=5)
    svc.emulation.rate_limit = 0
    assert client.status_counts[403] >= 1 and client.status_counts[200] == 4


def test_real_403_is_not_retried(fresh_service: LocalService) -> None:
    svc = fresh_service
    client = _local(svc, token="not-a-token", max_retries=5)
    svc.request_log.clear()
    with pytest.raises(Forbidden, match="Invalid or Expired Token"):
        client.get_page(("scene_3", "view_5"))
    assert svc.request_log.count() == 1 and client.retry_count == 0


def test_create_whose_answer_was_cut_after_the_write(fresh_service: LocalService) -> None:
    svc = fresh_service
    client = _local(svc, max_retries=5)
    before = client.get_page("object_2", rows_per_page=1)["total_records"]
    for fault in ("cut", "500-after"):
        svc.emulation.inject(fault, method="POST")
        with pytest.raises(OutcomeUnknown):
            client.create_record("object_2", {"field_8": f"created, answer lost: {fault}"})
        assert svc.request_log.count(method="POST", applied=True, fault=fault) == 1
    # the service holds both writes although the client saw no answer
    assert client.get_page("object_2", rows_per_page=1)["total_records"] == before + 2


def test_update_whose_answer_was_cut_is_sent_again(fresh_service: LocalService) -> None:
    svc = fresh_service
    client = _local(svc)
    rid = client.get_page("object_2", rows_per_page=1)["records"][0]["id"]
    svc.request_log.clear()
    svc.emulation.inject("cut", method="PUT")
    out = client.update_record("object_2", rid, {"field_8": "cut then resent"})
    assert out["field_8"] == "cut then resent"
    assert [(e.fault, e.applied) for e in svc.request_log.entries] == [("cut", True),
                                                                      (None, True)]


@pytest.mark.parametrize("kwargs,culprit", [
    ({"timeout": -1}, "timeout"), ({"timeout": 0}, "timeout"),
    ({"timeout": float("nan")}, "timeout"), ({"max_retries": -1}, "max_retries"),
    ({"max_retries": 1.5}, "max_retries"), ({"rate_limit": -1}, "rate_limit"),
    ({"rate_limit": float("inf")}, "rate_limit"), ({"backoff": -0.1}, "backoff"),
])
def test_bad_settings_refused_at_construction(kwargs: dict[str, Any], culprit: str) -> None:
    with pytest.raises(UsageError, match=culprit) as info:
        Client("app1", api_key=KEY, base_url="http://127.0.0.1:9", **kwargs)
    assert repr(kwargs[culprit]) in str(info.value)


def test_closed_port_is_service_unreachable() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    url = f"http://127.0.0.1:{port}"
    client = Client("app1", api_key=KEY, base_url=url, rate_limit=0, backoff=0.01,
                    max_retries=5)
    with pytest.raises(ServiceUnreachable) as info:
        client.get_page("object_1")
    err = info.value
    assert isinstance(err, ServiceError) and isinstance(err, ConnectionError)
    assert not isinstance(err, ServerError)
    text = str(err)
    assert url in text and "connection refused" in text
    assert text.endswith("check the base URL and the network")  # whole, not cut
    assert "tried 3 times" in text and client.request_count == 3  # bounded, not 6
    no_secret(text)


def test_public_view_load_is_held_to_the_quota(fresh_service: LocalService) -> None:
    svc = fresh_service
    client = _local(svc)
    client.schema()
    client.get_page("object_3", rows_per_page=5)  # the quota is known
    svc.emulation.daily_quota = svc.emulation.quota_used  # spent
    # every view-based call counts against the quota, with or without a token (hosted)
    with pytest.raises(QuotaExceeded):
        Paginator(client, ("scene_1", "view_1"), rows_per_page=2).records()
    with pytest.raises(QuotaExceeded):
        client.get_page("object_3", rows_per_page=5)


# ---- user tokens expire: renewal with the kept login ---------------------------------------
def _short_lived_login(svc: LocalService, client: Client, user: dict[str, Any]
                       ) -> dict[str, Any]:
    """Log in for a token that lives a moment (hosted: 48 hours); tokens issued after it,
    the renewal's, live the usual 48 hours, so a slow machine cannot expire them too."""
    svc.set_token_ttl(0.5)
    try:
        return client.login(user["email"], user["password"])
    finally:
        svc.set_token_ttl(48 * 3600.0)


def _wait_for_expiry() -> None:
    import time

    time.sleep(0.8)


def test_an_expired_token_is_renewed_by_one_login(fresh_service: LocalService) -> None:
    """A notebook left open: the token it logged in with has expired; the next view
    request logs in again with the kept e-mail and password, once, and goes on."""
    svc = fresh_service
    user = svc.users[1]
    client = _local(svc, max_retries=5)
    client.login(user["email"], user["password"])
    first = client.get_page(("scene_3", "view_5"), rows_per_page=5)
    _short_lived_login(svc, client, user)
    old = client.token
    _wait_for_expiry()
    svc.request_log.clear()
    again = client.get_page(("scene_3", "view_5"), rows_per_page=5)
    assert again["total_records"] == first["total_records"]
    assert client.token != old
    assert svc.request_log.count(method="POST", path_prefix="/v1/applications/") == 1   # one login
    assert svc.request_log.count(path_prefix="/v1/pages/", status=403) == 1
    assert svc.request_log.count() == 3 and client.retry_count == 0
    for text in (repr(client), repr(vars(client).get("user"))):
        assert user["password"] not in text and str(client.token) not in text


def test_a_renewal_refused_is_not_tried_again(fresh_service: LocalService) -> None:
    """The password changed since the login: the renewal's login is refused (401) and
    said so, once; the kept password is dropped, never sent again, never shown."""
    svc = fresh_service
    user = svc.users[1]
    client = _local(svc)
    me = _short_lived_login(svc, client, user)
    client.update_record("object_1", str(me["id"]), {"field_3": "Changed-2026!"})
    _wait_for_expiry()
    svc.request_log.clear()
    with pytest.raises(AuthenticationError, match="expired.*refused") as err:
        client.get_page(("scene_3", "view_5"), rows_per_page=5)
    assert user["password"] not in str(err.value)
    assert svc.request_log.count(method="POST", path_prefix="/v1/applications/") == 1
    with pytest.raises(Forbidden, match="token expired"):
        client.get_page(("scene_3", "view_5"), rows_per_page=5)
    assert svc.request_log.count(method="POST", path_prefix="/v1/applications/") == 1   # not again


def test_an_expired_token_without_credentials_says_how_to_renew(
        fresh_service: LocalService) -> None:
    """A token passed in (no e-mail and password kept): Forbidden says it expired, how
    long tokens last and how to renew; nothing is retried."""
    from svc_frames.testing import login

    svc = fresh_service
    svc.set_token_ttl(0.5)
    client = _local(svc, token=login(svc, 1), max_retries=5)
    _wait_for_expiry()
    svc.request_log.clear()
    with pytest.raises(Forbidden) as err:
        client.get_page(("scene_3", "view_5"), rows_per_page=5)
    text = str(err.value)
    assert "token expired" in text and "48 hours" in text and "client.login(" in text
    assert str(client.token) not in text
    assert svc.request_log.count() == 1


def test_a_profile_refusal_is_not_a_renewal(fresh_service: LocalService) -> None:
    """403 for a view the user's profile may not use: the token is fine, so no login."""
    svc = fresh_service
    tech = next(u for u in svc.users if u["email"].startswith("tech"))
    client = _local(svc)
    client.login(tech["email"], tech["password"])
    svc.request_log.clear()
    with pytest.raises(Forbidden, match="profile"):
        client.get_page(("scene_2", "view_3"), rows_per_page=5)
    assert svc.request_log.count() == 1


def test_a_write_run_through_a_view_renews_an_expired_token(
        fresh_service: LocalService) -> None:
    """write_back through a view holds the token it started with; once it expires, the
    client's renewal stands in for it, and the write goes through (guard re-read too)."""
    from svc_frames.loaders import read_view
    from svc_frames.writeback import write_back

    svc = fresh_service
    tech = next(u for u in svc.users if "profile_3" in u["profile_keys"])
    client = _local(svc)
    client.login(tech["email"], tech["password"])
    view = read_view(client, "scene_3", "view_5", progress=False, columns="keys")
    rid = view.main.index[0]
    view.main.loc[rid, "field_12"] = "written after the token expired"
    _short_lived_login(svc, client, tech)   # the token the run will start with
    _wait_for_expiry()
    svc.request_log.clear()
    report = write_back(client, view, progress=False)
    assert report.table["status"].tolist() == ["applied"], report.table
    assert svc.request_log.count(method="POST", path_prefix="/v1/applications/") == 1   # one login
    assert svc.request_log.count(method="PUT", path_prefix="/v1/pages/scene_3") == 1
    again = read_object(client, "object_3", progress=False, columns="keys")
    assert again.main.loc[rid, "field_12"] == "written after the token expired"


def test_parallel_pages_renew_an_expired_token_once(fresh_service: LocalService) -> None:
    """A load's page threads all meet the expired token: one of them logs in again, the
    others wait for it and repeat with the new token."""
    from svc_frames.loaders import read_view

    svc = fresh_service
    user = svc.users[1]
    client = _local(svc, max_workers=6)
    client.login(user["email"], user["password"])
    want = read_view(client, "scene_3", "view_5", rows_per_page=3, progress=False, columns="keys")
    _short_lived_login(svc, client, user)
    _wait_for_expiry()
    svc.request_log.clear()
    got = read_view(client, "scene_3", "view_5", rows_per_page=3, progress=False, columns="keys")
    assert got.main.index.tolist() == want.main.index.tolist() and len(want.main) > 6
    assert svc.request_log.count(method="POST", path_prefix="/v1/applications/") == 1   # one login


def test_a_request_the_pace_holds_past_its_deadline_is_not_sent() -> None:
    """At 1 request a second, a second request must wait about a second for its turn: with
    a deadline 0.2 s away it raises SendDeadlinePassed and never reaches the service;
    without one, or with time enough, it is sent."""
    with LocalService(demo=True, records=5, rate_limit=0, seed=41) as svc:
        client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url,
                        rate_limit=1)
        client.get_page("object_3", rows_per_page=1)
        svc.request_log.clear()
        with pytest.raises(SendDeadlinePassed), \
                client.send_by(client.limiter.now() + 0.2):
            client.get_page("object_3", rows_per_page=1)
        assert svc.request_log.count("GET", "/v1/objects/object_3/records") == 0
        with client.send_by(client.limiter.now() + 5):
            client.get_page("object_3", rows_per_page=1)
        client.get_page("object_3", rows_per_page=1)   # outside the block: no deadline
        assert svc.request_log.count("GET", "/v1/objects/object_3/records") == 2
