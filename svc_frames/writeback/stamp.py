"""The stamp write_back sets itself: the hosted service runs record rules (such as a "Last
Modified" stamp) for form writes only, never for object-based API writes
(docs/hosted-behaviour.md "Record rules"). So that a refresh elsewhere still sees our
changes, an update or create through an object endpoint also sends the field the
schema's object-level rule stamps (``Schema.stamped_field``), set to now, unless the
edit itself sets it. A form (a view target) runs its rules on the service: nothing added.

The time is this machine's clock in the application's timezone, to the minute (what the
service keeps of a date): a clock behind the service's by more than a refresh's margin
(``incremental.STAMP_MARGIN``) would stamp before the other side's cutoff.

Usage::

    stamp = stamp_for(client, tgt, layout.ctx)     # None: no stamped field, or a view
    body = stamp.onto(body) if stamp else body
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import RateLimited
from ..kinds import codec_for
from ..kinds.base import FieldSpec, ReadContext
from ..records import Client
from .target import WriteTarget

__all__ = ["Stamp", "stamp_for"]


@dataclass(frozen=True)
class Stamp:
    """The stamped field of an object and how its value is written."""

    spec: FieldSpec
    ctx: ReadContext

    @property
    def key(self) -> str:
        return self.spec.key

    def onto(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` with the stamp set to now (unless the body sets the field itself)."""
        if self.spec.key in body:
            return dict(body)
        now = pd.Timestamp.now(tz="UTC")
        value = codec_for(self.spec).encode({self.spec.key: now}, self.spec, self.ctx)
        return {**body, self.spec.key: value}


def stamp_for(client: Client, tgt: WriteTarget, ctx: ReadContext) -> Stamp | None:
    """The stamp writes to ``tgt`` carry: None for a view (its form's rules run on the
    service), an object without a stamped field, or a schema the service does not show
    (the caller then cannot know the field; refresh asks for ``modified_field=`` too)."""
    if tgt.is_view:
        return None
    try:
        schema = client.schema()
    except RateLimited:
        return None  # the quota or the pace refused it: the writes meet the same refusal
    key = schema.stamped_field(tgt.object_key)
    spec = schema.field(tgt.object_key, key) if key else None
    return Stamp(spec, ctx) if spec is not None else None
