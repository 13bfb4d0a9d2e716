"""Several cohorts exported every day, one mapped task per cohort, made for backfills.

Fill a past range (Airflow 3; the scheduler runs the backfill's DAG runs)::

    airflow backfill create --dag-id analytics_cohort_exports \
        --from-date 2024-01-01 --to-date 2024-01-31 --max-active-runs 2

Each day's files land in ``cohort_code=<code>/dt=<day>/`` and replace that day's earlier files, so
a range can be filled again (``--reprocess-behavior completed``) without duplicates. A cohort
export is a snapshot of the cohort's members when the task runs, not on the logical date.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import dag
from analytics_outputs import COHORT_USERS, PROJECT_TIMEZONE

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.output import destination_asset

COHORTS = ["cohort_tiny", "cohort_small", "cohort_medium"]


@dag(
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=2,
    tags=["analytics", "example"],
)
def analytics_cohort_exports() -> None:
    CohortExportToParquetOperator.partial(
        task_id="export_cohort",
        timezone=PROJECT_TIMEZONE,
        destination=COHORT_USERS,
        properties=["distinct_id", "$city", "register_time", "total_orders", "is_vip"],
        max_active_tis_per_dagrun=2,  # at most two exports stream from the platform at once
        # A mapped operator is declared before it is built: name its Asset here.
        outlets=[destination_asset(COHORT_USERS)],
    ).expand(cohort_code=COHORTS)


analytics_cohort_exports()
