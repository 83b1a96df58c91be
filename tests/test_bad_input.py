"""The bad-input catalogue: each input a user may get wrong, and the typed error (from
``svc_frames.errors``) it must raise, naming the culprit, before any request (unless the
check needs the service, ``sends=True``). Over loopback HTTP against the local service.

To add an input: append a ``Case`` to ``CASES`` (a name, a call taking the ``Env``, the
error type, the words the message must hold and those it must not).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from svc_frames.assets import upload_file, upload_image
from svc_frames.errors import (
    ConfigurationError,
    Forbidden,
    InvalidValue,
    PaceWarning,
    UsageError,
    ValidationError,
)
from svc_frames.filters import Field
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.records import Client
from svc_frames.saved.export import export
from svc_frames.saved.parquet import read_parquet, to_parquet
from svc_frames.saved.push import push
from svc_frames.server import LocalService
from svc_frames.writeback import add_rows, diff, write_back

OBJECT = "object_3"   # the demo's widest object (svc_frames/server/demo.py)


@dataclass
class Env:
    """What a case may use: the service, a client on it, a scratch directory, and frames
    loaded before the case runs (``frames()``: a fresh copy each call)."""

    svc: LocalService
    client: Client
    tmp: Path
    loaded: Frames

    def frames(self) -> Frames:
        out = self.loaded.snapshot()
        out.original = self.loaded.original.snapshot() if self.loaded.original else None
        return out


@dataclass(frozen=True)
class Case:
    """One bad input and the error it must give."""

    name: str
    call: Callable[[Env], object]
    error: type[Exception]
    says: tuple[str, ...]
    never_says: tuple[str, ...] = field(default=())
    sends: bool = False   # the check needs the service (its refusal is the error)


def _cleared_id(env: Env) -> object:
    frames = env.frames()
    ids = frames.main.index.tolist()
    ids[2] = np.nan
    frames.main.index = pd.Index(ids, name="id", dtype=frames.main.index.dtype)
    return diff(frames)


def _journal_dir(env: Env) -> object:
    frames = env.frames()
    frames.main.iloc[0, frames.main.columns.get_loc("field_12")] = "journal check"
    return write_back(env.client, frames, journal=env.tmp)


def _client_with(env: Env, **settings: object) -> object:
    return Client(env.svc.app_id, api_key=env.svc.api_key, base_url=env.svc.base_url,
                  **settings)  # type: ignore[arg-type]


def _corrupt_metadata(env: Env) -> object:
    dest = env.tmp / "orders"
    to_parquet(env.frames(), dest)
    (env.tmp / "orders.svc_frames.json").write_text("{not json")
    return read_parquet(dest)


def _filtered_load(env: Env, rule: object) -> object:
    return read_object(env.client, OBJECT, filters=[rule], progress=False, columns="keys")


def _edited(env: Env) -> Frames:
    frames = env.frames()
    frames.main.iloc[0, frames.main.columns.get_loc("field_12")] = "reserve check"
    return frames


def _new_row_without(env: Env, value: object) -> object:
    frames = env.frames()
    row: dict[str, object] = {"field_13": "no title"}
    if value is not None:
        row["field_12"] = value
    add_rows(frames, [row])
    return write_back(env.client, frames)


def _blanked_required(env: Env, blank: object) -> object:
    frames = env.frames()
    frames.main.iloc[1, frames.main.columns.get_loc("field_12")] = blank
    return diff(frames)


def _cell_with(env: Env, column: str, text: str) -> object:
    frames = env.frames()
    # an Arrow-backed text column refuses the text itself; a column the user rebuilt as
    # plain Python objects (a common result of .apply or list assignment) takes it
    frames.main[column] = frames.main[column].astype(object)
    frames.main.iloc[1, frames.main.columns.get_loc(column)] = text
    return write_back(env.client, frames)


def _new_row_with(env: Env, title: str) -> object:
    frames = env.frames()
    return add_rows(frames, [{"field_12": "fine"}, {"field_12": title}])


def _saved_edit(env: Env) -> Path:
    dest = env.tmp / "orders"
    to_parquet(_edited(env), dest)
    return dest


def _push_to_another_application(env: Env) -> object:
    other = Client("another_application", api_key=env.svc.api_key,
                   base_url=env.svc.base_url, rate_limit=0)
    return push(other, _saved_edit(env))


def _changed_as_loaded_copy(env: Env) -> object:
    dest = _saved_edit(env)
    part = next(iter(sorted((env.tmp / "orders.svc_frames" / "main").glob("*.parquet"))))
    df = pd.read_parquet(part)
    df.loc[0, "field_12"] = "reserve check"   # the edit, so the diff would show none
    df.to_parquet(part, index=False)
    return push(env.client, dest)


def _saved_before_a_change(env: Env, target: str,
                           was: Callable[[dict[str, Any]], None]) -> Path:
    """Frames of ``target`` saved from the same application (same id, key and records)
    as it was before the schema change ``was`` undoes: a copy of the service's data
    directory whose document ``was`` edits. Returns the saved directory."""
    old_dir = env.tmp / "before-change"
    old_dir.mkdir()
    with sqlite3.connect(env.svc.data_dir / "service.db") as live, \
            sqlite3.connect(old_dir / "service.db") as copy:
        live.backup(copy)
    meta = json.loads((env.svc.data_dir / "app.json").read_text())
    objects = {o["key"]: o for o in meta["document"]["objects"]}
    was(objects)
    meta["document"]["objects"] = list(objects.values())
    (old_dir / "app.json").write_text(json.dumps(meta))
    with LocalService(data_dir=old_dir, rate_limit=0) as old:
        before = Client(old.app_id, api_key=old.api_key, base_url=old.base_url, rate_limit=0)
        export(before, target, env.tmp / "orders", progress=False, columns="keys")
    return env.tmp / "orders"


def _push_after_a_change(env: Env, target: str,
                         was: Callable[[dict[str, Any]], None]) -> object:
    return push(env.client, _saved_before_a_change(env, target, was))


def _field(objects: dict[str, Any], obj: str, key: str) -> dict[str, Any]:
    return next(f for f in objects[obj]["fields"] if f["key"] == key)


def _with_extra_object(objects: dict[str, Any]) -> None:
    objects["object_99"] = {**objects["object_2"], "key": "object_99", "name": "Old parts"}
    objects["object_99"]["fields"] = [
        {**f, "key": f["key"].replace("field_", "field_99")}
        for f in objects["object_2"]["fields"] if f["type"] != "connection"]
    objects["object_99"]["identifier"] = "field_998"


CASES = [
    Case("Client with a negative timeout", lambda env: _client_with(env, timeout=-1),
         ConfigurationError, ("timeout", "-1")),
    Case("Client with negative max_retries", lambda env: _client_with(env, max_retries=-1),
         ConfigurationError, ("max_retries", "-1")),
    Case("Client with a negative rate_limit", lambda env: _client_with(env, rate_limit=-1),
         ConfigurationError, ("rate_limit", "-1")),
    Case("Client with a NaN rate_limit",
         lambda env: _client_with(env, rate_limit=float("nan")),
         ConfigurationError, ("rate_limit", "nan")),
    Case("Client with a rate_limit above the highest pace",
         lambda env: _client_with(env, rate_limit=5000),
         ConfigurationError, ("rate_limit", "5000", "between 0")),
    Case("Client with a rate_limit given as text",
         lambda env: _client_with(env, rate_limit="10"),
         ConfigurationError, ("rate_limit", "'10'")),
    Case("Client told to trust a certificate file that does not exist",
         lambda env: _client_with(env, verify="/nonexistent/ca.pem"),
         ConfigurationError, ("verify", "/nonexistent/ca.pem")),
    Case("Client with a verify that is neither a flag nor a path",
         lambda env: _client_with(env, verify=1.5),
         ConfigurationError, ("verify", "1.5")),
    Case("a local service whose clock is offset by more than an hour",
         lambda env: LocalService(records=0, clock_offset_ms=4_000_000),
         UsageError, ("clock_offset_ms", "4000000")),
    Case("a local service whose clock offset is not a number",
         lambda env: LocalService(records=0, clock_offset_ms=float("inf")),
         UsageError, ("clock_offset_ms", "inf")),
    Case("a date filter value that is not a date",
         lambda env: Field("field_29").is_after("not a date"), UsageError,
         ("field_29", "'not a date'", "as a date")),
    Case("is any without a list", lambda env: Field("field_27").is_any("Open"),  # type: ignore[arg-type]
         UsageError, ("field_27", "needs a list", "'Open'")),
    Case("a relative date operator without its range",
         lambda env: Field("field_29").is_before_previous(None, "days"),  # type: ignore[arg-type]
         UsageError, ("field_29", "'range'", "None")),
    Case("a hand-written rule with an unreadable date",
         lambda env: _filtered_load(env, {"field": "field_29", "operator": "is after",
                                          "value": "31st of Jan"}),
         UsageError, ("field_29", "'31st of Jan'")),
    Case("read_parquet of corrupt metadata", _corrupt_metadata, UsageError,
         ("orders.svc_frames.json", "corrupt svc_frames metadata", "not JSON")),

    Case("push of saved frames to another application", _push_to_another_application,
         UsageError, ("orders", "application {app}", "'another_application'",
                      "object_3", "nothing was sent")),
    Case("push of saved frames whose object is gone from the application",
         lambda env: _push_after_a_change(env, "object_99", _with_extra_object),
         UsageError, ("orders", "object object_99 (Old parts)",
                      "is not an object of application {app}", "object_3",
                      "nothing was sent")),
    Case("push of saved frames whose object was renamed or swapped",
         lambda env: _push_after_a_change(
             env, "object_2", lambda objs: objs["object_2"].update(name="Spare parts")),
         UsageError, ("orders", "object object_2 (Spare parts)", "calls object_2 'Parts'",
                      "nothing was sent")),
    Case("push of saved frames holding a field gone from the object",
         lambda env: _push_after_a_change(env, OBJECT, lambda objs: objs[OBJECT]["fields"].append(
             {"key": "field_999", "name": "Old notes", "type": "short_text"})),
         UsageError, ("orders", "field_999 (Old notes, short_text)", "no field of object_3",
                      "nothing was sent")),
    Case("push of saved frames whose field changed kind",
         lambda env: _push_after_a_change(
             env, OBJECT, lambda objs: _field(objs, OBJECT, "field_13").update(
                 type="short_text")),
         UsageError, ("orders", "field_13 (Description)", "was short_text",
                      "now has it as paragraph_text", "nothing was sent")),
    Case("push of saved frames whose as-loaded copy was changed", _changed_as_loaded_copy,
         UsageError, ("orders.svc_frames", "as-loaded copy was changed", "SHA-256",
                      "nothing was sent")),

    Case("a view request with a token that is no longer valid",
         lambda env: _client_with(env, token="expired-token-0000").get_page(
             ("scene_3", "view_5")), Forbidden,
         ("scene_3/view_5", "token expired", "48 hours", "client.login(email, password)"),
         never_says=("expired-token-0000",), sends=True),
    Case("add_rows with a string", lambda env: add_rows(env.frames(), "text"),  # type: ignore[arg-type]
         UsageError, ("rows must be a list of dicts", "str")),
    Case("add_rows with a list of numbers", lambda env: add_rows(env.frames(), [1, 2]),  # type: ignore[list-item]
         UsageError, ("rows must be a list of dicts", "row 0", "int")),
    Case("write_back with a directory as journal", _journal_dir, UsageError,
         ("journal {tmp} is a directory",)),
    Case("an existing row whose id was set to NaN", _cleared_id, UsageError,
         ("the id of row 2 was cleared",), never_says=("new row new:", "leave it empty")),
    Case("upload_file of a missing path", lambda env: upload_file(env.client, "/nonexistent"),
         InvalidValue, ("/nonexistent", "not found"), never_says=("(field )",)),
    Case("upload_file of a directory", lambda env: upload_file(env.client, env.tmp),
         InvalidValue, ("is a directory, not a file: {tmp}",), never_says=("(field )",)),
    Case("upload_image of bytes that are not an image",
         lambda env: upload_image(env.client, b"plain text, not pixels", "notes.png"),
         ValidationError, ("notes.png", "not a readable image"),
         never_says=("object at 0x", "<_io", "BytesIO"), sends=True),
    Case("write_back with a negative quota_reserve",
         lambda env: write_back(env.client, _edited(env), quota_reserve=-1),
         UsageError, ("quota_reserve", "-1")),
    Case("write_back with a fractional quota_reserve",
         lambda env: write_back(env.client, _edited(env), quota_reserve=2.5),  # type: ignore[arg-type]
         UsageError, ("quota_reserve", "2.5", "float")),
    Case("write_back with a quota_reserve as text",
         lambda env: write_back(env.client, _edited(env), quota_reserve="100"),  # type: ignore[arg-type]
         UsageError, ("quota_reserve", "'100'", "str")),
    Case("write_back with quota_reserve=True",
         lambda env: write_back(env.client, _edited(env), quota_reserve=True),
         UsageError, ("quota_reserve", "True")),
    Case("a new row without a field the schema marks required",
         lambda env: _new_row_without(env, None), InvalidValue,
         ("new row new:0", "field_12", "Title", "required", "'field_12'")),
    Case("an update that empties a field the schema marks required",
         lambda env: _blanked_required(env, ""), InvalidValue,
         ("record {rid}", "field_12", "Title", "required", "'field_12' was emptied")),
    Case("an update that sets a required field to NA",
         lambda env: _blanked_required(env, pd.NA), InvalidValue,
         ("record {rid}", "field_12", "required")),
    Case("a cell holding a lone surrogate",
         lambda env: _cell_with(env, "field_13", "bad \ud800 text"), InvalidValue,
         ("record {rid}", "'field_13'", "cannot be encoded", "surrogate")),
    Case("a new row whose text holds a lone surrogate",
         lambda env: _new_row_with(env, "title \udfff"), InvalidValue,
         ("new row 1", "'field_12'", "cannot be encoded", "surrogate")),
    Case("a filter operator the field's kind does not take",
         lambda env: _filtered_load(env, Field("Title").is_before_today()), UsageError,
         ("filter rule 1", "field_12 (Title)", "does not take 'is before today'",
          "it takes 'is', 'is not'")),
    Case("a filter value of the wrong kind for its field",
         lambda env: _filtered_load(env, Field("Quantity").lower_than("a few")), UsageError,
         ("filter rule 1", "field_16 (Quantity)", "'a few' is not a number")),
    Case("a filter value built with a lone surrogate",
         lambda env: Field("field_12").is_("a\ud800"), UsageError,
         ("Field('field_12')", "field_12", "surrogate")),
    Case("a hand-written filter rule with a lone surrogate",
         lambda env: _filtered_load(env, {"field": "field_28", "operator": "is any",
                                          "value": ["HVAC", "\udc80"]}),
         UsageError, ("filter rule 1", "field_28", "surrogate")),
    Case("a filters value holding a lone UTF-16 surrogate (JSON-escaped)",
         lambda env: env.client.request("GET", f"/v1/objects/{OBJECT}/records", params={
             "filters": '[{"field": "field_12", "operator": "is", "value": "\\ud800"}]'}),
         ValidationError, ("filters[0].value", "surrogate"), sends=True),
    Case("a filters field name holding a lone UTF-16 surrogate on a public view",
         lambda env: env.client.request("GET", "/v1/pages/scene_1/views/view_1/records",
                                        view=True, params={"filters": '[{"field": "\\udfff", '
                                                           '"operator": "is", "value": "x"}]'}),
         ValidationError, ("filters[0].field", "surrogate"), sends=True),
    Case("a query parameter whose bytes are not UTF-8",
         lambda env: env.client.request("GET", f"/v1/objects/{OBJECT}/records",
                                        params={"sort_field": b"\xed\xa0\x80"}),
         ValidationError, ("'sort_field'", "not UTF-8"), sends=True),
    Case("a new row whose required field is empty text",
         lambda env: _new_row_without(env, ""), InvalidValue,
         ("new row new:0", "field_12", "required")),
]


@pytest.fixture(scope="module")
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=6, rate_limit=0) as s:
        yield s


@pytest.fixture(scope="module")
def client(svc: LocalService) -> Client:
    return Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=0,
                  backoff=0.01)


@pytest.fixture(scope="module")
def loaded(client: Client) -> Frames:
    return read_object(client, OBJECT, progress=False, columns="keys")   # also caches the schema


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gives_a_typed_error_naming_the_culprit(
        svc: LocalService, client: Client, loaded: Frames, case: Case, tmp_path: Path) -> None:
    env = Env(svc, client, tmp_path, loaded)
    svc.request_log.clear()
    with pytest.raises(case.error) as err:
        case.call(env)
    text = str(err.value)
    for words in case.says:
        assert words.format(tmp=tmp_path, rid=loaded.main.index[1], app=repr(svc.app_id)) in text, (words, text)
    for words in case.never_says:
        assert words not in text, (words, text)
    if not case.sends:
        assert svc.request_log.count() == 0, svc.request_log.counts()


def test_a_pace_directory_that_cannot_be_written_paces_per_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SVC_PACE_DIR", str(blocker / "pace"))
    with pytest.warns(PaceWarning, match="not writable") as seen:
        one = Client("app-nopace", api_key="k", base_url="http://127.0.0.1:9", rate_limit=10)
        two = Client("app-nopace-2", api_key="k", base_url="http://127.0.0.1:9",
                     rate_limit=10)
    assert len([w for w in seen if issubclass(w.category, PaceWarning)]) == 1  # one warning
    assert str(blocker / "pace") in str(seen[0].message)
    assert one.pace.shared_file is None and two.pace.shared_file is None
    assert one.pace.rate == 10  # still paced, in this process
    assert blocker.read_text() == "not a directory"
