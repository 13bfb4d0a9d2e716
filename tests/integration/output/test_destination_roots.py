"""A rendered destination is checked for where it really leads before any request: the forms
that used to reach /etc/cron.d are refused, and a deployment's allowed roots (the Airflow
option ``[analytics] allowed_destinations`` and the connection extra of the same name) bound
every destination, against a server on loopback that records what reaches it."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import AnalyticsValidationError
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from tests.reliability.connections import CONNECTION_ENV, use_connection
from tests.reliability.local_servers import LocalServer
from tests.reliability.subjects import FUNNEL_REQUEST, OutletEvent

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from airflow.sdk import BaseOperator
    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

START = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)


def context(**params: Any) -> dict[str, Any]:
    return {
        "ds": "2024-01-15",
        "ds_nodash": "20240115",
        "logical_date": START,
        "data_interval_start": START,
        "data_interval_end": START + dt.timedelta(days=1),
        "outlet_events": defaultdict(OutletEvent),
        "params": params,
    }


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalServer]:
    """A platform on loopback that answers anything and records every request."""
    with LocalServer(body=[]) as server:
        monkeypatch.setenv(
            CONNECTION_ENV,
            json.dumps(
                {
                    "conn_type": "analytics",
                    "host": server.base_url,
                    "password": "tok-Roots-5521",
                    "extra": {"app_api_key": "app-Roots-0193", "max_attempts": 1},
                }
            ),
        )
        yield server


def refused(operator: BaseOperator, **params: Any) -> AnalyticsValidationError:
    run = context(**params)
    operator.render_template_fields(run)  # type: ignore[arg-type]
    with pytest.raises(AnalyticsValidationError) as caught:
        operator.execute(run)  # type: ignore[arg-type]
    assert caught.value.field == "destination"
    return caught.value


def export_to(destination: str) -> CohortExportToParquetOperator:
    return CohortExportToParquetOperator(
        task_id="export", cohort_code="cohort_tiny", destination=destination, attempts=1
    )


@pytest.mark.parametrize("rendered", ["//etc/cron.d/", "file:/etc/cron.d/"])
def test_a_destination_from_params_cannot_reach_a_system_directory(
    recorder: LocalServer, rendered: str
) -> None:
    """The issue's two forms: the output path became /etc/cron.d/dt=2024-01-01/users.parquet."""
    error = refused(export_to("{{ params.root }}"), root=rendered)
    assert "system directory /etc" in str(error)
    assert recorder.received == []


def test_the_deployment_option_bounds_every_destination(
    recorder: LocalServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AIRFLOW__ANALYTICS__ALLOWED_DESTINATIONS", f"{tmp_path.as_uri()}/")
    error = refused(
        FunnelReportOperator(
            task_id="funnel", request=FUNNEL_REQUEST, destination="{{ params.root }}funnel/"
        ),
        root="file:///srv/analytics/",
    )
    assert "[analytics] allowed_destinations" in str(error)
    assert "it leads to file:///srv/analytics/funnel/" in str(error)
    error = refused(export_to("{{ params.root }}"), root=f"{tmp_path.as_uri()}/%2e%2e/x/")
    assert "'..'" in str(error)
    assert recorder.received == []


def test_the_connection_extra_bounds_every_destination(
    recorder: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = json.loads(os.environ[CONNECTION_ENV])
    connection["extra"]["allowed_destinations"] = "s3://analytics-bucket/, file:///data/"
    monkeypatch.setenv(CONNECTION_ENV, json.dumps(connection))
    error = refused(export_to("s3://aws@other-bucket/users/"))
    assert "the connection extra allowed_destinations" in str(error)
    assert recorder.received == []


def test_a_destination_under_an_allowed_root_is_written(
    emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    use_connection(monkeypatch, emulator, allowed_destinations=f"{tmp_path.as_uri()}/")
    run = context(team="growth")
    operator = export_to(f"file://{tmp_path}/exports/{{{{ params.team }}}}/")
    operator.render_template_fields(run)  # type: ignore[arg-type]
    result = operator.execute(run)  # type: ignore[arg-type]
    written = tmp_path / "exports/growth/cohort_code=cohort_tiny/dt=2024-01-15/users.parquet"
    assert written.is_file()
    assert result["rows"] > 0
