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
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import OutcomeUnknown, ServerError, SvcError
from ..progress import Progress, want_progress
from .guard import fetch_all
from .report import Outcome
from .state import RunState
from .target import where
from .uploads import resolve_uploads
from .values import Values, decode_records, response_record, same

__all__ = ["apply", "lookup_created"]

# Kinds a created record can be looked up by (an "is" filter) when its outcome is unknown.
LOOKUP_KINDS = ("short_text", "paragraph_text", "number")
# Without such a field, a lookup pages the whole list: only worth it for small objects.
LOOKUP_SCAN_LIMIT = 5000
_ORDER = {"update": 0, "create": 1, "delete": 2}


def apply(run: RunState, max_workers: int, progress: bool | None) -> None:
    """Updates, then creates, then deletes, concurrently within the client's pace; a bar
    of writes done / planned when ``progress`` (see ``want_progress``)."""
    todo = run.todo
    order = sorted(todo, key=lambda r: _ORDER[todo[r]])
    if not order:
        return
    workers = max(1, min(max_workers, len(order)))
    pool = ThreadPoolExecutor(workers, thread_name_prefix="write_back")
    bar = Progress(want_progress(progress), f"write_back {run.tgt.name}", unit="rec",
                   total=len(order))
    try:
        for out in pool.map(lambda rid: write(run, rid), order):
            run.outcomes[out.record_id] = out
            bar.update(1)
    except BaseException:
        # interrupted (Ctrl-C, a crash): start nothing more; the journal holds
        # every acknowledged write for the re-run
        pool.shutdown(wait=True, cancel_futures=True)
        bar.close(complete=False)
        raise
    pool.shutdown(wait=True)
    bar.close()


def write(run: RunState, rid: str) -> Outcome:
    """One record's write; service errors become its outcome, not the run's."""
    act = run.todo[rid]
    if run.stop.is_set():
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "skipped", "interrupted")
    try:
        if act == "update":
            return update(run, rid)
        if act == "create":
            return create(run, rid)
        return delete(run, rid)
    except OutcomeUnknown as exc:
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "unknown", exc.message)
    except SvcError as exc:
        return Outcome(rid, act, list(run.payloads.get(rid, {})), "failed", exc.message)
    except BaseException:
        run.stop.set()   # a crash or Ctrl-C: no further write starts
        raise


def update(run: RunState, rid: str) -> Outcome:
    client, tgt, jr = run.client, run.tgt, run.jr
    body = resolve_uploads(run, rid, run.payloads[rid])
    run.counter.add("writes")
    if tgt.is_view:
        assert tgt.scene and tgt.view
        resp = client.update_view_record(tgt.scene, tgt.view, rid, body, token=tgt.token)
    else:
        resp = client.update_record(tgt.object_key, rid, body)
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


class _CreateCheck:
    """The create path's ``resend`` rule: after an unknown outcome, look the record up;
    send again only when it is verified absent (found: adopt it, no resend)."""

    def __init__(self, run: RunState, tmp: str, body: Mapping[str, Any]) -> None:
        self.run, self.tmp, self.body = run, tmp, body
        self.found: str | None = None
        self.unverifiable = False

    def look(self) -> str | None:
        try:
            self.found = lookup_created(self.run, self.tmp, self.body)
        except SvcError:
            self.found = None
        return self.found

    def __call__(self, _exc: OutcomeUnknown) -> bool:
        if self.look():
            return False
        if not lookup_possible(self.run, self.body):
            self.unverifiable = True
            return False
        run = self.run
        if run.jr:   # verified absent: sending again cannot duplicate it
            run.jr.write("intent", run.keys[self.tmp], action="create", record_id=self.tmp)
        run.counter.add("writes")
        return True


