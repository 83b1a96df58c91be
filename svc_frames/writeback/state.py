"""The state of one ``write_back`` run: a typed record the phases (guard, apply, refresh)
take and update in turn.

Usage::

    run = RunState.start(client, plan, layout, tgt, jr)
    guard(run, "skip"); apply(run, max_workers=8, progress=None)

``todo`` shrinks as phases settle records into ``outcomes``; ``payloads`` are this run's
copies of the plan's payloads (the view filter and the guard remove fields).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..frames import Source
from ..records import Client
from .gate import QuotaGate
from .journal import Journal, record_keys
from .plan import Action, ColumnMap, Plan
from .report import Outcome, RequestCounter
from .stamp import Stamp
from .target import WriteTarget
from .values import Values

__all__ = ["RunState"]


@dataclass
class RunState:
    """Everything one run knows; see the module docstring."""

    client: Client
    plan: Plan
    layout: ColumnMap
    tgt: WriteTarget
    jr: Journal | None
    counter: RequestCounter = field(default_factory=RequestCounter)
    keys: dict[str, str] = field(default_factory=dict)           # record id -> journal key
    todo: dict[str, Action] = field(default_factory=dict)        # records still to write
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)   # one per settled record
    extra: list[Outcome] = field(default_factory=list)           # fields a view did not take
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    server_now: dict[str, dict[str, Any]] = field(default_factory=dict)  # guard's re-read
    # created records a lookup must not mistake for the one it looks for
    known_ids: set[str] = field(default_factory=set)
    adopted: set[str] = field(default_factory=set)
    # create -> ids that matched its values before any create was sent (None: unknown),
    # and creates sent but not settled: a lookup adopts only a record provably its own
    before: dict[str, frozenset[str] | None] = field(default_factory=dict)
    unsettled_creates: dict[str, dict[str, Any]] = field(default_factory=dict)
    # creates linking to other creates: their wanted values with the new ids (depends.py)
    wanted: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    # updates/deletes whose answer was lost (rid -> body sent): re-read before the report
    unanswered: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the live guard: when each record was last re-read (monotonic seconds), and each
    # acknowledged update's body (stamp aside) with the time its answer came
    read_at: dict[str, float] = field(default_factory=dict)
    written: dict[str, tuple[dict[str, Any], float]] = field(default_factory=dict)
    # every write's outcome as its answer comes (set by the worker that sent it, so a run
    # cut short keeps it), and the writes sent and not yet answered (interrupt.py)
    answered: dict[str, Outcome] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    adopt_lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    base_values: Values | None = None    # the loaded values, for the guard (made once)
    gate: QuotaGate | None = None        # the daily quota's gate (gate.py); None: no budget
    stamp: Stamp | None = None           # what object writes stamp themselves (stamp.py)
    # why no further write is sent: on_conflict="raise" met a conflict after a write had
    # gone (the live guard's later re-read); the run ends, reports, then raises
    halted: str | None = None
    halt_ids: list[str] = field(default_factory=list)    # the records in conflict then
    # how long the plan takes at the client's pace ("about 18 s at 10 requests/s"), shown
    # on the bar of writes
    duration: str = ""
    # just before a batch of deletes: other objects' links to them read and kept for an
    # undo (kept.Keeper.keep_links); False when the quota's gate is shut
    read_links: Callable[[Sequence[str]], bool] | None = None

    @classmethod
    def start(cls, client: Client, plan: Plan, layout: ColumnMap, tgt: WriteTarget,
              jr: Journal | None) -> RunState:
        """A run's state with its journal keys and the ids already known."""
        known = set(map(str, plan.base.main.index)) if plan.base is not None else set()
        return cls(client, plan, layout, tgt, jr, known_ids=known,
                   keys=record_keys(plan, tgt.name, journaled=jr is not None))

    @property
    def source(self) -> Source:
        return self.plan.source

    def wanted_of(self, rid: str) -> dict[str, dict[str, Any]]:
        """A record's wanted values (``plan.wanted``; a create's links with new ids)."""
        got = self.wanted.get(rid)
        return got if got is not None else self.plan.wanted.get(rid, {})

    def fields_of(self, rid: str) -> list[str]:
        return list(self.plan.payloads.get(rid, {}))
