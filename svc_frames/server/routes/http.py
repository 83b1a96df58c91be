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
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from ..apierror import ApiError
from ..render import dumps, format_record
from ..state import ServiceState
from ..store import BASE_URL_PLACEHOLDER

MAX_ROWS = 1000


def state_of(request: Request) -> ServiceState:
    """The service state the application was built with (``build_app``)."""
    state: ServiceState = request.app.state.service
    return state


async def read_json(request: Request) -> dict[str, Any]:
    """The request body as a JSON object (400 when malformed or not an object)."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ApiError.invalid(f"the body is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiError.invalid("the body must be a JSON object of field keys and values")
    return data


def parse_paging(page: str | None, rows: str | None, default_rows: int = 25) -> tuple[int, int]:
    """(page, rows_per_page) from query strings; 400 naming the bad one."""
    try:
        p = int(page) if page not in (None, "") else 1
    except ValueError as exc:
        raise ApiError.invalid(f"page must be an integer, not {page!r}") from exc
    try:
        r = int(rows) if rows not in (None, "") else default_rows
    except ValueError as exc:
        raise ApiError.invalid(f"rows_per_page must be an integer, not {rows!r}") from exc
    if p < 1:
        raise ApiError.invalid(f"page must be at least 1, not {p}")
    if r < 1:
        raise ApiError.invalid(f"rows_per_page must be at least 1, not {r}")
    if r > MAX_ROWS:
        raise ApiError.invalid(f"rows_per_page must be at most {MAX_ROWS}, not {r}")
    if p > 10_000_000:
        raise ApiError.invalid(f"page {p} is out of range")
    return p, r


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
    """The base URL the client used (asset URLs are answered with it)."""
    return str(request.base_url).rstrip("/")


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
