"""The xlsx export (``export(..., format="xlsx")``): what Excel and pandas' ``read_excel`` /
``to_excel`` make of it comes back as loaded. A text that looks like a formula stays a
text, a leading zero stays, dates are the application's wall time; without openpyxl the
format is refused before any request."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
import requests
from fixtures.guard import FAST_GUARD

from svc_frames import read_saved
from svc_frames.errors import UsageError
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.push import push
from svc_frames.server import LocalService


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def _put(svc: LocalService, rid: str, body: dict[str, object]) -> None:
    r = requests.put(f"{svc.base_url}/v1/objects/object_3/records/{rid}", json=body,
                     headers=svc.headers(), timeout=30)
    r.raise_for_status()


@pytest.mark.slow(seconds=8)
def test_formula_like_text_and_leading_zeros_survive_excel(fresh_service: LocalService,
                                                           tmp_path: Path) -> None:
    client = _client(fresh_service)
    probe = export(client, "object_3", tmp_path / "probe", columns="keys", progress=False)
    ids = pd.read_parquet(probe.path)["id"].tolist()[:2]
    _put(fresh_service, ids[0], {"field_12": "=1+1"})
    _put(fresh_service, ids[1], {"field_34": {"street": "1 Main St", "city": "Holtsville",
                                              "state": "NY", "zip": "00501"}})
    out = export(client, "object_3", tmp_path / "orders", format="xlsx", columns="labels",
                 progress=False).path
    (book,) = out.iterdir()
    df = pd.read_excel(book)
    assert df.loc[df["id"] == ids[0], "Title"].item() == "=1+1"      # a text, no formula
    df.to_excel(book, index=False)     # pandas writes "=1+1" back as a formula
    # read_excel, as read_csv, guesses the digits of a text cell are a number: the zero
    # lost is refused, never sent
    assert df.loc[df["id"] == ids[1], "Site.zip"].item() == 501
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(client, out, dry_run=True)
    assert exc.value.field == "Site.zip" and "'00501'" in str(exc.value)
    assert "read_excel" in str(exc.value)
    assert fresh_service.request_log.count() == before
    # without guessing: read_saved keeps the zero and the formula-like text
    out = export(client, "object_3", tmp_path / "orders", format="xlsx", columns="labels",
                 progress=False, overwrite=True).path
    typed = read_saved(out)
    assert typed.loc[typed["id"] == ids[0], "Title"].item() == "=1+1"
    assert typed.loc[typed["id"] == ids[1], "Site.zip"].item() == "00501"
    typed.loc[typed["id"] == ids[1], "Title"] = "Edited"
    for col in typed.columns:          # Excel holds no zone: the wall time
        if isinstance(typed[col].dtype, pd.DatetimeTZDtype):
            typed[col] = typed[col].dt.tz_localize(None)
    typed.to_excel(book, index=False)
    changes = push(client, out, dry_run=True).plan.changes
    assert list(changes["column"]) == ["Title"] and list(changes["new"]) == ["Edited"]
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    assert read_saved(out).loc[lambda d: d["id"] == ids[0], "Title"].item() == "=1+1"


def test_xlsx_without_openpyxl_is_refused_before_any_request(
        fresh_service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openpyxl", None)   # import openpyxl fails
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError, match=r"needs openpyxl: pip install 'svc_frames\[excel\]'"):
        export(_client(fresh_service), "object_3", tmp_path / "orders", format="xlsx",
               progress=False)
    assert fresh_service.request_log.count() == before
    assert not (tmp_path / "orders").exists()
