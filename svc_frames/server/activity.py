"""Other users at work: inserts, updates and deletes of chosen objects at a chosen rate,
made in the service's own process while clients read and write.

A live hosted application has users editing on its pages while an analyst loads: pages
shift under page-number paging, records vanish between a load and a write, stamps move.
``Activity`` is the setting; ``ActivityRunner`` the background thread that acts on it,
writing through ``AppPages`` (the application's own pages: the same store code paths as
the routes', codecs and record rules included, so every change is stamped as a form
would stamp it). Its writes are not API requests: the rate limit and the daily quota do
not count them, as the hosted limits do not count a live application's own pages.

* actions come at ``rate`` per second over all the chosen objects (evenly spaced, never
  faster: a runner that fell behind does not catch up in a burst);
* each action is an insert, an update or a delete, drawn with the weights ``inserts``,
  ``updates``, ``deletes``; the object is drawn among ``objects``; the record updated or
  deleted by its place among the object's records in creation order. All draws come from
  ``random.Random(seed)``: two runs from the same data make the same choices;
* an insert fills the fields the generic generator fills (generate.py), a connection with
  records of the connected object; an update changes one or two stored fields of a kind
  with a plain value (text, number, choice, date...) to a value other than the record's
  (drawn again while the same, a few times at most); a delete drops the record, its
  links and what other records computed from it (``Store.delete``). With no record left,
  an update or delete becomes an insert (or nothing, when inserts weigh 0);
* ``svc.activity.pause()`` / ``resume()`` / ``stop()``; ``svc.activity.log`` lists what
  was done: ``ActivityEntry(time, action, object_key, record_id)``, ``time`` in the
  service's clock (``Emulation.now()``, as the stamps).

Usage::

    with LocalService(demo=True, activity=Activity(("object_3",), rate=2.0)) as svc:
        ...
        svc.activity.pause()
        svc.activity.log.touched("object_3", since=t0)   # ids changed since t0
"""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UsageError
from .apierror import ApiError
from .generate import Generator
from .pages import AppPages
from .schema import COMPUTED_KINDS, AppDef, ObjectDef
from .state import ServiceState

Action = Literal["insert", "update", "delete"]
ACTIONS: tuple[Action, ...] = ("insert", "update", "delete")
MAX_RATE = 100.0
"""Actions per second at most: past that the runner is a load test of SQLite, not users."""
UPDATABLE_KINDS = frozenset({"short_text", "paragraph_text", "number", "currency", "rating",
                             "boolean", "multiple_choice", "date_time", "phone", "email",
                             "name", "address", "link"})
"""Kinds an update changes: plain values the generator makes and the codecs normalize."""
_SPELLING = re.compile(r"^(?P<objects>[^:]+):(?P<rate>[^/:]+)/s(?::(?P<weights>.*))?$")


