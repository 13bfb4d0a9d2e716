"""Funnel and event analysis requests (spec 4.16, 4.17), each declared once: a frozen model
(:class:`~airflow_provider_analytics.core.rules.Declared`) with snake_case attributes, which
also reads a dict with the spec's keys (``FunnelRequest.model_validate(body)``) by the same
rules; :meth:`~airflow_provider_analytics.core.rules.Declared.to_body` gives the dict sent.

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

``from_date`` and ``to_date`` may be left out when an operator runs the request (it fills in
its run's days); the client refuses a request without them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TypeAlias, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from airflow_provider_analytics.client.answers import Asked
from airflow_provider_analytics.core import identity, rules
from airflow_provider_analytics.core.rules import Declared, check, fail, listed

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Collection

ALL_USERS = "$ALL"
"""The ``crowds`` entry meaning every user (``$ALL``)."""

NoParams: TypeAlias = Literal["NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY", "TRUE", "FALSE"]
OneParam: TypeAlias = Literal["GT", "GTE", "LT", "LTE"]
TwoParams: TypeAlias = Literal["RANGE", "ABSOLUTE_TIME"]
SomeParams: TypeAlias = Literal["EQ", "NOT_EQ", "CONTAIN", "NOT_CONTAIN"]
FilterFunction: TypeAlias = Literal[NoParams, OneParam, TwoParams, SomeParams]
"""Filter functions with a fixed number of params; ``RELATIVE_...`` forms are also accepted."""
FILTER_ARITY: dict[str, tuple[int, int | None]] = {
    **dict.fromkeys(get_args(NoParams), (0, 0)),
    **dict.fromkeys(get_args(OneParam), (1, 1)),
    **dict.fromkeys(get_args(TwoParams), (2, 2)),
    **dict.fromkeys(get_args(SomeParams), (1, None)),
}
"""Filter functions -> (fewest, most) params; ``None``: no upper bound."""
_RELATIVE_FUNCTION = re.compile(r"RELATIVE_[A-Z_]+")

EventAggregator: TypeAlias = Literal["TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT"]
PropertyAggregator: TypeAlias = Literal["REMOVE_DUMPLICATE", "SUM", "AVG", "MAX", "MIN", "AVG_PER"]
Aggregator: TypeAlias = Literal[EventAggregator, PropertyAggregator]
"""The first three measure an event expression, the others a property expression."""
EVENT_AGGREGATORS: tuple[str, ...] = get_args(EventAggregator)
PROPERTY_AGGREGATORS: tuple[str, ...] = get_args(PropertyAggregator)
Relation: TypeAlias = Literal["AND", "OR"]
RELATIONS: tuple[str, ...] = get_args(Relation)
TimeUnit: TypeAlias = Literal["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]
TIME_UNITS: tuple[str, ...] = get_args(TimeUnit)
SINGLE_DAY_UNITS = ("MINUTE", "HOUR")
ConvertTimeUnit: TypeAlias = Literal["DAY", "HOUR", "MINUTE"]
CONVERT_TIME_UNITS: tuple[str, ...] = get_args(ConvertTimeUnit)
SAMPLING_FACTOR_MAX = 64
Param: TypeAlias = str | int | float | bool
DateLike: TypeAlias = "str | dt.date"


class ExpressionKind(StrEnum):
    """What an analysis expression points at."""

    EVENT = "event.<event id>"
    EVENT_PROPERTY = "event.<event id>.<property id>"
    USER_PROPERTY = "user.<property id>"


EVENT = frozenset({ExpressionKind.EVENT})
MEASURABLE = frozenset({ExpressionKind.EVENT, ExpressionKind.EVENT_PROPERTY})
PROPERTIES = frozenset({ExpressionKind.EVENT_PROPERTY, ExpressionKind.USER_PROPERTY})


def _kind(text: str) -> ExpressionKind | None:
    head, _, rest = text.partition(".")
    refs = rest.split(".")
    if not rest or not all(rules.is_ref(r) for r in refs):
        return None
    if head == "event" and len(refs) in (1, 2):
        return ExpressionKind.EVENT if len(refs) == 1 else ExpressionKind.EVENT_PROPERTY
    if head == "user" and len(refs) == 1:
        return ExpressionKind.USER_PROPERTY
    return None


def expression(value: Any, field: str, allowed: Collection[ExpressionKind]) -> str:
    """Check an expression (``event.$startup``, ``event.purchase.amount``, ``user.age``) of
    an ``allowed`` kind."""
    text = rules.string(value, field)
    kind = _kind(text)
    if kind is not None and kind in allowed:
        return text
    shapes = " or ".join(k.value for k in ExpressionKind if k in allowed)
    if kind is None:
        fail(field, f"must be an expression {shapes} (ids: {rules.REF_RULE})", value)
    fail(field, f"must be {shapes} here, not {kind.value}", value)


def _function(value: Any, field: str) -> str:
    if not isinstance(value, str) or not (
        value in FILTER_ARITY or _RELATIVE_FUNCTION.fullmatch(rules.sendable(value, field))
    ):
        fail(field, f"must be one of {', '.join(FILTER_ARITY)} or RELATIVE_...", value)
    return value


def _relation(value: Any, field: str) -> str:
    if not isinstance(value, str) or value.upper() not in RELATIONS:
        fail(field, "must be AND or OR", value)
    return value.upper()


def _buckets(value: Any) -> tuple[int | float, ...] | None:
    bounds = rules.items(value, "numbers (or null)", item=rules.number)
    if bounds is not None and any(a >= b for a, b in itertools.pairwise(bounds)):
        fail("", "must be strictly increasing", value)
    return bounds


class Condition(Declared):
    """One condition of a filter: a property, a function and its params.

    :param expression: a property: ``event.<event id>.<property id>`` or
        ``user.<property id>`` (``event.$Anything.<property id>`` for any event's).
    :param function: ``EQ`` (several params: any of them), ``NOT_EQ``, ``CONTAIN``,
        ``NOT_CONTAIN``, ``GT``, ``GTE``, ``LT``, ``LTE``, ``RANGE`` (two params, inclusive),
        ``ABSOLUTE_TIME`` (two datetimes, inclusive), ``NULL``, ``NOT_NULL``, ``EMPTY``,
        ``NOT_EMPTY``, ``TRUE``, ``FALSE`` or a ``RELATIVE_...`` form.
    :param params: the function's params (strings, numbers or bools); a function that takes
        none may leave them out of the dict.
    """

    _shape = "{expression, function, params}"

    expression: Annotated[str, check(expression, PROPERTIES)]
    function: Annotated[FilterFunction | str, check(_function)]
    params: tuple[Param, ...] = Field(default=None, validate_default=True)

    def __init__(
        self, expression: str, function: FilterFunction | str, params: Sequence[Param] = ()
    ) -> None:
        Declared.__init__(self, expression=expression, function=function, params=params)

    @field_validator("params", mode="before")
    @classmethod
    def _arity(cls, value: Any, info: ValidationInfo) -> tuple[Param, ...]:
        function = info.data.get("function")
        fewest, most = FILTER_ARITY.get(function or "", (0, None))
        if value is None and most == 0:
            return ()
        params = rules.items(value, "params", item=rules.json_scalar)
        if params is None:
            fail("", "must be a list", value)
        if len(params) < fewest or (most is not None and len(params) > most):
            if fewest == most:
                count = "no params" if most == 0 else f"exactly {most} param(s)"
            else:
                count = f"at least {fewest} param(s)"
            fail("", f"{function} takes {count}", list(params))
        return params


class Filter(Declared):
    """Conditions joined by ``AND`` (all must hold) or ``OR`` (any may hold).

    :param conditions: at least one :class:`Condition`.
    :param relation: ``AND`` or ``OR`` (either case; sent upper-case); the dict must say it.
    """

    _shape = "{conditions, relation}"

    conditions: Annotated[tuple[Condition, ...], listed("conditions", non_empty=True)]
    relation: Annotated[Relation, check(_relation)] = Field(default=None, validate_default=True)

    def __init__(self, conditions: Sequence[Condition], relation: Relation | str = "AND") -> None:
        Declared.__init__(self, conditions=conditions, relation=relation)

    @classmethod
    def all(cls, *conditions: Condition) -> Filter:
        """A filter that keeps what meets every condition (``AND``)."""
        return cls(conditions, "AND")

    @classmethod
    def any(cls, *conditions: Condition) -> Filter:
        """A filter that keeps what meets at least one condition (``OR``)."""
        return cls(conditions, "OR")


class SplitField(Declared):
    """A dimension to split by: a property, and for a number property optional bucket bounds.

    :param expression: ``user.<property id>`` or ``event.<event id>.<property id>``
        (``event.$Anything.<property id>`` for the property on any event).
    :param buckets: strictly increasing bounds; ``[600, 800]`` makes three buckets:
        below 600, 600 to 800, 800 and above.
    """

    _shape = "{expression, buckets}"
    _text = "expression"

    expression: Annotated[str, check(expression, PROPERTIES)]
    buckets: Annotated[tuple[int | float, ...] | None, BeforeValidator(_buckets)] = None

    def __init__(self, expression: str, buckets: Sequence[int | float] | None = None) -> None:
        Declared.__init__(self, expression=expression, buckets=buckets)


class FunnelStep(Declared):
    """One step of a funnel: an event, optionally filtered (``filter`` is always sent).

    :param expression: ``event.<event id>`` (``event.$startup``, ``event.purchase``).
    :param filter: conditions on this step's events only.
    """

    _shape = "{expression, filter}"
    _text = "expression"
    _kept = frozenset({"filter"})

    expression: Annotated[str, check(expression, EVENT)]
    filter: Filter | None = None

    def __init__(self, expression: str, filter: Filter | None = None) -> None:
        Declared.__init__(self, expression=expression, filter=filter)


class ConversionMeasure(Declared):
    """A measure of an ad tracking conversion (spec 4.3): an expression and an aggregator
    that suits it.

    :param expression: an event (``event.purchase``, ``event.$Anything``) or an event
        property (``event.purchase.amount``).
    :param aggregator: for an event ``TRIGGER_USER_COUNT``, ``TOTAL_COUNT`` or ``AVG_COUNT``;
        for a property ``REMOVE_DUMPLICATE`` (distinct values, any type) or, for a number,
        ``SUM``, ``AVG``, ``MAX``, ``MIN``, ``AVG_PER``.
    """

    _shape = "{expression, aggregator}"

    expression: Annotated[str, check(expression, MEASURABLE)]
    aggregator: Annotated[Aggregator, check(rules.one_of, EVENT_AGGREGATORS + PROPERTY_AGGREGATORS)]

    def __init__(self, expression: str, aggregator: Aggregator) -> None:
        Declared.__init__(self, expression=expression, aggregator=aggregator)

    @model_validator(mode="after")
    def _pairing(self) -> Self:
        event = _kind(self.expression) is ExpressionKind.EVENT
        fits = EVENT_AGGREGATORS if event else PROPERTY_AGGREGATORS
        if self.aggregator not in fits:
            other = "a property expression" if event else "an event expression"
            kind = ExpressionKind.EVENT if event else ExpressionKind.EVENT_PROPERTY
            fail(
                "aggregator",
                f"{self.aggregator} applies to {other}; {kind.value} takes {', '.join(fits)}",
                self.aggregator,
            )
        return self


class Measure(ConversionMeasure):
    """What an event analysis counts or computes (:class:`ConversionMeasure`'s fields).

    :param filter: conditions on this measure's events only.
    """

    _shape = "{expression, aggregator, filter}"

    filter: Filter | None = None

    def __init__(
        self, expression: str, aggregator: Aggregator, filter: Filter | None = None
    ) -> None:
        Declared.__init__(self, expression=expression, aggregator=aggregator, filter=filter)


def _crowds(value: Any, field: str) -> tuple[str]:
    items = rules.items(value, f"one cohort code or {ALL_USERS}")
    if not items:
        fail(field, f"must be a list with one cohort code or {ALL_USERS}", value)
    if all(isinstance(v, str) for v in items):
        rules.distinct(items, field, position=lambda i: f"crowds[{i}]")
    if len(items) > 1:
        fail(field, "comparing cohorts is not supported: give exactly one cohort code", value)
    return (identity.cohort_code(items[0], f"{field}[0]"),)


class _Analysis(Declared):
    """What funnel and event analyses share: crowds, dates, filter, sampling, cache."""

    analysis_kind: ClassVar[str]
    _part = False

    crowds: Annotated[tuple[str], check(_crowds)]
    from_date: Annotated[str | None, check(rules.date, optional=True)] = None
    to_date: Annotated[str | None, check(rules.date, optional=True)] = None
    filter: Filter | None = None
    sampling_factor: Annotated[
        int | None, check(rules.integer, minimum=1, maximum=SAMPLING_FACTOR_MAX, optional=True)
    ] = None
    use_cache: Annotated[bool | None, check(rules.boolean, optional=True)] = None

    @classmethod
    def _kind_rule(cls) -> str:
        return f"must be a dict of the analysis parameters or a {cls.__name__}"

    @model_validator(mode="after")
    def _dates(self) -> Self:
        if (self.from_date is None) != (self.to_date is None):
            fail("toDate" if self.to_date is None else "fromDate", "is required")
        if self.from_date is not None:
            rules.date_range(self.from_date, self.to_date)
        return self

    @classmethod
    def of(cls, request: Any) -> Self:
        """``request`` as this kind: a dict read through the declaration (a request of the
        other kind refused), this kind as it is."""
        if isinstance(request, cls):
            return request
        if isinstance(request, _Analysis):
            fail(
                "request",
                f"is {type(request).__name__} ({request.analysis_kind}); "
                f"a {cls.analysis_kind} request is needed",
            )
        return cls.model_validate(request)

    def sent(self) -> dict[str, Any]:
        """:meth:`to_body`, which must have its dates."""
        if self.from_date is None:
            fail("fromDate", "is required")
        return self.to_body()

    def window(self, from_date: str, to_date: str) -> Self:
        """The same request over a part of its own range (every other rule still holds, so it
        is not checked again)."""
        first, last = rules.date_range(from_date, to_date)  # a datetime.date as its text
        if not str(self.from_date) <= first <= last <= str(self.to_date):
            fail("window", f"{first}..{last} is not inside {self.from_date}..{self.to_date}")
        return BaseModel.model_copy(self, update={"from_date": first, "to_date": last})


class FunnelRequest(_Analysis):
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

    steps: Annotated[tuple[FunnelStep, ...], listed("FunnelStep {expression, filter}")]
    by_field: SplitField | None = None
    by_step_index: Annotated[int | None, check(rules.integer, optional=True)] = None
    convert_time: Annotated[int | None, check(rules.positive_int, optional=True)] = None
    convert_time_unit: Annotated[
        ConvertTimeUnit | None, check(rules.one_of, CONVERT_TIME_UNITS, optional=True)
    ] = None
    limit: Annotated[int | None, check(rules.count, optional=True)] = None

    def __init__(
        self,
        *,
        steps: Sequence[FunnelStep | str],
        crowds: Sequence[str] = (ALL_USERS,),
        from_date: DateLike | None = None,
        to_date: DateLike | None = None,
        filter: Filter | None = None,
        by_field: SplitField | str | None = None,
        by_step_index: int | None = None,
        convert_time: int | None = None,
        convert_time_unit: ConvertTimeUnit | None = None,
        sampling_factor: int | None = None,
        use_cache: bool | None = None,
        limit: int | None = None,
    ) -> None:
        Declared.__init__(self, **self.fields_in(locals()))

    @field_validator("steps")
    @classmethod
    def _two_steps(cls, steps: tuple[FunnelStep, ...]) -> tuple[FunnelStep, ...]:
        if len(steps) < 2:
            fail("", "must be a list of at least 2 steps {expression, filter}", steps)
        return steps

    @model_validator(mode="after")
    def _together(self) -> Self:
        if self.by_step_index is not None:
            if self.by_field is None:
                fail("byStepIndex", "is only allowed together with byField")
            last = len(self.steps) - 1
            rules.integer(self.by_step_index, "byStepIndex", minimum=-1, maximum=last)
        if (self.convert_time is None) != (self.convert_time_unit is None):
            given, missing = ("convertTime", "convertTimeUnit")[:: 1 if self.convert_time else -1]
            fail(missing, f"is required together with {given}")
        return self

    def asked(self) -> Asked:
        return Asked(from_date=self.from_date, to_date=self.to_date, steps=len(self.steps))


class EventRequest(_Analysis):
    """An event analysis (spec 4.17): measures per period, optionally split.

    :param measures: one or more :class:`Measure`.
    :param crowds: one cohort code, or ``$ALL`` (the default) for every user.
    :param from_date: first day, ``yyyy-MM-dd`` or a ``datetime.date``; an operator fills in
        its run's first day when left out.
    :param to_date: last day (inclusive); an operator fills in its run's last day.
    :param filter: conditions on every measure's events.
    :param by_fields: split by these properties (a string is a :class:`SplitField` without
        buckets); the rows hold every combination seen. An empty list is not sent.
    :param unit: the period of each value: ``DAY``, ``WEEK``, ``MONTH``, ...; ``HOUR`` and
        ``MINUTE`` need a single day.
    :param sampling_factor: 1 (full data) to 64 (1/64 of the users).
    :param use_cache: let the platform answer from its cache.
    """

    analysis_kind: ClassVar[str] = "events"

    measures: Annotated[tuple[Measure, ...], listed("{expression, aggregator}", non_empty=True)]
    by_fields: Annotated[
        tuple[SplitField, ...] | None, listed("SplitField {expression, buckets}")
    ] = None
    unit: Annotated[TimeUnit | None, check(rules.one_of, TIME_UNITS, optional=True)] = None

    def __init__(
        self,
        *,
        measures: Sequence[Measure],
        crowds: Sequence[str] = (ALL_USERS,),
        from_date: DateLike | None = None,
        to_date: DateLike | None = None,
        filter: Filter | None = None,
        by_fields: Sequence[SplitField | str] = (),
        unit: TimeUnit | None = None,
        sampling_factor: int | None = None,
        use_cache: bool | None = None,
    ) -> None:
        Declared.__init__(self, **self.fields_in(locals()))

    @field_validator("by_fields")
    @classmethod
    def _no_empty_split(cls, splits: tuple[SplitField, ...] | None) -> Any:
        return splits or None

    @model_validator(mode="after")
    def _single_day(self) -> Self:
        if self.unit in SINGLE_DAY_UNITS and self.from_date != self.to_date:
            fail("unit", f"{self.unit} needs fromDate equal to toDate (a single day)", self.unit)
        return self

    def asked(self) -> Asked:
        return Asked(
            from_date=self.from_date,
            to_date=self.to_date,
            aggregators=tuple(measure.aggregator for measure in self.measures),
            split_fields=len(self.by_fields or ()),
        )


def body_of(request: Any, kind: str) -> Any:
    """The body of a typed request of ``kind`` (``funnel`` or ``events``; the other kind is
    refused); anything else as it is, checked when it runs (an operator's rendered dict)."""
    if not isinstance(request, _Analysis):
        return request
    typed = FunnelRequest if kind == FunnelRequest.analysis_kind else EventRequest
    return typed.of(request).to_body()
