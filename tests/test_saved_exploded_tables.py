"""The exploded tables of saved frames (``orders.tables/<name>/``) edited by an analyst:
a row added to or removed from a multiple choice's table, a connection's or a timer's,
is a change of that record's cell and plans exactly that; the table and the records'
column edited alike is one change; edited differently, or a table row naming no saved
record, is refused before any request, naming the file, the record and the fix. No edit
anywhere plans nothing. CSV, Parquet and xlsx."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from fixtures.guard import FAST_GUARD
from fixtures.saved_parts import read_part, write_part

from svc_frames.errors import UsageError
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.push import push
from svc_frames.server import LocalService


def _client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


def _edit(path: Path, fn: Callable[[pd.DataFrame], pd.DataFrame]) -> Path:
    (part,) = path.iterdir()
    write_part(fn(read_part(part)), part)
    return part


def _export(client: Client, where: Path, fmt: str) -> Path:
    return export(client, "object_3", where / "orders", format=fmt, columns="labels",
                  progress=False).path


def _tags(out: Path) -> Path:
    return out.with_name("orders.tables") / "Tags"


def _first_tagged(out: Path) -> tuple[str, list[str]]:
    """A record with tags and its tags, as the table lists them."""
    (part,) = _tags(out).iterdir()
    t = read_part(part)
    rid = str(t["record_id"].iloc[0])
    return rid, [str(v) for v in t.loc[t["record_id"] == rid, "value"]]


FORMATS = ["csv", "parquet", "xlsx"]


# each format's reading and writing is tested by the first two tests; the comparison after
# it is the same for every format, so the other cases run on CSV (pandas' most common
# round trip) and keep make test's time
@pytest.fixture(params=["csv"])
def fmt(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_edit_plans_nothing(fresh_service: LocalService, tmp_path: Path,
                               fmt: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    for d in [out, *out.with_name("orders.tables").iterdir()]:   # rewritten by pandas
        _edit(d, lambda df: df)
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0


@pytest.mark.parametrize(("fmt", "how"), [
    *(("csv", how) for how in ("add", "remove", "change", "remove all")),
    ("parquet", "change"), ("xlsx", "remove")])
def test_a_choice_edited_in_its_table_is_that_record_s_cell(
        fresh_service: LocalService, tmp_path: Path, fmt: str, how: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    rid, tags = _first_tagged(out)
    spare = next(o for o in ("Inspection", "Electrical", "Plumbing") if o not in tags)
    want = {"add": [*tags, spare], "remove": tags[1:], "change": [spare, *tags[1:]],
            "remove all": []}[how]

    def edit(t: pd.DataFrame) -> pd.DataFrame:
        mine = t["record_id"] == rid
        rows = pd.DataFrame({"record_id": [rid] * len(want), "value": want})
        return pd.concat([t[~mine], rows], ignore_index=True)

    _edit(_tags(out), edit)
    before = fresh_service.request_log.count(method="PUT")
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 1}
    (change,) = plan.plan.changes.itertuples()
    assert change.record_id == rid and change.column == "Tags"
    assert sorted(change.new or []) == sorted(want)
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    assert fresh_service.request_log.count(method="PUT") == before + 1
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0
    fresh = _export(client, tmp_path / "again", fmt)
    assert sorted(read_part(next(_tags(fresh).iterdir())).query("record_id == @rid")["value"]
                  .astype(str)) == sorted(want)


def test_the_table_and_the_column_edited_alike_is_one_change(
        fresh_service: LocalService, tmp_path: Path, fmt: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    rid, tags = _first_tagged(out)
    _edit(_tags(out), lambda t: t[~((t["record_id"] == rid) & (t["value"] == tags[0]))])
    if fmt == "parquet":
        _edit(out, lambda df: df.assign(Tags=[list(t[1:]) if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    else:
        _edit(out, lambda df: df.assign(Tags=[", ".join(tags[1:]) if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 1} and list(plan.plan.changes["column"]) == ["Tags"]


def test_the_table_and_the_column_disagreeing_is_refused(
        fresh_service: LocalService, tmp_path: Path, fmt: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    rid, tags = _first_tagged(out)
    part = _edit(_tags(out), lambda t: t[~((t["record_id"] == rid)
                                           & (t["value"] == tags[0]))])
    if fmt == "parquet":
        _edit(out, lambda df: df.assign(Tags=[["Outdoor", "Inspection"] if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    else:
        _edit(out, lambda df: df.assign(Tags=["Outdoor, Inspection" if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(client, out, dry_run=True)
    msg = str(exc.value)
    assert msg.startswith(f"{part}: record {rid!r}") and "disagree" in msg
    assert "leave the other as exported" in msg and exc.value.field == "Tags"
    assert fresh_service.request_log.count() == before


def test_the_column_alone_edited_is_still_the_edit(fresh_service: LocalService,
                                                   tmp_path: Path, fmt: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    rid, tags = _first_tagged(out)
    if fmt == "parquet":
        _edit(out, lambda df: df.assign(Tags=[["Inspection"] if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    else:
        _edit(out, lambda df: df.assign(Tags=["Inspection" if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 1}
    assert list(plan.plan.changes["new"]) == [["Inspection"]]


@pytest.mark.parametrize("how", ["add", "remove"])
def test_a_connection_row_added_or_removed_is_one_update(
        fresh_service: LocalService, tmp_path: Path, fmt: str, how: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    parts = out.with_name("orders.tables") / "Parts"
    (part,) = parts.iterdir()
    t = read_part(part)
    rid = str(t["record_id"].iloc[0])
    other = next(c for c in t["connected_id"] if c not in set(t.loc[t["record_id"] == rid,
                                                                     "connected_id"]))
    if how == "add":
        _edit(parts, lambda t: pd.concat([t, pd.DataFrame(
            {"record_id": [rid], "connected_id": [other], "identifier": [""]})],
            ignore_index=True))
    else:
        _edit(parts, lambda t: t.drop(index=0))
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 1} and list(plan.plan.changes["record_id"]) == [rid]
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0


def test_a_table_row_of_no_saved_record_is_refused_naming_the_file(
        fresh_service: LocalService, tmp_path: Path, fmt: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    part = _edit(_tags(out), lambda t: pd.concat(
        [t, pd.DataFrame({"record_id": ["not-a-record"], "value": ["Safety"]})],
        ignore_index=True))
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(client, out, dry_run=True)
    assert str(exc.value).startswith(f"{part}: table 'Tags': record_id 'not-a-record'")
    assert "correct it, or remove that row" in str(exc.value)
    assert fresh_service.request_log.count() == before


def test_a_timer_s_intervals_and_columns_both_edited_are_refused(
        fresh_service: LocalService, tmp_path: Path, fmt: str) -> None:
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    timers = out.with_name("orders.tables") / "Work_Time"
    (part,) = timers.iterdir()
    rid = str(read_part(part)["record_id"].iloc[0])
    _edit(timers, lambda t: t.assign(to=t["to"].where(t.index != 0, t["from"])))
    plan = push(client, out, dry_run=True)    # the intervals alone: one change
    assert plan.counts == {"planned": 1} and list(plan.plan.changes["record_id"]) == [rid]
    _edit(out, lambda df: df.assign(**{"Work Time.to": df["Work Time"].where(
        df["id"] == rid, df["Work Time.to"])}))
    before = fresh_service.request_log.count()
    with pytest.raises(UsageError) as exc:
        push(client, out, dry_run=True)
    msg = str(exc.value)
    assert msg.startswith(f"{part}: record {rid!r}: both its intervals")
    assert "'Work Time.to'" in msg and "Edit the intervals only" in msg
    assert fresh_service.request_log.count() == before


def test_tables_named_by_key(fresh_service: LocalService, tmp_path: Path) -> None:
    client = _client(fresh_service)
    out = export(client, "object_3", tmp_path / "orders", columns="keys",
                 progress=False).path
    tags = out.with_name("orders.tables") / "field_28"
    (part,) = tags.iterdir()
    rid = str(read_part(part)["record_id"].iloc[0])
    _edit(tags, lambda t: t[t["record_id"] != rid])
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 1}
    assert list(plan.plan.changes["column"]) == ["field_28"]
    assert list(plan.plan.changes["record_id"]) == [rid]


def test_after_pushing_a_table_edit_the_old_cell_is_no_edit(
        fresh_service: LocalService, tmp_path: Path, fmt: str) -> None:
    """Push leaves the files as they are: the records' cell still shows the options the
    table's edit replaced. That is no edit back, and a later edit of the cell is sent
    against what the service holds (no conflict)."""
    client = _client(fresh_service)
    out = _export(client, tmp_path, fmt)
    rid, tags = _first_tagged(out)
    _edit(_tags(out), lambda t: t[t["record_id"] != rid])
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    meta = json.loads(out.with_name("orders.svc_frames.json").read_text())
    assert sorted(meta["stale"]["Tags"][rid]) == sorted(tags)
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0
    if fmt == "parquet":
        _edit(out, lambda df: df.assign(Tags=[["Inspection"] if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    else:
        _edit(out, lambda df: df.assign(Tags=["Inspection" if i == rid else t
                                              for i, t in zip(df["id"], df["Tags"],
                                                              strict=True)]))
    plan = push(client, out, dry_run=True)
    assert plan.counts == {"planned": 1}
    assert not plan.plan.changes["old"].iloc[0]     # what the service holds: no tags
    assert push(client, out, **FAST_GUARD).counts == {"applied": 1}
    assert push(client, out, dry_run=True).counts.get("planned", 0) == 0
    meta = json.loads(out.with_name("orders.svc_frames.json").read_text())
    assert rid not in meta.get("stale", {}).get("Tags", {})
