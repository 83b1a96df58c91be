"""cells: one field's cells compared (loaded against edited) and encoded for a write, the
record and column named when a value is refused."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvalidValue
from ..kinds import unencodable_text, values_equal
from .plan import ColumnMap

# Kinds whose acceptance needs the service (connected ids, uploaded assets): not
# pre-checked with the codec's normalize.
HOOKED_KINDS = ("connection", "file", "image")


def changed_positions(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Positions where base ``a`` and edited ``b`` (positionally aligned) differ.

    Vectorized when both columns share a non-object dtype; candidates are then confirmed
    with ``values_equal`` (NA vs "", NaN vs None, 1 vs 1.0 are not changes)."""
    n = len(a)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    if a.dtype == b.dtype and a.dtype != object:
        try:
            res = a.array == b.array
            if isinstance(res, pd.api.extensions.ExtensionArray):
                eq = res.to_numpy(dtype=bool, na_value=False)
            else:
                eq = np.asarray(res, dtype=bool)
            a_na, b_na = a.isna().to_numpy(), b.isna().to_numpy()
            diff_mask = ~eq & ~(a_na & b_na)
            # same dtype, both non-NA and unequal: a change. Only NA against a value needs
            # the kind's rule ("" on an empty text field is not a change)
            sure = np.flatnonzero(diff_mask & ~a_na & ~b_na)
            maybe = np.flatnonzero(diff_mask & (a_na ^ b_na))
            if len(maybe) == 0:
                return sure
            av, bv = a.iloc[maybe].tolist(), b.iloc[maybe].tolist()
            extra = [i for i, x, y in zip(maybe, av, bv, strict=True) if not values_equal(x, y)]
            return np.sort(np.concatenate([sure, np.asarray(extra, dtype=np.int64)]))
        except (TypeError, ValueError):
            cand = np.arange(n)
    else:
        cand = np.arange(n)
    if len(cand) == 0:
        return cand
    av = a.iloc[cand].tolist() if len(cand) < n else a.tolist()
    bv = b.iloc[cand].tolist() if len(cand) < n else b.tolist()
    keep = [i for i, x, y in zip(cand, av, bv, strict=False) if not (x is y or values_equal(x, y))]
    return np.asarray(keep, dtype=np.int64)


def encode_field(layout: ColumnMap, key: str, values: dict[str, Any], rid: str,
                 col_names: Mapping[str, str]) -> Any:
    """Encode one field of one record, re-raising with the record id and column named."""
    f = layout.fields[key]
    codec = layout.codecs[key]
    for k, v in values.items():
        bad = unencodable_text(v)
        if bad is not None:
            # no request can carry it (JSON bodies and URLs are UTF-8): said here, with the
            # culprit, rather than as a bare UnicodeEncodeError from deep in a codec
            col = col_names.get(k, k)
            raise InvalidValue(f"record {rid}: column {col!r} holds text that cannot be "
                               f"encoded as UTF-8 ({bad!r:.60}: a lone surrogate, e.g. from "
                               "a badly decoded file); fix the text (nothing was sent)",
                               field=key, column=col, record_id=rid)
    try:
        out = codec.encode(values, f, layout.ctx)
        if f.kind not in HOOKED_KINDS:
            # the service's own acceptance rule (same codec), checked before any request:
            # e.g. a latitude without its longitude
            codec.normalize(out, f, None)
        return out
    except InvalidValue as exc:
        exc.record_id = exc.record_id or rid
        exc.field = exc.field or key
        said_by_key = f"{key} ({f.kind}): "
        named = layout.names.get(key, key)
        if named != key and exc.message.startswith(said_by_key):
            # frames named by label: the field as they name it, its key beside it
            exc.message = f"{named!r} ({key}, {f.kind}): {exc.message[len(said_by_key):]}"
            exc.args = (exc.message,)
        if exc.column is None and len(values) == 1:
            exc.column = col_names.get(next(iter(values)), next(iter(values)))
        if rid not in exc.message:
            exc.message = f"record {rid}: {exc.message}"
            exc.args = (exc.message,)
        raise


def shown_cell(v: Any) -> Any:
    """A value as shown in Plan.changes (NA for empties, paths as text)."""
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    return v

