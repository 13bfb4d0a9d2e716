"""Invalid analysis bodies: a 400 (BadRequest) naming the parameter, never another error."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from analytics_emulator import catalog
from analytics_emulator.analytics import analyze_events, analyze_funnel
from analytics_emulator.errors import BadRequest
from analytics_emulator.eventlog import EventLog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle import UsersPopulation

LOG = EventLog.from_records(
    [
        {"user": 0, "event": "$startup", "time": "2024-01-01 10:00:00", "properties": {}},
        {
            "user": 0,
            "event": "purchase",
            "time": "2024-01-01 10:05:00",
            "properties": {"amount": 10, "coupon_codes": ["A"], "$platform": "iOS"},
        },
        {"user": 1, "event": "$pageview", "time": "2024-01-02 11:00:00", "properties": {}},
    ]
)
POPULATION = UsersPopulation({0: {"age": 30, "gender": "女"}, 1: {"age": 41}})
FUNNEL = {
    "steps": [
        {"expression": "event.$startup", "filter": None},
        {
            "expression": "event.purchase",
            "filter": {
                "conditions": [
                    {"expression": "event.purchase.amount", "function": "GT", "params": [1]}
                ],
                "relation": "AND",
            },
        },
    ],
    "crowds": ["$ALL"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-03",
    "byField": {"expression": "user.age", "buckets": [35]},
    "byStepIndex": -1,
    "convertTime": 1,
    "convertTimeUnit": "DAY",
    "samplingFactor": 1,
    "useCache": True,
    "limit": 10,
}
EVENTS = {
    "measures": [
        {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
        {
            "expression": "event.purchase.amount",
            "aggregator": "SUM",
            "filter": {
                "conditions": [{"expression": "user.gender", "function": "EQ", "params": ["女"]}]
            },
        },
    ],
    "crowds": ["cohort_tiny"],
    "fromDate": "2024-01-01",
    "toDate": "2024-01-03",
    "unit": "DAY",
    "byFields": [{"expression": "event.$Anything.$platform", "buckets": None}],
    "filter": {"conditions": [], "relation": "or"},
    "samplingFactor": 2,
    "useCache": False,
}


def funnel(request: object) -> dict[str, Any]:
    return analyze_funnel(
        request, log=LOG, population=POPULATION, cohorts=catalog.COHORTS, data_until=None
    )


def events(request: object) -> dict[str, Any]:
    return analyze_events(
        request,
        log=LOG,
        population=POPULATION,
        cohorts=catalog.COHORTS,
        data_until=dt.date(2024, 1, 2),
    )


def changed(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with the value at ``path`` replaced (``...`` deletes it)."""
    body = copy.deepcopy(base)
    target = body
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return body


def test_the_base_bodies_are_valid() -> None:
    assert funnel(FUNNEL)["byValues"][0] == "-1"
    assert events(EVENTS)["numRows"] >= 1


COMMON = [
    (("fromDate",), ..., ["fromDate"]),
    (("fromDate",), "2024/01/01", ["fromDate"]),
    (("toDate",), "2024-02-30", ["toDate"]),
    (("toDate",), 20240103, ["toDate"]),
    (("fromDate",), "2024-01-04", ["fromDate", "toDate"]),
    (("crowds",), ..., ["crowds"]),
    (("crowds",), [], ["crowds"]),
    (("crowds",), ["$ALL", "cohort_tiny"], ["crowds"]),
    (("crowds",), ["no_such_cohort"], ["crowds"]),
    (("crowds",), "$ALL", ["crowds"]),
    (("samplingFactor",), 0, ["samplingFactor"]),
    (("samplingFactor",), 65, ["samplingFactor"]),
    (("samplingFactor",), 1.5, ["samplingFactor"]),
    (("samplingFactor",), "2", ["samplingFactor"]),
    (("samplingFactor",), True, ["samplingFactor"]),
    (("useCache",), "yes", ["useCache"]),
    (("filter",), [], ["filter"]),
    (("filter",), {"conditions": {}}, ["filter.conditions"]),
    (("filter",), {"conditions": [], "relation": "XOR"}, ["filter.relation"]),
    (("filter",), {"conditions": ["x"]}, ["filter.conditions[0]"]),
]


def condition(expression: str, function: str, params: Any) -> dict[str, Any]:
    return {"conditions": [{"expression": expression, "function": function, "params": params}]}


