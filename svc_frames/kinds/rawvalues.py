"""Nested raw values (dates, timers, assets, signatures, connected records) as msgspec
structs holding only the members their codecs read.

The raw-page parser (``read/rawpages.py``) builds record structs whose slots take these
types (``VALUE_TYPES``, by field kind); the codecs read them like dicts (``value.get``).
A value that does not fit its struct makes the whole page fall back to plain dicts, which
the codecs' general paths read member by member.

Records of such a page are ``RawRecord`` structs (one slot per field, read like a dict);
``column_getter`` reads several of their slots at C speed (frames.py builds columns so).

Usage: ``VALUE_TYPES["date_time"]``; ``value.get("unix_timestamp")``
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

import msgspec

if TYPE_CHECKING:  # kinds.dates and kinds.timer import this module: no kinds at run time
    pass


class RawValue(msgspec.Struct, gc=False):
    """A nested raw value parsed into the members its codec reads, read like a dict
    (``value.get("url")``); the members the codec never reads are skipped unparsed."""

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


class DateEnd(RawValue, gc=False):
    """A raw date object reduced to ``unix_timestamp``, the application's wall clock in
    ms: the one member the date codecs read when it is an int. The service also sends
    ``date``, ``date_formatted``, ``hours``, ``minutes``, ``am_pm``, ``iso_timestamp``,
    ``timestamp`` and ``time``; skipping them unread is most of the saving on a date. A date
    without an int ``unix_timestamp`` does not fit, and its page is parsed as plain dicts
    (which the codecs' general paths read member by member)."""

    unix_timestamp: int

    def as_dict(self) -> dict[str, Any]:
        """The members read, as the dict the codecs' general paths take."""
        return {"unix_timestamp": self.unix_timestamp}


class DateValue(DateEnd, gc=False):
    """A date_time raw value; ``to`` holds a range's end."""

    to: Union[DateEnd, str, None] = None  # noqa: UP007 (msgspec reads the annotation)

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        if isinstance(self.to, DateEnd):
            out["to"] = self.to.as_dict()
        return out


class TimerSpan(msgspec.Struct, gc=False):
    start: Union[DateEnd, str, None] = msgspec.field(default=None, name="from")  # noqa: UP007
    to: Union[DateEnd, str, None] = None  # noqa: UP007


class TimerValue(msgspec.Struct, gc=False):
    """A timer raw value: ``{total_time, times: [{from, to}]}``."""

    total_time: Any = None
    times: Union[list[TimerSpan], None] = None  # noqa: UP007

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.total_time is None else {"total_time": self.total_time}
        if self.times is not None:
            out["times"] = [{k: v.as_dict() if isinstance(v, DateEnd) else v
                             for k, v in (("from", t.start), ("to", t.to)) if v is not None}
                            for t in self.times]
        return out


class AssetValue(RawValue, gc=False):
    """A file or image raw value: the members the asset codec reads (the service also sends
    ``application_id``, ``s3``, ``type``, ``field_key``, ``public_url``, ...)."""

    id: Any = None
    filename: Any = None
    url: Any = None
    thumb_url: Any = None
    size: Any = None


class SignatureValue(RawValue, gc=False):
    """A signature raw value: its ``svg`` (the ``base30`` pen strokes are not read)."""

    svg: Any = None


class ConnectionItem(RawValue, gc=False):
    """One connected record of a connection's raw list, ``{id, identifier}``. An item
    without a text id and identifier (a name-like item, whose id is only in the display
    HTML) does not fit, and its page is parsed as plain dicts."""

    id: str
    identifier: str


VALUE_TYPES: dict[str, Any] = {
    "date_time": Union[DateValue, str, None],  # noqa: UP007 ("" or null when empty)
    "timer": Union[TimerValue, str, None],  # noqa: UP007
    "file": Union[AssetValue, str, None],  # noqa: UP007
    "image": Union[AssetValue, str, None],  # noqa: UP007 (a URL-source image: its URL)
    "signature": Union[SignatureValue, str, None],  # noqa: UP007
    "connection": Union[list[ConnectionItem], str, None],  # noqa: UP007
}


class RawRecord(msgspec.Struct, gc=False):
    """One record of a ``format=raw`` page; read like a dict (``rec["id"]``, ``rec.get``).

    ``gc=False``: parsed values never form reference cycles, so the cyclic collector need
    not track (and walk) millions of them."""

    id: str

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None


def column_getter(records: Sequence[Any], names: Sequence[str]
                  ) -> Callable[[Any], tuple[Any, ...]] | None:
    """A C-level getter of ``names`` (as a tuple) for struct records that have them all;
    None for dict records (use ``map(rec.get, names)``)."""
    if len(names) < 2 or not records or not isinstance(records[0], RawRecord):
        return None
    slots = set(type(records[0]).__struct_fields__)
    if not set(names) <= slots:
        return None
    return operator.attrgetter(*names)
