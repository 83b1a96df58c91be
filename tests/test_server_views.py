"""Views, users and login over HTTP: scopes, fields, connection columns, forms, tokens."""

from __future__ import annotations

import json
from typing import Any

import requests

from svc_frames.server import LocalService
from svc_frames.testing import create, login, object_url, view_url


def _view_get(svc: LocalService, scene: str, view: str, token: str | None = None,
              **params: Any) -> requests.Response:
    return requests.get(view_url(svc, scene, view), headers=svc.headers(view=True, token=token),
                        params={"rows_per_page": 1000, **params}, timeout=30)


def _all_objects(svc: LocalService) -> list[dict[str, Any]]:
    r = requests.get(object_url(svc, "object_3"), headers=svc.headers(),
                     params={"rows_per_page": 1000}, timeout=30)
    return list(r.json()["records"])


def test_login_shape_and_errors(service: LocalService) -> None:
    url = f"{service.base_url}/v1/applications/{service.app_id}/session"
    u = service.users[0]
    r = requests.post(url, json={"email": u["email"].upper(), "password": u["password"]},
                      timeout=30)
    assert r.status_code == 200
    user = r.json()["session"]["user"]
    assert set(user) == {"approval_status", "empty_pass", "id", "profile_keys",
                         "profile_objects", "token", "utility_key", "values"}
    assert user["approval_status"] == "approved" and user["empty_pass"] is False
    assert user["profile_keys"] == u["profile_keys"]
    assert user["profile_objects"] == [{"entry_id": user["id"], "object": "object_1"}]
    assert user["token"] != login(service, 0)  # tokens are random per login
    bad = requests.post(url, json={"email": u["email"], "password": "wrong"}, timeout=30)
    assert bad.status_code == 401 and bad.json()["errors"][0]["message"]
    assert requests.post(url, json={"email": "nobody@example.com", "password": "x"},
                         timeout=30).status_code == 401
    assert requests.post(url, json={"email": u["email"]}, timeout=30).status_code == 400
    assert requests.post(url, data="{{", timeout=30).status_code == 400
    other = f"{service.base_url}/v1/applications/{'f' * 24}/session"
    assert requests.post(other, json={"email": u["email"], "password": u["password"]},
                         timeout=30).status_code == 404


def test_password_never_served(service: LocalService) -> None:
    r = requests.get(object_url(service, "object_1"), headers=service.headers(), timeout=30)
    text = r.text
    assert "Manager-2024!" not in text and "scrypt" not in text
    rec = r.json()["records"][0]
    assert rec["field_3"] == "*****" and "field_3_raw" not in rec


def test_public_view_fixed_rule_and_fields(service: LocalService) -> None:
    r = _view_get(service, "scene_1", "view_1")
    assert r.status_code == 200
    recs = r.json()["records"]
    allowed = {"id"} | {f"{k}{s}" for k in ("field_24", "field_12", "field_27", "field_29",
                                            "field_25") for s in ("", "_raw")}
    assert all(set(rec) <= allowed for rec in recs)
    assert all(rec["field_27"] != "Cancelled" for rec in recs)
    due = [rec["field_29_raw"]["unix_timestamp"] for rec in recs if "field_29_raw" in rec]
    assert due == sorted(due)  # the view's own sort (source.sort) applies by default
    expected = {x["id"] for x in _all_objects(service) if x.get("field_27_raw") != "Cancelled"}
    assert {x["id"] for x in recs} == expected
    # filtering a view on a field it does not show is refused (no leak)
    r = _view_get(service, "scene_1", "view_1",
                  filters=json.dumps([{"field": "field_13", "operator": "is blank"}]))
    assert r.status_code == 400
    # a record outside the view's rule is not reachable through it
    cancelled = next(x["id"] for x in _all_objects(service)
                     if x.get("field_27_raw") == "Cancelled")
    r = requests.get(view_url(service, "scene_1", "view_1", cancelled),
                     headers=service.headers(view=True), timeout=30)
    assert r.status_code == 404


