"""An incremental run of one object: the records that changed since the last run, read
and written without reading the object's current tables back.

``refresh`` works on frames holding every record; a mirror's target holds them already,
so an object the last run mirrored with the same fields, whose schema has a stamped field
(a record rule setting a date on every create and update), is brought up to date from
what the target knows of it:

1. the stamp window (refresh's ``stamp_window``): the records stamped since the last run
   began (``svc_mirror_objects.source``'s ``load.loaded_at``, in the service's clock),
   decoded as small frames, and the listing's total; the stamps the target holds are read
   (that column alone) only when the service's clock is unknown;
2. the current rows of those records alone, read from the target (``read_rows``): a
   record it does not hold is inserted, one whose values differ updated (compared as
   refresh's merge compares: ``same``, ``records_differing``), the others unchanged;
   the main table's rows are compared on their stored values first, and only the cells
   that differ there are typed (``_differing``: equal stored values are the same);
3. when the total is not the rows the last run left plus the inserted ones, refresh's
   deletion search (``find_gone``) over the ids and auto-increment values the target
   holds (those two columns read); the deleted records' rows are read to close their
   versions and write their ``delete`` rows. A record the listing of ids holds that is
   neither held nor in the window was created after the window was read: the next run's
   window has it (its stamp is later than this run's start), so, unlike ``refresh``,
   nothing more is listed;
4. apply.py writes the inserted and updated records' rows and versions only; in an
   exploded table, only those of the updated records whose rows in it changed (a record
   updated in its main columns alone keeps its exploded rows and their open versions).

The run's first object's window is begun beside the schema's request (:class:`HeadStart`):
its inputs are what the last run left (the source, the stamped field it saw: ``load``'s
``stamped_field``), so it needs nothing of the schema but the confirmation, which
``read_changes`` checks before taking it (the same fields, the same stamped field);
otherwise it is discarded unused (its requests spent, nothing of it written).

The window's second page is asked beside its first when the run expects it
(:func:`pages_ahead`, from the last run's window kept in the source's ``load["window"]``):
a round trip saved on a window of two pages, a request spent on a window of one.

Not taken (``read_changes`` returns False and run.py refreshes the whole frames, as
before): no stamped field (every record is listed anyway), the periodic sweep's run
(``sweep_every``, refresh's ``sweep_due``).

Usage::

    head = HeadStart.begin(client, state, objects, every)   # beside the schema
    if read_changes(client, state, run, every, head):   # run.frames: changed records only
        ...
    head.close()
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..arrowcols import member
from ..frames import Frames, Source
from ..records import Client
from ..refreshing.deletions import find_gone
from ..refreshing.listing import column_maps
from ..refreshing.merge import records_differing, same
from ..refreshing.policy import stamp_window, sweep_due
from ..refreshing.window import clock_skew, stamp_cutoff
from ..saved.arrow import arrow_column  # how a run writes a column
from .apply import ObjectRun
from .state import MirrorState, typed

__all__ = ["HeadStart", "pages_ahead", "read_changes"]


@dataclass
class _Window:
    """What the stamp window needs, from the last run's state alone."""

    source: Source
    load: dict[str, object]
    mod: str
    rpp: int
    count: int
    ahead: int = 0


AHEAD_SHARE = 0.75
"""The share of a page the window is expected to exceed for its second page to be asked
beside its first (:func:`pages_ahead`)."""


def _span(load: dict[str, object], at: dt.datetime) -> float:
    """Seconds from the window's cutoff after ``load`` (the service's clock taken as the
    client's) to ``at``."""
    cut = stamp_cutoff(load.get("loaded_at"), pd.Series([], dtype="datetime64[ns, UTC]"),
                       dt.timedelta(0))
    return max((pd.Timestamp(at) - cut).total_seconds(), 1.0)


def pages_ahead(load: dict[str, object], rpp: int, held: int, now: dt.datetime) -> int:
    """Pages after page 1 to ask for beside it: 1 when the window is expected to need a
    second page, else 0. Never when the object held fewer records than a page at the last
    run (``held``). Else expected: the last run's window (``load["window"]``: its records
    and the seconds it spanned) scaled to this window's span reaches ``AHEAD_SHARE`` of a
    page; or no window was read since the last full listing (nothing tells the rate).

    Usage: ``pages_ahead(source.load, 1000, 100_000, dt.datetime.now(dt.timezone.utc))``"""
    if held < rpp:
        return 0
    seen = load.get("window")
    if not isinstance(seen, dict):
        return 1
    try:
        records, seconds = float(seen["records"]), float(seen["seconds"])
    except (KeyError, TypeError, ValueError):
        return 1
    expected = records * _span(load, now) / max(seconds, 1.0)
    return int(expected >= AHEAD_SHARE * rpp)