@dataclass(frozen=True)
class Activity:
    """Other users inserting, updating and deleting records (module docstring).

    Parameters
    ----------
    objects : tuple of str
        Object keys whose records the users edit (standard objects: user objects hold
        accounts and are refused).
    rate : float
        Actions per second over all the objects, > 0 and at most ``MAX_RATE``.
    inserts, updates, deletes : float
        Relative weights of the three actions, >= 0, not all 0.
    seed : int
        Seed of every choice the runner makes.

    Raises
    ------
    UsageError
        A setting out of range, named (when made); from ``check``, an object the
        application lacks or a user object.

    Examples
    --------
    >>> Activity(("object_3",), rate=2.0, inserts=1, updates=3, deletes=1, seed=7).rate
    2.0
    >>> Activity.parse("object_3,object_2:0.5/s:updates=2,deletes=0").objects
    ('object_3', 'object_2')
    """

    objects: tuple[str, ...]
    rate: float = 1.0
    inserts: float = 1.0
    updates: float = 1.0
    deletes: float = 1.0
    seed: int = 0

    @classmethod
    def of(cls, value: Activity | Mapping[str, Any] | str) -> Activity:
        """An ``Activity``, a mapping of its members, or the CLI spelling (``parse``).

        Raises
        ------
        UsageError
            A mapping with unknown members, or a value of another type."""
        if isinstance(value, Activity):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - set(cls.__dataclass_fields__))
            if unknown:
                raise UsageError(f"activity: unknown settings {unknown}; use objects, rate, "
                                 "inserts, updates, deletes, seed", field="activity")
            objects = value.get("objects", ())
            members = dict(value, objects=(objects,) if isinstance(objects, str)
                           else tuple(objects))
            return cls(**members)
        raise UsageError(f"activity must be an Activity, a mapping or a text such as "
                         f"'object_3:2/s', got {type(value).__name__}", field="activity")

    @classmethod
    def parse(cls, text: str, seed: int = 0) -> Activity:
        """The CLI spelling: ``OBJECTS:RATE/s[:WEIGHTS]``, objects comma-separated,
        weights ``inserts=N,updates=N,deletes=N`` (any of them; the rest stay 1).

        Raises
        ------
        UsageError
            Text not of that shape, naming what is wrong.

        Examples
        --------
        >>> Activity.parse("object_3:2/s").rate
        2.0
        """
        m = _SPELLING.match(text.strip())
        if m is None:
            raise UsageError(f"activity {text!r}: expected OBJECTS:RATE/s[:inserts=N,"
                             "updates=N,deletes=N], e.g. 'object_3:2/s'", field="activity")
        objects = tuple(o.strip() for o in m["objects"].split(",") if o.strip())
        rate = _number(m["rate"], "rate", text)
        weights: dict[str, float] = {}
        for part in (m["weights"] or "").split(","):
            if not part.strip():
                continue
            name, eq, value = part.partition("=")
            name = name.strip()
            if not eq or name not in ("inserts", "updates", "deletes") or name in weights:
                raise UsageError(f"activity {text!r}: {part.strip()!r} is not one of "
                                 "inserts=N, updates=N, deletes=N (each once)",
                                 field="activity")
            weights[name] = _number(value, name, text)
        return cls(objects, rate, seed=seed, **weights)

    def __post_init__(self) -> None:
        # a bad setting is refused where it is made, before any service starts
        if not isinstance(self.objects, tuple) or not self.objects or not all(
                isinstance(o, str) and o for o in self.objects):
            raise UsageError("activity: objects must be a non-empty tuple of object keys, "
                             f"got {self.objects!r}", field="objects")
        if (isinstance(self.rate, bool) or not isinstance(self.rate, (int, float))
                or not math.isfinite(self.rate) or not 0 < self.rate <= MAX_RATE):
            raise UsageError(f"activity: rate must be more than 0 and at most {MAX_RATE:g} "
                             f"actions per second, got {self.rate!r}", field="rate")
        for name in ("inserts", "updates", "deletes"):
            w = getattr(self, name)
            if (isinstance(w, bool) or not isinstance(w, (int, float))
                    or not math.isfinite(w) or w < 0):
                raise UsageError(f"activity: {name} is a weight >= 0, got {w!r}", field=name)
        if not (self.inserts or self.updates or self.deletes):
            raise UsageError("activity: inserts, updates and deletes all weigh 0: nothing "
                             "would happen", field="inserts")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise UsageError(f"activity: seed must be an integer, got {self.seed!r}",
                             field="seed")

    def check(self, app: AppDef) -> None:
        """UsageError naming an object the application lacks, or a user object."""
        for key in self.objects:
            obj = app.objects.get(key)
            if obj is None:
                raise UsageError(f"activity: {key!r} is not an object of the application "
                                 f"(objects: {', '.join(app.objects)})", field=key)
            if obj.profile_key:
                raise UsageError(f"activity: {key} ({obj.name}) is a user object: its "
                                 "records are accounts; choose standard objects", field=key)


def _number(text: str, name: str, whole: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"activity {whole!r}: {name} {text.strip()!r} is not a number",
                         field=name) from None


@dataclass(frozen=True)
class ActivityEntry:
    """One action done: when (the service's clock), what, on which record."""

    time: float
    action: Action
    object_key: str
    record_id: str