def test_view_tokens_and_profiles(fresh_service: LocalService) -> None:
    svc = fresh_service
    assert _view_get(svc, "scene_2", "view_3").status_code == 403  # no token
    r = _view_get(svc, "scene_2", "view_3", token="not-a-token")
    assert r.status_code == 403 and r.text == "Invalid or Expired Token"
    tech = login(svc, 1)
    assert _view_get(svc, "scene_2", "view_3", token=tech).status_code == 403  # profile
    manager = login(svc, 0)
    assert _view_get(svc, "scene_2", "view_3", token=manager).status_code == 200
    # the token goes as is: a "Bearer " prefix is refused as the hosted service does
    r = _view_get(svc, "scene_2", "view_3", token=f"Bearer {manager}")
    assert r.status_code == 403 and r.text == "Invalid or Expired Token"
    # a wrong API key on a view request is a 401
    h = {**svc.headers(view=True, token=manager), "X-Service-REST-API-KEY": "nope"}
    assert requests.get(view_url(svc, "scene_2", "view_3"), headers=h,
                        timeout=30).status_code == 401
    # expired tokens
    svc.set_token_ttl(-1)
    expired = login(svc, 0)
    r = _view_get(svc, "scene_2", "view_3", token=expired)
    assert r.status_code == 403 and r.text == "Invalid or Expired Token"


def test_token_valid_only_for_its_application(service: LocalService,
                                              fresh_service: LocalService) -> None:
    token = login(fresh_service, 0)
    assert _view_get(service, "scene_2", "view_3", token=token).status_code == 403


def test_connection_column(service: LocalService) -> None:
    token = login(service, 0)
    recs = _view_get(service, "scene_2", "view_3", token=token).json()["records"]
    people = {p["id"]: p for p in requests.get(
        object_url(service, "object_1"), headers=service.headers(),
        params={"rows_per_page": 1000}, timeout=30).json()["records"]}
    objs = {x["id"]: x for x in _all_objects(service)}
    checked = 0
    for rec in recs:
        conns = objs[rec["id"]]["field_42_raw"]
        assert len(rec["field_42_raw"]) == len(conns)
        for c, raw in zip(conns, rec["field_42_raw"], strict=True):
            assert raw == people[c["id"]]["field_1_raw"]  # e.g. {first, last}
            assert f'<span class="{c["id"]}">' in rec["field_42"]
            checked += 1
        assert "field_13" not in rec
    assert checked > 0


def test_form_create_rules_and_ignored_fields(service: LocalService) -> None:
    token = login(service, 0)
    me = requests.post(f"{service.base_url}/v1/applications/{service.app_id}/session",
                       json={"email": service.users[0]["email"],
                             "password": service.users[0]["password"]},
                       timeout=30).json()["session"]["user"]["id"]
    r = requests.post(view_url(service, "scene_2", "view_4"),
                      headers=service.headers(view=True, token=token), timeout=30,
                      json={"field_12": "Form made", "field_16": 150, "field_14": "<p>x</p>",
                            "field_999": 1})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["submit_key"] == "submit_1"
    assert "field_14" not in body["record"] and body["record"]["field_27"] == "Open"
    full = requests.get(object_url(service, "object_3", body["record"]["id"]),
                        headers=service.headers(), timeout=30).json()
    assert full["field_14"] == ""                     # not a form field: never stored
    assert full["field_26_raw"] is True               # conditional rule (quantity > 100)
    assert full["field_43_raw"][0]["id"] == me        # logged-in user
    assert full["field_44_raw"]["date"]               # current date/time
    r = requests.post(view_url(service, "scene_2", "view_4"),
                      headers=service.headers(view=True, token=token), timeout=30,
                      json={"field_12": "Small", "field_16": 2, "field_27": "On Hold"})
    full = requests.get(object_url(service, "object_3", r.json()["record"]["id"]),
                        headers=service.headers(), timeout=30).json()
    assert full["field_27"] == "On Hold" and "field_26_raw" not in full


