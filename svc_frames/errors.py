"""One exception hierarchy for the toolkit and the local service's client-facing errors.

Every error svc_frames raises on purpose is a ``SvcError``: ``ServiceError`` and its
subclasses for what the service answered (or did not), ``UsageError`` and its subclasses
for bad input found before any request (nothing was sent), ``ConsistencyError`` and
``ConflictError`` for records that moved. Each keeps ``message``, ``status`` (the HTTP
status, when one came), ``field`` (the field at fault, when known) and ``body``. Warnings
are ``SvcWarning``: the call went on, but look at this.

Usage::

    try:
        read_object(client, "object_9")
    except NotFound as exc:
        print(exc.message)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO


class SvcError(Exception):
    """Base of every error svc_frames raises on purpose."""

    def __init__(self, message: str, *, status: int | None = None, field: str | None = None,
                 body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field
        self.body = body

    def __str__(self) -> str:
        return self.message


# --- errors answered by the service -------------------------------------------------------
class ServiceError(SvcError):
    """The service answered an error status; `status` and the server's `message` are kept."""


class AuthenticationError(ServiceError, PermissionError):
    """401: wrong or missing API key, application id, or login credentials."""


class Forbidden(ServiceError, PermissionError):
    """403: invalid or expired user token, or a profile that may not use the view."""


class NotFound(ServiceError, KeyError):
    """404: unknown object, view, record or asset."""

    def __str__(self) -> str:  # KeyError would repr-quote the message
        return self.message


class ValidationError(ServiceError, ValueError):
    """400: the service refused a value or a request; `field` names the field when known."""


class PayloadTooLarge(ServiceError, ValueError):
    """413: an upload over the service's size limit."""


class RateLimited(ServiceError):
    """Raised on a 429 (or a throttling 403) still refused after the retries: too many requests.

    ``retry_after``: the seconds the service asked to wait (``Retry-After``), if any.
    """

    def __init__(self, message: str, *, status: int | None = None, body: Any = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after


class QuotaExceeded(RateLimited):
    """Raised on a 429 ``Daily limit exceeded``: the application's daily request quota is spent.

    It is spent until ``reset_at`` (an aware datetime, None when the service did not say).
    Never retried in-run: nothing can succeed before the reset. The refusal itself applied
    nothing; ``maybe_applied``: an earlier try of the same request (retried) went
    unanswered or got a 5xx, so that one may have been applied.
    """

    def __init__(self, message: str, *, status: int | None = 429, body: Any = None,
                 reset_at: dt.datetime | None = None, limit: int | None = None,
                 remaining: int | None = None, maybe_applied: bool = False) -> None:
        super().__init__(message, status=status, body=body)
        self.reset_at = reset_at
        self.limit = limit
        self.remaining = remaining
        self.maybe_applied = maybe_applied


class QuotaInsufficient(QuotaExceeded):
    """Raised before sending when a run needs more requests than the daily quota has left.

    It needs ``needed`` more requests, but only ``remaining`` are left (until
    ``reset_at``). Nothing more was sent; ``status`` is None (no refusal came).
    """

    def __init__(self, message: str, *, needed: int, remaining: int,
                 reset_at: dt.datetime | None = None, limit: int | None = None) -> None:
        super().__init__(message, status=None, reset_at=reset_at, limit=limit,
                         remaining=remaining)
        self.needed = needed


class ServiceUnreachable(ServiceError, ConnectionError):
    """Raised when no connection to the service can be made (refused, unknown host, timeout).

    Nothing reached the service; the message names the base URL.
    """


class ServerError(ServiceError):
    """5xx, a dropped connection, or a body that is not what the interface promises."""


class OutcomeUnknown(ServerError):
    """A non-idempotent request (a create) may or may not have been applied."""


# --- errors found before any request --------------------------------------------------------
class UsageError(SvcError, ValueError):
    """Bad input found before the first request; nothing was sent."""


class ConfigurationError(UsageError):
    """Missing or contradictory settings (base URL, application id, key, token)."""


class InvalidValue(UsageError):
    """A value does not fit its field kind. `field` names the field (and `column` the column)."""

    def __init__(self, message: str, *, field: str | None = None, column: str | None = None,
                 record_id: str | None = None) -> None:
        super().__init__(message, field=field)
        self.column = column
        self.record_id = record_id


class ReadOnlyField(InvalidValue):
    """An edit to a kind the service computes (equation, sums, auto increment, formula text)."""


class SchemaError(UsageError):
    """Raised when an application document (the local service's definition) is not usable.

    The message names the object, field, scene or view at fault.
    """


class ConsistencyError(SvcError):
    """Records moved while paging in a way that could not be repaired by re-fetching."""


class ConflictError(SvcError):
    """write_back(on_conflict="raise"): a record changed on the server since it was loaded.

    ``conflicts``: the clashing fields (a DataFrame). ``report``: None when nothing was
    written; else the run's Report (a record edited on the server after the check before
    the first write was found once some writes had gone: those stand, the rest was not
    sent)."""

    def __init__(self, message: str, conflicts: Any = None, report: Any = None) -> None:
        super().__init__(message)
        self.conflicts = conflicts
        self.report = report


# --- signals between layers, caught inside the package ---------------------------------------
class DisplayValuesNeeded(SvcError, ValueError):
    """Raised inside the loader when a raw page needs its display values; never reaches a user.

    A ``format=raw`` page held a value that only its display value explains: the loader
    fetches that page again with both.
    """


class SendDeadlinePassed(SvcError):
    """Raised inside write_back when the pace held a write past its send-by time.

    The live guard's window after the record's re-read had passed when the write's turn
    in the pace came, so nothing was sent: the record is re-read and written again, or
    ends ``not_applied``. Never reaches a user.
    """


# --- warnings -------------------------------------------------------------------------------
class SvcWarning(Warning):
    """Base of every warning svc_frames gives: the call went on, but look at this."""


class FilterWarning(SvcWarning, UserWarning):
    """Given for a filter that may not do what it seems to; the load goes on.

    A choice the field does not list, an ISO date converted to the hosted format, a time
    the hosted service may ignore, an aware time put in UTC for want of the application's
    timezone. (An operator or a value the field's kind does not take is a UsageError.)
    """


class PaceWarning(SvcWarning, UserWarning):
    """Given when the pace cannot be shared with other processes: this process paces on its own.

    No ``fcntl``, or a pace directory that cannot be written.
    """


class PrecisionWarning(SvcWarning, UserWarning):
    """Given when a value the service holds cannot be held exactly by its frame column.

    For example an integer past 2**53 in a float column, or a wall time the application's
    timezone skips (held as the first valid instant; a load warns once, naming the columns
    and records).
    """


class NameWarning(SvcWarning, UserWarning):
    """Given when names from the application clash once normalised (columns, tables, files).

    The names svc_frames gave instead are listed.
    """


def warn_user(message: str, category: type[Warning]) -> None:
    """Warn at the first caller outside svc_frames (the user's line).

    ``warnings.warn`` with the stack level found by walking out of svc_frames' own frames,
    however deep the call that warns.

    Parameters
    ----------
    message : str
        The warning's text.
    category : type of Warning
        Its class (a :class:`SvcWarning` subclass for svc_frames' own warnings).

    Returns
    -------
    None

    Raises
    ------
    Warning
        ``category``, when the warnings filter turns it into an error.

    Examples
    --------
    >>> import warnings
    >>> from svc_frames.errors import NameWarning, warn_user
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_user("a name changed", NameWarning)
    >>> seen[0].category.__name__, str(seen[0].message)
    ('NameWarning', 'a name changed')
    """
    frame, level = inspect.currentframe(), 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith(
            "svc_frames"):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)



