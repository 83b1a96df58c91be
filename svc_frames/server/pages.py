"""Writes as users make them on the application's own pages (not through the REST API):
the object's record rules run, so a "Last Modified" stamp is set as the hosted
application's forms set it. Other users' edits in tests and the emulated activity
(activity.py) go through here; an object-based API write runs no record rule.

Usage::

    pages = AppPages(svc.store, svc.base_url)        # or svc.pages
    rec = pages.update_record("object_3", rid, {"field_12": "Fixed"})   # stamped
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .store import BASE_URL_PLACEHOLDER, PAGE_WRITE, Store


class AppPages:
    """Another user of the application, editing records on its pages.

    The method names and answers are the toolkit ``Client``'s (the record as the service
    answers it), so a test swaps one for the other; a refused value raises the service's
    ``ApiError`` (400 naming the field, 404 for an unknown record)."""

    def __init__(self, store: Store, base_url: str = "") -> None:
        self.store = store
        self.base_url = base_url

    def _record(self, frag: str) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(frag.replace(BASE_URL_PLACEHOLDER, self.base_url))
        return out

    def create_record(self, object_key: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """A new record, record rules applied -> the record (``id`` included)."""
        _, frag = self.store.write(object_key, values, None, PAGE_WRITE)
        return self._record(frag)

    def update_record(self, object_key: str, record_id: str,
                      values: Mapping[str, Any]) -> dict[str, Any]:
        """Change the given fields, record rules applied -> the whole record."""
        _, frag = self.store.write(object_key, values, record_id, PAGE_WRITE)
        return self._record(frag)

    def delete_record(self, object_key: str, record_id: str) -> dict[str, Any]:
        """Delete a record (connections to it dropped) -> ``{"delete": True}``."""
        self.store.delete(object_key, record_id)
        return {"delete": True}
