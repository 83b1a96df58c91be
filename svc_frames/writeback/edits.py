"""edits: what a diff collects record by record (the write payloads, each record's action,
its fields as loaded and as wanted, the rows to create, the changes table), filled by the
phases of diff.py, timers.py and connections.py and turned into the Plan."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .cells import shown_cell
from .plan import CHANGE_COLUMNS, Action


@dataclass
class Edits:
    """The Plan's parts as a diff collects them (record id -> ...)."""

    changes: dict[str, list[Any]] = field(
        default_factory=lambda: {c: [] for c in CHANGE_COLUMNS})
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    loaded: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    wanted: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    create_rows: dict[str, int] = field(default_factory=dict)   # new id -> row position

    def add_change(self, rid: str, action: Action, key: str, col: str, old: Any,
                   new: Any) -> None:
        """One row of ``Plan.changes``."""
        ch = self.changes
        ch["record_id"].append(rid)
        ch["action"].append(action)
        ch["field"].append(key)
        ch["column"].append(col)
        ch["old"].append(shown_cell(old))
        ch["new"].append(shown_cell(new))

    def set_field(self, rid: str, action: Action, key: str, enc: Any,
                  old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """Record ``rid`` writes ``enc`` to field ``key`` (``old``: as loaded, for an
        update)."""
        self.payloads.setdefault(rid, {})[key] = enc
        self.actions[rid] = action
        if action == "update" and old is not None:
            self.loaded.setdefault(rid, {})[key] = old
        self.wanted.setdefault(rid, {})[key] = new
