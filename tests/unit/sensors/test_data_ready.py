"""The data-ready sensor's poke decisions (request shapes mocked) and what a DAG file that
imports it loads."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest
import requests_mock as rm
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout, AirflowSkipException

from airflow_provider_analytics.sensors.data_ready import AnalyticsDataSensor
from tests.data_ready_answers import counts_response
from tests.run_context import run_context

BASE = "https://analytics.example.com"
ANALYZE = f"{BASE}/uba/api/events/analyze"


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": BASE,
                "password": "tok-1234567",
                "extra": {"app_key": "ak-1234567", "max_attempts": 1},
            }
        ),
    )


def context(day: str = "2024-01-15") -> dict:
    return run_context(day)


def test_poke_sends_the_check_for_the_interval(connection: None) -> None:
    sensor = AnalyticsDataSensor(task_id="wait", threshold=3)
    with rm.Mocker() as mock:
        mock.post(ANALYZE, json=counts_response(["2024-01-15"], [3]))
        result = sensor.poke(context())
        sent = mock.request_history[0]
    assert result.is_done and result.xcom_value["counts"] == {"2024-01-15": 3.0}
    assert sent.json()["fromDate"] == sent.json()["toDate"] == "2024-01-15"
    assert sent.headers["token"] == "tok-1234567"


def test_poke_waits_through_transient_errors(connection: None) -> None:
    sensor = AnalyticsDataSensor(task_id="wait")
    with rm.Mocker() as mock:
        mock.post(ANALYZE, status_code=503, json={"code": 503, "msg": "engine busy", "data": None})
        assert sensor.poke(context()).is_done is False


def test_poke_fails_at_once_on_authentication_errors(connection: None) -> None:
    sensor = AnalyticsDataSensor(task_id="wait")
    with rm.Mocker() as mock:
        mock.post(ANALYZE, status_code=401, json={"code": 401, "msg": "bad token", "data": None})
        with pytest.raises(AirflowFailException, match="token and appKey"):
            sensor.poke(context())
    soft = AnalyticsDataSensor(task_id="wait", soft_fail=True)
    with rm.Mocker() as mock:
        mock.post(ANALYZE, status_code=401, json={"code": 401, "msg": "bad token", "data": None})
        with pytest.raises(AirflowSkipException):
            soft.poke(context())


def test_bad_arguments_fail_before_any_request(connection: None) -> None:
    sensor = AnalyticsDataSensor(task_id="wait", event="bad event")
    with rm.Mocker() as mock, pytest.raises(AirflowFailException, match="event"):
        sensor.poke(context())
    assert mock.request_history == []


def test_zero_length_interval_covers_the_logical_day(connection: None) -> None:
    sensor = AnalyticsDataSensor(task_id="wait")
    start = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
    check = sensor.data_check(
        {"ds": "2024-01-15", "data_interval_start": start, "data_interval_end": start}
    )
    assert (check.from_date, check.to_date) == ("2024-01-15", "2024-01-15")
    weekly = sensor.data_check(
        {
            "ds": "2024-01-15",
            "logical_date": start,
            "data_interval_start": start,
            "data_interval_end": start + dt.timedelta(days=7),
        }
    )
    assert (weekly.from_date, weekly.to_date) == ("2024-01-15", "2024-01-21")


@pytest.mark.parametrize("threshold", ["5", True, float("nan"), float("inf"), [5]])
def test_a_rendered_threshold_is_refused_not_coerced(connection: None, threshold: object) -> None:
    sensor = AnalyticsDataSensor(task_id="wait", threshold=threshold)  # type: ignore[arg-type]
    with rm.Mocker() as mocked, pytest.raises(AirflowFailException, match="threshold"):
        sensor.poke(context())
    assert mocked.call_count == 0


def test_the_async_transport_stays_out_of_dag_parsing() -> None:
    """Importing the sensor (as a DAG file does) loads neither the trigger's asynchronous
    client nor its transport; the trigger imports them when it runs."""
    code = (
        "import sys, airflow_provider_analytics.sensors.data_ready\n"
        "prefix = 'airflow_provider_analytics.client.async'\n"
        "print([m for m in sys.modules if m.startswith(prefix)])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("status", "soft_fail", "raised"),
    [
        ("timeout", False, AirflowSensorTimeout),
        ("timeout", True, AirflowSkipException),
        ("error", False, AirflowFailException),
        ("error", True, AirflowSkipException),
    ],
)
def test_a_deferred_wait_that_ends_without_data_fails_or_skips_with_its_reason(
    status: str, soft_fail: bool, raised: type[Exception]
) -> None:
    sensor = AnalyticsDataSensor(task_id="wait", soft_fail=soft_fail)
    with pytest.raises(raised, match="had not landed"):
        sensor.execute_complete({}, {"status": status, "message": "had not landed"})  # type: ignore[arg-type]


def test_a_deferred_wait_that_saw_the_data_returns_what_it_saw() -> None:
    detail = {"counts": {"2024-01-15": 3.0}}
    sensor = AnalyticsDataSensor(task_id="wait")
    assert sensor.execute_complete({}, {"status": "success", "detail": detail}) == detail  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [dt.timedelta.max, dt.timedelta(days=3661)])
def test_a_deferrable_wait_no_calendar_can_end_is_refused_before_any_request(
    connection: None, timeout: dt.timedelta
) -> None:
    """Its deadline raised a bare OverflowError after the first poke (or, when deferred,
    where Airflow adds the timeout to the current moment)."""
    from airflow_provider_analytics.core.errors import AnalyticsValidationError

    sensor = AnalyticsDataSensor(task_id="wait", timeout=timeout, deferrable=True)
    with rm.Mocker() as mocked, pytest.raises(AnalyticsValidationError, match=r"^timeout: must"):
        sensor.execute(context())  # type: ignore[arg-type]
    assert mocked.call_count == 0


def test_a_deferrable_wait_polling_without_pause_is_refused_before_any_request(
    connection: None,
) -> None:
    """``poke_interval=0`` made the trigger poll in a tight loop (hundreds of requests a
    second); the trigger refuses it by the same rule."""
    from airflow_provider_analytics.core.errors import AnalyticsValidationError
    from airflow_provider_analytics.triggers.data_ready import AnalyticsDataReadyTrigger

    sensor = AnalyticsDataSensor(task_id="wait", poke_interval=0, deferrable=True)
    refused = r"^poke_interval: must be greater than 0"
    with rm.Mocker() as mocked, pytest.raises(AnalyticsValidationError, match=refused):
        sensor.execute(context())  # type: ignore[arg-type]
    assert mocked.call_count == 0
    with pytest.raises(AnalyticsValidationError, match=refused):
        AnalyticsDataReadyTrigger("analytics_default", {}, poke_interval=0)


@pytest.mark.parametrize(
    ("event", "refusal"),
    [
        (None, "the answer must be a JSON object"),
        ([], "the answer must be a JSON object"),
        ("success", "the answer must be a JSON object"),
        ({"status": "success"}, "detail is missing"),
        ({"status": "weird", "message": "x"}, "status must be one of"),
        ({"status": "timeout"}, "message is missing"),
    ],
)
def test_a_trigger_event_of_another_shape_is_refused_by_name(event: object, refusal: str) -> None:
    """Such events raised a bare AttributeError, and a success without its detail counted as
    the data having landed."""
    from airflow_provider_analytics.client.answers import AnswerShapeError

    sensor = AnalyticsDataSensor(task_id="wait", soft_fail=True)
    with pytest.raises(AnswerShapeError, match=rf"^data_ready_trigger: {refusal}"):
        sensor.execute_complete({}, event)  # type: ignore[arg-type]


def test_a_range_no_check_can_count_is_refused_before_any_request(connection: None) -> None:
    """Each poke of ``to_date="9999-12-31"`` logged a ~99 MB line of days."""
    sensor = AnalyticsDataSensor(task_id="wait", to_date="9999-12-31")
    with rm.Mocker() as mock, pytest.raises(AirflowFailException, match="to_date: must be at most"):
        sensor.poke(context())
    assert mock.request_history == []


@pytest.mark.parametrize("field", ["from_date", "to_date"])
def test_a_day_that_renders_to_nothing_is_refused_not_the_runs_day(
    connection: None, field: str
) -> None:
    """``from_date="{{ params.since }}"`` rendering ``""`` silently meant the run's day."""
    sensor = AnalyticsDataSensor(task_id="wait", **{field: ""})  # type: ignore[arg-type]
    with rm.Mocker() as mocked, pytest.raises(AirflowFailException, match=field):
        sensor.poke(context())
    assert mocked.call_count == 0