def _window_inputs(state: MirrorState, key: str, every: int, mod: str | None
                   ) -> _Window | None:
    """The window's inputs for ``key`` from the last run's state (``mod``: the stamped
    field, None: the one the last run saw); None when the object is not read by its
    window (module docstring: "Not taken")."""
    prev = state.objects.get(key)
    if prev is None or not prev.present:
        return None
    source = Source.from_dict(dict(prev.source))
    load = dict(source.load or {})
    if source.kind != "object" or load.get("limit") is not None or source.kinds_inferred:
        return None
    count, swept = sweep_due(load, every)
    mod = mod if mod is not None else str(load.get("stamped_field") or "") or None
    if swept or mod is None or not any(f.key == mod for f in source.fields):
        return None
    rpp = int(str(load.get("rows_per_page") or 1000))
    return _Window(source, load, mod, rpp, count,
                   pages_ahead(load, rpp, prev.rows, dt.datetime.now(dt.timezone.utc)))


class HeadStart:
    """The stamp window of the run's first object, asked beside the schema's request
    (module docstring): ``begin`` starts it in a thread, ``take`` gives its result to the
    object's ``read_changes`` when the schema confirms its inputs, ``close`` waits for it
    (before the writes, and when the run stops).

    ``sent``: the client's requests when it began (the object's report counts those sent
    since, less the schema's one request)."""

    def __init__(self, client: Client, key: str, inputs: _Window) -> None:
        self.client = client
        self.key = key
        self.inputs = inputs
        self._schema = threading.Event()
        self.started = dt.datetime.now(dt.timezone.utc)
        self.sent = client.request_count
        self.taken = False
        self.result: tuple[Frames, int] | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="svc-mirror-head",
                                        daemon=True)
        self._thread.start()

    @classmethod
    def begin(cls, client: Client, state: MirrorState | None,
              objects: Sequence[str] | None, every: int) -> HeadStart | None:
        """The first object's window started, when the last run's state tells which object
        is read first and how (else None). Before the schema's request: the first object
        is the first one named (by key or name), or the first the last run mirrored."""
        if state is None:
            return None
        present = [k for k, o in state.objects.items() if o.present]
        if objects is None:
            key = present[0] if present else None
        else:
            want = objects[0]
            key = want if want in present else next(
                (k for k in present if state.objects[k].name == want), None)
        inputs = _window_inputs(state, key, every, None) if key is not None else None
        if key is None or inputs is None:
            return None
        return cls(client, key, inputs)

    def schema_answered(self) -> None:
        """The run's schema is in (called by the run's thread, whatever its outcome)."""
        self._schema.set()

    def _work(self) -> None:
        w = self.inputs
        if clock_skew(self.client) is None:
            # the cutoff then needs the newest stamp held, which this thread must not read
            # from the target: wait for the schema's answer, which tells the clock
            self._schema.wait()
            if clock_skew(self.client) is None:
                return   # not taken: read_changes asks for the window itself
        try:
            server, _, total = stamp_window(self.client, w.source, w.load, w.mod,
                                            pd.Series([], dtype="datetime64[ns, UTC]"),
                                            w.rpp, ahead=w.ahead)
            self.result = (server, total)
        except BaseException as exc:  # noqa: BLE001  # raised in the run's thread, if taken
            self.error = exc

    def take(self, key: str, mod: str) -> tuple[dt.datetime, Frames, int] | None:
        """(when it began, the window's records, the listing's total) when it was asked for
        ``key`` with ``mod`` as its stamped field; raises what the window raised."""
        if key != self.key or mod != self.inputs.mod:
            return None
        self.close()
        if self.error is None and self.result is None:
            return None   # the service's clock unknown (``_work``)
        self.taken = True
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return (self.started, *self.result)

    def close(self) -> None:
        """Wait for the window (it uses the client)."""
        self._schema.set()   # a run stopped before the schema's answer: it waits no more
        if self._thread.is_alive():
            self._thread.join()


