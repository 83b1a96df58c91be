"""read_app, joins along connections, and the DuckDB / Parquet snapshots, over the local
service (the shared demo service: 300 work orders; nothing here writes to it)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from svc_frames import Client, read_object, read_view
from svc_frames.application import App, read_app
from svc_frames.cli import main as cli_main
from svc_frames.errors import UsageError
from svc_frames.frames import Frames
from svc_frames.kinds import BLANK
from svc_frames.server import LocalService
from svc_frames.writeback import diff, write_back

duckdb = pytest.importorskip("duckdb")

RECORDS_PATH = "/v1/objects/"


@pytest.fixture(scope="module")
def app(service: LocalService) -> App:
    c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
               rate_limit=0)
    return read_app(c, progress=False, columns="keys")


@pytest.fixture(scope="module")
def app_labels(service: LocalService) -> App:
    c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
               rate_limit=0)
    return read_app(c, columns="labels", progress=False)


def schema_objects(client: Client) -> dict[str, str]:
    return {o["key"]: o["name"] for o in (client.schema() or {})["objects"]}


def hand_merge(left: Frames, table_name: str, right: Frames | None, prefix: str,
               how: str = "left") -> pd.DataFrame:
    """What an analyst writes: the exploded table, then the connected object, by merge."""
    links = left.tables[table_name][["record_id", "connected_id", "identifier"]]
    links = links.rename(columns={"record_id": "id", "connected_id": f"{prefix}.id",
                                  "identifier": f"{prefix}.identifier"})
    if right is not None:
        links = links.drop(columns=[f"{prefix}.identifier"])
    out = left.main.reset_index().merge(links, on="id", how=how)
    if right is not None:
        rhs = right.main.add_prefix(f"{prefix}.").rename_axis(f"{prefix}.id").reset_index()
        out = out.merge(rhs, on=f"{prefix}.id", how="left")
    return out


def assert_same_rows(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


# ---- read_app and App -------------------------------------------------------------------
def test_app_maps_keys_and_names_to_the_objects_frames(app: App, client: Client) -> None:
    names = schema_objects(client)
    assert sorted(app.keys()) == sorted(names)
    for key, name in names.items():
        assert app[key] is app[name]
        single = read_object(client, key, columns="keys")
        assert list(app[key].main.index) == list(single.main.index)
        assert list(app[key].main.columns) == list(single.main.columns)
        assert app[key].original is not None  # write_back-ready
    s = app.summary()
    assert dict(zip(s["object"], s["rows"], strict=True)) == {
        k: len(read_object(client, k, columns="keys").main) for k in names}
    text = repr(app)
    assert all(n in text for n in names.values())
    assert f"{len(app.connections)} connections" in text
    assert "<table" in app._repr_html_()


def test_connections_come_from_the_schema(app: App, client: Client) -> None:
    want = []
    for o in client.schema()["objects"]:  # type: ignore[index]
        for f in o["fields"]:
            if f["type"] == "connection":
                want.append((f["key"], o["key"], f["relationship"]["object"],
                             f["relationship"]["has"]))
    got = [(c.field, c.from_object, c.to_object, "many" if c.many else "one")
           for c in app.connections]
    assert got == want and want
    assert {c.many for c in app.connections} == {True, False}


def test_read_app_of_named_objects_only(client: Client) -> None:
    names = schema_objects(client)
    key, name = next(iter(names.items()))
    other = list(names)[1]
    app = read_app(client, [name, other], progress=False, columns="keys")
    assert app.keys() == [key, other]
    with pytest.raises(UsageError, match="was not loaded"):
        app[list(names)[2]]


def test_read_app_paced_at_the_service_limit_sends_no_429() -> None:
    # 2,500 work orders: 3 pages, plus one page each of the other objects
    with LocalService(demo=True, records=2500, rate_limit=10, seed=3) as svc:
        c = Client(svc.app_id, api_key=svc.api_key, base_url=svc.base_url, rate_limit=10)
        app = read_app(c, progress=False, columns="keys")
        assert len(app["Work Orders"].main) == 2500
        assert svc.request_log.count(status=429) == 0
        assert c.status_counts[429] == 0 and c.retry_count == 0
        # every object was loaded, each page once (ordered pages of dense values, nobody
        # deleting: no gap to check)
        assert svc.request_log.count("GET", "/v1/objects/object_3/records") == 3


# ---- joins ------------------------------------------------------------------------------
@pytest.mark.parametrize("labels", [False, True])
def test_join_equals_a_hand_written_merge_on_every_connection(app: App, app_labels: App,
                                                              labels: bool) -> None:
    a = app_labels if labels else app
    assert a.connections
    for conn in a.connections:
        left, right = a[conn.from_object], a[conn.to_object]
        table = conn.label if labels else conn.field
        got = a.join(conn.from_object, conn.to_object, field=conn.field)
        assert_same_rows(got, hand_merge(left, table, right, conn.label))
        inner = left.join(conn.field, right, how="inner")
        assert_same_rows(inner, hand_merge(left, table, right, conn.label, how="inner"))
        links = left.tables[table]
        assert len(inner) == len(links)  # one row per connected pair
        unlinked = (~left.main.index.isin(links["record_id"])).sum()
        assert len(got) == len(links) + unlinked  # records without a link are kept
        if not conn.many:
            assert len(got) == len(left.main)  # one row per record


def test_join_to_the_user_object_brings_its_columns(app: App) -> None:
    people = next(c for c in app.connections if c.to_object == "object_1")
    got = app.join("Work Orders", "People", field=people.label, columns=["field_1", "field_2"])
    extra = [c for c in got.columns if c.startswith(people.label + ".")]
    assert extra == [f"{people.label}.id"] + [f"{people.label}.{c}" for c in
                                              app["People"].main.columns
                                              if c.split(".")[0] in ("field_1", "field_2")]
    linked = got.dropna(subset=[f"{people.label}.id"])
    by_id = app["People"].main["field_2"]
    assert (linked[f"{people.label}.field_2"].to_numpy()
            == by_id.reindex(linked[f"{people.label}.id"]).to_numpy()).all()
    keys = app.join("Work Orders", "People", field=people.field, columns="keys")
    assert f"{people.field}.field_2" in keys.columns


def test_join_backwards_along_a_connection(app: App) -> None:
    parts = app.join("Parts", "Work Orders", columns=["field_12"], how="inner")
    links = app["Work Orders"].tables["field_41"]
    assert len(parts) == len(links)
    assert sorted(zip(parts["id"], parts["Work Orders.id"], strict=True)) == sorted(
        zip(links["connected_id"], links["record_id"], strict=True))


def test_join_of_a_view_and_of_an_object_not_loaded(service: LocalService, app: App) -> None:
    c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
               rate_limit=0)
    user = service.users[0]
    c.login(user["email"], user["password"])
    view = read_view(c, "scene_2", "view_3", columns="keys")  # shows Assignee (field_42) and Parts
    shown = view.join("field_42")
    links = view.tables["field_42"]
    inner = shown.dropna(subset=["Assignee.id"])
    assert sorted(zip(inner["id"], inner["Assignee.id"], inner["Assignee.identifier"],
                      strict=True)) == sorted(zip(links["record_id"], links["connected_id"],
                                                  links["identifier"], strict=True))
    with_people = app.join(view, "People", field="field_42", columns=["field_2"])
    assert with_people["Assignee.field_2"].notna().sum() == len(links)
    # an App without Parts: the join shows what the table holds
    orders_only = App({"object_3": app["object_3"]}, app.schema)
    got = orders_only.join("Work Orders", "Parts")
    assert {"Parts.id", "Parts.identifier"} <= set(got.columns)
    assert got["Parts.id"].notna().sum() == len(app["object_3"].tables["field_41"])


def test_editing_a_join_result_is_refused_naming_the_object_frame(app: App,
                                                                  client: Client) -> None:
    df = app.join("Work Orders", "Parts")
    df.loc[0, "field_12"] = "edited"
    for call in (lambda: diff(df), lambda: write_back(client, df),  # type: ignore[arg-type]
                 lambda: diff(Frames(df, {}, app["Work Orders"].source))):
        with pytest.raises(UsageError, match=r"Work Orders.*object_3"):
            call()


# ---- bad input --------------------------------------------------------------------------
def test_unknown_objects_are_refused_before_any_record_request(service: LocalService) -> None:
    c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
               rate_limit=0)
    before = service.request_log.count(path_prefix=RECORDS_PATH)
    for bad in (["Work Orders", "Invoices"], ["object_99"]):
        with pytest.raises(UsageError, match=repr(bad[-1])) as exc:
            read_app(c, bad, progress=False, columns="keys")
        assert "'Work Orders' (object_3)" in str(exc.value)  # the objects that exist
    assert service.request_log.count(path_prefix=RECORDS_PATH) == before


def test_join_between_objects_no_connection_ties_lists_the_connections(app: App) -> None:
    with pytest.raises(UsageError, match="no connection ties Parts") as exc:
        app.join("Parts", "People")
    assert all(c.field in str(exc.value) for c in app.connections)
    with pytest.raises(UsageError, match="unknown object 'Nope'"):
        app.join("Nope", "Parts")
    with pytest.raises(UsageError, match="not a connection field"):
        app["Work Orders"].join("field_12")


def test_an_ambiguous_connection_asks_for_the_field(app: App) -> None:
    with pytest.raises(UsageError, match="several connections: field_42.*field_43"):
        app.join("Work Orders", "People")


# ---- DuckDB and Parquet ------------------------------------------------------------------
def test_to_duckdb_tables_and_a_sql_join_agree_with_app_join(app: App, tmp_path: Path) -> None:
    path = app.to_duckdb(tmp_path / "app.duckdb")
    con = duckdb.connect(str(path), read_only=True)
    tables = dict(con.execute("SELECT object_key, table_name FROM svc_sources").fetchall())
    for key, frames in app.items():
        ids = [r[0] for r in con.execute(f'SELECT id FROM "{tables[key]}"').fetchall()]
        assert ids == list(frames.main.index)
    types = dict(con.execute(f'SELECT column_name, data_type FROM information_schema.columns '
                             f"WHERE table_name = '{tables['object_3']}'").fetchall())
    assert types["field_29"] == "TIMESTAMP WITH TIME ZONE"
    assert types["field_26"] == "BOOLEAN" and types["field_28"] == "VARCHAR[]"
    assert types["field_24"] == "BIGINT" and types["field_31.total"] == "INTERVAL"
    for conn in app.connections:
        ctable = con.execute("SELECT table_name FROM svc_connections WHERE field = ?",
                             [conn.field]).fetchone()[0]
        rows = con.execute(
            f'SELECT w.id, c.connected_id, t.id FROM "{tables[conn.from_object]}" w '
            f'LEFT JOIN "{ctable}" c ON c.record_id = w.id '
            f'LEFT JOIN "{tables[conn.to_object]}" t ON t.id = c.connected_id').fetchall()
        joined = app.join(conn.from_object, conn.to_object, field=conn.field)
        want = sorted(zip(joined["id"], joined[f"{conn.label}.id"].astype(object)
                          .where(joined[f"{conn.label}.id"].notna(), None), strict=True))
        assert sorted((a, b) for a, b, _ in rows) == want
    # a value through the join: the part prices of each work order
    prices = con.execute(f'SELECT c.record_id, p.field_9 FROM "{tables["object_3"]}__parts" c '
                         f'JOIN "{tables["object_2"]}" p ON p.id = c.connected_id').df()
    joined = app.join("Work Orders", "Parts", how="inner")
    assert sorted(zip(prices["record_id"], prices["field_9"], strict=True)) == sorted(
        zip(joined["id"], joined["Parts.field_9"].astype(float), strict=True))
    kinds = dict(con.execute("SELECT constraint_type, count(*) FROM duckdb_constraints() "
                             "GROUP BY ALL").fetchall())
    assert kinds.get("PRIMARY KEY", 0) >= len(app) and kinds.get("FOREIGN KEY", 0) >= 3
    source = json.loads(con.execute("SELECT source FROM svc_sources WHERE object_key = "
                                    "'object_3'").fetchone()[0])
    assert source["object_key"] == "object_3"
    con.close()
    rw = duckdb.connect(str(path))
    with pytest.raises(duckdb.ConstraintException):
        rw.execute(f'INSERT INTO "{tables["object_3"]}__parts" VALUES (?, ?, ?)',
                   ["no-such-order", app["Parts"].main.index[0], "x"])
    rw.close()


def test_timer_intervals_in_sql_need_their_reserved_column_names_quoted(app: App,
                                                                       tmp_path: Path) -> None:
    # the intervals table keeps the frames' column names, "from" and "to": SQL words
    con = duckdb.connect(str(app.to_duckdb(tmp_path / "app.duckdb")), read_only=True)
    name = con.execute("SELECT table_name FROM svc_tables WHERE kind = 'intervals' "
                       "AND object_key = 'object_3' AND field = 'field_31'").fetchone()[0]
    rows = con.execute(f'SELECT record_id, "from", "to" FROM "{name}" '
                       'ORDER BY record_id, "from"').df()
    want = app["object_3"].tables["field_31"].sort_values(["record_id", "from"])
    assert len(rows) == len(want) > 0
    assert rows["record_id"].tolist() == want["record_id"].tolist()
    for col in ("from", "to"):
        assert pd.Series(rows[col]).dt.tz_convert("UTC").tolist() == \
            want[col].dt.tz_convert("UTC").tolist()
    types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                             "WHERE table_name = ?", [name]).fetchall())
    assert types["from"] == types["to"] == "TIMESTAMP WITH TIME ZONE"
    with pytest.raises(duckdb.ParserException):   # unquoted, they are keywords
        con.execute(f'SELECT from, to FROM "{name}"')
    con.close()
    # the Parquet datasets hold the same names, queried the same way
    out = app.to_parquet(tmp_path / "app")
    db = duckdb.connect()
    got = db.execute(f"SELECT count(*), min(\"from\") FROM read_parquet('{out}/{name}/*.parquet')"
                     ).fetchone()
    db.close()
    assert got[0] == len(want) and pd.Timestamp(got[1]) == want["from"].min()


def test_svc_tables_counts_the_rows_of_every_table_the_meta_tables_too(app: App,
                                                                     tmp_path: Path) -> None:
    con = duckdb.connect(str(app.to_duckdb(tmp_path / "app.duckdb")), read_only=True)
    said = dict(con.execute("SELECT table_name, rows FROM svc_tables").fetchall())
    counted = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
               for name in said}
    con.close()
    assert said == counted
    assert said["svc_connections"] == len(app.connections) > 0
    assert said["svc_sources"] == len(app) and said["svc_tables"] == len(said)


def test_to_parquet_is_a_directory_of_datasets_like_the_duckdb_tables(app: App,
                                                                     tmp_path: Path) -> None:
    out = app.to_parquet(tmp_path / "app")
    db = duckdb.connect()
    names = [r[0] for r in db.execute(
        f"SELECT table_name FROM read_parquet('{out}/svc_tables/*.parquet')").fetchall()]
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    for key, frames in app.items():
        n = db.execute(f"SELECT count(*) FROM read_parquet('{out}/"
                       f"{names[list(app.keys()).index(key)]}/*.parquet')").fetchone()[0]
        assert n == len(frames.main)


def test_snapshot_destinations_are_checked_before_anything_is_written(app: App,
                                                                      tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        app.to_duckdb(tmp_path / "missing" / "app.duckdb")
    assert not (tmp_path / "missing").exists()
    existing = tmp_path / "app.duckdb"
    existing.write_bytes(b"keep me")
    with pytest.raises(UsageError, match="exists; pass overwrite=True"):
        app.to_duckdb(existing)
    assert existing.read_bytes() == b"keep me"
    app.to_duckdb(existing, overwrite=True)
    con = duckdb.connect(str(existing), read_only=True)
    assert con.execute("SELECT count(*) FROM svc_sources").fetchone()[0] == len(app)
    con.close()
    with pytest.raises(UsageError, match="exists"):
        app.to_parquet(existing)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.duckdb"]  # nothing left over


def test_cli_export_app_to_duckdb(service: LocalService, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    creds = ["--app-id", service.app_id, "--api-key", service.api_key,
             "--base-url", service.base_url, "--rate-limit", "0", "--no-progress"]
    dest = tmp_path / "app.duckdb"
    assert cli_main(["export", "--app", "--duckdb", str(dest), *creds]) == 0
    out = json.loads(capsys.readouterr().out)
    con = duckdb.connect(str(dest), read_only=True)
    rows = dict(con.execute("SELECT object_key, rows FROM svc_tables WHERE kind = 'object'")
                .fetchall())
    assert rows == out["objects"]
    con.close()
    assert cli_main(["export", "--app", "--duckdb", str(dest), *creds]) == 2  # exists
    assert "overwrite" in capsys.readouterr().err


def test_demo_step_sql_over_the_file_matches_the_join(service: LocalService,
                                                      tmp_path: Path) -> None:
    from svc_frames.demo import whole_app_step

    c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
               rate_limit=0)
    lines: list[str] = []

    class Say:
        def __call__(self, text: str = "") -> None:
            lines.append(text)

        step = __call__

    made = whole_app_step(c, tmp_path, Say())
    assert made["duckdb"] == tmp_path / "app.duckdb" and made["duckdb"].exists()
    joined = made["app"].join("Work Orders", "Parts", how="inner")
    status = joined["Status"].fillna(BLANK)   # the demo prints a missing status so
    want = joined.groupby(status)["Parts.Unit Price"].sum().round(2)
    got = made["parts_cost"].set_index("status")["parts_cost"]
    assert dict(got) == pytest.approx(dict(want))
    assert any("parts cost by status" in line for line in lines)


def test_decimal_columns_become_duckdb_decimals(tmp_path: Path) -> None:
    """A frame holding decimals (an Arrow decimal column) keeps them exact in the file."""
    from decimal import Decimal

    import pyarrow as pa

    from svc_frames.frames import Source
    from svc_frames.kinds.base import FieldSpec

    main = pd.DataFrame(
        {"field_9": pd.array([Decimal("1.05"), None, Decimal("12345.67")],
                             dtype=pd.ArrowDtype(pa.decimal128(12, 2)))},
        index=pd.Index(["a", "b", "c"], dtype="string", name="id"))
    spec = FieldSpec("field_9", "currency", "Unit Price", object_key="object_2")
    app = App({"object_2": Frames(main, {}, Source("object", "object_2", [spec],
                                                   name="Parts"))})
    con = duckdb.connect(str(app.to_duckdb(tmp_path / "d.duckdb")), read_only=True)
    assert dict((r[0], r[1]) for r in con.execute("DESCRIBE parts").fetchall())[
        "field_9"] == "DECIMAL(12,2)"
    assert con.execute("SELECT sum(field_9) FROM parts").fetchone()[0] == Decimal("12346.72")
    con.close()


def test_join_with_partial_frames_on_either_side(app: App, client: Client) -> None:
    """A right frame missing some connected records leaves their columns empty; a left
    frame loaded with a limit joins its own records only; both as merge would."""
    some_parts = read_object(client, "object_2", limit=5, columns="keys")
    orders = app["Work Orders"]
    got = orders.join("field_41", some_parts)
    assert_same_rows(got, hand_merge(orders, "field_41", some_parts, "Parts"))
    linked = got["Parts.id"].notna()
    assert got.loc[linked, "Parts.field_8"].isna().any()  # links to parts not loaded
    few = read_object(client, "object_3", limit=7, columns="keys")
    got = few.join("field_41", app["Parts"], how="inner")
    assert_same_rows(got, hand_merge(few, "field_41", app["Parts"], "Parts", how="inner"))
    assert set(got["id"]) <= set(few.main.index)


def test_an_ambiguous_object_name_is_an_error_listing_the_keys() -> None:
    from svc_frames.lookup import match

    listed = [("object_1", "Contacts"), ("object_2", "Orders"), ("object_3", "Contacts"),
              ("object_4", "contacts")]
    with pytest.raises(UsageError, match=r"'Contacts' is ambiguous: 'Contacts' \(object_1\), "
                                         r"'Contacts' \(object_3\) share that name; name one "
                                         r"by its key"):
        match("Contacts", listed, "object", "x")
    with pytest.raises(UsageError, match="object_1.*object_3.*object_4"):
        match("CONTACTS", listed, "object", "x")
    assert match("contacts", listed, "object", "x") == "object_4"   # the exact name is one
    assert match("object_3", listed, "object", "x") == "object_3"
    assert match("orders", listed, "object", "x") == "object_2"
