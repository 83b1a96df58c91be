"""The name mapping (svc_frames/names.py): every name made from the application is unique
after each target's normalisation, stable, and a single component inside its directory."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from svc_frames.kinds import FieldSpec
from svc_frames.labels import label_map
from svc_frames.names import (
    MAX_PATH_BYTES,
    MAX_SQL_CHARS,
    fold_case,
    path_names,
    sql_name,
    unique_labels,
)

# names as an application may hold them: separators, dots, quotes, controls, unicode,
# case variants, SQL words, the record id
HOSTILE = st.one_of(
    st.sampled_from(["id", "ID", "Id", "Status", "status", ".", "..", "In/Out", "In Out",
                     "a\\b", "CON", "nul.txt", "select", "Site", "Site.city", "", " ",
                     "x" * 300, "é" * 200, "\x00", "a\rb", "Ä", "ä", "ß", "SS", '"q"']),
    st.text(min_size=0, max_size=40),
)
KINDS = ["short_text", "address", "date_time", "timer", "name", "connection", "email"]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(HOSTILE, st.sampled_from(KINDS)), min_size=1, max_size=12))
def test_frame_columns_are_unique_case_insensitively_and_never_the_id(
        labels: list[tuple[str, str]]) -> None:
    fields = [FieldSpec(f"field_{i + 1}", kind, name) for i, (name, kind) in enumerate(labels)]
    names = label_map(fields)
    from svc_frames.kinds import codec_for

    columns = [names[f.key] + c[len(f.key):] for f in fields for c in codec_for(f).columns(f)]
    folded = [fold_case(c) for c in columns]
    assert len(set(folded)) == len(folded), columns
    assert "id" not in folded
    assert label_map(list(reversed(fields))) == names   # stable: order does not matter
    # a field keeps its own label whenever nothing clashes with it
    solo = [f for f in fields if sum(fold_case(g.label) == fold_case(f.label) for g in fields) == 1
            and "." not in f.label and fold_case(f.label) != "id"
            and not any(fold_case(g.label).startswith(fold_case(f.label) + ".") for g in fields)]
    for f in solo:
        if not any(fold_case(names[g.key] + c[len(g.key):]) == fold_case(f.label) for g in fields
                   if g is not f for c in codec_for(g).columns(g)):
            assert names[f.key] == f.label


@settings(max_examples=150, deadline=None)
@given(st.lists(HOSTILE, min_size=1, max_size=12, unique=True))
def test_path_names_are_unique_single_components_inside_the_directory(
        names: list[str]) -> None:
    out = path_names(names)
    assert set(out) == set(names)
    folded = [fold_case(v) for v in out.values()]
    assert len(set(folded)) == len(folded), out
    root = Path("/tmp/svc-root")
    for n, p in out.items():
        assert p not in ("", ".", "..") and not p.startswith(".")
        assert "/" not in p and "\\" not in p and "\x00" not in p
        assert not any(ord(ch) < 32 for ch in p)
        assert len(p.encode("utf-8")) <= MAX_PATH_BYTES
        assert (root / p).parent == root and Path(p).name == p
        assert path_names(reversed(names))[n] == p   # stable
        assert p.split(".")[0].casefold() not in ("con", "nul", "prn", "aux")


@settings(max_examples=100, deadline=None)
@given(HOSTILE)
def test_sql_names_are_bounded_lower_case_identifiers(name: str) -> None:
    out = sql_name(name)
    assert out == sql_name(name)
    assert 0 < len(out) <= MAX_SQL_CHARS and out == out.lower()
    assert all(ch.isascii() and (ch.isalnum() or ch == "_") for ch in out)
    assert not out[0].isdigit()


def test_the_collisions_of_the_report() -> None:
    fields = [FieldSpec("field_1", "short_text", "ID"), FieldSpec("field_2", "short_text",
                                                                   "Status"),
              FieldSpec("field_3", "short_text", "status"),
              FieldSpec("field_4", "address", "Site"),
              FieldSpec("field_5", "short_text", "Site.city"),
              FieldSpec("field_6", "connection", "In/Out"),
              FieldSpec("field_7", "connection", "In Out")]
    names = label_map(fields)
    assert names == {"field_1": "ID (field_1)", "field_2": "Status (field_2)",
                     "field_3": "status (field_3)", "field_4": "Site (field_4)",
                     "field_5": "Site.city (field_5)", "field_6": "In/Out",
                     "field_7": "In Out"}
    dirs = path_names(["In/Out", "In Out", ".", ".."])
    assert len({fold_case(d) for d in dirs.values()}) == 4
    assert dirs["In/Out"] != dirs["In Out"] and dirs["."] != "." and dirs[".."] != ".."
    assert unique_labels([("field_1", "field_2", [""]), ("field_2", "X", [""])]) == {
        "field_1": "field_2", "field_2": "X"}
