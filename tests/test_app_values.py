"""Values as the service holds them, over real HTTP: timers of several intervals (every
interval in the frames, an edit never merges or drops one, an unfaithful summary edit
refused naming the record), wall times the timezone skips or repeats, numbers to the
range of a double."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from svc_frames.errors import InvalidValue, PrecisionWarning, UsageError
from svc_frames.filters import Field
from svc_frames.kinds import FieldSpec, ReadContext, codec_for
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.server import LocalService
from svc_frames.testing import client_for
from svc_frames.writeback import diff, write_back

TZ = "America/New_York"
DOC: dict[str, Any] = {
    "settings": {"timezone": TZ},
    "objects": [{"key": "object_1", "name": "Shifts", "identifier": "field_1", "fields": [
        {"key": "field_1", "type": "short_text", "name": "Who"},
        {"key": "field_2", "type": "timer", "name": "Work Time"}]}],
}


def _wall(h: int, m: int = 0) -> dict[str, Any]:
    hour12 = h % 12 or 12
    return {"date": "03/02/2026", "hours": f"{hour12:02d}", "minutes": f"{m:02d}",
            "am_pm": "AM" if h < 12 else "PM"}


def _ts(h: int, m: int = 0) -> pd.Timestamp:
    return pd.Timestamp(2026, 3, 2, h, m).tz_localize(TZ)


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=False, app=DOC, records=0) as s:
        yield s


def _two_intervals(client: Client) -> str:
    rec = client.create_record("object_1", {
        "field_1": "two", "field_2": {"times": [{"from": _wall(9), "to": _wall(10)},
                                                {"from": _wall(14), "to": _wall(15)}]}})
    return str(rec["id"])


def _stored(client: Client, rid: str) -> list[tuple[int, int]]:
    raw = client.get_record("object_1", rid)["field_2_raw"]
    return [(t["from"]["unix_timestamp"], t["to"]["unix_timestamp"]) for t in raw["times"]]


@pytest.mark.parametrize("columns", ["keys", "labels"])
def test_every_interval_is_in_the_frames(svc: LocalService, columns: str) -> None:
    client = client_for(svc)
    rid = _two_intervals(client)
    frames = read_object(client, "object_1", columns=columns)  # type: ignore[arg-type]
    name = "field_2" if columns == "keys" else "Work Time"
    t = frames.tables[name]
    mine = t[t["record_id"] == rid]
    assert mine["from"].tolist() == [_ts(9), _ts(14)]
    assert mine["to"].tolist() == [_ts(10), _ts(15)]
    assert frames.main.loc[rid, name] == _ts(9)
    assert frames.main.loc[rid, f"{name}.to"] == _ts(15)
    assert frames.main.loc[rid, f"{name}.total"] == pd.Timedelta(hours=2)


@pytest.mark.parametrize("columns", ["keys", "labels"])
def test_editing_the_end_keeps_every_interval(svc: LocalService, columns: str) -> None:
    client = client_for(svc)
    rid = _two_intervals(client)
    before = _stored(client, rid)
    frames = read_object(client, "object_1", columns=columns)  # type: ignore[arg-type]
    name = "field_2" if columns == "keys" else "Work Time"
    frames.main.loc[rid, f"{name}.to"] = _ts(15, 30)
    report = write_back(client, frames, guard="once")
    assert set(report.table["status"]) == {"applied"}
    after = _stored(client, rid)
    assert after[0] == before[0] and after[1][0] == before[1][0]
    assert after[1][1] - before[1][1] == 30 * 60_000
    rec = client.get_record("object_1", rid)
    assert rec["field_2_raw"]["total_time"] == 150 * 60_000
    # the frames follow the server: the table too, and nothing is left to send
    t = frames.tables[name]
    assert t[t["record_id"] == rid]["to"].tolist() == [_ts(10), _ts(15, 30)]
    assert diff(frames).empty


def test_editing_intervals_in_the_table_writes_them_all(svc: LocalService) -> None:
    client = client_for(svc)
    rid = _two_intervals(client)
    frames = read_object(client, "object_1", columns="keys")
    t = frames.tables["field_2"]
    extra = pd.DataFrame({"record_id": [rid], "from": [_ts(16)], "to": [_ts(16, 45)]})
    frames.tables["field_2"] = pd.concat([t, extra.astype(t.dtypes.to_dict())],
                                         ignore_index=True)
    other = frames.main.index[frames.main.index != rid][0] if len(frames.main) > 1 else None
    plan = diff(frames)
    assert plan.record_ids == [rid]
    report = write_back(client, frames, guard="once")
    assert set(report.table["status"]) == {"applied"}
    assert len(_stored(client, rid)) == 3
    assert client.get_record("object_1", rid)["field_2_raw"]["total_time"] == 165 * 60_000
    if other is not None:
        assert diff(frames).empty


@pytest.mark.parametrize("col, value, needle", [
    (".total", pd.Timedelta(hours=5), "total"),
    (".to", _ts(13), "start must stay in the first and the end in the last"),
    ("", _ts(10, 30), "start must stay in the first"),
])
def test_an_unfaithful_summary_edit_is_refused_naming_the_record(
        svc: LocalService, col: str, value: Any, needle: str) -> None:
    client = client_for(svc)
    rid = _two_intervals(client)
    frames = read_object(client, "object_1", columns="keys")
    frames.main.loc[rid, f"field_2{col}"] = value
    sent = client.request_count
    with pytest.raises(UsageError, match=needle) as err:
        write_back(client, frames)
    assert rid in str(err.value) and "tables['field_2']" in str(err.value)
    assert client.request_count == sent


def test_both_summary_and_intervals_edited_is_refused(svc: LocalService) -> None:
    client = client_for(svc)
    rid = _two_intervals(client)
    frames = read_object(client, "object_1", columns="keys")
    frames.main.loc[rid, "field_2.to"] = _ts(15, 30)
    t = frames.tables["field_2"]
    frames.tables["field_2"] = t[~((t["record_id"] == rid) & (t["from"] == _ts(9)))]
    with pytest.raises(UsageError, match="edit the intervals only"):
        diff(frames)


# ---- wall times the timezone skips or repeats ---------------------------------------------
DST_DOC: dict[str, Any] = {
    "settings": {"timezone": TZ},
    "objects": [{"key": "object_1", "name": "Events", "identifier": "field_1", "fields": [
        {"key": "field_1", "type": "short_text", "name": "What"},
        {"key": "field_2", "type": "date_time", "name": "When", "format": {"calendar": True}},
        {"key": "field_3", "type": "timer", "name": "Clock"}]}],
}


def _at(day: str, h: int, m: int = 0) -> dict[str, Any]:
    return {"date": day, "hours": f"{h % 12 or 12:02d}", "minutes": f"{m:02d}",
            "am_pm": "AM" if h < 12 else "PM"}


def _members(raw: Any) -> tuple[Any, ...]:
    return tuple(raw[k] for k in ("date", "hours", "minutes", "am_pm"))


@pytest.fixture(scope="module")
def dst_svc() -> Iterator[LocalService]:
    with LocalService(demo=False, app=DST_DOC, records=0, rate_limit=0) as s:
        yield s


def _dst_record(client: Client, day: str, hour: int, tag: str) -> str:
    return str(client.create_record("object_1", {
        "field_1": tag, "field_2": {**_at(day, hour, 30), "to": _at(day, 5)},
        "field_3": {"times": [{"from": _at(day, hour, 30), "to": _at(day, 4)},
                              {"from": _at(day, 6), "to": _at(day, 7)}]}})["id"])


def _load_noting(client: Client, columns: str, tag: str) -> tuple[Any, list[str]]:
    """The record tagged ``tag`` loaded, and the PrecisionWarnings the load gave."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        frames = read_object(client, "object_1", columns=columns,  # type: ignore[arg-type]
                             filters=[Field("field_1") == tag])
    return frames, [str(w.message) for w in seen if issubclass(w.category, PrecisionWarning)]


