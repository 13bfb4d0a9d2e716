"""Operator arguments as users template them: each is refused by name, before any request,
never with a bare built-in exception."""

from __future__ import annotations

from typing import Any

import pytest
import requests_mock as rm

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
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
