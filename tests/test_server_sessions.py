"""User sessions on the local service: a token lives 48 hours (two weeks with "remember
me"); it does not work while its user is inactive, and stops for good when the user is
given a new password or deleted;
login takes one password hash whether or not the e-mail has an account.

Over loopback HTTP; the hash count is read in-process (the service runs in this process),
which says what a timing measurement would, without a timed assertion.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from svc_frames.server import LocalService
from svc_frames.server.accounts import DEFAULT_TOKEN_TTL_S, REMEMBER_TTL_S, token_hash
from svc_frames.testing import field_of_kind, login, object_url, view_url

VIEW = ("scene_3", "view_5")  # behind a login, any profile


def _view_status(svc: LocalService, token: str) -> int:
    r = requests.get(view_url(svc, *VIEW), headers=svc.headers(view=True, token=token),
                     timeout=30)
    return r.status_code


def _user_id(svc: LocalService, email: str) -> str:
    obj, uid, _, _ = svc.store.accounts.find_user(email)
    return uid


def _status_field(svc: LocalService) -> str:
    obj = svc.app.objects["object_1"]
    return next(f.key for f in obj.fields
                if f.kind == "multiple_choice" and "status" in f.name.lower())


def _put_user(svc: LocalService, email: str, values: dict[str, Any]) -> None:
    r = requests.put(object_url(svc, "object_1", _user_id(svc, email)), json=values,
                     headers=svc.headers(), timeout=30)
    assert r.status_code == 200, r.text


def _login(svc: LocalService, email: str, password: str,
           **extra: Any) -> requests.Response:
    return requests.post(f"{svc.base_url}/v1/applications/{svc.app_id}/session",
                         json={"email": email, "password": password, **extra}, timeout=30)


@pytest.fixture()
def svc() -> Iterator[LocalService]:
    with LocalService(demo=True, records=0, rate_limit=0) as s:
        yield s


def test_a_token_stops_when_its_user_is_made_inactive(svc: LocalService) -> None:
    email = svc.users[1]["email"]
    token = login(svc, 1)
    assert _view_status(svc, token) == 200
    _put_user(svc, email, {_status_field(svc): "inactive"})
    assert _view_status(svc, token) == 403
    assert _login(svc, email, svc.users[1]["password"]).status_code == 401
    # the user is checked as it is at each use: active again, its unexpired tokens work
    _put_user(svc, email, {_status_field(svc): "active"})
    assert _view_status(svc, token) == 200


def test_a_token_stops_when_its_password_changes(svc: LocalService) -> None:
    email = svc.users[0]["email"]
    token, other = login(svc, 0), login(svc, 1)
    _put_user(svc, email, {field_of_kind(svc, "object_1", "password"): "Another-2025!"})
    assert _view_status(svc, token) == 403
    assert _view_status(svc, other) == 200  # another user's token is not touched
    fresh = _login(svc, email, "Another-2025!").json()["session"]["user"]["token"]
    assert _view_status(svc, fresh) == 200


def test_a_token_stops_when_its_user_is_deleted(svc: LocalService) -> None:
    token = login(svc, 1)
    r = requests.delete(object_url(svc, "object_1", _user_id(svc, svc.users[1]["email"])),
                        headers=svc.headers(), timeout=30)
    assert r.status_code == 200
    assert _view_status(svc, token) == 403


def test_token_lifetimes_are_the_hosted_ones(svc: LocalService) -> None:
    # 48 hours, or two weeks with "remember me"; an expired token answers 403
    u = svc.users[0]
    expiry = {}
    for remember in (False, True):
        t0 = time.time()
        token = _login(svc, u["email"], u["password"], remember=remember).json()[
            "session"]["user"]["token"]
        row = svc.store.accounts.db.reader.execute(
            "SELECT expires FROM user_tokens WHERE token_hash = ?",
            (token_hash(token),)).fetchone()
        expiry[remember] = row[0] - t0
    assert DEFAULT_TOKEN_TTL_S == 48 * 3600 and REMEMBER_TTL_S == 14 * 24 * 3600
    assert DEFAULT_TOKEN_TTL_S - 60 < expiry[False] <= DEFAULT_TOKEN_TTL_S + 1
    assert REMEMBER_TTL_S - 60 < expiry[True] <= REMEMBER_TTL_S + 1
    svc.set_token_ttl(-1)
    r = requests.get(view_url(svc, *VIEW), timeout=30,
                     headers=svc.headers(view=True, token=login(svc, 0)))
    assert r.status_code == 403 and r.text == "Invalid or Expired Token"


def test_login_hashes_once_whether_or_not_the_email_is_known(
        svc: LocalService, scrypt_calls: list[int]) -> None:
    known = svc.users[0]["email"]
    no_password = next(iter(svc.store.accounts.find_user("tech5@example.com")[3]), None)
    assert no_password is None  # a person without a password set
    for email in (known, "nobody@example.com", "tech5@example.com"):
        scrypt_calls.clear()
        r = _login(svc, email, "wrong password")
        assert r.status_code == 401
        assert r.json()["errors"][0]["message"] == "Email or password incorrect."
        assert len(scrypt_calls) == 1, email
    scrypt_calls.clear()
    assert _login(svc, known, svc.users[0]["password"]).status_code == 200
    assert len(scrypt_calls) <= 1   # none if this pair matched before in this process
    scrypt_calls.clear()
    assert _login(svc, known, svc.users[0]["password"]).status_code == 200
    assert not scrypt_calls         # a pair that matched skips the hash
