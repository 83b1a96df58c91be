"""The application's memory: a mirror kept current in DuckDB, PostgreSQL or Parquet, with
every version of every record, deletions and schema changes followed (docs/mirror.md).

The package is named for the activity (as ``refreshing/`` holds ``refresh``), so that
``svc_frames.mirror`` stays the function. One module per idea: ``run`` (``mirror``, the phases of a run), ``report`` (what it did),
``target`` (the target protocol and which target a name is), ``duckdbtarget``,
``postgres`` and ``parquetdir`` (the targets), ``lock`` (one run at a time), ``state``
(what the last run left), ``schemas`` (schema changes), ``history`` (versions),
``apply`` (the write phase), ``past`` (``as_of``, ``changes``), ``assets`` (copies of
files and images, ``asset_copies``); its errors
(``TargetBusy``, ``SchemaChanged``, ``TargetMismatch``) are in svc_frames.errors.

Usage::

    import svc_frames as sf
    report = sf.mirror(client, "app.duckdb")            # or "postgresql://..." or "dir/"
    app = sf.as_of("app.duckdb", "2026-11-27 18:00")
    feed = sf.changes("app.duckdb", since="2026-11-27")
"""

from __future__ import annotations

from ..errors import SchemaChanged, TargetBusy, TargetMismatch
from .past import as_of, changes
from .report import MirrorReport, ObjectReport
from .run import mirror

__all__ = ["mirror", "MirrorReport", "ObjectReport", "as_of", "changes", "SchemaChanged",
           "TargetBusy", "TargetMismatch"]