def test_view_updates(service: LocalService) -> None:
    manager, tech = login(service, 0), login(service, 1)
    rec = create(service, "object_3", {"field_12": "Inline", "field_16": 3})
    url = view_url(service, "scene_3", "view_5", rec["id"])
    r = requests.put(url, headers=service.headers(view=True, token=tech), timeout=30,
                     json={"field_16": 7, "field_13": "not shown in the view"})
    assert r.status_code == 200, r.text
    assert r.json()["record"]["field_16_raw"] == 7
    full = requests.get(object_url(service, "object_3", rec["id"]), headers=service.headers(),
                        timeout=30).json()
    assert full["field_16_raw"] == 7 and full["field_13"] == ""
    # tables without inline editing refuse updates
    r = requests.put(view_url(service, "scene_2", "view_3", rec["id"]), json={"field_12": "x"},
                     headers=service.headers(view=True, token=manager), timeout=30)
    assert r.status_code == 400
    r = requests.put(view_url(service, "scene_1", "view_1", rec["id"]), json={"field_12": "x"},
                     headers=service.headers(view=True), timeout=30)
    assert r.status_code == 400
    # a create on a view that is not an insert form
    r = requests.post(view_url(service, "scene_3", "view_5"), json={"field_12": "x"},
                      headers=service.headers(view=True, token=tech), timeout=30)
    assert r.status_code == 400


def test_records_connected_to_user(service: LocalService) -> None:
    tech = login(service, 1)
    users = requests.get(object_url(service, "object_1"), headers=service.headers(),
                         params={"rows_per_page": 1000}, timeout=30).json()["records"]
    me = next(u["id"] for u in users if u["field_2_raw"]["email"] == service.users[1]["email"])
    mine = {x["id"] for x in _all_objects(service)
            if any(c["id"] == me for c in x["field_42_raw"])}
    got = _view_get(service, "scene_4", "view_6", token=tech).json()["records"]
    assert {x["id"] for x in got} == mine and mine
    # update form on my records: a record of someone else is not reachable
    other = next(x["id"] for x in _all_objects(service) if x["id"] not in mine)
    r = requests.put(view_url(service, "scene_4", "view_7", other), json={"field_27": "Done"},
                     headers=service.headers(view=True, token=tech), timeout=30)
    assert r.status_code == 404
    target = sorted(mine)[0]
    r = requests.put(view_url(service, "scene_4", "view_7", target),
                     json={"field_27": "Done", "field_12": "ignored"},
                     headers=service.headers(view=True, token=tech), timeout=30)
    assert r.status_code == 200 and set(r.json()["record"]) <= {"id", "field_27", "field_27_raw",
                                                               "field_14", "field_14_raw"}
    full = requests.get(object_url(service, "object_3", target), headers=service.headers(),
                        timeout=30).json()
    assert full["field_27"] == "Done" and full["field_26_raw"] is False
    assert full["field_12"] != "ignored"
    # details of my own account only
    acct = _view_get(service, "scene_4", "view_8", token=tech).json()["records"]
    assert [a["id"] for a in acct] == [me]
    assert "field_3" not in acct[0]


def test_users_created_through_the_api(fresh_service: LocalService) -> None:
    svc = fresh_service
    url = f"{svc.base_url}/v1/applications/{svc.app_id}/session"
    user = create(svc, "object_1", {"field_1": {"first": "New", "last": "Person"},
                                    "field_2": "new.person@example.com",
                                    "field_3": "S3cret-pass!", "field_4": "active",
                                    "field_5": ["profile_3"]})
    assert user["field_3"] == "*****" and "field_3_raw" not in user
    r = requests.post(url, json={"email": "new.person@example.com",
                                 "password": "S3cret-pass!"}, timeout=30)
    assert r.status_code == 200
    assert r.json()["session"]["user"]["profile_keys"] == ["profile_1", "profile_3"]
    # the password is stored only as a salted hash
    for f in svc.data_dir.glob("service.db*"):  # the database and its WAL
        assert b"S3cret-pass!" not in f.read_bytes()
    # a new password replaces the old; an inactive user cannot log in
    requests.put(object_url(svc, "object_1", user["id"]), json={"field_3": "Other-pass1"},
                 headers=svc.headers(), timeout=30)
    assert requests.post(url, json={"email": "new.person@example.com",
                                    "password": "S3cret-pass!"}, timeout=30).status_code == 401
    assert requests.post(url, json={"email": "new.person@example.com",
                                    "password": "Other-pass1"}, timeout=30).status_code == 200
    requests.put(object_url(svc, "object_1", user["id"]), json={"field_4": "inactive"},
                 headers=svc.headers(), timeout=30)
    assert requests.post(url, json={"email": "new.person@example.com",
                                    "password": "Other-pass1"}, timeout=30).status_code == 401
    # e-mail addresses are unique
    r = requests.post(object_url(svc, "object_1"), json={"field_2": "NEW.person@example.com"},
                      headers=svc.headers(), timeout=30)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "field_2"
