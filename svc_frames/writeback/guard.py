"""The lost-update guard: re-read the records about to change (batched), and decide
conflicts: a record changed on the server since it was loaded is a conflict; a field
already holding the wanted value is not sent again. After the writes, the same re-read
settles the updates and deletes whose answer was lost (``check_unanswered``), and the live
guard's check finds updates another editor overwrote after ours (``check_written``).

Usage::

    guard(run, on_conflict="skip")      # run: a RunState; fills run.conflicts/outcomes
    guard(run, "skip", ids=batch)       # the live guard: one batch, just before its writes
    check_unanswered(run)               # after apply: unknown outcomes -> applied/failed
    check_written(run, window=2.0)      # the window after the last write: overwritten?
    fetch_all(client, "object_3", counter, {"filters": ...})   # a list, each id once
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from typing import Any

import pandas as pd

from ..arrowcols import member
from ..assets import PendingUpload
from ..errors import ConflictError, QuotaExceeded, QuotaInsufficient, SvcError
from ..frames import Frames, Source
from ..keys import Target as Where
from ..read.options import LoadOptions
from ..read.pager import Paginator
from ..records import Client
from .gate import QuotaGate
from .guardmode import CHECK_MARGIN
from .journal import journal_key
from .plan import ColumnMap, Status, reread_requests
from .report import Outcome, Report, RequestCounter, when_reset
from .rereads import RereadRoute
from .state import RunState
from .target import where as where_of
from .values import Values, decode_records, holds, same, short
from .walls import keep_stored_parts

__all__ = ["guard", "keep_skipped_walls", "check_unanswered", "check_written", "reread", "fetch_all"]


def guard(run: RunState, on_conflict: str, ids: Collection[str] | None = None, *,
          purpose: str = "rereads") -> None:
    """Re-read the records about to change (``ids`` alone when given) and compare with
    what was loaded (see the module docstring); ``on_conflict="raise"`` raises
    ConflictError before any write of them. Each record's re-read time is kept
    (``run.read_at``): the live guard writes it only within its window. The requests
    count under ``purpose``."""
    todo = dict(run.todo)
    updates = [rid for rid, a in todo.items() if a == "update" and (ids is None or rid in ids)]
    deletes = [rid for rid, a in todo.items() if a == "delete" and (ids is None or rid in ids)]
    if not (updates or deletes):
        return
    plan, layout = run.plan, run.layout
    started = time.monotonic()
    got = reread(run.client, run.source, updates + deletes, run.counter, layout, plan.base,
                 purpose=purpose)
    with run.adopt_lock:
        for rid in updates + deletes:
            run.read_at[rid] = started
            run.server_now.pop(rid, None)
        run.server_now.update(got)
    # an update compares the fields it sends; a delete, every field
    keys = None if deletes else {k for rid in updates for k in run.payloads[rid]}
    srv = Values(decode_records(list(got.values()), run.source, keys), layout) \
        if got else None
    for rid in deletes:
        _guard_delete(run, rid, srv, on_conflict)
    for rid in updates:
        _guard_update(run, rid, srv, on_conflict)
    if run.conflicts and on_conflict == "raise":
        raise ConflictError(f"{len({c['record_id'] for c in run.conflicts})} records "
                            "changed on the server since loaded; nothing was written",
                            conflicts=pd.DataFrame(run.conflicts))
    with run.adopt_lock:
        run.todo = {rid: a for rid, a in run.todo.items() if rid not in run.outcomes}


def keep_skipped_walls(run: RunState) -> None:
    """Without the guard: the updates sending an unedited date part that may stand for a
    wall time the timezone skips (``plan.walls_reread``, walls.may_be_skipped) re-read
    those records alone, and send such parts as the server stores them; nothing else is
    compared (``plan.estimate_requests(guard="off")`` counts these re-reads)."""
    layout, plan = run.layout, run.plan
    ids = [rid for rid in plan.walls_reread if run.todo.get(rid) == "update"]
    if not ids:
        return
    got = reread(run.client, run.source, ids, run.counter, layout, plan.base)
    for rid, record in got.items():
        payload = run.payloads[rid]
        for key, val in payload.items():
            f = layout.fields[key]
            if f.kind in ("date_time", "timer"):
                payload[key] = keep_stored_parts(f, val, record.get(f"{key}_raw"),
                                                 plan.loaded.get(rid, {}).get(key, {}),
                                                 plan.wanted.get(rid, {}).get(key, {}))


def _guard_delete(run: RunState, rid: str, srv: Values | None, on_conflict: str) -> None:
    if rid not in run.server_now:
        run.outcomes[rid] = Outcome(rid, "delete", [], "applied",
                                    "already gone from the server")
        return
    assert srv is not None and run.plan.base is not None
    if run.base_values is None:
        run.base_values = Values(run.plan.base, run.layout)
    was_of = run.base_values
    # deleting a record someone edited since it was loaded would lose that edit
    changed = [k for k, c in run.layout.codecs.items()
               if not c.read_only and not same(srv(rid, k), was_of(rid, k))]
    for key in changed:
        run.conflicts.append({"record_id": rid, "field": key,
                              "loaded": short(was_of(rid, key)),
                              "server": short(srv(rid, key)), "new": "<deleted>"})
    if changed and on_conflict == "skip":
        run.outcomes[rid] = Outcome(rid, "delete", changed, "conflict",
                                    "changed on the server since loaded: "
                                    + ", ".join(changed))


def _guard_update(run: RunState, rid: str, srv: Values | None, on_conflict: str) -> None:
    payload = run.payloads[rid]
    if rid not in run.server_now:
        run.outcomes[rid] = Outcome(rid, "update", list(payload), "conflict",
                                    "the record is gone from the server")
        run.conflicts.append({"record_id": rid, "field": "", "loaded": "",
                              "server": "<deleted>", "new": ""})
        return
    assert srv is not None
    clash: list[str] = []
    done: list[str] = []
    for key, val in list(payload.items()):
        now = srv(rid, key)
        was = run.plan.loaded.get(rid, {}).get(key, {})
        want = run.plan.wanted.get(rid, {}).get(key, {})
        prior = run.jr.uploads.get(journal_key("upload", run.keys[rid], key, val.digest)) \
            if run.jr and isinstance(val, PendingUpload) else None
        if prior is not None and now.get(key) == prior.get("asset_id"):
            done.append(key)   # placed by an earlier run whose answer was lost
        elif want and same(now, want):
            done.append(key)
        elif was and not same(now, was):
            clash.append(key)
            run.conflicts.append({"record_id": rid, "field": key, "loaded": short(was),
                                  "server": short(now), "new": short(want)})
    for key in done:  # already on the server (e.g. a resumed run): not re-sent
        del payload[key]
    for key, val in payload.items():
        f = run.layout.fields[key]
        if f.kind in ("date_time", "timer"):
            payload[key] = keep_stored_parts(f, val, run.server_now[rid].get(f"{key}_raw"),
                                             run.plan.loaded.get(rid, {}).get(key, {}),
                                             run.plan.wanted.get(rid, {}).get(key, {}))
    if clash and on_conflict == "skip":
        run.outcomes[rid] = Outcome(rid, "update", clash, "conflict",
                                    "changed on the server since loaded: " + ", ".join(clash))
    elif not payload:
        run.outcomes[rid] = Outcome(rid, "update", done, "applied",
                                    "already on the server", run.server_now[rid])


# ---- after the writes: what became of the writes whose answer was lost -----------------
def check_unanswered(run: RunState) -> None:
    """Settle each update or delete whose every attempt ended without an answer (a cut
    connection, a 5xx: it may have been applied) by one batched re-read: ``applied`` when
    the server holds the sent values (the re-read record refreshes the frames), ``failed``
    when it provably does not (it still holds the values from before; a delete: the
    record is still there), else ``unknown`` saying why."""
    if not run.unanswered:
        return
    ids = list(run.unanswered)
    try:
        now = reread(run.client, run.source, ids, run.counter, run.layout, run.plan.base)
    except SvcError as exc:
        for rid in ids:
            o = run.outcomes[rid]
            o.message = (f"{o.message}; the re-read to check it failed too "
                         f"({exc.message}): load the record to see")
        return
    srv = Values(decode_records(list(now.values()), run.source), run.layout) if now else None
    known = [run.server_now[r] for r in ids if r in run.server_now]
    pre = Values(decode_records(known, run.source), run.layout) if known else None
    for rid, body in run.unanswered.items():
        o = run.outcomes[rid]
        status, why = _unanswered_outcome(run, rid, body, now, srv, pre)
        o.status, o.message = status, f"{why} (the answer was lost: {o.message})"
        if status == "applied":
            o.record = now.get(rid)
            if run.jr:
                run.jr.write("ack", run.keys[rid], action=o.action, record_id=rid)


def _unanswered_outcome(run: RunState, rid: str, body: dict[str, Any], now: dict[str, dict[str, Any]],
            srv: Values | None, pre: Values | None) -> tuple[Status, str]:
    """One unanswered write against its re-read: (status, why)."""
    act = run.outcomes[rid].action
    if act == "delete":
        return (("applied", "deleted: gone from the server on re-read") if rid not in now
                else ("failed", "not deleted: still on the server on re-read"))
    if rid not in now or srv is None:
        return "failed", "not applied: the record is gone from the server"
    layout = run.layout
    held, before = [], []
    for key, sent in body.items():
        now_v = srv(rid, key)
        was = (pre(rid, key) if pre is not None and rid in run.server_now
               else run.plan.loaded.get(rid, {}).get(key, {}))
        if layout.is_upload(key):   # an asset id was sent: compare ids
            held.append(same({key: now_v.get(key)}, {key: sent}))
            before.append(same({key: now_v.get(key)}, {key: was.get(key)}))
            continue
        want = run.plan.wanted.get(rid, {}).get(key, {})
        held.append(holds(now_v, want, sent, layout.fields[key], layout))
        before.append(bool(was) and same(now_v, was))
    if all(held):
        return "applied", "applied: the server holds the sent values on re-read"
    if all(before):
        return "failed", "not applied: the server still holds the values from before"
    return "unknown", ("the server holds other values than those sent or loaded (edited "
                       "meanwhile?): load the record to see")


def check_written(run: RunState, window: float) -> None:
    """The live guard's check: no sooner than ``window`` (plus ``CHECK_MARGIN``) after the
    last acknowledged update, re-read the updated records (batched, counted as
    ``checks``). A record whose server value is no longer the one sent is ``overwritten``
    (another editor wrote after us: the message and ``Report.conflicts`` say what the
    server holds, the frames keep the edit and the loaded value, so a second run reports
    the clash); one the check could not read is ``unknown``. Another svc_frames writer
    re-reads within the window before writing, so a write of its that missed ours lands
    before this check sees the server."""
    ids = [rid for rid, o in run.outcomes.items()
           if o.action == "update" and o.status == "applied" and rid in run.written]
    if not ids:
        return
    due = max(run.written[r][1] for r in ids) + window + CHECK_MARGIN
    pause = due - time.monotonic()
    if pause > 0:
        time.sleep(pause)
    try:
        now = reread(run.client, run.source, ids, run.counter, run.layout, run.plan.base,
                     purpose="checks")
    except SvcError as exc:
        for rid in ids:
            o = run.outcomes[rid]
            o.status = "unknown"
            o.message = (f"written, but the check after the write failed ({exc.message}): "
                         "load the record to see whether another editor overwrote it")
        return
    keys = {k for rid in ids for k in run.written[rid][0]}     # the fields written
    srv = Values(decode_records(list(now.values()), run.source, keys), run.layout) \
        if now else None
    for rid in ids:
        o = run.outcomes[rid]
        if rid not in now or srv is None:
            o.status, o.record = "overwritten", None
            o.message = "deleted on the server after our write"
            run.conflicts.append({"record_id": rid, "field": "", "loaded": "",
                                  "server": "<deleted>", "new": ""})
            continue
        lost = _not_held(run, rid, run.written[rid][0], srv)
        if not lost:   # the frames follow the write's answer, as without the check
            continue
        o.status, o.record = "overwritten", None
        o.message = ("overwritten on the server after our write: "
                     + "; ".join(f"{k} is now {short(srv(rid, k))}" for k in lost))
        for key in lost:
            run.conflicts.append({
                "record_id": rid, "field": key,
                "loaded": short(run.plan.loaded.get(rid, {}).get(key, {})),
                "server": short(srv(rid, key)),
                "new": short(run.plan.wanted.get(rid, {}).get(key, {}))})


def _not_held(run: RunState, rid: str, body: dict[str, Any], srv: Values) -> list[str]:
    """The fields of ``body`` (as sent) whose server value is no longer the one sent."""
    layout = run.layout
    lost = []
    for key, sent in body.items():
        now_v = srv(rid, key)
        if layout.is_upload(key):   # an asset id was sent: compare ids
            ok = same({key: now_v.get(key)}, {key: sent})
        else:
            ok = holds(now_v, run.plan.wanted.get(rid, {}).get(key, {}), sent,
                       layout.fields[key], layout)
        if not ok:
            lost.append(key)
    return lost


# ---- the guard in a run: behind the quota's gate, the live guard's halt -------------------
def _gate(run: RunState) -> QuotaGate:
    """The run's quota gate (``write_back`` sets it before any guard)."""
    if run.gate is None:
        raise RuntimeError("the guard runs behind the quota's gate: RunState.gate is unset")
    return run.gate


