"""No silent timezone in reports: without a timezone the report's date-times are read as UTC
and the run says so once; where the answers' reportUpdateTime lies after their Date header,
the warning gives that evidence of a clock ahead of UTC (the emulator's project is in
Asia/Shanghai). Over real HTTP on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import json
import logging
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig, FunnelRequest
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from airflow_provider_analytics.reports.job import EVENTS, FUNNEL, build_report_tables
from airflow_provider_analytics.reports.unset_timezone import UNSET_TIMEZONE
from tests.loopback import ServedOnLoopback
from tests.run_context import run_context

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

REQUEST = FunnelRequest(
    steps=["event.$startup", "event.purchase"], from_date="2024-01-08", to_date="2024-01-10"
).to_body()
AHEAD = "but the platform's clock runs ahead of UTC"


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if UNSET_TIMEZONE in r.getMessage()]


def test_a_clock_ahead_of_utc_is_named_with_its_evidence(
    client: AnalyticsClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        tables, windows = build_report_tables(FUNNEL, client, REQUEST, window_days=1)
    assert windows == 3
    (warning,) = warnings(caplog)  # once for the run, not once per window
    assert warning.startswith(
        f"{UNSET_TIMEZONE}: the funnel report's date-times (report_updated_at) are read as "
        f"UTC, {AHEAD}: reportUpdateTime "
    )
    assert "The project's zone is about UTC+08:00 or further ahead" in warning
    assert "Set the project's timezone" in warning
    # read as UTC, as announced: the update time lies about 8 hours after now
    updated = pc.max(tables["funnel"].column("report_updated_at")).as_py()
    assert updated - dt.datetime.now(dt.UTC) > dt.timedelta(hours=7)


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "UTC"])
def test_a_timezone_that_is_set_is_used_without_a_word(
    client: AnalyticsClient, caplog: pytest.LogCaptureFixture, zone: str
) -> None:
    with caplog.at_level(logging.WARNING):
        build_report_tables(EVENTS, client, _event_request(), timezone=zone)
    assert warnings(caplog) == []


def _event_request() -> dict[str, Any]:
    return {
        "measures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-08",
        "toDate": "2024-01-08",
    }


class ReplayServer(ServedOnLoopback):
    """Answers every funnel request with ``answer`` and the ``Date`` header ``date`` (none
    when ``None``): what a platform on another clock, or behind a cache, sends."""

    def __init__(self, answer: dict[str, Any], date: str | None) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                data = json.dumps(answer).encode()
                self.send_response_only(200)  # no automatic Date header
                if date is not None:
                    self.send_header("Date", date)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        super().__init__(ThreadingHTTPServer(("127.0.0.1", 0), Handler))


SENT = dt.datetime(2024, 5, 1, 8, 0, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("report_time", "date", "ahead"),
    [
        ("2024-05-01 16:00:03", format_datetime(SENT, usegmt=True), "UTC+08:00"),
        ("2024-05-01 13:45:00", format_datetime(SENT, usegmt=True), "UTC+05:45"),
        ("2024-05-01 08:00:00", format_datetime(SENT, usegmt=True), None),  # a UTC platform
        ("2024-05-01 08:14:00", format_datetime(SENT, usegmt=True), None),  # clocks apart
        ("2024-05-01 03:00:00", format_datetime(SENT, usegmt=True), None),  # cached, or west
        ("2024-05-01 16:00:03", None, None),  # no Date header: no evidence
        ("2024-05-01 16:00:03", "yesterday at noon", None),  # unreadable: no evidence
    ],
)
def test_only_a_report_time_after_the_date_header_is_evidence(
    client: AnalyticsClient,
    caplog: pytest.LogCaptureFixture,
    report_time: str,
    date: str | None,
    ahead: str | None,
) -> None:
    answer = {**client.analyze_funnel(REQUEST), "reportUpdateTime": report_time}
    with ReplayServer(answer, date) as server:
        config = ClientConfig(server.base_url, token="t0k", app_key="app")
        with AnalyticsClient(config) as replay, caplog.at_level(logging.WARNING):
            build_report_tables(FUNNEL, replay, REQUEST)
    (warning,) = warnings(caplog)
    if ahead is None:
        assert AHEAD not in warning
        assert "the answers' reportUpdateTime showed no clock ahead of UTC" in warning
    else:
        assert f"reportUpdateTime {report_time} is " in warning
        assert "the answer's Date header (2024-05-01 08:00:01 UTC)" in warning
        assert f"about {ahead} or further ahead" in warning


def test_the_operator_without_a_timezone_reads_utc_and_says_so(
    emulator: EmulatorServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = emulator.config
    connection = {
        "conn_type": "analytics",
        "host": emulator.base_url,
        "password": config.token,
        "extra": {"app_api_key": config.app_key},  # no timezone
    }
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    operator = FunnelReportOperator(
        task_id="funnel",
        request=FunnelRequest(steps=["event.$startup", "event.purchase"]),
        destination=f"file://{tmp_path}/funnel/",
    )
    with caplog.at_level(logging.WARNING):
        operator.execute(run_context("2024-01-08"))  # type: ignore[arg-type]
    (warning,) = warnings(caplog)
    assert AHEAD in warning
