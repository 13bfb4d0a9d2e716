"""Progress of long work: the lines' content on a controlled clock, the settings refused by
name wherever they are given, and the bar only where someone watches."""

from __future__ import annotations

import io
import json
import logging
import math
import sys
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsConfigurationError,
    AnalyticsValidationError,
    ClientConfig,
)
from airflow_provider_analytics.core import progress as progress_module
from airflow_provider_analytics.core.progress import (
    DEFAULT_PROGRESS_INTERVAL,
    Progress,
    progress_interval,
    rate_text,
)
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import export_cohort_to_parquet
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.provider_info import CONNECTION_FIELDS

if TYPE_CHECKING:
    from pathlib import Path

BAD_INTERVALS = [0, -1, -0.5, float("nan"), float("inf"), "10", True, None, [10]]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == progress_module.log.name]


def test_a_line_is_logged_once_the_interval_has_passed(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    progress = Progress(
        "cohort vip", total=1_000_000, interval=10, size_label="received", clock=clock, bar=False
    )
    clock.now += 9.9
    progress.update(100_000, 4_000_000)
    assert messages(caplog) == []  # not yet
    clock.now += 0.1
    progress.update(250_000, 11_200_000)
    clock.now += 5
    progress.update(300_000, 12_000_000)  # 5 s after the last line: nothing
    clock.now += 5
    progress.update(500_000, 22_400_000)
    assert messages(caplog) == [
        "cohort vip: 250000 of 1000000 rows (25.0%), 11.2 MB received; 25000 rows/s, "
        "1.1 MB/s; about 30 s left",
        "cohort vip: 500000 of 1000000 rows (50.0%), 22.4 MB received; 25000 rows/s, "
        "1.1 MB/s; about 20 s left",
    ]
    clock.now += 20
    progress.finish(1_000_000, 44_800_000)
    assert messages(caplog)[-1] == (
        "cohort vip: done, 1000000 rows, 44.8 MB received in 40.0 s (25000 rows/s, 1.1 MB/s)"
    )


def test_without_a_total_or_bytes_the_line_says_what_is_known(clock: Clock) -> None:
    progress = Progress("cohort c", clock=clock, bar=False)
    clock.now += 200
    assert progress.line(1000, None, now=clock.now) == "cohort c: 1000 rows; 5 rows/s"
    assert progress.line(None, 3_000_000, now=clock.now) == "cohort c: 3.0 MB; 0.0 MB/s"
    windows = Progress("funnel report", total=12, unit="windows", clock=clock, bar=False)
    clock.now += 4000
    assert windows.line(3, None, now=clock.now) == (
        "funnel report: 3 of 12 windows (25.0%); 0.00075 windows/s; about 3 h 20 min left"
    )
    assert rate_text(0, 0, 0.0) == "0 rows/s, 0.0 MB/s"


def test_the_default_interval_is_ten_seconds() -> None:
    assert DEFAULT_PROGRESS_INTERVAL == 10.0
    assert ClientConfig("https://a.example").progress_interval == 10.0
    assert ExportSettings().progress_interval is None  # the client's, unless set
    assert CONNECTION_FIELDS["progress_interval"]["schema"]["default"] == 10


@pytest.mark.parametrize("value", BAD_INTERVALS)
def test_a_bad_interval_is_refused_naming_the_setting(value: Any, tmp_path: Path) -> None:
    with pytest.raises(AnalyticsValidationError, match=r"^progress_interval: must be a number"):
        progress_interval(value)
    with pytest.raises(AnalyticsValidationError, match=r"^progress_interval: "):
        Progress("x", interval=value, bar=False)
    if value is not None:  # None means "the client's" in the export settings
        nowhere = ClientConfig("http://127.0.0.1:9", token="t0k", app_key="app", max_attempts=1)
        with (
            AnalyticsClient(nowhere) as client,
            pytest.raises(AnalyticsValidationError, match=r"^progress_interval: "),
        ):  # refused before the first request (which would fail on the transport)
            export_cohort_to_parquet(
                client,
                "c1",
                tmp_path / "x.parquet",
                settings=ExportSettings(progress_interval=value),
            )
        with pytest.raises(
            AnalyticsConfigurationError, match=r"^ClientConfig.progress_interval: must be a finite"
        ):
            ClientConfig("https://a.example", progress_interval=value)


@pytest.mark.parametrize("value", ["ten", 0, -3, "-3", True, "true", "nan"])
def test_the_connection_extra_must_be_a_number_of_seconds(
    monkeypatch: pytest.MonkeyPatch, value: Any
) -> None:
    connection = {
        "conn_type": "analytics",
        "host": "https://analytics.example.com",
        "extra": {"progress_interval": value},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    with pytest.raises(
        AnalyticsConfigurationError,
        match=r"^connection 'analytics_default': extra 'progress_interval': must be a finite",
    ):
        AnalyticsHook().client_config  # noqa: B018


def test_the_connection_extra_sets_the_clients_interval_and_airflow_shows_no_bar(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    connection = {
        "conn_type": "analytics",
        "host": "https://analytics.example.com",
        "extra": {"progress_interval": 2.5},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    config = AnalyticsHook().client_config
    assert (config.progress_interval, config.progress_bar) == (2.5, False)
    connection["extra"] = {"progress_interval": "2.5"}  # text, as every numeric extra
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    assert AnalyticsHook().client_config.progress_interval == 2.5


def test_the_operator_passes_its_interval_to_the_export() -> None:
    operator = CohortExportToParquetOperator(
        task_id="export", cohort_code="c1", destination="file:///tmp/x/", progress_interval=2.5
    )
    assert operator.settings.progress_interval == 2.5
    default = CohortExportToParquetOperator(
        task_id="export2", cohort_code="c1", destination="file:///tmp/x/"
    )
    assert default.settings.progress_interval is None  # the connection's, else 10


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_is_shown_only_where_someone_watches(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = Progress("cohort vip", total=40, bar=None)
    progress.update(10, 1000)
    progress.finish(40, 4000)
    shown = terminal.getvalue()
    assert shown.startswith("\rcohort vip:") and "100%" in shown and "0.0 MB" in shown

    piped = io.StringIO()  # stderr to a file or a pipe: nobody watches
    monkeypatch.setattr(sys, "stderr", piped)
    Progress("cohort vip", total=40, bar=None).finish(40)
    assert piped.getvalue() == ""

    monkeypatch.setattr(sys, "stderr", terminal)
    before = terminal.getvalue()
    Progress("cohort vip", total=40, bar=False).finish(40)  # forced off (Airflow tasks)
    assert terminal.getvalue() == before


def test_a_jupyter_kernel_counts_as_watched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert not progress_module.bar_wanted()

    class Shell:
        kernel = object()

    class FakeIPython:
        @staticmethod
        def get_ipython() -> Shell:
            return Shell()

    monkeypatch.setitem(sys.modules, "IPython", FakeIPython)  # type: ignore[arg-type]
    assert progress_module.bar_wanted()


def test_an_unknown_total_still_counts(clock: Clock) -> None:
    progress = Progress("cohort c", total=None, clock=clock, bar=False)
    clock.now += 1
    assert "about" not in progress.line(10, None, now=clock.now)
    progress.total = 0
    assert progress.line(0, None, now=clock.now).startswith("cohort c: 0 of 0 rows (100.0%)")
    assert math.isclose(progress.interval, 10.0)


def _served_export(requests_mock: Any, count: int) -> str:
    base = "https://a.example"
    requests_mock.post(
        f"{base}/uba/api/cohort/users",
        json={"count": count, "page": 1, "size": 1, "users": [{"user_id": 0}]},
    )
    body = b"".join(json.dumps({"user_id": n}).encode() + b"\n" for n in range(40))
    requests_mock.post(f"{base}/uba/api/cohort/users/export", content=body)
    return base


def _export(base: str, **settings: Any) -> int:
    config = ClientConfig(base, token="t0k", app_key="app", **settings)
    with AnalyticsClient(config) as client, client.export_cohort_users("c1") as export:
        return len(list(export.iter_records()))


def test_the_clients_export_asks_the_count_for_a_watched_bar(
    monkeypatch: pytest.MonkeyPatch, requests_mock: Any
) -> None:
    """The stream declares no length: where a bar is shown, one one-user page gives the
    total, so the bar has its percentage and time left."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    base = _served_export(requests_mock, 40)
    assert _export(base) == 40
    shown = terminal.getvalue()
    assert "100%" in shown and "40.0/40.0" in shown, shown
    pages = [r.json() for r in requests_mock.request_history if r.path.endswith("/users")]
    assert pages == [{"cohortCode": "c1", "page": 1, "pageSize": 1}]


def test_no_count_is_asked_where_nobody_watches(
    monkeypatch: pytest.MonkeyPatch, requests_mock: Any
) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    base = _served_export(requests_mock, 40)
    assert _export(base, progress_bar=False) == 40  # an Airflow task: lines only
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _export(base) == 40  # stderr to a file
    assert [r.path for r in requests_mock.request_history] == ["/uba/api/cohort/users/export"] * 2


def test_a_count_the_platform_refuses_leaves_the_bar_without_a_total(
    monkeypatch: pytest.MonkeyPatch, requests_mock: Any
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    base = _served_export(requests_mock, 40)
    requests_mock.post(f"{base}/uba/api/cohort/users", status_code=404, json={"code": 404})
    assert _export(base) == 40
    assert "%" not in terminal.getvalue()  # counted, but no percentage without a total