def guard_within_quota(run: RunState, on_conflict: str) -> None:
    """The guard, when its re-reads fit above the reserve; else (or when the quota runs
    out during them) the gate shuts and nothing is written: every record is then
    ``not_applied`` (a write without its guard could lose someone else's edit)."""
    client, gate = run.client, _gate(run)
    checked = [rid for rid, act in run.todo.items() if act != "create"]
    cost = reread_requests(run.source, run.layout, run.plan.base, checked)
    left = client.quota_left()
    if left is not None and cost and left - cost < gate.reserve:
        quota = client.quota
        gate.shut(f"not sent: the guard's {cost} re-read{'s' if cost != 1 else ''} would "
                  f"take the daily request quota below the reserve ({left} left, "
                  f"quota_reserve={gate.reserve}); resume after "
                  f"{when_reset(quota.reset_at if quota else None)}",
                  quota.reset_at if quota else None)
        return
    guard_batch(run, on_conflict, None)


def guard_batch(run: RunState, on_conflict: str, ids: Sequence[str] | None,
                purpose: str = "rereads") -> None:
    """The guard's re-read of ``ids`` (None: every record to write); when the quota runs
    out during it the gate shuts and nothing more is written."""
    gate = _gate(run)
    try:
        guard(run, on_conflict, ids, purpose=purpose)
    except QuotaInsufficient as exc:   # the paged re-read found it cannot finish
        gate.shut(f"not sent: the guard's re-read needs {exc.needed} requests, only "
                  f"{exc.remaining} are left of the daily quota; resume after "
                  f"{when_reset(exc.reset_at)}", exc.reset_at)
    except QuotaExceeded as exc:
        gate.spent(exc)


