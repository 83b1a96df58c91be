"""The service's listing protocol: the query parameters of a page of records (page, rows
per page, a prepared filter query encoded, a sort field and order), checked before any
request (docs/service-interface.md §4.1, §4.2).

Usage::

    params = page_params(2, 500, sort_field="field_24", sort_order="desc")
    params = page_params(1, 1000, query)      # a Query goes out as it was prepared
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..keys import FIELD_KEY
from ..query import Filters, Query

__all__ = ["MAX_ROWS_PER_PAGE", "check_sort", "page_params"]

MAX_ROWS_PER_PAGE = 1000
"""The most records a page holds (the service's own bound)."""


def check_sort(sort_field: str | None, sort_order: str | None) -> None:
    """UsageError unless ``sort_field`` is a field key (or None) and ``sort_order`` is
    ``"asc"``, ``"desc"`` or None."""
    if sort_field is not None and not FIELD_KEY.match(str(sort_field)):
        raise UsageError(f"sort_field must look like 'field_N', got {sort_field!r}")
    if sort_order is not None and sort_order not in ("asc", "desc"):
        raise UsageError(f"sort_order must be 'asc' or 'desc', got {sort_order!r}")


def page_params(page: int = 1, rows_per_page: int = MAX_ROWS_PER_PAGE,
                filters: Filters | Query | None = None, sort_field: str | None = None,
                sort_order: str | None = None) -> dict[str, Any]:
    """The query parameters of a list request, checked before any request.

    Parameters
    ----------
    page : int, default 1
        The page number, >= 1.
    rows_per_page : int, default 1000
        Records per page, 1 to 1000.
    filters : Query, list or dict, optional
        A ``Query`` (sent as it is), or any filter form (checked and encoded without
        the application's schema: an aware time is sent in UTC, with a warning).
    sort_field : str, optional
        A field key (``field_N``) to sort by.
    sort_order : {"asc", "desc"}, optional
        The sort direction.

    Returns
    -------
    dict
        ``page``, ``rows_per_page`` and, when given, ``filters`` (encoded JSON),
        ``sort_field``, ``sort_order``.

    Raises
    ------
    UsageError
        A value out of range or a filter that is not valid, naming it.

    Examples
    --------
    >>> client.page_params(2, 500, sort_field="field_24", sort_order="desc")
    {'page': 2, 'rows_per_page': 500, 'sort_field': 'field_24', 'sort_order': 'desc'}
    """
    if not isinstance(page, int) or page < 1:
        raise UsageError(f"page must be an integer >= 1, got {page!r}")
    if (not isinstance(rows_per_page, int) or isinstance(rows_per_page, bool)
            or not 1 <= rows_per_page <= MAX_ROWS_PER_PAGE):
        raise UsageError(f"rows_per_page must be between 1 and {MAX_ROWS_PER_PAGE}, "
                         f"got {rows_per_page!r}")
    params: dict[str, Any] = {"page": page, "rows_per_page": rows_per_page}
    if filters is not None:
        # a Query goes out as it was prepared (a load's, with the application's
        # timezone); other forms are checked and encoded here without the schema
        encoded = Query.of(filters).text
        if encoded is not None:
            params["filters"] = encoded
    check_sort(sort_field, sort_order)
    if sort_field is not None:
        params["sort_field"] = sort_field
    if sort_order is not None:
        params["sort_order"] = sort_order
    return params