@contextlib.contextmanager
def warnings_as_lines(prog: str) -> Iterator[None]:
    """Inside: each warning shown as one line, ``prog: Category: message``, on stderr.

    For the command line and the demo, whose user wrote no Python line a warning could
    point at: the default display adds the file, line number and source line of
    ``svc-frames``' entry point. Which warnings show is left to the filters.

    Parameters
    ----------
    prog : str
        The program's name, the first word of each line.

    Yields
    ------
    None

    Examples
    --------
    >>> import contextlib, io
    >>> err = io.StringIO()
    >>> with contextlib.redirect_stderr(err), warnings_as_lines("svc-frames"):
    ...     warnings.warn("two names changed", NameWarning)
    >>> err.getvalue()
    'svc-frames: NameWarning: two names changed\\n'
    """
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        out = file if file is not None else sys.stderr
        with contextlib.suppress(OSError, ValueError):  # a closed stderr: nothing to show on
            out.write(f"{prog}: {category.__name__}: {message}\n")

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield

# The local service's own ``server.apierror.ApiError`` is not under SvcError on purpose: it
# is an HTTP answer in the making, turned into a response before it leaves the server, and
# a client meets it only as the ServiceError subclass its status maps to.

__all__ = [
    "SvcError",
    "ServiceError", "AuthenticationError", "Forbidden", "NotFound", "ValidationError",
    "PayloadTooLarge", "RateLimited", "QuotaExceeded", "QuotaInsufficient", "ServerError",
    "OutcomeUnknown", "ServiceUnreachable",
    "UsageError", "ConfigurationError", "InvalidValue", "ReadOnlyField", "SchemaError",
    "ConsistencyError", "ConflictError", "DisplayValuesNeeded", "SendDeadlinePassed",
    "SvcWarning", "FilterWarning", "PaceWarning", "PrecisionWarning", "NameWarning",
    "warn_user",
]
