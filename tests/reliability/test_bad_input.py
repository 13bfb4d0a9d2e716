"""Invalid inputs to the hook, the operators, the sensor and the connection: each one raises a
clear error naming the field, and no request reaches the platform."""

from __future__ import annotations

import json
import re
import tempfile
from typing import TYPE_CHECKING, Any

import pytest
from airflow.sdk.exceptions import AirflowFailException
from requests.adapters import HTTPAdapter

from airflow_provider_analytics.client import AnalyticsError, AnalyticsValidationError
from tests.reliability.bad_inputs import BAD_INPUTS, BadInput
from tests.reliability.connections import CONNECTION_ENV, connection_json
from tests.reliability.results import record

if TYPE_CHECKING:
    import requests
    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

CLEAR_ERRORS = (AnalyticsError, AirflowFailException)
"""What a refusal may raise: the client's errors, or the sensor's failure carrying one."""


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every request sent through ``requests`` during the test, the admin API's left out."""
    calls: list[str] = []
    send = HTTPAdapter.send

    def counted(self: HTTPAdapter, request: requests.PreparedRequest, **kwargs: Any) -> Any:
        if "/_emulator/" not in str(request.url):
            calls.append(f"{request.method} {request.url}")
        return send(self, request, **kwargs)

    monkeypatch.setattr(HTTPAdapter, "send", counted)
    return calls


def total_requests(admin: EmulatorAdmin) -> int:
    return sum(admin.stats()["requests"].values())


def names_field(error: BaseException, field: str) -> bool:
    if isinstance(error, AnalyticsValidationError):
        return error.field == field
    text = str(error)
    return f"{field}:" in text or f"'{field}'" in text


def use_connection(monkeypatch: pytest.MonkeyPatch, server: EmulatorServer, case: BadInput) -> None:
    connection = json.loads(connection_json(server, max_attempts=1))
    for key, value in case.connection.items():
        if key == "host":
            connection["host"] = value
        else:
            connection["extra"][key] = value
    monkeypatch.setenv(CONNECTION_ENV, json.dumps(connection))


def test_there_are_at_least_sixty_distinct_bad_inputs() -> None:
    assert len({case.id for case in BAD_INPUTS}) == len(BAD_INPUTS) >= 60
    assert {case.target for case in BAD_INPUTS} >= {
        "hook",
        "connection",
        "CreateUtmOperator",
        "DeleteUtmOperator",
        "UtmConversionOperator",
        "RegisterAccountOperator",
        "AccountActivationOperator",
        "CohortExportToParquetOperator",
        "FunnelReportOperator",
        "EventReportOperator",
        "TrackingPlanSyncOperator",
        "AnalyticsDataSensor",
    }


def test_the_hostile_cases_cover_paths_coercion_headers_and_parsers() -> None:
    hostile = [case for case in BAD_INPUTS if case.hostile]
    assert len(hostile) >= 30
    assert {case.field for case in hostile} >= {
        "cohort_code",
        "destination",
        "limit",
        "login_user",
        "email",
        "threshold",
        "file",
        "xtoken",
        "app_key",
        "verify",
    }


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[case.id for case in BAD_INPUTS])
def test_refused_before_any_request(
    case: BadInput,
    monkeypatch: pytest.MonkeyPatch,
    emulator: EmulatorServer,
    emulator_admin: EmulatorAdmin,
    sent: list[str],
) -> None:
    use_connection(monkeypatch, emulator, case)
    before = total_requests(emulator_admin)
    with pytest.raises(CLEAR_ERRORS) as caught:
        case.call()
    error = caught.value
    record(
        "bad_input",
        {
            "target": case.target,
            "label": case.label,
            "field": case.field,
            "error_type": type(error).__name__,
            # a plan file's temporary folder is not part of the outcome
            "message": re.sub(rf"{re.escape(tempfile.gettempdir())}/[^/\s]+", "<tmp>", str(error)),
            "requests": len(sent),
            "hostile": case.hostile,
        },
    )
    assert sent == []
    assert total_requests(emulator_admin) == before
    assert names_field(error, case.field), (
        f"{type(error).__name__} does not name {case.field}: {error}"
    )
