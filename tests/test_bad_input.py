"""The bad-input catalogue: each input a user may get wrong, and the typed error (from
``svc_frames.errors``) it must raise, naming the culprit, before any request (unless the
check needs the service, ``sends=True``). Over loopback HTTP against the local service.

To add an input: append a ``Case`` to ``CASES`` (a name, a call taking the ``Env``, the
error type, the words the message must hold and those it must not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from svc_frames.assets import upload_file, upload_image
from svc_frames.client import Client
from svc_frames.errors import ConfigurationError, InvalidValue, UsageError, ValidationError
from svc_frames.filters import Field
from svc_frames.frames import Frames
from svc_frames.loaders import read_object
from svc_frames.parquet import read_parquet, to_parquet
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
    return read_object(env.client, OBJECT, filters=[rule], progress=False)


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


CASES = [
    Case("Client with a negative timeout", lambda env: _client_with(env, timeout=-1),
         ConfigurationError, ("timeout", "-1")),
    Case("Client with negative max_retries", lambda env: _client_with(env, max_retries=-1),
         ConfigurationError, ("max_retries", "-1")),
    Case("Client with a negative rate_limit", lambda env: _client_with(env, rate_limit=-1),
         ConfigurationError, ("rate_limit", "-1")),
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
    return read_object(client, OBJECT, progress=False)   # also caches the schema


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gives_a_typed_error_naming_the_culprit(
        svc: LocalService, client: Client, loaded: Frames, case: Case, tmp_path: Path) -> None:
    env = Env(svc, client, tmp_path, loaded)
    svc.request_log.clear()
    with pytest.raises(case.error) as err:
        case.call(env)
    text = str(err.value)
    for words in case.says:
        assert words.format(tmp=tmp_path) in text, (words, text)
    for words in case.never_says:
        assert words not in text, (words, text)
    if not case.sends:
        assert svc.request_log.count() == 0, svc.request_log.counts()
