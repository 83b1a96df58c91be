"""The options every load and export settles before its first request: how columns are
named and which are loaded (``Columns``, ``check_columns``, ``naming``), the timezone the
caller asked for (``user_timezone``), and a load's options as one frozen object
(``LoadOptions``) with the query its pages send (``prepare_listing``); fields a load names by label turned into keys
once, before any record request (``field_options``, ``LoadOptions.keyed``).

Usage: ``check_columns(["Title", "Status"]); naming("keys"); tz = user_timezone("UTC")``
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal
from zoneinfo import ZoneInfo

from ..errors import UsageError
from ..keys import FIELD_KEY
from ..kinds import resolve_timezone
from ..lookup import field_key, field_keys
from ..query import Filters, FilterSet, Query, needs_schema, validate_filters
from ..query.prepare import prepare_checked
from ..records.listing import MAX_ROWS_PER_PAGE, page_params
from .page import Verify

if TYPE_CHECKING:
    from ..keys import Target
    from ..records import Client

Naming = Literal["keys", "labels"]
"""How frame columns are named: by field label (``Status``, the default) or field key."""

Columns = Naming | Sequence[str]
"""``columns=`` of a load: a naming, or the fields to load (by label or key; named by
label)."""


def check_columns(columns: object) -> None:
    """Refuse a ``columns=`` other than "keys", "labels" or a list of field names (before
    any request).

    Usage: ``check_columns(columns)``"""
    if columns in ("keys", "labels"):
        return
    if isinstance(columns, (list, tuple)) and columns and all(
            isinstance(c, str) and c.strip() for c in columns):
        seen = [c for i, c in enumerate(columns) if c in columns[:i]]
        if seen:
            raise UsageError(f"columns lists {seen[0]!r} twice")
        return
    raise UsageError("columns must be 'labels', 'keys' or a non-empty list of fields (by "
                     f"label or key), got {columns!r}")


def naming(columns: Columns) -> Naming:
    """How a ``columns=`` names the frame's columns: a list of fields names them by label.

    Usage: ``naming(["Title"])  # "labels"``"""
    return columns if isinstance(columns, str) and columns in ("keys", "labels") \
        else "labels"  # type: ignore[return-value]


