"""Daily analytics into Apache Iceberg tables: a cohort's members, the checkout funnel and the
day's event figures, each run replacing its own day.

Needs the provider's ``[iceberg]`` extra and an ``analytics_iceberg`` connection describing the
catalog, e.g. a SQL catalog on a local SQLite file::

    AIRFLOW_CONN_ANALYTICS_ICEBERG='{"conn_type": "iceberg", "extra": {
        "uri": "sqlite:////data/iceberg/catalog.db", "warehouse": "file:///data/iceberg/warehouse"}}'

(PostgreSQL: ``"uri": "postgresql+psycopg2://iceberg@db:5432/catalog"`` with the password in the
password field; a REST catalog: host, port, schema ``https`` and the token as password.)

Tables (namespace ``analytics``), each partitioned by ``dt``::

    analytics.cohort_users                      one row per member of the cohort, per day
                                                (columns named for warehouses: city, not $city)
    analytics.checkout_funnel, ..._totals,      the funnel's four tables (one grain each)
        ..._by_value, ..._by_value_totals
    analytics.daily_events, ..._totals          the event figures and the platform's totals

A rerun or a backfill of a day replaces that day's partition in one commit per table; runs of
different days may commit at the same time. A property added to the tracking plan becomes a new
column of ``analytics.cohort_users`` from that day on, without rewriting earlier days.

After the writers, ``maintain_tables`` expires each table's snapshots older than a week
(keeping the newest) and deletes the files no snapshot reaches that are older than three days:
a killed run's uncommitted data files and the files of replaced days once their snapshots
have expired. It runs after the day's writers, whether they succeeded or not.
"""

from __future__ import annotations

import datetime as dt

import pendulum
from airflow.sdk import dag
from analytics_outputs import PROJECT_TIMEZONE

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.iceberg_maintenance import IcebergMaintenanceOperator
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator

CATALOG = "analytics_iceberg"
CHECKOUT_STEPS = ("$startup", "search", "add_to_cart", "purchase")
TABLES = [
    "analytics.cohort_users",
    *(f"analytics.checkout_funnel{suffix}" for suffix in ("", "_totals", "_by_value")),
    "analytics.checkout_funnel_by_value_totals",
    "analytics.daily_events",
    "analytics.daily_events_totals",
]


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=2,
    tags=["analytics", "example", "iceberg"],
)
def analytics_iceberg() -> None:
    cohort_users = CohortExportToParquetOperator(
        task_id="cohort_users",
        timezone=PROJECT_TIMEZONE,
        cohort_code="cohort_small",
        iceberg_table="analytics.cohort_users",
        iceberg_conn_id=CATALOG,
    )
    checkout_funnel = FunnelReportOperator(
        task_id="checkout_funnel",
        timezone=PROJECT_TIMEZONE,
        request={
            "steps": [{"expression": f"event.{step}", "filter": None} for step in CHECKOUT_STEPS],
            "crowds": ["$ALL"],
            "byField": {"expression": "user.$city"},
        },
        iceberg_table="analytics.checkout_funnel",
        iceberg_conn_id=CATALOG,
        report_key="checkout",
    )
    daily_events = EventReportOperator(
        task_id="daily_events",
        timezone=PROJECT_TIMEZONE,
        request={
            "measures": [
                {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
                {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
                {"expression": "event.purchase.amount", "aggregator": "SUM"},
            ],
            "crowds": ["$ALL"],
            "unit": "DAY",
            "byFields": [{"expression": "event.$Anything.$platform"}],
        },
        iceberg_table="analytics.daily_events",
        iceberg_conn_id=CATALOG,
        report_key="daily_events",
    )
    maintain_tables = IcebergMaintenanceOperator(
        task_id="maintain_tables",
        iceberg_tables=TABLES,
        iceberg_conn_id=CATALOG,
        snapshot_retention=dt.timedelta(days=7),  # time travel reaches a week back
        orphan_file_age=dt.timedelta(days=3),  # longer than any run takes to commit
        trigger_rule="all_done",  # a failed writer's files are exactly what it cleans up
    )
    [cohort_users, checkout_funnel, daily_events] >> maintain_tables


analytics_iceberg()
