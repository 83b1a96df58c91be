"""Files and images: upload (docs/service-interface.md §4.6, §4.7), create with an asset (§4.8),
download the exact bytes back, and the asset rules write-back relies on (§2.5).

Usage::

    asset = upload_image(client, "site.jpg")          # {"id", "type", "filename", ...}
    rec = create_with_asset(client, "object_2", {"field_5": "Pump"},
                            {"field_12": "manual.pdf"})
    data = download(client, rec["field_12_raw"])      # the bytes that were uploaded

One uploaded asset may be placed in one field only; a file used in several fields or
records is uploaded once per placement (docs/service-interface.md §2.5).
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, Union
from urllib.parse import quote

import requests

from .errors import (
    InvalidValue,
    NotFound,
    ServerError,
    ServiceError,
    UsageError,
)
from .kinds._util import is_empty_cell

if TYPE_CHECKING:
    from .client import Client
    from .frames import Frames
    from .kinds.base import FieldSpec

__all__ = ["upload_file", "upload_image", "upload", "create_with_asset", "download",
           "PendingUpload", "AssetSource"]

AssetSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
AssetKind = Literal["file", "image"]

# Asset ids of the hosted service are 24 hex digits (records.json); a string of that shape
# in a file column is an asset id, anything else is taken as a local path to upload.
_ASSET_ID_RE = re.compile(r"[0-9a-fA-F]{24}\Z")


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


#: plan_asset_value's answer when an asset column needs no write.
UNCHANGED: Any = _Unchanged()


@dataclass(frozen=True)
class PendingUpload:
    """A local file (or bytes) to upload just before the write that places it."""

    kind: AssetKind
    filename: str
    path: Path | None = None
    data: bytes | None = None
    digest: str = ""

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        return self.path.read_bytes()

    def check(self, field_key: str = "", record_id: str = "") -> None:
        """InvalidValue when the file vanished since the plan was made."""
        if self.path is not None and not self.path.is_file():
            raise InvalidValue(f"record {record_id}: file to upload not found: {self.path}",
                               field=field_key, column=field_key, record_id=record_id)

    def __str__(self) -> str:
        return str(self.path) if self.path is not None else f"<{len(self.data or b'')} bytes>"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pending(value: Any, kind: AssetKind, filename: str | None = None, *, field_key: str = "",
            record_id: str = "") -> PendingUpload:
    """A PendingUpload for a path or bytes; InvalidValue naming the culprit when the path
    does not exist. Usage: ``pending("a.pdf", "file")``"""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        return PendingUpload(kind, filename or ("image.png" if kind == "image" else "file.bin"),
                             data=data, digest=_digest(data))
    if hasattr(value, "read"):
        data = value.read()
        name = filename or os.path.basename(getattr(value, "name", "") or "") or "file.bin"
        return PendingUpload(kind, name, data=data, digest=_digest(data))
    if isinstance(value, (str, os.PathLike)):
        path = Path(os.fspath(value)).expanduser()
        if not path.is_file():
            where = f"record {record_id}: " if record_id else ""
            raise InvalidValue(f"{where}file to upload not found: {path} (field {field_key})",
                               field=field_key or None, column=field_key or None,
                               record_id=record_id or None)
        return PendingUpload(kind, filename or path.name, path=path, digest=_file_digest(path))
    raise InvalidValue(f"cannot upload a {type(value).__name__} (field {field_key}): give a "
                       "path or bytes", field=field_key or None, record_id=record_id or None)


def placed_assets(base: Frames | None, layout: Any) -> dict[str, tuple[str, str]]:
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
    filename = name if isinstance(name, str) and name and name != old.get(f"{key}.filename") \
        else None
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


# ----------------------------------------------------------------------------------------
# Requests
# ----------------------------------------------------------------------------------------
def upload(client: Client, source: AssetSource | PendingUpload, kind: AssetKind = "file",
           filename: str | None = None) -> dict[str, Any]:
    """Upload a file or image (multipart part ``files``); returns the asset dict of 2.5.

    Usage: ``upload(client, b"...", "image", "photo.png")["id"]``"""
    if kind not in ("file", "image"):
        raise UsageError(f"kind must be 'file' or 'image', got {kind!r}")
    item = source if isinstance(source, PendingUpload) else pending(source, kind, filename)
    data = item.read()
    ctype = mimetypes.guess_type(item.filename)[0] or "application/octet-stream"
    path = f"/v1/applications/{quote(client.app_id)}/assets/{kind}/upload"
    # An upload is a POST: the client never repeats it blindly. An orphan asset is harmless
    # (it is placed nowhere), so a retried upload is safe in effect, but we leave the
    # decision to the caller through OutcomeUnknown.
    out = client.request("POST", path, files={"files": (item.filename, data, ctype)},
                         what=f"{kind} upload {item.filename}")
    if not isinstance(out, dict) or not out.get("id"):
        raise ServerError(f"{kind} upload {item.filename}: the answer has no asset id")
    return out


def upload_file(client: Client, source: AssetSource, filename: str | None = None
                ) -> dict[str, Any]:
    """Upload a file (docs/service-interface.md §4.6).

    Usage: ``upload_file(client, "a.pdf")["id"]``"""
    return upload(client, source, "file", filename)


def upload_image(client: Client, source: AssetSource, filename: str | None = None
                 ) -> dict[str, Any]:
    """Upload an image (4.7); the answer's ``thumb_url`` is filled.

    Usage: ``upload_image(client, "photo.jpg")["thumb_url"]``"""
    return upload(client, source, "image", filename)


def _field_kind(client: Client, object_key: str, field_key: str) -> AssetKind | None:
    app = client.schema()
    for obj in (app or {}).get("objects") or ():
        if obj.get("key") != object_key:
            continue
        for f in obj.get("fields") or ():
            if f.get("key") == field_key:
                kind = f.get("type")
                if kind not in ("file", "image"):
                    raise UsageError(f"{field_key} of {object_key} is a {kind} field, not a "
                                     "file or image field", field=field_key)
                if kind == "image" and (f.get("format") or {}).get("source") == "url":
                    raise UsageError(f"{field_key} is an image field whose source is a URL: "
                                     "put the URL in the data instead", field=field_key)
                return "image" if kind == "image" else "file"
        raise UsageError(f"unknown field {field_key} of {object_key}", field=field_key)
    return None


def create_with_asset(client: Client, object_key: str, data: Mapping[str, Any],
                      assets: Mapping[str, AssetSource], *,
                      kinds: Mapping[str, AssetKind] | None = None) -> dict[str, Any]:
    """The two-step flow of 4.8: upload each asset (once per field), then create the record
    with the asset ids. Kinds come from ``kinds`` or the schema (default ``file``).

    Usage: ``create_with_asset(client, "object_2", {"field_5": "x"}, {"field_12": "a.pdf"})``
    """
    overlap = set(data) & set(assets)
    if overlap:
        raise UsageError(f"fields given both as data and as assets: {sorted(overlap)}")
    plan: dict[str, PendingUpload] = {}
    for key, src in assets.items():   # validate every file before the first request
        kind = (kinds or {}).get(key) or _field_kind(client, object_key, key) or "file"
        plan[key] = pending(src, kind, field_key=key)
    body = dict(data)
    for key, item in plan.items():
        body[key] = upload(client, item, item.kind)["id"]
    return client.create_record(object_key, body)


def download(client: Client, asset: str | Mapping[str, Any], *, thumb: bool = False) -> bytes:
    """The exact bytes of an asset: give its raw value / upload answer (dict with ``url``
    or ``public_url``, and ``thumb_url``) or a URL. ``thumb=True`` fetches the thumbnail.

    Usage: ``download(client, frames.main.loc[rid, "field_12.url"])``"""
    if isinstance(asset, Mapping):
        url = asset.get("thumb_url") if thumb else (asset.get("url") or asset.get("public_url"))
        if not url:
            raise UsageError("this asset has no " + ("thumbnail" if thumb else "url"))
    elif isinstance(asset, str) and asset.startswith(("http://", "https://", "/")):
        url = asset
    else:
        raise UsageError(f"download needs an asset dict or a URL, got {asset!r}")
    if str(url).startswith("/"):
        url = client.base_url + str(url)
    headers = {"X-Service-Application-Id": client.app_id}
    attempt = 0
    while True:  # GET is idempotent: paced, retried like the client's requests
        client.limiter.acquire()
        with client._count_lock:
            client.request_count += 1
        try:
            resp = client.session.get(str(url), headers=headers, timeout=client.timeout)
            body = resp.content
        except (requests.ConnectionError, requests.Timeout) as exc:
            if attempt >= client.max_retries:
                raise ServerError(f"download {url}: {exc.__class__.__name__}") from None
            attempt += 1
            time.sleep(min(4.0, client.backoff * 2 ** attempt) * random.uniform(0.5, 1))
            continue
        client.limiter.observe(resp.headers)
        if resp.status_code in (429, 502, 503, 504, 500) and attempt < client.max_retries:
            attempt += 1
            time.sleep(min(4.0, client.backoff * 2 ** attempt) * random.uniform(0.5, 1))
            continue
        if resp.status_code == 404:
            raise NotFound(f"download: no asset at {url}", status=404)
        if resp.status_code >= 400:
            raise ServiceError(f"download {url}: HTTP {resp.status_code}",
                               status=resp.status_code)
        return body
