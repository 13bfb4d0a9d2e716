"""Event analysis on a hand-built log: numbers worked out by hand, and equal to the oracle."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from analytics_emulator import catalog
from analytics_emulator.analytics import analyze_events
from analytics_emulator.eventlog import EventLog

from tests.oracle import UsersPopulation, differences, oracle_events


def ev(user: int, event: str, time: str, **properties: Any) -> dict[str, Any]:
    return {"user": user, "event": event, "time": time, "properties": properties}


# 2024-01-01 is a Monday. Purchases: u0 twice on 01-01, u1 on 01-02, u2 on 01-08 (next
# week), u3 on 02-02 (next month). Page views: u1 01-02, u2 01-08, u0 01-09. A share by u3.
EVENTS = [
    ev(
        0,
        "purchase",
        "2024-01-01 09:15:00",
        price=100,
        quantity=2,
        amount=200.0,
        coupon_codes=["NEW10", "FREESHIP"],
        paid_with_points=False,
        payment_time="2024-01-01 09:15:30",
        **{"$platform": "iOS"},
    ),
    ev(
        0,
        "purchase",
        "2024-01-01 21:40:00",
        price=650.5,
        quantity=1,
        amount=650.5,
        coupon_codes=[],
        paid_with_points=True,
        **{"$platform": "iOS"},
    ),
    ev(
        1,
        "purchase",
        "2024-01-02 10:00:00",
        price=100,
        quantity=3,
        amount=290,
        coupon_codes=["VIP20"],
        **{"$platform": "Android"},
    ),
    ev(1, "$pageview", "2024-01-02 10:05:00", duration=30, **{"$platform": "Android"}),
    ev(3, "share", "2024-01-03 18:00:00", target="wechat"),
    ev(2, "purchase", "2024-01-08 08:00:00", price=100, quantity=9, amount=900),
    ev(2, "$pageview", "2024-01-08 08:01:00", **{"$platform": "iOS"}),
    ev(0, "$pageview", "2024-01-09 12:00:00", duration=45.5, **{"$platform": "iOS"}),
    ev(3, "purchase", "2024-02-02 10:00:00", price=20, quantity=1, amount=20),
]
USERS = {0: {"gender": "女"}, 1: {"gender": "男"}, 2: {"gender": "女"}, 3: {}}
LOG = EventLog.from_records(EVENTS)
TEN_DAYS = {"fromDate": "2024-01-01", "toDate": "2024-01-10"}


def body(measures: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    return {"measures": measures, "crowds": ["$ALL"], **TEN_DAYS, **overrides}


def measure(expression: str, aggregator: str, **conditions: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"expression": expression, "aggregator": aggregator}
    if conditions:
        found["filter"] = conditions
    return found


def run(request: dict[str, Any], *, cohorts=None, data_until=None) -> dict[str, Any]:
    """Engine answer, after checking it against the oracle on the same input."""
    cohorts = catalog.COHORTS if cohorts is None else cohorts
    answer = analyze_events(
        request,
        log=LOG,
        population=UsersPopulation(USERS),
        cohorts=cohorts,
        data_until=data_until,
    )
    reference = oracle_events(EVENTS, USERS, request, cohorts=cohorts, data_until=data_until)
    answer_without_time = {k: v for k, v in answer.items() if k != "reportUpdateTime"}
    assert differences(answer_without_time, reference) == []
    return answer


def test_event_aggregators_per_day_and_over_the_range() -> None:
    answer = run(
        body(
            [
                measure("event.purchase", "TOTAL_COUNT"),
                measure("event.purchase", "TRIGGER_USER_COUNT"),
                measure("event.purchase", "AVG_COUNT"),
                measure("event.$Anything", "TRIGGER_USER_COUNT"),
            ],
            unit="DAY",
        )
    )
    assert answer["measures"] == [
        "event.purchase",
        "event.purchase",
        "event.purchase",
        "event.$Anything",
    ]
    assert answer["byFields"] == []
    assert answer["series"] == [f"2024-01-{d:02d}" for d in range(1, 11)]
    assert answer["numRows"] == 1
    (row,) = answer["rows"]
    assert row["byValue"] == []
    assert row["values"][0] == [2, 1, 0, 0, 0, 0, 0, 1, 0, 0]
    assert row["values"][1] == [1, 1, 0, 0, 0, 0, 0, 1, 0, 0]
    assert row["values"][2] == [2.0, 1.0, 0, 0, 0, 0, 0, 1.0, 0, 0]
    assert row["values"][3] == [1, 1, 1, 0, 0, 0, 0, 1, 1, 0]
    # Distinct users over the range: u0 is active on two days but counted once.
    assert row["sum"] == [4, 3, pytest.approx(4 / 3), 4]
    assert dt.datetime.strptime(answer["reportUpdateTime"], "%Y-%m-%d %H:%M:%S")


def test_property_aggregators_per_week() -> None:
    answer = run(
        body(
            [
                measure("event.purchase.amount", "SUM"),
                measure("event.purchase.amount", "AVG"),
                measure("event.purchase.amount", "MAX"),
                measure("event.purchase.amount", "MIN"),
                measure("event.purchase.amount", "AVG_PER"),
                measure("event.purchase.price", "REMOVE_DUMPLICATE"),
                measure("event.purchase.coupon_codes", "REMOVE_DUMPLICATE"),
            ],
            unit="WEEK",
        )
    )
    assert answer["series"] == ["2024-01-01", "2024-01-08"]
    (row,) = answer["rows"]
    # Week 1: 200 + 650.5 (u0) + 290 (u1); week 2: 900 (u2).
    assert row["values"][0] == [1140.5, 900.0]
    assert row["values"][1] == [pytest.approx(1140.5 / 3), 900.0]
    assert row["values"][2] == [650.5, 900.0]
    assert row["values"][3] == [200.0, 900.0]
    assert row["values"][4] == [1140.5 / 2, 900.0]
    # Prices 100 and 650.5 in week 1, 100 again in week 2: two distinct over the range.
    assert row["values"][5] == [2, 1]
    # Coupon lists [NEW10, FREESHIP], [], [VIP20]; u2's purchase has none (null).
    assert row["values"][6] == [3, 0]
    assert row["sum"] == [
        2040.5,
        pytest.approx(2040.5 / 4),
        900.0,
        200.0,
        pytest.approx(2040.5 / 3),
        2,
        3,
    ]


def test_by_fields_with_buckets_user_properties_and_unknown() -> None:
    answer = run(
        body(
            [measure("event.purchase", "TOTAL_COUNT"), measure("event.$pageview", "TOTAL_COUNT")],
            byFields=[
                {"expression": "event.purchase.amount", "buckets": [250, 600]},
                {"expression": "user.gender", "buckets": None},
            ],
        )
    )
    assert answer["byFields"] == ["event.purchase.amount", "user.gender"]
    # Page views carry no amount: their bucket is 未知.
    assert [(row["byValue"], row["sum"]) for row in answer["rows"]] == [
        (["-∞~250", "女"], [1, 0]),
        (["250~600", "男"], [1, 0]),
        (["600~+∞", "女"], [2, 0]),
        (["未知", "女"], [0, 2]),
        (["未知", "男"], [0, 1]),
    ]
    assert answer["numRows"] == 5
    assert answer["rows"][2]["values"][0] == [1, 0, 0, 0, 0, 0, 0, 1, 0, 0]


def test_labels_of_lists_booleans_and_datetimes() -> None:
    purchases = [measure("event.purchase", "TOTAL_COUNT")]
    lists = run(body(purchases, byFields=[{"expression": "event.purchase.coupon_codes"}]))
    assert [row["byValue"] for row in lists["rows"]] == [
        ['["NEW10","FREESHIP"]'],
        ['["VIP20"]'],
        ["[]"],
        ["未知"],
    ]
    flags = run(body(purchases, byFields=[{"expression": "event.purchase.paid_with_points"}]))
    assert [(row["byValue"], row["sum"]) for row in flags["rows"]] == [
        (["false"], [1]),
        (["true"], [1]),
        (["未知"], [2]),
    ]
    times = run(body(purchases, byFields=[{"expression": "event.purchase.payment_time"}]))
    assert [row["byValue"] for row in times["rows"]] == [["2024-01-01 09:15:30"], ["未知"]]


def conditions(*items: dict[str, Any], relation: str = "AND") -> dict[str, Any]:
    return {"conditions": list(items), "relation": relation}


def cond(expression: str, function: str, *params: Any) -> dict[str, Any]:
    return {"expression": expression, "function": function, "params": list(params)}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (cond("event.purchase.coupon_codes", "CONTAIN", "FREESHIP"), 1),
        (cond("event.purchase.coupon_codes", "NOT_CONTAIN", "FREESHIP"), 3),
        (cond("event.purchase.coupon_codes", "EQ", "VIP20"), 1),
        (cond("event.purchase.coupon_codes", "EQ", "FREESHIP"), 0),
        (cond("event.purchase.coupon_codes", "EMPTY"), 2),
        (cond("event.purchase.coupon_codes", "NOT_EMPTY"), 2),
        (cond("event.purchase.paid_with_points", "TRUE"), 1),
        (cond("event.purchase.paid_with_points", "FALSE"), 1),
        (cond("event.purchase.paid_with_points", "NULL"), 2),
        (cond("event.purchase.paid_with_points", "NOT_NULL"), 2),
        (cond("event.purchase.amount", "RANGE", 200, 650.5), 3),
        (cond("event.purchase.amount", "GT", 650.5), 1),
        (cond("event.purchase.amount", "GTE", 650.5), 2),
        (cond("event.purchase.amount", "LT", 290), 1),
        (cond("event.purchase.amount", "LTE", "290"), 2),
        (cond("event.purchase.amount", "EQ", 200, 900), 2),
        (cond("event.purchase.amount", "NOT_EQ", 200, 900), 2),
        (cond("event.purchase.payment_time", "ABSOLUTE_TIME", "2024-01-01", "2024-01-01"), 1),
        (
            cond(
                "event.purchase.payment_time",
                "ABSOLUTE_TIME",
                "2024-01-01 09:15:31",
                "2024-01-02 00:00:00",
            ),
            0,
        ),
        (cond("event.purchase.$platform", "EQ", "iOS", "Android"), 3),
        (cond("event.purchase.$platform", "NOT_EQ", "iOS"), 2),
        (cond("event.purchase.$platform", "CONTAIN", "dro"), 1),
        (cond("event.purchase.$platform", "NOT_EMPTY"), 3),
        (cond("event.purchase.$platform", "EMPTY"), 1),
        (cond("user.gender", "EQ", "女"), 3),
        (cond("user.gender", "NULL"), 0),
    ],
)
def test_measure_filter_functions(condition: dict[str, Any], expected: int) -> None:
    answer = run(body([measure("event.purchase", "TOTAL_COUNT", **conditions(condition))]))
    assert answer["rows"][0]["sum"] == [expected]


def test_relations_in_any_case_and_global_filters() -> None:
    big_or_male = conditions(
        cond("event.purchase.amount", "GT", 800), cond("user.gender", "EQ", "男"), relation="or"
    )
    over_100_and_female = conditions(
        cond("event.purchase.amount", "GT", 100), cond("user.gender", "EQ", "女"), relation="And"
    )
    answer = run(
        body(
            [
                measure("event.purchase", "TOTAL_COUNT", **big_or_male),
                measure("event.purchase", "TOTAL_COUNT", **over_100_and_female),
            ]
        )
    )
    assert answer["rows"][0]["sum"] == [2, 3]
    only_ios = conditions(cond("event.$Anything.$platform", "EQ", "iOS"))
    everything = run(body([measure("event.$Anything", "TOTAL_COUNT")], filter=only_ios))
    # Two iOS purchases and two iOS page views; the share and u2's purchase carry no platform.
    assert everything["rows"][0]["sum"] == [4]


def test_hour_and_month_series() -> None:
    hours = run(
        body(
            [measure("event.purchase", "TOTAL_COUNT")],
            fromDate="2024-01-01",
            toDate="2024-01-01",
            unit="HOUR",
        )
    )
    assert hours["series"][0] == "2024-01-01 00:00"
    assert hours["series"][-1] == "2024-01-01 23:00"
    counts = hours["rows"][0]["values"][0]
    assert len(counts) == 24
    assert [h for h, c in enumerate(counts) if c] == [9, 21]
    months = run(
        body(
            [measure("event.purchase", "TOTAL_COUNT")],
            fromDate="2024-01-02",
            toDate="2024-02-05",
            unit="MONTH",
        )
    )
    # The range starts on 01-02, so u0's two purchases of 01-01 are outside it.
    assert months["series"] == ["2024-01-01", "2024-02-01"]
    assert months["rows"][0]["values"][0] == [2, 1]


def test_crowds_sampling_and_data_until() -> None:
    purchases = [measure("event.purchase", "TOTAL_COUNT")]
    assert run(body(purchases, samplingFactor=2))["rows"][0]["sum"] == [3]
    assert run(body(purchases, crowds=["one"]), cohorts={"one": 1})["rows"][0]["sum"] == [2]
    assert run(body(purchases), data_until=dt.date(2024, 1, 1))["rows"][0]["sum"] == [2]


def test_nothing_happened() -> None:
    nothing = {"fromDate": "2023-03-01", "toDate": "2023-03-02"}
    plain = run(body([measure("event.purchase.amount", "MAX")], **nothing))
    assert plain["rows"] == [{"byValue": [], "values": [[0.0, 0.0]], "sum": [0.0]}]
    split = run(
        body([measure("event.purchase", "TOTAL_COUNT")], byFields=[{"expression": "user.gender"}])
        | nothing
    )
    assert split["rows"] == []
    assert split["numRows"] == 0
    refunds = run(body([measure("event.refund.refund_amount", "SUM")]))
    assert refunds["rows"][0]["sum"] == [0.0]
