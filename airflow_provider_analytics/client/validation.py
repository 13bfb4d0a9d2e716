"""The spec's rules for structured arguments: expressions, filters, analysis requests,
cohort requests and tracking plan definitions.

The validators return normalised copies (dates as strings, relations upper-cased,
``None`` options dropped) and raise :class:`AnalyticsValidationError` naming the field
as the request would (``steps[1].expression``), before anything is sent.
Operators call :func:`validate_funnel_request` and :func:`validate_event_request` first
thing, so a typo fails the task at once instead of after a round trip.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsUsageError
from airflow_provider_analytics.core.rules import fail

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Sequence

EVENT_AGGREGATORS = ("TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT")
PROPERTY_AGGREGATORS = ("REMOVE_DUMPLICATE", "SUM", "AVG", "MAX", "MIN", "AVG_PER")
RELATIONS = ("AND", "OR")
TIME_UNITS = ("SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")
SINGLE_DAY_UNITS = ("MINUTE", "HOUR")
CONVERT_TIME_UNITS = ("DAY", "HOUR", "MINUTE")
ALL_USERS = "$ALL"
SAMPLING_FACTOR_MAX = 64

# Filter functions -> (fewest, most) params; None = no upper bound.
FILTER_ARITY: dict[str, tuple[int, int | None]] = {
    **dict.fromkeys(("NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY", "TRUE", "FALSE"), (0, 0)),
    **dict.fromkeys(("GT", "GTE", "LT", "LTE"), (1, 1)),
    **dict.fromkeys(("RANGE", "ABSOLUTE_TIME"), (2, 2)),
    **dict.fromkeys(("EQ", "NOT_EQ", "CONTAIN", "NOT_CONTAIN"), (1, None)),
}
_RELATIVE_FUNCTION = re.compile(r"RELATIVE_[A-Z_]+")
_TAG_CODE = re.compile(r"[A-Za-z0-9_-]{1,100}")

FUNNEL_KEYS = frozenset(
    {
        "steps",
        "crowds",
        "fromDate",
        "toDate",
        "samplingFactor",
        "byStepIndex",
        "byField",
        "convertTime",
        "convertTimeUnit",
        "filter",
        "useCache",
        "limit",
    }
)
EVENT_KEYS = frozenset(
    {
        "measures",
        "filter",
        "crowds",
        "fromDate",
        "toDate",
        "samplingFactor",
        "useCache",
        "unit",
        "byFields",
    }
)
_ANALYSIS_REQUIRED = ("crowds", "fromDate", "toDate")


class ExpressionKind(StrEnum):
    """What an analysis expression points at."""

    EVENT = "event.<event id>"
    EVENT_PROPERTY = "event.<event id>.<property id>"
    USER_PROPERTY = "user.<property id>"


EVENT = frozenset({ExpressionKind.EVENT})
MEASURABLE = frozenset({ExpressionKind.EVENT, ExpressionKind.EVENT_PROPERTY})
PROPERTIES = frozenset({ExpressionKind.EVENT_PROPERTY, ExpressionKind.USER_PROPERTY})


def _parse_kind(text: str) -> ExpressionKind | None:
    head, _, rest = text.partition(".")
    refs = rest.split(".")
    if not rest or not all(rules.is_ref(r) for r in refs):
        return None
    if head == "event" and len(refs) == 1:
        return ExpressionKind.EVENT
    if head == "event" and len(refs) == 2:
        return ExpressionKind.EVENT_PROPERTY
    if head == "user" and len(refs) == 1:
        return ExpressionKind.USER_PROPERTY
    return None


def expression(value: Any, field: str, allowed: Collection[ExpressionKind]) -> ExpressionKind:
    """Check an expression of an allowed kind and return its kind.

    :param value: e.g. ``event.$startup``, ``event.purchase.amount``, ``user.age``.
    :param field: the request field, for the message.
    :param allowed: kinds accepted at this place of the request.
    """
    kind = _parse_kind(rules.string(value, field))
    if kind is not None and kind in allowed:
        return kind
    shapes = " or ".join(k.value for k in ExpressionKind if k in allowed)
    if kind is None:
        fail(field, f"must be an expression {shapes} (ids: {rules.REF_RULE})", value)
    fail(field, f"must be {shapes} here, not {kind.value}", value)


def aggregator(value: Any, field: str, kind: ExpressionKind) -> str:
    """An aggregator that suits the measured expression's kind."""
    event = kind is ExpressionKind.EVENT
    fits = EVENT_AGGREGATORS if event else PROPERTY_AGGREGATORS
    if value in EVENT_AGGREGATORS + PROPERTY_AGGREGATORS and value not in fits:
        other = "a property expression" if event else "an event expression"
        fail(field, f"{value} applies to {other}; {kind.value} takes {', '.join(fits)}", value)
    return rules.one_of(value, field, fits)


