"""No report table counts anything twice: every additive column, summed over what a table
splits, gives the platform's own figure for the coarser grain (the emulator over real HTTP)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from analytics_emulator import catalog

from airflow_provider_analytics.reports.frames import EVENT_GRAINS, FUNNEL_GRAINS
from airflow_provider_analytics.reports.job import EVENTS, FUNNEL, build_report_tables

if TYPE_CHECKING:
    from collections.abc import Iterable

    from airflow_provider_analytics.client import AnalyticsClient


pytestmark = pytest.mark.integration

RANGE = {"fromDate": "2024-01-03", "toDate": "2024-01-09"}
WINDOW_DAYS = 3
FUNNEL_REQUEST = {
    "steps": [
        {"expression": "event.$startup", "filter": None},
        {"expression": "event.add_to_cart", "filter": None},
        {"expression": "event.purchase", "filter": None},
    ],
    "crowds": ["$ALL"],
    "byField": {"expression": "user.$city"},
    "convertTime": 2,
    "convertTimeUnit": "DAY",
    **RANGE,
}
ADDITIVE_MEASURES = [
    {"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"},
    {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
    {"expression": "event.purchase.amount", "aggregator": "SUM"},
]
EVENT_REQUEST = {
    "measures": ADDITIVE_MEASURES,
    "crowds": ["$ALL"],
    "unit": "DAY",
    "byFields": [{"expression": "event.$Anything.$platform"}],
    **RANGE,
}
FIGURE = {"TOTAL_COUNT": "count", "SUM": "value"}
"""Which column holds an additive measure's numbers."""


def report(client: AnalyticsClient, kind: Any, request: dict[str, Any]) -> dict[str, pa.Table]:
    tables, _ = build_report_tables(
        kind, client, request, window_days=WINDOW_DAYS, timezone=catalog.PROJECT_TIMEZONE
    )
    return tables


def sums(rows: Iterable[dict[str, Any]], keys: tuple[str, ...], column: str) -> dict[Any, Any]:
    """``column`` summed per value of ``keys``."""
    total: dict[Any, Any] = defaultdict(int)
    for row in rows:
        total[tuple(row[key] for key in keys)] += row[column]
    return dict(total)


def values(rows: Iterable[dict[str, Any]], keys: tuple[str, ...], column: str) -> dict[Any, Any]:
    """``column`` per value of ``keys``, which must identify the rows."""
    found = {tuple(row[key] for key in keys): row[column] for row in rows}
    return found


def test_funnel_tables_add_up_to_the_platforms_coarser_figures(client: AnalyticsClient) -> None:
    tables = report(client, FUNNEL, FUNNEL_REQUEST)
    assert list(tables) == [grain.name for grain in FUNNEL_GRAINS]
    daily, totals = tables["funnel"].to_pylist(), tables["funnel_totals"].to_pylist()
    split, split_totals = (
        tables["funnel_by_value"].to_pylist(),
        tables["funnel_by_value_totals"].to_pylist(),
    )
    assert len(split) > len(daily) > 0
    window, step = ("query_from_date",), ("step_number",)

    # each table's grain is its key: no row twice
    assert len(values(daily, ("date", *step), "converted_users")) == len(daily)
    assert len(values(totals, (*window, *step), "converted_users")) == len(totals)
    assert len(values(split, ("by_value", "date", *step), "converted_users")) == len(split)
    assert len(values(split_totals, ("by_value", *window, *step), "converted_users")) == len(
        split_totals
    )
    # days add up to the whole window (users are counted on the day they entered) ...
    assert sums(daily, (*window, *step), "converted_users") == values(
        totals, (*window, *step), "converted_users"
    )
    assert sums(split, ("by_value", *window, *step), "converted_users") == values(
        split_totals, ("by_value", *window, *step), "converted_users"
    )
    # ... and split values add up to all users (each user has one city, or the unknown label)
    assert sums(split, ("date", *step), "converted_users") == values(
        daily, ("date", *step), "converted_users"
    )
    assert sums(split_totals, (*window, *step), "converted_users") == values(
        totals, (*window, *step), "converted_users"
    )
    assert tables["funnel"].schema.field("converted_users").type == pa.int64()


def test_event_tables_add_up_to_the_platforms_totals(client: AnalyticsClient) -> None:
    tables = report(client, EVENTS, EVENT_REQUEST)
    assert list(tables) == [grain.name for grain in EVENT_GRAINS]
    daily, totals = tables["events"].to_pylist(), tables["events_totals"].to_pylist()
    split = ("by_event_anything_platform", "measure_index")
    window = ("query_from_date",)
    assert len(values(daily, (*split, "date"), "measure_index")) == len(daily) > 0
    assert len(values(totals, (*split, *window), "measure_index")) == len(totals) > 0

    unsplit = report(client, EVENTS, {**EVENT_REQUEST, "byFields": []})["events_totals"]
    for index, measure in enumerate(ADDITIVE_MEASURES):
        column = FIGURE[measure["aggregator"]]
        mine = [row for row in daily if row["measure_index"] == index]
        my_totals = [row for row in totals if row["measure_index"] == index]
        assert all(row[column] is not None for row in mine + my_totals), measure
        # periods add up to the platform's total of the window, split by split
        assert sums(mine, (*split, *window), column) == pytest.approx(
            values(my_totals, (*split, *window), column)
        ), measure
        # split values add up to the platform's total of an unsplit request
        platform = values(
            [row for row in unsplit.to_pylist() if row["measure_index"] == index], window, column
        )
        assert sums(my_totals, window, column) == pytest.approx(platform), measure
    counts = tables["events"].schema.field("count").type
    assert counts == pa.int64()
