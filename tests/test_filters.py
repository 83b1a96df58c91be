"""Filters: accepted forms, the builder, and every rejection before a request is sent."""

from __future__ import annotations

import json

import pytest

from svc_frames.errors import UsageError
from svc_frames.filters import Field, all_of, any_of, encode_filters, validate_filters


def test_bare_list_means_and() -> None:
    out = validate_filters([{"field": "field_3", "operator": "is", "value": "x"}])
    assert out == {"match": "and",
                   "rules": [{"field": "field_3", "operator": "is", "value": "x"}]}


def test_json_text_and_dict_forms_agree() -> None:
    rules = {"match": "or", "rules": [{"field": "field_1", "operator": "is blank"}]}
    assert validate_filters(json.dumps(rules)) == validate_filters(rules)


def test_builder_builds_the_service_json() -> None:
    flt = all_of(Field("field_3") == "open", Field("field_7") > 10,
                 Field("field_9").during_previous(3, "days"))
    assert flt["match"] == "and"
    assert flt["rules"][1] == {"field": "field_7", "operator": "higher than", "value": 10}
    assert flt["rules"][2]["range"] == 3 and flt["rules"][2]["type"] == "days"
    assert any_of(Field("field_1").is_blank())["match"] == "or"
    assert json.loads(encode_filters(flt) or "") == flt


def test_empty_rules_send_nothing() -> None:
    assert encode_filters([]) is None
    assert encode_filters(None) is None


@pytest.mark.parametrize("bad, culprit", [
    ([{"field": "field_1", "operator": "equals", "value": 1}], "equals"),
    ([{"field": "Name", "operator": "is", "value": 1}], "Name"),
    ([{"field": "field_1.x", "operator": "is", "value": 1}], "field_1.x"),
    ([{"field": "field_1", "operator": "is"}], "needs a value"),
    ([{"field": "field_1", "operator": "is during the next", "range": 2, "type": "eons"}],
     "eons"),
    ({"match": "xor", "rules": []}, "xor"),
    ({"match": "and", "rules": [], "sort": 1}, "sort"),
    ("{not json", "not valid JSON"),
    (42, "int"),
])
def test_bad_filters_name_the_culprit(bad: object, culprit: str) -> None:
    with pytest.raises(UsageError) as exc:
        validate_filters(bad)  # type: ignore[arg-type]
    assert culprit in str(exc.value)


def test_builder_rejects_bad_key_where_written() -> None:
    with pytest.raises(UsageError, match="Customer"):
        Field("Customer")
