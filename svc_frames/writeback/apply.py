"""Apply a run's writes: updates, then creates, then deletes, concurrently within the
client's pace. A create is retried only through the client's one policy, and only when a
lookup verified it absent (``resend``); a create whose outcome stays unknown is looked up
before it is reported.

Usage::

    apply(run, max_workers=8, progress=None)    # run: a RunState after the guard
    run.outcomes["new:0"].new_id                # the created record's id
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import OutcomeUnknown, QuotaExceeded, SendDeadlinePassed, ServerError, SvcError
from ..progress import Progress, want_progress
from .budget import budgeted
from .depends import create_levels, create_waves, link_new_ids, new_links
from .guard import check_unanswered, fetch_all, guard_live
from .guardmode import overlaps
from .plan import Action, batch_rereads, live_batches
from .report import Outcome
from .rereads import LOOKUP_SCAN_LIMIT, LookupRoute, reread_chunk
from .state import RunState
from .target import where
from .uploads import resolve_uploads
from .values import Values, decode_records, response_record, same

__all__ = ["apply", "take_baseline", "lookup_created", "Match", "LiveBatches",
           "sent_earlier"]

_ORDER = {"update": 0, "create": 1, "delete": 2}


def apply(run: RunState, max_workers: int, progress: bool | None,
          live: LiveBatches | None = None) -> None:
    """Updates, then creates, then deletes, concurrently within the client's pace; a bar
    of writes done / planned when ``progress`` (see ``want_progress``). ``live``: the
    live guard, which re-reads each batch of updates and deletes just before writing it
    (``guard.guard_live``); records whose write would leave later than ``live.window`` after
    their re-read are not written then but re-read together once the batch's other
    writes are done (``_write_batch``). When the pace leaves room (``guardmode.overlaps``), a
    batch's re-read goes while the batch before is being written, rather than between
    the two: the guard's trip and its comparisons are not added to the run's time."""
    todo = run.todo
    order = sorted(todo, key=lambda r: _ORDER[todo[r]])
    if not order:
        return
    if not (run.gate and run.gate.stopped):   # the quota's gate shut: nothing will go
        take_baseline(run)   # before any create: what already matches each
    workers = max(1, min(max_workers, len(order)))
    # a prefix of this run's own: _wait_for_writes finds its threads by it
    prefix = f"write_back-{id(run):x}"
    pool = ThreadPoolExecutor(workers, thread_name_prefix=prefix)
    took = f" ({run.duration})" if run.duration else ""
    bar = Progress(want_progress(progress), f"write_back {run.tgt.name}{took}", unit="rec",
                   total=len(order))
    spare = _Spare()
    # creates linking to other creates: those linked to first (depends.py)
    level = create_levels([r for r in order if todo[r] == "create"], run.payloads,
                          run.layout)
    if level:
        order.sort(key=lambda r: (_ORDER[todo[r]], level.get(r, 0)))
    # the next batch's re-read goes while this one's writes are in flight (ahead)
    ahead = ThreadPoolExecutor(1, thread_name_prefix=f"{prefix}-batches") if live and \
        overlaps(live.size, live.window, run.client.limiter.rate, live.on_conflict) else None
    pending: Future[None] | None = None
    try:
        for act, batch in live_batches([(rid, todo[rid]) for rid in order],
                                       live.size if live is not None else None):
            spent = 0
            if live is not None and act != "create" and not _stopped(run):
                # settles conflicts (they leave run.todo); behind the quota's gate
                cost = batch_rereads(run.source, run.layout, run.plan.base, act, batch)
                if _reread(run, live, batch, "rereads", cost):
                    spent = cost
            if pending is not None:     # the batch before: its writes done
                pending.result()
                pending = None
            spare.left += spent
            _read_links(run, batch)
            for rid in batch:
                if rid in run.outcomes:
                    bar.update(1)
            waves = create_waves(batch, todo, level)
            if ahead is not None and act != "create":
                pending = ahead.submit(_write_batch, run, pool,
                                       [r for r in batch if r not in run.outcomes], live,
                                       spare, bar)
                continue
            for wave in waves:
                _write_batch(run, pool, [r for r in wave if r not in run.outcomes], live,
                             spare, bar)
        if pending is not None:
            pending.result()
    except BaseException:
        # interrupted (Ctrl-C, a crash): start nothing more, and wait for the writes in
        # flight, whose answers (run.answered) and journal lines are then complete; a
        # second Ctrl-C stops the wait (those writes end unknown: interrupt.py)
        run.stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
        if ahead is not None:
            ahead.shutdown(wait=True, cancel_futures=True)
        _wait_for_writes(prefix)
        bar.close(complete=False)
        raise
    if ahead is not None:
        ahead.shutdown(wait=True)
    pool.shutdown(wait=True)
    bar.close()
    check_unanswered(run)    # writes whose answer was lost: re-read before the report


def _wait_for_writes(prefix: str) -> None:
    """Join every thread of the run's pool: a Ctrl-C that lands while the pool starts a
    thread leaves it running but unknown to ``shutdown``, which then does not wait for
    the write it takes."""
    for t in threading.enumerate():
        if t.name.startswith(prefix) and t is not threading.current_thread():
            t.join()


@dataclass(frozen=True)
class LiveBatches:
    """The live guard as ``apply`` runs it (``guard.guard_live`` with ``on_conflict``):
    ``size`` of a batch, ``window`` seconds a re-read stays fresh."""

    on_conflict: str
    size: int
    window: float


@dataclass
class _Spare:
    """The late re-reads a run may still send: each batch's re-read adds its own cost,
    as ``plan.requests`` counts them (``RequestEstimate.late``)."""

    left: int = 0


def _reread(run: RunState, live: LiveBatches, ids: Sequence[str], purpose: str,
            cost: int) -> bool:
    """The live guard's re-read of ``ids`` (``cost`` requests: ``plan.batch_rereads``),
    claimed of the quota's gate like a write; False when the gate is shut (nothing sent:
    the records are then ``not_applied`` with the gate's reason)."""
    gate = run.gate
    if gate is not None and gate.claim(cost):
        return False
    try:
        guard_live(run, live.on_conflict, ids, purpose)
    finally:
        if gate is not None:
            gate.release(cost)
    return True


