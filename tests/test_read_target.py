"""read/target.py: a target's fields and the Source its frames carry (local service)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from svc_frames import Client
from svc_frames.read.target import describe


def test_fields_come_from_the_schema_or_are_inferred(client: Client) -> None:
    app = client.schema()
    records = client.get_page("object_3", 1, 5)["records"]
    tz = ZoneInfo("America/Chicago")
    fields, source = describe(client, "object_3", app, records, "labels", tz)
    assert not source.kinds_inferred and source.name == "Work Orders"
    assert source.timezone == "America/Chicago" and source.columns == "labels"
    assert source.app_id == client.app_id and source.kind == "object"
    assert {f.key for f in fields} >= {"field_12", "field_46"}
    inferred, bare = describe(client, "object_3", None, records, "keys", None)
    assert bare.kinds_inferred and bare.timezone is None
    assert {f.key for f in inferred} <= {f.key for f in fields}


def test_a_view_describes_the_fields_it_shows(client: Client) -> None:
    app = client.schema()
    fields, source = describe(client, ("scene_1", "view_1"), app, [], "keys", None)
    assert source.kind == "view" and (source.scene_key, source.view_key) == ("scene_1",
                                                                             "view_1")
    assert source.object_key == "object_3"
    assert [f.key for f in fields][:2] == ["field_24", "field_12"]  # the view's columns
