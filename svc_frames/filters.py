"""The filter builder: ``Field`` conditions, ``all_of`` and ``any_of``, which make the
service's JSON rules (docs/hosted-behaviour.md §1.2: ``{"match": "and"|"or", "rules":
[{"field": "field_3", "operator": "is", "value": "x"}]}``).

Each condition is checked where it is written (``query.validate_rule``): an unknown
operator, a date that cannot be read, a relative date rule without its ``range``/``type``,
``is any`` without a list each raise :class:`UsageError` naming the field and the value;
date values are put in the hosted format (``MM/DD/YYYY``) at once, except aware times,
which wait for the application's timezone. What needs the application (a label looked up,
the field's kind checked, dates in its timezone) is ``query.prepare``, which every loader
runs once before its first page; validation and encoding without the application are
``svc_frames.query``.

Usage::

    from svc_frames.filters import Field, all_of, any_of
    flt = all_of(Field("field_3").is_("open"), Field("field_7").higher_than(10),
                 Field("field_29").is_after(datetime.date(2024, 1, 31)),
                 Field("field_28").is_any(["HVAC", "Plumbing"]))
    read_object(client, "object_1", filters=flt)
    read_object(client, "object_1", filters=[{"field": "field_3", "operator": "is blank"}])
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import UsageError
from .query import FilterSet, Rule, validate_filters, validate_rule

__all__ = ["DateLike", "Field", "all_of", "any_of"]


def all_of(*rules: Mapping[str, Any]) -> FilterSet:
    """Records matching every rule (a filter set with ``"match": "and"``).

    Parameters
    ----------
    *rules : dict
        Rules (``Field(...).is_(...)`` or hand-written dicts), or nested filter sets.

    Returns
    -------
    dict
        ``{"match": "and", "rules": [...]}``, checked; what ``filters=`` takes.

    Raises
    ------
    UsageError
        A rule that is not valid (unknown operator, a value it needs missing, ...),
        naming the field.

    Examples
    --------
    >>> flt = all_of(Field("Status").is_("Open"), Field("Quantity").higher_than(100))
    >>> flt["match"], len(flt["rules"])
    ('and', 2)
    >>> len(read_object(client, "Work Orders", filters=flt))
    9
    """
    out = validate_filters({"match": "and", "rules": list(rules)})
    assert out is not None
    return out


def any_of(*rules: Mapping[str, Any]) -> FilterSet:
    """Records matching at least one rule (a filter set with ``"match": "or"``).

    Parameters
    ----------
    *rules : dict
        Rules (``Field(...).is_(...)`` or hand-written dicts), or nested filter sets.

    Returns
    -------
    dict
        ``{"match": "or", "rules": [...]}``, checked; what ``filters=`` takes.

    Raises
    ------
    UsageError
        A rule that is not valid (unknown operator, a value it needs missing, ...),
        naming the field.

    Examples
    --------
    >>> flt = any_of(Field("Status").is_("Open"), Field("Status").is_("Done"))
    >>> len(read_object(client, "Work Orders", filters=flt))
    15
    """
    out = validate_filters({"match": "or", "rules": list(rules)})
    assert out is not None
    return out


DateLike = dt.date | str
"""A date value: ``date``, ``datetime``, ``pd.Timestamp``, an ISO string or 'MM/DD/YYYY'."""


class Field:
    """Filter rules for one field: ``Field("Status").is_("Open")`` is a rule dict.

    Each condition method (``is_``, ``contains``, ``higher_than``, ``is_after``,
    ``during_previous``, ``near``, ...) returns one rule, a dict ``{"field", "operator",
    "value"}`` (plus ``range``/``type`` for relative dates and ``near``), which the
    loaders' ``filters=`` take alone, in a list (every rule), or combined with ``all_of``
    and ``any_of``. ``==``, ``!=``, ``>`` and ``<`` are ``is_``, ``is_not``,
    ``higher_than`` and ``lower_than``; ``>=`` and ``<=``, which the service has no
    operator for, are ``at_least`` and ``at_most``: two rules of which one holds, which
    combine with ``|`` (the service takes no group inside an ``&``).

    A key is checked at once, so a typo fails where it is written; so is a value (a date
    that cannot be read, ``is_any`` without a list, a period that is not one of ``days``,
    ``weeks``, ``months``, ``years``): each raises UsageError naming the field. Date values
    are put in the hosted format (``MM/DD/YYYY``) at once, except aware times, which wait
    for the application's timezone (the loaders convert them before the request). A label
    is looked up in the schema when the load prepares its filters: there, an unknown field,
    an operator the field's kind does not take, or a value of the wrong kind is a
    UsageError, before any request.

    Parameters
    ----------
    key : str
        A field key (``field_27``) or label (``Status``).

    Attributes
    ----------
    key : str
        The key or label given.

    Raises
    ------
    UsageError
        From the constructor or a condition method: a bad key, value or period.

    Examples
    --------
    >>> Field("Status").is_("Open")
    {'field': 'Status', 'operator': 'is', 'value': 'Open'}
    >>> read_object(client, "Work Orders", filters=Field("Status") == "Open").main.shape
    (11, 55)
    """

    def __init__(self, key: str) -> None:
        # a key or a label: a label is looked up in the schema when the load prepares
        # its filters (before any request but the schema's)
        validate_rule({"field": key, "operator": "is blank"}, "Field")
        self.key = key

    def _rule(self, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
        rule: dict[str, Any] = {"field": self.key, "operator": op}
        if value is not None:
            rule["value"] = value
        rule.update(extra)
        return validate_rule(Rule(rule), f"Field({self.key!r})", hand_written=False)

    def is_(self, value: Any) -> dict[str, Any]:
        """Records whose value is ``value`` (``Field(...) == value`` too).

        Parameters
        ----------
        value : object
            The value to compare with (a choice, a text, a number...).

        Examples
        --------
        >>> Field("Status").is_("Open")
        {'field': 'Status', 'operator': 'is', 'value': 'Open'}
        """
        return self._rule("is", value)

    def is_not(self, value: Any) -> dict[str, Any]:
        """Records whose value is not ``value`` (``Field(...) != value`` too).

        Parameters
        ----------
        value : object
            The value to compare with (a choice, a text, a number...).

        Examples
        --------
        >>> Field("field_27").is_not("Done")
        {'field': 'field_27', 'operator': 'is not', 'value': 'Done'}
        """
        return self._rule("is not", value)

    def is_any(self, options: Sequence[str]) -> dict[str, Any]:
        """Records whose multiple choice holds any of ``options``.

        Parameters
        ----------
        options : list of str
            The choices (a list: a text is refused).

        Examples
        --------
        >>> Field("field_28").is_any(["HVAC", "Safety"])
        {'field': 'field_28', 'operator': 'is any', 'value': ['HVAC', 'Safety']}
        """
        if isinstance(options, str):
            raise UsageError(f"Field({self.key!r}): 'is any' on {self.key} needs a list of "
                             f"options, got the text {options!r}", field=self.key)
        return self._rule("is any", options)

    def contains(self, value: Any) -> dict[str, Any]:
        """Records whose value contains ``value``.

        Parameters
        ----------
        value : object
            The value to compare with (a choice, a text, a number...).

        Examples
        --------
        >>> Field("field_12").contains("pump")
        {'field': 'field_12', 'operator': 'contains', 'value': 'pump'}
        """
        return self._rule("contains", value)

    def does_not_contain(self, value: Any) -> dict[str, Any]:
        """Records whose value does not contain ``value``.

        Parameters
        ----------
        value : object
            The value to compare with (a choice, a text, a number...).

        Examples
        --------
        >>> Field("field_12").does_not_contain("pump")
        {'field': 'field_12', 'operator': 'does not contain', 'value': 'pump'}
        """
        return self._rule("does not contain", value)

    def starts_with(self, value: str) -> dict[str, Any]:
        """Records whose text starts with ``value``.

        Parameters
        ----------
        value : str
            The text.

        Examples
        --------
        >>> Field("field_12").starts_with("Fix")
        {'field': 'field_12', 'operator': 'starts with', 'value': 'Fix'}
        """
        return self._rule("starts with", value)

    def ends_with(self, value: str) -> dict[str, Any]:
        """Records whose text ends with ``value``.

        Parameters
        ----------
        value : str
            The text.

        Examples
        --------
        >>> Field("field_33").ends_with("example.com")
        {'field': 'field_33', 'operator': 'ends with', 'value': 'example.com'}
        """
        return self._rule("ends with", value)

    def is_blank(self) -> dict[str, Any]:
        """Records whose value is blank.

        Examples
        --------
        >>> Field("field_45").is_blank()
        {'field': 'field_45', 'operator': 'is blank'}
        """
        return self._rule("is blank")

    def is_not_blank(self) -> dict[str, Any]:
        """Records whose value is not blank.

        Examples
        --------
        >>> Field("field_45").is_not_blank()
        {'field': 'field_45', 'operator': 'is not blank'}
        """
        return self._rule("is not blank")

    def higher_than(self, value: float | int | str | dt.date) -> dict[str, Any]:
        """Records whose number (or date) is higher than ``value`` (``>`` too).

        Parameters
        ----------
        value : float, int, str or date
            The bound (a date on a date field).

        Examples
        --------
        >>> Field("field_16").higher_than(100)
        {'field': 'field_16', 'operator': 'higher than', 'value': 100}
        """
        return self._rule("higher than", value)

    def lower_than(self, value: float | int | str | dt.date) -> dict[str, Any]:
        """Records whose number (or date) is lower than ``value`` (``<`` too).

        Parameters
        ----------
        value : float, int, str or date
            The bound (a date on a date field).

        Examples
        --------
        >>> Field("field_16") < 10
        {'field': 'field_16', 'operator': 'lower than', 'value': 10}
        """
        return self._rule("lower than", value)

    def at_least(self, value: float | int | str | dt.date) -> FilterSet:
        """Records whose number (or date) is ``value`` or higher (``>=`` too).

        The service has no such operator: this is ``higher_than(value) | is_(value)``, one
        filter of two rules of which one holds. It combines with ``|``; within an ``&`` the
        service would need a group, so there it is a UsageError.

        Parameters
        ----------
        value : float, int, str or date
            The bound (a date on a date field).

        Returns
        -------
        dict
            ``{"match": "or", "rules": [...]}``, what ``filters=`` takes.

        Examples
        --------
        >>> flt = Field("field_25") >= 4
        >>> flt["match"], [r["operator"] for r in flt["rules"]]
        ('or', ['higher than', 'is'])
        """
        return any_of(self.higher_than(value), self.is_(value))

    def at_most(self, value: float | int | str | dt.date) -> FilterSet:
        """Records whose number (or date) is ``value`` or lower (``<=`` too).

        ``lower_than(value) | is_(value)``, as ``at_least`` explains.

        Parameters
        ----------
        value : float, int, str or date
            The highest value kept (a date on a date field).

        Returns
        -------
        dict
            Two rules of which one holds (``"match": "or"``).

        Examples
        --------
        >>> Field("field_25").at_most(2)["rules"][0]
        {'field': 'field_25', 'operator': 'lower than', 'value': 2}
        """
        return any_of(self.lower_than(value), self.is_(value))

    def is_before(self, value: DateLike) -> dict[str, Any]:
        """Records whose date is before ``value``.

        Parameters
        ----------
        value : date, datetime, pandas.Timestamp or str
            The date (ISO or ``MM/DD/YYYY``); sent as ``MM/DD/YYYY``.

        Examples
        --------
        >>> Field("field_29").is_before("2024-01-31")
        {'field': 'field_29', 'operator': 'is before', 'value': '01/31/2024'}
        """
        return self._rule("is before", value)

    def is_after(self, value: DateLike) -> dict[str, Any]:
        """Records whose date is after ``value``.

        Parameters
        ----------
        value : date, datetime, pandas.Timestamp or str
            The date (ISO or ``MM/DD/YYYY``); sent as ``MM/DD/YYYY``.

        Examples
        --------
        >>> Field("field_29").is_after(pd.Timestamp("2024-01-31"))
        {'field': 'field_29', 'operator': 'is after', 'value': '01/31/2024'}
        """
        return self._rule("is after", value)

    def is_today(self) -> dict[str, Any]:
        """Records whose date is today (in the application's timezone).

        Examples
        --------
        >>> Field("field_29").is_today()
        {'field': 'field_29', 'operator': 'is today'}
        """
        return self._rule("is today")

    def is_before_today(self) -> dict[str, Any]:
        """Records whose date is before today.

        Examples
        --------
        >>> Field("field_29").is_before_today()
        {'field': 'field_29', 'operator': 'is before today'}
        """
        return self._rule("is before today")

    def is_after_today(self) -> dict[str, Any]:
        """Records whose date is after today.

        Examples
        --------
        >>> Field("field_29").is_after_today()
        {'field': 'field_29', 'operator': 'is after today'}
        """
        return self._rule("is after today")

    def is_today_or_before(self) -> dict[str, Any]:
        """Records whose date is today or before.

        Examples
        --------
        >>> Field("field_29").is_today_or_before()
        {'field': 'field_29', 'operator': 'is today or before'}
        """
        return self._rule("is today or before")

    def is_today_or_after(self) -> dict[str, Any]:
        """Records whose date is today or after.

        Examples
        --------
        >>> Field("field_29").is_today_or_after()
        {'field': 'field_29', 'operator': 'is today or after'}
        """
        return self._rule("is today or after")

    def is_before_current_time(self) -> dict[str, Any]:
        """Records whose date and time is before now.

        Examples
        --------
        >>> Field("field_29").is_before_current_time()
        {'field': 'field_29', 'operator': 'is before current time'}
        """
        return self._rule("is before current time")

    def is_after_current_time(self) -> dict[str, Any]:
        """Records whose date and time is after now.

        Examples
        --------
        >>> Field("field_29").is_after_current_time()
        {'field': 'field_29', 'operator': 'is after current time'}
        """
        return self._rule("is after current time")

    def during_previous(self, n: int, period: str) -> dict[str, Any]:
        """Records whose date falls in the last ``n`` periods.

        Parameters
        ----------
        n : int
            How many periods.
        period : {"days", "weeks", "months", "years"}
            The period.

        Examples
        --------
        >>> Field("field_29").during_previous(3, "days")
        {'field': 'field_29', 'operator': 'is during the previous', 'range': 3, 'type': 'days'}
        """
        return self._rule("is during the previous", range=n, type=period)

    def during_next(self, n: int, period: str) -> dict[str, Any]:
        """Records whose date falls in the next ``n`` periods.

        Parameters
        ----------
        n : int
            How many periods.
        period : {"days", "weeks", "months", "years"}
            The period.

        Examples
        --------
        >>> Field("field_29").during_next(2, "weeks")
        {'field': 'field_29', 'operator': 'is during the next', 'range': 2, 'type': 'weeks'}
        """
        return self._rule("is during the next", range=n, type=period)

    def during_current(self, period: str) -> dict[str, Any]:
        """Records whose date falls in the current period.

        Parameters
        ----------
        period : {"days", "weeks", "months", "years"}
            The period.

        Examples
        --------
        >>> Field("field_29").during_current("months")
        {'field': 'field_29', 'operator': 'is during the current', 'type': 'months'}
        """
        return self._rule("is during the current", type=period)

    def is_before_previous(self, n: int, period: str) -> dict[str, Any]:
        """Records whose date is before the last ``n`` periods.

        Parameters
        ----------
        n : int
            How many periods.
        period : {"days", "weeks", "months", "years"}
            The period.

        Examples
        --------
        >>> Field("field_29").is_before_previous(3, "days")
        {'field': 'field_29', 'operator': 'is before the previous', 'range': 3, 'type': 'days'}
        """
        return self._rule("is before the previous", range=n, type=period)

    def is_after_next(self, n: int, period: str) -> dict[str, Any]:
        """Records whose date is after the next ``n`` periods.

        Parameters
        ----------
        n : int
            How many periods.
        period : {"days", "weeks", "months", "years"}
            The period.

        Examples
        --------
        >>> Field("field_29").is_after_next(2, "weeks")
        {'field': 'field_29', 'operator': 'is after the next', 'range': 2, 'type': 'weeks'}
        """
        return self._rule("is after the next", range=n, type=period)

    def near(self, latitude: float, longitude: float, miles: float = 10) -> dict[str, Any]:
        """Records whose address lies within ``miles`` of a point.

        Parameters
        ----------
        latitude : float
            The point's latitude.
        longitude : float
            The point's longitude.
        miles : float, default 10
            The distance.

        Examples
        --------
        >>> Field("field_34").near(30.3, -97.7, 5)
        {'field': 'field_34', 'operator': 'near', 'value': '30.3,-97.7', 'range': 5}
        """
        return self._rule("near", f"{latitude},{longitude}", range=miles)

    # comparison sugar: Field("field_1") == "x"
    def __eq__(self, value: object) -> dict[str, Any]:  # type: ignore[override]
        return self.is_(value)

    def __ne__(self, value: object) -> dict[str, Any]:  # type: ignore[override]
        return self.is_not(value)

    def __gt__(self, value: Any) -> dict[str, Any]:
        return self.higher_than(value)

    def __lt__(self, value: Any) -> dict[str, Any]:
        return self.lower_than(value)

    def __ge__(self, value: Any) -> FilterSet:
        return self.at_least(value)

    def __le__(self, value: Any) -> FilterSet:
        return self.at_most(value)

    __hash__ = None  # type: ignore[assignment]