def guard_live(run: RunState, on_conflict: str, ids: Sequence[str], purpose: str) -> None:
    """The live guard's re-read of a batch (or of its late records). With
    ``on_conflict="raise"``, a conflict found before any write was sent raises at once
    (nothing was written); one found after (a record edited since the check before the
    first write) cannot un-send what went: the run halts, its conflicts are ``conflict``,
    every record not yet written ``not_applied``, and ``write_back`` raises after the
    Report is made (``halt_message``)."""
    try:
        guard_batch(run, on_conflict, ids, purpose)
    except ConflictError:
        if not run.counter.n["writes"]:
            raise
        batch = set(ids)
        clashed: dict[str, list[str]] = {}
        for c in run.conflicts:
            if c["record_id"] in batch:
                clashed.setdefault(c["record_id"], []).append(c["field"])
        with run.adopt_lock:
            for rid, fields in clashed.items():
                if rid not in run.outcomes:
                    run.outcomes[rid] = Outcome(
                        rid, run.todo[rid], [f for f in fields if f], "conflict",
                        "changed on the server after the check before the first write: "
                        + ", ".join(f for f in fields if f))
            run.todo = {rid: a for rid, a in run.todo.items() if rid not in run.outcomes}
            run.halt_ids = sorted(clashed)
            run.halted = (f"not sent: on_conflict='raise' and {len(clashed)} record"
                          f"{'s' if len(clashed) != 1 else ''} changed on the server after "
                          f"the check before the first write ({_some(run.halt_ids)}); the "
                          "run stopped writing")


