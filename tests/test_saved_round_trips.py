"""Saved frames through the round trips a pandas user makes with default options plan
exactly the user's edits: ``read_csv``/``to_csv`` (the 270-zip case first: pandas reads a
zip column with blanks as floats and writes ``78742.0``), ``read_excel``/``to_excel``,
``read_parquet``/``to_parquet`` and ``astype(str)``. For every field kind of the demo's
work orders, no edit plans nothing and one edit plans exactly that field of that record.
Where a tool's text no longer tells the loaded value from an edit (the text ``01234``
read as the number 1234), push refuses before any request, naming the column.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import requests
from fixtures.guard import FAST_GUARD

from svc_frames.cli import main
from svc_frames.errors import UsageError
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.writeback import diff

ZIP = "field_34.zip"


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def _writes(svc: LocalService) -> int:
    return sum(svc.request_log.count(method=m, path_prefix="/v1/objects/object_3/records")
               for m in ("PUT", "POST", "DELETE"))


def _only(out: Path, name: str) -> Path:
    """The edited file replaces the export's parts (as a user saving over them would)."""
    for p in out.iterdir():
        p.unlink()
    return out / name


def _csv(out: Path) -> Path:
    (part,) = out.glob("*.csv")
    return part


# ---- the zip case, as reported: pandas' defaults, no options ---------------------------
def test_cli_csv_round_trip_through_pandas_plans_the_two_edits(
        service: LocalService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SVC_APP_ID", service.app_id)
    monkeypatch.setenv("SVC_API_KEY", service.api_key)
    monkeypatch.setenv("SVC_BASE_URL", service.base_url)
    out = tmp_path / "f3"
    assert main(["export", "object_3", "--out", str(out), "--columns", "labels",
                 "--format", "csv", "--no-progress"]) == 0
    part = _csv(out)
    df = pd.read_csv(part)
    assert df["Site.zip"].dtype == np.float64 and df["Site.zip"].isna().any()  # the trap
    df.loc[0, "Title"] = "Edited in pandas"
    df.loc[1, "Quantity"] = 4321
    df.to_csv(part, index=False)
    assert "78742.0" in part.read_text() or ".0," in part.read_text()
    capsys.readouterr()
    before = _writes(service)
    assert main(["push", str(out), "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed.splitlines()[-1])["plan"] == {"update": 2, "create": 0,
                                                            "delete": 0}
    assert "Site.zip" not in printed and _writes(service) == before


@pytest.mark.parametrize("columns", ["labels", "keys"])
def test_python_csv_round_trip_through_pandas_plans_the_edit(
        service: LocalService, tmp_path: Path, columns: Any) -> None:
    saved = export(_client(service), "object_3", tmp_path / "f3", format="csv",
                   columns=columns, progress=False)
    title = "Title" if columns == "labels" else "field_12"
    part = _csv(saved.path)
    df = pd.read_csv(part)
    df.loc[3, title] = "Edited in pandas"
    df.to_csv(part, index=False)
    report = push(_client(service), saved.path, dry_run=True)
    assert report.counts == {"planned": 1}
    # the table names the field as the frames do; field_keys keeps its key
    assert list(report.table["fields"]) == [title]
    assert report.field_keys == [["field_12"]]


def test_zip_edited_in_a_float_column_is_sent_as_typed(fresh_service: LocalService,
                                                       tmp_path: Path) -> None:
    """pandas writes the user's 99999 in the float zip column as ``99999.0``: where the
    loaded zips were whole numbers, that is the zip 99999, not the text "99999.0" (in a
    cell that held a zip and in one that was empty)."""
    client = _client(fresh_service)
    saved = export(client, "object_3", tmp_path / "f3", format="csv", columns="keys",
                   progress=False)
    part = _csv(saved.path)
    df = pd.read_csv(part)
    rows = [int(df[ZIP].first_valid_index()), int(df[ZIP].isna().idxmax())]
    df.loc[rows, ZIP] = 99999
    df.to_csv(part, index=False)
    changes = diff(read_parquet(saved.path)).changes
    assert list(changes["column"]) == [ZIP, ZIP] and list(changes["new"]) == ["99999"] * 2
    assert push(client, saved.path, **FAST_GUARD).counts == {"applied": 2}
    assert push(client, saved.path, dry_run=True).counts.get("planned", 0) == 0


def test_a_leading_zero_lost_by_pandas_is_refused_before_any_request(
        fresh_service: LocalService, tmp_path: Path) -> None:
    client = _client(fresh_service)
    loaded = export(client, "object_3", tmp_path / "probe", format="csv", columns="keys",
                    progress=False)
    ids = pd.read_csv(_csv(loaded.path), dtype=str)["id"].tolist()[:2]
    for rid, zip_code in zip(ids, ("01234", "00501"), strict=True):
        r = requests.put(
            f"{fresh_service.base_url}/v1/objects/object_3/records/{rid}",
            json={"field_34": {"street": "1 Main St", "city": "Holtsville", "state": "NY",
                               "zip": zip_code}}, headers=fresh_service.headers(),
            timeout=30)
        r.raise_for_status()
    saved = export(client, "object_3", tmp_path / "f3", format="csv", columns="labels",
                   progress=False)
    part = _csv(saved.path)
    df = pd.read_csv(part)
    df.loc[5, "Title"] = "Edited in pandas"
    df.to_csv(part, index=False)
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(client, saved.path, dry_run=True)
    msg = str(exc.value)
    assert exc.value.field == "Site.zip"
    assert "2 cell(s)" in msg and "'01234'" in msg and "'1234.0'" in msg
    assert "read_saved" in msg and "dtype=str" in msg and "put the loaded text back" in msg
    assert fresh_service.request_log.count() == before   # not even the schema
    # the first way out: export again, read without guessing, edit, write back
    from svc_frames import read_saved

    saved = export(client, "object_3", tmp_path / "f3", format="csv", columns="labels",
                   progress=False, overwrite=True)
    typed = read_saved(saved.path)
    assert typed.loc[typed["id"] == ids[0], "Site.zip"].item() == "01234"
    typed.loc[5, "Title"] = "Edited in pandas"
    typed.to_csv(part, index=False)
    assert push(client, saved.path, dry_run=True).counts == {"planned": 1}


# ---- the table: every kind, every default round trip -----------------------------------
def _csv_trip(out: Path, edit: Callable[[pd.DataFrame], None]) -> None:
    part = _csv(out)
    df = pd.read_csv(part)
    edit(df)
    df.to_csv(_only(out, "edited.csv"), index=False)


def _excel_trip(out: Path, edit: Callable[[pd.DataFrame], None]) -> None:
    part = _csv(out)
    book = out.with_name("book.xlsx")
    pd.read_csv(part).to_excel(book, index=False)
    df = pd.read_excel(book)
    edit(df)
    df.to_csv(_only(out, "edited.csv"), index=False)


def _xlsx_trip(out: Path, edit: Callable[[pd.DataFrame], None]) -> None:
    """An xlsx export (dates as the application's wall time) through pandas' defaults."""
    (part,) = out.glob("*.xlsx")
    df = pd.read_excel(part)
    edit(df)
    df.to_excel(_only(out, "edited.xlsx"), index=False)


def _astype_csv_trip(out: Path, edit: Callable[[pd.DataFrame], None]) -> None:
    df = pd.read_csv(_csv(out)).astype(str)
    edit(df)
    df.to_csv(_only(out, "edited.csv"), index=False)


def _parquet_trip(out: Path, edit: Callable[[pd.DataFrame], None]) -> None:
    df = pd.read_parquet(out)
    edit(df)
    df.to_parquet(_only(out, "edited.parquet"), index=False)


def _astype_parquet_trip(out: Path, edit: Callable[[pd.DataFrame], None]) -> None:
    df = pd.read_parquet(out).astype(str)
    edit(df)
    df.to_parquet(_only(out, "edited.parquet"), index=False)


TRIPS: dict[str, tuple[str, Callable[[Path, Callable[[pd.DataFrame], None]], None]]] = {
    "read_csv/to_csv": ("csv", _csv_trip),
    "read_excel/to_excel": ("csv", _excel_trip),
    "xlsx export: read_excel/to_excel": ("xlsx", _xlsx_trip),
    "read_csv.astype(str)": ("csv", _astype_csv_trip),
    "read_parquet/to_parquet": ("parquet", _parquet_trip),
    "read_parquet.astype(str)": ("parquet", _astype_parquet_trip),
}

T0 = pd.Timestamp("2020-01-02 03:04", tz="America/Chicago")  # before every end
# kind -> (column, a new value given the loaded one); the read-only kinds, the uploads
# (file, image, signature) and connections (tables, not the records' file) are checked
# by the no-edit round trip alone
EDITS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "short_text": ("field_12", lambda v: "Edited title"),
    "paragraph_text": ("field_13", lambda v: "An edited description"),
    "rich_text": ("field_14", lambda v: "Edited notes"),
    "number": ("field_16", lambda v: 4321),
    "currency": ("field_17", lambda v: 12.34),
    "rating": ("field_25", lambda v: 1 if v != 1 else 2),
    "boolean": ("field_26", lambda v: not (v is True or v in ("Yes", "True", 1.0))),
    "multiple_choice": ("field_27", lambda v: "Cancelled" if v != "Cancelled" else "Open"),
    "multiple_choice (multi)": ("field_28", lambda v: ["Safety", "Outdoor"]),
    "date_time": ("field_29", lambda v: T0),
    "date_time (range)": ("field_30", lambda v: T0),
    "timer": ("field_31", lambda v: T0),
    "name": ("field_32.first", lambda v: "Zed"),
    "email": ("field_33", lambda v: "edited@example.com"),
    "address": ("field_34.city", lambda v: "Edited City"),
    "address (zip)": (ZIP, lambda v: 99999),
    "phone": ("field_35", lambda v: "(512) 555-0199"),
    "link": ("field_36", lambda v: "https://example.com/edited"),
    "image (url)": ("field_39", lambda v: "https://example.com/edited.png"),
}


def _put(df: pd.DataFrame, column: str, row: int, value: Any) -> None:
    """``value`` set as the frame holds that column: typed where the tool typed it, text
    where it holds text (as the user would type it)."""
    dtype = df[column].dtype
    held = df[column].dropna().iloc[0]
    if isinstance(value, list):
        typed = isinstance(held, np.ndarray)
        df.at[row, column] = np.array(value, dtype=object) if typed else ", ".join(value)
    elif isinstance(value, pd.Timestamp):
        if isinstance(dtype, pd.DatetimeTZDtype):
            df.loc[row, column] = value
        elif pd.api.types.is_datetime64_dtype(dtype):   # Excel's: the wall time, no zone
            df.loc[row, column] = value.tz_localize(None)
        else:
            df.loc[row, column] = value.isoformat()
    elif pd.api.types.is_bool_dtype(dtype) or isinstance(held, (bool, np.bool_)):
        df.loc[row, column] = bool(value)
    elif pd.api.types.is_numeric_dtype(dtype) and not isinstance(value, str):
        df.loc[row, column] = value
    elif isinstance(value, bool):
        df.loc[row, column] = "Yes" if value else "No"
    else:
        df.loc[row, column] = str(value)


def _filled(df: pd.DataFrame, column: str) -> list[int]:
    """The rows whose ``column`` holds a value (an edit there is no fill of an empty cell)."""
    empty = df[column].astype(str).isin(["", "nan", "None", "<NA>", "NaT"])
    return [int(i) for i in np.flatnonzero(~empty.to_numpy())]


def _own_rows(df: pd.DataFrame, kinds: list[str]) -> dict[str, int]:
    """A row of its own for each kind's edit, so no edit can hide another's (two kinds of
    one field, as the address and its zip, are two records' changes): the kinds filled in
    fewest rows choose first."""
    filled = {kind: _filled(df, EDITS[kind][0]) for kind in kinds}
    rows: dict[str, int] = {}
    for kind in sorted(kinds, key=lambda k: len(filled[k])):
        free = [r for r in filled[kind] if r not in rows.values()]
        assert free, f"no row of its own left for {kind!r}: grow the exported sample"
        rows[kind] = free[0]
    return rows


Trip = Callable[[Path, Callable[[pd.DataFrame], None]], None]


def _trip_with(src: Path, where: Path, run: Trip, kinds: list[str]) -> str | None:
    """One round trip of a copy of ``src`` with the edits of ``kinds``: None when the saved
    frames' changes are exactly those edits (record and field), else what went wrong."""
    out = _copy(src, where)
    expected: set[tuple[str, str]] = set()

    def edit(df: pd.DataFrame) -> None:
        for kind, row in _own_rows(df, kinds).items():
            column, new = EDITS[kind]
            expected.add((str(df.loc[row, "id"]), column.split(".")[0]))
            _put(df, column, row, new(df.loc[row, column]))

    run(out, edit)
    try:
        got = diff(read_parquet(out)).changes
    except UsageError as exc:
        return str(exc)
    seen = set(zip(got["record_id"].astype(str), got["field"], strict=True))
    return None if seen == expected else got.to_string()


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The work orders exported as CSV, Parquet and xlsx, once for the table (40 records:
    blanks in the zip codes and yes/no fields, every kind filled somewhere)."""
    root = tmp_path_factory.mktemp("round_trips")
    with LocalService(demo=True, records=40, rate_limit=0, seed=2) as svc:
        client = _client(svc)
        yield {fmt: export(client, "object_3", root / fmt, format=fmt, columns="keys",
                           progress=False).path for fmt in ("csv", "parquet", "xlsx")}


def _copy(src: Path, where: Path) -> Path:
    """A copy of saved frames (records, tables, metadata, as-loaded copy) in ``where``,
    under the same name (the metadata names its companions by it)."""
    where.mkdir()
    for p in src.parent.glob(src.name + "*"):
        if p.is_dir():
            shutil.copytree(p, where / p.name)
        else:
            shutil.copy(p, where / p.name)
    return where / src.name


@pytest.mark.slow(seconds=8)
@pytest.mark.parametrize("trip", list(TRIPS))
def test_every_kind_round_trips_exactly(exports: dict[str, Path], tmp_path: Path,
                                        trip: str) -> None:
    fmt, run = TRIPS[trip]
    out = _copy(exports[fmt], tmp_path / "none")
    seen: dict[str, Any] = {}
    run(out, lambda df: seen.update(zip=df[ZIP].dtype, blanks=df[ZIP].isna().sum()))
    if trip == "read_csv/to_csv":   # the trap is there: pandas read the zip codes as floats
        assert seen["zip"] == np.float64 and seen["blanks"] > 0
    changes = diff(read_parquet(out)).changes
    assert changes.empty, changes.drop_duplicates("column").to_string()
    # every kind's edit in one file, each on a row of its own: one round trip for the table
    # (a trip per kind costs twenty reads of the saved frames); only when that trip's changes
    # are not exactly its edits is each kind tried alone, to name the culprit
    together = _trip_with(exports[fmt], tmp_path / "every_kind", run, list(EDITS))
    wrong: dict[str, Any] = {}
    if together is not None:
        for kind in EDITS:
            alone = _trip_with(exports[fmt], tmp_path / kind.replace(" ", "_").strip("()"),
                               run, [kind])
            if alone is not None:
                wrong[kind] = alone
        assert wrong, f"each kind round trips alone, not all together:\n{together}"
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in wrong.items())


def test_excel_round_trip_pushes_exactly_the_edit(fresh_service: LocalService,
                                                 tmp_path: Path) -> None:
    """The table's plan is push's: through a spreadsheet, one edit is one write."""
    client = _client(fresh_service)
    out = export(client, "object_3", tmp_path / "orders", format="csv", columns="labels",
                 progress=False).path
    _excel_trip(out, lambda df: _put(df, "Title", 0, "Edited in a spreadsheet"))
    before = _writes(fresh_service)
    assert push(client, out, dry_run=True).counts == {"planned": 1}
    assert _writes(fresh_service) == before
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    assert _writes(fresh_service) == before + 1
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0


def test_xlsx_export_pushes_exactly_the_edit_and_keeps_the_wall_time(
        fresh_service: LocalService, tmp_path: Path) -> None:
    """A pandas user cannot write a Parquet export to Excel (tz-aware dates): the xlsx
    export holds the application's wall time, and push reads the workbook back."""
    client = _client(fresh_service)
    out = export(client, "object_3", tmp_path / "orders", format="xlsx", columns="labels",
                 progress=False).path
    loaded = read_parquet(out).original
    assert loaded is not None
    (part,) = out.glob("*.xlsx")
    df = pd.read_excel(part)
    due = loaded.main["Due"].dropna()
    rid = str(due.index[0])
    shown = df.loc[df["id"] == rid, "Due"].item()
    assert shown == due.iloc[0].tz_localize(None)          # the wall time, no zone
    df.loc[df["id"] == rid, "Title"] = "Edited in Excel"
    df.to_excel(part, index=False)
    before = _writes(fresh_service)
    assert push(client, out, dry_run=True).counts == {"planned": 1}
    assert _writes(fresh_service) == before
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0
    # a date edited in the workbook: the application's wall time, one change
    df = pd.read_excel(part)
    df.loc[df["id"] == rid, "Due"] = pd.Timestamp("2027-05-06 07:30")
    df.to_excel(part, index=False)
    changes = diff(read_parquet(out)).changes
    assert list(changes["record_id"]) == [rid] and list(changes["column"]) == ["Due"]
    assert changes["new"].iloc[0] == pd.Timestamp("2027-05-06 07:30",
                                                  tz=loaded.source.timezone)


def test_cli_export_xlsx_and_push(fresh_service: LocalService, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SVC_APP_ID", fresh_service.app_id)
    monkeypatch.setenv("SVC_API_KEY", fresh_service.api_key)
    monkeypatch.setenv("SVC_BASE_URL", fresh_service.base_url)
    out = tmp_path / "orders"
    assert main(["export", "object_3", "--out", str(out), "--columns", "labels",
                 "--format", "xlsx", "--no-progress"]) == 0
    (part,) = out.iterdir()
    assert part.suffix == ".xlsx"
    df = pd.read_excel(part)
    df.loc[2, "Priority"] = 1 if df.loc[2, "Priority"] != 1 else 2
    df.to_excel(part, index=False)
    capsys.readouterr()
    assert main(["push", str(out), "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["plan"] == {
        "update": 1, "create": 0, "delete": 0}
