"""Reading the past of a mirror: the application as the mirror knew it at any time
(``as_of``), and the change feed (``changes``).

The state at ``when`` is, per table, the history rows with ``valid_from <= when`` and
(``valid_to`` empty or ``> when``) that are not ``delete`` rows, in the columns of the
object's schema version in force at ``when`` (its column types, so the frames are typed
as a load types them; a field of another kind since then is read from the column its old
values were kept in).

Usage::

    app = as_of("app.duckdb", "2026-11-27 18:00")
    feed = changes("app.duckdb", since="2026-11-27")
"""

from __future__ import annotations

import json
import os
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..application import App
from ..errors import UsageError
from ..frames import Frames, Source
from .state import VERSION_COLUMNS, MirrorState, history_name, typed
from .target import MirrorTarget, open_target

__all__ = ["as_of", "changes", "open_versions", "last_run", "open_mirror", "read_time",
           "object_at"]


def _when(value: Any, what: str) -> pd.Timestamp:
    """A time as a UTC Timestamp (a naive one is taken as UTC)."""
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError):
        raise UsageError(f"{what} must be a time (datetime, Timestamp or ISO text), got "
                         f"{value!r}") from None
    if pd.isna(ts):
        raise UsageError(f"{what} must be a time, got {value!r}")
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def _open(target: str | os.PathLike[str]) -> tuple[MirrorTarget, MirrorState]:
    tgt = open_target(target, readonly=True)
    try:
        tgt.check()
        state = MirrorState.read(tgt)
    except BaseException:
        tgt.close()
        raise
    if state is None:
        tgt.close()
        raise UsageError(f"{target} holds no mirror")
    return tgt, state


def _valid(hist: pa.Table, when: pd.Timestamp | None) -> pa.Table:
    """The rows holding at ``when`` (None: the open versions)."""
    if when is None:
        mask = pc.is_null(hist.column("valid_to"))
    else:
        t = pa.scalar(when.to_pydatetime(), pa.timestamp("us", tz="UTC"))
        frm = pc.cast(hist.column("valid_from"), pa.timestamp("us", tz="UTC"))
        to = pc.cast(hist.column("valid_to"), pa.timestamp("us", tz="UTC"))
        mask = pc.and_kleene(pc.less_equal(frm, t),
                       pc.or_kleene(pc.is_null(to), pc.greater(to, t)))
    mask = pc.and_(mask, pc.not_equal(hist.column("change"), "delete"))
    return hist.filter(pc.fill_null(mask, False))


def _select(hist: pa.Table, columns: dict[str, str]) -> pa.Table:
    """The frame's columns from the history's (an empty column where it has none)."""
    arrays, names = [], []
    for frame_col, hist_col in columns.items():
        names.append(frame_col)
        arrays.append(hist.column(hist_col) if hist_col in hist.column_names
                      else pa.nulls(hist.num_rows))
    return pa.table(arrays, names=names)


def _frames_at(tgt: MirrorTarget, row: dict[str, Any], when: pd.Timestamp | None) -> Frames:
    layout = json.loads(row["layout"])
    cols = json.loads(row["columns"])
    hist = _valid(tgt.read(cols["main"]["history"]), when)
    main = typed(_select(hist, cols["main"]["columns"]), layout["main"]["dtypes"], "id")
    tables = {}
    for fkey, t in layout.get("tables", {}).items():
        part = cols.get(fkey) or {"history": history_name(t["table"]),
                                  "columns": {c: c for c in t["dtypes"]}}
        h = _valid(tgt.read(part["history"]), when)
        tables[fkey] = typed(_select(h, part["columns"]), t["dtypes"], None)
    frames = Frames(main, tables, Source.from_dict(json.loads(row["source"])))
    frames.original = frames.snapshot()
    return frames


def _version_at(state: MirrorState, key: str, when: pd.Timestamp | None
                ) -> dict[str, Any] | None:
    """The object's schema version in force at ``when`` (None: not mirrored then)."""
    s = state.schema
    rows = s[s["object_key"] == key]
    if when is not None:
        rows = rows[pd.to_datetime(rows["time"], utc=True) <= when]
    if not len(rows):
        return None
    row = {str(k): v for k, v in rows.sort_values("version").iloc[-1].to_dict().items()}
    return row if bool(row["present"]) else None


def last_run(target: str | os.PathLike[str]) -> int:
    """The number of the last run the target holds (0: none)."""
    try:
        tgt, state = _open(target)
    except UsageError:
        return 0
    tgt.close()
    return state.last_run


