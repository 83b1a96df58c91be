"""Decode ``format=raw`` pages into frames in a helper process, using a second CPU core.

A large load is CPU-bound in one interpreter (parsing megabytes of JSON per page, then the
kind codecs), so the fetching threads hand each page's bytes to an idle helper process,
which parses and decodes it and sends the frames back (pickled Arrow-backed columns: a few
milliseconds against tens to decode). This process decodes too, one page at a time (more
would only share its one core): a fetched page goes to whichever is free first, this
process or a helper. Results are the same either way; a helper that is still starting or
has gone is simply not offered work.

Helpers are plain ``python -c ...decoder.serve()`` subprocesses talking over pipes (not
multiprocessing, which would re-import a user's ``__main__`` script); they start in the
background (about half a second to import pandas) and end with the load.

Usage::

    with PageDecoder(fields, source, tz, helpers=1) as dec:
        env = dec.decode(body)   # {"records": [{"id"}...], "frames": Frames, totals...}
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from typing import IO, Any, cast
from zoneinfo import ZoneInfo

from ..errors import DisplayValuesNeeded
from ..frames import Source, build_frames
from ..http.body import Body, parse_json
from ..kinds.base import FieldSpec
from .rawpages import raw_page_parser

_LEN = struct.Struct("!Q")
log = logging.getLogger(__name__)


def _send(pipe: IO[bytes], payload: Body) -> None:
    pipe.write(_LEN.pack(len(payload)))
    pipe.write(payload)
    pipe.flush()


def _recv(pipe: IO[bytes]) -> bytes | None:
    head = pipe.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    data = pipe.read(n)
    return data if len(data) == n else None


class _Decode:
    """What a page decode needs, in or out of process."""

    def __init__(self, fields: list[FieldSpec], source: Source, tz: ZoneInfo | None) -> None:
        self.fields, self.source, self.tz = fields, source, tz
        self.parse = raw_page_parser(fields, parse_json) or parse_json
        # kept beside the ids: keyset paging reads a page's auto-increment values (its
        # gaps, where a range goes on)
        self.keys = [f.key for f in fields if f.kind == "auto_increment"]

    def __call__(self, body: Body) -> dict[str, Any]:
        env = self.parse(body)
        records = env.get("records") if isinstance(env, dict) else None
        if not isinstance(records, list):
            return cast(dict[str, Any], env)  # not a record list: the client reports it
        ids = [r.get("id") if hasattr(r, "get") else None for r in records]
        out = {k: v for k, v in env.items() if k != "records"}
        out["records"] = [{"id": i} for i in ids] if not self.keys else [
            {"id": i, **{k: r.get(k) for k in self.keys if r.get(k) is not None}}
            for i, r in zip(ids, records, strict=True)]
        if any(not isinstance(i, str) for i in ids):
            out["records"] = records  # the paginator names the bad record
            return out
        try:
            out["frames"] = build_frames(records, self.fields, self.source, tz=self.tz,
                                         keep_original=False, raw_format=True)
        except DisplayValuesNeeded:
            out["frames"] = None  # the loader fetches the page again with display values
        return out


class _Helper:
    """One helper process and its two pipes (length-prefixed messages, see serve)."""

    def __init__(self, setup: bytes) -> None:
        # this interpreter's import path, as multiprocessing's spawn passes it; -c, not -m:
        # running the module as __main__ would import it twice
        env = dict(os.environ, SVC_FRAMES_SYS_PATH=json.dumps(sys.path))
        code = ("import json, os, sys; sys.path[:] = json.loads(os.environ"
                "['SVC_FRAMES_SYS_PATH']); from svc_frames.read.workers import serve; serve()")
        # a session of its own: a Ctrl-C at the terminal interrupts the loader, which
        # ends the helper (its stdin closes), not the helper mid-page with a traceback
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env,
                                     start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        try:
            _send(self.stdin, setup)
        except OSError:
            self.close()
            raise

    def ready(self) -> bool:
        return _recv(self.stdout) == b"ready"

    def decode(self, body: Body) -> dict[str, Any]:
        _send(self.stdin, body)
        reply = _recv(self.stdout)
        if reply is None:
            raise OSError("the decoder helper ended")
        kind, value = pickle.loads(reply)
        if kind == "error":
            raise value  # the helper's own exception: callers handle it as if raised here
        return dict(value)

    def close(self) -> None:
        try:
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class PageDecoder:
    """Decodes raw pages with the loader's fields, here or in a helper process, whichever
    is free first (see module docstring); thread-safe."""

    def __init__(self, fields: list[FieldSpec], source: Source, tz: ZoneInfo | None, *,
                 helpers: int = 1) -> None:
        self._local = _Decode(fields, source, tz)
        self._setup = pickle.dumps((fields, source, tz), protocol=5)
        # free decoders: None is this process, a _Helper a helper process
        self._free: queue.SimpleQueue[_Helper | None] = queue.SimpleQueue()
        self._free.put(None)
        self._all: list[_Helper] = []
        self._lock = threading.Lock()
        self._closed = False
        self._ready = threading.Semaphore(0)
        self.helper_pages = 0
        self.local_pages = 0
        for _ in range(max(0, helpers)):
            threading.Thread(target=self._start_helper, daemon=True,
                             name="svc-decoder-start").start()

    def _start_helper(self) -> None:
        try:
            helper = _Helper(self._setup)
        except OSError:
            return  # no helper: pages are decoded in process
        with self._lock:
            if self._closed:
                helper.close()
                return
            self._all.append(helper)
        if helper.ready():
            self._free.put(helper)
            self._ready.release()

    def wait_ready(self, helpers: int = 1, timeout: float = 30.0) -> bool:
        """Wait until ``helpers`` helper processes take work (tests, benchmarks)."""
        return all(self._ready.acquire(timeout=timeout) for _ in range(helpers))

    def decode(self, body: Body) -> dict[str, Any]:
        """A raw page's bytes -> its envelope, ``records`` reduced to ids (and
        auto-increment values) and ``frames`` holding the decoded page (absent when the
        page needs display values)."""
        helper = self._free.get()
        if helper is not None:
            try:
                env = helper.decode(body)
            except OSError:
                pass  # gone: not offered work again; this page is decoded here
            except BaseException:
                self._free.put(helper)  # the page failed, not the helper
                raise
            else:
                self._free.put(helper)
                with self._lock:
                    self.helper_pages += 1
                return env
        try:
            with self._lock:
                self.local_pages += 1
            return self._local(body)
        finally:
            if helper is None:
                self._free.put(None)

    def close(self) -> None:
        """End the helper processes (each finishes the page it is on)."""
        with self._lock:
            self._closed = True
            helpers, self._all = self._all, []
        for h in helpers:
            h.close()
        log.debug("pages decoded: %d in %d helper process(es), %d in this one",
                  self.helper_pages, len(helpers), self.local_pages)

    def __enter__(self) -> PageDecoder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve() -> None:
    """The helper process: setup, then one page in, one pickled result out, until EOF."""
    stdin = sys.stdin.buffer
    # the pipe to the loader is a private copy of fd 1; anything printed goes to stderr
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    setup = _recv(stdin)
    if setup is None:
        return
    fields, source, tz = pickle.loads(setup)
    decode = _Decode(fields, source, tz)
    _send(stdout, b"ready")
    while (body := _recv(stdin)) is not None:
        try:
            reply = pickle.dumps(("ok", decode(body)), protocol=5)
        except Exception as exc:  # raised again in the loader (e.g. not JSON: ValueError)
            try:
                reply = pickle.dumps(("error", exc), protocol=5)
            except Exception:  # an exception that does not pickle
                reply = pickle.dumps(("error", RuntimeError(
                    f"decoding a page in a helper process failed: {type(exc).__name__}: "
                    f"{exc}")), protocol=5)
        _send(stdout, reply)

