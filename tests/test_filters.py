"""Filters: accepted forms, the builder, and every rejection before a request is sent."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import warnings
from collections import Counter
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

from svc_frames.errors import FilterWarning, UsageError
from svc_frames.filters import Field, all_of, any_of
from svc_frames.loaders import read_object
from svc_frames.query import format_filter_date, validate_filters
from svc_frames.query.prepare import encode_filters, prepare_filters
from svc_frames.schema import Schema

if TYPE_CHECKING:
    from svc_frames.records import Client
    from svc_frames.server import LocalService


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
    ([{"field": "", "operator": "is", "value": 1}], "by key ('field_N') or label"),
    ([{"field": 7, "operator": "is", "value": 1}], "got 7"),
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
    with pytest.raises(UsageError, match="by key"):
        Field("")


def test_a_label_without_the_schema_is_never_sent() -> None:
    """A field named by label needs the schema to find its key: without one it is refused,
    naming it, rather than sent for the service to refuse."""
    from svc_frames.query import Query

    rule = Field("Customer").is_("x")
    with pytest.raises(UsageError, match="'Customer' is named by label"):
        Query.of([rule])


# ---- dates in the hosted format, the hosted operators, schema warnings -------
CHICAGO = ZoneInfo("America/Chicago")


@pytest.mark.parametrize("value, tz, with_time, expected", [
    (dt.date(2024, 1, 31), None, None, "01/31/2024"),
    (dt.datetime(2024, 1, 31), None, None, "01/31/2024"),           # naive midnight: a day
    (dt.datetime(2024, 1, 31, 15, 5, 59), None, None, "01/31/2024 3:05pm"),
    (dt.datetime(2024, 1, 31, 0, 0), None, True, "01/31/2024 12:00am"),
    (dt.datetime(2024, 1, 31, 12, 30), None, False, "01/31/2024"),
    (pd.Timestamp("2024-01-31 09:30"), CHICAGO, None, "01/31/2024 9:30am"),  # naive: app-local
    (pd.Timestamp("2024-01-31 20:00", tz="UTC"), CHICAGO, None, "01/31/2024 2:00pm"),
    (pd.Timestamp("2024-02-01 03:00", tz="UTC"), CHICAGO, False, "01/31/2024"),
    (dt.datetime(2024, 2, 1, 3, 0, tzinfo=ZoneInfo("Europe/Paris")), CHICAGO, None,
     "01/31/2024 8:00pm"),
    (dt.datetime(2024, 7, 1, 3, 0, tzinfo=dt.timezone.utc), CHICAGO, None,
     "06/30/2024 10:00pm"),                                          # daylight saving time
    (pd.Timestamp("2024-02-01 03:00", tz="UTC"), None, None, "02/01/2024 3:00am"),  # UTC
    ("2024-01-31", CHICAGO, None, "01/31/2024"),
    ("2024-01-31T15:30:00Z", CHICAGO, None, "01/31/2024 9:30am"),
    ("2024-01-31 15:30:00+01:00", CHICAGO, None, "01/31/2024 8:30am"),
    ("2024-01-31T15:30", CHICAGO, None, "01/31/2024 3:30pm"),
    ("1/5/2024", None, None, "01/05/2024"),
    ("01/05/2024 4:14PM", None, None, "01/05/2024 4:14pm"),
    ("01/05/2024 16:14", None, None, "01/05/2024 4:14pm"),
])
def test_every_date_input_gives_the_hosted_format(value: Any, tz: dt.tzinfo | None,
                                                  with_time: bool | None, expected: str) -> None:
    assert format_filter_date(value, tz, with_time) == expected


@pytest.mark.parametrize("bad", ["soon", "2024-13-01", "31/01/2024", "01/31/24", pd.NaT, 42,
                                 None, "01/31/2024 13:00pm"])
def test_an_unreadable_date_is_a_usage_error_naming_it(bad: Any) -> None:
    with pytest.raises(UsageError, match=re.escape(repr(bad)[:20])):
        format_filter_date(bad)
    if bad is not None:
        with pytest.raises(UsageError) as exc:
            Field("field_29").is_after(bad)
        assert "field_29" in str(exc.value) and repr(bad)[:20] in str(exc.value)


def test_the_builder_sends_the_hosted_format_without_a_word() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Field("field_29").is_after(dt.date(2024, 1, 31))["value"] == "01/31/2024"
        assert Field("field_29").is_before("2024-01-31")["value"] == "01/31/2024"
        assert Field("field_29").is_(pd.Timestamp("2024-01-31"))["value"] == "01/31/2024"
        assert Field("field_29").lower_than(dt.date(2024, 2, 1))["value"] == "02/01/2024"
        flt = all_of(Field("field_29").is_after(dt.date(2024, 1, 31)))
        assert encode_filters(flt) == ('{"match":"and","rules":[{"field":"field_29",'
                                       '"operator":"is after","value":"01/31/2024"}]}')


def test_a_time_warns_that_the_hosted_service_may_ignore_it() -> None:
    with pytest.warns(FilterWarning, match="does not reliably honour the time"):
        rule = Field("field_29").is_after(dt.datetime(2024, 1, 31, 15, 0))
    assert rule["value"] == "01/31/2024 3:00pm"


def test_an_iso_string_in_a_hand_written_rule_is_converted_with_a_warning() -> None:
    rules = [{"field": "field_29", "operator": "is after", "value": "2024-01-31"},
             {"field": "field_29", "operator": "is", "value": {"date": "2024-02-03"}}]
    with pytest.warns(FilterWarning) as caught:
        out = validate_filters(rules)
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "'is after' on field_29: the ISO date '2024-01-31' is sent in the hosted format "
        "MM/DD/YYYY (an ISO date there silently matches nothing)",
        "'is' on field_29: the ISO date '2024-02-03' is sent in the hosted format "
        "MM/DD/YYYY (an ISO date there silently matches nothing)"]
    assert caught[0].filename == __file__  # shown at the caller's line
    assert out is not None
    assert [r["value"] for r in out["rules"]] == ["01/31/2024", {"date": "02/03/2024"}]
    with pytest.warns(FilterWarning, match="ISO date"):
        text = encode_filters(json.dumps(rules))
    assert "2024-01-31" not in (text or "") and "01/31/2024" in (text or "")


def test_an_aware_time_waits_for_the_application_timezone() -> None:
    rule = Field("field_29").is_before(pd.Timestamp("2024-02-01 03:00", tz="UTC"))
    assert isinstance(rule["value"], dt.datetime)  # not converted before the tz is known
    with pytest.warns(FilterWarning, match="time"):
        out = prepare_filters([rule], None, CHICAGO)
    assert out is not None and out["rules"][0]["value"] == "01/31/2024 9:00pm"
    with pytest.warns(FilterWarning) as caught:
        text = encode_filters([rule])   # no timezone known: UTC, and says so
    assert "timezone is unknown" in str(caught[0].message)
    assert '"02/01/2024 3:00am"' in (text or "")


def test_the_hosted_operators_in_the_builder() -> None:
    f = Field("field_29")
    assert Field("field_28").is_any(["HVAC", "Safety"]) == {
        "field": "field_28", "operator": "is any", "value": ["HVAC", "Safety"]}
    assert Field("field_28").is_any(("A",))["value"] == ["A"]
    assert f.is_before_previous(3, "days") == {"field": "field_29", "operator":
                                               "is before the previous", "range": 3,
                                               "type": "days"}
    assert f.is_after_next(2, "weeks")["operator"] == "is after the next"
    for method, op in [(f.is_today_or_before, "is today or before"),
                       (f.is_today_or_after, "is today or after"),
                       (f.is_before_today, "is before today"),
                       (f.is_after_today, "is after today"),
                       (f.is_before_current_time, "is before current time"),
                       (f.is_after_current_time, "is after current time")]:
        assert method() == {"field": "field_29", "operator": op}
    assert Field("field_34").near(30.27, -97.74, 5) == {
        "field": "field_34", "operator": "near", "value": "30.27,-97.74", "range": 5}


@pytest.mark.parametrize("bad, culprits", [
    ([{"field": "field_29", "operator": "is before the previous", "type": "days"}],
     ["field_29", "range", "None"]),
    ([{"field": "field_29", "operator": "is after the next", "range": 2}],
     ["field_29", "type"]),
    ([{"field": "field_29", "operator": "is before the previous", "range": -1,
       "type": "days"}], ["field_29", "-1"]),
    ([{"field": "field_28", "operator": "is any", "value": "HVAC"}], ["field_28", "'HVAC'"]),
    ([{"field": "field_28", "operator": "is any", "value": []}], ["field_28", "[]"]),
    ([{"field": "field_28", "operator": "is any"}], ["field_28", "needs a value"]),
    ([{"field": "field_28", "operator": "is any", "value": [1]}], ["field_28", "[1]"]),
    ([{"field": "field_29", "operator": "is after", "value": "soon"}], ["field_29", "'soon'"]),
    ([{"field": "field_29", "operator": "is before", "value": 1706659200000}],
     ["field_29", "1706659200000"]),
    ([{"field": "field_16", "operator": "higher than", "value": math.inf}],
     ["field_16", "inf"]),
    ([{"field": "field_34", "operator": "near", "value": "30,-97", "range": 1e400}],
     ["field_34", "inf"]),
])
def test_bad_hosted_operator_rules_name_field_and_value(bad: Any, culprits: list[str]) -> None:
    with pytest.raises(UsageError) as exc:
        validate_filters(bad)
    for culprit in culprits:
        assert culprit in str(exc.value), (culprit, str(exc.value))


def test_is_any_builder_refuses_a_text() -> None:
    with pytest.raises(UsageError, match="field_28.*'HVAC'"):
        Field("field_28").is_any("HVAC")


# ---- against the local service's schema and records ------------------------------------------
def test_schema_warnings_name_the_valid_options(client: Client) -> None:
    app = Schema.of(client.schema()).all_fields()
    with pytest.warns(FilterWarning, match=r"field_27 \(Status\) has no option 'Closed'; its "
                                           r"options are 'Open', 'In Progress'"):
        prepare_filters([Field("field_27").is_("Closed")], app, CHICAGO)
    with pytest.warns(FilterWarning, match="did you mean 'Open'"):
        prepare_filters([Field("field_27").is_any(["open"])], app, CHICAGO)
    with pytest.warns(FilterWarning, match="'Heating'"):
        prepare_filters([Field("field_28").is_("Heating")], app, CHICAGO)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # valid rules: not a word
        prepare_filters([Field("field_27").is_any(["Open", "Done"]), Field("field_16") > 10,
                         Field("field_26").is_(True), Field("field_29").is_today()], app,
                        CHICAGO)


@pytest.mark.parametrize(("rule", "says"), [
    (Field("field_12").is_today(), ["field_12 (Title) is a short_text field, which does not "
                                    "take 'is today'", "'starts with'", "'lower than'"]),
    (Field("field_16").during_previous(3, "days"), ["field_16 (Quantity)", "'higher than'"]),
    (Field("field_16").is_any(["1"]), ["field_16 (Quantity)", "does not take 'is any'"]),
    (Field("field_27").near(30.3, -97.7), ["field_27 (Status)", "'is any'"]),
    (Field("Status").is_after("2024-01-31"), ["field_27 (Status)", "'is after'"]),
    (Field("field_16").higher_than("ten"), ["field_16 (Quantity) is a number field; 'ten' "
                                            "is not a number"]),
    (Field("field_26").is_("maybe"), ["field_26 (Urgent) is a yes/no field", "'maybe'"]),
])
def test_the_schema_refuses_an_operator_or_value_the_field_does_not_take(
        client: Client, rule: dict[str, Any], says: list[str]) -> None:
    """With the schema, an operator the field's kind does not take, or a value of the wrong
    kind, is a UsageError naming the field (and the operators it takes): never a warning."""
    app = Schema.of(client.schema()).all_fields()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UsageError) as err:
            prepare_filters([rule], app, CHICAGO)
    for words in says:
        assert words in str(err.value), (words, str(err.value))
    assert err.value.field is not None and err.value.field in says[0]


def test_a_load_with_an_operator_the_field_does_not_take_sends_nothing(
        service: LocalService) -> None:
    """The loader refuses it before any request but the schema's: a new client asks for the
    schema alone, and once it holds the schema nothing at all is sent."""
    from svc_frames.records import Client

    fresh = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                   rate_limit=0)
    service.request_log.clear()
    for flt in ([Field("Title").is_before_today()],
                {"match": "or", "rules": [{"field": "field_29", "operator": "is any",
                                           "value": ["x"]}]}):
        with pytest.raises(UsageError, match="does not take"):
            read_object(fresh, "Work Orders", filters=flt, progress=False, columns="keys")
    assert service.request_log.count() == 1, service.request_log.counts()
    assert service.request_log.count(method="GET", path_prefix="/v1/applications") == 1
    service.request_log.clear()
    with pytest.raises(UsageError, match="does not take"):
        read_object(fresh, "object_3", filters=[Field("field_26").near(30.3, -97.7)],
                    progress=False, columns="keys")
    assert service.request_log.count() == 0, service.request_log.counts()


def test_a_value_on_a_date_field_is_read_as_a_date_with_the_schema(client: Client) -> None:
    app = Schema.of(client.schema()).all_fields()
    with pytest.warns(FilterWarning, match="ISO date"):
        out = prepare_filters([{"field": "field_29", "operator": "is", "value": "2025-06-01"}],
                              app, CHICAGO)
    assert out is not None and out["rules"][0]["value"] == "06/01/2025"
    for bad in ("soon", 1706659200000, True):
        with pytest.raises(UsageError, match=f"field_29.*{bad!r}"):
            prepare_filters([{"field": "field_29", "operator": "is", "value": bad}], app,
                            CHICAGO)
    # a text field's ISO-looking text is text
    out = prepare_filters([{"field": "field_12", "operator": "is", "value": "2025-06-01"}],
                          app, CHICAGO)
    assert out is not None and out["rules"][0]["value"] == "2025-06-01"


def _busy_day(client: Client) -> dt.date:
    frames = read_object(client, "object_3", progress=False, columns="keys")
    due = frames.main["field_29"].dropna().dt.tz_convert(CHICAGO)
    return Counter(due.dt.date).most_common(1)[0][0]


def _ids_of(client: Client, flt: Any) -> set[str]:
    return set(read_object(client, "object_3", filters=flt, progress=False, columns="keys").main.index)


def test_loads_send_dates_in_the_hosted_format(service: LocalService, client: Client) -> None:
    """Over HTTP: every date input reaches the service as MM/DD/YYYY and filters as the
    hosted date would (an ISO date sent as is would match nothing)."""
    day = _busy_day(client)
    hosted = [{"field": "field_29", "operator": "is", "value": day.strftime("%m/%d/%Y")}]
    expected = _ids_of(client, hosted)
    assert expected
    for value in (day, day.isoformat(), pd.Timestamp(day), dt.datetime.combine(day, dt.time())):
        assert _ids_of(client, [Field("field_29").is_(value)]) == expected, value
    with pytest.warns(FilterWarning, match="ISO date"):
        got = _ids_of(client, [{"field": "field_29", "operator": "is",
                                "value": day.isoformat()}])
    assert got == expected
    # an aware instant is put in the application's timezone (Chicago) before its date is sent
    late = pd.Timestamp(dt.datetime.combine(day, dt.time(22, 0)), tz=CHICAGO).tz_convert("UTC")
    assert late.date() != day  # in UTC it is the next day already
    with pytest.warns(FilterWarning, match="time"):
        got = _ids_of(client, [Field("field_29").is_(late)])
    assert got == expected


def test_a_filtered_load_reads_the_schema_once(service: LocalService) -> None:
    from svc_frames.records import Client

    fresh = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
                   rate_limit=0)
    service.request_log.clear()
    read_object(fresh, "object_3", filters=[Field("field_27").is_any(["Open"])],
                progress=False, columns="keys")
    assert service.request_log.count(method="GET", path_prefix="/v1/applications") == 1


def test_a_load_validates_its_filter_once(client: Client,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """One filter goes options -> prepare -> encode once: no stage checks it again."""
    from svc_frames import query

    seen: list[str] = []
    original = query.validate_rule

    def counted(rule: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        seen.append(str(rule.get("field")) if isinstance(rule, dict) else repr(rule))
        return original(rule, *args, **kwargs)

    monkeypatch.setattr(query, "validate_rule", counted)
    read_object(client, "object_3", progress=False, columns="keys",
                filters=[{"field": "Status", "operator": "is", "value": "Open"}])
    assert seen.count("Status") == 1, seen


def test_hosted_operators_filter_through_the_loader(client: Client) -> None:
    frames = read_object(client, "object_3", progress=False, columns="keys")
    main = frames.main
    got = _ids_of(client, [Field("field_27").is_any(["Open", "Done"])])
    assert got == set(main.index[main["field_27"].isin(["Open", "Done"])])
    assert 0 < len(got) < len(main)
    got = _ids_of(client, [Field("field_29").is_before_today()])
    today = pd.Timestamp.now(tz=CHICAGO).normalize()
    assert got == set(main.index[main["field_29"] < today])
    with pytest.warns(FilterWarning, match="has no option 'Closed'"):
        assert _ids_of(client, [Field("field_27").is_("Closed")]) == set()


def test_filters_as_people_write_them(service: LocalService) -> None:
    """One condition, a list (all must hold), & and |, fields by key or label (any case):
    the same records as the key-and-wire form; a typo is refused naming the target and the
    closest field, with no request but the schema's."""
    from svc_frames import Client, read_object

    c = Client(service.app_id, api_key=service.api_key, base_url=service.base_url,
               rate_limit=0)

    def ids(filters: object) -> list[str]:
        return sorted(read_object(c, "Work Orders", filters=filters, progress=False, columns="keys").main.index)

    wire = ids({"match": "and", "rules": [
        {"field": "field_27", "operator": "is", "value": "Open"},
        {"field": "field_26", "operator": "is", "value": True}]})
    assert ids([Field("Status").is_("Open"), Field("urgent").is_(True)]) == wire
    assert ids(Field("Status").is_("Open") & Field("Urgent").is_(True)) == wire
    assert ids(Field("status").is_("Open")) == ids({"field": "field_27", "operator": "is",
                                                    "value": "Open"})
    either = ids(Field("Status").is_("Open") | Field("Status").is_("Done"))
    assert either == ids(any_of(Field("field_27").is_("Open"), Field("field_27").is_("Done")))
    with pytest.raises(UsageError, match="cannot be mixed"):
        (Field("Status").is_("Open") & Field("Urgent").is_(True)) | Field("Status").is_("Done")
    c.schema()
    before = service.request_log.count(path_prefix="/v1/objects/object_3/records")
    with pytest.raises(UsageError, match=r"Work Orders.*did you mean 'Status' \(field_27\)"):
        read_object(c, "object_3", filters=Field("Stauts").is_("Open"), progress=False, columns="keys")
    assert service.request_log.count(path_prefix="/v1/objects/object_3/records") == before
