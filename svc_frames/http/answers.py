"""Answers turned into values or typed errors: a body read whole, a success decoded, a
refusal screened for what the retry policy acts on (a spent daily quota, throttling, a
``Retry-After``), and every other error status raised as the error that names it.

Usage::

    answers = Answers(redact=auth.redact, max_retries=5, hold=limiter.block_for)
    status = answers.screen(resp, body, "GET", "object_3")   # may raise QuotaExceeded
    raise answers.error(resp, body, "GET", "object_3", view=False, has_token=False)
"""

from __future__ import annotations

import datetime as dt
import email.utils
import html
import http.client
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import requests
import urllib3

from ..errors import (
    AuthenticationError,
    Forbidden,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    ServerError,
    ServiceError,
    ServiceUnreachable,
    ValidationError,
)
from .body import Body, BodyBuffers, parse_json
from .hints import CHECK_BASE_URL, is_web_page, not_the_service
from .quota import quota_of

__all__ = ["Answers", "EXPIRED_HINT", "MAX_RETRY_AFTER", "read_body", "snippet"]

MAX_RETRY_AFTER = 60.0
"""Longest ``Retry-After`` (seconds) waited for in a run; a longer one raises RateLimited
at once (carrying ``retry_after``) rather than holding the caller for minutes."""

EXPIRED_HINT = (" (the user token expired (a token lasts 48 hours, two weeks with \"remember "
                "me\") or is not a token of this application: log in again with "
                "client.login(email, password) or pass a new token=; a client that logged "
                "in itself renews it on its own)")
"""Ends the Forbidden of a view request whose token the service refused (by the server's
own words), which the client renews when it holds the credentials."""

_LOGIN_HINT = (" (this view is behind a login: call client.login(email, password) "
               "or pass token=)")

_DAILY_RE = re.compile(r"daily|plan limit|quota", re.I)

_THROTTLE_RE = re.compile(r"throttl|rate limit|too many requests", re.I)

_TAG_RE = re.compile(r"<[^>]+>")


def read_body(resp: requests.Response, into: BodyBuffers | None = None) -> Body:
    """The whole body in one read (a 5 MB page in one call, not 500 chunks of 10 kB), the
    connection back to the pool; urllib3 errors become requests' (a cut-off body raises
    ChunkedEncodingError because urllib3 enforces Content-Length).

    ``into``: a successful answer of a known length, not compressed, large enough, is read
    into one of these buffers (a memoryview of it, given back by the caller once parsed)
    when one is free."""
    try:
        body: Body | None = _read_into(resp, into) if into is not None else None
        if body is None:
            body = resp.raw.read(decode_content=True)
    except urllib3.exceptions.ProtocolError as exc:
        resp.close()
        raise requests.exceptions.ChunkedEncodingError(exc) from None
    except urllib3.exceptions.DecodeError as exc:
        resp.close()
        raise requests.exceptions.ContentDecodingError(exc) from None
    except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
        resp.close()
        raise requests.exceptions.ReadTimeout(exc) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        resp.close()
        raise requests.exceptions.ConnectionError(exc) from None
    # so resp.content / resp.reason work as usual (a buffered body is the caller's alone)
    resp._content = body if isinstance(body, bytes) else b""
    resp._content_consumed = True  # type: ignore[attr-defined]
    resp.raw.release_conn()
    return body


def _read_into(resp: requests.Response, into: BodyBuffers) -> memoryview | None:
    """The body read straight from the socket into a buffer of ``into`` (None: not such
    a body, or no buffer free). urllib3's own ``readinto`` reads into new bytes and
    copies them; http.client's response, which urllib3 wraps and which counts the bytes
    left of ``Content-Length``, reads into the buffer itself."""
    raw = resp.raw
    fp = getattr(raw, "_fp", None)
    length = getattr(raw, "length_remaining", None)
    if (resp.status_code >= 400 or not isinstance(fp, http.client.HTTPResponse)
            or fp.chunked or length is None or fp.length != length
            or resp.headers.get("Content-Encoding", "identity") != "identity"):
        return None
    body = into.take(length)
    if body is None:
        return None
    got = 0
    try:
        while got < length:
            n = fp.readinto(body[got:])
            if not n:
                raise urllib3.exceptions.ProtocolError(
                    f"the body ended after {got} of {length} bytes")
            got += n
    except BaseException:
        into.give(body)
        raise
    return body