def open_versions(state: MirrorState, key: str) -> Frames | None:
    """The object's open versions as Frames: what the history says it holds now."""
    assert state.target is not None
    row = _version_at(state, key, None)
    return None if row is None else _frames_at(state.target, row, None)


def as_of(target: str | os.PathLike[str], when: Any, objects: list[str] | None = None
          ) -> App:
    """The application as the mirror knew it at ``when``: an ``App`` of typed frames.

    Each object's records whose version held at ``when``, with the columns and types of
    its schema at that time (as a load types them); an object not mirrored then (or
    removed by then) is left out.

    Parameters
    ----------
    target : str or os.PathLike
        A mirror (what ``mirror`` writes to).
    when : datetime, pandas.Timestamp or str
        The time (a naive time is UTC). A version written by a run holds from the run's
        start.
    objects : list of str, optional
        Object keys or names (default: every object mirrored at ``when``).

    Returns
    -------
    App
        By object key and name, as ``read_app`` returns (``app["Work Orders"].main``).

    Raises
    ------
    UsageError
        ``target`` is no mirror, ``when`` is not a time, or an object named was not
        mirrored at ``when``.

    Examples
    --------
    >>> report = mirror(client, tmp_path / "app.duckdb")
    >>> app = as_of(tmp_path / "app.duckdb", pd.Timestamp.now(tz="UTC"))
    >>> len(app["Work Orders"]), app["Work Orders"].main["field_46"].dtype
    (30, datetime64[ns, America/Chicago])
    >>> len(as_of(tmp_path / "app.duckdb", "2000-01-01"))
    0
    """
    at = _when(when, "when")
    tgt, state = _open(target)
    try:
        names = {o.name: k for k, o in state.objects.items()}
        wanted = None if objects is None else [names.get(o, o) for o in
                                               ([objects] if isinstance(objects, str)
                                                else objects)]
        frames: dict[str, Frames] = {}
        for key in state.objects:
            if wanted is not None and key not in wanted:
                continue
            row = _version_at(state, key, at)
            if row is None:
                if wanted is not None:
                    raise UsageError(f"{key} was not mirrored at {at.isoformat()} in "
                                     f"{target}")
                continue
            frames[key] = _frames_at(tgt, row, at)
        for key in wanted or ():
            if key not in state.objects:
                raise UsageError(f"no object {key!r} in the mirror {target}; it holds "
                                 f"{', '.join(state.objects)}")
        return App(frames, None, app_id=state.app_id)
    finally:
        tgt.close()


FEED_COLUMNS = ["object", "record", "field", "old", "new", "change", "run", "time"]


def changes(target: str | os.PathLike[str], since: Any = None, *, until: Any = None,
            objects: list[str] | None = None) -> pd.DataFrame:
    """The change feed: a row per field changed, record inserted and record deleted.

    An ``update`` gives a row per column whose value differs from the record's previous
    version (``old``, ``new``); an ``insert`` and a ``delete`` give one row (``field``
    empty). A field kept in an exploded table only (a connection) gives an ``update``
    row when its rows changed: ``old`` and ``new`` list the connected ids (another
    exploded table: its one column's values, or each row as a dict).

    Parameters
    ----------
    target : str or os.PathLike
        A mirror.
    since : datetime, pandas.Timestamp or str, optional
        Changes seen by runs that started at or after it (default: all).
    until : datetime, pandas.Timestamp or str, optional
        ... and before it.
    objects : list of str, optional
        Object keys or names (default: all).

    Returns
    -------
    pandas.DataFrame
        Columns ``object``, ``record``, ``field``, ``old``, ``new``, ``change``, ``run``,
        ``time``.

    Raises
    ------
    UsageError
        ``target`` is no mirror, or a time is not a time.

    Examples
    --------
    >>> _ = mirror(client, tmp_path / "app.duckdb")
    >>> feed = changes(tmp_path / "app.duckdb")
    >>> feed["change"].value_counts().to_dict()
    {'insert': 90}
    """
    lo = None if since is None else _when(since, "since")
    hi = None if until is None else _when(until, "until")
    tgt, state = _open(target)
    out: list[dict[str, Any]] = []
    try:
        names = {o.name: k for k, o in state.objects.items()}
        wanted = None if objects is None else {names.get(o, o) for o in objects}
        for key, obj in state.objects.items():
            if wanted is not None and key not in wanted:
                continue
            hist = tgt.read(history_name(obj.table_name)).to_pandas()
            if not len(hist):
                continue
            hist["valid_from"] = pd.to_datetime(hist["valid_from"], utc=True)
            hist = hist.sort_values(["id", "valid_from", "run_id"], kind="stable")
            data_cols = [c for c in hist.columns
                         if c not in ("id", "valid_from", "valid_to", "run_id", "change")]
            prev: dict[str, Any] = {}
            updates: list[dict[str, Any]] = []
            for rec in hist.to_dict("records"):
                rid = rec["id"]
                before = prev.get(rid)
                prev[rid] = rec
                t = rec["valid_from"]
                if (lo is not None and t < lo) or (hi is not None and t >= hi):
                    continue
                base = {"object": key, "record": rid, "change": rec["change"],
                        "run": int(rec["run_id"]), "time": t}
                if rec["change"] != "update" or before is None:
                    out.append({**base, "field": None, "old": None, "new": None})
                    continue
                updates.append(base)
                for c in data_cols:
                    a, b = before.get(c), rec.get(c)
                    if _differs(a, b):
                        out.append({**base, "field": c, "old": _plain(a), "new": _plain(b)})
            for fkey, t in obj.layout.get("tables", {}).items():
                if fkey not in data_cols and updates:   # else the main column says it
                    out += _exploded_changes(tgt.read(history_name(t["table"])).to_pandas(),
                                             fkey, updates)
    finally:
        tgt.close()
    feed = pd.DataFrame(out, columns=FEED_COLUMNS)
    feed = feed.sort_values(["time", "object", "record"], kind="stable").reset_index(drop=True)
    return feed.astype({"object": "string", "record": "string", "field": "string",
                        "change": "string", "run": "int64"})


