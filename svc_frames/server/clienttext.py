"""Text a client sends, checked as the JSON parser checks a body: a lone UTF-16 surrogate
(``"\\ud800"`` parses from JSON but is not text) or bytes that are not UTF-8 are refused
with 400 naming where they are, wherever the service reads text (bodies, the ``filters``
parameter, every query parameter and the path), so none reaches SQLite or an answer.

Usage::

    check_text(json.loads(body), "")          # a body: names the field
    check_text(json.loads(filters), "filters")  # a parameter: names it
    check_url_text(scope["raw_path"], scope["query_string"])
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import unquote_to_bytes

from .apierror import ApiError


def has_surrogate(text: str) -> bool:
    """Whether a string holds a code point UTF-8 cannot carry (a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_text(value: Any, where: str, *, numbers: bool = True) -> None:
    """400 naming the place of the first infinite number (unless ``numbers`` is False:
    the caller names them better), or string or key with a lone surrogate, in parsed JSON
    (``where``: "" for a body, whose top keys are fields, or the parameter's name)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            if has_surrogate(item):
                raise ApiError.invalid(f"{at or 'the body'}: a string holds a lone UTF-16 "
                                       "surrogate, which is not text", _field_of(at))
        elif isinstance(item, float) and numbers:
            if not math.isfinite(item):
                raise ApiError.invalid(f"{at}: {item} is not a finite number", _field_of(at))
        elif isinstance(item, dict):
            for k, v in item.items():
                key = f"{at}.{k}" if at else k
                if has_surrogate(k):
                    raise ApiError.invalid(f"{at + ': ' if at else ''}the key {ascii(k)} holds "
                                           "a lone UTF-16 surrogate, which is not text",
                                           _field_of(at))
                stack.append((v, key))
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(item))


def _field_of(where: str) -> str | None:
    return re.split(r"[.\[]", where, maxsplit=1)[0] or None


def check_url_text(raw_path: bytes, query: bytes) -> None:
    """400 naming the query parameter (or the path) whose percent-decoded bytes are not
    UTF-8 (the HTTP layer would replace them with U+FFFD and go on with other text than
    the client sent)."""
    if not _utf8(unquote_to_bytes(raw_path)):
        raise ApiError.invalid("the path is not UTF-8 text once percent-decoded")
    for pair in query.split(b"&"):
        name, _, value = pair.partition(b"=")
        name_b = unquote_to_bytes(name.replace(b"+", b" "))
        if not _utf8(name_b):
            raise ApiError.invalid("a query parameter's name is not UTF-8 text once "
                                   "percent-decoded")
        if not _utf8(unquote_to_bytes(value.replace(b"+", b" "))):
            label = name_b.decode()
            raise ApiError.invalid(f"the query parameter {label!r} is not UTF-8 text once "
                                   "percent-decoded", label)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
