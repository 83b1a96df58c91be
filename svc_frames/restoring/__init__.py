"""Restore: records of one object brought back to their state at a past time, from a
mirror's history, through ``write_back`` itself (docs/restore.md).

The package is named for the activity (as ``undoing/`` holds ``undo``), so that
``svc_frames.restore`` stays the function.

* ``select.py`` which records (all, ids, a filter matched against the mirror's frames)
* ``build.py``  the restore's frames (as last seen -> as at ``when``), what cannot come
  back, the links to point at re-created records
* ``plan.py``   ``restore`` and ``RestorePlan`` (review, apply through ``write_back``, new
  ids, the repointing read live)

Usage::

    p = restore(client, "app.duckdb", "2026-11-27 18:00", "Work Orders")
    p.lost, p.created_after, p.changes
    p.apply(journal="restore.jsonl")
"""

from .plan import RestorePlan, restore

__all__ = ["restore", "RestorePlan"]
