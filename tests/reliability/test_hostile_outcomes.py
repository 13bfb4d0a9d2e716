"""Hostile input that is not simply refused: what happens instead, checked and recorded.

The refusals (cohort codes that climb out of a path, limits that would be coerced, header
splitting, alias bombs...) are cases of the bad-input catalogue. These are the rest: a server
echoing a token across the excerpt cut, a storage failure mid-export, an alias bomb's cost,
metadata in every documented date-time form, and metadata in none.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
import time
import tracemalloc
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest
import requests_mock as rm

from airflow_provider_analytics.client import (
    AnalyticsBadRequestError,
    AnalyticsClient,
    AnalyticsConfigurationError,
    ClientConfig,
)
from airflow_provider_analytics.client.data_ready import DataReadyCheck
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.output.storage import AnalyticsStorageError
from airflow_provider_analytics.plan.file import (
    TrackingPlanFileError,
    load_tracking_plan,
)
from tests.reliability.bad_inputs import alias_bomb
from tests.reliability.connections import use_connection
from tests.reliability.results import record
from tests.reliability.subjects import OutletEvent
from tests.report_frames import funnel_frame

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

TOKEN = "tok-Hostile-9f2K-distinct"
BASE = "https://analytics.example.com"


def outcome(case: str, result: str) -> None:
    record("hostile", {"case": case, "outcome": result})


def fragments(secret: str, size: int = 4) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def test_a_token_echoed_across_the_excerpt_cut_leaves_no_fragment() -> None:
    client = AnalyticsClient(
        ClientConfig(BASE, token=TOKEN, app_key="ak-Hostile-77", max_attempts=1)
    )
    leaked = 0
    offsets = range(480, 505)
    with rm.Mocker() as mocked:
        for offset in offsets:
            body = {"code": 400, "msg": "." * offset + f"token={TOKEN} " + "-" * 600}
            mocked.get(f"{BASE}/uba/api/schema/event", status_code=400, json=body)
            with pytest.raises(AnalyticsBadRequestError) as caught:
                client.list_events()
            shown = f"{caught.value} {caught.value!r} {caught.value.msg} {caught.value.args}"
            leaked += sum(piece in shown for piece in fragments(TOKEN))
    assert leaked == 0
    outcome(
        "server echoes the token across the 500-character excerpt cut "
        f"({len(offsets)} offsets, 480 to 504)",
        f"masked before the cut: {leaked} fragments of 4+ characters in message, repr, msg, args",
    )


def test_a_token_beyond_latin1_is_refused_without_echo() -> None:
    secret = "tok-\u20ac-Hostile-Zq"
    with pytest.raises(AnalyticsConfigurationError) as caught:
        ClientConfig(BASE, token=secret)
    shown = f"{caught.value} {caught.value!r} {caught.value.args}"
    assert not any(piece in shown for piece in fragments(secret))
    outcome(
        "token with a character beyond Latin-1 (formerly a UnicodeEncodeError on every call, "
        "carrying the token)",
        f"refused when the connection is read, without echo: {caught.value}",
    )


def test_a_storage_failure_mid_export_names_the_destination_and_the_cohort(
    monkeypatch: pytest.MonkeyPatch, emulator: EmulatorServer, tmp_path: Path
) -> None:
    use_connection(monkeypatch, emulator, max_attempts=1)
    (tmp_path / "exports").write_text("a plain file where a folder should be")
    operator = CohortExportToParquetOperator(
        task_id="export", cohort_code="cohort_tiny", destination=f"file://{tmp_path}/exports/"
    )
    context: dict[str, Any] = {"ds": "2024-01-15", "outlet_events": defaultdict(OutletEvent)}
    with pytest.raises(AnalyticsStorageError) as caught:
        operator.execute(context)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "(cohort 'cohort_tiny')" in message
    assert f"{tmp_path}/exports/cohort_code=cohort_tiny/dt=2024-01-15/users.parquet" in message
    assert isinstance(caught.value, OSError)
    outcome(
        "the storage refuses the write mid-export (a real OSError: the prefix is a plain file)",
        f"{type(caught.value).__name__}: {message.replace(str(tmp_path), '<tmp>')}",
    )


@pytest.mark.parametrize(("levels", "width"), [(9, 9), (10, 10)])
def test_an_alias_bomb_costs_little(tmp_path: Path, levels: int, width: int) -> None:
    text = alias_bomb(levels, width)
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(TrackingPlanFileError, match="alias bomb"):
            load_tracking_plan(path)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    outcome(
        f"{len(text.encode())}-byte YAML alias bomb ({width}**{levels} values; it used to cost "
        "60 s and 3 GB, or end in an empty MemoryError)",
        f"refused while composing, after {seconds:.3f} s and {peak / 2**20:.1f} MiB "
        "of Python allocations (measured once, not a limit)",
    )


def _funnel_response() -> dict[str, Any]:
    return {
        "dateList": ["$ALL", "2019/07/30 00:00:00"],
        "byField": None,
        "byValues": ["-1"],
        "stepEvents": ["event.$startup", "event.purchase"],
        "rows": [
            {
                "byValue": "-1",
                "stepsDetail": [
                    {"expression": "event.$startup", "convertedUser": [10, 10]},
                    {"expression": "event.purchase", "convertedUser": [4, 4]},
                ],
                "medianConvertedTime": [{"stepsExpress": "$startup~purchase", "median": [60, 60]}],
            }
        ],
    }


@pytest.mark.parametrize(
    "written",
    ["2019-07-30 09:59:06.345", "2019-07-30 09:59:06", "2019-07-30", "2019/07/30 09:59:06"],
)
def test_report_update_time_in_every_documented_form(written: str) -> None:
    response = {**copy.deepcopy(_funnel_response()), "reportUpdateTime": written}
    values = {str(v) for v in funnel_frame(response)["report_updated_at"]}
    (value,) = values
    assert value.startswith("2019-07-30")
    outcome(f"reportUpdateTime written {written!r}", f"read as {value}")


def test_an_unreadable_report_update_time_is_logged_not_fatal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    response = {**copy.deepcopy(_funnel_response()), "reportUpdateTime": "<b>soon</b>"}
    with caplog.at_level(logging.WARNING):
        frame = funnel_frame(response)
    assert frame["report_updated_at"].isna().all() and len(frame) == 4
    assert set(frame["report_updated_at_text"]) == {"<b>soon</b>"}
    assert "'<b>soon</b>' is not a date-time" in caplog.text
    outcome(
        "reportUpdateTime in no documented form ('<b>soon</b>')",
        f"the report is written ({len(frame)} rows); report_updated_at is left empty, the text "
        "is kept in report_updated_at_text and logged as a warning",
    )


@pytest.mark.parametrize("form", ["%Y-%m-%d", "%Y-%m-%d %H:%M:%S", "%Y/%m/%d %H:%M:%S"])
def test_the_data_ready_check_reads_every_series_form(form: str) -> None:
    days = [dt.date(2024, 1, 14), dt.date(2024, 1, 15)]
    response = {
        "series": [day.strftime(form) for day in days],
        "rows": [{"byValue": [], "values": [[3, 4]], "sum": [7]}],
    }
    readiness = DataReadyCheck("2024-01-14", "2024-01-15", threshold=3).evaluate(response)
    assert readiness.ready
    outcome(
        f"data-ready series labels written {days[0].strftime(form)!r}",
        "both days counted; the sensor fires (it matched days with str(label)[:10] before, so "
        "the slashed form never counted)",
    )