class ActivityLog:
    """Thread-safe list of the actions done, oldest first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[ActivityEntry] = []

    def add(self, entry: ActivityEntry) -> None:
        with self._lock:
            self._entries.append(entry)

    @property
    def entries(self) -> list[ActivityEntry]:
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def touched(self, object_key: str | None = None, since: float = -math.inf,
                until: float = math.inf,
                actions: tuple[Action, ...] = ACTIONS) -> set[str]:
        """Ids of records the activity inserted, updated or deleted (``actions``) with
        ``since <= time <= until`` (the service's clock): the records of a load that
        began at ``since`` and ended at ``until`` which did not exist unchanged throughout
        it are among these.

        Usage: ``svc.activity.log.touched("object_3", since=t0, until=t1)``"""
        return {e.record_id for e in self.entries
                if (object_key is None or e.object_key == object_key)
                and since <= e.time <= until and e.action in actions}


class ActivityRunner:
    """The thread acting on an ``Activity`` (module docstring). Started paused or not;
    ``pause`` returns once no action is under way, so a test may read the store then."""

    def __init__(self, state: ServiceState, activity: Activity,
                 clock: Callable[[], float]) -> None:
        activity.check(state.app)
        self.activity = activity
        self.state = state
        self.clock = clock
        self.log = ActivityLog()
        self._pages = AppPages(state.store)
        self._rng = random.Random(activity.seed)
        self._gen = Generator(state, random.Random(f"{activity.seed}:values"),
                              activity.seed)
        self._running = threading.Event()
        self._running.set()
        self._stopped = threading.Event()
        self._busy = threading.Lock()   # held while one action is made
        self._thread: threading.Thread | None = None
        self._made = 0
        self.refused = 0   # actions the application refused (a rule, a unique clash)

    # ---- control --------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="svc-frames-activity",
                                        daemon=True)
        self._thread.start()

    def pause(self) -> None:
        """No action after this returns (one under way is finished first)."""
        self._running.clear()
        with self._busy:
            pass

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def stop(self) -> None:
        """End the thread (waits for an action under way)."""
        self._stopped.set()
        self._running.set()   # a paused runner wakes to see the stop
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None

    # ---- the loop -------------------------------------------------------------------
    def _run(self) -> None:
        interval = 1.0 / self.activity.rate
        due = time.monotonic() + interval
        while not self._stopped.is_set():
            self._running.wait()
            wait = due - time.monotonic()
            if wait > 0 and self._stopped.wait(wait):
                return
            with self._busy:
                if self._stopped.is_set():
                    return
                if self._running.is_set():
                    self.step()
            # evenly spaced, never a burst to catch up after a stall or a pause
            due = max(due + interval, time.monotonic())

    def step(self) -> ActivityEntry | None:
        """Make one action now (the thread calls this; tests may too, paused)."""
        a = self.activity
        action: Action = self._rng.choices(ACTIONS, weights=(a.inserts, a.updates,
                                                             a.deletes))[0]
        obj = self.state.app.object(self._rng.choice(a.objects))
        pick = self._rng.random()   # drawn whatever the action, so draws stay aligned
        ids = [r[0] for r in self.state.store.reader.execute(
            "SELECT id FROM records WHERE obj = ? ORDER BY seq", (obj.key,))]
        if action != "insert" and not ids:
            if not a.inserts:
                return None
            action = "insert"
        try:
            if action == "insert":
                rid = str(self._pages.create_record(obj.key, self._new_values(obj))["id"])
            else:
                rid = ids[int(pick * len(ids))]
                if action == "update":
                    self._pages.update_record(obj.key, rid, self._changes(obj, rid))
                else:
                    self._pages.delete_record(obj.key, rid)
        except ApiError:
            self.refused += 1   # counted, not logged: nothing changed
            return None
        entry = ActivityEntry(self.clock(), action, obj.key, rid)
        self.log.add(entry)
        return entry

    # ---- values ---------------------------------------------------------------------
    def _new_values(self, obj: ObjectDef) -> dict[str, Any]:
        self._made += 1
        values: dict[str, Any] = {}
        for f in obj.fields:
            if f.kind in COMPUTED_KINDS or f.kind in ("password", "user_roles", "file",
                                                      "signature"):
                continue
            if f.kind == "image" and (f.format or {}).get("source") != "url":
                continue
            if f.kind == "connection":
                target = (f.relationship or {}).get("object", "")
                row = self.state.store.reader.execute(
                    "SELECT id FROM records WHERE obj = ? ORDER BY seq LIMIT 1 OFFSET ?",
                    (target, self._rng.randrange(max(self.state.store.count(target), 1))),
                ).fetchone()
                if row is not None:
                    values[f.key] = [row[0]]
                continue
            value = self._gen.input_for(f, self._made)
            if value is None:
                continue
            if f.unique:
                value = _unique(f.kind, value, f"{self.activity.seed}-{self._made}-"
                                               f"{self._rng.getrandbits(32):08x}")
                if value is None:
                    continue
            values[f.key] = value
        return values

    def _changes(self, obj: ObjectDef, rid: str) -> dict[str, Any]:
        stamped = {v.get("field") for r in (obj.doc.get("rules") or {}).get("records") or []
                   for v in r.get("values") or []}
        fields = [f for f in obj.fields if f.kind in UPDATABLE_KINDS and not f.unique
                  and f.key not in stamped and not (f.format or {}).get("calendar")]
        if not fields:
            return {}
        self._made += 1
        chosen = self._rng.sample(fields, min(len(fields), self._rng.randint(1, 2)))
        store = self.state.store
        current = store.raw_of(store.records(obj.key, [rid]).get(rid, {}))
        out: dict[str, Any] = {}
        for f in chosen:
            for _ in range(8):   # a value other than the record's (a few draws suffice)
                value = self._gen.input_for(f, self._made)
                if f.kind in ("short_text", "paragraph_text") and isinstance(value, str):
                    value = f"{value} (edited {self._made})"
                if self._gen.normalize(f, value) != current.get(f.key):
                    break
            out[f.key] = value
        return out


def _unique(kind: str, value: Any, tag: str) -> Any:
    """A generated value made unique by a tag (None: a kind that cannot carry one)."""
    if kind == "email":
        return {"email": f"activity.{tag}@example.com"}
    if isinstance(value, str):
        return f"{value} {tag}"
    return None
