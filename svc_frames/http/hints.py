"""What to fix, told with a refusal: where a refused API key came from, and an address that
answers but is not the service.

The answer-to-error mapping (``answers.Answers.error``, ``Auth.key_refused_hint``) asks
these; nothing here sends a request or reads a setting.

* A 401 to an object request means the API key (or the application id it goes with) is
  wrong. The message names where the key came from (``SVC_API_KEY``, ``--api-key``, the
  ``api_key`` argument) and the ways to give another: the user fixes the setting they made.
* The service answers its errors in plain text or JSON (docs/hosted-behaviour.md); a web
  page (HTML) in answer to an API request comes from another web server at the base URL
  (a development server on the same port, a proxy's own page), or from the right server
  at the wrong path. Either way the base URL (or the application id in it) is what to
  check, not the service's rules.

Usage::

    key_refused("SVC_API_KEY", "app_1")    # " (the API key from SVC_API_KEY ...)"
    is_web_page("text/html; charset=utf-8", b"<!doctype html>...")   # True
"""

from __future__ import annotations

__all__ = ["KEY_FROM_ARGUMENT", "KEY_FROM_ENV", "KEY_FROM_FLAG", "CHECK_BASE_URL",
           "key_refused", "is_web_page", "not_the_service"]

KEY_FROM_ARGUMENT = "the api_key argument"
KEY_FROM_ENV = "SVC_API_KEY"
KEY_FROM_FLAG = "--api-key"

_HTML_STARTS = (b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml")


def key_refused(source: str, app_id: str) -> str:
    """The hint a 401 to an object request carries: where the refused key came from.

    ``source``: ``KEY_FROM_ENV``, ``KEY_FROM_FLAG`` or ``KEY_FROM_ARGUMENT``."""
    return (f" (the API key from {source} was refused for application {app_id!r}: check "
            f"it, and that it is this application's; give the right one as SVC_API_KEY, "
            f"--api-key or Client(api_key=...))")


def is_web_page(content_type: str | None, body: bytes) -> bool:
    """Whether an answer is a web page (HTML), which the service never sends."""
    if "html" in (content_type or "").lower():
        return True
    return body[:200].lstrip().lower().startswith(_HTML_STARTS)


def not_the_service(base_url: str, status: int, page_text: str) -> str:
    """The message for a web page answered to an API request (``page_text``: the start of
    its text, tags removed)."""
    shown = f" ({page_text!r})" if page_text else ""
    return (f"{base_url} answered {status} with a web page{shown}, not as the service "
            f"answers: {CHECK_BASE_URL}")


CHECK_BASE_URL = ("check the base URL (SVC_BASE_URL, --base-url or Client(base_url=...)) "
                  "and the application id")
"""The advice a web page in answer to an API request carries."""
