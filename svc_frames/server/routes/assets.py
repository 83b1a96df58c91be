"""Asset routes: upload a file or an image (multipart part ``files``; images must be
readable and get a PNG thumbnail), and download the exact bytes or the thumbnail.

Usage::

    api.include_router(assets.router)
"""

from __future__ import annotations

import io
import mimetypes
import re
import unicodedata

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from PIL import Image, UnidentifiedImageError
from starlette.concurrency import run_in_threadpool

from ..apierror import ApiError
from .auth import check_app_path, check_key
from .http import base_of, state_of
from .openapi import AUTH_PARAMS, UPLOAD_BODY

router = APIRouter(tags=["assets"])
MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around the file itself
# An uploaded .html or .svg must not run script from the service's own address: downloads
# are attachments, and browsers may not guess another type than the one sent.
SAFE_DOWNLOAD = {"X-Content-Type-Options": "nosniff"}


def sanitize_filename(name: str | None) -> str:
    """A safe stored file name: no directories, no path escapes, plain characters only."""
    name = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode()
    name = name.replace("\\", "/").split("/")[-1]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "file"
    name = re.sub(r"\.{2,}", ".", name)
    return name[:120]


def thumbnail(content: bytes) -> bytes:
    """A PNG thumbnail (at most 200x200); 400 when the upload is not a readable image."""
    try:
        with Image.open(io.BytesIO(content)) as src:
            src.load()
            im: Image.Image = src.copy()
            im.thumbnail((200, 200))
            if im.mode not in ("RGB", "RGBA", "L", "LA"):
                im = im.convert("RGBA")
            out = io.BytesIO()
            im.save(out, format="PNG")
            return out.getvalue()
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        # PIL's message holds the repr of our buffer: say what is wrong instead
        why = ("not a known image format" if isinstance(exc, UnidentifiedImageError)
               else "damaged, truncated or too large")
        raise ApiError.invalid(f"the uploaded file is not a readable image ({why})",
                               "files") from exc


@router.post("/v1/applications/{app_id}/assets/{asset_type}/upload",
             openapi_extra={**UPLOAD_BODY, "parameters": AUTH_PARAMS})
async def upload(app_id: str, asset_type: str, request: Request) -> Response:
    """Upload a file or an image (multipart part ``files``) -> the asset (2.5)."""
    state = state_of(request)
    store = state.store
    check_app_path(state, app_id)
    if asset_type not in ("file", "image"):
        raise ApiError.not_found(f"unknown asset type {asset_type!r} (file or image)")
    check_key(state, request, allow_service=True)
    limit = state.emulation.upload_limit_bytes
    try:
        declared = int(request.headers.get("content-length") or 0)
    except ValueError:
        declared = 0
    if limit and declared > limit + MULTIPART_SLACK:
        raise ApiError(413, {"errors": [{"message": f"upload exceeds the limit of "
                                         f"{limit} bytes"}]})
    ctype = request.headers.get("content-type", "")
    if not ctype.startswith("multipart/form-data"):
        raise ApiError.invalid("an upload must be multipart/form-data with a part 'files'",
                               "files")
    try:
        form = await request.form(max_files=5, max_fields=20)
    except Exception as exc:  # noqa: BLE001 - any multipart parse failure is the client's
        raise ApiError.invalid(f"malformed multipart body: {exc}", "files") from exc
    part = form.get("files")
    if part is None or isinstance(part, str):
        await form.close()
        raise ApiError.invalid("the multipart part 'files' holding a file is required",
                               "files")
    content = await part.read()
    filename = sanitize_filename(part.filename)
    await form.close()
    if limit and len(content) > limit:
        raise ApiError(413, {"errors": [{"message": f"upload of {len(content)} bytes "
                                         f"exceeds the limit of {limit} bytes"}]})
    thumb = None
    if asset_type == "image":
        thumb = await run_in_threadpool(thumbnail, content)
    asset_id, size = await run_in_threadpool(store.assets.add_asset, asset_type, filename,
                                             content, thumb)
    raw = store.assets.asset_raw(asset_id, asset_type, filename, size, thumb is not None, None,
                          base_of(request))
    return JSONResponse({"id": asset_id, "type": asset_type, "filename": filename,
                         "public_url": raw["url"], "thumb_url": raw["thumb_url"],
                         "size": size})


@router.get("/v1/applications/{app_id}/download/asset/{asset_id}/{filename}")
def download(app_id: str, asset_id: str, filename: str, request: Request) -> Response:
    """The exact bytes of an uploaded asset (its ``public_url``)."""
    state = state_of(request)
    check_app_path(state, app_id)
    path = state.store.assets.asset_file(asset_id, filename)
    if path is None:
        raise ApiError.not_found(f"unknown asset {asset_id!r}/{filename!r}")
    media = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    return FileResponse(path, media_type=media, headers=SAFE_DOWNLOAD, filename=filename)


@router.get("/v1/applications/{app_id}/download/asset/{asset_id}/thumb/{filename}")
def download_thumb(app_id: str, asset_id: str, filename: str, request: Request) -> Response:
    """The thumbnail (PNG) of an uploaded image (its ``thumb_url``)."""
    state = state_of(request)
    check_app_path(state, app_id)
    path = state.store.assets.asset_file(asset_id, filename, thumb=True)
    if path is None:
        raise ApiError.not_found(f"unknown thumbnail {asset_id!r}/{filename!r}")
    return FileResponse(path, media_type="image/png", headers=SAFE_DOWNLOAD,
                        filename=filename)