def _read_links(run: RunState, batch: Sequence[str]) -> None:
    """Just before a batch's deletes (after the live guard's re-read settled its
    conflicts): other objects' links to them, kept for an undo (``run.read_links``). A
    shut gate sends neither these reads nor the deletes (``_one`` says why)."""
    ids = [r for r in batch if run.todo.get(r) == "delete" and r not in run.outcomes]
    if ids and run.read_links is not None and not _stopped(run):
        run.read_links(ids)


def _stopped(run: RunState) -> bool:
    """No write will be sent any more: the quota's gate shut, or the run halted."""
    return bool(run.gate and run.gate.stopped) or run.halted is not None


def _write_batch(run: RunState, pool: ThreadPoolExecutor, ids: Sequence[str],
                 live: LiveBatches | None, spare: _Spare, bar: Progress) -> None:
    """Write ``ids`` concurrently. With the live guard, a record whose re-read is older
    than the window when its turn comes (the pace, shared with other clients, kept it
    waiting) is not sent: once the others are done, those records are re-read together
    (one filtered request per chunk, counted as ``late``) and written, again while the
    run's spare re-reads last; a record still late after that is ``not_applied``. So the
    run never sends more re-reads than ``plan.requests`` counts."""
    pending = list(ids)
    while pending:
        late: list[str] = []
        for rid, out in zip(pending, pool.map(lambda r: _kept(run, r, live), pending),
                            strict=True):
            if out is None:
                late.append(rid)
                continue
            run.outcomes[out.record_id] = out
            bar.update(1)
        if not late:
            return
        assert live is not None
        # late records are updates or deletes of this one batch (``_one``)
        cost = batch_rereads(run.source, run.layout, run.plan.base, run.todo[late[0]], late)
        if cost > spare.left:
            for rid in late:
                run.outcomes[rid] = Outcome(
                    rid, run.todo[rid], list(run.payloads.get(rid, {})), "not_applied",
                    f"not sent: the pace (shared with other clients?) kept it waiting "
                    f"longer than guard_window ({live.window:g} s) after its re-read, and "
                    f"the run's late re-reads, which plan.requests counts, are spent: "
                    f"write_back again")
                bar.update(1)
            return
        spare.left -= cost
        _reread(run, live, late, "late", cost)   # a shut gate: _one says not_applied
        for rid in late:
            if rid in run.outcomes:
                bar.update(1)
        pending = [r for r in late if r not in run.outcomes]