# every way an edit reaches the service: write_back with each guard, push from saved frames
PATHS = [("live", "keys"), ("once", "labels"), ("off", "keys"), ("off", "labels"),
         ("push-off", "labels"), ("push-once", "keys")]


@pytest.mark.parametrize("day, hour", [("03/08/2026", 2), ("11/01/2026", 1)])  # gap, fold
@pytest.mark.parametrize("path, columns", PATHS)
def test_editing_one_part_never_changes_another(dst_svc: LocalService, day: str, hour: int,
                                                path: str, columns: str,
                                                tmp_path: Any) -> None:
    from svc_frames.saved.parquet import read_parquet, to_parquet
    from svc_frames.saved.push import push

    client = client_for(dst_svc)
    tag = f"{path} {columns} {day}"
    rid = _dst_record(client, day, hour, tag)
    before = client.get_record("object_1", rid)
    frames, noted = _load_noting(client, columns, tag)
    when = "field_2" if columns == "keys" else "When"
    clock = "field_3" if columns == "keys" else "Clock"
    if path.startswith("push"):
        to_parquet(frames, tmp_path / "f")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            frames = read_parquet(tmp_path / "f")
        # the saved frames say it again (their metadata keeps the records)
        assert [str(w.message) for w in seen
                if issubclass(w.category, PrecisionWarning)] == noted
    frames.main.loc[rid, f"{when}.to"] = frames.main.loc[rid, f"{when}.to"] \
        + pd.Timedelta(hours=1)
    frames.main.loc[rid, f"{clock}.to"] = frames.main.loc[rid, f"{clock}.to"] \
        + pd.Timedelta(minutes=30)
    # without the guard, the record is re-read for its unedited 2:30 alone: counted
    assert diff(frames).estimate_requests(guard="off").rereads == (
        1 if day == "03/08/2026" else 0)
    if path.startswith("push"):
        to_parquet(frames, tmp_path / "f", overwrite=True)
        report = push(client, tmp_path / "f", guard=path.split("-")[1])
    else:
        report = write_back(client, frames, guard=path)
    assert set(report.table["status"]) == {"applied"}
    after = client.get_record("object_1", rid)
    assert _members(after["field_2_raw"]) == _members(before["field_2_raw"])
    assert _members(after["field_2_raw"]["to"])[1:] == ("06", "00", "AM")
    t0, t1 = before["field_3_raw"]["times"], after["field_3_raw"]["times"]
    assert _members(t1[0]["from"]) == _members(t0[0]["from"])
    assert _members(t1[0]["to"]) == _members(t0[0]["to"])
    assert _members(t1[1]["to"])[1:] == ("07", "30", "AM")
    # the skipped 2:30 (and only it) is warned about, once, naming both fields and the record
    mine = [m for m in noted if rid in m]
    if day == "03/08/2026":
        assert len(noted) == 1 and mine == noted
        assert f"{when}: " in mine[0] and f"{clock}: " in mine[0] and TZ in mine[0]
    else:
        assert noted == []