def subset(columns: Columns) -> list[str] | None:
    """The fields a ``columns=`` list names (None: every field).

    Usage: ``subset(["Title", "field_27"])``"""
    return None if isinstance(columns, str) else list(columns)


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
    (``read_object`` / ``read_view`` -> ``load`` -> ``Paginator``).

    ``LoadOptions.of`` checks what needs no request; ``prepared`` adds what needs the
    schema (the filters as the ``Query`` every page request sends: dates in the
    application's timezone, labels and kinds checked). A new option is a field here, its
    check in ``of`` (or, when it needs the schema, in ``prepared``), and its use where the
    object arrives: no signature in between changes.

    Usage::

        opts = LoadOptions.of(filters=Field("Status") == "Open", limit=10, columns="keys")
        opts = opts.prepared(client, "object_3")     # opts.query: the bytes pages send
    """

    filters: FilterSet | Query | None = None
    """The filters checked (``of``: ``validate_filters``), or a Query prepared already."""
    sort_field: str | None = None
    sort_order: str | None = None
    limit: int | None = None
    columns: Columns = "labels"
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
           columns: Columns = "labels", timezone: str | ZoneInfo | None = None,
           progress: bool | None = None, rows_per_page: int = MAX_ROWS_PER_PAGE,
           verify: Verify = "first", raw_pages: bool = True, processes: int | None = None,
           max_workers: int | None = None) -> LoadOptions:
        """The options checked (UsageError naming the first bad one), before any request."""
        check_columns(columns)
        if processes is not None and (not isinstance(processes, int) or processes < 0):
            raise UsageError(f"processes must be a non-negative integer, got {processes!r}")
        check_paging(limit, verify)
        if sort_field is not None and (not isinstance(sort_field, str)
                                       or not sort_field.strip()):
            raise UsageError("a field is named by its label or its key ('field_N'), got "
                             f"{sort_field!r}")
        # a sort field by label is turned into its key by ``keyed`` (it needs the schema)
        page_params(1, rows_per_page, None,
                    sort_field if sort_field is not None and FIELD_KEY.match(sort_field)
                    else None, sort_order)
        return cls(filters=filters if isinstance(filters, Query) else validate_filters(filters),
                   sort_field=sort_field, sort_order=sort_order, limit=limit,
                   columns=columns, timezone=user_timezone(timezone), progress=progress,
                   rows_per_page=rows_per_page, verify=verify, raw_pages=raw_pages,
                   processes=processes, max_workers=max_workers)

    def keyed(self, client: Client, target: Target) -> LoadOptions:
        """These options with a ``columns`` list and ``sort_field`` named by key
        (``field_options``): keys alone cost no request, a label or a list the schema."""
        columns, sort_field, _ = field_options(client, target, self.columns,
                                               self.sort_field, None)
        if columns == self.columns and sort_field == self.sort_field:
            return self
        return replace(self, columns=columns, sort_field=sort_field)

    def prepared(self, client: Client, target: Target) -> LoadOptions:
        """These options ``keyed`` and with ``query``: the filters as every page request
        sends them (checked against the schema, read once per client, when a rule needs
        it)."""
        if self.query is not None:
            return self
        keyed = self.keyed(client, target)
        return replace(keyed, query=prepare_listing(client, target, keyed.filters,
                                                    keyed.timezone))


def field_options(client: Client, target: Target, columns: Columns, sort_field: str | None,
                  modified_field: str | None) -> tuple[Columns, str | None, str | None]:
    """``columns`` (a list of fields), ``sort_field`` and ``modified_field`` with each field
    named by label resolved to its key among the target's fields (``lookup.field_key``), once,
    before any record request: what the pager, the cache and the saved metadata keep.
    Keys alone cost no request; a label or a list costs the schema (read once per client,
    which the load reads anyway).

    Usage: ``columns, sort_field, mod = field_options(client, "object_3", ["Title"], "Due", None)``"""
    check_columns(columns)
    wanted = subset(columns)
    named = [v for v in (sort_field, modified_field) if v is not None]
    for v in named:
        if not isinstance(v, str) or not v.strip():
            raise UsageError(f"a field is named by its label or its key ('field_N'), got {v!r}")
    if wanted is None and all(FIELD_KEY.match(v) for v in named):
        return columns, sort_field, modified_field
    schema = client.schema()
    if not schema.available:
        if wanted is not None and not all(FIELD_KEY.match(w) for w in wanted):
            raise UsageError("the service does not expose its schema, so fields cannot be "
                             "named by label: name them by key ('field_N')")
        if not all(FIELD_KEY.match(v) for v in named):
            raise UsageError("the service does not expose its schema, so sort_field and "
                             "modified_field take a key ('field_N'), not a label")
        return columns, sort_field, modified_field
    fields, where = schema.target_fields(target)
    if wanted is not None:
        columns = field_keys(fields, wanted, where)
    if sort_field is not None:
        sort_field = field_key(fields, sort_field, where)
    if modified_field is not None:
        modified_field = field_key(fields, modified_field, where)
    return columns, sort_field, modified_field


def prepare_listing(client: Client, target: Target, checked: FilterSet | Query | None,
                    timezone: ZoneInfo | None) -> Query:
    """The query a listing's pages send: a Query as it is (prepared already: a refresh, a
    cache), filters checked already (``LoadOptions.of``, the Paginator: ``validate_filters``
    once) prepared against the schema when a rule needs it, their dates in the
    application's timezone (``timezone``, else the schema's), and encoded.

    Usage: ``query = prepare_listing(client, "object_3", all_of(Field("Status") == "Open"),
    None)``"""
    if isinstance(checked, Query):
        return checked
    if not needs_schema(checked):
        return Query.encode(checked)
    schema = client.schema()
    # labels and unknown keys are looked up among the target's own fields first
    own, where = schema.target_fields(target)
    return Query.encode(prepare_checked(checked, schema.all_fields(),
                                        timezone or schema.timezone, own=own, where=where))