def _kept(run: RunState, rid: str, live: LiveBatches | None) -> Outcome | None:
    """``_one``, its outcome kept in ``run.answered`` by the worker as soon as it is known,
    so a run cut short (the main thread interrupted) still knows it; ``run.in_flight``
    holds the record meanwhile (and keeps it when the write raised: it may have gone)."""
    with run.adopt_lock:
        run.in_flight.add(rid)
    out = _one(run, rid, live)
    with run.adopt_lock:
        if out is not None:
            run.answered[rid] = out
        run.in_flight.discard(rid)
    return out


def _one(run: RunState, rid: str, live: LiveBatches | None) -> Outcome | None:
    """One record's write behind the quota's gate; None, unsent, when the live guard's
    re-read of it is older than the window when its turn comes, in the pool or in the
    pace (``Client.send_by``; see ``_write_batch``)."""
    if live is None or run.todo.get(rid) not in ("update", "delete") or _stopped(run):
        return budgeted(run, rid, write)
    left = run.read_at.get(rid, float("-inf")) + live.window - time.monotonic()
    if left <= 0:
        return None
    try:
        with run.client.send_by(run.client.limiter.now() + left):
            return budgeted(run, rid, write)
    except SendDeadlinePassed:
        run.counter.add("writes", -1)   # counted as it was about to leave; it did not
        return None


def write(run: RunState, rid: str) -> Outcome:
    """One record's write; service errors become its outcome, not the run's."""
    act = run.todo[rid]
    if run.stop.is_set():
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "not_applied",
                       "not sent: the run was interrupted")
    if run.halted is not None:   # on_conflict="raise" met a conflict after a write
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "not_applied",
                       run.halted)
    try:
        if act == "update":
            return update(run, rid)
        if act == "create":
            return create(run, rid)
        return delete(run, rid)
    except OutcomeUnknown as exc:
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "unknown", exc.message)
    except (QuotaExceeded, SendDeadlinePassed):
        raise   # refused, not failed: budget.budgeted says not_applied (or unknown); late
    except SvcError as exc:
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "failed", exc.message)
    except BaseException:
        run.stop.set()   # a crash or Ctrl-C: no further write starts
        raise


def update(run: RunState, rid: str) -> Outcome:
    client, tgt, jr = run.client, run.tgt, run.jr
    body = resolve_uploads(run, rid, run.payloads[rid])
    run.counter.add("writes")
    try:
        if tgt.is_view:
            assert tgt.scene and tgt.view
            resp = client.update_view_record(tgt.scene, tgt.view, rid, body, token=tgt.token)
        else:
            resp = client.update_record(tgt.object_key, rid, _stamped(run, body))
    except ServerError as exc:
        return _unanswered(run, rid, "update", body, exc)
    with run.adopt_lock:
        run.written[rid] = (body, time.monotonic())
    if jr:
        jr.write("ack", run.keys[rid], action="update", record_id=rid)
    rec = response_record(resp)
    if tgt.is_view and rec is not None:
        # a view answers with the fields it shows: one it did not take is missing
        missing = [k for k in body if k not in rec and f"{k}_raw" not in rec]
        if missing:
            run.extra.append(Outcome(rid, "update", missing, "not_applied",
                                     f"the view {tgt.name} did not take them"))
    return Outcome(rid, "update", list(body), "applied", "", rec)


def _stamped(run: RunState, body: dict[str, Any]) -> dict[str, Any]:
    """What an object write sends: the body and the forms' stamp (stamp.py); the body
    alone is what the outcome lists and a lost answer's re-read compares."""
    return run.stamp.onto(body) if run.stamp else body