def snippet(body: bytes, n: int = 120) -> str:
    """The start of a body as one line of text (HTML reduced to its text)."""
    text = body[:2000].decode("utf-8", "replace")
    text = " ".join(html.unescape(_TAG_RE.sub(" ", text)).split())
    return text[:n]


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _parse_error_body(body: bytes) -> tuple[str, str | None]:
    """(message, field) from JSON ``{"errors": [{message, field}]}``, ``{"message"}``,
    ``{"error"}`` or plain text / HTML."""
    data = _json_or_none(body)
    if isinstance(data, dict):
        errors = data.get("errors")
        if isinstance(errors, list) and errors:
            msgs, field = [], None
            for err in errors:
                if isinstance(err, dict):
                    msgs.append(str(err.get("message") or err))
                    field = field or err.get("field")
                else:
                    msgs.append(str(err))
            return "; ".join(msgs), field
        for key in ("message", "error", "detail"):
            if isinstance(data.get(key), str):
                return data[key], data.get("field")
        return snippet(body), None
    if isinstance(data, str):
        return data, None
    return snippet(body, 300), None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from a ``Retry-After`` header (delay-seconds or an HTTP date), or None."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        seconds = (when - dt.datetime.now(dt.timezone.utc)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _names_token(message: str) -> bool:
    """A server's 403 message refusing the user token itself (``Invalid or Expired
    Token``), not the user's rights on the view nor throttling."""
    text = (message or "").lower()
    return "token" in text and "profile" not in text


def _is_throttling(message: str) -> bool:
    """A 403 whose body says it is throttling (a token or right refusal names the token
    or the view instead; docs/hosted-behaviour.md §4)."""
    return bool(_THROTTLE_RE.search(message or "")) and "token" not in message.lower()


