"""Progress bars for loads and writes: one ``tqdm.auto`` helper (a widget in notebooks,
text in terminals), off by default elsewhere, ending green when the work is complete.

Usage::

    bar = Progress(want_progress(None), "write_back object_3", unit="rec", total=120)
    bar.update(1)
    bar.close()                                   # complete: a full (green) bar
    pages = PageProgress(want_progress(progress), "object_3")   # a paginator's on_page
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sized
from typing import Any, Protocol

__all__ = ["want_progress", "Progress", "PageProgress", "AppProgress"]


class PageShape(Protocol):
    """What a page bar reads of a page (read/pager.py's ``Page``, by shape: the read path
    sits above this helper)."""

    @property
    def total_pages(self) -> int: ...

    @property
    def records(self) -> Sized: ...


def want_progress(progress: bool | None) -> bool:
    """Default: on for interactive use (a tty on stderr, or a notebook kernel).

    Usage: ``want_progress(None)  # True in a notebook``"""
    if progress is not None:
        return bool(progress)
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """One bar of ``total`` steps (opened lazily by ``open``, or at once when ``total`` is
    given); every method is a no-op when disabled. Thread-safe."""

    def __init__(self, enabled: bool, desc: str, *, unit: str = "it",
                 total: int | None = None, leave: bool = False) -> None:
        self.enabled, self.desc, self.unit, self.leave = enabled, desc, unit, leave
        self.bar: Any = None
        self._lock = threading.Lock()
        if total:
            self.open(total)

    def open(self, total: int) -> None:
        if self.enabled and self.bar is None:
            # imported with the first bar: tqdm.auto imports asyncio and its notebook
            # support, a tenth of a second each command that shows no bar would pay
            from tqdm.auto import tqdm
            self.bar = tqdm(total=total, desc=self.desc, unit=self.unit, leave=self.leave)

    def update(self, n: int = 1, **postfix: Any) -> None:
        if self.bar is None:
            return
        with self._lock:
            if self.bar.n + n > self.bar.total:
                self.bar.total = self.bar.n + n  # a re-fetch pass or a grown object
            self.bar.update(n)
            if postfix:
                self.bar.set_postfix(refresh=False, **postfix)

    def close(self, complete: bool | None = None) -> None:
        """Close the bar. ``complete`` (default: no exception is in flight) ends it full:
        a load that stopped at its ``limit`` got what it asked for, so its bar is not left
        short (a red "danger" bar in notebooks)."""
        if self.bar is None:
            return
        if complete is None:
            complete = sys.exc_info()[0] is None
        with self._lock:
            if complete:
                if self.bar.n < self.bar.total:
                    self.bar.total = self.bar.n
                self.bar.refresh()   # the last state is shown, not a throttled earlier one
            self.bar.close()


class PageProgress(Progress):
    """A bar over pages (records in the postfix), opened once the first page shows more
    than one page is coming; a paginator's ``on_page``. Safe to call from paging threads."""

    def __init__(self, enabled: bool, desc: str) -> None:
        super().__init__(enabled, desc, unit="page")
        self.records = 0

    def __call__(self, page: PageShape) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            if page.total_pages <= 1:
                return
            self.open(page.total_pages)
        self.records += len(page.records)
        self.update(1, records=self.records)


class AppProgress(Progress):
    """One bar over the pages of every object of a read_app (objects and records in the
    postfix), its total growing as each object's first page announces its pages; each
    load reports through ``for_object(key)``. Thread-safe."""

    def __init__(self, enabled: bool, objects: int) -> None:
        super().__init__(enabled, "application", unit="page")
        self.objects = objects
        self.records = 0
        self.planned: dict[str, int] = {}
        self._plan = threading.Lock()

    def for_object(self, key: str) -> Callable[[PageShape], None]:
        def on_page(page: PageShape) -> None:
            self.page(key, page)
        return on_page

    def page(self, key: str, page: PageShape) -> None:
        if not self.enabled:
            return
        with self._plan:
            if key not in self.planned:
                self.planned[key] = max(page.total_pages, 1)
                total = sum(self.planned.values())
                if self.bar is None:
                    self.open(total)
                elif total > self.bar.total:
                    self.bar.total = total
            self.records += len(page.records)
            done = f"{len(self.planned)}/{self.objects}"
        self.update(1, objects=done, records=self.records)