def read_changes(client: Client, state: MirrorState, run: ObjectRun, every: int,
                 head: HeadStart | None = None) -> bool:
    """Step 4 of a run for one object, from the changed records only (module docstring):
    fills ``run`` (``frames``: the records read, ``old``: their rows in the target,
    ``inserted``, ``updated``, ``deleted``, ``rows``) and returns True; False, having
    written nothing into ``run``, when the object needs the whole frames.

    ``head``: the window begun beside the schema, taken when it was begun for this
    object with its stamped field of now.

    Usage: ``read_changes(client, state, run, sweep_every, head)``"""
    prev = run.prev
    if (prev is None or not prev.present or run.changes is None
            or run.changes.needs_full_load):
        return False
    mod = client.schema().stamped_field(run.key)
    inputs = _window_inputs(state, run.key, every, mod) if mod is not None else None
    if inputs is None:
        return False
    source, load, rpp, count = inputs.source, inputs.load, inputs.rpp, inputs.count
    _, bare = column_maps(source)
    assert state.target is not None   # each exploded table's rows, read while the window
    counts = {t["table"]: state.target.count(t["table"])   # is on the wire (_rows_after)
              for t in prev.layout.get("tables", {}).values()}
    got = head.take(run.key, inputs.mod) if head is not None else None
    if got is not None:
        started, server, total = got
    else:
        stamps = pd.Series([], dtype="datetime64[ns, UTC]")
        if clock_skew(client) is None:   # the cutoff then needs the newest stamp held
            stamps = state.columns_of(run.key, [bare[inputs.mod]])[bare[inputs.mod]]
        started = dt.datetime.now(dt.timezone.utc)
        server, _, total = stamp_window(client, source, load, inputs.mod, stamps, rpp,
                                        ahead=inputs.ahead)
    # the window's size and span: the next run's guess of its own (pages_ahead)
    seen = {"records": len(server.main), "seconds": round(_span(load, started), 3)}
    ids = [str(i) for i in server.main.index]
    dtypes = prev.layout["main"]["dtypes"]
    held_main = state.main_rows(run.key, ids)   # typed only where it differs (changed)
    # its rows typed only when a record is gone (their delete rows): none needs them else
    old = Frames(server.main.iloc[:0], state.exploded_rows(run.key, ids),
                 Source.from_dict(dict(prev.source)))
    inserted, updated, exploded = changed(old, server, (held_main, dtypes))
    gone: list[str] = []
    held_rows = prev.rows + len(inserted)
    if total != held_rows:
        auto = next((f.key for f in source.fields if f.kind == "auto_increment"), None)
        have = state.columns_of(run.key, [bare[auto]] if auto else [])
        new = server.main.loc[pd.Index(inserted, dtype=object)]
        held = have.index.append(new.index)
        values = (pd.concat([have[bare[auto]], new[bare[auto]]]) if auto is not None
                  else None)
        found = find_gone(client, source, load, rpp, held, values, held_rows - total,
                          auto, unseen_ok=True)
        assert found is not None   # unseen_ok: never None
        gone = [str(i) for i in found]
    if gone:   # a record stamped then deleted while the run read: gone, as refresh says
        old = Frames(typed(held_main, dtypes, "id"), old.tables, old.source)
        out, went = pd.Index(gone, dtype=object), set(gone)
        inserted = [i for i in inserted if i not in went]
        updated = [i for i in updated if i not in went]
        exploded = {k: [i for i in v if i not in went] for k, v in exploded.items()}
        keep = ~member(server.main.index, out)
        server = Frames(server.main[keep], {
            k: t[~member(t["record_id"], out)].reset_index(drop=True)
            for k, t in server.tables.items()}, server.source)
        read = set(old.main.index)
        old = _concat(old, state.rows_of(run.key, [i for i in gone if i not in read]))
        held_now = set(old.main.index)   # a record inserted and deleted since: never held
        gone = [i for i in gone if i in held_now]
    for fkey, t in old.tables.items():   # every table the object has, even if empty
        server.tables.setdefault(fkey, t.iloc[:0])
    source.load = {**load, "loaded_at": started.isoformat(timespec="seconds"),
                   "refreshes": count, "stamped_field": inputs.mod, "window": seen}
    run.frames = Frames(server.main, server.tables, source)
    run.old = old
    run.inserted, run.updated, run.deleted = inserted, updated, gone
    run.exploded = exploded
    run.rows = _rows_after(run, counts)
    return True


