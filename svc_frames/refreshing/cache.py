"""An on-disk cache of loaded frames, kept current by incremental refresh.

``read_object(client, key, cache="dir")`` (and ``read_view``) loads from the cache and
refreshes it (a few requests, see refreshing/policy.py) instead of listing every record; the
first run, or a cache made for something else, loads in full and writes the cache.

Layout of a cache directory::

    dir/CURRENT.json     what the cache holds (format, application, target, load
                         parameters, schema fingerprint, loaded_at), its snapshot and
                         their checksums
    dir/snap-<id>/data   to_parquet of the frames (and the siblings it writes beside)

``CURRENT.json`` records the SHA-256 of every file of its snapshot and of itself; a
cache whose files do not match (a flipped byte, a file edited or replaced), or that
carries no checksum (written by a version before them), is not used: a CacheNotice says
why, the load is made in full and the cache rewritten.

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
from ..frames import Frames
from ..keys import Target, parse_target
from ..lookup import target_keys
from ..query import Filters
from ..read.load import load
from ..read.options import Columns, LoadOptions, field_options
from ..records import Client
from ..saved.layout import SavedLayout, files_digest
from ..saved.layout import fsync as _fsync
from ..saved.layout import fsync_tree as _fsync_tree
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
FILES_SHA = "files_sha256"
"""Pointer member: SHA-256 of every file of the snapshot it names (``snapshot_digest``)."""
POINTER_SHA = "pointer_sha256"
"""Pointer member: SHA-256 of the pointer's other members (``pointer_digest``)."""


class CacheNotice(RefreshNotice):
    """Given when a cache could not be used: the load was made in full and the cache rewritten.

    Made for another application, object, filter, schema version or format; unreadable,
    failing its checksums, or written before caches had them.
    """


def check_cache_dir(path: str | os.PathLike[str]) -> Path:
    """The cache directory, checked, and created if missing.

    Parameters
    ----------
    path : str or os.PathLike
        The directory (``~`` is expanded).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    UsageError
        ``path`` is not a path, not a directory, cannot be created, is not writable, or
        holds files other than a cache's (naming it).

    Examples
    --------
    >>> cache.check_cache_dir(tmp_path / "orders").is_dir()
    True
    """
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


def pointer_digest(pointer: Mapping[str, Any]) -> str:
    """SHA-256 of the pointer's members other than its own digest, as JSON reads them."""
    body = {k: v for k, v in pointer.items() if k != POINTER_SHA}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def snapshot_digest(snap: Path) -> str:
    """SHA-256 of every file of a snapshot (records, tables, metadata, as-loaded copy)."""
    return files_digest(snap, (p for p in snap.rglob("*") if p.is_file()))


def check_integrity(root: Path, meta: Mapping[str, Any]) -> None:
    """ValueError when the pointer or the snapshot it names is not as written (a flipped
    byte, a file edited or replaced), or carries no checksum (written before caches had
    one: it cannot be trusted, so it is loaded in full once and rewritten)."""
    if meta.get(POINTER_SHA) is None or meta.get(FILES_SHA) is None:
        raise ValueError("it carries no checksum (written by a version before caches had "
                         "one)")
    if meta[POINTER_SHA] != pointer_digest(meta):
        raise ValueError(f"{POINTER} was changed or damaged (its checksum does not match)")
    snap = root / str(meta["snapshot"])
    if not snap.is_dir():
        raise ValueError(f"its snapshot {snap.name} is missing")
    if snapshot_digest(snap) != meta[FILES_SHA]:
        raise ValueError(f"the files of {snap.name} were changed or damaged (their SHA-256 "
                         f"is not the one {POINTER} records)")