def test_an_untouched_skipped_wall_time_is_not_sent_and_reads_back_unchanged(
        dst_svc: LocalService) -> None:
    client = client_for(dst_svc)
    rid = _dst_record(client, "03/08/2026", 2, "untouched")
    before = client.get_record("object_1", rid)
    frames, noted = _load_noting(client, "keys", "untouched")
    assert noted and frames.main.loc[rid, "field_2"] == pd.Timestamp(
        "2026-03-08 03:00", tz=TZ)      # the first valid instant after the gap
    frames.main.loc[rid, "field_1"] = "edited"
    assert list(diff(frames).payloads[rid]) == ["field_1"]
    report = write_back(client, frames, guard="off")
    assert set(report.table["status"]) == {"applied"}
    after = client.get_record("object_1", rid)
    assert after["field_2_raw"] == before["field_2_raw"]
    assert after["field_3_raw"] == before["field_3_raw"]


def test_a_refresh_that_brings_a_skipped_wall_time_warns_once(dst_svc: LocalService) -> None:
    from svc_frames.refreshing.policy import refresh

    client = client_for(dst_svc)
    rid = _dst_record(client, "03/02/2026", 2, "refreshed")   # no gap that day
    frames, noted = _load_noting(client, "keys", "refreshed")
    assert noted == []
    client.update_record("object_1", rid, {"field_2": {**_at("03/08/2026", 2, 15),
                                                       "to": _at("03/08/2026", 5)}})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        refresh(client, frames, full=True)
    said = [str(w.message) for w in seen if issubclass(w.category, PrecisionWarning)]
    assert len(said) == 1 and "field_2: 1 record" in said[0] and rid in said[0]
    assert "field_3" not in said[0]   # the timer's 2:30 is on a day without a gap
    assert frames.main.loc[rid, "field_2"] == pd.Timestamp("2026-03-08 03:00", tz=TZ)


# ---- numbers to the range of a double -----------------------------------------------------
NUM_DOC: dict[str, Any] = {"objects": [{"key": "object_1", "name": "N", "fields": [
    {"key": "field_1", "type": "number", "name": "Value"}]}]}


