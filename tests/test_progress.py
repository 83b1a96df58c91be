"""Progress bars (progress.py): complete bars end full, interrupted ones stay short, a
disabled bar shows nothing; a load that stopped at its limit ends with a full bar."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from svc_frames.loaders import read_object
from svc_frames.progress import PageProgress, Progress
from svc_frames.read.pager import Page
from svc_frames.records import Client
from svc_frames.server import LocalService


def test_a_complete_bar_ends_full() -> None:
    bar = Progress(True, "t", unit="rec", total=10)
    bar.update(4)
    bar.close()
    assert bar.bar.n == bar.bar.total == 4


def test_a_bar_closed_by_an_exception_stays_short() -> None:
    bar = Progress(True, "t", total=10)
    bar.update(4)
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("interrupted")
        finally:
            bar.close()
    assert (bar.bar.n, bar.bar.total) == (4, 10)


def test_a_disabled_bar_shows_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    bar = PageProgress(False, "t")
    bar(Page(1, [{"id": "a"}], total_pages=5, total_records=5))
    bar.close()
    assert bar.bar is None and capsys.readouterr().err == ""


def test_pages_grow_the_total_and_count_records() -> None:
    bar = PageProgress(True, "t")
    for n in (1, 2, 3):
        bar(Page(n, [{"id": str(n)}], total_pages=2, total_records=2))
    assert (bar.bar.n, bar.bar.total, bar.records) == (3, 3, 3)
    bar.close()


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=12, rate_limit=0) as s:
        yield s


def test_a_load_that_got_its_limit_ends_with_a_full_bar(
        svc: LocalService, capsys: pytest.CaptureFixture[str]) -> None:
    client = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0)
    obj = str(((client.schema() or {}).get("objects") or [{}])[0]["key"])
    capsys.readouterr()
    frames = read_object(client, obj, limit=3, rows_per_page=2, progress=True, columns="keys")
    assert len(frames.main) == 3
    last = capsys.readouterr().err.replace("\r", "\n").strip().splitlines()
    shown = [line for line in last if "page" in line]
    assert shown and "2/2" in shown[-1], shown   # not left at 2 of 6 pages