def changed(old: Frames, new: Frames, main: tuple[pa.Table, dict[str, str]] | None = None
            ) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(inserted, updated, exploded): the records of ``new`` that ``old`` (the target's
    rows of the same records) does not hold, those whose cells or exploded rows differ,
    compared as refresh's merge compares a listed record with the one held, and per
    exploded field the updated records whose rows in it differ.

    ``main``: the main table's rows as the target holds them (``state.main_rows``) and
    its dtypes, compared in place of ``old.main`` (:func:`_differing`).

    Usage: ``inserted, updated, exploded = changed(state.rows_of(key, ids), window)``"""
    held_ids = (pd.Index(main[0].column("id").to_pylist(), dtype=object)
                if main is not None else old.main.index)
    held = member(new.main.index, held_ids)
    inserted = [str(i) for i in new.main.index[~held]]
    common = new.main.index[held]
    if main is not None:
        differ = _differing(main[0], main[1], new.main.loc[common])
    else:
        a = old.main.loc[common].reset_index(drop=True)
        b = new.main.loc[common].reset_index(drop=True)
        differ = np.zeros(len(common), dtype=bool)
        for col in a.columns:
            if col in b.columns:
                differ |= ~same(a[col], b[col])
    out = {str(i) for i in common[differ]}
    ids = pd.Index([str(i) for i in common], dtype=object)
    exploded: dict[str, list[str]] = {}
    for fkey, t in new.tables.items():
        before = old.tables.get(fkey)
        if before is None:
            continue
        exploded[fkey] = records_differing(before[member(before["record_id"], ids)],
                                           t[member(t["record_id"], ids)])
        out.update(exploded[fkey])
    return inserted, [str(i) for i in common if str(i) in out], exploded


def _differing(rows: pa.Table, dtypes: dict[str, str], new: pd.DataFrame) -> np.ndarray:
    """Per record of ``new`` (each held in ``rows``, the main table's rows as the target
    holds them), whether a column differs, as ``same`` says of the rows typed as
    ``state.typed`` types them. A column of a plain dtype is compared on its stored
    values first (the record's values as a run writes them, against those it wrote):
    equal stored values type to the same values, so only the cells that differ there are
    typed and given to ``same``; a column of objects or lists, or one whose values do
    not convert exactly, is typed and compared whole."""
    pos = pd.Index(rows.column("id").to_pylist(), dtype=object).get_indexer(new.index)
    rows = rows.take(pa.array(pos, pa.int64()))
    differ = np.zeros(len(new), dtype=bool)
    for col in rows.column_names:
        if col == "id" or col not in new.columns:
            continue
        b = new[col]
        whole = dtypes.get(col) in (None, "object", "list") or b.dtype == object
        look = np.ones(len(new), dtype=bool) if whole else _unequal(rows.column(col), b)
        idx = np.flatnonzero(look & ~differ)
        if len(idx):
            a = typed(rows.select([col]).take(pa.array(idx, pa.int64())), dtypes, None)
            differ[idx] |= ~same(a[col], b.iloc[idx].reset_index(drop=True))
    return differ


def _unequal(held: pa.ChunkedArray, values: pd.Series) -> np.ndarray:
    """Where ``values`` (a column of plain dtype) are not provably those ``held`` (as
    written, then read back): their Arrow values, cast to the held type exactly, differ
    or one of the two is empty; everywhere when they do not convert or compare."""
    if pa.types.is_decimal(held.type):   # a cast to it rounds: not an exact test
        return np.ones(len(values), dtype=bool)
    try:
        now = arrow_column(values, False)
        if now.type != held.type:
            now = now.cast(held.type)   # safe: a cast that would lose a value raises
        eq = pc.fill_null(pc.equal(held, now), False)
        ok = pc.or_(eq, pc.and_(pc.is_null(held), pc.is_null(now)))
        return ~np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
    except (pa.ArrowException, TypeError, ValueError):
        return np.ones(len(values), dtype=bool)


def _concat(a: Frames, b: Frames) -> Frames:
    """Two sets of rows of one object's tables as one."""
    if not len(b.main):
        return a
    return Frames(pd.concat([a.main, b.main]), {
        k: pd.concat([t, b.tables[k]], ignore_index=True) if k in b.tables else t
        for k, t in a.tables.items()}, a.source)


def _rows_after(run: ObjectRun, counts: dict[str, int]) -> dict[str, int]:
    """Each current table's rows once the run is written: the target's count
    (``counts``), less the rows of the updated and deleted records, plus the rows
    written."""
    assert run.prev is not None and run.frames is not None and run.old is not None
    out = {run.table: run.prev.rows + len(run.inserted) - len(run.deleted)}
    going = pd.Index(run.updated + run.deleted, dtype=object)
    coming = pd.Index(run.inserted + run.updated, dtype=object)
    for fkey, t in run.prev.layout.get("tables", {}).items():
        before = counts[t["table"]]
        old = run.old.tables.get(fkey)
        new = run.frames.tables.get(fkey)
        less = int(np.sum(member(old["record_id"], going))) if old is not None and len(
            old) else 0
        more = int(np.sum(member(new["record_id"], coming))) if new is not None and len(
            new) else 0
        out[t["table"]] = before - less + more
    return out
