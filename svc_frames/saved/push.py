"""push: saved frames (``to_parquet`` or ``export``), edited with any tool, written back.

Push reads and checks the directory before any request (``read_for_push``), runs
``write_back`` on it, and afterwards brings the saved as-loaded copy (and, with
``overwrite=True``, the data) in step with what was applied (``save_pushed``).

Usage::

    report = push(client, "out/orders", dry_run=True)
    report.table
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..errors import SvcError, UsageError
from ..frames import Frames
from ..kinds.base import FieldSpec
from ..records import Client
from ..writeback import Report, write_back
from .exploded import stale_cells
from .layout import SavedLayout, Staging, meta_doc, read_meta, write_meta
from .parquet import (
    column_fields,
    new_or_na,
    read_as_written,
    read_parquet,
    same_target,
    write_frames,
)


# ---- push's side ------------------------------------------------------------------------
def read_for_push(path: str | os.PathLike[str], *, overwrite: bool = False,
                  dry_run: bool = False) -> Frames:
    """Saved frames ready for ``write_back``, or UsageError before any request: no
    source or as-loaded copy, or new rows while the data may not be rewritten (their new
    ids must be written back, else a second push would create them again).

    Usage: ``frames = read_for_push("out/orders")`` (what ``push`` does first)"""
    layout = SavedLayout.of(path)
    if (layout.data / "main.parquet").exists() and not layout.meta.exists():
        # push refreshes the metadata beside the data after its writes: refuse before them
        raise UsageError(f"{layout.data} was saved by an earlier svc_frames (main.parquet "
                         "inside): convert it first with to_parquet(read_parquet(old), new)")
    frames = read_parquet(path)
    if frames.source is None or frames.original is None:
        raise UsageError(f"{path}: no write-back metadata (source and as-loaded copy) in "
                         "these saved frames: save them with to_parquet(read_object(...)) "
                         "or export(...)")
    if not same_target(frames.source, frames.original.source or frames.source):
        raise UsageError(f"{path}: the metadata and the as-loaded copy name different "
                         "targets")
    idx = frames.main.index
    new = int(sum(1 for v in idx if new_or_na(v)))
    if new and not overwrite and not dry_run:
        raise UsageError(f"{layout.data}: {new} new row(s) to create: pass overwrite=True "
                         "(CLI: --overwrite) so push can write their new ids into the data "
                         "(otherwise pushing again would create them again); nothing was "
                         "sent")
    return frames


def check_application(frames: Frames, client: Client, path: str | os.PathLike[str]) -> None:
    """UsageError, before any request, when the saved frames were loaded from another
    application than the client's: record ids of two applications can coincide, so
    pushing there would overwrite unrelated records. Frames that do not name their
    application (saved without one) are let through."""
    src = frames.source
    assert src is not None  # read_for_push refuses frames without a source
    if src.app_id and src.app_id != client.app_id:
        what = (f"object {src.object_key}" if src.kind == "object"
                else f"view {src.scene_key}/{src.view_key}")
        name = f" ({src.name})" if src.name else ""
        raise UsageError(f"{path}: these frames were saved from application {src.app_id!r} "
                         f"({what}{name}), but the client is for application "
                         f"{client.app_id!r}: push writes only to the application they were "
                         "loaded from; nothing was sent")


def check_schema(frames: Frames, client: Client, path: str | os.PathLike[str]) -> None:
    """UsageError, before any write, when the saved frames no longer match the
    application's schema (read once, ``client.schema()``): their object (or view) is
    gone or now has another name (metadata edited to point elsewhere), a saved field is
    gone from the object, or a field's kind changed. Writing such frames would send
    values to the wrong fields or in the wrong shape. A service that shows no schema
    lets them through (nothing to compare with)."""
    src = frames.source
    assert src is not None  # read_for_push refuses frames without a source
    schema = client.schema()
    if not schema.available:
        return
    key = src.object_key
    saved_as = f"object {key}" + (f" ({src.name})" if src.name and src.kind == "object"
                                   else "")
    if src.kind == "view" and schema.view(str(src.scene_key), str(src.view_key)) is None:
        raise UsageError(f"{path}: view {src.scene_key}/{src.view_key} of these saved "
                         f"frames is not in application {client.app_id!r} any more; "
                         "nothing was sent")
    if schema.object(key) is None:
        raise UsageError(f"{path}: {saved_as} of these saved frames is not an object of "
                         f"application {client.app_id!r} (objects: "
                         f"{', '.join(schema.object_keys()) or 'none'}); nothing was sent",
                         field=key)
    live_name = schema.object_name(key)
    if src.kind == "object" and src.name and live_name and src.name != live_name:
        raise UsageError(f"{path}: these frames were saved from {saved_as}, but the "
                         f"application calls {key} {live_name!r}: the metadata names "
                         "another object than the data came from (or the object was "
                         "renamed: export it again); nothing was sent", field=key)
    # a view shows fields of connected objects too (field keys are the application's)
    live = (schema.all_fields() if src.kind == "view"
            else {f.key: f for f in schema.object_fields(key) or ()})
    for f in src.fields:
        now = live.get(f.key)
        if now is None:
            raise UsageError(f"{path}: saved field {f.key} ({f.label}, {f.kind}) is no "
                             f"field of {key if src.kind == 'object' else 'the application'} in "
                             f"application {client.app_id!r} any more; "
                             "export the object again; nothing was sent", field=f.key)
        if not src.kinds_inferred and now.kind != f.kind:
            raise UsageError(f"{path}: saved field {f.key} ({f.label}) was {f.kind} when "
                             f"the frames were saved, {key} now has it as {now.kind}; "
                             "export the object again; nothing was sent", field=f.key)


def save_pushed(frames: Frames, path: str | os.PathLike[str], outcomes: pd.DataFrame,
                field_keys: Sequence[Sequence[str]], *, overwrite: bool = False) -> None:
    """After a push, so that pushing again sends nothing: with ``overwrite=True`` the data
    files are rewritten with the server's values and new ids, and the as-loaded copy is
    the refreshed ``frames.original``; without it the user's files stay as they are and
    the as-loaded copy takes, for each applied record, the values that were sent (the
    columns of ``outcomes.fields``) as the data files hold them, and drops deleted records.

    ``outcomes``: the report table of the run (``record_id, action, fields, status``),
    ``field_keys`` the keys of its rows' fields (``Report.field_keys``).
    Usage: ``save_pushed(frames, "out/orders", report.table, report.field_keys)``"""
    layout = SavedLayout.of(path)
    meta = read_meta(layout.data)
    if frames.original is None:
        raise UsageError("the pushed frames have no as-loaded copy to save")
    keys_of = pd.Series([list(k) for k in field_keys], index=outcomes.index, dtype=object)
    applied = outcomes.assign(keys=keys_of)
    applied = applied[applied["status"] == "applied"]
    with Staging(layout) as st:
        if overwrite:
            loaded = frames.original
            columns, tables = write_frames(frames, st.data, st.tables, meta.format)
            # the analyst's own columns stay in the data, never among the saved ones
            columns = {c: t for c, t in columns.items() if c in meta.columns}
            which: tuple[str, ...] = ("loaded", "tables", "meta", "data")
            stale: dict[str, dict[str, list[str]]] = {}
        else:
            # the files stay as they are; a choice edited in its table keeps its old
            # options in the records' file: recorded, so that the next push reads them as
            # no edit (the as-loaded copy holds what was sent)
            on_disk = read_parquet(layout.data)
            loaded = _sent_as_baseline(on_disk, applied)
            columns, tables = meta.columns, meta.tables
            stale = stale_cells(meta.stale, read_as_written(layout.data).main, on_disk.main,
                                _sent_ids(applied, column_fields(meta.source)),
                                column_fields(meta.source))
            which = ("loaded", "meta")
        write_frames(loaded, st.loaded / "main", st.loaded / "tables", "parquet")
        write_meta(st.meta, meta_doc(frames.source, meta.format, columns, tables,
                                       layout.loaded, len(frames.main),
                                       str(meta.extra.get("written_by") or "push"),
                                       staged_loaded=st.loaded, skipped=frames.skipped,
                                       stale=stale))
        st.install(which)


def _sent_ids(applied: pd.DataFrame, fields: Mapping[str, FieldSpec]) -> dict[str, set[Any]]:
    """Column or table name -> the records of ``applied`` updates that sent its field."""
    out: dict[str, set[Any]] = {}
    for rid, action, sent in zip(applied["record_id"], applied["action"], applied["keys"],
                                 strict=True):
        if action != "update":
            continue
        for name, f in fields.items():
            if f.key in sent:
                out.setdefault(name, set()).add(rid)
    return out


def _sent_as_baseline(on_disk: Frames, applied: pd.DataFrame) -> Frames:
    """The as-loaded copy of ``on_disk`` with the sent columns of applied updates taken
    from the data files, and applied deletes dropped."""
    assert on_disk.original is not None
    base = on_disk.original
    main = base.main.copy()
    tables = {k: v.copy() for k, v in base.tables.items()}
    col_fields = column_fields(base.source)
    for rid, action, sent in zip(applied["record_id"], applied["action"], applied["keys"],
                                 strict=True):
        if action == "delete":
            main = main.drop(index=rid, errors="ignore")
            tables = {k: t[t.iloc[:, 0] != rid] for k, t in tables.items()}
            continue
        keys = set(sent)
        cols = [c for c in main.columns if c in col_fields and col_fields[c].key in keys]
        if rid in main.index and rid in on_disk.main.index and cols:
            main.loc[rid, cols] = on_disk.main.loc[rid, cols].to_numpy()
        for name, t in tables.items():
            if name in col_fields and col_fields[name].key in keys and name in on_disk.tables:
                mine = on_disk.tables[name]
                tables[name] = pd.concat([t[t.iloc[:, 0] != rid],
                                          mine[mine.iloc[:, 0] == rid]], ignore_index=True)
    return Frames(main, tables, base.source)

def push(client: Client, path: str | os.PathLike[str], *, dry_run: bool = False,
         save: bool = True, overwrite: bool = False, **options: Any) -> Report:
    """Write back saved frames edited with any tool (the ``svc-frames push`` command).

    Reads and checks the directory :func:`to_parquet` or :func:`export` wrote (as
    :func:`read_parquet` does) before any request, then runs :func:`write_back` on it:
    only the records whose values differ from the saved as-loaded copy are sent. After a
    run that applied something, the as-loaded copy follows what was applied, so pushing
    again sends nothing. The files' columns are named as saved (docs/column-names.md).

    Parameters
    ----------
    client : Client
        The application the frames were saved from.
    path : str or os.PathLike
        The records' directory of the saved frames.
    dry_run : bool, default False
        Report what would be sent; send nothing and write nothing.
    save : bool, default True
        Bring the saved frames in step after the run; False writes nothing to disk.
    overwrite : bool, default False
        Also rewrite the data files with the server's values and the new records' ids
        (needed when the data holds new rows: without their ids a second push would
        create them again).
    **options
        Options of :func:`write_back` (``guard``, ``on_conflict``, ``delete_missing``,
        ``journal``, ``quota_reserve``, ``progress``...).

    Returns
    -------
    Report
        One row per record sent (or planned, with ``dry_run``).

    Raises
    ------
    UsageError
        Before any request: everything :func:`read_parquet` refuses, saved frames without
        a source or an as-loaded copy, new rows without ``overwrite=True``, frames saved
        from another application than the client's, frames whose object, view or fields
        the live schema no longer has as saved (checked with one schema request before any
        write), and bad :func:`write_back` options.
    ConflictError
        ``on_conflict="raise"`` and a record changed on the service since it was saved.
    WriteInterrupted
        Ctrl-C during the run (see :func:`write_back`): what was applied is saved first
        (the as-loaded copy), so pushing again sends only the rest; ``err.report``.
    ServiceError
        A request that is no record's own write failed (see :func:`write_back`).

    Warns
    -----
    UserWarning
        The writes were applied but the saved frames could not be brought in step (the
        report is returned all the same): export again before editing further.

    Examples
    --------
    >>> saved = export(client, "Work Orders", tmp_path / "orders")
    >>> df = pd.read_parquet(saved.path)
    >>> df.loc[df["Status"] == "Open", "Status"] = "On Hold"
    >>> df.to_parquet(saved.path / "part-00001.parquet", index=False)
    >>> push(client, saved.path, dry_run=True).counts
    {'planned': 11}
    >>> push(client, saved.path, guard="once").counts
    {'applied': 11}
    >>> push(client, saved.path, dry_run=True).nothing_to_send
    'nothing to send: the frames equal what was loaded'
    """
    frames = read_for_push(path, overwrite=overwrite, dry_run=dry_run or not save)
    check_application(frames, client, path)
    check_schema(frames, client, path)
    try:
        report = write_back(client, frames, dry_run=dry_run, **options)
    except BaseException as exc:
        # interrupted (Ctrl-C: WriteInterrupted) or failed after some writes: what was
        # applied is saved too, so pushing again sends only the rest
        partial = getattr(exc, "report", None)
        if save and not dry_run and isinstance(partial, Report):
            _keep_applied(frames, path, partial, overwrite)
        raise
    if save and not dry_run:
        _keep_applied(frames, path, report, overwrite)
    return report


def _keep_applied(frames: Frames, path: str | os.PathLike[str], report: Report,
                  overwrite: bool) -> None:
    """``save_pushed`` when the run applied something; a disk that refuses is a warning
    (the writes happened: the report must reach the caller whatever the disk says)."""
    if not (report.table["status"] == "applied").any():
        return
    try:
        save_pushed(frames, path, report.table, report.field_keys, overwrite=overwrite)
    except (OSError, SvcError) as exc:
        warnings.warn(f"the writes in this report were applied, but {path} could not be "
                      f"refreshed ({exc}); pushing it again would diff against the old "
                      "as-loaded copy: export again before editing further", stacklevel=3)