def _mapping(value: Any, field: str, allowed: Collection[str], what: str) -> Mapping[str, Any]:
    """A dict with only known keys; a typo gets the closest allowed key suggested."""
    if not isinstance(value, Mapping):
        fail(field, f"must be an object (dict) {what}", value)
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        key = unknown[0]
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        shown = key if key.isidentifier() else repr(key)  # an empty or odd key stays visible
        path = f"{field}.{shown}" if field else shown
        fail(path, f"is not a known key{hint} (allowed: {', '.join(sorted(allowed))})")
    return value


def _sub(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def distinct(
    items: Sequence[str],
    field: str,
    *,
    sent: Callable[[str], str] = str,
    position: Callable[[int], str] | None = None,
) -> None:
    """Refuse an item given twice in a list the spec defines as a set, naming the list and
    both positions (the platform would receive the repeat, and what it does then is not
    shown).

    :param items: the checked items, in order.
    :param field: the list, as the request names it.
    :param sent: the form an item is sent in; two items sent alike are a repeat.
    :param position: the name of the i-th item (default ``field[i]``).
    """
    where = position or (lambda i: f"{field}[{i}]")
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        key = sent(item)
        if key not in first:
            first[key] = i
            continue
        j = first[key]
        if items[j] == item:
            repeat = f"{where(j)} and {where(i)} are both {item!r}"
        else:
            repeat = f"{where(j)} {items[j]!r} and {where(i)} {item!r} are both sent as {key!r}"
        fail(field, f"must not repeat an item (the spec defines it as a set): {repeat}")


def condition(value: Any, field: str) -> dict[str, Any]:
    """One filter condition ``{expression, function, params}``."""
    cond = _mapping(value, field, ("expression", "function", "params"), "{expression, function}")
    for key in ("expression", "function"):
        if key not in cond:
            fail(_sub(field, key), "is required")
    expression(cond["expression"], _sub(field, "expression"), PROPERTIES)
    function = cond["function"]
    if not isinstance(function, str) or not (
        function in FILTER_ARITY or _RELATIVE_FUNCTION.fullmatch(function)
    ):
        known = ", ".join(FILTER_ARITY)
        fail(_sub(field, "function"), f"must be one of {known} or RELATIVE_...", function)
    fewest, most = FILTER_ARITY.get(function, (0, None))
    params = cond.get("params", [] if most == 0 else None)
    params_field = _sub(field, "params")
    if not isinstance(params, list):
        fail(params_field, "must be a list", params)
    if len(params) < fewest or (most is not None and len(params) > most):
        if fewest == most:
            count = "no params" if most == 0 else f"exactly {most} param(s)"
        else:
            count = f"at least {fewest} param(s)"
        fail(params_field, f"{function} takes {count}", params)
    checked = [rules.json_scalar(p, f"{params_field}[{i}]") for i, p in enumerate(params)]
    return {"expression": cond["expression"], "function": function, "params": checked}


def filter_(value: Any, field: str = "filter") -> dict[str, Any]:
    """A filter ``{conditions: [...], relation: AND|OR}``; relation is upper-cased."""
    spec = _mapping(value, field, ("conditions", "relation"), "{conditions, relation}")
    conditions = spec.get("conditions")
    if not isinstance(conditions, list) or not conditions:
        fail(_sub(field, "conditions"), "must be a non-empty list of conditions", conditions)
    relation = spec.get("relation")
    if not isinstance(relation, str) or relation.upper() not in RELATIONS:
        fail(_sub(field, "relation"), "must be AND or OR", relation)
    return {
        "conditions": [condition(c, f"{field}.conditions[{i}]") for i, c in enumerate(conditions)],
        "relation": relation.upper(),
    }


def crowds(value: Any, field: str = "crowds") -> list[str]:
    """Exactly one user group: ``$ALL`` or a cohort code."""
    if not isinstance(value, list) or not value:
        fail(field, f"must be a list with one cohort code or {ALL_USERS}", value)
    if all(isinstance(v, str) for v in value):
        distinct(value, field)
    if len(value) > 1:
        fail(field, "comparing cohorts is not supported: give exactly one cohort code", value)
    return [rules.cohort_code(value[0], f"{field}[0]")]


def buckets(value: Any, field: str) -> list[int | float] | None:
    """``None`` or a strictly increasing list of numbers (split bounds)."""
    if value is None:
        return None
    if not isinstance(value, list):
        fail(field, "must be null or a list of numbers", value)
    bounds = [rules.number(v, f"{field}[{i}]") for i, v in enumerate(value)]
    if any(a >= b for a, b in itertools.pairwise(bounds)):
        fail(field, "must be strictly increasing", value)
    return bounds


def split_field(value: Any, field: str) -> dict[str, Any]:
    """A split dimension ``{expression, buckets}`` over a property."""
    spec = _mapping(value, field, ("expression", "buckets"), "{expression, buckets}")
    if "expression" not in spec:
        fail(_sub(field, "expression"), "is required")
    expression(spec["expression"], _sub(field, "expression"), PROPERTIES)
    result: dict[str, Any] = {"expression": spec["expression"]}
    if "buckets" in spec:
        result["buckets"] = buckets(spec["buckets"], _sub(field, "buckets"))
    return result


def _request(value: Any, allowed: frozenset[str], required: Iterable[str]) -> dict[str, Any]:
    """Known top-level keys with ``None`` values dropped; required keys present."""
    if not isinstance(value, Mapping):
        fail("request", "must be a dict of the analysis parameters", value)
    request = {k: v for k, v in _mapping(value, "", allowed, "").items() if v is not None}
    for key in required:
        if key not in request:
            fail(key, "is required")
    return request


def _common(request: dict[str, Any]) -> dict[str, Any]:
    """Checks shared by funnel and event analysis: crowds, dates, sampling, cache, filter."""
    start, end = rules.date_range(request["fromDate"], request["toDate"])
    result: dict[str, Any] = {
        "crowds": crowds(request["crowds"]),
        "fromDate": start,
        "toDate": end,
    }
    if "samplingFactor" in request:
        result["samplingFactor"] = rules.integer(
            request["samplingFactor"], "samplingFactor", minimum=1, maximum=SAMPLING_FACTOR_MAX
        )
    if "useCache" in request:
        result["useCache"] = rules.boolean(request["useCache"], "useCache")
    if "filter" in request:
        result["filter"] = filter_(request["filter"])
    return result


def _step(value: Any, field: str) -> dict[str, Any]:
    step = _mapping(value, field, ("expression", "filter"), "{expression, filter}")
    if "expression" not in step:
        fail(_sub(field, "expression"), "is required")
    expression(step["expression"], _sub(field, "expression"), EVENT)
    step_filter = step.get("filter")
    return {
        "expression": step["expression"],
        "filter": None if step_filter is None else filter_(step_filter, _sub(field, "filter")),
    }


def funnel_step(value: Any, field: str = "step") -> dict[str, Any]:
    """One funnel step ``{expression, filter}``: an event expression, an optional filter."""
    return _step(value, field)


def validate_funnel_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """Check a funnel analysis body (spec 4.16) and return a normalised copy.

    ``byStepIndex`` counts steps from 0; -1 means any step. It needs ``byField``.
    ``convertTime`` and ``convertTimeUnit`` go together.

    :param request: the body, with the spec's camelCase keys.
    :raises AnalyticsValidationError: naming the first field that breaks a rule.
    """
    body = _request(request, FUNNEL_KEYS, ("steps", *_ANALYSIS_REQUIRED))
    steps = body["steps"]
    if not isinstance(steps, list) or len(steps) < 2:
        fail("steps", "must be a list of at least 2 steps {expression, filter}", steps)
    result: dict[str, Any] = {"steps": [_step(s, f"steps[{i}]") for i, s in enumerate(steps)]}
    result.update(_common(body))
    if "byStepIndex" in body:
        if "byField" not in body:
            fail("byStepIndex", "is only allowed together with byField")
        result["byStepIndex"] = rules.integer(
            body["byStepIndex"], "byStepIndex", minimum=-1, maximum=len(steps) - 1
        )
    if "byField" in body:
        result["byField"] = split_field(body["byField"], "byField")
    has_time, has_unit = "convertTime" in body, "convertTimeUnit" in body
    if has_time != has_unit:
        given, missing = ("convertTime", "convertTimeUnit")[:: 1 if has_time else -1]
        fail(missing, f"is required together with {given}")
    if has_time:
        result["convertTime"] = rules.positive_int(body["convertTime"], "convertTime")
        result["convertTimeUnit"] = rules.one_of(
            body["convertTimeUnit"], "convertTimeUnit", CONVERT_TIME_UNITS
        )
    if "limit" in body:
        result["limit"] = rules.count(body["limit"], "limit")
    return result


def _measure(value: Any, field: str) -> dict[str, Any]:
    spec = _mapping(value, field, ("expression", "aggregator", "filter"), "{expression, ...}")
    for key in ("expression", "aggregator"):
        if key not in spec:
            fail(_sub(field, key), "is required")
    kind = expression(spec["expression"], _sub(field, "expression"), MEASURABLE)
    result = {
        "expression": spec["expression"],
        "aggregator": aggregator(spec["aggregator"], _sub(field, "aggregator"), kind),
    }
    if spec.get("filter") is not None:
        result["filter"] = filter_(spec["filter"], _sub(field, "filter"))
    return result


def measure(value: Any, field: str = "measure") -> dict[str, Any]:
    """One event-analysis measure ``{expression, aggregator, filter?}``."""
    return _measure(value, field)


def validate_event_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """Check an event analysis body (spec 4.17) and return a normalised copy.

    :param request: the body, with the spec's camelCase keys.
    :raises AnalyticsValidationError: naming the first field that breaks a rule.
    """
    body = _request(request, EVENT_KEYS, ("measures", *_ANALYSIS_REQUIRED))
    measures = body["measures"]
    if not isinstance(measures, list) or not measures:
        fail("measures", "must be a non-empty list of {expression, aggregator}", measures)
    result: dict[str, Any] = {
        "measures": [_measure(m, f"measures[{i}]") for i, m in enumerate(measures)]
    }
    result.update(_common(body))
    if "unit" in body:
        unit = rules.one_of(body["unit"], "unit", TIME_UNITS)
        if unit in SINGLE_DAY_UNITS and result["fromDate"] != result["toDate"]:
            fail("unit", f"{unit} needs fromDate equal to toDate (a single day)", unit)
        result["unit"] = unit
    if "byFields" in body:
        by_fields = body["byFields"]
        if not isinstance(by_fields, list):
            fail("byFields", "must be a list of {expression, buckets}", by_fields)
        result["byFields"] = [split_field(f, f"byFields[{i}]") for i, f in enumerate(by_fields)]
    return result


_CHECKED: Any = object()
"""Passed by the functions that check a request; a checked request made any other way is
refused, so that one the client sends unchecked cannot exist."""


def _made_by_a_check(token: object, kind: str, maker: str) -> None:
    if token is not _CHECKED:
        raise AnalyticsUsageError(f"a {kind} is made by {maker}(), which checks it")


@dataclass(frozen=True)
class AnalysisRequest:
    """A checked analysis body, made by :func:`funnel_request` or :func:`event_request`.

    ``analyze_funnel`` and ``analyze_events`` send it without checking it again, so a job
    checks a request once, before its first query, and may query it window by window.

    :param kind: ``funnel`` (spec 4.16) or ``events`` (spec 4.17).
    :param body: the normalised body with the spec's camelCase keys.
    """

    kind: str
    body: Mapping[str, Any]
    checked: object = field(default=None, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        _made_by_a_check(self.checked, "AnalysisRequest", "funnel_request() or event_request")

    def window(self, from_date: str, to_date: str) -> AnalysisRequest:
        """The same request over ``from_date`` to ``to_date``, a part of its own date range.

        :raises AnalyticsValidationError: for a window outside the checked range.
        """
        rules.date_range(from_date, to_date)
        if not self.body["fromDate"] <= from_date <= to_date <= self.body["toDate"]:
            fail(
                "window",
                f"{from_date}..{to_date} is not inside "
                f"{self.body['fromDate']}..{self.body['toDate']}",
            )
        return replace(self, body={**self.body, "fromDate": from_date, "toDate": to_date})


@runtime_checkable
class TypedAnalysisRequest(Protocol):
    """A request built from typed classes
    (:mod:`~airflow_provider_analytics.client.analysis_requests`): its kind and its body."""

    analysis_kind: ClassVar[str]

    def to_body(self) -> dict[str, Any]: ...


def analysis_body(request: Any, kind: str) -> Any:
    """The body of a typed request of ``kind`` (``funnel`` or ``events``); anything else as it
    is (a dict is checked by the validators).

    :raises AnalyticsValidationError: for a typed request of the other kind.
    """
    if not isinstance(request, TypedAnalysisRequest) or isinstance(request, Mapping):
        return request
    if request.analysis_kind != kind:
        fail(
            "request",
            f"is {type(request).__name__} ({request.analysis_kind}); a {kind} request is needed",
        )
    return request.to_body()


def _analysis_request(
    request: Any, kind: str, validate: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> AnalysisRequest:
    if isinstance(request, AnalysisRequest):
        if request.kind != kind:
            fail("request", f"is a checked {request.kind} request; a {kind} request is needed")
        return request
    return AnalysisRequest(kind, validate(analysis_body(request, kind)), checked=_CHECKED)


def funnel_request(
    request: Mapping[str, Any] | TypedAnalysisRequest | AnalysisRequest,
) -> AnalysisRequest:
    """Check a funnel analysis body once (:func:`validate_funnel_request`); a checked
    :class:`AnalysisRequest` of a funnel is returned as it is, and a
    :class:`~airflow_provider_analytics.client.analysis_requests.FunnelRequest` is read
    through its body."""
    return _analysis_request(request, "funnel", validate_funnel_request)


def event_request(
    request: Mapping[str, Any] | TypedAnalysisRequest | AnalysisRequest,
) -> AnalysisRequest:
    """Check an event analysis body once (:func:`validate_event_request`); a checked
    :class:`AnalysisRequest` of an event analysis is returned as it is, and an
    :class:`~airflow_provider_analytics.client.analysis_requests.EventRequest` is read
    through its body."""
    return _analysis_request(request, "events", validate_event_request)


def conversion_measures(value: Any, field: str = "convertMeasures") -> list[dict[str, Any]]:
    """Measures of an ad tracking conversion query: ``[{expression, aggregator}]``."""
    if not isinstance(value, list) or not value:
        fail(field, "must be a non-empty list of {expression, aggregator}", value)
    result = []
    for i, item in enumerate(value):
        item_field = f"{field}[{i}]"
        spec = _mapping(item, item_field, ("expression", "aggregator"), "{expression, aggregator}")
        for key in ("expression", "aggregator"):
            if key not in spec:
                fail(_sub(item_field, key), "is required")
        kind = expression(spec["expression"], _sub(item_field, "expression"), MEASURABLE)
        agg = aggregator(spec["aggregator"], _sub(item_field, "aggregator"), kind)
        result.append({"expression": spec["expression"], "aggregator": agg})
    return result


def validate_cohort_code(value: Any, field: str = "cohort_code") -> str:
    """A cohort code (:func:`rules.cohort_code`)."""
    return rules.cohort_code(value, field)


def validate_limit(value: Any, field: str = "limit") -> int:
    """A row limit: an int (not a bool) from 1 to :data:`rules.COUNT_MAX`."""
    return rules.count(value, field)


def validate_properties(value: Any, field: str = "properties") -> list[str]:
    """User property ids (``$`` presets allowed) or ``tag.<tag code>`` keys to return."""
    if not isinstance(value, list | tuple) or not value:
        fail(field, "must be a non-empty list of property ids or tag.<code> (or be omitted)", value)
    result = []
    for i, item in enumerate(value):
        item_field = f"{field}[{i}]"
        text = rules.string(item, item_field)
        tag = text.removeprefix("tag.")
        if tag != text:
            if not _TAG_CODE.fullmatch(tag):
                fail(item_field, "tag.<code> needs a code of letters, digits, '_' or '-'", item)
        else:
            rules.id_ref(text, item_field)
        result.append(text)
    distinct(result, field, sent=_sent_property)
    return result


def _sent_property(name: str) -> str:
    """How a cohort request names a property: a tag by its bare code (spec 2.6)."""
    return name.removeprefix("tag.")


@dataclass(frozen=True)
class CohortQuery:
    """A checked cohort users request (spec 4.12/4.13), made by :func:`cohort_query`.

    The client's cohort methods take it in place of ``cohort_code`` and send it without
    checking it again, so a job can check its arguments before its first request and every
    rule still runs once.

    :param cohort_code: the cohort.
    :param limit: most users; ``None`` for the server's default (all, for an export).
    :param properties: property ids and ``tag.<code>`` keys (or bare tag codes); ``None`` for
        the plan's visible properties.
    """

    cohort_code: str
    limit: int | None = None
    properties: tuple[str, ...] | None = None
    checked: object = field(default=None, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        _made_by_a_check(self.checked, "CohortQuery", "cohort_query")

    def with_properties(self, properties: Any) -> CohortQuery:
        """This request for ``properties`` (checked now, e.g. ids read from the plan)."""
        return replace(self, properties=tuple(validate_properties(properties)))

    def sizing(self) -> CohortQuery:
        """The smallest request whose answer still holds the cohort's ``count``: one user,
        the first property."""
        return replace(self, limit=1, properties=self.properties[:1] if self.properties else None)

    def body(self) -> dict[str, Any]:
        """The request body; a tag is named by its bare code, as spec 2.6 describes."""
        body: dict[str, Any] = {"cohortCode": self.cohort_code}
        if self.limit is not None:
            body["limit"] = self.limit
        if self.properties is not None:
            body["properties"] = [p.removeprefix("tag.") for p in self.properties]
        return body


def cohort_query(cohort_code: Any, *, limit: Any = None, properties: Any = None) -> CohortQuery:
    """Check the arguments of a cohort users request once, into a :class:`CohortQuery`.

    A :class:`CohortQuery` given as ``cohort_code`` is returned as it is (it was checked when
    it was made); ``limit`` and ``properties`` then belong inside it, not beside it.

    :param cohort_code: the cohort, or a :class:`CohortQuery`.
    :param limit: most users, 1 to :data:`rules.COUNT_MAX`.
    :param properties: property ids (``$`` presets allowed) or ``tag.<code>`` keys.
    :raises AnalyticsValidationError: naming the first field that breaks a rule.
    """
    if isinstance(cohort_code, CohortQuery):
        for field, value in (("limit", limit), ("properties", properties)):
            if value is not None:
                fail(field, "give it inside the CohortQuery, not beside it", value)
        return cohort_code
    return CohortQuery(
        validate_cohort_code(cohort_code),
        None if limit is None else validate_limit(limit),
        None if properties is None else tuple(validate_properties(properties)),
        checked=_CHECKED,
    )


def cohort_body(
    cohort_code: Any,
    *,
    limit: Any = None,
    properties: Any = None,
    page: Any = None,
    page_size: Any = None,
) -> dict[str, Any]:
    """Body of a cohort users request (spec 4.12/4.13, paging from API notes).

    ``page`` and ``page_size`` go together, and ``page_size`` may not exceed ``limit``. A tag
    may be named ``tag.<code>`` (the key its values come back under) or by its bare code; the
    request always names the bare code, as spec 2.6 describes.

    :param cohort_code: the cohort, or a :class:`CohortQuery` (not checked again).
    """
    query = cohort_query(cohort_code, limit=limit, properties=properties)
    body = query.body()
    if (page is None) != (page_size is None):
        fail("page_size" if page_size is None else "page", "page and page_size go together")
    if page is not None:
        body["page"] = rules.count(page, "page")
        body["pageSize"] = rules.count(page_size, "page_size")
        if query.limit is not None and body["pageSize"] > query.limit:
            fail("page_size", f"must not exceed limit ({query.limit})", page_size)
    return body


_EVENT_PROPERTY_KEYS = ("id", "dataType", "data_type", "name", "remark")


def event_property_definitions(value: Any, field: str = "properties") -> list[dict[str, Any]]:
    """Properties of an event to add (spec 4.9): ``[{id, dataType, name?, remark?}]``.

    ``data_type`` is accepted for ``dataType``; ``None`` values are dropped.
    """
    if not isinstance(value, list | tuple):
        fail(field, "must be a list of {id, dataType, name, remark}", value)
    result = []
    for i, item in enumerate(value):
        item_field = f"{field}[{i}]"
        spec = _mapping(item, item_field, _EVENT_PROPERTY_KEYS, "{id, dataType, name, remark}")
        if "dataType" in spec and "data_type" in spec:
            fail(_sub(item_field, "data_type"), "give dataType or data_type, not both")
        data_type = spec.get("dataType", spec.get("data_type"))
        if data_type is None:
            fail(_sub(item_field, "dataType"), "is required")
        definition = {
            "id": rules.new_id(spec.get("id"), _sub(item_field, "id")),
            "dataType": rules.data_type(data_type, _sub(item_field, "dataType")),
        }
        if spec.get("name") is not None:
            definition["name"] = rules.name(spec["name"], _sub(item_field, "name"))
        if spec.get("remark") is not None:
            definition["remark"] = rules.remark(spec["remark"], _sub(item_field, "remark"))
        result.append(definition)
    distinct([d["id"] for d in result], field, position=lambda i: f"{field}[{i}].id")
    return result


def changes(*, name: Any = None, data_type: Any = None, remark: Any = None) -> dict[str, Any]:
    """Body of a tracking plan update: only what changes, at least one thing."""
    body: dict[str, Any] = {}
    if name is not None:
        body["name"] = rules.name(name)
    if data_type is not None:
        body["dataType"] = rules.data_type(data_type)
    if remark is not None:
        body["remark"] = rules.remark(remark)
    if not body:
        fail("name", "give at least one of name, data_type or remark to change")
    return body