def _unanswered(run: RunState, rid: str, act: Action, body: dict[str, Any],
                exc: ServerError) -> Outcome:
    """Every attempt of an update or delete ended without an answer (cut, 5xx): it may
    have been applied. ``unknown`` until ``check_unanswered`` re-reads it."""
    with run.adopt_lock:
        run.unanswered[rid] = body
        if act == "update":   # settled as applied by the re-read: checked like the rest
            run.written[rid] = (body, time.monotonic())
    return Outcome(rid, act, list(body), "unknown", exc.message)


@dataclass(frozen=True)
class Match:
    """What a lookup proved about a create whose answer was lost: ``ours`` (exactly one
    matching record appeared since the run began, no other unsettled create of this run
    could own it, and it holds the create's value of a unique field), ``absent``
    (nothing new matches: sending again cannot duplicate), ``ambiguous`` (new matches
    that are not provably ours: several, one another create of this run may own, or one
    without a unique value, which another writer's identical create would equal:
    ``candidates``, ``why``), ``unprovable`` (no lookup possible, or it failed:
    ``why``)."""

    state: Literal["ours", "absent", "ambiguous", "unprovable"]
    record_id: str | None = None
    candidates: tuple[str, ...] = ()
    why: str = ""


class _CreateCheck:
    """The create path's ``resend`` rule: after an unknown outcome, look the record up;
    send again only when it is proven absent (proven ours: adopt it, no resend)."""

    def __init__(self, run: RunState, tmp: str, body: Mapping[str, Any]) -> None:
        self.run, self.tmp, self.body = run, tmp, body
        self.match: Match | None = None

    def look(self) -> Match:
        self.match = lookup_created(self.run, self.tmp, self.body, self.run.before.get(self.tmp))
        return self.match

    def __call__(self, _exc: OutcomeUnknown) -> bool:
        if self.look().state != "absent":
            return False
        run = self.run
        if run.jr:   # proven absent: sending again cannot duplicate it
            _intent(run, self.tmp)
        run.counter.add("writes")
        return True


def _intent(run: RunState, tmp: str) -> None:
    """The journal line before a create is sent, with the ids that matched it before the
    run's first create: a later run proves a found record is ours against them."""
    assert run.jr is not None
    before = run.before.get(tmp)
    run.jr.write("intent", run.keys[tmp], action="create", record_id=tmp,
                 before=sorted(before) if before is not None else None)


def sent_earlier(run: RunState, tmp: str) -> tuple[list[str] | None] | None:
    """``(before,)`` when an earlier run sent this create and never learned its outcome
    (the journal's intent, or the frames' ``sent_creates``), with the ids that matched
    it before; None when it was not sent before."""
    if run.jr and run.keys[tmp] in run.jr.intents:
        return (run.jr.intents[run.keys[tmp]].get("before"),)
    edited = run.plan.edited
    if edited is not None and tmp in edited.sent_creates:
        return (edited.sent_creates[tmp],)
    return None


