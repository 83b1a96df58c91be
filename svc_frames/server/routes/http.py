"""Request and response helpers shared by the route groups: the service state of a
request, JSON bodies, paging, formats, and the JSON answers (base URL filled in).

Usage::

    state = state_of(request)
    body = await read_json(request)
    page, rows = parse_paging(page, rows_per_page)
    return envelope(total, page, rows, fragments, request)
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from ..apierror import ApiError
from ..clienttext import check_text, check_url_text
from ..render import dumps, format_record
from ..state import ServiceState
from ..store import BASE_URL_PLACEHOLDER

MAX_ROWS = 1000
MAX_JSON_BODY_BYTES = 1024 * 1024  # a record write or a login; larger bodies get 413 unread


def state_of(request: Request) -> ServiceState:
    """The service state the application was built with (``build_app``)."""
    state: ServiceState = request.app.state.service
    return state


async def read_json(request: Request) -> dict[str, Any]:
    """The request body as a JSON object: 415 when declared as another media type, 413 over
    ``MAX_JSON_BODY_BYTES`` (before reading it all), 400 when malformed, not an object, or
    holding a value JSON allows but text cannot carry (``NaN``, infinities, a lone UTF-16
    surrogate), naming where. ``NaN`` is refused like the infinities, naming the field
    (``json`` parses all three, and NaN would clear a number field)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype and ctype != "application/json" and not ctype.endswith("+json"):
        raise ApiError(415, {"errors": [{"message": f"the body must be application/json, "
                                                    f"not {ctype}"}]})
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_JSON_BODY_BYTES:
        raise body_too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_JSON_BODY_BYTES:
            raise body_too_large()
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ApiError.invalid(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiError.invalid("the body must be a JSON object of field keys and values")
    check_text(data, "")
    return data


def valid_url_text(request: Request) -> None:
    """Every route's first check: a path and query parameters that are UTF-8 text once
    percent-decoded (400 naming the parameter otherwise)."""
    check_url_text(request.scope.get("raw_path") or b"", request.scope.get("query_string")
                   or b"")


def body_too_large() -> ApiError:
    """The 413 answer of a JSON body over the limit."""
    return ApiError(413, {"errors": [{"message": f"the body exceeds the limit of "
                                                 f"{MAX_JSON_BODY_BYTES} bytes"}]})


def parse_paging(page: str | None, rows: str | None, default_rows: int = 25) -> tuple[int, int]:
    """(page, rows_per_page) from query strings; 400 naming the bad one."""
    p = whole_number("page", page, 1)
    r = whole_number("rows_per_page", rows, default_rows)
    if p < 1:
        raise ApiError.invalid(f"page must be at least 1, not {p}")
    if r < 1:
        raise ApiError.invalid(f"rows_per_page must be at least 1, not {r}")
    if r > MAX_ROWS:
        raise ApiError.invalid(f"rows_per_page must be at most {MAX_ROWS}, not {r}")
    if p > 10_000_000:
        raise ApiError.invalid(f"page {p} is out of range")
    return p, r


def whole_number(name: str, text: str | None, default: int) -> int:
    """A query parameter of ASCII digits (``int()`` would also take '١', ' 1' or '1_0');
    400 naming it otherwise. Very long numbers come back huge, for the range checks."""
    if text is None or text == "":
        return default
    if not re.fullmatch(r"[0-9]+", text):
        raise ApiError.invalid(f"{name} must be a whole number in ASCII digits, "
                               f"not {text!r}", name)
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def check_format(fmt: str | None) -> str:
    """The ``format`` query parameter: both (default), raw or html; 400 otherwise."""
    f = (fmt or "both").lower()
    if f not in ("both", "raw", "html"):
        raise ApiError.invalid(f"format must be raw, html or both, not {fmt!r}")
    return f


def reformat(frag: str, fmt: str) -> str:
    """A stored ``format=both`` fragment in the asked format."""
    return frag if fmt == "both" else dumps(format_record(json.loads(frag), fmt))


def base_of(request: Request) -> str:
    """The base URL asset URLs are answered with: the service's configured one
    (``ServiceState.base_url``), else the address the socket serves on; never a request
    header (a ``Host`` the client chose would be copied into answers)."""
    configured = state_of(request).base_url
    if configured:
        return configured.rstrip("/")
    host, port = request.scope.get("server") or ("127.0.0.1", 80)
    return f"http://{host}:{port}"


def finish(text: str, request: Request) -> Response:
    """A JSON answer from ready text, the base-URL placeholder replaced."""
    if BASE_URL_PLACEHOLDER in text:
        text = text.replace(BASE_URL_PLACEHOLDER, base_of(request))
    return Response(content=text.encode(), media_type="application/json")


def envelope(total: int, page: int, rows: int, frags: list[str], request: Request) -> Response:
    """A page of records: ``{"total_pages", "current_page", "total_records", "records"}``."""
    head = (f'{{"total_pages":{math.ceil(total / rows)},"current_page":{page},'
            f'"total_records":{total},"records":[')
    return finish(head + ",".join(frags) + "]}", request)