FILTERS = [
    (condition("event.purchase.amount", "LIKE", ["1"]), "function"),
    (condition("event.purchase.amount", "CONTAIN", ["1"]), "function"),
    (condition("event.purchase.$platform", "GT", ["1"]), "function"),
    (condition("event.purchase.paid_with_points", "EQ", [True]), "function"),
    (condition("event.purchase.payment_time", "EQ", ["2024-01-01"]), "function"),
    (condition("event.purchase.coupon_codes", "NOT_EQ", ["A"]), "function"),
    (condition("event.purchase.amount", None, [1]), "function"),
    (condition("event.purchase.amount", "EQ", []), "params"),
    (condition("event.purchase.amount", "GT", [1, 2]), "params"),
    (condition("event.purchase.amount", "GT", ["abc"]), "params"),
    (condition("event.purchase.amount", "GT", [float("nan")]), "params"),
    (condition("event.purchase.amount", "GT", [10**400]), "params"),
    (condition("event.purchase.amount", "GT", [True]), "params"),
    (condition("event.purchase.amount", "RANGE", [5]), "params"),
    (condition("event.purchase.amount", "RANGE", [5, 1]), "params"),
    (condition("event.purchase.amount", "NULL", [1]), "params"),
    (condition("event.purchase.amount", "GT", "1"), "params"),
    (condition("event.purchase.$platform", "EQ", [1]), "params"),
    (condition("event.purchase.$platform", "CONTAIN", ["a", "b"]), "params"),
    (condition("event.purchase.paid_with_points", "TRUE", [True]), "params"),
    (condition("event.purchase.payment_time", "ABSOLUTE_TIME", ["2024-01-01"]), "params"),
    (
        condition("event.purchase.payment_time", "ABSOLUTE_TIME", ["2024-01-02", "2024-01-01"]),
        "params",
    ),
    (
        condition("event.purchase.payment_time", "ABSOLUTE_TIME", ["yesterday", "2024-01-01"]),
        "params",
    ),
    (condition("event.purchase.no_such_property", "NULL", []), "expression"),
    (condition("event.search.amount", "NULL", []), "expression"),
    (condition("event.no_such_event.amount", "NULL", []), "expression"),
    (condition("user.no_such_property", "NULL", []), "expression"),
    (condition("event.purchase", "NULL", []), "expression"),
    (condition("purchase.amount", "NULL", []), "expression"),
    (condition("event.purchase.amount.extra", "NULL", []), "expression"),
    (condition("", "NULL", []), "expression"),
]

FUNNEL_ONLY = [
    (("steps",), ..., ["steps"]),
    (("steps",), [], ["steps"]),
    (("steps",), [{"expression": "event.$startup"}], ["steps"]),
    (("steps", 0), "event.$startup", ["steps[0]"]),
    (("steps", 1, "expression"), "event.purchase.amount", ["steps[1].expression"]),
    (("steps", 1, "expression"), "event.teleport", ["steps[1].expression"]),
    (("steps", 1, "expression"), "user.age", ["steps[1].expression"]),
    (("steps", 0, "expression"), ..., ["steps[0].expression"]),
    (("convertTimeUnit",), ..., ["convertTimeUnit"]),
    (("convertTime",), ..., ["convertTime"]),
    (("convertTime",), 0, ["convertTime"]),
    (("convertTime",), -3, ["convertTime"]),
    (("convertTime",), 1.5, ["convertTime"]),
    (("convertTimeUnit",), "WEEK", ["convertTimeUnit"]),
    (("convertTimeUnit",), 3600, ["convertTimeUnit"]),
    (("byStepIndex",), 2, ["byStepIndex"]),
    (("byStepIndex",), -2, ["byStepIndex"]),
    (("byStepIndex",), "0", ["byStepIndex"]),
    (("byField",), "user.age", ["byField"]),
    (("byField", "expression"), "event.purchase", ["byField.expression"]),
    (("byField", "expression"), "user.gender", ["byField.buckets"]),
    (("byField", "buckets"), [800, 600], ["byField.buckets"]),
    (("byField", "buckets"), [600, 600], ["byField.buckets"]),
    (("byField", "buckets"), ["600"], ["byField.buckets"]),
    (("byField", "buckets"), [float("inf")], ["byField.buckets"]),
    (("byField", "buckets"), 600, ["byField.buckets"]),
    (("limit",), 0, ["limit"]),
    (("limit",), "10", ["limit"]),
]