def create(run: RunState, tmp: str) -> Outcome:
    """A create is never repeated blindly: after an unknown outcome the record is
    looked up first, and sent again only when verified absent."""
    client, tgt, jr = run.client, run.tgt, run.jr
    key = run.keys[tmp]
    body = resolve_uploads(run, tmp, run.payloads[tmp])
    if jr and key in jr.intents:
        found = lookup_created(run, tmp, body)   # an earlier run sent it, never heard back
        if found:
            jr.write("ack", key, action="create", record_id=tmp, new_id=found)
            return Outcome(tmp, "create", list(body), "applied",
                           "created by an earlier run (found)", None, found)
    check = _CreateCheck(run, tmp, body)
    if jr:
        jr.write("intent", key, action="create", record_id=tmp)
    run.counter.add("writes")
    try:
        if tgt.is_view:
            assert tgt.scene and tgt.view
            resp = client.create_view_record(tgt.scene, tgt.view, body, token=tgt.token,
                                             resend=check)
        else:
            resp = client.create_record(tgt.object_key, body, resend=check)
    except (OutcomeUnknown, ServerError) as exc:
        # the policy gave up (or the answer was lost on the way back): one last look
        found = check.found if check.found or check.unverifiable else check.look()
        if found:
            if jr:
                jr.write("ack", key, action="create", record_id=tmp, new_id=found)
            return Outcome(tmp, "create", list(body), "applied",
                           "outcome was unknown; found on the server", None, found)
        if check.unverifiable or not lookup_possible(run, body):
            return Outcome(tmp, "create", list(body), "unknown",
                           f"{exc.message}; re-run with the journal to check")
        return Outcome(tmp, "create", list(body), "unknown",
                       "the service kept failing; nothing found on the server")
    rec = response_record(resp)
    new_id = rec["id"] if rec else None
    with run.adopt_lock:
        if new_id:
            run.adopted.add(new_id)
    if jr:
        jr.write("ack", key, action="create", record_id=tmp, new_id=new_id)
    return Outcome(tmp, "create", list(body), "applied", "", rec, new_id)


def delete(run: RunState, rid: str) -> Outcome:
    client, tgt = run.client, run.tgt
    run.counter.add("writes")
    try:
        if tgt.is_view:
            assert tgt.scene and tgt.view
            client.delete_view_record(tgt.scene, tgt.view, rid, token=tgt.token)
        else:
            client.delete_record(tgt.object_key, rid)
    except SvcError as exc:
        if getattr(exc, "status", None) != 404:   # already gone is what we wanted
            raise
    if run.jr:
        run.jr.write("ack", run.keys[rid], action="delete", record_id=rid)
    return Outcome(rid, "delete", [], "applied")


def lookup_possible(run: RunState, body: Mapping[str, Any]) -> bool:
    return any(run.layout.fields[k].kind in LOOKUP_KINDS for k in body) \
        or len(run.known_ids) <= LOOKUP_SCAN_LIMIT


def lookup_created(run: RunState, tmp: str, body: Mapping[str, Any]) -> str | None:
    """The id of a record matching a create whose outcome is unknown, or None."""
    layout = run.layout
    want = run.plan.wanted.get(tmp, {})
    rules = []
    for key, val in body.items():
        if layout.fields[key].kind in LOOKUP_KINDS and isinstance(
                val, (str, int, float)) and not isinstance(val, bool):
            rules.append({"field": key, "operator": "is", "value": val})
    params = {"filters": json.dumps({"match": "and", "rules": rules[:5]})} if rules \
        else None
    if params is None and len(run.known_ids) > LOOKUP_SCAN_LIMIT:
        return None   # no way to find it cheaply: report the outcome as unknown
    run.counter.add("lookups")
    recs = fetch_all(run.client, where(run.source), run.counter, params)
    cands = [r for r in recs if r.get("id") not in run.known_ids]
    if not cands:
        return None
    values = Values(decode_records(cands, run.source), layout)
    for r in cands:
        rid = str(r["id"])
        if all(same(values(rid, k), want.get(k, {}))
               for k in want if not layout.is_upload(k)):
            with run.adopt_lock:   # two lost creates must not adopt the same record
                if rid in run.adopted:
                    continue
                run.adopted.add(rid)
            return rid
    return None
