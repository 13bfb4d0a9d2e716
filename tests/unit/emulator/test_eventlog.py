"""The event log: hand-built logs in and out, and the synthetic log's promised shape."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import numpy as np
import pytest
from analytics_emulator import catalog
from analytics_emulator.eventlog import EventLog, generate_event_log
from analytics_emulator.eventlog_columns import date_to_day


def ev(user: int, event: str, time: str, **properties: Any) -> dict[str, Any]:
    return {"user": user, "event": event, "time": time, "properties": properties}


def test_records_round_trip_sorted_by_time_with_ties_in_given_order() -> None:
    records = [
        ev(2, "purchase", "2024-01-02 08:00:00", amount=19.99, quantity=2),
        ev(1, "$startup", "2024-01-01 10:00:00", **{"$platform": "iOS", "$is_first_day": True}),
        ev(0, "share", "2024-01-01 10:00:00", target="wechat"),
        ev(
            0,
            "purchase",
            "2024-01-01 09:59:59",
            coupon_codes=["A", "B"],
            payment_time="2024-01-03",
            paid_with_points=None,
        ),
    ]
    log = EventLog.from_records(records)
    assert len(log) == 4
    assert log.to_records() == [
        ev(
            0,
            "purchase",
            "2024-01-01 09:59:59",
            coupon_codes=["A", "B"],
            payment_time="2024-01-03 00:00:00",
        ),
        ev(1, "$startup", "2024-01-01 10:00:00", **{"$platform": "iOS", "$is_first_day": True}),
        ev(0, "share", "2024-01-01 10:00:00", target="wechat"),
        ev(2, "purchase", "2024-01-02 08:00:00", amount=19.99, quantity=2),
    ]
    assert log.days.tolist() == [date_to_day(dt.date(2024, 1, 1))] * 3 + [
        date_to_day(dt.date(2024, 1, 2))
    ]


def test_columns_keep_types_and_unreported_properties_read_as_null() -> None:
    log = EventLog.from_records(
        [
            ev(0, "purchase", "2024-01-01 00:00:00", amount=4255875062385414001, quantity=1),
            ev(1, "purchase", "2024-01-01 00:00:01", amount=None, quantity=2.5),
        ]
    )
    amount = log.column("amount")
    assert amount.data_type == "number"
    assert amount.python_value(0) == 4255875062385414001
    assert amount.python_value(1) is None
    assert log.column("quantity").dictionary.dtype == np.float64
    refund = log.column("refund_amount")
    assert refund.data_type == "number"
    assert refund.codes.tolist() == [-1, -1]
    assert log.day_slice(date_to_day(dt.date(2024, 1, 1)), date_to_day(dt.date(2024, 1, 1))) == (
        slice(0, 2)
    )
    assert len(log.select(log.users == 1)) == 1


@pytest.mark.parametrize(
    "record",
    [
        {"user": -1, "event": "share", "time": "2024-01-01 00:00:00"},
        {"user": True, "event": "share", "time": "2024-01-01 00:00:00"},
        {"user": "7", "event": "share", "time": "2024-01-01 00:00:00"},
        {"user": 2**63, "event": "share", "time": "2024-01-01 00:00:00"},
        {"user": 1, "event": "", "time": "2024-01-01 00:00:00"},
        {"user": 1, "event": "share", "time": "2024-01-01T00:00:00"},
        {"user": 1, "event": "share", "time": "2024-02-30 00:00:00"},
        {"user": 1, "event": "share", "time": None},
        ev(1, "share", "2024-01-01 00:00:00", no_such_property=1),
        ev(1, "purchase", "2024-01-01 00:00:00", amount="12"),
        ev(1, "purchase", "2024-01-01 00:00:00", amount=True),
        ev(1, "purchase", "2024-01-01 00:00:00", coupon_codes="A"),
        ev(1, "purchase", "2024-01-01 00:00:00", paid_with_points=1),
        ev(1, "purchase", "2024-01-01 00:00:00", payment_time="yesterday"),
    ],
)
def test_bad_records_are_refused(record: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        EventLog.from_records([record])


@pytest.fixture(scope="module")
def synthetic() -> EventLog:
    return generate_event_log(11)


def test_generation_is_deterministic(synthetic: EventLog) -> None:
    again = generate_event_log(11)
    assert np.array_equal(again.users, synthetic.users)
    assert np.array_equal(again.times, synthetic.times)
    assert np.array_equal(again.event_codes, synthetic.event_codes)
    for prop_id, column in synthetic.properties.items():
        assert np.array_equal(again.properties[prop_id].codes, column.codes)
    other = generate_event_log(12)
    assert len(other) != len(synthetic) or not np.array_equal(other.times, synthetic.times)


def test_users_and_days_stay_inside_the_promised_range(synthetic: EventLog) -> None:
    first = date_to_day(dt.date.fromisoformat(catalog.EVENT_LOG_START))
    assert synthetic.users.min() >= 0
    assert synthetic.users.max() < catalog.EVENT_LOG_USERS
    assert len(np.unique(synthetic.users)) > catalog.EVENT_LOG_USERS * 0.8
    assert synthetic.days.min() == first
    assert synthetic.days.max() == first + catalog.EVENT_LOG_DAYS - 1
    assert np.all(np.diff(synthetic.times) >= 0)


def test_events_follow_a_shopping_funnel(synthetic: EventLog) -> None:
    counts = Counter(synthetic.event_ids[c] for c in synthetic.event_codes.tolist())
    assert counts["refund"] == 0
    assert 0 < counts["legacy_click"] < len(synthetic) * 0.01
    assert (
        counts["$pageview"]
        > counts["$startup"]
        > counts["search"]
        > counts["add_to_cart"]
        > counts["purchase"]
        > 0
    )
    assert counts["share"] > 0
    active_user_days = len(np.unique(synthetic.users * 100_000 + synthetic.days))
    assert len(synthetic) / active_user_days > 3


def test_properties_have_every_data_type_with_some_nulls(synthetic: EventLog) -> None:
    by_event = {e.id: {p.id for p in catalog.event_properties(e.id)} for e in catalog.EVENTS}
    types = {}
    for prop_id, column in synthetic.properties.items():
        carriers = {
            synthetic.event_ids[c] for c in np.unique(synthetic.event_codes[column.codes >= 0])
        }
        assert all(prop_id in by_event[e] for e in carriers), prop_id
        types[prop_id] = column.data_type
    assert set(types.values()) == set(catalog.DATA_TYPES)
    carriers = {
        "$city": None,
        "duration": "$pageview",
        "keyword": "search",
        "coupon_codes": "purchase",
        "paid_with_points": "purchase",
    }
    for prop_id, event_id in carriers.items():
        rows = (
            np.ones(len(synthetic), dtype=bool)
            if event_id is None
            else synthetic.event_codes == synthetic.event_code(event_id)
        )
        codes = synthetic.column(prop_id).codes[rows]
        assert (codes < 0).any(), prop_id
        assert (codes >= 0).any(), prop_id
    price = synthetic.column("price").dictionary
    assert any(not float(p).is_integer() for p in price)
    assert synthetic.column("quantity").dictionary.dtype == np.int64
    coupons = {tuple(c) for c in synthetic.column("coupon_codes").dictionary}
    assert () in coupons
    assert any(len(c) > 1 for c in coupons)


def test_payment_happens_after_the_purchase_event(synthetic: EventLog) -> None:
    paid = synthetic.column("payment_time")
    rows = np.nonzero(paid.codes >= 0)[0]
    paid_seconds = paid.dictionary[paid.codes[rows]] // 1000
    assert np.all(paid_seconds > synthetic.times[rows])
    assert np.all(synthetic.event_codes[rows] == synthetic.event_code("purchase"))


def test_big_integers_beside_decimals_keep_their_exact_labels_and_comparisons() -> None:
    # Regression: a number property mixing ids beyond 2**53 with decimals was held as float64,
    # so 4255875062385414000 became the label 4255875062385414144 and 4255875062385414001
    # compared equal to 4255875062385414000.
    from analytics_emulator.analysis_filters import filter_mask, parse_filter
    from analytics_emulator.analysis_splits import split_labels
    from analytics_emulator.eventlog_columns import encode_values

    values = [4255875062385414000, 4255875062385414001, 9.5, None, -4635244755532264000]
    column = encode_values("number", values, strict=True)
    split = split_labels(column, None)
    labels = [split.labels[i] for i in split.ids]
    assert labels == [
        "4255875062385414000",
        "4255875062385414001",
        "9.5",
        "未知",
        "-4635244755532264000",
    ]

    class Source:
        def __len__(self) -> int:
            return len(values)

        def column(self, expression: str) -> Any:
            return column

    equal = parse_filter(
        {
            "conditions": [
                {"expression": "user.age", "function": "EQ", "params": [4255875062385414001]}
            ],
            "relation": "AND",
        },
        "filter",
    )
    assert filter_mask(equal, Source()).tolist() == [False, True, False, False, False]


def test_late_events_join_the_log_on_their_own_day_and_keep_every_value_once() -> None:
    log = EventLog.from_records(
        [
            ev(0, "purchase", "2024-01-02 10:00:00", amount=5, coupon_codes=["A"]),
            ev(1, "search", "2024-01-03 09:00:00", keyword="shoes"),
        ]
    )
    late = EventLog.from_records(
        [
            ev(2, "purchase", "2024-01-02 10:00:00", amount=7.5, coupon_codes=["A"]),
            ev(3, "share", "2024-01-01 23:59:59", target="wechat"),
            ev(4, "purchase", "2024-01-02 12:00:00", amount=5),
        ]
    )
    joined = log.with_events(late)
    assert joined.to_records() == [
        ev(3, "share", "2024-01-01 23:59:59", target="wechat"),
        ev(0, "purchase", "2024-01-02 10:00:00", amount=5, coupon_codes=["A"]),
        ev(2, "purchase", "2024-01-02 10:00:00", amount=7.5, coupon_codes=["A"]),
        ev(4, "purchase", "2024-01-02 12:00:00", amount=5),
        ev(1, "search", "2024-01-03 09:00:00", keyword="shoes"),
    ]
    assert len(log) == 2  # the log itself is unchanged
    amount = joined.column("amount")
    assert sorted(amount.dictionary.tolist()) == [5.0, 7.5]  # 5 once, under one dictionary
    assert joined.column("coupon_codes").dictionary.tolist() == [("A",)]
    assert joined.event_ids[: len(log.event_ids)] == log.event_ids
    assert log.with_events(EventLog.from_records([])).to_records() == log.to_records()
