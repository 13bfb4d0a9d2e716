"""The vectorised engine equals the brute-force oracle on generated logs and requests.

Logs are small (up to 30 events of 8 users over four days) on a coarse time grid, so
same-second ties, window edges, nulls, masked and wrongly typed user values, repeated
values and every data type occur often. Requests cover every aggregator and filter
function, buckets, several byFields, every supported unit, conversion windows, crowds,
sampling, limits and ``data_until``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from analytics_emulator import catalog
from analytics_emulator.analytics import analyze_events, analyze_funnel
from analytics_emulator.eventlog import EventLog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.oracle import UsersPopulation, differences, oracle_events, oracle_funnel

COHORTS = {**catalog.COHORTS, "trio": 3}
EVENT_IDS = ["$startup", "$pageview", "search", "add_to_cart", "purchase", "share"]
STRINGS = ["a", "b", "ab", "", "iOS", "北京", "未知"]
NUMBERS = [0, 1, 2, 5, 9.5, 10, 100, 250.25, 600, 800, 1000, -3]
DATETIMES = [
    "2024-01-01 10:00:00",
    "2024-01-02 00:00:00",
    "2024-01-02 23:59:59",
    "2024-01-03",
    "2024-01-01 10:00:00.500",
]
WORDS = ["A", "B", "C"]

EVENT_PROPERTIES = {
    "$platform": "string",
    "keyword": "string",
    "amount": "number",
    "price": "number",
    "duration": "number",
    "paid_with_points": "boolean",
    "payment_time": "datetime",
    "coupon_codes": "array<string>",
}
USER_PROPERTIES = {
    "gender": "string",
    "age": "number",
    "distinct_id": "number",
    "is_vip": "boolean",
    "register_time": "datetime",
    "interests": "array<string>",
}
# Property expressions with their data types, as requests may name them.
PROPERTY_EXPRESSIONS = [
    ("event.$Anything.$platform", "string"),
    ("event.search.keyword", "string"),
    ("event.purchase.amount", "number"),
    ("event.add_to_cart.price", "number"),
    ("event.$pageview.duration", "number"),
    ("event.purchase.paid_with_points", "boolean"),
    ("event.purchase.payment_time", "datetime"),
    ("event.purchase.coupon_codes", "array<string>"),
    *((f"user.{p}", t) for p, t in USER_PROPERTIES.items()),
]
FUNCTIONS = {
    "string": ["EQ", "NOT_EQ", "CONTAIN", "NOT_CONTAIN", "NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY"],
    "number": ["EQ", "NOT_EQ", "GT", "GTE", "LT", "LTE", "RANGE", "NULL", "NOT_NULL"],
    "boolean": ["TRUE", "FALSE", "NULL", "NOT_NULL"],
    "datetime": ["ABSOLUTE_TIME", "NULL", "NOT_NULL"],
    "array<string>": ["EQ", "CONTAIN", "NOT_CONTAIN", "NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY"],
}
BIG_IDS = [4255875062385414000, 4255875062385414001, -4635244755532264000]


def value_of(data_type: str, *, user: bool = False) -> st.SearchStrategy[Any]:
    if data_type == "string":
        return st.sampled_from(STRINGS)
    if data_type == "number":
        return st.sampled_from(NUMBERS + (BIG_IDS if user else []))
    if data_type == "boolean":
        return st.booleans()
    if data_type == "datetime":
        return st.sampled_from(DATETIMES)
    return st.lists(st.sampled_from(WORDS), max_size=2)


@st.composite
def events(draw: st.DrawFn) -> list[dict[str, Any]]:
    found = []
    for _ in range(draw(st.integers(0, 30))):
        moment = dt.datetime(2024, 1, 1) + dt.timedelta(
            days=draw(st.integers(0, 3)),
            hours=draw(st.sampled_from([0, 9, 10, 23])),
            minutes=draw(st.sampled_from([0, 1, 30, 59])),
            seconds=draw(st.sampled_from([0, 30])),
        )
        properties = {
            prop: draw(value_of(data_type))
            for prop, data_type in EVENT_PROPERTIES.items()
            if draw(st.booleans())
        }
        found.append(
            {
                "user": draw(st.integers(0, 7)),
                "event": draw(st.sampled_from(EVENT_IDS)),
                "time": moment.strftime("%Y-%m-%d %H:%M:%S"),
                "properties": properties,
            }
        )
    return found


@st.composite
def users(draw: st.DrawFn) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for user in range(8):
        record: dict[str, Any] = {}
        for prop, data_type in USER_PROPERTIES.items():
            kind = draw(st.sampled_from(["value", "value", "value", "null", "masked", "wrong"]))
            if kind == "value":
                value = draw(value_of(data_type, user=True))
                if prop == "distinct_id":
                    value = draw(st.sampled_from([*BIG_IDS, 1, 2]))
                record[prop] = value
            elif kind == "masked":
                record[prop] = catalog.MASKED_MARKER
            elif kind == "wrong":
                record[prop] = {"string": 7, "number": "12"}.get(data_type, "x")
            else:
                record[prop] = None
        if draw(st.integers(0, 7)):
            found[user] = record
    return found


@st.composite
def params(draw: st.DrawFn, function: str, data_type: str, expression: str) -> list[Any]:
    if function in {"NULL", "NOT_NULL", "EMPTY", "NOT_EMPTY", "TRUE", "FALSE"}:
        return []
    if function == "ABSOLUTE_TIME":
        bounds = sorted(draw(st.lists(st.sampled_from(DATETIMES[:4]), min_size=2, max_size=2)))
        return bounds
    if data_type == "number":
        pool = [*BIG_IDS, 1, 2] if expression == "user.distinct_id" else NUMBERS
        if function == "RANGE":
            return sorted(draw(st.lists(st.sampled_from(pool), min_size=2, max_size=2)))
        count = draw(st.integers(1, 2)) if function in {"EQ", "NOT_EQ"} else 1
        values = draw(st.lists(st.sampled_from(pool), min_size=count, max_size=count))
        return [str(v) if draw(st.booleans()) and isinstance(v, int) else v for v in values]
    pool = WORDS if data_type == "array<string>" else STRINGS
    count = draw(st.integers(1, 3)) if function in {"EQ", "NOT_EQ"} else 1
    return draw(st.lists(st.sampled_from(pool), min_size=count, max_size=count))


@st.composite
def filters(draw: st.DrawFn) -> dict[str, Any] | None:
    if draw(st.integers(0, 2)) == 0:
        return None
    conditions = []
    for _ in range(draw(st.integers(0, 2))):
        expression, data_type = draw(st.sampled_from(PROPERTY_EXPRESSIONS))
        function = draw(st.sampled_from(FUNCTIONS[data_type]))
        conditions.append(
            {
                "expression": expression,
                "function": function,
                "params": draw(params(function, data_type, expression)),
            }
        )
    return {"conditions": conditions, "relation": draw(st.sampled_from(["AND", "and", "OR", "Or"]))}


@st.composite
def split(draw: st.DrawFn) -> dict[str, Any]:
    expression, data_type = draw(st.sampled_from(PROPERTY_EXPRESSIONS))
    buckets = None
    if data_type == "number" and draw(st.booleans()):
        buckets = sorted(set(draw(st.lists(st.sampled_from([0, 5, 9.5, 100, 600]), max_size=3))))
    return {"expression": expression, "buckets": buckets}


@st.composite
def common(draw: st.DrawFn) -> dict[str, Any]:
    first = dt.date(2023, 12, 31) + dt.timedelta(days=draw(st.integers(0, 3)))
    last = first + dt.timedelta(days=draw(st.integers(0, 4)))
    body: dict[str, Any] = {
        "crowds": [draw(st.sampled_from(["$ALL", "$ALL", "trio", "cohort_tiny", "cohort_empty"]))],
        "fromDate": first.isoformat(),
        "toDate": last.isoformat(),
        "filter": draw(filters()),
    }
    factor = draw(st.sampled_from([None, 1, 2, 3]))
    if factor is not None:
        body["samplingFactor"] = factor
    return body


@st.composite
def funnel_requests(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(2, 4))
    steps = [
        {
            "expression": f"event.{draw(st.sampled_from([*EVENT_IDS, '$Anything']))}",
            "filter": draw(filters()),
        }
        for _ in range(count)
    ]
    body = {"steps": steps, **draw(common())}
    if draw(st.booleans()):
        body["convertTime"] = draw(st.sampled_from([1, 2, 30]))
        body["convertTimeUnit"] = draw(st.sampled_from(["DAY", "HOUR", "MINUTE"]))
    if draw(st.booleans()):
        body["byField"] = draw(split())
        if draw(st.booleans()):
            body["byStepIndex"] = draw(st.integers(-1, count - 1))
        if draw(st.booleans()):
            body["limit"] = draw(st.integers(1, 3))
    return body


@st.composite
def measures(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        event = draw(st.sampled_from([*EVENT_IDS, "$Anything"]))
        aggregator = draw(st.sampled_from(["TRIGGER_USER_COUNT", "TOTAL_COUNT", "AVG_COUNT"]))
        found = {"expression": f"event.{event}", "aggregator": aggregator}
    else:
        expression, data_type = draw(
            st.sampled_from([p for p in PROPERTY_EXPRESSIONS if p[0].startswith("event.")])
        )
        numeric = ["SUM", "AVG", "MAX", "MIN", "AVG_PER"] if data_type == "number" else []
        aggregator = draw(st.sampled_from(["REMOVE_DUMPLICATE", *numeric]))
        found = {"expression": expression, "aggregator": aggregator}
    measure_filter = draw(filters())
    if measure_filter is not None:
        found["filter"] = measure_filter
    return found


@st.composite
def event_requests(draw: st.DrawFn) -> dict[str, Any]:
    body = {"measures": draw(st.lists(measures(), min_size=1, max_size=3)), **draw(common())}
    unit = draw(st.sampled_from([None, "DAY", "WEEK", "MONTH", "HOUR"]))
    if unit == "HOUR":
        body["toDate"] = body["fromDate"]
    if unit is not None:
        body["unit"] = unit
    if draw(st.booleans()):
        body["byFields"] = draw(st.lists(split(), min_size=1, max_size=2))
    return body


DATA_UNTIL = st.one_of(
    st.none(), st.dates(min_value=dt.date(2023, 12, 30), max_value=dt.date(2024, 1, 5))
)
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def without_time(answer: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(answer.pop("reportUpdateTime"), str)
    return answer


@SETTINGS
@given(events(), users(), funnel_requests(), DATA_UNTIL)
def test_funnel_engine_equals_oracle(
    records: list[dict[str, Any]],
    people: dict[int, dict[str, Any]],
    request: dict[str, Any],
    data_until: dt.date | None,
) -> None:
    answer = analyze_funnel(
        request,
        log=EventLog.from_records(records),
        population=UsersPopulation(people),
        cohorts=COHORTS,
        data_until=data_until,
    )
    expected = oracle_funnel(records, people, request, cohorts=COHORTS, data_until=data_until)
    assert differences(without_time(answer), expected) == []


@SETTINGS
@given(events(), users(), event_requests(), DATA_UNTIL)
def test_event_engine_equals_oracle(
    records: list[dict[str, Any]],
    people: dict[int, dict[str, Any]],
    request: dict[str, Any],
    data_until: dt.date | None,
) -> None:
    answer = analyze_events(
        request,
        log=EventLog.from_records(records),
        population=UsersPopulation(people),
        cohorts=COHORTS,
        data_until=data_until,
    )
    expected = oracle_events(records, people, request, cohorts=COHORTS, data_until=data_until)
    assert differences(without_time(answer), expected) == []