def create(run: RunState, tmp: str) -> Outcome:
    """A create is never repeated blindly: after an unknown outcome the record is looked
    up first, adopted only when provably ours, and sent again only when proven absent."""
    client, tgt, jr = run.client, run.tgt, run.jr
    key = run.keys[tmp]
    if new_links(run.layout, run.payloads[tmp]):    # created before it (depends.py)
        missing = link_new_ids(run, tmp)
        if missing:
            return Outcome(tmp, "create", run.fields_of(tmp), "not_applied",
                           f"not sent: it connects to {', '.join(missing)}, which this "
                           "run did not create")
    body = resolve_uploads(run, tmp, run.payloads[tmp])
    fields = list(body)
    earlier = sent_earlier(run, tmp)
    if earlier is not None:   # an earlier run sent it, never heard back
        prior = earlier[0]
        m = lookup_created(run, tmp, body, frozenset(prior) if prior is not None else None)
        if m.state == "ours":
            if jr:
                jr.write("ack", key, action="create", record_id=tmp, new_id=m.record_id)
            return Outcome(tmp, "create", fields, "applied",
                           "created by an earlier run (found)", None, m.record_id)
        if m.state != "absent":
            return Outcome(tmp, "create", fields, "unknown",
                           "sent by an earlier run whose answer was lost; "
                           + _not_proven(m))
    check = _CreateCheck(run, tmp, body)
    with run.adopt_lock:
        run.unsettled_creates[tmp] = run.wanted_of(tmp)
    if jr:
        _intent(run, tmp)
    run.counter.add("writes")
    try:
        if tgt.is_view:
            assert tgt.scene and tgt.view
            resp = client.create_view_record(tgt.scene, tgt.view, body, token=tgt.token,
                                             resend=check)
        else:
            resp = client.create_record(tgt.object_key, _stamped(run, body), resend=check)
    except (OutcomeUnknown, ServerError) as exc:
        # the policy gave up (or the answer was lost on the way back): one last look,
        # unless the resend check just proved it ours or ambiguous
        m = check.match if check.match is not None and check.match.state in (
            "ours", "ambiguous") else check.look()
        if m.state == "ours":
            if jr:
                jr.write("ack", key, action="create", record_id=tmp, new_id=m.record_id)
            _settled(run, tmp)
            return Outcome(tmp, "create", fields, "applied",
                           "the answer was lost; the one new matching record is ours",
                           None, m.record_id)
        if m.state == "absent":
            _settled(run, tmp)
            return Outcome(tmp, "create", fields, "failed",
                           f"not created (no matching record on the server): {exc.message}")
        return Outcome(tmp, "create", fields, "unknown", f"{exc.message}; {_not_proven(m)}")
    rec = response_record(resp)
    new_id = rec["id"] if rec else None
    with run.adopt_lock:
        if new_id:
            run.adopted.add(new_id)
        run.unsettled_creates.pop(tmp, None)
    if jr:
        jr.write("ack", key, action="create", record_id=tmp, new_id=new_id, record=rec)
    return Outcome(tmp, "create", fields, "applied", "", rec, new_id)


def _settled(run: RunState, tmp: str) -> None:
    with run.adopt_lock:
        run.unsettled_creates.pop(tmp, None)


def _not_proven(m: Match) -> str:
    """Why a create's outcome stays unknown, naming the candidate records."""
    if m.state == "ambiguous":
        why = f" ({m.why})" if m.why else ""
        return (f"{len(m.candidates)} record{'s' if len(m.candidates) != 1 else ''} "
                f"match{'es' if len(m.candidates) == 1 else ''} it and none is provably "
                f"this one{why}: {', '.join(m.candidates)} (check them; delete the extra "
                "one)")
    return (f"its outcome cannot be checked ({m.why}): look for the record on the server "
            "before sending it again")


def delete(run: RunState, rid: str) -> Outcome:
    client, tgt = run.client, run.tgt
    run.counter.add("writes")
    try:
        if tgt.is_view:
            assert tgt.scene and tgt.view
            client.delete_view_record(tgt.scene, tgt.view, rid, token=tgt.token)
        else:
            client.delete_record(tgt.object_key, rid)
    except ServerError as exc:
        return _unanswered(run, rid, "delete", {}, exc)
    except SvcError as exc:
        if getattr(exc, "status", None) != 404:   # already gone is what we wanted
            raise
    if run.jr:
        run.jr.write("ack", run.keys[rid], action="delete", record_id=rid)
    return Outcome(rid, "delete", [], "applied")


def lookup_possible(run: RunState, body: Mapping[str, Any]) -> bool:
    return bool(_lookup_rules(run, body)) or len(run.known_ids) <= LOOKUP_SCAN_LIMIT


