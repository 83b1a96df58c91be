"""The journal of a write-back run: acknowledged writes on disk, so an interrupted run
resumes without sending anything twice; and the keys that name each write in it.

Usage::

    jr = Journal("push.jsonl")
    keys = record_keys(plan, "object_3", journaled=True)
    jr.write("intent", keys["new:0"], action="create")
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..assets import PendingUpload
from ..errors import UsageError
from .plan import Plan

__all__ = ["Journal", "journal_key", "record_keys", "check_journal_path"]


def _jsonable(v: Any) -> Any:
    if isinstance(v, PendingUpload):
        return {"upload": v.digest, "kind": v.kind, "filename": v.filename}
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def journal_key(*parts: Any) -> str:
    """A short stable hash of ``parts`` (pending uploads by content digest).

    Usage: ``journal_key("upload", record_key, field_key, digest)``"""
    text = json.dumps(_jsonable(list(parts)), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def record_keys(plan: Plan, target_name: str, *, journaled: bool) -> dict[str, str]:
    """record id -> journal key. Creates are keyed by content (+ occurrence): an
    acknowledged create is never sent again, whatever else changed. Updates and deletes
    are keyed by this run's whole plan, so a journal from an earlier, different push cannot
    mask a new edit back to an old value (the guard's re-read still spots what is already
    on the server)."""
    keys: dict[str, str] = {}
    seen: dict[str, int] = {}
    run_id = journal_key(target_name, sorted((rid, act, plan.payloads.get(rid, {}))
                                             for rid, act in plan.actions.items())) \
        if journaled else ""
    for rid, act in plan.actions.items():
        payload = plan.payloads.get(rid, {})
        if act == "create":
            h = journal_key("create", target_name, payload)
            n = seen[h] = seen.get(h, -1) + 1
            keys[rid] = f"{h}#{n}"
        else:
            keys[rid] = journal_key(act, target_name, rid, payload, run_id)
    return keys


def check_journal_path(path: str | os.PathLike[str]) -> None:
    """UsageError naming ``path`` when it cannot be a journal file (a directory, or under
    a file), checked before the first request. Usage: ``check_journal_path("push.jsonl")``"""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"journal {p} is a directory: give a file path, e.g. "
                         f"{p / 'push.jsonl'}")
    parent = next((a for a in p.parents if a.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"journal {p}: {parent} is a file, not a directory")
    if p.exists() and not p.is_file():
        raise UsageError(f"journal {p} is not a regular file")


class Journal:
    """Append-only JSON lines of acknowledged writes, so an interrupted run resumes.

    Each line is ``{"op": "intent"|"ack"|"upload", "key", ...}``; ``intent`` is written
    just before a create is sent, ``ack`` once the service answered, with what an undo
    needs of the record (``"undo"``: ``keep``, writeback/kept.py); a run opens with a
    ``{"op": "run", ...}`` line naming its application and object (``begin``). A run that settled
    every write (nothing unknown) ends with ``{"op": "settled"}``: what came before it is
    done and no longer consulted, so the same file can serve later pushes. A torn last
    line (a crash mid-write) is ignored.

    Usage: ``write_back(client, frames, journal="push.jsonl")``"""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.acks: dict[str, dict[str, Any]] = {}
        self.intents: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            with self.path.open("r", encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict) and rec.get("op") == "settled":
                        self.acks.clear()
                        self.intents.clear()
                        self.uploads.clear()
                        continue
                    if not isinstance(rec, dict) or "key" not in rec:
                        continue
                    {"ack": self.acks, "intent": self.intents,
                     "upload": self.uploads}.get(rec.get("op", ""), {})[rec["key"]] = rec
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")
        self._lock = threading.Lock()
        # an ack's entry for an undo (writeback/kept.py: Keeper.entry); None: none kept
        self.keep: Callable[[Mapping[str, Any]], dict[str, Any] | None] | None = None

    def begin(self, header: Mapping[str, Any]) -> None:
        """The ``run`` line opening a run (or its resumption): what an undo checks."""
        line = json.dumps({"op": "run", "ts": round(time.time(), 3), **header}, default=str)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def write(self, op: str, key: str, **info: Any) -> None:
        if op == "ack" and self.keep is not None:
            undo = self.keep(info)
            if undo is not None:
                info["undo"] = undo
        info.pop("record", None)     # a create's answer: kept only as undo needs it
        rec = {"op": op, "key": key, "ts": round(time.time(), 3), **info}
        line = json.dumps(_jsonable(rec), default=str) + "\n"
        with self._lock:
            self._fh.write(line)
            self._fh.flush()   # in the OS before the next write: survives a killed process
            {"ack": self.acks, "intent": self.intents,
             "upload": self.uploads}[op][key] = rec

    def mark_done(self) -> None:
        """Mark everything so far as done (a later push starts from a clean slate)."""
        with self._lock:
            self._fh.write(json.dumps({"op": "settled", "ts": round(time.time(), 3)}) + "\n")
            self._fh.flush()
            self.acks.clear()
            self.intents.clear()
            self.uploads.clear()

    def close(self) -> None:
        with self._lock:
            self._fh.close()
