"""A cohort export (with masked properties), and a funnel and an event report split by a
field, for the test that reads the OpenLineage provider's emitted events."""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator

OUT = os.environ["ANALYTICS_TEST_OUTPUT"]

with DAG(
    "column_lineage",
    schedule=None,
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
):
    CohortExportToParquetOperator(
        task_id="export_cohort",
        cohort_code="cohort_small",
        destination=f"{OUT}users/",
        properties=["distinct_id", "$city", "phone", "income", "tag.tag_rfm"],
    )
    FunnelReportOperator(
        task_id="funnel_report",
        request={
            "steps": [
                {"expression": "event.$startup"},
                {"expression": "event.search"},
                {"expression": "event.purchase"},
            ],
            "crowds": ["$ALL"],
            "byField": {"expression": "user.$city"},
            "fromDate": "2024-01-09",
            "toDate": "2024-01-15",
        },
        destination=f"{OUT}funnel/",
        report_key="checkout",
    )
    EventReportOperator(
        task_id="event_report",
        request={
            "measures": [
                {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
                {"expression": "event.purchase.price", "aggregator": "SUM"},
            ],
            "crowds": ["$ALL"],
            "unit": "DAY",
            "byFields": [{"expression": "event.purchase.$city"}],
            "fromDate": "2024-01-09",
            "toDate": "2024-01-15",
        },
        destination=f"{OUT}events/",
        report_key="purchases",
    )
