"""One write-back run as an undo reads it: from a Report (``report.kept``) or from a
journal file (its ``run`` line and the ``undo`` entries of its acks), with what it cannot
undo (acks of an older svc_frames that kept no values, creates whose outcome was never
known, a journal cut short).

Usage::

    run = KeptRun.of("push.jsonl")        # the last run of the journal
    run.entries["5d79..."]["action"]      # "update"
    run.missing                           # what cannot be undone, and why
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..writeback.kept import KEPT_VERSION
from ..writeback.report import Report

__all__ = ["KeptRun", "Missing", "journal_runs"]


@dataclass(frozen=True)
class Missing:
    """A write of the run an undo cannot reverse: the record, its action, and why."""

    record_id: str
    action: str
    why: str


@dataclass
class KeptRun:
    """A run's header (application, object, source) and entries (record id -> entry),
    with ``missing``: its writes that cannot be undone. ``where`` names it in messages."""

    header: dict[str, Any]
    entries: dict[str, dict[str, Any]]
    missing: list[Missing] = field(default_factory=list)
    where: str = "the report"

    @classmethod
    def of(cls, what: Report | str | os.PathLike[str], run: int = -1) -> KeptRun:
        """The run a Report kept, or run ``run`` of a journal file (-1: its last)."""
        if isinstance(what, Report):
            return cls.of_report(what)
        if isinstance(what, (str, os.PathLike)):
            return cls.of_journal(Path(what), run)
        raise UsageError(f"undo needs a write_back Report or a journal path, not "
                         f"{type(what).__name__}")

    @classmethod
    def of_report(cls, report: Report) -> KeptRun:
        if report.dry_run:
            raise UsageError("the report is of a dry run: nothing was sent, nothing to undo")
        if report.kept is None:
            raise UsageError("the report keeps nothing to undo (not made by write_back)")
        why = {"unknown": "its outcome is unknown ({}): check the record and reverse it "
                          "by hand",
               "overwritten": "another editor's value replaced the run's after its write "
                              "({}): theirs stands"}
        missing = [Missing(str(r.record_id), str(r.action), why[str(r.status)].format(
                           r.message))
                   for r in report.table.itertuples() if r.status in why]
        return cls(report.kept.header, dict(report.kept.entries), missing)

    @classmethod
    def of_journal(cls, path: Path, run: int = -1) -> KeptRun:
        if not path.is_file():
            raise UsageError(f"journal {path}: no such file")
        segments, torn = _segments(path)
        if not segments:
            raise UsageError(f"journal {path} holds no write: nothing to undo")
        try:
            lines = segments[run]
        except IndexError:
            raise UsageError(f"journal {path} holds {len(segments)} run"
                             f"{'s' if len(segments) != 1 else ''}; run={run} is not one of "
                             "them") from None
        return cls.of_lines(lines, f"journal {path}",
                            torn if lines is segments[-1] else 0)

    @classmethod
    def of_lines(cls, lines: Sequence[dict[str, Any]], where: str, torn: int) -> KeptRun:
        """A run from its journal lines (``run``, ``intent``, ``ack``), in file order."""
        headers = [ln for ln in lines if ln.get("op") == "run"]
        acks = {str(ln["key"]): ln for ln in lines if ln.get("op") == "ack"}
        intents = {str(ln["key"]): ln for ln in lines if ln.get("op") == "intent"}
        if not headers:
            what = ", ".join(f"{a.get('action')} {a.get('new_id') or a.get('record_id')}"
                             for a in list(acks.values())[:5])
            raise UsageError(
                f"{where} was written by an older svc_frames, which kept no values as "
                f"loaded and no deleted records: its {len(acks)} write"
                f"{'s' if len(acks) != 1 else ''} ({what}{', ...' if len(acks) > 5 else ''})"
                " cannot be undone from it")
        header = headers[-1]
        if int(header.get("version") or 0) > KEPT_VERSION:
            raise UsageError(f"{where} was written by a newer svc_frames (kept version "
                             f"{header.get('version')}): upgrade to undo it")
        entries: dict[str, dict[str, Any]] = {}
        missing: list[Missing] = []
        for ack in acks.values():
            undo = ack.get("undo")
            rid = str(ack.get("record_id"))
            if isinstance(undo, dict) and undo.get("action") == ack.get("action"):
                entries[rid] = undo
            else:
                missing.append(Missing(str(ack.get("new_id") or rid), str(ack.get("action")),
                                       "acknowledged without its values as loaded (an "
                                       "older svc_frames wrote it)"))
        for key, intent in intents.items():
            if key not in acks:
                missing.append(Missing(str(intent.get("record_id")), "create",
                                       "sent, but the run never learned its outcome (no "
                                       "acknowledgement in the journal): look for the "
                                       "record and delete it by hand if it is there"))
        if torn:
            missing.append(Missing("", "", f"{torn} line{'s' if torn != 1 else ''} of the "
                                           "journal could not be read (cut short): the "
                                           "write it recorded is not undone"))
        header = {k: v for k, v in header.items() if k not in ("op", "ts")}
        return cls(header, entries, missing, where)


def journal_runs(path: Path) -> list[KeptRun]:
    """Every run of a journal that holds a write (settled or not; a run of an older
    svc_frames, which kept no values, left out). Usage: ``journal_runs(Path("u.jsonl"))``"""
    segments, _torn = _segments(path)
    out = []
    for lines in segments:
        try:
            out.append(KeptRun.of_lines(lines, f"journal {path}", 0))
        except UsageError:
            continue
    return out


def _segments(path: Path) -> tuple[list[list[dict[str, Any]]], int]:
    """The journal's runs (the lines between ``settled`` marks that hold a write; a run
    left unsettled, its outcomes unknown, ends where the next one names another
    application or object), and the lines of the last one that could not be read (a
    cut-short file)."""
    segments: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    torn = 0

    def wrote(lines: list[dict[str, Any]]) -> bool:
        return any(ln.get("op") in ("ack", "intent") for ln in lines)

    def of(line: dict[str, Any]) -> tuple[Any, Any]:
        return line.get("app_id"), line.get("object_key")
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                torn += 1
                continue
            if not isinstance(rec, dict):
                torn += 1
                continue
            if rec.get("op") == "settled":
                if wrote(current):
                    segments.append(current)
                current, torn = [], 0
                continue
            if rec.get("op") == "run" and wrote(current) and any(
                    ln.get("op") == "run" and of(ln) != of(rec) for ln in current):
                segments.append(current)
                current, torn = [], 0
            current.append(rec)
    if wrote(current):
        segments.append(current)
    elif torn and segments:
        torn = 0    # a torn line after the last settled run touches no write of it
    return segments, torn
