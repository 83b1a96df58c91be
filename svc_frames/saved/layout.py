"""The saved-frames layout: where the data, the exploded tables, the metadata and the
as-loaded copy live (``SavedLayout``), writing them atomically (``Staging``), and the
metadata document (``read_meta``, ``SavedMeta``).

Usage: ``layout = SavedLayout.of("out/orders"); meta = read_meta("out/orders")``
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..frames import Source
from ..labels import label_renames
from ..names import changed, paths_changed, warn_names

META_VERSION = 2


DATA_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".csv": "csv",
                 ".xlsx": "xlsx"}


NEW_ID_PREFIX = "new:"  # rows to create (writeback's convention)


# ---- the saved layout -----------------------------------------------------------------
@dataclass(frozen=True)
class SavedLayout:
    """Where each part of saved frames lives: everything sits beside ``data``.

    Usage: ``SavedLayout.of("out/orders").meta  # out/orders.svc_frames.json``"""

    data: Path

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> SavedLayout:
        p = Path(path)
        if p.name in ("", ".", ".."):
            p = p.resolve()  # "." has no name to put the siblings beside
        return cls(p)

    def _sibling(self, suffix: str) -> Path:
        return self.data.with_name(self.data.name + suffix)

    @property
    def tables(self) -> Path:
        """``<data>.tables/<name>/``: the exploded tables, one dataset each."""
        return self._sibling(".tables")

    @property
    def meta(self) -> Path:
        """``<data>.svc_frames.json``: what push needs to read the data back."""
        return self._sibling(".svc_frames.json")

    @property
    def loaded(self) -> Path:
        """``<data>.svc_frames/``: the as-loaded copy (``main/``, ``tables/<name>/``)."""
        return self._sibling(".svc_frames")

    def parts(self) -> list[Path]:
        return [self.data, self.tables, self.meta, self.loaded]


def tables_dir(out_dir: str | os.PathLike[str]) -> Path:
    """Where saved frames keep the exploded tables of ``out_dir``: ``<out_dir>.tables``."""
    return SavedLayout.of(out_dir).tables


def data_files(root: Path) -> list[Path]:
    """The data files of a dataset directory, as Parquet readers list them: any depth,
    names starting with "." or "_" skipped (editor locks, ``_SUCCESS``)."""
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if (p.is_file() and p.suffix.lower() in DATA_SUFFIXES
                and not any(x.startswith((".", "_", "~$")) for x in rel)):
            out.append(p)
    return out


def _is_ours_or_data(layout: SavedLayout) -> bool:
    """May ``overwrite=True`` replace ``layout.data``? Only saved frames (their JSON file
    beside, or the old ``main.parquet`` layout) or a directory of data files alone."""
    d = layout.data
    if not d.exists() or layout.meta.exists() or (d / "main.parquet").exists():
        return True
    if not d.is_dir():
        return False
    return all(p.is_dir() or p.suffix.lower() in DATA_SUFFIXES for p in d.rglob("*"))


def check_free(layout: SavedLayout, overwrite: bool) -> None:
    """Nothing of the user's is replaced without ``overwrite=True``, and even then only
    saved frames or bare data directories (never a directory of other files)."""
    for p in layout.parts():
        if not p.exists() or (p.is_dir() and not any(p.iterdir())):
            continue
        if not overwrite:
            raise UsageError(f"{p} exists: pass overwrite=True (CLI: --overwrite) to "
                             "replace it; nothing was written")
    if overwrite and not _is_ours_or_data(layout):
        raise UsageError(f"{layout.data} holds files that are not saved frames: not replaced "
                         "(choose another directory)")


