"""The one exception the service's layers raise to answer a client error.

Usage::

    raise ApiError.invalid("rows_per_page must be at most 1000", field=None)
    raise ApiError(401, "Invalid API key")          # plain text body
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An HTTP answer other than 200: ``status`` and a body (str -> text/plain, else JSON)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(body if isinstance(body, str) else str(body))
        self.status = status
        self.body = body

    @classmethod
    def invalid(cls, message: str, field: str | None = None) -> ApiError:
        """400 with the hosted validation shape ``{"errors": [{"message", "field"?}]}``."""
        err: dict[str, Any] = {"message": message}
        if field:
            err["field"] = field
        return cls(400, {"errors": [err]})

    @classmethod
    def errors(cls, errors: list[dict[str, Any]]) -> ApiError:
        return cls(400, {"errors": errors})

    @classmethod
    def not_found(cls, message: str) -> ApiError:
        return cls(404, {"errors": [{"message": message}]})
