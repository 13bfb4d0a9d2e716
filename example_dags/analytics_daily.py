"""Daily analytics pipeline: once a day is over and its events have landed, export a cohort and
flatten the checkout funnel and the day's event figures into Parquet tables.

Each run covers the day of its logical date, by the provider's day rule, whether the scheduler,
``airflow dags trigger --logical-date``, a backfill or ``airflow dags test`` started it (a run
without a logical date covers the last finished day). It writes Hive-style partitions under
ANALYTICS_OUTPUT_ROOT (see analytics_outputs.py)::

    cohort_users/cohort_code=cohort_small/dt=2024-01-15/users.parquet
    checkout_funnel/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet
    daily_events/events/report_key=daily_events/dt=2024-01-15/events.parquet

Events reach the platform late (mobile apps upload when they are next online), so both reports
look back: each run also re-pulls the LOOKBACK_DAYS days before its own and replaces their
partitions (``dt=2024-01-13`` and ``dt=2024-01-14`` for the run above), each written exactly
as that day's own run writes it. A rerun or a backfill of a day replaces that day's files and
its look-back days' report files, and touches no other day; no day is ever held twice.

Freshness: a deadline alert fires when a run has not finished (its outputs are not all
published) LATE_AFTER past the end of the day it covers, and sends a notifier's message
(e-mail here; any notifier, such as Slack's, fits the same place).
"""

from __future__ import annotations

import datetime as dt

import pendulum
from airflow.providers.smtp.notifications.smtp import SmtpNotifier
from airflow.providers.standard.sensors.date_time import DateTimeSensorAsync
from airflow.sdk import AsyncCallback, DeadlineAlert, DeadlineReference, dag
from analytics_outputs import CHECKOUT_FUNNEL, COHORT_USERS, DAILY_EVENTS, PROJECT_TIMEZONE

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.intervals import covered_days_end
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor

CHECKOUT_STEPS = ("$startup", "search", "add_to_cart", "purchase")
LOOKBACK_DAYS = 2
"""Days before the run's own that each report re-pulls (late events)."""
LATE_AFTER = dt.timedelta(hours=6)
"""How long after its day ends a run's outputs must be published before the alert fires."""
ALERT_EMAIL = "data-team@example.com"

# A run's logical date is the start of the day it covers (in the DAG's timezone, UTC here), so
# the day ends one day later; the alert fires LATE_AFTER after that unless the run has finished.
LATE_OUTPUTS = DeadlineAlert(
    reference=DeadlineReference.DAGRUN_LOGICAL_DATE,
    interval=dt.timedelta(days=1) + LATE_AFTER,
    callback=AsyncCallback(
        SmtpNotifier,
        kwargs={
            "to": ALERT_EMAIL,
            # the alert's context holds the run (as the REST API shows it) and the deadline
            "subject": "analytics_daily: run {{ dag_run.run_id }} is late",
            "html_content": "The day's outputs were due by {{ deadline.deadline_time }}.",
        },
    ),
)


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=2,
    deadline=LATE_OUTPUTS,
    default_args={"retries": 2, "retry_delay": dt.timedelta(minutes=5)},
    tags=["analytics", "example"],
    user_defined_macros={"covered_days_end": covered_days_end},
)
def analytics_daily() -> None:
    # A scheduled run starts at the beginning of its day: wait (in the triggerer) until the day
    # the run covers is over. A past day is over already, so backfills and manual runs of past
    # days go straight on.
    day_is_over = DateTimeSensorAsync(
        task_id="day_is_over", target_time="{{ covered_days_end(dag_run, dag) }}"
    )
    events_landed = AnalyticsDataSensor(
        task_id="events_landed",
        threshold=100,
        mode="reschedule",
        poke_interval=600,
        timeout=12 * 3600,
    )
    export_users = CohortExportToParquetOperator(
        task_id="export_cohort_users",
        timezone=PROJECT_TIMEZONE,
        cohort_code="cohort_small",
        destination=COHORT_USERS,
        properties=["distinct_id", "$city", "$os", "register_time", "balance", "is_vip"],
        # ids stay exact int64 by default; a property holding decimals is kept double on a day
        # whose values happen to be whole, so every day's file has the same column types
        schema_overrides={"balance": "double"},
    )
    checkout_funnel = FunnelReportOperator(
        task_id="checkout_funnel",
        timezone=PROJECT_TIMEZONE,
        request={
            "steps": [{"expression": f"event.{step}", "filter": None} for step in CHECKOUT_STEPS],
            "crowds": ["$ALL"],
            "convertTime": 1,
            "convertTimeUnit": "DAY",
        },
        destination=CHECKOUT_FUNNEL,
        report_key="checkout",  # the rows' name in a shared prefix, whatever the request
        lookback_days=LOOKBACK_DAYS,
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
        destination=DAILY_EVENTS,
        report_key="daily_events",
        lookback_days=LOOKBACK_DAYS,
    )
    day_is_over >> events_landed >> [export_users, checkout_funnel, daily_events]


analytics_daily()
