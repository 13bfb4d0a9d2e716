"""The deferrable sensor's trigger polling the emulator over real HTTP while data arrives."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.triggers.data_ready import AnalyticsDataReadyTrigger

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-15"


def set_connection(monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer, **extra: Any) -> None:
    config = emulator.config
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": emulator.base_url,
                "password": config.token,
                "extra": {"app_key": config.app_key, **extra},
            }
        ),
    )


@pytest.fixture
def connection(monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer) -> None:
    set_connection(monkeypatch, emulator)


def first_event(
    trigger: AnalyticsDataReadyTrigger, *, during: Any = None, timeout: float = 30
) -> dict:
    """Run the trigger until it fires; ``during`` (a coroutine function) runs alongside."""

    async def main() -> dict:
        async def fire() -> dict:
            async for event in trigger.run():
                return dict(event.payload)
            raise AssertionError("the trigger ended without an event")

        side = asyncio.ensure_future(during()) if during else None
        try:
            return await asyncio.wait_for(fire(), timeout)
        finally:
            if side:
                await side

    return asyncio.run(main())


def test_trigger_fires_when_the_days_data_arrives(
    connection: None, emulator_admin: EmulatorAdmin, caplog: pytest.LogCaptureFixture
) -> None:
    emulator_admin.set_data_until(dt.date(2024, 1, 14))
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, 0.2
    )
    polls_before = emulator_admin.stats()["requests"].get("analyze_events", 0)

    def polls() -> int:
        return int(emulator_admin.stats()["requests"].get("analyze_events", 0)) - polls_before

    async def arrive() -> None:  # after three polls that found the day missing
        while await asyncio.to_thread(polls) < 3:
            await asyncio.sleep(0.1)
        await asyncio.to_thread(emulator_admin.set_data_until, None)

    event = first_event(trigger, during=arrive)
    assert event["status"] == "success"
    assert event["detail"]["counts"][DAY] > 0 and event["detail"]["missing"] == []
    # it polled on while the day was missing, then saw it: the data arrived once three polls
    # had reached the emulator, and the third may have been answered after it arrived
    assert polls() >= 3
    assert caplog.text.count("data not ready yet") >= 2


def test_trigger_polls_through_server_errors(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    emulator_admin.fault("analyze_events", "status", status=503, times=2)
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, 0.1
    )
    assert first_event(trigger)["status"] == "success"


def test_one_check_retries_with_the_clients_policy(
    monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    """Two 503s are retried inside one check (the poke interval is far longer than the
    wait), as the sensor's synchronous client would."""
    set_connection(monkeypatch, emulator, max_attempts=3, backoff_base=0.01)
    emulator_admin.fault("analyze_events", "status", status=503, times=2)
    polls_before = emulator_admin.stats()["requests"].get("analyze_events", 0)
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, poke_interval=600
    )
    assert first_event(trigger, timeout=20)["status"] == "success"
    assert emulator_admin.stats()["requests"]["analyze_events"] - polls_before == 3


def test_a_check_out_of_attempts_is_logged_and_polled_through(
    monkeypatch: pytest.MonkeyPatch,
    emulator: EmulatorServer,
    emulator_admin: EmulatorAdmin,
    caplog: pytest.LogCaptureFixture,
) -> None:
    set_connection(monkeypatch, emulator, max_attempts=1)
    emulator_admin.fault("analyze_events", "status", status=503, times=2)
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, poke_interval=0.05
    )
    with caplog.at_level(logging.WARNING, logger="airflow_provider_analytics.triggers"):
        assert first_event(trigger)["status"] == "success"
    transient = [r for r in caplog.records if "failed transiently, polling on" in r.getMessage()]
    assert len(transient) == 2
    assert "server error after 1 attempt(s)" in transient[0].getMessage()


def test_trigger_ends_at_once_on_authentication_errors(
    monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer
) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": emulator.base_url,
                "password": "tok-Wrong-98765",
                "extra": {"app_key": emulator.config.app_key},
            }
        ),
    )
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, 0.1
    )
    event = first_event(trigger, timeout=10)
    assert event["status"] == "error"
    assert "token and appKey" in event["message"]
    assert "tok-Wrong-98765" not in event["message"]


def test_trigger_plan_source_fires_when_data_status_flips(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    check = {"from_date": DAY, "to_date": DAY, "source": "plan", "event": "refund"}
    trigger = AnalyticsDataReadyTrigger("analytics_default", check, 0.2)

    async def arrive() -> None:
        await asyncio.sleep(0.8)
        await asyncio.to_thread(lambda: emulator_admin.set_data_status(1, event="refund"))

    event = first_event(trigger, during=arrive)
    assert event == {
        "status": "success",
        "detail": {"event": "refund", "event_property": None, "found": True, "dataStatus": 1},
    }


def test_the_trigger_keeps_the_sensors_deadline_itself(
    connection: None, emulator_admin: EmulatorAdmin
) -> None:
    """Whatever runs it, the trigger ends with a timeout event once its deadline passes, even
    when a poll interval is longer than the time left."""
    emulator_admin.set_data_until(dt.date(2024, 1, 14))
    try:
        started = time.monotonic()
        trigger = AnalyticsDataReadyTrigger(
            "analytics_default",
            {"from_date": DAY, "to_date": DAY},
            poke_interval=60,
            deadline=time.time() + 1.5,
        )
        event = first_event(trigger, timeout=30)
        waited = time.monotonic() - started
    finally:
        emulator_admin.set_data_until(None)
    assert event["status"] == "timeout"
    assert DAY in event["message"]
    assert 1.0 <= waited < 20


def test_trigger_serializes_to_plain_json() -> None:
    trigger = AnalyticsDataReadyTrigger(
        "conn", {"from_date": DAY, "to_date": DAY}, 5.0, deadline=1_700_000_000.5
    )
    path, kwargs = trigger.serialize()
    assert path == "airflow_provider_analytics.triggers.data_ready.AnalyticsDataReadyTrigger"
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert AnalyticsDataReadyTrigger(**kwargs).serialize() == (path, kwargs)


def test_an_unexpected_failure_reaches_the_event_masked_and_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever text an unexpected failure carries, the event shows it masked, then cut."""
    from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient

    token = "tok-Trig9-Zx41-distinct"
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": "http://127.0.0.1:9",
                "password": token,
                "extra": {"app_api_key": "app-Trig9-Qw83"},
            }
        ),
    )

    async def failing_check(*_: Any) -> Any:
        raise RuntimeError("w" * 480 + f"header token: {token}" + "v" * 2000)

    monkeypatch.setattr(AsyncAnalyticsClient, "request_json", failing_check)
    trigger = AnalyticsDataReadyTrigger(
        "analytics_default", {"from_date": DAY, "to_date": DAY}, poke_interval=0.01
    )
    event = first_event(trigger)
    assert event["status"] == "error"
    message = event["message"]
    assert len(message) <= 500
    assert not any(token[i : i + 4] in message for i in range(len(token) - 3))
