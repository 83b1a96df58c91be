"""Files and images: upload (docs/service-interface.md §4.6, §4.7), create with an asset
(§4.8), and download the exact bytes back. Where write-back places assets: ``writeback/uploads.py``.

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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, Union
from urllib.parse import quote

from .errors import InvalidValue, OutcomeUnknown, ReadOnlyField, ServerError, UsageError
from .kinds import codec_for
from .kinds.assets import is_url_source
from .kinds.base import FieldSpec
from .lookup import field_key as lookup_field
from .lookup import object_key as lookup_object
from .records import Client

__all__ = ["upload_file", "upload_image", "upload", "create_with_asset", "download",
           "check_record_data", "PendingUpload", "AssetSource"]

AssetSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
AssetKind = Literal["file", "image"]


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
            what = "is a directory, not a file" if path.is_dir() else "not found"
            raise InvalidValue(f"{where}file to upload {what}: {path}{_of_field(field_key)}",
                               field=field_key or None, column=field_key or None,
                               record_id=record_id or None)
        return PendingUpload(kind, filename or path.name, path=path, digest=_file_digest(path))
    raise InvalidValue(f"cannot upload a {type(value).__name__}{_of_field(field_key)}: give "
                       "a path or bytes", field=field_key or None, record_id=record_id or None)


def _of_field(field_key: str) -> str:
    return f" (field {field_key})" if field_key else ""


# ----------------------------------------------------------------------------------------
# Requests
# ----------------------------------------------------------------------------------------
def upload(client: Client, source: AssetSource | PendingUpload, kind: AssetKind = "file",
           filename: str | None = None, *,
           resend: Callable[[OutcomeUnknown], bool] | None = None) -> dict[str, Any]:
    """Upload a file or image (multipart part ``files``); returns the asset dict of 2.5.
    ``resend``: the client's rule for an upload whose outcome is unknown (see
    ``Client.request``).

    Usage: ``upload(client, b"...", "image", "photo.png")["id"]``"""
    if kind not in ("file", "image"):
        raise UsageError(f"kind must be 'file' or 'image', got {kind!r}")
    item = source if isinstance(source, PendingUpload) else pending(source, kind, filename)
    data = item.read()
    ctype = mimetypes.guess_type(item.filename)[0] or "application/octet-stream"
    path = f"/v1/applications/{quote(client.app_id)}/assets/{kind}/upload"
    # An upload is a POST: the client never repeats it blindly. An orphan asset is harmless
    # (it is placed nowhere), so a retried upload is safe in effect, but the caller decides
    # (``resend``), else gets OutcomeUnknown.
    out = client.request("POST", path, files={"files": (item.filename, data, ctype)},
                         what=f"{kind} upload {item.filename}", resend=resend)
    if not isinstance(out, dict) or not out.get("id"):
        raise ServerError(f"{kind} upload {item.filename}: the answer has no asset id")
    return out


def upload_file(client: Client, source: AssetSource, filename: str | None = None
                ) -> dict[str, Any]:
    """Upload a file, to be placed in a file field of one record (by its asset id).

    One request (docs/service-interface.md §4.6). An uploaded asset is placed in one
    field of one record only; to place a file in several, upload it once per placement.
    ``write_back`` uploads the file cells of edited frames itself: this is for records
    written by other means (:func:`create_with_asset`, ``client.create_record``).

    Parameters
    ----------
    client : Client
        The application to upload to.
    source : str, os.PathLike, bytes or binary file object
        A local path, the bytes themselves, or a file opened in binary mode.
    filename : str, optional
        The name the service keeps; default: the path's name (the file object's, or
        ``file.bin`` for bytes).

    Returns
    -------
    dict
        The service's asset: ``id`` (what a file field takes), ``type`` ("file"),
        ``filename``, ``size``, ``url``...

    Raises
    ------
    InvalidValue
        ``source`` is a path that does not exist or is a directory, or not a path, bytes
        or a binary file object (before any request).
    PayloadTooLarge
        The file is over the service's size limit.
    ValidationError
        The service refused the file.
    OutcomeUnknown
        The upload's answer was lost: it may have been stored (an upload is never sent
        again blindly; an asset placed nowhere is harmless).
    ServiceError
        Another failure after the client's retries (``ServiceUnreachable``,
        ``RateLimited``, ``ServerError``, also for an answer without an asset id).

    Examples
    --------
    >>> (tmp_path / "checklist.txt").write_bytes(b"1. valve closed")
    15
    >>> asset = upload_file(client, tmp_path / "checklist.txt")
    >>> asset["type"], asset["filename"], asset["size"]
    ('file', 'checklist.txt', 15)
    >>> download(client, asset)
    b'1. valve closed'
    """
    return upload(client, source, "file", filename)


def upload_image(client: Client, source: AssetSource, filename: str | None = None
                 ) -> dict[str, Any]:
    """Upload an image, to be placed in an image field of one record (by its asset id).

    One request (docs/service-interface.md §4.7); the service makes a thumbnail, whose
    address is the answer's ``thumb_url``. Placement as for :func:`upload_file`.

    Parameters
    ----------
    client : Client
        The application to upload to.
    source : str, os.PathLike, bytes or binary file object
        A local path, the bytes themselves, or a file opened in binary mode.
    filename : str, optional
        The name the service keeps; default: the path's name (the file object's, or
        ``image.png`` for bytes).

    Returns
    -------
    dict
        The service's asset: ``id`` (what an image field takes), ``type`` ("image"),
        ``filename``, ``size``, ``url``, ``thumb_url``...

    Raises
    ------
    InvalidValue
        ``source`` is a path that does not exist or is a directory, or not a path, bytes
        or a binary file object (before any request).
    PayloadTooLarge
        The file is over the service's size limit.
    ValidationError
        The service refused the file (e.g. bytes that are not an image).
    OutcomeUnknown
        The upload's answer was lost: it may have been stored (an upload is never sent
        again blindly; an asset placed nowhere is harmless).
    ServiceError
        Another failure after the client's retries (``ServiceUnreachable``,
        ``RateLimited``, ``ServerError``, also for an answer without an asset id).

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> photo = download(client, frames.main["Photo.url"].iloc[0])   # a PNG
    >>> image = upload_image(client, photo, "site.png")
    >>> image["type"], image["filename"], image["thumb_url"] is not None
    ('image', 'site.png', True)
    """
    return upload(client, source, "image", filename)


def _field_kind(client: Client, object_key: str, field_key: str) -> AssetKind | None:
    """The asset kind of a field from the schema (None: no schema or object unknown)."""
    schema = client.schema()
    if schema.object(object_key) is None:
        return None
    f = schema.field(object_key, field_key)
    if f is None:
        raise UsageError(f"unknown field {field_key} of {object_key}", field=field_key)
    if f.kind not in ("file", "image"):
        raise UsageError(f"{field_key} of {object_key} is a {f.kind} field, not a "
                         "file or image field", field=field_key)
    if f.kind == "image" and is_url_source(f):
        raise UsageError(f"{field_key} is an image field whose source is a URL: "
                         "put the URL in the data instead", field=field_key)
    return "image" if f.kind == "image" else "file"


class _ShapeOnly:
    """Service hooks that take any connected id or asset id on trust: the kinds' own rules
    (shapes, counts, formats) run without the service; only what needs its records is
    left to it."""

    app_id = ""
    base_url = ""

    def connected(self, object_key: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        return [{"id": str(i), "identifier": str(i)} for i in ids]

    def asset(self, asset_id: str, field_key: str) -> dict[str, Any]:
        return {"id": asset_id}


def check_record_data(fields: Mapping[str, FieldSpec], data: Mapping[str, Any], *,
                      what: str, skip: Collection[str] = ()) -> None:
    """Refuse, before any request, record data the service would refuse: an unknown field,
    a field the service computes, or a value its kind does not accept (the kind codec's
    own rule, as the service applies it). ``skip``: fields checked elsewhere (uploads).

    Usage: ``check_record_data(fields_by_key, {"field_5": "Pump"}, what="object_2")``"""
    hooks = _ShapeOnly()
    for key, value in data.items():
        if key in skip:
            continue
        f = fields.get(key)
        if f is None:
            raise UsageError(f"{what}: unknown field {key!r}", field=key)
        codec = codec_for(f)
        if codec.read_only:
            raise ReadOnlyField(f"{what}: {key} ({f.kind}) is computed by the service and "
                                "cannot be written", field=key, column=key)
        try:
            codec.normalize(value, f, hooks)
        except InvalidValue as exc:
            raise InvalidValue(f"{what}: {exc.message}", field=key, column=key) from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise InvalidValue(f"{what}: {key} ({f.kind}) does not accept a "
                               f"{type(value).__name__} ({exc})", field=key,
                               column=key) from None


def create_with_asset(client: Client, object_key: str, data: Mapping[str, Any],
                      assets: Mapping[str, AssetSource], *,
                      kinds: Mapping[str, AssetKind] | None = None) -> dict[str, Any]:
    """Create a record holding files or images: upload each, then create the record.

    The two-step flow of docs/service-interface.md §4.8: one upload per asset field, then
    one create with the asset ids. The record data and every file are checked before the
    first upload, so a create the service would refuse leaves no asset behind.

    Parameters
    ----------
    client : Client
        The application to write to.
    object_key : str
        The object's key (``"object_3"``) or name (``"Work Orders"``).
    data : mapping
        The record's other values, by field label or key, as the service takes them.
    assets : mapping
        Field label or key -> a path, bytes or binary file object to upload into that
        field.
    kinds : mapping, optional
        Field key -> "file" or "image"; default: the field's kind from the schema (or
        "file" without a schema).

    Returns
    -------
    dict
        The created record as the service answers it (``id``, each field's display
        value and ``field_N_raw``: the asset's id, filename and url).

    Raises
    ------
    UsageError
        Before any request: a field given both as data and as an asset, an unknown object
        or field, an asset field that is not a file or image field (or an image field
        holding URLs).
    InvalidValue
        Before any request: a value its field's kind does not take (``ReadOnlyField``
        for a field the service computes), or a file that does not exist.
    ServiceError
        An upload or the create failed (``ValidationError``, ``PayloadTooLarge``,
        ``OutcomeUnknown`` when an answer was lost...); assets uploaded before stay
        placed nowhere.

    Examples
    --------
    >>> (tmp_path / "manual.txt").write_text("Turn off the power first.")
    25
    >>> rec = create_with_asset(client, "object_3", {"field_12": "Inspect the boiler"},
    ...                         {"field_37": tmp_path / "manual.txt"})
    >>> rec["field_37_raw"]["filename"]
    'manual.txt'
    >>> download(client, rec["field_37_raw"])
    b'Turn off the power first.'
    >>> rec = create_with_asset(client, "Work Orders", {"Title": "Inspect the pump"},
    ...                         {"Attachment": tmp_path / "manual.txt"})   # by name and label
    >>> rec["field_37_raw"]["filename"]
    'manual.txt'
    """
    # the record data is checked before the first upload: a create the service would
    # refuse must not leave an uploaded asset placed nowhere
    schema = client.schema()
    if schema.available:
        name = object_key
        object_key = lookup_object(schema, name)
        fields = schema.object_fields(object_key) or []
        data = {lookup_field(fields, k, name): v for k, v in data.items()}
        assets = {lookup_field(fields, k, name): v for k, v in assets.items()}
    overlap = set(data) & set(assets)
    if overlap:
        raise UsageError(f"fields given both as data and as assets: {sorted(overlap)}")
    if schema.available:
        check_record_data({f.key: f for f in fields}, data, what=object_key)
    plan: dict[str, PendingUpload] = {}
    for key, src in assets.items():   # validate every file before the first request
        kind = (kinds or {}).get(key) or _field_kind(client, object_key, key) or "file"
        plan[key] = pending(src, kind, field_key=key)
    body = dict(data)
    for key, item in plan.items():
        body[key] = upload(client, item, item.kind)["id"]
    return client.create_record(object_key, body)


def download(client: Client, asset: str | Mapping[str, Any], *, thumb: bool = False) -> bytes:
    """The exact bytes of an uploaded file or image (or of its thumbnail).

    One GET, paced and retried like every request; only the application id is sent with
    it (an asset address may point to another host: the key and token stay here).

    Parameters
    ----------
    client : Client
        The application the asset belongs to.
    asset : str or mapping
        The asset's address (a loaded frame's ``field_N.url`` cell, absolute or a path on
        the service), or a dict holding ``url`` (or ``public_url``) and ``thumb_url``:
        an upload's answer or a record's ``field_N_raw``.
    thumb : bool, default False
        The thumbnail instead (an image's ``thumb_url``; a dict is needed).

    Returns
    -------
    bytes
        The bytes as they were uploaded.

    Raises
    ------
    UsageError
        ``asset`` is neither a dict nor an address, or the dict has no ``url`` (no
        ``thumb_url`` with ``thumb=True``).
    NotFound
        No asset at that address.
    ServiceError
        Another failure after the client's retries.

    Examples
    --------
    >>> frames = read_object(client, "Work Orders")
    >>> first = frames.main.iloc[0]
    >>> data = download(client, first["Attachment.url"])
    >>> len(data) == int(first["Attachment.size"])
    True
    """
    if isinstance(asset, Mapping):
        url = asset.get("thumb_url") if thumb else (asset.get("url") or asset.get("public_url"))
        if not url:
            raise UsageError("this asset has no " + ("thumbnail" if thumb else "url"))
    elif isinstance(asset, str) and asset.startswith(("http://", "https://", "/")):
        url = asset
    else:
        raise UsageError(f"download needs an asset dict or a URL, got {asset!r}")
    return client.get_bytes(str(url), what=f"asset {url}")