def _lookup_rules(run: RunState, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """"is" rules on the create's values (``ColumnMap.lookup_rules``)."""
    return run.layout.lookup_rules(body)


def _matching(run: RunState, recs: Sequence[Mapping[str, Any]], tmps: Sequence[str]
              ) -> dict[str, list[str]]:
    """create -> ids of ``recs`` holding all its wanted values (uploads aside), compared
    as ``diff`` compares."""
    if not recs:
        return {t: [] for t in tmps}
    layout = run.layout
    values = Values(decode_records(recs, run.source), layout)
    ids = [str(r["id"]) for r in recs]
    out: dict[str, list[str]] = {}
    for t in tmps:
        want = run.wanted_of(t)
        out[t] = [rid for rid in ids if all(same(values(rid, k), want[k])
                                            for k in want if not layout.is_upload(k))]
    return out


def take_baseline(run: RunState) -> None:
    """Before the first create: the ids matching each create's values (batched: one
    OR-filter on a key value per ``reread_chunk`` creates, or the whole list when a create
    has no such value and the object is small). A lost create adopts a record only when
    it is the one new match since then. A failed read leaves ``before`` unknown: such a
    lost create is still sent again when proven absent, never adopted."""
    tmps = [t for t, a in run.todo.items() if a == "create"]
    if not tmps:
        return
    if run.jr:   # records acknowledged by an earlier run are not this run's to adopt
        run.adopted.update(str(a["new_id"]) for a in run.jr.acks.values()
                           if a.get("action") == "create" and a.get("new_id"))
    route = LookupRoute.of([_lookup_rules(run, run.payloads[t]) for t in tmps],
                           len(run.known_ids), reread_chunk(run.source, run.plan.base))
    provable = [tmps[i] for i in route.provable]
    if not provable:
        return
    where_ = where(run.source)
    recs: dict[str, dict[str, Any]] = {}
    try:
        params: list[dict[str, Any] | None] = [None]
        if route.filters is not None:
            params = [{"filters": json.dumps({"match": "or", "rules": c}, default=str)}
                      for c in route.filters]
        for p in params:
            got = _fetch_lookup(run, where_, p, limit=LOOKUP_SCAN_LIMIT + 1)
            if len(got) > LOOKUP_SCAN_LIMIT:
                return   # values shared by too many records to count: never adopt
            recs.update((str(r["id"]), r) for r in got)
    except SvcError:
        return
    for t, ids in _matching(run, list(recs.values()), provable).items():
        run.before[t] = frozenset(ids)


def _not_ours_alone(run: RunState, tmp: str) -> str:
    """Why the one new match of a lost create is not provably ours ("" when it is): only a
    unique field's value in the create proves it, since the service holds one record per
    value. Without one, nothing the service shows tells our record from another writer's
    with the same values, made while ours was lost before the service stored it: no count
    of the records created meanwhile can, as they number the same either way."""
    body = run.plan.wanted.get(tmp, {})
    fields = run.layout.fields
    if any(fields[k].unique and k in run.payloads.get(tmp, {}) for k in body):
        return ""
    return ("no unique field's value proves it: another writer's create with the same "
            "values would look the same")


def _fetch_lookup(run: RunState, where_: Any, params: dict[str, Any] | None,
                  limit: int | None = None) -> list[dict[str, Any]]:
    return fetch_all(run.client, where_, run.counter, params, purpose="lookups",
                     limit=limit)


def lookup_created(run: RunState, tmp: str, body: Mapping[str, Any],
                   before: frozenset[str] | None) -> Match:
    """What the server holds for a create whose answer was lost (see ``Match``):
    records matching its values, less those that matched ``before`` it was sent, those
    other creates of this run own, and the loaded ones."""
    rules = _lookup_rules(run, body)
    if not rules and len(run.known_ids) > LOOKUP_SCAN_LIMIT:
        return Match("unprovable", why="no field to look it up by in a large object")
    params = {"filters": json.dumps({"match": "and", "rules": rules})} if rules else None
    try:
        recs = _fetch_lookup(run, where(run.source), params)
    except SvcError as exc:
        return Match("unprovable", why=f"the lookup failed: {exc.message}")
    found = _matching(run, recs, [tmp])[tmp]
    with run.adopt_lock:   # two lost creates must not adopt the same record
        new = [r for r in found if r not in run.adopted and r not in run.known_ids
               and (before is None or r not in before)]
        if not new:
            return Match("absent")
        if before is None:
            return Match("ambiguous", candidates=tuple(new))
        # another create of this run, sent and not settled, may own a match
        others = [t for t in run.unsettled_creates if t != tmp]
        owned = _matching(run, [r for r in recs if str(r["id"]) in new], others) \
            if others else {}
        if len(new) != 1 or any(new[0] in ids for ids in owned.values()):
            return Match("ambiguous", candidates=tuple(new))
    why = _not_ours_alone(run, tmp)
    with run.adopt_lock:
        if why or new[0] in run.adopted:
            return Match("ambiguous", candidates=tuple(new), why=why)
        run.adopted.add(new[0])
        return Match("ours", new[0])
