"""The files a mirror run downloads for its copies (``mirror(..., assets=True)``): those
of the records it inserted or updated, or of every record of an object that has no copy
yet, that the target does not hold already (assets.py: the table and its reader).

Usage: ``copies = fetch_copies(client, target, runs, run_id, state)`` (before the run's
transaction; apply.py writes them inside it).
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable
from typing import Any

import pandas as pd
import pyarrow as pa

from ..assets import download
from ..errors import NotFound
from ..kinds.assets import is_url_source
from ..records import Client
from .apply import ObjectRun
from .assets import SCHEMA, held_copies
from .state import MirrorState
from .target import MirrorTarget

__all__ = ["fetch_copies"]


def _asset_fields(run: ObjectRun) -> list[str]:
    """The object's file fields and uploaded image fields (an image by URL: nothing to
    copy)."""
    if run.frames is None or run.frames.source is None:
        return []
    return [f.key for f in run.frames.source.fields
            if f.kind in ("file", "image") and not is_url_source(f)]


def fetch_copies(client: Client, target: MirrorTarget, runs: Iterable[ObjectRun], run_id: int,
                 state: MirrorState | None = None) -> pa.Table:
    """Download the files the target has no copy of (module docstring): of each object's
    inserted and updated records, or of all its records when it has no copy yet. One GET
    per file; a file the service no longer has (404 between the read and the download:
    replaced, and the record's update brings the new one to the next run) is not copied.
    Usage: ``fetch_copies(client, target, runs, 2)``"""
    runs = [r for r in runs if _asset_fields(r)]
    have = held_copies(target, [r.key for r in runs])
    copied = {k[0] for k in have}
    out: dict[str, list[Any]] = {name: [] for name in SCHEMA.names}
    for run in runs:
        assert run.frames is not None
        main = run.frames.main
        if run.rows is not None and run.key not in copied and state is not None:
            # an incremental run's frames hold the changed records only: copies turned on
            # for a mirror that has none read the other records' files from it, once
            held = state.frames(run.key).main
            gone = set(run.deleted) | set(main.index)
            main = pd.concat([held.loc[[i for i in held.index if i not in gone]], main])
        ids = (list(main.index) if run.rebuild or run.key not in copied
               else [i for i in run.inserted + run.updated if i in main.index])
        for key in _asset_fields(run):
            if key not in main.columns or f"{key}.url" not in main.columns:
                continue
            part = main.loc[ids, [key, f"{key}.url", f"{key}.filename"]]
            for rid, (aid, url, name) in zip(part.index, part.itertuples(index=False),
                                             strict=True):
                if pd.isna(url) or not url:
                    continue
                aid = "" if pd.isna(aid) else str(aid)
                if (run.key, str(rid), key, aid or str(url)) in have:
                    continue
                data = _download(client, str(url))
                if data is None:
                    continue
                name = "" if pd.isna(name) else str(name)
                row = [run.key, str(rid), key, aid or str(url), str(url), name,
                       mimetypes.guess_type(name)[0] or "application/octet-stream",
                       len(data), data, run_id]
                for col, value in zip(SCHEMA.names, row, strict=True):
                    out[col].append(value)
                run.report.assets += 1
    return pa.table(out, schema=SCHEMA)


def _download(client: Client, url: str) -> bytes | None:
    try:
        return download(client, url)
    except NotFound:   # replaced or deleted since the read: the next run sees the change
        return None
