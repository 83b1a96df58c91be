"""The local service's builder: the schema changed while the service runs, served at once
over HTTP, the records rendered again, kept across a restart; a change that leaves no
valid application is refused and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from svc_frames.errors import SchemaError
from svc_frames.server import LocalService


def schema_of(svc: LocalService) -> dict[str, dict[str, str]]:
    """{object key: {field key: kind}} as the schema endpoint serves it."""
    doc = requests.get(f"{svc.base_url}/v1/applications/{svc.app_id}", timeout=30).json()
    return {o["key"]: {f["key"]: f["type"] for f in o["fields"]}
            for o in doc["application"]["objects"]}


def record(svc: LocalService, obj: str, rid: str) -> dict[str, object]:
    out: dict[str, object] = requests.get(
        f"{svc.base_url}/v1/objects/{obj}/records/{rid}", headers=svc.headers(),
        timeout=30).json()
    return out


def test_changes_served_and_kept(tmp_path: Path) -> None:
    with LocalService(demo=True, records=10, rate_limit=0, data_dir=tmp_path / "d") as svc:
        rid = svc.store.reader.execute(
            "SELECT id FROM records WHERE obj = 'object_3' LIMIT 1").fetchone()[0]
        other = svc.store.reader.execute(
            "SELECT id FROM records WHERE obj = 'object_3' AND id <> ? LIMIT 1",
            (rid,)).fetchone()[0]
        stamp = svc.store.records("object_3", [other])[other].get("field_46_raw")
        key = svc.builder.add_field("object_3", "Note", "short_text")
        assert schema_of(svc)["object_3"][key] == "short_text"
        svc.pages.update_record("object_3", rid, {key: "a note"})
        assert record(svc, "object_3", rid)[key] == "a note"
        svc.builder.relabel_field(key, "Remark")
        svc.builder.change_kind("field_45", "number")
        svc.builder.remove_field("field_13")
        after = record(svc, "object_3", rid)
        assert "field_13" not in after and after[key] == "a note"
        assert schema_of(svc)["object_3"]["field_45"] == "number"
        sites = svc.builder.add_object("Sites", [("Site", "short_text")])
        assert schema_of(svc)[sites] == {f"field_{int(key[6:]) + 1}": "short_text"}
        # no record rule ran: the stamp of a record no user touched did not move
        assert stamp is not None
        assert svc.store.records("object_3", [other])[other].get("field_46_raw") == stamp
    with LocalService(demo=True, records=10, rate_limit=0, data_dir=tmp_path / "d") as again:
        kept = schema_of(again)
        assert kept["object_3"][key] == "short_text" and "field_13" not in kept["object_3"]
        assert kept["object_3"]["field_45"] == "number" and sites in kept
        names = {f.key: f.label for f in again.app.object("object_3").fields}
        assert names[key] == "Remark"


def test_bad_changes_change_nothing(fresh_service: LocalService) -> None:
    svc = fresh_service
    before = schema_of(svc)
    ident = svc.app.object("object_2").identifier
    assert ident is not None
    with pytest.raises(SchemaError):
        svc.builder.remove_field(ident)   # the object's identifier
    with pytest.raises(SchemaError, match="connection"):
        svc.builder.remove_field("field_41")
    with pytest.raises(SchemaError, match="connected to by"):
        svc.builder.remove_object("object_2")
    with pytest.raises(SchemaError, match="no object"):
        svc.builder.add_field("object_9", "X")
    assert schema_of(svc) == before
