"""Fixes the reliability work led to, each pinned by a quick test of its own."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_analytics.client import AnalyticsServerError, AnalyticsValidationError
from airflow_provider_analytics.client.analysis_requests import EventRequest
from airflow_provider_analytics.core.rules import time_zone
from airflow_provider_analytics.operators.campaigns import CreateUtmOperator, UtmReadBackError
from airflow_provider_analytics.output.parquet import parquet_compression
from airflow_provider_analytics.reports.job import date_windows
from tests.reliability.connections import quick_retries, use_connection
from tests.reliability.subjects import EVENT_REQUEST

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

START = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
CONTEXT = {"ds": "2024-01-15", "data_interval_start": START, "data_interval_end": START}


def test_a_created_link_that_cannot_be_read_back_is_named_in_the_failure(
    monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    use_connection(monkeypatch, emulator, **quick_retries())
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


@pytest.mark.parametrize("codec", ["zstd", "snappy", "gzip", "none", "NONE", "ZSTD"])
def test_parquet_codecs_that_write_are_accepted(codec: str) -> None:
    assert parquet_compression(codec) == codec


@pytest.mark.parametrize("codec", ["lz5", "uncompressed", "", None, 3])
def test_unknown_parquet_codecs_are_refused_naming_the_field(codec: object) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        parquet_compression(codec)
    assert caught.value.field == "compression"


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "+08:00"])
def test_time_zones_arrow_reads_are_accepted(zone: str) -> None:
    assert time_zone(zone) == zone


def test_every_accepted_zone_name_is_one_arrow_reads() -> None:
    """The check uses the zone database, the decoder Arrow: they must agree."""
    for zone in sorted(zoneinfo.available_timezones()):
        try:
            time_zone(zone)
        except AnalyticsValidationError:
            continue
        pc.assume_timezone(pa.nulls(1, pa.timestamp("ms")), zone)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", None, "localtime", "posixrules", "Factory"])
def test_unknown_time_zones_are_refused_naming_the_field(zone: object) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        time_zone(zone)
    assert caught.value.field == "timezone"


def test_report_windows_must_be_whole_days_but_zero_still_means_one_window() -> None:
    assert date_windows("2024-01-01", "2024-01-10", 0) == [("2024-01-01", "2024-01-10")]
    assert len(date_windows("2024-01-01", "2024-01-10", 3)) == 4
    for bad in (-7, 1.5, True):
        with pytest.raises(AnalyticsValidationError) as caught:
            date_windows("2024-01-01", "2024-01-10", bad)  # type: ignore[arg-type]
        assert caught.value.field == "window_days"


@pytest.mark.parametrize(("key", "shown"), [("", "''"), (" ", "' '"), ("from date", "'from date'")])
def test_an_odd_unknown_key_is_still_named(key: str, shown: str) -> None:
    request = {**EVENT_REQUEST, key: 1}
    with pytest.raises(AnalyticsValidationError) as caught:
        EventRequest.model_validate(request)
    assert caught.value.field == shown
    assert str(caught.value).startswith(f"{shown}: is not a known key")
