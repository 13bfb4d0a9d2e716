"""Analyses of the synthetic log with the real population: consistent, JSON-ready, oracle-equal."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from analytics_emulator import catalog
from analytics_emulator.analytics import analyze_events, analyze_funnel
from analytics_emulator.eventlog import EventLog, generate_event_log
from analytics_emulator.population import Population

from tests.oracle import differences, oracle_events, oracle_funnel

SEED = 3
SHOPPING = ["$startup", "$pageview", "search", "add_to_cart", "purchase"]
JANUARY = {"crowds": ["$ALL"], "fromDate": "2024-01-01", "toDate": "2024-01-31"}


@pytest.fixture(scope="module")
def log() -> EventLog:
    return generate_event_log(SEED)


@pytest.fixture(scope="module")
def population() -> Population:
    return Population(SEED)


def funnel(request: dict[str, Any], log: EventLog, population: Population) -> dict[str, Any]:
    answer = analyze_funnel(
        request, log=log, population=population, cohorts=catalog.COHORTS, data_until=None
    )
    assert json.loads(json.dumps(answer)) == answer
    return answer


def events(request: dict[str, Any], log: EventLog, population: Population) -> dict[str, Any]:
    answer = analyze_events(
        request, log=log, population=population, cohorts=catalog.COHORTS, data_until=None
    )
    assert json.loads(json.dumps(answer)) == answer
    return answer


def test_a_month_long_shopping_funnel_split_by_city(log: EventLog, population: Population) -> None:
    request = {
        **JANUARY,
        "steps": [{"expression": f"event.{e}", "filter": None} for e in SHOPPING],
        "byField": {"expression": "user.$city", "buckets": None},
    }
    answer = funnel(request, log, population)
    assert len(answer["dateList"]) == 32
    overall = np.asarray([s["convertedUser"] for s in answer["rows"][0]["stepsDetail"]])
    assert np.all(np.diff(overall, axis=0) <= 0)
    assert overall[-1, 0] > 0
    assert np.array_equal(overall[:, 0], overall[:, 1:].sum(axis=1))
    # Without a limit every user who entered is in exactly one split row.
    split = sum(
        np.asarray([s["convertedUser"] for s in row["stepsDetail"]]) for row in answer["rows"][1:]
    )
    assert np.array_equal(split, overall)
    for pair in answer["rows"][0]["medianConvertedTime"]:
        assert pair["median"] is not None
        assert pair["median"][0] > 0


def test_a_month_of_event_measures_split_by_platform_and_gender(
    log: EventLog, population: Population
) -> None:
    measures = [
        {"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"},
        {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
        {"expression": "event.search", "aggregator": "AVG_COUNT"},
        {"expression": "event.purchase.amount", "aggregator": "SUM"},
        {"expression": "event.purchase.amount", "aggregator": "AVG_PER"},
        {"expression": "event.add_to_cart.price", "aggregator": "MAX"},
        {"expression": "event.$pageview.duration", "aggregator": "MIN"},
        {"expression": "event.$pageview.duration", "aggregator": "AVG"},
        {"expression": "event.purchase.coupon_codes", "aggregator": "REMOVE_DUMPLICATE"},
    ]
    split = events(
        {
            **JANUARY,
            "measures": measures,
            "unit": "WEEK",
            "byFields": [
                {"expression": "event.$Anything.$platform"},
                {"expression": "user.gender"},
            ],
        },
        log,
        population,
    )
    whole = events({**JANUARY, "measures": measures, "unit": "WEEK"}, log, population)
    assert split["series"] == ["2024-01-01", "2024-01-08", "2024-01-15", "2024-01-22", "2024-01-29"]
    assert split["numRows"] == len(split["rows"]) > 4
    (total,) = whole["rows"]
    assert sum(row["sum"][0] for row in split["rows"]) == total["sum"][0]
    assert sum(total["values"][0]) == total["sum"][0]
    assert total["sum"][1] <= sum(total["values"][1])
    assert total["sum"][3] == pytest.approx(sum(row["sum"][3] for row in split["rows"]))


def oracle_inputs(
    log: EventLog, population: Population, users: int, days: int
) -> tuple[EventLog, list[dict[str, Any]], dict[int, dict[str, Any]]]:
    first = int(log.days.min())
    piece = log.select(log.day_slice(first, first + days - 1))
    piece = piece.select(piece.users < users)
    props = [p.id for p in catalog.USER_PROPERTIES]
    people = dict(enumerate(population.records(0, users, props)))
    return piece, piece.to_records(), people


def test_the_engine_equals_the_oracle_on_a_slice_of_the_synthetic_log(
    log: EventLog, population: Population
) -> None:
    piece, records, people = oracle_inputs(log, population, users=150, days=3)
    assert len(records) > 100
    window = {"crowds": ["cohort_small"], "fromDate": "2024-01-01", "toDate": "2024-01-03"}
    adults = {
        "conditions": [{"expression": "user.age", "function": "GTE", "params": [25]}],
        "relation": "OR",
    }
    funnel_request = {
        **window,
        "steps": [
            {"expression": "event.$startup"},
            {
                "expression": "event.$pageview",
                "filter": {
                    "conditions": [
                        {"expression": "event.$pageview.duration", "function": "GT", "params": [5]}
                    ]
                },
            },
            {"expression": "event.search"},
        ],
        "filter": adults,
        "convertTime": 20,
        "convertTimeUnit": "MINUTE",
        "byField": {"expression": "event.$pageview.$url"},
        "byStepIndex": 1,
        "samplingFactor": 2,
    }
    event_request = {
        **window,
        "measures": [
            {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
            {"expression": "event.$pageview.duration", "aggregator": "AVG"},
            {"expression": "event.search.keyword", "aggregator": "REMOVE_DUMPLICATE"},
        ],
        "byFields": [
            {"expression": "user.age", "buckets": [20, 30, 40]},
            {"expression": "event.$Anything.$platform"},
        ],
        "unit": "DAY",
    }
    for analyze, oracle, request in (
        (analyze_funnel, oracle_funnel, funnel_request),
        (analyze_events, oracle_events, event_request),
    ):
        answer = analyze(
            request, log=piece, population=population, cohorts=catalog.COHORTS, data_until=None
        )
        del answer["reportUpdateTime"]
        assert differences(answer, oracle(records, people, request)) == []
