"""No silent timezone: an export whose datetimes are read as UTC only because no timezone was
set says so once, naming the setting and the columns; a set timezone (UTC included) is quiet."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import export_cohort_to_parquet
from tests.integration.export_servers import ExportServer

if TYPE_CHECKING:
    from pathlib import Path

PLAN = [{"id": "user_id", "dataType": "number"}, {"id": "seen", "dataType": "datetime"}]
BODY = b"".join(
    json.dumps({"user_id": n, "seen": "2024-01-01 08:00:00"}).encode() + b"\n" for n in range(3)
)
WARNING = "no timezone is set (connection extra 'timezone', or the operator's 'timezone')"


def export(tmp_path: Path, **kwargs: object) -> None:
    with ExportServer(plan=PLAN, count=3, body=BODY) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as client:
            export_cohort_to_parquet(
                client,
                "c1",
                tmp_path / "users.parquet",
                settings=ExportSettings(attempts=1, retry_delay=0.0),
                **kwargs,  # type: ignore[arg-type]
            )


def test_datetimes_read_as_utc_by_default_are_announced_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        export(tmp_path)
    warnings = [record.getMessage() for record in caplog.records if WARNING in record.getMessage()]
    assert len(warnings) == 1
    assert "the datetime columns seen are read as UTC" in warnings[0]
    seen = pq.read_table(tmp_path / "users.parquet").column("seen").to_pylist()
    assert {value.hour for value in seen} == {8}  # read as UTC, as announced


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai"])
def test_a_timezone_that_is_set_is_used_without_a_word(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, zone: str
) -> None:
    with caplog.at_level(logging.WARNING):
        export(tmp_path, timezone=zone)
    assert WARNING not in caplog.text
    seen = pq.read_table(tmp_path / "users.parquet").column("seen").to_pylist()
    assert {value.hour for value in seen} == ({8} if zone == "UTC" else {0})