def halt_message(run: RunState, report: Report) -> str:
    """The ConflictError of a halted run: which records changed, which were written
    before (their writes stand), and which were not."""
    table = report.table
    written = table[table["status"].isin(["applied", "overwritten", "unknown"])]
    rest = table[~member(table.index, written.index)]
    ids = run.halt_ids
    return (f"{len(ids)} record{'s' if len(ids) != 1 else ''} changed on the server after "
            f"the check before the first write ({_some(ids)}), found when "
            f"{'their' if len(ids) != 1 else 'its'} batch was re-read; "
            f"{len(written)} record{'s' if len(written) != 1 else ''} had already been "
            f"sent and stay written ({_some(written['record_id'].tolist())}: the report "
            f"says applied, overwritten or unknown for each); {len(rest)} were not "
            f"written ({_some(rest['record_id'].tolist())}). "
            "The error's report holds every record's outcome; the frames follow what was "
            "written, so write_back again sends only the rest")


def _some(ids: Sequence[Any], shown: int = 10) -> str:
    """Up to ``shown`` ids, then how many more."""
    head = ", ".join(map(str, ids[:shown]))
    more = len(ids) - shown
    return head + (f" and {more} more" if more > 0 else "") if ids else "none"


# ---- re-reads ------------------------------------------------------------------------------
def fetch_all(client: Client, where: Where, counter: RequestCounter,
              params: dict[str, Any] | None = None, *, purpose: str = "rereads",
              limit: int | None = None) -> list[dict[str, Any]]:
    """Every record of a (filtered) list, each id once: the loaders' paginator, which
    re-reads when records move between pages instead of missing one (a missed record would
    pass for deleted in the guard). Each page request counts under ``purpose``; ``limit``
    stops after that many records."""
    pages = Paginator(client, where, LoadOptions.of(filters=(params or {}).get("filters"),
                                                    verify="none", limit=limit),
                      on_page=lambda _page: counter.add(purpose))
    return pages.records()