def _exploded_changes(hist: pd.DataFrame, fkey: str, updates: list[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
    """The feed rows of one exploded field: for each update of its record, the rows the
    run closed (``valid_to`` its time) against the rows it wrote, when they differ."""
    if not len(hist):
        return []
    cols = [c for c in hist.columns if c not in ("record_id", *VERSION_COLUMNS)]
    pick = ["connected_id"] if "connected_id" in cols else cols
    for c in ("valid_from", "valid_to"):
        hist[c] = pd.to_datetime(hist[c], utc=True)
    closed: dict[tuple[str, Any], list[Any]] = {}
    wrote: dict[tuple[str, int], list[Any]] = {}
    for rec in hist.to_dict("records"):
        value = (_plain(rec[pick[0]]) if len(pick) == 1
                 else {c: _plain(rec[c]) for c in pick})
        if rec["change"] != "delete" and not pd.isna(rec["valid_to"]):
            closed.setdefault((rec["record_id"], rec["valid_to"]), []).append(value)
        wrote.setdefault((rec["record_id"], int(rec["run_id"])), []).append(value)
    out = []
    for base in updates:
        old = closed.get((base["record"], base["time"]), [])
        new = wrote.get((base["record"], base["run"]), [])
        if repr(old) != repr(new):
            out.append({**base, "field": fkey, "old": old or None, "new": new or None})
    return out


def _blank(v: Any) -> bool:
    if isinstance(v, (list, tuple)) or hasattr(v, "__len__") and not isinstance(v, str):
        return len(v) == 0
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _plain(v: Any) -> Any:
    if _blank(v):
        return None
    if hasattr(v, "tolist") and not isinstance(v, str):
        return v.tolist()
    return v


def _differs(a: Any, b: Any) -> bool:
    if _blank(a) and _blank(b):
        return False
    if _blank(a) != _blank(b):
        return True
    return bool(repr(_plain(a)) != repr(_plain(b)))



def open_mirror(target: str | os.PathLike[str]) -> tuple[MirrorTarget, MirrorState]:
    """The target opened read-only and its state (UsageError: not a mirror); the caller
    closes the target."""
    return _open(target)


def read_time(value: Any, what: str) -> pd.Timestamp:
    """A time as a UTC Timestamp (a naive one is UTC); UsageError naming ``what``."""
    return _when(value, what)


def object_at(state: MirrorState, key: str, when: pd.Timestamp | None
              ) -> Frames | None:
    """One object's frames as the mirror knew them at ``when`` (None: its open
    versions), in the columns of its schema then; None when not mirrored then."""
    assert state.target is not None
    row = _version_at(state, key, when)
    return None if row is None else _frames_at(state.target, row, when)
