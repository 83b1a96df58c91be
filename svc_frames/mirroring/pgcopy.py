"""Arrow columns as PostgreSQL's binary ``COPY`` format: the rows the server stores as
they come, with no text to format on this side or to parse on the server's.

A binary ``COPY`` stream is a signature, then per row a 16-bit field count and per field
a 32-bit length (-1: NULL) and the value in the type's binary form (``*_recv``): a
``bigint`` 8 bytes big-endian, a ``double precision`` its IEEE bits, a ``timestamp`` or
``timestamptz`` (UTC) and an ``interval`` microseconds from 2000-01-01 (an interval's
days and months 0), a ``date`` days from 2000-01-01, ``text`` and ``bytea`` their bytes,
an array its dimensions, element type and elements; then a 16-bit -1. Each field is
made here as a column (numpy for the fixed widths, Arrow for the rest) and a row is the
fields joined by Arrow (``binary_join_element_wise``): no Python loop over rows or
values. The server reads a field as its column's declared type and nothing else, so the
caller sends a table only into columns it declared itself from the same Arrow types
(``pg_type``); a sub-microsecond part is cut toward zero, as the text form cuts it.

Usage::

    fields = binary_fields(data, kinds)    # None: a column has no binary form here
    for buf in copy_stream(binary_rows(fields, data.num_columns)):
        copy.write(buf)                    # COPY t (...) FROM STDIN (FORMAT binary)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SIGNATURE", "TRAILER", "binary_fields", "binary_rows", "copy_stream",
           "version_fields"]

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)   # no OIDs, no header extension
TRAILER = b"\xff\xff"
_EPOCH_US = 946_684_800_000_000                    # 2000-01-01 in Unix microseconds
_EPOCH_DAYS = 10_957
_EMPTY = pa.scalar(b"", pa.large_binary())
# element type OIDs of the arrays a list column becomes (pg_type's element types)
_OID = {"text": 25, "bigint": 20, "boolean": 16, "double precision": 701,
        "timestamp": 1114, "timestamptz": 1184, "date": 1082, "bytea": 17}


def _binary(lengths: np.ndarray, data: np.ndarray) -> pa.Array:
    """A large binary array of ``data``'s bytes cut at ``lengths`` (row by row)."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(pa.large_binary(), len(lengths),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _fixed(values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    """Fields of fixed-width values (big-endian, one row each): length and bytes, or a
    length of -1 where ``valid`` is False."""
    n, width = len(values), values.dtype.itemsize
    rows = np.empty((n, 4 + width), np.uint8)
    rows[:, :4] = np.frombuffer(width.to_bytes(4, "big"), np.uint8)
    rows[:, 4:] = values.view(np.uint8).reshape(n, width)
    if valid is None or valid.all():
        return _binary(np.full(n, 4 + width, np.int64), rows.reshape(-1))
    rows[~valid, :4] = 0xFF
    keep = np.ones((n, 4 + width), bool)
    keep[~valid, 4:] = False
    return _binary(np.where(valid, 4 + width, 4), rows[keep])


def _numbers(col: pa.Array, arrow: pa.DataType, big: str, shift: int = 0
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """A column as big-endian numbers of dtype ``big`` (``shift`` subtracted) and its
    validity (None: no nulls)."""
    cast = pc.cast(col, arrow, safe=False)
    valid = None if cast.null_count == 0 else np.asarray(cast.is_valid())
    values = np.asarray(pc.fill_null(cast, 0) if valid is not None else cast)
    if shift:
        values = values - shift
    return values.astype(big), valid


def _field_fixed(col: pa.Array, kind: str) -> pa.Array | None:
    """Fields of a fixed-width PostgreSQL type, None for another type."""
    if kind == "bigint":
        return _fixed(*_numbers(col, pa.int64(), ">i8"))
    if kind == "double precision":
        return _fixed(*_numbers(col, pa.float64(), ">f8"))
    if kind == "boolean":
        return _fixed(*_numbers(col, pa.uint8(), "u1"))
    if kind in ("timestamp", "timestamptz") and pa.types.is_timestamp(col.type):
        micros = pc.cast(pc.cast(col, pa.timestamp("us"), safe=False), pa.int64())
        return _fixed(*_numbers(micros, pa.int64(), ">i8", _EPOCH_US))
    if kind == "date" and pa.types.is_date(col.type):
        return _fixed(*_numbers(pc.cast(col, pa.date32()), pa.int32(), ">i4",
                                _EPOCH_DAYS))
    if kind == "interval" and pa.types.is_duration(col.type):
        micros, valid = _numbers(pc.cast(col, pa.duration("us"), safe=False), pa.int64(),
                                 ">i8")
        whole = np.zeros(len(micros), [("us", ">i8"), ("days", ">i4"), ("months", ">i4")])
        whole["us"] = micros
        return _fixed(whole.view("V16"), valid)
    return None


def _field_bytes(col: pa.Array) -> list[pa.Array]:
    """Fields of text or bytes: the lengths and the bytes, as two arrays (joined with
    the rest of the row)."""
    data = pc.cast(col, pa.large_binary())
    lengths = pc.fill_null(pc.binary_length(data), -1)
    prefix = np.asarray(lengths).astype(">i4")
    heads = _binary(np.full(len(prefix), 4, np.int64), prefix.view(np.uint8))
    return [heads, pc.fill_null(data, _EMPTY) if data.null_count else data]


def _field_array(col: pa.Array, kind: str) -> list[pa.Array] | None:
    """Fields of a one-dimensional array (``kind`` ``<element type>[]``), None when its
    elements have no binary form here."""
    element = kind[:-2]
    oid = _OID.get(element)
    if oid is None:
        return None
    parts = _fields(col.values, element)
    if parts is None:
        return None
    items = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, _EMPTY)
    offsets = np.asarray(pc.cast(col.offsets, pa.int64()))
    valid = None if col.null_count == 0 else np.asarray(col.is_valid())
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), items)
    joined = pc.binary_join(lists, _EMPTY)
    sizes = np.diff(offsets)
    item_bytes = np.asarray(pc.fill_null(pc.binary_length(joined), 0))
    # length, dimensions, has-nulls flag (read and ignored), element type, size, lower
    # bound: an empty array has no dimension (as '{}' reads), a NULL only the length
    head = np.empty((len(sizes), 6), ">i4")
    head[:, 1] = (sizes > 0).astype(np.int32)
    head[:, 2] = 0
    head[:, 3] = oid
    head[:, 4] = sizes
    head[:, 5] = 1
    head_len = np.where(sizes > 0, 24, 16)
    head[:, 0] = head_len - 4 + item_bytes
    keep = np.ones((len(sizes), 24), bool)
    keep[sizes == 0, 16:] = False
    if valid is not None:
        head[~valid, 0] = -1
        keep[~valid, 4:] = False
        head_len = np.where(valid, head_len, 4)
        joined = pc.if_else(pa.array(valid), joined, _EMPTY)
    heads = _binary(head_len, head.view(np.uint8).reshape(len(sizes), 24)[keep])
    return [heads, joined]


def _fields(col: pa.Array, kind: str) -> list[pa.Array] | None:
    """A column's fields (one or two arrays whose row-wise join is each row's field) for
    the PostgreSQL type ``kind`` (``pg_type``); None when it has no binary form here."""
    if kind in ("text", "bytea"):
        ok = (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
              or pa.types.is_null(col.type) or pa.types.is_binary(col.type)
              or pa.types.is_large_binary(col.type))
        return _field_bytes(col) if ok else None
    if kind.endswith("[]"):
        return (_field_array(col, kind) if pa.types.is_list(col.type)
                or pa.types.is_large_list(col.type) else None)
    fixed = _field_fixed(col, kind)
    return None if fixed is None else [fixed]


def binary_fields(data: pa.Table, kinds: list[str]) -> list[pa.Array] | None:
    """``data``'s fields in the binary ``COPY`` form of columns of the PostgreSQL types
    ``kinds`` (one per column, ``pg_type``'s names): arrays whose row-wise join is a
    row's fields (``binary_rows``); None when a column has no binary form here (numeric,
    nested lists, lists of intervals: those go as text)."""
    table = data.combine_chunks()
    parts: list[pa.Array] = []
    for col, kind in zip(table.columns, kinds, strict=True):
        chunk = col.chunk(0) if col.num_chunks else pa.array([], col.type)
        fields = _fields(chunk, kind)
        if fields is None:
            return None
        parts += fields
    return parts


def binary_rows(fields: list[pa.Array], count: int, suffix: bytes = b"") -> pa.Array:
    """Whole rows: the field count ``count``, the ``fields`` (``binary_fields``), then
    ``suffix`` (the bytes of the fields counted beyond them: ``version_fields``)."""
    parts: list[pa.Array | pa.Scalar] = [pa.scalar(count.to_bytes(2, "big"),
                                                   pa.large_binary()), *fields]
    if suffix:
        parts.append(pa.scalar(suffix, pa.large_binary()))
    return pc.binary_join_element_wise(*parts, _EMPTY)


def version_fields(valid_from_us: int, run_id: int) -> bytes:
    """The four version columns of an ``insert`` version (``valid_from`` from Unix
    microseconds, ``valid_to`` NULL, ``run_id``, ``change``) as the end of a row."""
    return (b"\0\0\0\x08" + (valid_from_us - _EPOCH_US).to_bytes(8, "big", signed=True)
            + b"\xff\xff\xff\xff"
            + b"\0\0\0\x08" + int(run_id).to_bytes(8, "big", signed=True)
            + b"\0\0\0\x06" + b"insert")


def copy_stream(rows: pa.Array, chunk_rows: int = 65_536) -> list[memoryview]:
    """The binary ``COPY`` stream of ``rows`` (``binary_rows``): the signature, the rows'
    bytes in pieces of ``chunk_rows`` rows (no copy: Arrow's buffer), the trailer."""
    out = [memoryview(SIGNATURE)]
    _, starts, data = rows.buffers()
    offsets = np.frombuffer(starts, np.int64)[rows.offset:rows.offset + len(rows) + 1]
    for start in range(0, len(rows), chunk_rows):
        end = min(start + chunk_rows, len(rows))
        lo, hi = int(offsets[start]), int(offsets[end])
        if hi > lo:
            out.append(memoryview(data)[lo:hi])
    out.append(memoryview(TRAILER))
    return out

