"""Progress of reports over many windows or days (the emulator over real HTTP): a line per
query when the interval is tiny, a final line with the rate, and none when it is long."""

from __future__ import annotations

import logging
import re

import pytest
from analytics_emulator import catalog

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsValidationError,
    ClientConfig,
    EventRequest,
    FunnelRequest,
    Measure,
)
from airflow_provider_analytics.reports.job import (
    EVENTS,
    FUNNEL,
    build_report_tables,
    run_report_days,
)

pytestmark = pytest.mark.integration

PROGRESS_LOGGER = "airflow_provider_analytics.core.progress"
EVERY_TIME = 1e-9
"""An interval every query outlasts: each one is worth a line, whatever the machine's speed."""
FUNNEL_BODY = FunnelRequest(
    steps=["event.$startup", "event.purchase"], from_date="2024-01-08", to_date="2024-01-12"
).to_body()
EVENT_BODY = EventRequest(measures=[Measure("event.purchase", "TOTAL_COUNT")]).to_body()


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == PROGRESS_LOGGER]


def test_a_report_over_windows_logs_each_window_and_the_rate(
    client: AnalyticsClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        _, windows = build_report_tables(
            FUNNEL,
            client,
            FUNNEL_BODY,
            window_days=1,
            timezone=catalog.PROJECT_TIMEZONE,
            progress_interval=EVERY_TIME,
        )
    assert windows == 5
    *interim, final = lines(caplog)
    done = []
    for line in interim:
        found = re.fullmatch(
            r"funnel report: (\d) of 5 windows \((\d+\.\d)%\); \d+(\.\d+)? windows/s"
            r"(; about \d+ s left)?",
            line,
        )
        assert found, line
        done.append(int(found[1]))
        assert found[2] == f"{100 * int(found[1]) / 5:.1f}"
        assert (found[4] is None) == (found[1] == "5")
    assert done == [1, 2, 3, 4, 5]
    assert re.fullmatch(
        r"funnel report: done, 5 windows in \d+\.\d s \(\d+(\.\d+)? windows/s\)", final
    )


def test_a_report_of_several_days_counts_days(
    client: AnalyticsClient, caplog: pytest.LogCaptureFixture
) -> None:
    days = ["2024-01-08", "2024-01-09", "2024-01-10"]
    with caplog.at_level(logging.INFO):
        run_report_days(
            EVENTS,
            client,
            EVENT_BODY,
            days,
            lambda day: _NoWriter(),
            timezone=catalog.PROJECT_TIMEZONE,
            progress_interval=EVERY_TIME,
        )
    messages = lines(caplog)
    assert [m.split(" (")[0] for m in messages[:3]] == [
        "events report: 1 of 3 days",
        "events report: 2 of 3 days",
        "events report: 3 of 3 days",
    ]
    assert messages[3].startswith("events report: done, 3 days in ")


def test_one_query_or_a_long_interval_logs_no_progress(
    client: AnalyticsClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        build_report_tables(FUNNEL, client, FUNNEL_BODY, timezone="UTC")  # one window
        build_report_tables(FUNNEL, client, FUNNEL_BODY, window_days=1, progress_interval=3600)
    (only,) = lines(caplog)  # the final line of the five windows; none for the one
    assert only.startswith("funnel report: done, 5 windows in ")


@pytest.mark.parametrize("interval", [0, -1, float("nan"), "10", True])
def test_a_bad_interval_is_refused_by_name_before_any_query(interval: object) -> None:
    nowhere = ClientConfig("http://127.0.0.1:9", token="t0k", app_key="app", max_attempts=1)
    with AnalyticsClient(nowhere) as client:  # a query would fail on the transport instead
        with pytest.raises(AnalyticsValidationError, match=r"^progress_interval: must be a"):
            build_report_tables(FUNNEL, client, FUNNEL_BODY, progress_interval=interval)  # type: ignore[arg-type]
        with pytest.raises(AnalyticsValidationError, match=r"^progress_interval: must be a"):
            run_report_days(
                EVENTS,
                client,
                EVENT_BODY,
                ["2024-01-08"],
                lambda day: _NoWriter(),
                progress_interval=interval,
            )  # type: ignore[arg-type]


class _NoWriter:
    def write_table(self, name: str, table: object) -> dict[str, object]:
        return {"uri": f"memory://{name}", "rows": 0}
