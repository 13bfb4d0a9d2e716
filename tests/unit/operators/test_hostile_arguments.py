"""Operator arguments as users template them: each is refused by name, before any request,
never with a bare built-in exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests_mock as rm

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.operators.accounts import (
    AccountActivationOperator,
    RegisterAccountOperator,
)
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.iceberg_maintenance import IcebergMaintenanceOperator
from airflow_provider_analytics.operators.intervals import covered_days
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
from airflow_provider_analytics.operators.tracking_plan import TrackingPlanSyncOperator
from tests.run_context import run_context


@pytest.fixture
def no_requests(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        '{"conn_type": "analytics", "host": "https://analytics.example.com", "password": "t0k3n"}',
    )
    with rm.Mocker() as mocker:
        yield mocker
    assert mocker.call_count == 0


@pytest.mark.parametrize("operator", [FunnelReportOperator, EventReportOperator])
@pytest.mark.parametrize("request_", ['{"steps": ["event.a"], "crowds": ["$ALL"]}', [["a", 1]]])
def test_a_request_rendered_as_text_is_refused_by_name(
    no_requests: Any, operator: type, request_: Any
) -> None:
    """A templated request renders as text unless the DAG renders native objects: ``dict()``
    of it raised a bare ``ValueError`` (and a list of pairs was read as a dict)."""
    task = operator(task_id="r", request=request_, destination="file:///tmp/reports/")
    with pytest.raises(AnalyticsValidationError, match=r"^request: must be a dict") as refused:
        task.execute(run_context("2024-01-15"))
    assert refused.value.field == "request"


@pytest.mark.parametrize(
    ("rendered", "rule"),
    [(["lake.funnel"], "must be text"), (None, "must be text"), ("", "must be namespace.table")],
)
@pytest.mark.parametrize("operator", [FunnelReportOperator, CohortExportToParquetOperator])
def test_an_iceberg_table_rendered_to_no_table_name_is_refused_by_name(
    no_requests: Any, operator: type, rendered: Any, rule: str
) -> None:
    """A native template rendering a list was written to a real table named ``['lake``; an
    empty or None table was refused as a missing ``destination``."""
    if operator is FunnelReportOperator:
        steps = [{"expression": "event.a"}, {"expression": "event.b"}]
        funnel = {"steps": steps, "crowds": ["$ALL"]}
        task = operator(task_id="r", request=funnel, iceberg_table="{{ params.table }}")
    else:
        task = operator(task_id="c", cohort_code="vip", iceberg_table="{{ params.table }}")
    task.iceberg_table = rendered
    with pytest.raises(AnalyticsValidationError, match=rf"^iceberg_table: {rule}") as refused:
        task.execute(run_context("2024-01-15"))
    assert refused.value.field == "iceberg_table"


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"destination": 5}, "destination"),
        ({"destination": Path("/data/reports/")}, "destination"),
        ({"iceberg_table": "lake.funnel", "iceberg_conn_id": 5}, "iceberg_conn_id"),
        ({"destination": "s3://[bucket/reports/"}, "destination"),  # ValueError: Invalid IPv6
        ({"destination": f"s3://bucket/{'x' * 1600}/"}, "destination"),  # Airflow's ValueError
        ({"iceberg_table": f"lake.{'x' * 1600}"}, "iceberg_table"),
    ],
)
def test_a_destination_no_asset_can_name_is_refused_by_name_when_the_dag_is_parsed(
    arguments: dict[str, Any], field: str
) -> None:
    """The Asset is read from the destination when the operator is made: a number or a path
    raised a bare AttributeError or TypeError, a name too long for an Asset a ValueError."""
    with pytest.raises(AnalyticsValidationError, match=rf"^{field}: must (be a|fit)"):
        FunnelReportOperator(task_id="r", request={}, **arguments)


@pytest.mark.parametrize("ds", ["2024-02-30", "yesterday", "20240115"])
def test_a_ds_that_is_no_day_is_refused_by_name(ds: str) -> None:
    """A context handed over by hand (its ``ds`` stands for the logical date) raised a bare
    ValueError from ``date.fromisoformat``."""
    with pytest.raises(AnalyticsValidationError, match=r"^ds: must be a date"):
        covered_days({"ds": ds})


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda v: TrackingPlanSyncOperator(task_id="p", plan={}, dry_run=v), "dry_run"),
        (
            lambda v: TrackingPlanSyncOperator(task_id="p", plan={}, apply_despite_conflicts=v),
            "apply_despite_conflicts",
        ),
        (
            lambda v: AccountActivationOperator(
                task_id="a", account_email="a@example.com", activation=True, dry_run=v
            ),
            "dry_run",
        ),
        (
            lambda v: RegisterAccountOperator(
                task_id="r", account_email="a@example.com", ensure_exists=v
            ),
            "ensure_exists",
        ),
        (
            lambda v: IcebergMaintenanceOperator(task_id="m", iceberg_tables="a.b", report_only=v),
            "report_only",
        ),
    ],
)
@pytest.mark.parametrize("value", ["false", "False", 0, None])
def test_a_switch_must_be_a_real_bool(make: Any, field: str, value: Any) -> None:
    """``"false"`` is truthy: ``apply_despite_conflicts="false"`` applied a plan despite its
    conflicts, ``dry_run="False"`` only previewed."""
    with pytest.raises(AnalyticsValidationError, match=rf"^{field}: must be True or False"):
        make(value)


@pytest.mark.parametrize(
    ("plan", "rule"),
    [([1, 2], "must be a string"), (5, "must be a string"), ("plans/a\x00.yaml", "control")],
)
def test_a_plan_that_is_no_path_nor_dict_is_refused_by_name(
    no_requests: Any, plan: Any, rule: str
) -> None:
    """``Path()`` of a list raised a bare TypeError, opening a path with a NUL a bare
    ValueError."""
    task = TrackingPlanSyncOperator(task_id="p", plan=plan)
    with pytest.raises(AnalyticsValidationError, match=rf"^plan: .*{rule}"):
        task.execute(run_context("2024-01-15"))  # type: ignore[arg-type]


@pytest.mark.parametrize("tables", ["['lake.a', 'lake.b']", ' ["lake.a"]'])
def test_tables_rendered_as_the_text_of_a_list_are_refused_by_name(tables: str) -> None:
    """A templated list renders as text unless the DAG renders native objects: the text passed
    as one ``namespace.table`` and was skipped as a missing table, the task succeeding."""
    operator = IcebergMaintenanceOperator(task_id="m", iceberg_tables=tables)
    with pytest.raises(AnalyticsValidationError, match=r"^iceberg_tables: must be a list, not"):
        operator.execute({})  # type: ignore[arg-type]


@pytest.mark.parametrize("unique", [{"user_name": "ana_h"}, {"phone": "13800000001"}])
def test_ensure_exists_is_refused_beside_another_unique_field(unique: dict[str, str]) -> None:
    """The platform's "already exists" (50101) does not say which unique field it found: with
    another account's user name, the task reported success for an email that had no account."""
    with pytest.raises(AnalyticsValidationError, match=r"^ensure_exists: cannot be combined"):
        RegisterAccountOperator(
            task_id="r", account_email="carl@example.com", ensure_exists=True, **unique
        )
    RegisterAccountOperator(task_id="r", account_email="carl@example.com", **unique)
    RegisterAccountOperator(
        task_id="r", account_email="c@example.com", name="C", ensure_exists=True
    )


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"account_email": "not-an-email"}, "email"),
        ({"account_email": 5}, "email"),
        ({"account_email": ""}, "email"),
        ({"account_email": None}, "email"),
        ({"account_email": "a@b.com` on the platform.\n\n**Account**: enable `x@b.com"}, "email"),
        ({"account_email": "a@example.com", "login_user": 5}, "login_user"),
    ],
)
def test_an_activation_preview_checks_what_the_change_would_send(
    no_requests: Any, arguments: dict[str, Any], field: str
) -> None:
    """The preview described any argument as a valid change (a review a person could approve,
    with Markdown of the argument's making); the call it previews refuses them."""
    task = AccountActivationOperator(task_id="a", activation=False, dry_run=True, **arguments)
    with pytest.raises(AnalyticsValidationError, match=rf"^{field}: must") as refused:
        task.execute(run_context("2024-01-15"))
    assert refused.value.field == field
