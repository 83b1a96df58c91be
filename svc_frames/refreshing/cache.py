"""An on-disk cache of loaded frames, kept current by incremental refresh.

``read_object(client, key, cache="dir")`` (and ``read_view``) loads from the cache and
refreshes it (a few requests, see incremental.py) instead of listing every record; the
first run, or a cache made for something else, loads in full and writes the cache.

Layout of a cache directory::

    dir/CURRENT.json     what the cache holds (format, application, target, load
                         parameters, schema fingerprint, loaded_at) and its snapshot
    dir/snap-<id>/data   to_parquet of the frames (and the siblings it writes beside)

A write never touches the current snapshot: the new one is written under ``.tmp-<id>``,
fsynced, renamed to ``snap-<id>``, and then ``CURRENT.json`` is replaced atomically
(written beside, fsynced, ``os.replace``). A crash at any point leaves the previous
``CURRENT.json`` naming a complete snapshot; leftovers are removed by the next write.

Usage::

    orders = read_object(client, "object_3", cache="~/.cache/orders")  # run 2+: ~3 requests
    frames, report = load_cached(client, "object_3", "cache/orders")    # and what changed
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..filters import prepare_query
from ..frames import Frames
from ..http.client import Client
from ..keys import Target, parse_target
from ..lookup import resolve_target
from ..query import Filters, validate_filters
from ..read.load import load
from ..read.options import Columns, check_columns, user_timezone
from ..saved.layout import SavedLayout
from ..saved.parquet import read_parquet, to_parquet
from ..schema import Schema
from .policy import RefreshNotice, RefreshReport, refresh

__all__ = ["load_cached", "check_cache_dir", "CacheNotice", "CACHE_FORMAT", "save_cache",
           "read_cache", "export_incremental", "IncrementalExport"]

CACHE_FORMAT = 1
"""Bumped when the layout changes: a cache of another format is loaded in full (warned)."""
POINTER = "CURRENT.json"
DATA = "data"
"""A snapshot holds ``to_parquet(frames, snap/DATA)``: DATA and the siblings it writes."""


class CacheNotice(RefreshNotice):
    """A cache that could not be used (another application, object, filter, schema version
    or format, or unreadable): the load was made in full and the cache rewritten."""


def check_cache_dir(path: str | os.PathLike[str]) -> Path:
    """The cache directory, created if missing; UsageError naming it when it is not a
    directory, not writable, or a directory of other files. Usage: ``check_cache_dir(p)``"""
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"cache must be a directory path, got {type(path).__name__}")
    root = Path(path).expanduser()
    if root.exists() and not root.is_dir():
        raise UsageError(f"cache {str(root)!r} is not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cache {str(root)!r} cannot be created: {exc.strerror or exc}"
                         ) from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise UsageError(f"cache {str(root)!r} is not writable")
    foreign = [p.name for p in root.iterdir()
               if not (p.name in (POINTER, "." + POINTER + ".tmp")
                       or p.name.startswith(("snap-", ".tmp-")))]
    if foreign:
        raise UsageError(f"cache {str(root)!r} holds other files ({', '.join(sorted(foreign)[:3])}"
                         "): give an empty or new directory")
    return root


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            _fsync(Path(dirpath) / name)
        _fsync(Path(dirpath))


def read_cache(root: Path) -> tuple[dict[str, Any], Frames | None] | None:
    """(pointer, frames) of a cache (frames None for a cache of another format), or None
    when it holds none. Raises ValueError/OSError when it is unreadable."""
    pointer = root / POINTER
    if not pointer.exists():
        return None
    meta = json.loads(pointer.read_text(encoding="utf-8"))
    if not isinstance(meta, dict):
        raise ValueError(f"{pointer} is not a JSON object")
    if meta.get("format") != CACHE_FORMAT:
        return meta, None
    frames = read_parquet(root / str(meta["snapshot"]) / DATA)
    if meta.get("original") == "main" or frames.original is None:
        frames.original = frames.snapshot()
    if frames.source is not None:
        frames.source.load = dict(meta.get("load") or {}, loaded_at=meta.get("loaded_at"))
        if frames.original is not None and frames.original.source is not None:
            frames.original.source.load = dict(frames.source.load)
    return meta, frames


def save_cache(root: Path, frames: Frames, meta: Mapping[str, Any], *,
               data_changed: bool = True) -> None:
    """Write ``frames`` (when ``data_changed``, else keep the snapshot) and point
    ``CURRENT.json`` at it, atomically (module docstring)."""
    current = None
    try:
        current = json.loads((root / POINTER).read_text(encoding="utf-8")).get("snapshot")
    except (OSError, ValueError, AttributeError):
        current = None
    snapshot = current if (not data_changed and current
                           and (root / str(current)).is_dir()) else None
    for stale in root.glob(".tmp-*"):  # a crashed write's leftovers
        shutil.rmtree(stale, ignore_errors=True)
    same = as_loaded(frames)
    if snapshot is None:
        token = secrets.token_hex(6)
        tmp = root / f".tmp-{token}"
        # frames equal to their as-loaded copy (no edits: a cache's usual state) are
        # written once, and the copy is made again when read
        to_parquet(Frames(frames.main, frames.tables, frames.source) if same else frames,
                   tmp / DATA)  # DATA and its siblings (tables, metadata, as-loaded copy)
        _fsync_tree(tmp)
        snapshot = f"snap-{token}"
        os.rename(tmp, root / snapshot)
        _fsync(root)
    pointer = dict(meta, snapshot=snapshot, original="main" if same else "stored")
    tmp_pointer = root / ("." + POINTER + ".tmp")
    with open(tmp_pointer, "w", encoding="utf-8") as fh:
        json.dump(pointer, fh, indent=1, sort_keys=True, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp_pointer, root / POINTER)
    _fsync(root)
    for old in root.glob("snap-*"):  # older snapshots (and orphans of crashed writes)
        if old.name != snapshot:
            shutil.rmtree(old, ignore_errors=True)


def as_loaded(frames: Frames) -> bool:
    """Whether frames hold exactly their as-loaded copy (nothing edited)."""
    orig = frames.original
    if orig is None:
        return False
    if not frames.main.equals(orig.main) or set(frames.tables) != set(orig.tables):
        return False
    return all(frames.tables[n].reset_index(drop=True).equals(
        orig.tables[n].reset_index(drop=True)) for n in frames.tables)


def schema_fingerprint(app: Mapping[str, Any] | None, target: Target) -> str | None:
    """A digest of the fields a target holds in the schema (None without a schema)."""
    schema = Schema.of(app)
    if not schema.available:
        return None
    kind, a, b = parse_target(target)
    if kind == "object":
        specs = schema.object_fields(str(a))
        if specs is None:
            return None
        fields: list[Any] = [f.to_schema() for f in specs]
    else:
        keys = schema.view_field_keys(str(a), str(b))
        if keys is None:
            return None
        known = schema.all_fields()
        fields = [known[k].to_schema() if k in known else k for k in keys]
    text = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def target_name(target: Target) -> str:
    kind, a, b = parse_target(target)
    return f"{a}/{b}" if kind == "view" else str(a)


def load_cached(client: Client, target: Target, cache: str | os.PathLike[str], *,
                filters: Filters | None = None, sort_field: str | None = None,
                sort_order: str | None = None, columns: Columns = "keys",
                timezone: Any = None, modified_field: str | None = None,
                **load_options: Any) -> tuple[Frames, RefreshReport | None]:
    """Frames of ``target`` through the cache at ``cache``: (frames, the refresh report,
    or None when the load was made in full). Usage: ``frames, report = load_cached(
    client, "object_3", "cache/orders")``"""
    if load_options.get("limit") is not None:
        raise UsageError("cache= keeps every record current: it cannot be used with limit=")
    tz = user_timezone(timezone)
    checked = validate_filters(filters)
    check_columns(columns)
    root = check_cache_dir(cache)  # after every other check: nothing made for bad input
    app = client.schema()
    schema = Schema.of(app)
    # prepared once, as the load prepares them (dates in the application's timezone): the
    # cache is checked against the query a load sends, and a full load sends this one
    query = prepare_query(checked, schema.all_fields(), tz or schema.timezone)
    want = {"app_id": client.app_id, "target": target_name(target),
            "filters": query.filters,
            "sort_field": sort_field, "sort_order": sort_order, "columns": columns,
            "timezone": tz.key if tz is not None else None}
    why = ""
    cached: tuple[dict[str, Any], Frames | None] | None = None
    try:
        cached = read_cache(root)
    except (OSError, ValueError, KeyError, TypeError, UsageError) as exc:
        why = f"it cannot be read ({exc})"
    fingerprint = schema_fingerprint(app, target)
    frames: Frames | None = None
    report: RefreshReport | None = None
    if cached is not None:
        meta, frames = cached
        why = mismatch(meta, want, fingerprint)
        if why:
            frames = None
    if frames is not None:
        report = refresh(client, frames, modified_field=modified_field)
    else:
        if why:
            warnings.warn(f"cache {str(root)!r} not used: {why}; loading in full",
                          CacheNotice, stacklevel=3)
        frames = load(client, target, filters=query, sort_field=sort_field,
                      sort_order=sort_order, columns=columns,
                      timezone=timezone, **load_options)
    assert frames.source is not None
    load_params = dict(frames.source.load or {})
    meta = {**want, "format": CACHE_FORMAT, "schema": fingerprint,
            "loaded_at": load_params.pop("loaded_at", None), "load": load_params}
    changed = report is None or bool(report.added or report.changed or report.deleted
                                     or len(report.conflicts))
    save_cache(root, frames, meta, data_changed=changed)
    return frames, report


def mismatch(meta: Mapping[str, Any], want: Mapping[str, Any], fingerprint: str | None
             ) -> str:
    """Why a cache does not fit this load ("" when it does)."""
    if meta.get("format") != CACHE_FORMAT:
        return (f"it was written in cache format {meta.get('format')!r} (this version "
                f"reads {CACHE_FORMAT})")
    names = {"app_id": "application", "target": "object or view", "filters": "filters",
             "sort_field": "sort field", "sort_order": "sort order", "columns": "columns",
             "timezone": "timezone"}
    for key, what in names.items():
        if meta.get(key) != want.get(key):
            return f"it was made for another {what} ({meta.get(key)!r}, not {want.get(key)!r})"
    if fingerprint is None:
        return "the application schema is not available to check the cache's fields"
    if meta.get("schema") != fingerprint:
        return "the schema changed since (another schema version: fields added or changed)"
    return ""


# ---- a Parquet dataset kept current -------------------------------------------------------
@dataclass
class IncrementalExport:
    """What :func:`export_incremental` did. ``report`` None: the load was made in full."""

    path: Path
    records: int
    tables: list[str]
    report: RefreshReport | None
    written: bool                      # False: nothing changed, the dataset was kept
    cache: Path
    tables_path: Path | None = None


def export_incremental(client: Client, target: Target, out_dir: str | os.PathLike[str], *,
                       cache: str | os.PathLike[str] | None = None,
                       filters: Filters | None = None, columns: Columns = "keys",
                       timezone: Any = None, modified_field: str | None = None,
                       progress: bool | None = None) -> IncrementalExport:
    """Keep the saved frames at ``out_dir`` (export's layout: the records, ``.tables``,
    the metadata and the as-loaded copy beside) current: the frames come from a cache
    (default ``<out_dir>.cache``) refreshed with a few requests, and are saved again
    (``to_parquet(..., overwrite=True)``) only when something changed. Unlike ``export``,
    the records are held in memory. A directory that is not saved frames is refused.

    ``target``: an object or a view, by key or name (as ``export`` takes it).

    Usage: ``export_incremental(client, "object_3", "out/orders")``"""
    layout = SavedLayout.of(out_dir)
    dest = layout.data
    if dest.exists() and (not dest.is_dir() or (any(dest.iterdir())
                                                 and not layout.meta.exists())):
        raise UsageError(f"{dest} is not saved frames (it holds other files): choose "
                         "another directory")
    tgt = resolve_target(client, target)  # by key or name
    cache_dir = Path(cache) if cache is not None else dest.with_name(dest.name + ".cache")
    frames, report = load_cached(client, tgt, cache_dir, filters=filters, columns=columns,
                                 timezone=timezone, modified_field=modified_field,
                                 progress=progress)
    changed = report is None or bool(report.added or report.changed or report.deleted)
    written = changed or not layout.meta.exists()
    if written:
        to_parquet(frames, dest, overwrite=True)
    return IncrementalExport(dest, len(frames.main), list(frames.tables), report, written,
                             cache_dir, layout.tables if frames.tables else None)