class Staging:
    """Temporary siblings of each destination, moved into place together at the end
    (the record directory last: its appearing says the rest is complete); removed if
    anything fails, so nothing is left half-written."""

    def __init__(self, layout: SavedLayout) -> None:
        self.layout = layout
        self.parent = layout.data.parent
        self.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{layout.data.name}.", dir=self.parent))
        self.data = self.tmp / "data"
        self.tables = self.tmp / "tables"
        self.loaded = self.tmp / "loaded"
        self.meta = self.tmp / "meta.json"
        self.data.mkdir()

    def install(self, which: tuple[str, ...] = ("loaded", "tables", "meta", "data")) -> None:
        """Move the staged parts named in ``which`` into place; a destination part that
        was not staged (no tables now, no as-loaded copy) is removed."""
        trash = self.tmp / "old"
        trash.mkdir()
        for i, name in enumerate(which):
            staged: Path = getattr(self, name)
            dest: Path = getattr(self.layout, name)
            if dest.exists() or dest.is_symlink():
                os.replace(dest, trash / f"{i}-{uuid.uuid4().hex}")
            if staged.exists():
                os.replace(staged, dest)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: Any) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def fsync(path: Path) -> None:
    """A file's (or directory's) bytes and entries on disk before what comes next."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: Path) -> None:
    """Every file and directory under ``root`` (``root`` included) on disk."""
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            fsync(Path(dirpath) / name)
        fsync(Path(dirpath))


def files_digest(root: Path, files: Iterable[Path]) -> str:
    """SHA-256 (hex) over ``files`` under ``root``: each by its path inside ``root``, its
    size and its bytes, in path order (so a file renamed, added or dropped counts too)."""
    h = hashlib.sha256()
    for p in sorted(files, key=lambda q: q.relative_to(root).as_posix()):
        rel = p.relative_to(root).as_posix()
        h.update(f"{rel}\0{p.stat().st_size}\0".encode())
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def loaded_digest(root: Path) -> str:
    """SHA-256 of the as-loaded copy at ``root``: the files a reader would read
    (``data_files``). Recorded in the metadata when the copy is written and checked when
    it is read back: push diffs against this copy, so a changed one would silently drop
    or invent edits."""
    return files_digest(root, data_files(root))


def dir_renames(tables: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """table name -> its directory, for the tables whose directory is named otherwise
    (names.path_names: a separator, a reserved name, a clash)."""
    return changed({name: str(t["dir"]) for name, t in tables.items()})


def warn_dir_renames(tables: Mapping[str, Mapping[str, Any]],
                     labels: Mapping[str, str] | None = None) -> None:
    """One NameWarning for a save whose table directories are named otherwise than the
    tables, with ``labels`` (column labels this save gave, not their load): the names a
    load gave the frames, which it warned about, are not repeated."""
    renamed = {**(labels or {}), **paths_changed(dir_renames(tables))}
    warn_names("saved column labels and table directories" if labels
               else "saved table directories", renamed)


def renamed_doc(source: Source | None, tables: Mapping[str, Mapping[str, Any]]
                ) -> dict[str, Any]:
    """The metadata's ``renamed``: each field whose label had to change as a column name
    (``columns``: field, label, used; in ``columns="labels"`` frames) and each table whose
    directory is named otherwise (``tables``: name -> dir)."""
    cols = [{"field": k, "label": label, "used": used}
            for k, label, used in (label_renames(source.fields) if source is not None
                                   and source.columns == "labels" else [])]
    return {"columns": cols, "tables": dir_renames(tables)}


def meta_doc(source: Source | None, fmt: str, columns: Mapping[str, str],
              tables: Mapping[str, Mapping[str, Any]], loaded: Path | None, records: int,
              written_by: str, *, staged_loaded: Path | None,
              skipped: Mapping[str, Iterable[str]] | None = None,
              stale: Mapping[str, Mapping[str, list[str]]] | None = None) -> dict[str, Any]:
    """The metadata document; ``staged_loaded``: where the as-loaded copy was just
    written (its digest goes in ``loaded_sha256``), None when there is none; ``skipped``:
    column -> the records whose wall time there the timezone skips (``Frames.skipped``,
    warned again by ``read_parquet``: the saved instant is not the stored wall time);
    ``stale``: table -> record -> the options its records' cell still shows after push
    sent an edit made in the table (``exploded``: that text is no edit)."""
    return {"svc_frames": META_VERSION, "written_by": written_by, "format": fmt,
            "source": source.to_dict() if source else None, "index": "id",
            "columns": dict(columns), "tables": {k: dict(v) for k, v in tables.items()},
            "renamed": renamed_doc(source, tables),
            "skipped": {c: list(dict.fromkeys(ids)) for c, ids in (skipped or {}).items()},
            **({"stale": {t: dict(v) for t, v in stale.items() if v}} if stale else {}),
            "loaded": loaded.name if loaded is not None else None, "records": records,
            "loaded_sha256": (loaded_digest(staged_loaded) if loaded is not None
                              and staged_loaded is not None else None)}


def write_meta(path: Path, doc: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(doc, indent=1) + "\n")


# ---- reading --------------------------------------------------------------------------
@dataclass
class SavedMeta:
    """The JSON file beside saved frames, checked."""

    path: Path
    source: Source | None
    format: str
    columns: dict[str, str]
    tables: dict[str, dict[str, Any]]
    loaded: str | None
    index: str = "id"
    loaded_sha256: str | None = None  # None: written before the as-loaded copy had one
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def skipped(self) -> dict[str, list[str]]:
        """column -> records whose wall time the timezone skips (``meta_doc``)."""
        return {str(c): list(ids) for c, ids in (self.extra.get("skipped") or {}).items()}

    @property
    def stale(self) -> dict[str, dict[str, list[str]]]:
        """table -> record -> the options its records' cell still shows after a push of
        an edit made in the table (``meta_doc``); malformed entries are ignored."""
        doc = self.extra.get("stale")
        if not isinstance(doc, dict):
            return {}
        return {str(t): {str(r): [str(x) for x in v] for r, v in recs.items()
                         if isinstance(v, list)}
                for t, recs in doc.items() if isinstance(recs, dict)}


def corrupt(path: Path, what: str) -> UsageError:
    return UsageError(f"{path}: corrupt svc_frames metadata: {what} (write the frames again "
                      "with to_parquet or export)")


def read_meta(path: str | os.PathLike[str]) -> SavedMeta:
    """The metadata of saved frames at ``path`` (the data directory), checked: a missing,
    unreadable or inconsistent file is refused naming it and what is wrong.

    Usage: ``read_meta("out/orders").source.object_key``"""
    layout = SavedLayout.of(path)
    f = layout.meta
    if not f.exists():
        raise UsageError(f"{f} is missing: {layout.data} was not saved by svc_frames "
                         "(to_parquet or export), or that file was moved; it must stay "
                         "beside the data for read_parquet and push")
    try:
        doc = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise corrupt(f, f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise corrupt(f, f"a JSON object was expected, found {type(doc).__name__}")
    if doc.get("svc_frames") != META_VERSION:
        raise corrupt(f, f"'svc_frames' is {doc.get('svc_frames')!r}, expected "
                          f"{META_VERSION} (the format version)")
    for key, kind in (("columns", dict), ("tables", dict), ("format", str)):
        if not isinstance(doc.get(key), kind):
            raise corrupt(f, f"{key!r} is missing or not a {kind.__name__}")
    if doc["format"] not in ("parquet", "csv", "xlsx"):
        raise corrupt(f, f"'format' is {doc['format']!r}, expected 'parquet', 'csv' or "
                         "'xlsx'")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in doc["columns"].items()):
        raise corrupt(f, "'columns' must map column names to type names")
    index = doc.get("index") or "id"
    if index not in doc["columns"]:
        raise corrupt(f, f"the index column {index!r} is not among 'columns'")
    for name, t in doc["tables"].items():
        if (not isinstance(t, dict) or not isinstance(t.get("dir"), str)
                or not isinstance(t.get("columns"), dict) or "/" in t["dir"]
                or t["dir"] in ("", ".", "..")):
            raise corrupt(f, f"table {name!r} needs a 'dir' name and 'columns'")
    skipped = doc.get("skipped", {})
    if not isinstance(skipped, dict) or not all(
            isinstance(ids, list) and all(isinstance(i, str) for i in ids)
            for ids in skipped.values()):
        raise corrupt(f, "'skipped' must map column names to lists of record ids")
    digest = doc.get("loaded_sha256")
    if digest is not None and not (isinstance(digest, str)
                                   and re.fullmatch(r"[0-9a-f]{64}", digest)):
        raise corrupt(f, f"'loaded_sha256' is {digest!r:.80}, not a SHA-256 hex digest")
    loaded = doc.get("loaded")
    if loaded is not None and loaded != layout.loaded.name:
        raise corrupt(f, f"'loaded' is {loaded!r}, expected {layout.loaded.name!r} "
                          "(was the directory renamed without its companions?)")
    source = None
    if doc.get("source") is not None:
        try:
            source = Source.from_dict(doc["source"])
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise corrupt(f, f"'source' does not describe an object or view ({exc!r})"
                           ) from None
        if source.kind not in ("object", "view") or not source.object_key and \
                source.kind == "object":
            raise corrupt(f, f"'source' names kind {source.kind!r} / object "
                              f"{source.object_key!r}")
    return SavedMeta(f, source, doc["format"], dict(doc["columns"]), dict(doc["tables"]),
                     loaded, index, digest, doc)