def reread(client: Client, source: Source, ids: Sequence[str], counter: RequestCounter,
           layout: ColumnMap, base: Frames | None, *, purpose: str = "rereads"
           ) -> dict[str, dict[str, Any]]:
    """Current server records for ``ids``, batched: OR-filters on an identifying field
    (auto increment / unique) in chunks of ``reread_chunk`` values (50, fewer over a
    large object), else the whole list paged, or one GET per record when that is fewer
    requests than the pages. Matched by id.
    (``RereadRoute`` is the route, which ``plan.reread_requests`` counts.)
    Each request counts under ``purpose``."""
    where = where_of(source)
    want = set(ids)
    found: dict[str, dict[str, Any]] = {}
    route = RereadRoute.of(source, base, len(ids))
    if route.list_first:
        # many records to check: the whole list paged may take fewer requests
        found = _reread_list_if_fewer(client, where, want, route.n_chunks, counter, purpose)
    rest = [i for i in ids if i not in found]
    keyed = layout.key_field(base)
    if keyed is not None and rest:
        found.update(_reread_by_key(client, where, want, keyed[0],
                                    route.key_values(keyed, rest), counter, purpose,
                                    route.chunk))
        rest = [i for i in rest if i not in found]
    if not rest:
        return found
    # no identifying value (or not found by it): one GET each, or the whole list
    if route.one_get_each(len(rest)):
        for rid in rest:
            counter.add(purpose)
            try:
                found[rid] = client.get_record(source.object_key, rid)
            except SvcError as exc:
                if getattr(exc, "status", None) != 404:   # 404: gone, the guard says so
                    raise
    else:
        found.update({r["id"]: r for r in fetch_all(client, where, counter, purpose=purpose)
                      if r.get("id") in want})
    return found


def _reread_list_if_fewer(client: Client, where: Where, want: set[str], n_chunks: int,
                          counter: RequestCounter, purpose: str) -> dict[str, dict[str, Any]]:
    """The wanted records from the whole list, when it has at most ``n_chunks`` pages
    (the first page says how many there really are); else nothing."""
    env = client.get_page(where, params={"page": 1, "rows_per_page": 1000})
    counter.add(purpose)
    pages = int(env.get("total_pages") or 1)
    if pages > n_chunks:
        return {}
    recs = list(env.get("records") or [])
    for page in range(2, pages + 1):
        e = client.get_page(where, params={"page": page, "rows_per_page": 1000})
        counter.add(purpose)
        recs.extend(e.get("records") or [])
    return {r["id"]: r for r in recs if r.get("id") in want}


def _reread_by_key(client: Client, where: Where, want: set[str], key: str,
                   usable: Sequence[Any], counter: RequestCounter, purpose: str,
                   chunk: int) -> dict[str, dict[str, Any]]:
    """The wanted records found by OR-filters on their loaded identifying values of field
    ``key`` (``RereadRoute.key_values``: list requests cannot filter on the record id),
    ``chunk`` values per request."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(usable), chunk):
        rules = [{"field": key, "operator": "is",
                  "value": int(v) if isinstance(v, float) and v.is_integer() else v}
                 for v in usable[start:start + chunk]]
        params = {"filters": json.dumps({"match": "or", "rules": rules}, default=str)}
        for r in fetch_all(client, where, counter, params, purpose=purpose):
            if r.get("id") in want:
                found[r["id"]] = r
    return found