EVENTS_ONLY = [
    (("measures",), ..., ["measures"]),
    (("measures",), [], ["measures"]),
    (("measures",), {"expression": "event.search"}, ["measures"]),
    (("measures", 0), "event.search", ["measures[0]"]),
    (("measures", 0, "aggregator"), "SUM", ["measures[0].aggregator"]),
    (("measures", 0, "aggregator"), "COUNT", ["measures[0].aggregator"]),
    (("measures", 0, "aggregator"), ..., ["measures[0].aggregator"]),
    (("measures", 1, "aggregator"), "TOTAL_COUNT", ["measures[1].aggregator"]),
    (("measures", 1, "expression"), "event.purchase.coupon_codes", ["measures[1].aggregator"]),
    (("measures", 1, "expression"), "event.purchase.product_id", ["measures[1].aggregator"]),
    (("measures", 1, "expression"), "user.age", ["measures[1].expression"]),
    (("measures", 1, "expression"), "event.search.amount", ["measures[1].expression"]),
    (("measures", 0, "expression"), "event.nothing", ["measures[0].expression"]),
    (("unit",), "SECOND", ["unit"]),
    (("unit",), "MINUTE", ["unit"]),
    (("unit",), "QUARTER", ["unit"]),
    (("unit",), "FORTNIGHT", ["unit"]),
    (("unit",), "day", ["unit"]),
    (("unit",), "HOUR", ["unit"]),
    (("byFields",), {"expression": "user.age"}, ["byFields"]),
    (("byFields", 0), "user.age", ["byFields[0]"]),
    (("byFields", 0, "expression"), "user.nope", ["byFields[0].expression"]),
    (("byFields", 0, "expression"), "event.search", ["byFields[0].expression"]),
    (("byFields", 0, "buckets"), [1, 2], ["byFields[0].buckets"]),
]


@pytest.mark.parametrize(("path", "value", "params"), COMMON + FUNNEL_ONLY)
def test_funnel_rejects(path: tuple[Any, ...], value: Any, params: list[str]) -> None:
    with pytest.raises(BadRequest) as caught:
        funnel(changed(FUNNEL, path, value))
    assert caught.value.data == params
    assert caught.value.status == 400
    assert caught.value.body()["msg"]


@pytest.mark.parametrize(("path", "value", "params"), COMMON + EVENTS_ONLY)
def test_events_reject(path: tuple[Any, ...], value: Any, params: list[str]) -> None:
    with pytest.raises(BadRequest) as caught:
        events(changed(EVENTS, path, value))
    assert caught.value.data == params


@pytest.mark.parametrize(("bad_filter", "part"), FILTERS)
def test_filters_are_checked_everywhere(bad_filter: dict[str, Any], part: str) -> None:
    places = [
        (funnel, FUNNEL, ("filter",), "filter"),
        (funnel, FUNNEL, ("steps", 1, "filter"), "steps[1].filter"),
        (events, EVENTS, ("filter",), "filter"),
        (events, EVENTS, ("measures", 0, "filter"), "measures[0].filter"),
    ]
    for analyze, base, path, name in places:
        with pytest.raises(BadRequest) as caught:
            analyze(changed(base, path, bad_filter))
        assert caught.value.data == [f"{name}.conditions[0].{part}"]


@pytest.mark.parametrize("body", [None, [], "steps", 3])
def test_a_body_that_is_not_an_object(body: object) -> None:
    for analyze in (funnel, events):
        with pytest.raises(BadRequest) as caught:
            analyze(body)
        assert caught.value.data == ["body"]


def test_lenient_but_valid_forms_are_accepted() -> None:
    # Relation in any case, an integral float sampling factor, numeric strings as number
    # params, date-only datetimes, empty buckets, byStepIndex without byField.
    loose = changed(FUNNEL, ("filter",), condition("user.age", "NOT_NULL", None))
    loose = changed(loose, ("samplingFactor",), 2.0)
    loose = changed(loose, ("byField",), {"expression": "user.age", "buckets": []})
    assert funnel(loose)["byValues"] == ["-1", "30"]
    no_split = changed(changed(FUNNEL, ("byField",), None), ("byStepIndex",), 1)
    assert funnel(no_split)["byValues"] == ["-1"]
    ranged = changed(
        EVENTS,
        ("filter",),
        {
            "conditions": [
                {"expression": "event.purchase.amount", "function": "RANGE", "params": ["1", 10]},
                {
                    "expression": "event.purchase.payment_time",
                    "function": "ABSOLUTE_TIME",
                    "params": ["2024-01-01", "2024-01-01 23:59:59.999"],
                },
            ],
            "relation": "Or",
        },
    )
    assert events(ranged)["numRows"] == 1


JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        [
            "event.$startup",
            "event.purchase.amount",
            "user.age",
            "EQ",
            "GT",
            "RANGE",
            "DAY",
            "HOUR",
            "$ALL",
            "2024-01-01",
            "2024-01-02",
        ]
    ),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(body)))
        body = changed(body, path, draw(JSON_VALUES))
    return body


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated(FUNNEL), JSON_VALUES))
def test_fuzzed_funnel_bodies_answer_or_raise_bad_request(body: Any) -> None:
    try:
        answer = funnel(body)
    except BadRequest as exc:
        assert exc.data
    else:
        assert answer["byValues"][0] == "-1"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated(EVENTS), JSON_VALUES))
def test_fuzzed_event_bodies_answer_or_raise_bad_request(body: Any) -> None:
    try:
        answer = events(body)
    except BadRequest as exc:
        assert exc.data
    else:
        assert answer["numRows"] == len(answer["rows"])