def read_cache(root: Path) -> tuple[dict[str, Any], Frames | None] | None:
    """What a cache directory holds: its pointer (``CURRENT.json``) and its frames, or None.

    Parameters
    ----------
    root : pathlib.Path
        The cache directory.

    Returns
    -------
    tuple of (dict, Frames or None), or None
        The pointer's contents and the frames (None for a cache of another format, whose
        frames are not read); None when the directory holds no cache.

    Raises
    ------
    ValueError
        The pointer or the snapshot's files were changed or damaged (their checksums do
        not match), or the pointer is not a JSON object.
    OSError
        A file cannot be read.

    Examples
    --------
    >>> _ = cache.load_cached(client, "object_3", tmp_path / "orders")
    >>> pointer, frames = cache.read_cache(tmp_path / "orders")
    >>> pointer["target"], pointer["format"], len(frames)
    ('object_3', 1, 30)
    """
    pointer = root / POINTER
    if not pointer.exists():
        return None
    meta = json.loads(pointer.read_text(encoding="utf-8"))
    if not isinstance(meta, dict):
        raise ValueError(f"{pointer} is not a JSON object")
    if meta.get(POINTER_SHA) is not None and meta[POINTER_SHA] != pointer_digest(meta):
        # before the format: a flipped byte there must not pass for another format
        raise ValueError(f"{POINTER} was changed or damaged (its checksum does not match)")
    if meta.get("format") != CACHE_FORMAT:
        return meta, None
    check_integrity(root, meta)
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
    """Write frames into a cache directory and point ``CURRENT.json`` at them, atomically.

    The new snapshot is written aside, fsynced and renamed; then the pointer is replaced
    (see the module docstring), so a crash leaves the previous cache whole. Older
    snapshots are removed afterwards.

    Parameters
    ----------
    root : pathlib.Path
        The cache directory (``check_cache_dir``).
    frames : Frames
        The frames to keep (with their as-loaded copy).
    meta : mapping
        What the pointer records beside the snapshot and checksums (``format``,
        application, target, load parameters, schema fingerprint, ``loaded_at``).
    data_changed : bool, default True
        False: keep the current snapshot (nothing changed) and write the pointer alone.

    Raises
    ------
    UsageError
        The frames cannot be saved (see ``to_parquet``).
    OSError
        A file cannot be written.

    Examples
    --------
    >>> orders = read_object(client, "Work Orders")
    >>> cache.save_cache(tmp_path, orders, {"format": cache.CACHE_FORMAT})
    >>> sorted(p.name for p in tmp_path.iterdir())[0]
    'CURRENT.json'
    """
    current, current_sha = None, None
    try:
        old_pointer = json.loads((root / POINTER).read_text(encoding="utf-8"))
        current, current_sha = old_pointer.get("snapshot"), old_pointer.get(FILES_SHA)
    except (OSError, ValueError, AttributeError):
        current = None
    snapshot = current if (not data_changed and current
                           and (root / str(current)).is_dir()) else None
    # a kept snapshot was verified when read (load_cached): its digest carries over
    files_sha = current_sha if snapshot is not None else None
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
    if files_sha is None:
        files_sha = snapshot_digest(root / snapshot)
    pointer = dict(meta, snapshot=snapshot, original="main" if same else "stored")
    pointer[FILES_SHA] = files_sha
    pointer.pop(POINTER_SHA, None)
    pointer = json.loads(json.dumps(pointer, default=str))  # as a reader will see it
    pointer[POINTER_SHA] = pointer_digest(pointer)
    tmp_pointer = root / ("." + POINTER + ".tmp")
    with open(tmp_pointer, "w", encoding="utf-8") as fh:
        json.dump(pointer, fh, indent=1, sort_keys=True)
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
                sort_order: str | None = None, columns: Columns = "labels",
                timezone: Any = None, modified_field: str | None = None,
                options: LoadOptions | None = None,
                **load_options: Any) -> tuple[Frames, RefreshReport | None]:
    """Frames of a target through an on-disk cache: refreshed when it fits, else loaded in full.

    A cache made for this application, target, filters, sort, columns, timezone and
    schema is read and refreshed with a few requests (``refresh``); any other (or an
    unreadable or damaged one) is loaded in full with a ``CacheNotice`` saying why. Either
    way the cache is written again. ``read_object(..., cache=dir)`` calls this.

    Parameters
    ----------
    client : Client
        The application to read.
    target : str or tuple of str
        An object key (``"object_3"``) or a view's keys (``("scene_1", "view_1")``).
    cache : str or os.PathLike
        The cache directory (created if missing; it must hold nothing else).
    filters, sort_field, sort_order, columns, timezone
        As ``read_object`` takes them; part of what the cache must have been made for.
    modified_field : str, optional
        As ``refresh`` takes it.
    options : LoadOptions, optional
        The load's options as ``read_object`` built them, instead of the keywords
        (``filters`` ... ``timezone`` and ``**load_options``).
    **load_options
        Other options of ``read_object`` (``progress``, ``rows_per_page``, ...), for a
        load in full; ``limit`` is refused.

    Returns
    -------
    tuple of (Frames, RefreshReport or None)
        The frames, and the refresh's report (None when the load was made in full).

    Raises
    ------
    UsageError
        Before any record request: ``limit``, a bad option or filter, or a directory that
        cannot be a cache.
    ServiceError
        A request failed (see ``read_object`` and ``refresh``).

    Examples
    --------
    >>> frames, report = cache.load_cached(client, "object_3", tmp_path / "orders")
    >>> len(frames), report is None      # the first time: loaded in full
    (30, True)
    >>> frames, report = cache.load_cached(client, "object_3", tmp_path / "orders")
    >>> print(report)                    # then: refreshed
    refresh: 0 added, 0 changed, 0 deleted, 0 conflicting cells; 1 requests
    """
    if options is None:
        options = LoadOptions.of(filters=filters, sort_field=sort_field,
                                 sort_order=sort_order, columns=columns, timezone=timezone,
                                 **load_options)
    elif load_options or filters is not None or sort_field is not None \
            or sort_order is not None or columns != "labels" or timezone is not None:
        raise UsageError("load_cached takes options= or the keywords, not both")
    if options.limit is not None:
        raise UsageError("cache= keeps every record current: it cannot be used with limit=")
    root = check_cache_dir(cache)  # after every other check: nothing made for bad input
    schema = client.schema()
    # prepared once, as the load prepares them (dates in the application's timezone): the
    # cache is checked against the query a load sends, and a full load sends this one
    options = options.prepared(client, target)
    query = options.query
    assert query is not None
    tz = options.timezone
    want = {"app_id": client.app_id, "target": target_name(target),
            "filters": query.filters,
            "sort_field": options.sort_field, "sort_order": options.sort_order,
            "columns": options.columns if isinstance(options.columns, str)
            else list(options.columns),
            "timezone": tz.key if tz is not None else None}
    why = ""
    cached: tuple[dict[str, Any], Frames | None] | None = None
    try:
        cached = read_cache(root)
    except (OSError, ValueError, KeyError, TypeError, UsageError) as exc:
        why = f"it cannot be used ({exc})"
    fingerprint = schema_fingerprint(schema, target)
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
        frames = load(client, target, options)
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
    """What ``export_incremental`` did.

    Attributes
    ----------
    path : pathlib.Path
        The saved frames' directory.
    records : int
        Records it holds.
    tables : list of str
        The exploded tables saved beside.
    report : RefreshReport or None
        The refresh's report; None when the load was made in full.
    written : bool
        False when nothing changed and the saved frames were kept as they were.
    cache : pathlib.Path
        The cache directory used.
    tables_path : pathlib.Path or None
        Where the tables were saved (None without tables).

    Examples
    --------
    >>> out = cache.export_incremental(client, "Work Orders", tmp_path / "orders")
    >>> out.records, out.written, out.cache.name
    (30, True, 'orders.cache')
    """

    path: Path
    records: int
    tables: list[str]
    report: RefreshReport | None
    written: bool                      # False: nothing changed, the dataset was kept
    cache: Path
    tables_path: Path | None = None


