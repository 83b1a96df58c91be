"""Files and images in write-back: what an asset column asks to write (an asset id, a
clear, or a local file to upload), one asset per placement (docs/service-interface.md
§2.5), and the uploads done just before the write that places them.

Usage::

    placed = placed_assets(base, layout)        # asset id -> (record id, field key)
    plan_asset_value({"field_12": "a.pdf"}, {}, field, "new:0", placed)  # PendingUpload
    body = resolve_uploads(run, rid, payload)   # pending uploads -> asset ids
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from ..assets import AssetKind, PendingUpload, check_record_data, pending, upload
from ..errors import InvalidValue, OutcomeUnknown, ServerError
from ..frames import Frames
from ..kinds import is_empty_cell
from ..kinds.base import FieldSpec
from .journal import journal_key
from .plan import ColumnMap, Plan
from .state import RunState

__all__ = ["UNCHANGED", "placed_assets", "plan_asset_value", "check_upload_files",
           "resolve_uploads"]

# Asset ids of the hosted service are 24 hex digits (records.json); a string of that shape
# in a file column is an asset id, anything else is taken as a local path to upload.
_ASSET_ID_RE = re.compile(r"[0-9a-fA-F]{24}\Z")


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


#: plan_asset_value's answer when an asset column needs no write.
UNCHANGED: Any = _Unchanged()


def placed_assets(base: Frames | None, layout: ColumnMap) -> dict[str, tuple[str, str]]:
    """asset id -> (record id, field key) for every uploaded asset placed in ``base``."""
    out: dict[str, tuple[str, str]] = {}
    if base is None:
        return out
    main = base.main
    for key in layout.fields:
        if not layout.is_upload(key):
            continue
        col = next((c for c in layout.field_cols[key] if layout.col_key[c] == key), None)
        if col is None or col not in main.columns:
            continue
        s = main[col]
        s = s[s.notna()]
        for rid, aid in zip(s.index.tolist(), s.tolist(), strict=False):
            if isinstance(aid, str) and aid:
                out[aid] = (str(rid), key)
    return out


def plan_asset_value(new: Mapping[str, Any], old: Mapping[str, Any], field: FieldSpec,
                     record_id: str, placed: Mapping[str, tuple[str, str]]) -> Any:
    """What a file/image field's columns ask to write: UNCHANGED, None (clear the field), an
    asset id, or a PendingUpload. ``new``/``old`` are keyed by keys-mode column names.

    Refuses (InvalidValue, before any request) a missing local file and an asset id already
    placed in another record or field (one asset, one placement: upload again instead)."""
    key = field.key
    value = new.get(key)
    before = old.get(key)
    kind: AssetKind = "image" if field.kind == "image" else "file"
    if is_empty_cell(value):
        return UNCHANGED if is_empty_cell(before) else None
    name = new.get(f"{key}.filename")
    was = old.get(f"{key}.filename")    # NA when the record held no file
    filename = name if isinstance(name, str) and name and (
        is_empty_cell(was) or name != was) else None
    if isinstance(value, (bytes, bytearray, memoryview, os.PathLike)) or hasattr(value, "read"):
        return pending(value, kind, filename, field_key=key, record_id=record_id)
    if not isinstance(value, str):
        raise InvalidValue(f"record {record_id}: {key} ({field.kind}) needs an asset id, a path "
                           f"or bytes, got {type(value).__name__}", field=key, column=key,
                           record_id=record_id)
    if isinstance(before, str) and value == before:  # before may be NA (empty cell)
        return UNCHANGED  # only derived columns (file name, url, size) were touched
    owner = placed.get(value)
    if owner is not None or _ASSET_ID_RE.match(value):
        if owner is not None and owner != (record_id, key):
            raise InvalidValue(
                f"record {record_id}: asset {value} is already placed in record {owner[0]} "
                f"field {owner[1]}; one upload may be placed in one field only "
                "(docs/service-interface.md §2.5): put the file's path in the cell to upload "
                "it again",
                field=key, column=key, record_id=record_id)
        return value
    return pending(value, kind, filename, field_key=key, record_id=record_id)


def check_upload_files(plan: Plan) -> None:
    """Before the first request: files may have vanished since diff(), and a record that
    uploads must be one the service will take (its fields and values, by the kind codecs'
    rules), or its uploaded assets would be left placed nowhere."""
    fields = {f.key: f for f in plan.source.fields}
    for rid, payload in plan.payloads.items():
        pending_keys = [k for k, v in payload.items() if isinstance(v, PendingUpload)]
        for key in pending_keys:
            payload[key].check(key, rid)
        if pending_keys:
            check_record_data(fields, payload, what=f"record {rid}", skip=pending_keys)


def resolve_uploads(run: RunState, rid: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with each pending upload replaced by its asset id, uploading just
    before the write that places it (or reusing an upload the journal remembers)."""
    jr = run.jr
    out = dict(payload)
    for key, val in payload.items():
        if not isinstance(val, PendingUpload):
            continue
        ukey = journal_key("upload", run.keys[rid], key, val.digest)
        prior = jr.uploads.get(ukey) if jr else None
        if prior is not None:
            out[key] = prior["asset_id"]   # uploaded, never placed: reuse it
            continue

        def again(_exc: OutcomeUnknown) -> bool:
            # an upload that may have landed only leaves an unplaced asset behind:
            # sending it again cannot duplicate a placement
            run.counter.add("uploads")
            return True

        run.counter.add("uploads")
        try:
            asset = upload(run.client, val, val.kind, resend=again)
        except ServerError as exc:
            raise ServerError(f"upload of {val} for {key} failed, the record was not "
                              f"written: {exc.message}") from None
        if jr:
            jr.write("upload", ukey, asset_id=asset["id"], record_id=rid, field=key)
        out[key] = asset["id"]
    return out
