"""The options every load and export settles before its first request: how columns are
named (``Columns``, ``check_columns``), the timezone the caller asked for
(``user_timezone``), and a load's options as one frozen object (``LoadOptions``) with the
query its pages send (``prepare_listing``).

Usage: ``check_columns("labels"); tz = user_timezone("America/Chicago")``
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

from ..errors import UsageError
from ..filters import prepare_query
from ..kinds import resolve_timezone
from ..query import Filters, Query, needs_schema, validate_filters
from ..records.listing import MAX_ROWS_PER_PAGE, page_params
from .page import Verify

if TYPE_CHECKING:
    from ..keys import Target
    from ..records import Client

Columns = Literal["keys", "labels"]
"""How frame columns are named: by field key (``field_N``, the default) or field label."""


def check_columns(columns: str) -> None:
    """Refuse a ``columns=`` other than "keys" or "labels" (before any request).

    Usage: ``check_columns(columns)``"""
    if columns not in ("keys", "labels"):
        raise UsageError(f"columns must be 'keys' or 'labels', got {columns!r}")


def check_paging(limit: object, verify: object) -> None:
    """Refuse a ``limit`` that is not an integer >= 0 (or None) and a ``verify`` other
    than "first", "full" or "none" (before any request; every Paginator asks too).

    Usage: ``check_paging(limit, verify)``"""
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool)
                              or limit < 0):
        raise UsageError(f"limit must be a non-negative integer, got {limit!r}")
    if verify not in ("first", "full", "none"):
        raise UsageError(f"verify must be 'first', 'full' or 'none', got {verify!r}")


def user_timezone(timezone: str | ZoneInfo | None) -> ZoneInfo | None:
    """A user-given timezone (IANA or the service's display name), checked before paging.

    Usage: ``user_timezone("America/Chicago")``"""
    if timezone is None or isinstance(timezone, ZoneInfo):
        return timezone
    return resolve_timezone(timezone)


@dataclass(frozen=True)
class LoadOptions:
    """What a load was asked for, checked once before any request and passed down whole
    (``read_object`` / ``read_view`` -> ``load`` -> ``Paginator.of``).

    ``LoadOptions.of`` checks what needs no request; ``prepared`` adds what needs the
    schema (the filters as the ``Query`` every page request sends: dates in the
    application's timezone, labels and kinds checked). A new option is a field here, its
    check in ``of`` (or, when it needs the schema, in ``prepared``), and its use where the
    object arrives: no signature in between changes.

    Usage::

        opts = LoadOptions.of(filters=Field("Status") == "Open", limit=10, columns="keys")
        opts = opts.prepared(client, "object_3")     # opts.query: the bytes pages send
    """

    filters: Filters | Query | None = None
    sort_field: str | None = None
    sort_order: str | None = None
    limit: int | None = None
    columns: Columns = "keys"
    timezone: ZoneInfo | None = None
    progress: bool | None = None
    rows_per_page: int = MAX_ROWS_PER_PAGE
    verify: Verify = "first"
    raw_pages: bool = True
    processes: int | None = None
    max_workers: int | None = None
    query: Query | None = None
    """The filters prepared against the schema (``prepared``); None before."""

    @classmethod
    def of(cls, *, filters: Filters | Query | None = None, sort_field: str | None = None,
           sort_order: str | None = None, limit: int | None = None,
           columns: Columns = "keys", timezone: str | ZoneInfo | None = None,
           progress: bool | None = None, rows_per_page: int = MAX_ROWS_PER_PAGE,
           verify: Verify = "first", raw_pages: bool = True, processes: int | None = None,
           max_workers: int | None = None) -> LoadOptions:
        """The options checked (UsageError naming the first bad one), before any request."""
        check_columns(columns)
        if processes is not None and (not isinstance(processes, int) or processes < 0):
            raise UsageError(f"processes must be a non-negative integer, got {processes!r}")
        check_paging(limit, verify)
        page_params(1, rows_per_page, None, sort_field, sort_order)
        return cls(filters=filters if isinstance(filters, Query) else validate_filters(filters),
                   sort_field=sort_field, sort_order=sort_order, limit=limit,
                   columns=columns, timezone=user_timezone(timezone), progress=progress,
                   rows_per_page=rows_per_page, verify=verify, raw_pages=raw_pages,
                   processes=processes, max_workers=max_workers)

    def prepared(self, client: Client, target: Target) -> LoadOptions:
        """These options with ``query``: the filters as every page request sends them
        (checked against the schema, read once per client, when a rule needs it)."""
        if self.query is not None:
            return self
        return replace(self, query=prepare_listing(client, target, self.filters,
                                                   self.timezone))


def prepare_listing(client: Client, target: Target, filters: Filters | Query | None,
                    timezone: ZoneInfo | None) -> Query:
    """The query a listing's pages send: a Query as it is (prepared already: a refresh, a
    cache), other filters checked against the schema when a rule needs it, their dates in
    the application's timezone (``timezone``, else the schema's).

    Usage: ``query = prepare_listing(client, "object_3", Field("Status") == "Open", None)``"""
    if isinstance(filters, Query):
        return filters
    checked = validate_filters(filters)
    if not needs_schema(checked):
        return Query.of(checked)
    schema = client.schema()
    # labels and unknown keys are looked up among the target's own fields first
    own, where = schema.target_fields(target)
    return prepare_query(checked, schema.all_fields(), timezone or schema.timezone, own=own,
                         where=where)
