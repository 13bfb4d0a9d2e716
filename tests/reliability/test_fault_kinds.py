"""The export faults added for the reliability work: ``end_after_rows`` (a body that ends
cleanly but early, as a proxy that silently truncates would send it, which the export job's
row-count check catches) and ``stall_after_rows`` (a stream that goes quiet mid-body)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import requests
from airflow.sdk import ObjectStoragePath
from analytics_emulator.admin_client import AdminError

from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import (
    ExportIncompleteError,
    export_cohort_to_parquet,
)
from tests.emulator_helpers import project_headers

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

    from airflow_provider_analytics.client import AnalyticsClient
    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

EXPORT = "/uba/api/cohort/users/export"
BODY = {"cohortCode": "cohort_small", "properties": ["distinct_id", "nickname"]}


def export_body(server: EmulatorServer, body: dict[str, Any] = BODY) -> bytes:
    response = requests.post(
        server.base_url + EXPORT, json=body, headers=project_headers(server), timeout=60
    )
    assert response.status_code == 200
    return response.content


@pytest.mark.parametrize("rows", [0, 1, 400, 999])
def test_the_body_ends_cleanly_after_the_rows(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin, rows: int
) -> None:
    whole = export_body(emulator).splitlines(keepends=True)
    assert len(whole) == 1000
    emulator_admin.fault("export_cohort_users", "end_after_rows", rows=rows)
    # A complete chunked body: requests raises ChunkedEncodingError on a cut one.
    assert export_body(emulator) == b"".join(whole[:rows])
    assert export_body(emulator) == b"".join(whole)


def test_rows_beyond_the_cohort_leave_the_body_whole(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    whole = export_body(emulator)
    emulator_admin.fault("export_cohort_users", "end_after_rows", rows=5000)
    assert export_body(emulator) == whole


def test_only_the_export_can_end_early_or_stall_mid_body(emulator_admin: EmulatorAdmin) -> None:
    with pytest.raises(AdminError, match="400"):
        emulator_admin.fault("get_cohort_users", "end_after_rows", rows=3)
    with pytest.raises(AdminError, match="400"):
        emulator_admin.fault("list_events", "stall_after_rows", rows=3, seconds=1)
    with pytest.raises(AdminError, match="400"):
        emulator_admin.fault("export_cohort_users", "end_after_rows")


def test_a_stall_after_the_rows_outlasts_a_short_read_timeout(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin
) -> None:
    whole = export_body(emulator).splitlines(keepends=True)
    # A 60 s stall the emulator ends when the client gives up: the client times out however
    # late it reads, and the rows before the stall have the whole read timeout to arrive.
    emulator_admin.fault("export_cohort_users", "stall_after_rows", rows=400, seconds=60)
    received = bytearray()
    with requests.post(
        emulator.base_url + EXPORT,
        json=BODY,
        headers=project_headers(emulator),
        stream=True,
        timeout=(10, 2.0),
    ) as response:
        assert response.status_code == 200
        with pytest.raises(requests.ConnectionError, match="timed out"):
            for chunk in response.iter_content(chunk_size=None):
                received += chunk
    assert bytes(received) == b"".join(whole[:400])
    assert emulator_admin.wait_until_idle(30) == 0


@pytest.mark.parametrize("rows", [400, 5000])
def test_a_stall_shorter_than_the_read_timeout_delivers_the_whole_body(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin, rows: int
) -> None:
    whole = export_body(emulator)
    emulator_admin.fault("export_cohort_users", "stall_after_rows", rows=rows, seconds=0.3)
    assert export_body(emulator) == whole


@pytest.mark.parametrize(
    "arguments",
    [{"rows": 3}, {"seconds": 1}, {"rows": 3, "seconds": -1}, {"rows": -1, "seconds": 1}],
)
def test_a_stall_after_rows_needs_rows_and_seconds(
    emulator_admin: EmulatorAdmin, arguments: dict[str, Any]
) -> None:
    with pytest.raises(AdminError, match="400"):
        emulator_admin.fault("export_cohort_users", "stall_after_rows", **arguments)


def test_the_export_job_refuses_a_short_body_and_writes_nothing(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    emulator_admin.fault("export_cohort_users", "end_after_rows", rows=400, times=2)
    target = ObjectStoragePath(f"file://{tmp_path}/users.parquet")
    with pytest.raises(ExportIncompleteError) as caught:
        export_cohort_to_parquet(
            client,
            "cohort_small",
            target,
            properties=["distinct_id", "nickname"],
            settings=ExportSettings(attempts=2, retry_delay=0.01),
        )
    assert "expected 1000 rows but the export delivered 400" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_the_export_job_starts_again_after_a_short_body(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    emulator_admin.fault("export_cohort_users", "end_after_rows", rows=400)
    result = export_cohort_to_parquet(
        client,
        "cohort_small",
        ObjectStoragePath(f"file://{tmp_path}/users.parquet"),
        properties=["distinct_id", "nickname"],
        settings=ExportSettings(attempts=2, retry_delay=0.01),
    )
    assert (result.rows, result.expected_rows, result.attempts) == (1000, 1000, 2)
    assert [p.name for p in tmp_path.iterdir()] == ["users.parquet"]
