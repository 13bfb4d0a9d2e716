"""Funnel analysis on a hand-built log: numbers worked out by hand, and equal to the oracle."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

import pytest
from analytics_emulator import catalog
from analytics_emulator.analytics import analyze_funnel
from analytics_emulator.eventlog import EventLog

from tests.oracle import UsersPopulation, differences, oracle_funnel


def ev(user: int, event: str, time: str, **properties: Any) -> dict[str, Any]:
    return {"user": user, "event": event, "time": time, "properties": properties}


# Steps $startup -> $pageview -> purchase over 2024-01-01..03, default window 1 DAY:
# u0 enters 01-01 and converts fully (+60 s, +600 s);
# u1 enters 01-01; its first page view is in the same second (not later), the next one
#    +120 s counts; its purchase is 86401 s after entering: outside the 1-day window;
# u2 enters 01-02 and converts fully (+20 s, +1780 s);
# u3's page view before entering does not count; it enters 01-03 23:00 and its next page
#    view is on 01-04, outside the range;
# u4 only purchases: never enters;
# u5 enters at its first start 01-02 10:00 and views a page at 11:30 (+5400 s).
EVENTS = [
    ev(0, "$startup", "2024-01-01 10:00:00", **{"$platform": "iOS"}),
    ev(0, "$pageview", "2024-01-01 10:01:00", **{"$url": "/home"}),
    ev(0, "purchase", "2024-01-01 10:11:00", amount=30.5),
    ev(1, "$startup", "2024-01-01 12:00:00", **{"$platform": "Android"}),
    ev(1, "$pageview", "2024-01-01 12:00:00", **{"$url": "/home"}),
    ev(1, "$pageview", "2024-01-01 12:02:00", **{"$url": "/cart"}),
    ev(1, "purchase", "2024-01-02 12:00:01", amount=12),
    ev(2, "$startup", "2024-01-02 08:00:00", **{"$platform": "iOS"}),
    ev(2, "$pageview", "2024-01-02 08:00:20", **{"$url": "/cart"}),
    ev(2, "purchase", "2024-01-02 08:30:00", amount=800),
    ev(3, "$pageview", "2024-01-01 09:00:00", **{"$url": "/home"}),
    ev(3, "$startup", "2024-01-03 23:00:00"),
    ev(3, "$pageview", "2024-01-04 00:10:00", **{"$url": "/home"}),
    ev(4, "purchase", "2024-01-02 09:00:00", amount=5),
    ev(5, "$startup", "2024-01-02 10:00:00", **{"$platform": "Web"}),
    ev(5, "$startup", "2024-01-02 11:00:00", **{"$platform": "iOS"}),
    ev(5, "$pageview", "2024-01-02 11:30:00", **{"$url": "/home"}),
]
USERS = {
    0: {"gender": "女", "age": 25},
    1: {"gender": "男", "age": 31},
    2: {"gender": "女", "age": 47},
    3: {"gender": None, "age": 19},
    5: {"gender": "男", "age": "(已脱敏)"},
}
LOG = EventLog.from_records(EVENTS)
STEPS = [
    {"expression": "event.$startup", "filter": None},
    {"expression": "event.$pageview", "filter": None},
    {"expression": "event.purchase", "filter": None},
]


def body(**overrides: Any) -> dict[str, Any]:
    return {
        "steps": STEPS,
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-03",
        **overrides,
    }


def run(request: dict[str, Any], *, cohorts=None, data_until=None) -> dict[str, Any]:
    """Engine answer, after checking it against the oracle on the same input."""
    cohorts = catalog.COHORTS if cohorts is None else cohorts
    answer = analyze_funnel(
        request,
        log=LOG,
        population=UsersPopulation(USERS),
        cohorts=cohorts,
        data_until=data_until,
    )
    reference = oracle_funnel(EVENTS, USERS, request, cohorts=cohorts, data_until=data_until)
    answer_without_time = {k: v for k, v in answer.items() if k != "reportUpdateTime"}
    assert differences(answer_without_time, reference) == []
    return answer


def counts(answer: dict[str, Any], row: int = 0) -> list[list[int]]:
    return [step["convertedUser"] for step in answer["rows"][row]["stepsDetail"]]


def medians(answer: dict[str, Any], row: int = 0) -> list[list[int | None] | None]:
    return [pair["median"] for pair in answer["rows"][row]["medianConvertedTime"]]


def test_shape_follows_the_spec_and_the_documented_examples() -> None:
    answer = run(body())
    assert answer["dateList"] == [
        "$ALL",
        "2024/01/01 00:00:00",
        "2024/01/02 00:00:00",
        "2024/01/03 00:00:00",
    ]
    assert answer["byField"] == ""
    assert answer["byValues"] == ["-1"]
    assert answer["stepEvents"] == ["event.$startup", "event.$pageview", "event.purchase"]
    assert [row["byValue"] for row in answer["rows"]] == ["-1"]
    pairs = [p["stepsExpress"] for p in answer["rows"][0]["medianConvertedTime"]]
    assert pairs == ["$startup~$pageview", "$pageview~purchase"]
    assert dt.datetime.strptime(answer["reportUpdateTime"], "%Y-%m-%d %H:%M:%S")


def test_five_enter_four_view_a_page_two_purchase_within_a_day() -> None:
    answer = run(body())
    # Columns: $ALL, 01-01, 01-02, 01-03; users counted by the day they entered.
    assert counts(answer) == [[5, 2, 2, 1], [4, 2, 2, 0], [2, 1, 1, 0]]
    # $startup~$pageview: 60, 120 (01-01), 20, 5400 (01-02) -> medians of the middle two.
    # $pageview~purchase: 600 (01-01), 1780 (01-02).
    assert medians(answer) == [[90, 90, 2710, None], [1190, 600, 1780, None]]


def test_a_two_day_window_lets_the_late_purchase_convert() -> None:
    answer = run(body(convertTime=2, convertTimeUnit="DAY"))
    assert counts(answer)[2] == [3, 2, 1, 0]
    # u1 purchased 86281 s after its counted page view.
    assert medians(answer)[1] == [1780, (600 + 86281) // 2, 1780, None]


def test_a_ten_minute_window_keeps_only_quick_page_views() -> None:
    answer = run(body(convertTime=10, convertTimeUnit="MINUTE"))
    # u5's page view came 5400 s after entering; every purchase was over 600 s after.
    assert counts(answer) == [[5, 2, 2, 1], [3, 2, 1, 0], [0, 0, 0, 0]]
    assert medians(answer)[1] is None


def test_hour_window_and_step_filters() -> None:
    pageview_home = {
        "conditions": [
            {"expression": "event.$pageview.$url", "function": "EQ", "params": ["/home"]}
        ]
    }
    steps = [STEPS[0], {"expression": "event.$pageview", "filter": pageview_home}, STEPS[2]]
    answer = run(body(steps=steps, convertTime=1, convertTimeUnit="HOUR"))
    # Home views within an hour of entering: u0 (+60 s) only; u1 viewed /home in the same
    # second it entered; u5 after 5400 s.
    assert counts(answer) == [[5, 2, 2, 1], [1, 1, 0, 0], [1, 1, 0, 0]]


def test_split_by_a_user_property_with_unknown_values() -> None:
    answer = run(body(byField={"expression": "user.gender", "buckets": None}))
    assert answer["byField"] == "user.gender"
    # 女: u0, u2; 男: u1, u5; 未知: u3 (null gender). Ties in size go by label order.
    assert answer["byValues"] == ["-1", "女", "男", "未知"]
    assert counts(answer, 1) == [[2, 1, 1, 0], [2, 1, 1, 0], [2, 1, 1, 0]]
    assert counts(answer, 2) == [[2, 1, 1, 0], [2, 1, 1, 0], [0, 0, 0, 0]]
    assert counts(answer, 3) == [[1, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert medians(answer, 3) == [None, None]


def test_split_by_number_buckets_and_limit() -> None:
    answer = run(body(byField={"expression": "user.age", "buckets": [20, 30]}, limit=2))
    # 30~+∞: u1 (31), u2 (47); -∞~20: u3 (19); 20~30: u0 (25); u5 masked -> 未知.
    # Largest group first, then label order; limit keeps two.
    assert answer["byValues"] == ["-1", "30~+∞", "-∞~20"]
    assert counts(answer, 1)[0] == [2, 1, 1, 0]
    assert counts(answer, 0)[0] == [5, 2, 2, 1]


def test_split_by_an_event_property_at_the_entering_or_a_later_step() -> None:
    at_entry = run(body(byField={"expression": "event.$startup.$platform"}))
    # Entering events: u0 iOS, u1 Android, u2 iOS, u3 none (未知), u5 Web (its first start).
    assert at_entry["byValues"] == ["-1", "iOS", "Android", "Web", "未知"]
    assert [counts(at_entry, r)[0][0] for r in range(1, 5)] == [2, 1, 1, 1]

    at_page = run(body(byField={"expression": "event.$pageview.$url"}, byStepIndex=1))
    # The counted page views: u0 /home, u1 /cart (12:02), u2 /cart, u5 /home; u3 none.
    assert at_page["byValues"] == ["-1", "/cart", "/home", "未知"]
    assert counts(at_page, 1) == [[2, 1, 1, 0], [2, 1, 1, 0], [1, 0, 1, 0]]


def test_global_filter_cohort_sampling_and_data_until() -> None:
    only_ios = {
        "conditions": [
            {"expression": "event.$Anything.$platform", "function": "EQ", "params": ["iOS"]}
        ],
        "relation": "and",
    }
    # Only events carrying $platform iOS remain: three starts, no page views.
    assert counts(run(body(filter=only_ios))) == [[3, 1, 2, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    # A cohort of size 3 holds users 0, 1, 2.
    assert counts(run(body(crowds=["trio"]), cohorts={"trio": 3}))[0] == [3, 2, 1, 0]
    # samplingFactor 2 keeps users 0, 2, 4.
    assert counts(run(body(samplingFactor=2))) == [[2, 1, 1, 0], [2, 1, 1, 0], [2, 1, 1, 0]]
    # Data until 01-01: later days are invisible.
    assert counts(run(body(), data_until=dt.date(2024, 1, 1))) == [
        [2, 2, 0, 0],
        [2, 2, 0, 0],
        [1, 1, 0, 0],
    ]


def test_any_event_steps_and_repeated_steps() -> None:
    steps = [{"expression": "event.$pageview"}, {"expression": "event.$pageview"}]
    answer = run(body(steps=steps))
    # First page views: u0, u1, u3 (before it ever started) on 01-01, u2 and u5 on 01-02.
    # Only u1 views a second page later than its first inside the range.
    assert counts(answer) == [[5, 3, 2, 0], [1, 1, 0, 0]]
    assert medians(answer) == [[120, 120, None, None]]
    anything = run(
        body(steps=[{"expression": "event.purchase"}, {"expression": "event.$Anything"}])
    )
    assert anything["stepEvents"] == ["event.purchase", "event.$Anything"]
    assert counts(anything) == [[4, 1, 3, 0], [0, 0, 0, 0]]


@pytest.mark.parametrize("to_date", ["2024-01-01", "2024-01-05"])
def test_counts_never_grow_and_days_add_up(to_date: str) -> None:
    answer = run(body(toDate=to_date, byField={"expression": "user.gender"}))
    for row in answer["rows"]:
        steps = [step["convertedUser"] for step in row["stepsDetail"]]
        for earlier, later in itertools.pairwise(steps):
            assert all(a >= b for a, b in zip(earlier, later, strict=True))
        for step in steps:
            assert step[0] == sum(step[1:])


def test_an_empty_range_answers_zeros() -> None:
    answer = run(body(fromDate="2023-06-01", toDate="2023-06-02"))
    assert counts(answer) == [[0, 0, 0]] * 3
    assert medians(answer) == [None, None]


def test_sparse_and_very_large_user_indexes() -> None:
    far = 10**12
    events = [
        ev(3, "$startup", "2024-01-01 10:00:00"),
        ev(far, "$startup", "2024-01-01 11:00:00"),
        ev(far, "$pageview", "2024-01-01 11:00:05"),
        ev(far + 5, "$startup", "2024-01-02 11:00:00"),
    ]
    users = {3: {"gender": "男"}, far: {"gender": "女"}, far + 5: {"gender": "女"}}
    request = {
        "steps": STEPS[:2],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
        "byField": {"expression": "user.gender"},
    }
    answer = analyze_funnel(
        request,
        log=EventLog.from_records(events),
        population=UsersPopulation(users),
        cohorts=catalog.COHORTS,
        data_until=None,
    )
    del answer["reportUpdateTime"]
    assert differences(answer, oracle_funnel(events, users, request)) == []
    assert answer["byValues"] == ["-1", "女", "男"]
    assert counts(answer, 1) == [[2, 1, 1], [1, 1, 0]]
