"""Names svc_frames derives from the application, unique after each target's rules.

Names from the service are data: a label may hold spaces, dots, slashes, quotes, SQL
words, unicode, or differ from another only by case. Every name made from them (frame
columns and exploded tables in ``columns="labels"``, the directories of saved tables and
app datasets, DuckDB tables) goes through this module, so that it is unique after the
normalisation its target applies:

* frame columns (:func:`unique_labels`): unique case-insensitively (DuckDB and Spark fold
  case), never the record id ``id``, and no label's column can be another field's part
  column (``Site.city`` beside an address ``Site``). A label that clashes becomes
  ``"Label (field_N)"``; one that clashes even so, its field key.
* file and directory names (:func:`path_names`): no separator, control character, ``.``
  or ``..``, no leading dot, no name a file system reserves (``CON``, ``NUL`` ...), at most
  ``MAX_PATH_BYTES`` bytes of UTF-8, ``_`` for the spaces between words (``Work Time`` is
  ``Work_Time``, no clash and no warning); a name that had to change otherwise, or that
  clashes with another case-insensitively, ends in ``-`` and a stable hash of the
  original. Each is a
  single path component: nothing written under it can land outside its directory.
* SQL table names (:func:`sql_name`): lower case ``[a-z0-9_]``, at most ``MAX_SQL_CHARS``
  characters (a hash suffix when cut).

Disambiguation is deterministic: it depends only on the names, never on load order or
timing. Every call that names something this way warns once (:func:`warn_names`, a
NameWarning listing ``original -> used`` for the names that changed beyond the target's
plain normalisation), and the saved metadata records them.

Usage::

    unique_labels([("field_1", "ID", [""]), ("field_2", "Site", [".city"])])
    path_names(["In/Out", "In Out", ".."])
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from .errors import NameWarning, warn_user

__all__ = ["fold_case", "name_hash", "unique_labels", "path_names", "sql_name", "sql_slug",
           "bounded_sql", "changed", "paths_changed", "warn_names", "RESERVED_COLUMNS", "MAX_PATH_BYTES", "MAX_SQL_CHARS"]

RESERVED_COLUMNS = ("id",)   # the record id column of every frame
MAX_PATH_BYTES = 120   # leaves room for the siblings' suffixes (".tables", ".svc_frames.json")
MAX_SQL_CHARS = 63     # the identifier length many SQL engines keep
_RESERVED_FILES = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)),
                             *(f"lpt{i}" for i in range(10))})
_UNSAFE = re.compile(r"[^\w.-]+")
_SPACES = re.compile(r"(?<=\S) +(?=\S)")   # spaces between words: a path name's "_"


def fold_case(name: str) -> str:
    """A name as a case-insensitive target compares it (NFC, case folded)."""
    return unicodedata.normalize("NFC", name).casefold()


def name_hash(name: str) -> str:
    """Eight hex digits standing for ``name`` (stable across runs and machines)."""
    return hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def unique_labels(entries: Sequence[tuple[str, str, Sequence[str]]],
                  reserved: Iterable[str] = RESERVED_COLUMNS) -> dict[str, str]:
    """field key -> its column label, given (key, label, suffixes of its columns, e.g.
    ``["", ".to"]``): no two fields' columns equal case-insensitively, none is reserved.

    A field whose columns clash is named ``"Label (field_N)"``, then (if that clashes
    too) by its key, then by its key and a hash of its label."""
    taken = {fold_case(r) for r in reserved}
    stage = {key: 0 for key, _label, _sufs in entries}

    def named(key: str, label: str) -> str:
        s = stage[key]
        return (label, f"{label} ({key})", key, f"{key} [{name_hash(label)}]")[min(s, 3)]

    for _round in range(4):
        owners: dict[str, set[str]] = {}
        for key, label, sufs in entries:
            for suf in sufs or [""]:
                owners.setdefault(fold_case(named(key, label) + suf), set()).add(key)
        clash = {k for col, ks in owners.items() if len(ks) > 1 or col in taken for k in ks}
        if not clash:
            break
        for k in clash:
            stage[k] += 1
    return {key: named(key, label) for key, label, _sufs in entries}


def _path_safe(name: str) -> tuple[str, bool]:
    """(a single safe path component for ``name``, whether it had to change beyond the plain
    normalisation: spaces between words become ``_``, ``Work Time`` is ``Work_Time``)."""
    safe = _UNSAFE.sub("_", unicodedata.normalize("NFC", name)).strip()
    if safe.startswith("."):
        safe = "_" + safe.lstrip(".")
    if safe == "" or safe.strip("._") == "":
        safe = "_"
    if safe.split(".")[0].casefold() in _RESERVED_FILES:
        safe = "_" + safe
    changed = safe != _SPACES.sub("_", name)
    limit = MAX_PATH_BYTES - 9   # room for "-" and the hash
    if len(safe.encode("utf-8")) > limit:
        safe = safe.encode("utf-8")[:limit].decode("utf-8", "ignore")
        changed = True
    return safe, changed


def path_names(names: Iterable[str]) -> dict[str, str]:
    """name -> a file or directory name for it, unique case-insensitively among these
    names (module docstring); a name that changed, or clashes, ends in ``-<hash>``."""
    firsts = {n: _path_safe(n) for n in dict.fromkeys(names)}
    groups: dict[str, list[str]] = {}
    for n, (safe, _changed) in firsts.items():
        groups.setdefault(fold_case(safe), []).append(n)
    out: dict[str, str] = {}
    for n, (safe, changed) in firsts.items():
        clash = len(groups[fold_case(safe)]) > 1
        out[n] = f"{safe}-{name_hash(n)}" if changed or clash else safe
    return out


def sql_slug(name: str) -> str:
    """``name`` as a SQL-friendly word, before any cut: lower case, ``_`` for anything
    else (the plain normalisation :func:`sql_name` starts from)."""
    out = re.sub(r"[^0-9a-z]+", "_", name.casefold()).strip("_") or "t"
    return f"t_{out}" if out[0].isdigit() else out


def sql_name(name: str) -> str:
    """A SQL-friendly table name: lower case, ``_`` for anything else, at most
    ``MAX_SQL_CHARS`` characters (cut ones end in a hash of the name)."""
    return bounded_sql(sql_slug(name), name)


def bounded_sql(name: str, original: str | None = None) -> str:
    """``name`` (already SQL-friendly) cut to ``MAX_SQL_CHARS`` characters, ending in a
    hash of ``original`` (default ``name``) when cut."""
    if len(name) <= MAX_SQL_CHARS:
        return name
    return f"{name[:MAX_SQL_CHARS - 9].rstrip('_')}_{name_hash(original or name)}"


def changed(names: Mapping[str, str]) -> dict[str, str]:
    """The entries of an ``original -> used`` mapping whose used name differs."""
    return {k: v for k, v in names.items() if k != v}


def paths_changed(names: Mapping[str, str]) -> dict[str, str]:
    """The entries of a ``name -> path name`` mapping (:func:`path_names`) whose path name
    is more than the name with ``_`` for the spaces between its words: what is worth a
    warning (``Work Time`` -> ``Work_Time`` is not)."""
    return {k: v for k, v in names.items() if v != _SPACES.sub("_", k)}


SHOWN_NAMES = 20   # renamings a warning lists; the saved metadata records all of them


def warn_names(what: str, renamed: Mapping[str, str]) -> None:
    """One NameWarning for the names ``renamed`` (original -> used) to fit ``what``
    (e.g. "table directories"); nothing when it is empty."""
    if not renamed:
        return
    items = list(renamed.items())
    shown = ", ".join(f"{k!r} -> {v!r}" for k, v in items[:SHOWN_NAMES])
    more = f" and {len(items) - SHOWN_NAMES} more" if len(items) > SHOWN_NAMES else ""
    warn_user(f"{len(items)} name{'s' if len(items) != 1 else ''} changed as "
              f"{what}: {shown}{more}", NameWarning)
