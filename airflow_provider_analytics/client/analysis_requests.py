"""Funnel and event analysis requests as typed classes, with the spec's fields as attributes.

Each class is a frozen dataclass whose attributes are the request's fields in snake_case
(``from_date`` for ``fromDate``), so an editor completes them and a type checker reads
them. A request is checked when it is built, by the same rules the client applies to a
plain dict (:mod:`~airflow_provider_analytics.client.validation`), and :meth:`to_body`
gives exactly the dict the client sends: the typed classes are another way to write the
body, never a second set of rules.

>>> from airflow_provider_analytics.client.analysis_requests import (
...     Condition, Filter, FunnelRequest, FunnelStep, SplitField)
>>> request = FunnelRequest(
...     steps=[FunnelStep("event.$startup"), FunnelStep("event.purchase")],
...     by_field=SplitField("user.$city"),
...     filter=Filter.all(Condition("user.age", "GTE", [18])),
...     convert_time=1, convert_time_unit="DAY",
... )
>>> request.to_body()["byField"]
{'expression': 'user.$city'}

``from_date`` and ``to_date`` may be left out when an operator runs the request: it fills
in the days of its run. The client refuses a request without them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, TypeVar

from airflow_provider_analytics.client import validation
from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.rules import fail

__all__ = [
    "ALL_USERS",
    "Aggregator",
    "Condition",
    "ConvertTimeUnit",
    "EventRequest",
    "Filter",
    "FilterFunction",
    "FunnelRequest",
    "FunnelStep",
    "Measure",
    "Relation",
    "SplitField",
    "TimeUnit",
]

ALL_USERS = validation.ALL_USERS
"""The ``crowds`` entry meaning every user (``$ALL``)."""

FilterFunction: TypeAlias = Literal[
    "EQ",
    "NOT_EQ",
    "CONTAIN",
    "NOT_CONTAIN",
    "GT",
    "GTE",
    "LT",
    "LTE",
    "RANGE",
    "ABSOLUTE_TIME",
    "NULL",
    "NOT_NULL",
    "EMPTY",
    "NOT_EMPTY",
    "TRUE",
    "FALSE",
]
"""Filter functions with a fixed number of params; ``RELATIVE_...`` forms are also accepted."""
Relation: TypeAlias = Literal["AND", "OR"]
Aggregator: TypeAlias = Literal[
    "TRIGGER_USER_COUNT",
    "TOTAL_COUNT",
    "AVG_COUNT",
    "REMOVE_DUMPLICATE",
    "SUM",
    "AVG",
    "MAX",
    "MIN",
    "AVG_PER",
]
"""The first three measure an event expression, the others a property expression."""
TimeUnit: TypeAlias = Literal["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]
ConvertTimeUnit: TypeAlias = Literal["DAY", "HOUR", "MINUTE"]
Param: TypeAlias = str | int | float | bool
DateLike: TypeAlias = str | dt.date

_PLACEHOLDER_DAY = "2000-01-01"
"""Stands in for both dates while a request without dates is checked (one day, so that an
``HOUR`` or ``MINUTE`` unit passes); the dates the request gets later are checked then."""

_T = TypeVar("_T")


def _items(value: Any, field: str, what: str) -> tuple[Any, ...]:
    """A list or tuple as a tuple (a string is not a list of its characters)."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        fail(field, f"must be a list of {what}", value)
    return tuple(value)


def _typed(
    value: Any, field: str, kind: type[_T], *, text: Callable[[str], _T] | None = None
) -> _T:
    """``value`` as a ``kind``; a string becomes ``text(value)`` where one is allowed."""
    if isinstance(value, kind):
        return value
    if text is not None and isinstance(value, str):
        return text(value)
    accepted = f"a {kind.__name__}" + (" or an expression string" if text else "")
    fail(field, f"must be {accepted}", value)


def _optional_filter(value: Any, field: str) -> Filter | None:
    return None if value is None else _typed(value, field, Filter)


def _set(instance: object, name: str, value: Any) -> None:
    object.__setattr__(instance, name, value)


