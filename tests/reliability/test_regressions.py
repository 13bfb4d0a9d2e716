"""Fixes the reliability work led to, each pinned by a quick test of its own."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pytest

from airflow_provider_analytics.client import AnalyticsServerError
from airflow_provider_analytics.operators.campaigns import CreateUtmOperator, UtmReadBackError
from tests.reliability.connections import QUICK_RETRIES, use_connection

if TYPE_CHECKING:
    from airflow_provider_analytics.emulator.server import EmulatorServer
    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

START = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
CONTEXT = {"ds": "2024-01-15", "data_interval_start": START, "data_interval_end": START}


def test_a_created_link_that_cannot_be_read_back_is_named_in_the_failure(
    monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    use_connection(monkeypatch, emulator, **QUICK_RETRIES)
    emulator_admin.fault("get_utm", "status", status=503, times=100)
    operator = CreateUtmOperator(
        task_id="link",
        page_url="https://shop.example.com/",
        utm_campaign="c",
        utm_medium="m",
        utm_source="s",
    )
    with pytest.raises(UtmReadBackError) as caught:
        operator.execute(CONTEXT)  # type: ignore[arg-type]
    error = caught.value
    assert isinstance(error.__cause__, AnalyticsServerError)
    assert (error.status, error.operation) == (503, "get_utm")
    assert f"ad tracking {error.campaign_id} was created" in str(error)
    assert "do not create it again" in str(error)
    emulator_admin.clear_faults()
    record = emulator.state.campaigns.get(int(error.campaign_id))
    assert record["utmCampaign"] == "c" and record["status"] == 1
