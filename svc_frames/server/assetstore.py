"""Uploaded files and images of a data directory: their bytes under ``assets/<id>/``, their
rows (type, name, size, thumbnail, where placed), and the raw value a record holds.

An asset is placed in one field of one record; generated demo assets are shared
(``record_id = '*'``) by every record of their field.

Usage::

    asset_id, size = assets.add_asset("file", "report.pdf", content, None)
    assets.asset_file(asset_id, "report.pdf")      # Path of the bytes, or None
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .db import Database, new_id
from .private import DIR_MODE, private_dir, write_private

SHARED = "*"  # record_id of a generated asset every record of its field may hold


class AssetStore:
    """Asset files and rows of one application."""

    def __init__(self, db: Database, folder: Path, app_id: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.folder = private_dir(Path(folder))
        self.app_id = app_id
        self.clock = clock  # the service's clock: ids and upload times read it

    def asset_raw(self, asset_id: str, atype: str, filename: str, size: int, thumb: bool,
                  field_key: str | None, base_url: str) -> dict[str, Any]:
        """The raw value of a file/image field holding this asset."""
        url = f"{base_url}/v1/applications/{self.app_id}/download/asset/{asset_id}/{filename}"
        thumb_url = (f"{base_url}/v1/applications/{self.app_id}/download/asset/{asset_id}/"
                     f"thumb/{filename}") if thumb else ""
        out: dict[str, Any] = {"id": asset_id, "application_id": self.app_id, "s3": False,
                               "type": atype, "filename": filename, "url": url,
                               "thumb_url": thumb_url, "size": size}
        if field_key is not None:
            out["field_key"] = field_key
        return out

    def add_asset(self, atype: str, filename: str, content: bytes,
                  thumb: bytes | None, asset_id: str | None = None) -> tuple[str, int]:
        """Store an uploaded file (and its thumbnail) -> (asset id, size)."""
        now = self.clock()
        asset_id = asset_id or new_id(now)
        folder = self.folder / asset_id
        folder.mkdir(mode=DIR_MODE)
        write_private(folder / "content", content)
        if thumb is not None:
            write_private(folder / "thumb", thumb)
        self.db.write("INSERT INTO assets(id, type, filename, size, thumb, created) "
                      "VALUES (?,?,?,?,?,?)",
                      (asset_id, atype, filename, len(content), 1 if thumb is not None else 0,
                       now))
        return asset_id, len(content)

    def asset_file(self, asset_id: str, filename: str, thumb: bool = False) -> Path | None:
        """The file of an asset's bytes (or thumbnail), None when unknown."""
        if not re.fullmatch(r"[0-9a-f]{24}", asset_id):
            return None
        row = self.db.reader.execute("SELECT filename, thumb FROM assets WHERE id = ?",
                                     (asset_id,)).fetchone()
        if row is None or row[0] != filename or (thumb and not row[1]):
            return None
        path = self.folder / asset_id / ("thumb" if thumb else "content")
        return path if path.is_file() else None

    @staticmethod
    def placement(conn: sqlite3.Connection, asset_id: str
                  ) -> tuple[str, str, int, int, str | None, str | None] | None:
        """(type, filename, size, thumb, placed field, placed record) of an asset."""
        row = conn.execute("SELECT type, filename, size, thumb, field_key, record_id "
                           "FROM assets WHERE id = ?", (asset_id,)).fetchone()
        return None if row is None else tuple(row)

    @staticmethod
    def place(conn: sqlite3.Connection, asset_id: str, field_key: str, record_id: str) -> None:
        """Record that an asset now sits in a field of a record (inside the write)."""
        conn.execute("UPDATE assets SET field_key = ?, record_id = ? WHERE id = ?",
                     (field_key, record_id, asset_id))

    def share_assets(self, placements: Iterable[tuple[str, str]]) -> None:
        """Mark generated assets as shared by every record of a field: (asset id, field)."""
        with self.db.transaction() as conn:
            for asset_id, field_key in placements:
                conn.execute("UPDATE assets SET field_key = ?, record_id = ? WHERE id = ?",
                             (field_key, SHARED, asset_id))
