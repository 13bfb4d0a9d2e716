"""Every operator of the provider in one DAG, for a real `airflow dags test` in the tests."""

from __future__ import annotations

import os

import pendulum
from airflow.sdk import DAG

from airflow_provider_analytics.operators.accounts import (
    AccountActivationOperator,
    RegisterAccountOperator,
)
from airflow_provider_analytics.operators.campaigns import CreateUtmOperator
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor

OUT = os.environ["ANALYTICS_TEST_OUTPUT"]
WEEK = {"fromDate": "{{ macros.ds_add(ds, -6) }}", "toDate": "{{ ds }}"}

with DAG(
    "provider_operators",
    schedule="@daily",
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
    render_template_as_native_obj=True,
    default_args={"email": ["oncall@example.com"], "email_on_failure": False},
):
    wait = AnalyticsDataSensor(task_id="wait_for_data", poke_interval=1, timeout=60)
    export = CohortExportToParquetOperator(
        task_id="export_cohort",
        cohort_code="cohort_small",
        destination=f"{OUT}cohort_users/",
        properties=["distinct_id", "$city", "balance", "register_time", "interests", "tag.tag_rfm"],
        timezone="Asia/Shanghai",
    )
    funnel = FunnelReportOperator(
        task_id="funnel_report",
        request={
            "steps": [
                {"expression": "event.$startup", "filter": None},
                {"expression": "event.add_to_cart", "filter": None},
                {"expression": "event.purchase", "filter": None},
            ],
            "crowds": ["$ALL"],
            "convertTime": 1,
            "convertTimeUnit": "DAY",
            **WEEK,
        },
        destination=f"{OUT}funnel/",
        report_key="funnel",
    )
    events = EventReportOperator(
        task_id="event_report",
        request={
            "measures": [
                {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
                {"expression": "event.purchase.price", "aggregator": "SUM"},
                {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
            ],
            "crowds": ["$ALL"],
            "unit": "DAY",
            "byFields": [{"expression": "event.purchase.$city", "buckets": None}],
            **WEEK,
        },
        destination=f"{OUT}events/",
        report_key="events",
        window_days=3,
    )
    utm = CreateUtmOperator(
        task_id="create_utm",
        page_url="https://shop.example.com/spring?ref=ad",
        utm_campaign="spring_{{ ds_nodash }}",
        utm_medium="cpc",
        utm_source="search",
    )
    register = RegisterAccountOperator(
        task_id="register_account",
        account_email="ana.{{ ds_nodash }}@example.com",
        name="Ana",
        password=os.environ["ANALYTICS_TEST_PASSWORD"],
        ensure_exists=True,
    )
    disable = AccountActivationOperator(
        task_id="disable_account",
        account_email="{{ ti.xcom_pull(task_ids='register_account')['email'] }}",
        activation=False,
    )
    wait >> [export, funnel, events]
    register >> disable