def test_numbers_the_service_holds_are_written_back() -> None:
    with LocalService(demo=False, app=NUM_DOC, records=0) as svc:
        client = client_for(svc)
        ids = [client.create_record("object_1", {"field_1": v})["id"]
               for v in (1e19, 1e308, -1e308, 2**53, 0.1)]
        frames = read_object(client, "object_1", columns="keys")
        assert frames.main.loc[ids[1], "field_1"] == 1e308
        frames.main.loc[ids[0], "field_1"] = 2e19
        frames.main.loc[ids[2], "field_1"] = -1.5e308
        report = write_back(client, frames, guard="once")
        assert set(report.table["status"]) == {"applied"}
        assert client.get_record("object_1", ids[0])["field_1_raw"] == 2e19
        assert client.get_record("object_1", ids[2])["field_1_raw"] == -1.5e308
        assert client.get_record("object_1", ids[1])["field_1_raw"] == 1e308  # untouched
        assert diff(frames).empty


def test_numbers_encode_to_float_range_and_warn_where_precision_is_lost() -> None:
    f = FieldSpec("field_1", "number", "Value")
    codec, ctx = codec_for(f), ReadContext()
    assert codec.encode({"field_1": 2e19}, f, ctx) == 2e19
    assert codec.normalize(codec.encode({"field_1": 1e308}, f, ctx), f) == 1e308
    assert codec.encode({"field_1": 3.0}, f, ctx) == 3 and type(codec.encode(
        {"field_1": 3.0}, f, ctx)) is int
    assert codec.normalize(10**19, f) == 1e19
    with pytest.raises(InvalidValue, match="beyond a double"):
        codec.normalize(10**400, f)
    with pytest.warns(PrecisionWarning, match="field_1 .Value.: 1 integers past 2..53"):
        codec.decode([2**53 + 1, 5], ["", ""], f, ctx)


# ---- CSV round trips exactly ----------------------------------------------------------------
TEXTS = ["lone\rreturn", "line\nfeed", "crlf\r\nboth", 'say "hi", twice', "form\x0cfeed",
         "tab\tbell\x07", " padded ", "plain"]
CSV_DOC: dict[str, Any] = {"objects": [{"key": "object_1", "name": "T", "fields": [
    {"key": "field_1", "type": "paragraph_text", "name": "Text"},
    {"key": "field_2", "type": "multiple_choice", "name": "Tags",
     "format": {"type": "multi", "options": ["a, b", "a", "b", "[x]", "c"]}}]}]}


def test_csv_export_round_trips_text_and_choices_exactly(tmp_path: Any) -> None:
    from svc_frames.saved.export import export
    from svc_frames.saved.parquet import read_parquet
    from svc_frames.saved.push import push

    tags = [["a, b"], ["a", "b"], ["[x]", "c"], ["a, b", "c"], [], ["a"], ["b", "a, b"], []]
    with LocalService(demo=False, app=CSV_DOC, records=0) as svc:
        client = client_for(svc)
        ids = [client.create_record("object_1", {"field_1": t, "field_2": g})["id"]
               for t, g in zip(TEXTS, tags, strict=True)]
        export(client, "object_1", tmp_path / "t", format="csv", progress=False, columns="keys")
        back = read_parquet(tmp_path / "t")
        assert len(back.main) == len(TEXTS)
        for rid, text, tag in zip(ids, TEXTS, tags, strict=True):
            assert back.main.loc[rid, "field_1"] == client.get_record(
                "object_1", rid)["field_1_raw"], text
            assert list(back.main.loc[rid, "field_2"] or []) == tag
        assert diff(back).empty
        report = push(client, tmp_path / "t", guard="once")
        assert report.table.empty or set(report.table["status"]) <= {"applied"}
        # an edited cell with a control character and a choice holding the separator
        csv = next((tmp_path / "t").glob("*.csv"))
        data = csv.read_bytes().decode("utf-8")
        assert '"lone\rreturn"' in data and '"[""a, b""]"' in data
        data = data.replace('"lone\rreturn"', '"new\rvalue"').replace(
            '"[""a, b""]"', '"[""a, b"", ""c""]"', 1)
        csv.write_bytes(data.encode("utf-8"))
        report = push(client, tmp_path / "t", guard="once")
        assert set(report.table["status"]) == {"applied"}
        assert client.get_record("object_1", ids[0])["field_1_raw"] == "new\rvalue"
        assert client.get_record("object_1", ids[0])["field_2_raw"] == ["a, b", "c"]
