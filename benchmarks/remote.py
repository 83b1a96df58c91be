"""The local service in its own process, as the hosted service would be: its CPU does not
compete with the client's for one interpreter lock. Driven through a pipe: emulation
knobs, the request log, and the activity of other users (pause, resume, what it did).

Usage::

    with RemoteService(50_000, activity="object_3:2/s") as svc:
        svc.set(rate_limit=10, latency_ms=100)
        t0 = svc.now()
        ...                                   # load through svc.base_url
        changed = svc.touched("object_3", t0, svc.now(), ("insert", "delete"))
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

from svc_frames.server import LocalService


def _service_main(conn: Any, records: int, seed: int, options: dict[str, Any]) -> None:
    """Child process: a LocalService answering the parent's commands."""
    with LocalService(demo=True, records=records, seed=seed, **options) as svc:
        conn.send({"base_url": svc.base_url, "app_id": svc.app_id, "api_key": svc.api_key,
                   "ca_file": svc.ca_file})
        while True:
            cmd, arg = conn.recv()
            if cmd == "stop":
                break
            if cmd == "set":
                for k, v in arg.items():
                    setattr(svc.emulation, k, v)
                conn.send(None)
            elif cmd == "count":
                conn.send(svc.request_log.count(**arg))
            elif cmd == "clear":
                svc.request_log.clear()
                conn.send(None)
            elif cmd == "now":
                conn.send(svc.emulation.now())
            elif cmd in ("pause", "resume"):
                assert svc.activity is not None
                getattr(svc.activity, cmd)()
                conn.send(None)
            elif cmd == "touched":
                assert svc.activity is not None
                obj, since, until, actions = arg
                conn.send(svc.activity.log.touched(obj, since, until, tuple(actions)))


class RemoteService:
    """A demo LocalService of ``records`` records in a child process (module docstring);
    ``options`` go to LocalService (``activity``, ``rate_limit``, ...)."""

    def __init__(self, records: int, seed: int = 0, **options: Any) -> None:
        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_service_main, args=(child, records, seed, options),
                                 daemon=True)
        self.records = records

    def __enter__(self) -> RemoteService:
        self._proc.start()
        info = self._conn.recv()
        self.base_url, self.app_id, self.api_key = (info["base_url"], info["app_id"],
                                                    info["api_key"])
        self.ca_file: str | None = info["ca_file"]  # clients' verify= (None: plain HTTP)
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send(("stop", None))
        self._proc.join(timeout=30)

    def _ask(self, cmd: str, arg: Any = None) -> Any:
        self._conn.send((cmd, arg))
        return self._conn.recv()

    def set(self, **knobs: Any) -> None:
        """Set emulation knobs (``rate_limit``, ``latency_ms``, ``fault_rate``, ...)."""
        self._ask("set", knobs)

    def count(self, **filters: Any) -> int:
        """Requests in the service's log matching ``filters`` (``status=429``, ...)."""
        return int(self._ask("count", filters))

    def clear(self) -> None:
        """Empty the request log."""
        self._ask("clear")

    def now(self) -> float:
        """The service's clock (its offset included): the activity log's times."""
        return float(self._ask("now"))

    def pause(self) -> None:
        """Hold the other users' activity."""
        self._ask("pause")

    def resume(self) -> None:
        """Let the activity go on."""
        self._ask("resume")

    def touched(self, object_key: str, since: float, until: float,
                actions: tuple[str, ...]) -> set[str]:
        """Ids the activity ``actions`` touched in ``object_key`` between the two times."""
        return set(self._ask("touched", (object_key, since, until, list(actions))))
