"""Where each written column comes from (operators/lineage.py), read from an export's summary
and from a report's request, checked against what the test writes down by hand."""

from __future__ import annotations

from airflow_provider_analytics.operators.lineage import (
    ColumnOrigin,
    export_origins,
    report_origins,
)
from airflow_provider_analytics.reports.job import EVENTS, FUNNEL


def test_an_export_column_holds_its_property_and_a_masked_one_says_so() -> None:
    summary = {
        "column_ids": {"city": "$city", "tag_vip": "tag.vip", "distinct_id": "distinct_id"},
        "column_origins": {"city": "plan", "tag_vip": "masked", "distinct_id": "plan"},
    }

    assert export_origins(summary) == (
        ColumnOrigin("city", ("$city",)),
        ColumnOrigin("tag_vip", ("tag.vip",), masked=True),
        ColumnOrigin("distinct_id", ("distinct_id",)),
    )
    assert export_origins({}) == ()


def test_a_funnel_tables_computed_columns_come_from_its_steps_and_split() -> None:
    request = {
        "steps": [{"expression": "event.search"}, {"expression": "event.purchase"}],
        "byField": {"expression": "event.$Anything.$platform"},
        "crowds": ["$ALL"],
        "convertTime": 1,
        "convertTimeUnit": "DAY",
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
    }
    origins = report_origins(FUNNEL, request)

    steps = ("event.search", "event.purchase")
    every = [origin for table in origins.values() for origin in table]
    assert every, "no computed column was traced"
    assert {origin.how for origin in every} == {"AGGREGATION"}
    assert {origin.fields for origin in every} <= {steps, ("event.$Anything.$platform",)}
    assert any(origin.fields == ("event.$Anything.$platform",) for origin in every)


def test_an_event_tables_computed_columns_come_from_its_measures() -> None:
    request = {
        "measures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
        "unit": "DAY",
    }
    origins = report_origins(EVENTS, request)

    every = [origin for table in origins.values() for origin in table]
    assert every
    assert {origin.fields for origin in every} == {("TOTAL_COUNT(event.purchase)",)}
