"""An interrupted write_back keeps count: SIGINT (Ctrl-C) at random points of a paced run
over the local service, and a crash in the middle. Afterwards the frames equal the server
for every answered record, the exception carries the partial Report, the journal holds
every acknowledged write, and a second call sends exactly the rest."""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from svc_frames.errors import WriteInterrupted
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import add_rows, diff, write_back

OBJ = "object_3"      # the demo's Work Orders
TEXT = "field_12"     # its short text field (Title)
EDITS = 24
RATE = 12.0           # requests/s: the run lasts about 3 s


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=40, rate_limit=0, seed=7) as s:
        yield s


def _load(client: Client) -> Frames:
    return read_object(client, OBJ, columns="keys", progress=False)


def _edited(client: Client, tag: str, creates: int = 0) -> tuple[Frames, dict[str, str]]:
    frames = _load(client)
    assert frames.source is not None
    kinds = {f.key: f.kind for f in frames.source.fields}
    assert kinds[TEXT] == "short_text"
    ids = frames.main.index[:EDITS].tolist()
    wanted = {rid: f"{tag} {i}" for i, rid in enumerate(ids)}
    s = frames.main[TEXT].copy()
    for rid, v in wanted.items():
        s.at[rid] = v
    frames.main[TEXT] = s
    if creates:
        add_rows(frames, [{TEXT: f"{tag} new {i}"} for i in range(creates)])
    return frames, wanted


class _Interrupter:
    """Sends SIGINT to this process (Python raises KeyboardInterrupt in the main thread,
    where write_back runs) after ``delay`` seconds, unless ``stop`` came first."""

    def __init__(self, delay: float) -> None:
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.sent = False
        self.thread = threading.Thread(target=self._run, args=(delay,), daemon=True)
        self.thread.start()

    def _run(self, delay: float) -> None:
        if self.stopped.wait(delay):
            return
        with self.lock:
            if not self.stopped.is_set():
                self.sent = True
                os.kill(os.getpid(), signal.SIGINT)

    def stop(self) -> None:
        """No signal after this one returns; a signal already sent is raised here at the
        latest (the main thread runs the handler during the sleep)."""
        with self.lock:
            self.stopped.set()
        self.thread.join()
        if self.sent:
            time.sleep(1.0)


def _run_interrupted(client: Client, frames: Frames, delay: float,
                     journal: Path) -> Any:
    """The Report a Ctrl-C left (WriteInterrupted), or None when the KeyboardInterrupt came
    before the run's first request (nothing written) or after its end (all written)."""
    ended = False
    # the interpreter drops a KeyboardInterrupt raised while a weakref callback runs (the
    # standard library's WeakSet), reporting it as unraisable: that signal never reached
    # the run, which then ends as if it came after its end (the suite saw it once)
    lost: list[BaseException] = []
    hook = sys.unraisablehook

    def note(u: Any) -> None:
        if isinstance(u.exc_value, KeyboardInterrupt):
            lost.append(u.exc_value)
        else:
            hook(u)

    sys.unraisablehook = note
    intr = _Interrupter(delay)
    try:
        try:
            write_back(client, frames, journal=journal, progress=False)
            ended = True
        finally:
            intr.stop()
            sys.unraisablehook = hook
    except WriteInterrupted as exc:
        assert isinstance(exc, KeyboardInterrupt)
        assert "interrupted" in str(exc) and "write_back again" in str(exc)
        return exc.report
    except KeyboardInterrupt:
        assert not ended or diff(frames).empty
        return None
    if lost:
        assert ended and diff(frames).empty
        return None
    assert not intr.sent
    pytest.fail(f"the run ended before the SIGINT at {delay:.2f} s")