class Answers:
    """Reads the service's answers for one client: its secrets redacted from every
    message, its retry count named in the errors that end retrying, and a
    ``Retry-After`` passed on to the pace (``hold``: seconds every thread waits). A refusal
    names what to fix (``hints.py``): ``base_url`` when a web page answered, ``key_hint()``
    (where the API key came from) when an object request was refused for its key."""

    def __init__(self, redact: Callable[[str], str], max_retries: int,
                 hold: Callable[[float], None], *, base_url: str = "",
                 key_hint: Callable[[], str] = lambda: "") -> None:
        self.redact = redact
        self.max_retries = max_retries
        self.hold = hold
        self.base_url = base_url
        self.key_hint = key_hint

    def decode_ok(self, resp: requests.Response, body: Body, method: str, what: str,
                  parse: Callable[[Body], Any] | None = None) -> Any:
        """A successful answer's body decoded (``parse``, else JSON); ServerError when it
        is not JSON."""
        if not body:
            return None
        try:
            return (parse or parse_json)(body)
        except ValueError:
            body = bytes(body[:2000])   # the start, enough to show and to tell a web page
            ctype = resp.headers.get("Content-Type", "?")
            page = f": a web page, {CHECK_BASE_URL}" if is_web_page(ctype, body) else ""
            raise ServerError(
                f"{method} {what}: the service answered {resp.status_code} with a body that is "
                f"not JSON ({ctype}): {self.redact(snippet(body))!r}{page}",
                status=resp.status_code) from None

    def message(self, resp: requests.Response, body: bytes) -> str:
        """The server's message from a JSON ``{"errors": [...]}`` / ``{"message"}`` body or
        plain text (HTML is reduced to its text)."""
        msg, _field = _parse_error_body(body)
        return self.redact(msg or resp.reason or f"HTTP {resp.status_code}")

    def screen(self, resp: requests.Response, body: bytes, method: str, what: str) -> int:
        """The status the retry policy acts on: QuotaExceeded at once for a spent daily
        quota; a throttling 403 counts as a 429 (refused before doing anything); a
        ``Retry-After`` holds every thread back that long (RateLimited at once when it is
        over ``MAX_RETRY_AFTER``)."""
        status = resp.status_code
        if status not in (403, 429, 503):
            return status
        msg, _field = _parse_error_body(body)
        if status == 429 and (_DAILY_RE.search(msg or "")
                              or resp.headers.get("X-PlanLimit-Remaining", "").strip() == "0"):
            quota = quota_of(resp.headers)
            reset = quota.reset_at if quota else None
            when = (f"until {reset.isoformat(timespec='seconds')}" if reset
                    else "until the daily reset")
            raise QuotaExceeded(
                f"{method} {what}: the daily request quota of the application is spent "
                f"({self.redact(msg or 'Daily limit exceeded')}); the service refuses every "
                f"request {when}. Nothing was applied by this request; run again after the "
                "reset", status=status, body=_json_or_none(body), reset_at=reset,
                limit=quota.limit if quota else None, remaining=0)
        if status == 403:
            if not _is_throttling(msg):
                return status  # a real refusal (token, view, right): Forbidden at once
            status = 429
        wait = _retry_after(resp.headers)
        if wait is not None:
            if wait > MAX_RETRY_AFTER:
                raise RateLimited(
                    f"{method} {what}: the service asks to wait {wait:g} s before the next "
                    f"request (Retry-After), more than the {MAX_RETRY_AFTER:g} s a run waits; "
                    "try again later", status=resp.status_code, body=_json_or_none(body),
                    retry_after=wait)
            self.hold(wait + 0.01)  # at least that long, every thread
        return status

    def error(self, resp: requests.Response, body: bytes, method: str, what: str, *,
              view: bool, has_token: bool) -> ServiceError:
        """The typed error of a refusal the retries did not overcome (``has_token``:
        whether a view request carried a user token)."""
        status = resp.status_code
        msg, field = _parse_error_body(body)
        msg = self.redact(msg or resp.reason or "")
        prefix = f"{method} {what}: "
        parsed = _json_or_none(body)
        # a web page refusing the request (a 4xx, or 501: the method is not implemented
        # there) comes from another server; a 502-504 page may be the service's proxy
        if (400 <= status < 500 or status == 501) and status not in (413, 429) \
                and not _is_throttling(msg) \
                and is_web_page(resp.headers.get("Content-Type"), body):
            page = self.redact(snippet(body, 60))
            return ServiceUnreachable(prefix + not_the_service(self.base_url, status, page),
                                      status=status)
        if status == 401:
            hint = _LOGIN_HINT if view and not has_token else ""
            if not view:
                hint = self.key_hint()
            return AuthenticationError(f"{prefix}{msg or 'not authenticated'}{hint}",
                                       status=status, body=parsed)
        if status == 403 and _is_throttling(msg):
            return RateLimited(f"{prefix}{msg} (a throttling 403; after {self.max_retries} "
                               "retries)", status=status, body=parsed,
                               retry_after=_retry_after(resp.headers))
        if status == 403:
            if view and not has_token:
                hint = _LOGIN_HINT
            elif view and _names_token(msg):
                hint = EXPIRED_HINT
            elif view:
                hint = " (the user token is invalid or expired, or the user may not use " \
                       "this view: log in again with client.login(email, password))"
            else:
                hint = ""
            return Forbidden(f"{prefix}{msg or 'forbidden'}{hint}", status=status, body=parsed)
        if status == 404:
            return NotFound(f"{prefix}not found: {what} ({msg or 'unknown'})", status=status,
                            body=parsed)
        if status == 400:
            return ValidationError(f"{prefix}{msg or 'refused'}", status=status, field=field,
                                   body=parsed)
        if status == 413:
            return PayloadTooLarge(f"{prefix}{msg or 'too large'}", status=status, body=parsed)
        if status == 429:
            return RateLimited(f"{prefix}{msg or 'rate limit exceeded'} (after "
                               f"{self.max_retries} retries)", status=status, body=parsed,
                               retry_after=_retry_after(resp.headers))
        if status >= 500:
            return ServerError(f"{prefix}HTTP {status}: {msg}", status=status, body=parsed)
        return ServiceError(f"{prefix}HTTP {status}: {msg}", status=status, field=field,
                            body=parsed)