def export_incremental(client: Client, target: Target, out_dir: str | os.PathLike[str], *,
                       cache: str | os.PathLike[str] | None = None,
                       filters: Filters | None = None, columns: Columns = "labels",
                       timezone: Any = None, modified_field: str | None = None,
                       progress: bool | None = None) -> IncrementalExport:
    """Keep saved frames on disk current, with a few requests per run.

    The frames come from a cache (default ``<out_dir>.cache``) refreshed with a few
    requests, and are saved again (``to_parquet(..., overwrite=True)``, export's layout:
    the records, ``.tables``, the metadata and the as-loaded copy beside) only when
    something changed. Unlike ``export``, the records are held in memory.

    Parameters
    ----------
    client : Client
        The application to read.
    target : str or tuple of str
        An object or a view, by key or name (as ``export`` takes it).
    out_dir : str or os.PathLike
        Where the frames are saved.
    cache : str or os.PathLike, optional
        The cache directory (default: ``out_dir`` with ``.cache`` appended).
    filters, columns, timezone, modified_field, progress
        As ``read_object`` takes them.

    Returns
    -------
    IncrementalExport
        What was saved, and the refresh's report.

    Raises
    ------
    UsageError
        ``out_dir`` holds something other than saved frames, an unknown target, or as
        ``load_cached`` raises it.
    ServiceError
        A request failed.

    Examples
    --------
    >>> first = cache.export_incremental(client, "Work Orders", tmp_path / "orders")
    >>> again = cache.export_incremental(client, "Work Orders", tmp_path / "orders")
    >>> first.written, again.written     # nothing changed: kept as it was
    (True, False)
    """
    layout = SavedLayout.of(out_dir)
    dest = layout.data
    if dest.exists() and (not dest.is_dir() or (any(dest.iterdir())
                                                 and not layout.meta.exists())):
        raise UsageError(f"{dest} is not saved frames (it holds other files): choose "
                         "another directory")
    tgt = target_keys(client.schema(), target)  # by key or name
    columns, _, modified_field = field_options(client, tgt, columns, None, modified_field)
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