@pytest.mark.slow(seconds=20)
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_sigint_at_a_random_point_keeps_count(svc: LocalService, tmp_path: Path,
                                               seed: int) -> None:
    rng = random.Random(seed)
    client = client_for(svc, rate_limit=RATE)
    creates = 3 if seed % 2 else 0
    frames, wanted = _edited(client, f"cut{seed}", creates)
    planned = diff(frames)
    journal = tmp_path / "run.jsonl"
    svc.request_log.clear()
    # from before the first request (a plain KeyboardInterrupt) to after the last write
    report = _run_interrupted(client, frames, rng.choice([0.0, 0.2]) + rng.uniform(0, 1.6),
                              journal)
    if report is None:   # before the first request, or after the last answer
        if svc.request_log.count(method="PUT") == 0:
            assert svc.request_log.count(method="POST") == 0
            assert set(diff(frames).actions) == set(planned.actions)
        again = write_back(client_for(svc), frames, journal=journal, progress=False)
        assert set(again.table["status"]) <= {"applied"}
        assert diff(frames).empty
        return

    table = report.table
    assert len(table) == len(planned.actions)
    assert set(table["status"]) <= {"applied", "not_applied", "unknown"}
    applied = table[(table["status"] == "applied") & (table["action"] == "update")]
    rest = table[table["status"] != "applied"]
    # the journal is complete: one ack per applied record
    acks = [json.loads(x) for x in journal.read_text().splitlines()]
    acked = {a["record_id"] for a in acks if a["op"] == "ack" and a["action"] == "update"}
    unknown = set(table.loc[table["status"] == "unknown", "record_id"])
    assert set(applied["record_id"]) <= acked <= set(applied["record_id"]) | unknown
    created = {a["new_id"] for a in acks if a["op"] == "ack" and a["action"] == "create"}

    server = _load(client_for(svc))
    # the frames equal the server for every answered record
    for rid in applied["record_id"]:
        assert server.main.at[rid, TEXT] == wanted[rid]
        assert frames.main.at[rid, TEXT] == wanted[rid]
        assert frames.original is not None
        assert frames.original.main.at[rid, TEXT] == wanted[rid]
    for new_id in created:
        assert new_id in frames.main.index and new_id in server.main.index
    # records not sent are as loaded on the server and still pending in the frames
    unsent = rest[rest["status"] == "not_applied"]
    for rid, act in zip(unsent["record_id"], unsent["action"], strict=True):
        if act == "update":
            assert server.main.at[rid, TEXT] != wanted[rid]
    remaining = diff(frames)
    assert set(remaining.actions) == set(rest["record_id"])

    # a second call sends exactly the rest
    puts, posts = (svc.request_log.count(method=m) for m in ("PUT", "POST"))
    again = write_back(client_for(svc), frames, journal=journal, progress=False)
    assert set(again.table["status"]) <= {"applied"}   # none left: the check was cut
    assert len(again.table) == len(rest)
    n_updates = int((rest["action"] == "update").sum())
    assert svc.request_log.count(method="PUT") - puts <= n_updates
    assert svc.request_log.count(method="POST") - posts <= len(rest) - n_updates
    final = _load(client_for(svc))
    for rid, v in wanted.items():
        assert final.main.at[rid, TEXT] == v
    for i in range(creates):
        assert int((final.main[TEXT] == f"cut{seed} new {i}").sum()) == 1
    assert diff(frames).empty


def test_a_plan_says_how_long_it_takes_at_the_pace(
        svc: LocalService, capsys: pytest.CaptureFixture[str]) -> None:
    client = client_for(svc, rate_limit=RATE)
    frames, _wanted = _edited(client, "timed")
    plan = diff(frames)
    rate = client.limiter.rate     # the pace the client keeps (the service's, learned)
    est = plan.estimate_requests(rate=rate)
    # the requests one after another at the pace, and the live guard's wait before its
    # check after the writes (late re-reads are an allowance a run alone does not send)
    assert est.seconds is not None
    assert est.seconds == pytest.approx((est.total - est.late) / rate + 2.0)
    assert est.duration() == f"about {round(est.seconds)} s at {rate:g} requests/s"
    assert "at 10 requests/s" in repr(plan)          # the hosted pace, before a client
    assert plan.estimate_requests(rate=0).seconds is None      # unpaced: no figure
    write_back(client, frames, progress=True)
    assert f"write_back {OBJ} ({est.duration()})" in capsys.readouterr().err


@pytest.mark.parametrize("fault", [KeyboardInterrupt, RuntimeError])
def test_a_fault_while_the_frames_follow_still_carries_the_report(
        svc: LocalService, monkeypatch: pytest.MonkeyPatch,
        fault: type[BaseException]) -> None:
    """Every write answered, then Ctrl-C (or a crash) while the frames follow the server
    (step 5): the exception carries the whole Report, the frames follow all the same, and
    a second call sends nothing."""
    import svc_frames.writeback.run as run_module
    client = client_for(svc)
    frames, wanted = _edited(client, "followed")
    real = run_module.follow
    calls = []

    def follow_once_faulty(run: Any, edited: Frames) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise fault("stopped while following")
        real(run, edited)

    monkeypatch.setattr(run_module, "follow", follow_once_faulty)
    with pytest.raises(fault) as info:
        write_back(client, frames, progress=False)
    report = info.value.report  # type: ignore[attr-defined]
    assert report is not None and report.counts.get("applied") == EDITS
    if fault is KeyboardInterrupt:
        assert isinstance(info.value, WriteInterrupted)
    monkeypatch.setattr(run_module, "follow", real)
    assert diff(frames).empty                     # the frames followed the writes
    server = _load(client).main[TEXT]
    assert all(server[rid] == v for rid, v in wanted.items())
    assert write_back(client, frames, progress=False).requests.get("writes", 0) == 0