def _with_dates(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``body`` with placeholder dates when it has neither, and whether they were added."""
    if "fromDate" in body or "toDate" in body:
        return body, False
    return {**body, "fromDate": _PLACEHOLDER_DAY, "toDate": _PLACEHOLDER_DAY}, True


def _checked(body: dict[str, Any], validate: Any) -> dict[str, Any]:
    """``body`` through the dict rules; dates left out stay out."""
    dated, placeholders = _with_dates(body)
    checked: dict[str, Any] = validate(dated)
    if placeholders:
        del checked["fromDate"], checked["toDate"]
    return checked


def _date(value: Any, field: str) -> str | None:
    return None if value is None else rules.date(value, field)


@dataclass(frozen=True)
class Condition:
    """One condition of a filter: a property, a function and its params.

    :param expression: a property: ``event.<event id>.<property id>`` or
        ``user.<property id>`` (``event.$Anything.<property id>`` for any event's).
    :param function: ``EQ`` (several params: any of them), ``NOT_EQ``, ``CONTAIN``,
        ``NOT_CONTAIN``, ``GT``, ``GTE``, ``LT``, ``LTE``, ``RANGE`` (two params, inclusive),
        ``ABSOLUTE_TIME`` (two datetimes, inclusive), ``NULL``, ``NOT_NULL``, ``EMPTY``,
        ``NOT_EMPTY``, ``TRUE``, ``FALSE`` or a ``RELATIVE_...`` form.
    :param params: the function's params (strings, numbers or bools).
    """

    expression: str
    function: FilterFunction | str
    params: Sequence[Param] = ()

    def __post_init__(self) -> None:
        _set(self, "params", _items(self.params, "Condition.params", "params"))
        self.to_body()  # checked now, naming the field

    def to_body(self) -> dict[str, Any]:
        """``{expression, function, params}`` as the request writes it."""
        raw = {"expression": self.expression, "function": self.function, "params": [*self.params]}
        return validation.condition(raw, "Condition")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Condition:
        """The condition a request's dict describes (checked)."""
        checked = validation.condition(body, "Condition")
        return cls(checked["expression"], checked["function"], tuple(checked["params"]))


@dataclass(frozen=True)
class Filter:
    """Conditions joined by ``AND`` (all must hold) or ``OR`` (any may hold).

    :param conditions: at least one :class:`Condition`.
    :param relation: ``AND`` or ``OR`` (either case; sent upper-case).
    """

    conditions: Sequence[Condition]
    relation: Relation = "AND"

    def __post_init__(self) -> None:
        items = _items(self.conditions, "Filter.conditions", "Condition")
        _set(
            self,
            "conditions",
            tuple(_typed(c, f"Filter.conditions[{i}]", Condition) for i, c in enumerate(items)),
        )
        if isinstance(self.relation, str):
            _set(self, "relation", self.relation.upper())
        self.to_body()

    @classmethod
    def all(cls, *conditions: Condition) -> Filter:
        """A filter that keeps what meets every condition (``AND``)."""
        return cls(conditions, "AND")

    @classmethod
    def any(cls, *conditions: Condition) -> Filter:
        """A filter that keeps what meets at least one condition (``OR``)."""
        return cls(conditions, "OR")

    def to_body(self) -> dict[str, Any]:
        """``{conditions, relation}`` as the request writes it."""
        raw = {"conditions": [c.to_body() for c in self.conditions], "relation": self.relation}
        return validation.filter_(raw, "Filter")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Filter:
        """The filter a request's dict describes (checked)."""
        checked = validation.filter_(body, "Filter")
        conditions = tuple(Condition.from_body(c) for c in checked["conditions"])
        return cls(conditions, checked["relation"])


@dataclass(frozen=True)
class SplitField:
    """A dimension to split by: a property, and for a number property optional bucket bounds.

    :param expression: ``user.<property id>`` or ``event.<event id>.<property id>``
        (``event.$Anything.<property id>`` for the property on any event).
    :param buckets: strictly increasing bounds; ``[600, 800]`` makes three buckets:
        below 600, 600 to 800, 800 and above.
    """

    expression: str
    buckets: Sequence[int | float] | None = None

    def __post_init__(self) -> None:
        if self.buckets is not None:
            _set(self, "buckets", _items(self.buckets, "SplitField.buckets", "numbers"))
        self.to_body()

    def to_body(self) -> dict[str, Any]:
        """``{expression}`` or ``{expression, buckets}`` as the request writes it."""
        raw: dict[str, Any] = {"expression": self.expression}
        if self.buckets is not None:
            raw["buckets"] = list(self.buckets)
        return validation.split_field(raw, "SplitField")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> SplitField:
        """The split a request's dict describes (checked)."""
        checked = validation.split_field(body, "SplitField")
        buckets = checked.get("buckets")
        return cls(checked["expression"], None if buckets is None else tuple(buckets))


@dataclass(frozen=True)
class FunnelStep:
    """One step of a funnel: an event, optionally filtered.

    :param expression: ``event.<event id>`` (``event.$startup``, ``event.purchase``).
    :param filter: conditions on this step's events only.
    """

    expression: str
    filter: Filter | None = None

    def __post_init__(self) -> None:
        _set(self, "filter", _optional_filter(self.filter, "FunnelStep.filter"))
        self.to_body()

    def to_body(self) -> dict[str, Any]:
        """``{expression, filter}`` as the request writes it (``filter`` may be ``None``)."""
        raw = {
            "expression": self.expression,
            "filter": None if self.filter is None else self.filter.to_body(),
        }
        return validation.funnel_step(raw, "FunnelStep")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> FunnelStep:
        """The step a request's dict describes (checked)."""
        checked = validation.funnel_step(body, "FunnelStep")
        step_filter = checked["filter"]
        return cls(
            checked["expression"], None if step_filter is None else Filter.from_body(step_filter)
        )


@dataclass(frozen=True)
class Measure:
    """What an event analysis counts or computes.

    :param expression: an event (``event.purchase``, ``event.$Anything``) or an event
        property (``event.purchase.amount``).
    :param aggregator: for an event ``TRIGGER_USER_COUNT``, ``TOTAL_COUNT`` or ``AVG_COUNT``;
        for a property ``REMOVE_DUMPLICATE`` (distinct values, any type) or, for a number,
        ``SUM``, ``AVG``, ``MAX``, ``MIN``, ``AVG_PER``.
    :param filter: conditions on this measure's events only.
    """

    expression: str
    aggregator: Aggregator
    filter: Filter | None = None

    def __post_init__(self) -> None:
        _set(self, "filter", _optional_filter(self.filter, "Measure.filter"))
        self.to_body()

    def to_body(self) -> dict[str, Any]:
        """``{expression, aggregator}`` (and ``filter`` when set) as the request writes it."""
        raw: dict[str, Any] = {"expression": self.expression, "aggregator": self.aggregator}
        if self.filter is not None:
            raw["filter"] = self.filter.to_body()
        return validation.measure(raw, "Measure")

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Measure:
        """The measure a request's dict describes (checked)."""
        checked = validation.measure(body, "Measure")
        measure_filter = checked.get("filter")
        return cls(
            checked["expression"],
            checked["aggregator"],
            None if measure_filter is None else Filter.from_body(measure_filter),
        )


def _crowds(value: Any) -> tuple[str, ...]:
    return _items(value, "crowds", f"one cohort code or {ALL_USERS}")


@dataclass(frozen=True, kw_only=True)
class FunnelRequest:
    """A funnel analysis (spec 4.16): users converting through ordered steps.

    :param steps: two or more :class:`FunnelStep` (a plain ``event.<id>`` string is a step
        without a filter).
    :param crowds: one cohort code, or ``$ALL`` (the default) for every user.
    :param from_date: first day, ``yyyy-MM-dd`` or a ``datetime.date``; an operator fills in
        its run's first day when left out.
    :param to_date: last day (inclusive); an operator fills in its run's last day.
    :param filter: conditions on every step's events.
    :param by_field: split the result by one property (a string is a :class:`SplitField`
        without buckets).
    :param by_step_index: the step (from 0) whose event property ``by_field`` reads; ``-1``
        for any step. Needs ``by_field``.
    :param convert_time: the conversion window's length, with ``convert_time_unit``.
    :param convert_time_unit: ``DAY``, ``HOUR`` or ``MINUTE``.
    :param sampling_factor: 1 (full data) to 64 (1/64 of the users).
    :param use_cache: let the platform answer from its cache.
    :param limit: most split values returned.
    """

    analysis_kind: ClassVar[str] = "funnel"

    steps: Sequence[FunnelStep | str]
    crowds: Sequence[str] = (ALL_USERS,)
    from_date: DateLike | None = None
    to_date: DateLike | None = None
    filter: Filter | None = None
    by_field: SplitField | str | None = None
    by_step_index: int | None = None
    convert_time: int | None = None
    convert_time_unit: ConvertTimeUnit | None = None
    sampling_factor: int | None = None
    use_cache: bool | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        steps = _items(self.steps, "steps", "FunnelStep")
        _set(
            self,
            "steps",
            tuple(
                _typed(s, f"steps[{i}]", FunnelStep, text=FunnelStep) for i, s in enumerate(steps)
            ),
        )
        _set(self, "crowds", _crowds(self.crowds))
        _set(self, "from_date", _date(self.from_date, "fromDate"))
        _set(self, "to_date", _date(self.to_date, "toDate"))
        _set(self, "filter", _optional_filter(self.filter, "filter"))
        if self.by_field is not None:
            _set(self, "by_field", _typed(self.by_field, "byField", SplitField, text=SplitField))
        self.to_body()

    def to_body(self) -> dict[str, Any]:
        """The request body exactly as the client sends it (spec camelCase keys, ``None``
        left out); without dates when none were given."""
        raw = {
            "steps": [_typed(s, "steps", FunnelStep).to_body() for s in self.steps],
            "crowds": list(self.crowds),
            "fromDate": self.from_date,
            "toDate": self.to_date,
            "filter": None if self.filter is None else self.filter.to_body(),
            "byField": None
            if self.by_field is None
            else _typed(self.by_field, "byField", SplitField).to_body(),
            "byStepIndex": self.by_step_index,
            "convertTime": self.convert_time,
            "convertTimeUnit": self.convert_time_unit,
            "samplingFactor": self.sampling_factor,
            "useCache": self.use_cache,
            "limit": self.limit,
        }
        body = {key: value for key, value in raw.items() if value is not None}
        return _checked(body, validation.validate_funnel_request)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> FunnelRequest:
        """The typed form of a funnel request dict (checked by the same rules)."""
        checked = _checked(dict(body), validation.validate_funnel_request)
        by_field = checked.get("byField")
        request_filter = checked.get("filter")
        return cls(
            steps=tuple(FunnelStep.from_body(s) for s in checked["steps"]),
            crowds=tuple(checked["crowds"]),
            from_date=checked.get("fromDate"),
            to_date=checked.get("toDate"),
            filter=None if request_filter is None else Filter.from_body(request_filter),
            by_field=None if by_field is None else SplitField.from_body(by_field),
            by_step_index=checked.get("byStepIndex"),
            convert_time=checked.get("convertTime"),
            convert_time_unit=checked.get("convertTimeUnit"),
            sampling_factor=checked.get("samplingFactor"),
            use_cache=checked.get("useCache"),
            limit=checked.get("limit"),
        )


@dataclass(frozen=True, kw_only=True)
class EventRequest:
    """An event analysis (spec 4.17): measures per period, optionally split.

    :param measures: one or more :class:`Measure`.
    :param crowds: one cohort code, or ``$ALL`` (the default) for every user.
    :param from_date: first day, ``yyyy-MM-dd`` or a ``datetime.date``; an operator fills in
        its run's first day when left out.
    :param to_date: last day (inclusive); an operator fills in its run's last day.
    :param filter: conditions on every measure's events.
    :param by_fields: split by these properties (a string is a :class:`SplitField` without
        buckets); the rows hold every combination seen.
    :param unit: the period of each value: ``DAY``, ``WEEK``, ``MONTH``, ...; ``HOUR`` and
        ``MINUTE`` need a single day.
    :param sampling_factor: 1 (full data) to 64 (1/64 of the users).
    :param use_cache: let the platform answer from its cache.
    """

    analysis_kind: ClassVar[str] = "events"

    measures: Sequence[Measure]
    crowds: Sequence[str] = (ALL_USERS,)
    from_date: DateLike | None = None
    to_date: DateLike | None = None
    filter: Filter | None = None
    by_fields: Sequence[SplitField | str] = field(default=())
    unit: TimeUnit | None = None
    sampling_factor: int | None = None
    use_cache: bool | None = None

    def __post_init__(self) -> None:
        measures = _items(self.measures, "measures", "Measure")
        _set(
            self,
            "measures",
            tuple(_typed(m, f"measures[{i}]", Measure) for i, m in enumerate(measures)),
        )
        _set(self, "crowds", _crowds(self.crowds))
        _set(self, "from_date", _date(self.from_date, "fromDate"))
        _set(self, "to_date", _date(self.to_date, "toDate"))
        _set(self, "filter", _optional_filter(self.filter, "filter"))
        splits = _items(self.by_fields, "byFields", "SplitField")
        _set(
            self,
            "by_fields",
            tuple(
                _typed(s, f"byFields[{i}]", SplitField, text=SplitField)
                for i, s in enumerate(splits)
            ),
        )
        self.to_body()

    def to_body(self) -> dict[str, Any]:
        """The request body exactly as the client sends it (spec camelCase keys, ``None``
        and an empty ``byFields`` left out); without dates when none were given."""
        splits = [_typed(s, "byFields", SplitField).to_body() for s in self.by_fields]
        raw = {
            "measures": [m.to_body() for m in self.measures],
            "crowds": list(self.crowds),
            "fromDate": self.from_date,
            "toDate": self.to_date,
            "filter": None if self.filter is None else self.filter.to_body(),
            "byFields": splits or None,
            "unit": self.unit,
            "samplingFactor": self.sampling_factor,
            "useCache": self.use_cache,
        }
        body = {key: value for key, value in raw.items() if value is not None}
        return _checked(body, validation.validate_event_request)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> EventRequest:
        """The typed form of an event analysis request dict (checked by the same rules)."""
        checked = _checked(dict(body), validation.validate_event_request)
        request_filter = checked.get("filter")
        return cls(
            measures=tuple(Measure.from_body(m) for m in checked["measures"]),
            crowds=tuple(checked["crowds"]),
            from_date=checked.get("fromDate"),
            to_date=checked.get("toDate"),
            filter=None if request_filter is None else Filter.from_body(request_filter),
            by_fields=tuple(SplitField.from_body(s) for s in checked.get("byFields", ())),
            unit=checked.get("unit"),
            sampling_factor=checked.get("samplingFactor"),
            use_cache=checked.get("useCache"),
        )
