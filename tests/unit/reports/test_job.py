"""The report job: date windows, one query per window, headlines, validation first."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import requests_mock as rm
from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsError,
    AnalyticsProtocolError,
    AnalyticsValidationError,
    ClientConfig,
)
from airflow_provider_analytics.core.errors import AnalyticsStorageError, ReportWrittenInPartError
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from airflow_provider_analytics.output.parquet import ParquetTables
from airflow_provider_analytics.reports.job import EVENTS, FUNNEL, date_windows, run_report

BASE = "https://analytics.example.com"
STEPS = [
    {"expression": "event.$startup", "filter": None},
    {"expression": "event.purchase", "filter": None},
]


def funnel_response(request: dict) -> dict:
    first = dt.date.fromisoformat(request["fromDate"])
    days = (dt.date.fromisoformat(request["toDate"]) - first).days + 1
    dates = [(first + dt.timedelta(days=n)).strftime("%Y/%m/%d 00:00:00") for n in range(days)]
    return {
        "dateList": ["$ALL", *dates],
        "byField": None,
        "byValues": ["-1"],
        "stepEvents": ["event.$startup", "event.purchase"],
        "rows": [
            {
                "byValue": "-1",
                "stepsDetail": [
                    {"expression": "event.$startup", "convertedUser": [10 * days] + [10] * days},
                    {"expression": "event.purchase", "convertedUser": [4 * days] + [4] * days},
                ],
                "medianConvertedTime": [{"stepsExpress": "$startup~purchase", "median": None}],
            }
        ],
        "reportUpdateTime": "2024-02-01 08:00:00",
    }


@pytest.fixture
def client() -> AnalyticsClient:
    return AnalyticsClient(ClientConfig(BASE, token="tok-1234567", app_key="ak-1234567"))


def test_date_windows_cover_the_range_inclusively() -> None:
    assert date_windows("2024-01-01", "2024-01-10", 4) == [
        ("2024-01-01", "2024-01-04"),
        ("2024-01-05", "2024-01-08"),
        ("2024-01-09", "2024-01-10"),
    ]
    assert date_windows("2024-01-01", "2024-01-10", None) == [("2024-01-01", "2024-01-10")]
    assert date_windows("2024-02-28", "2024-03-01", 1) == [
        ("2024-02-28", "2024-02-28"),
        ("2024-02-29", "2024-02-29"),
        ("2024-03-01", "2024-03-01"),
    ]


def test_windows_become_one_query_each_and_one_table_per_grain(
    client: AnalyticsClient, tmp_path
) -> None:
    request = {"steps": STEPS, "crowds": ["$ALL"], "fromDate": "2024-01-01", "toDate": "2024-01-10"}
    target = ObjectStoragePath(f"file://{tmp_path}/funnel/dt=2024-01-10/funnel.parquet")
    with rm.Mocker() as mock:
        mock.post(
            f"{BASE}/uba/api/funnels/analyze", json=lambda req, ctx: funnel_response(req.json())
        )
        paths = {
            name: target.parent / f"{name}.parquet"
            for name in ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")
        }
        result = run_report(FUNNEL, client, request, ParquetTables(paths), window_days=4)
        sent = [(r.json()["fromDate"], r.json()["toDate"]) for r in mock.request_history]
    assert sent == date_windows("2024-01-01", "2024-01-10", 4)
    folder = tmp_path / "funnel/dt=2024-01-10"
    assert sorted(path.name for path in folder.iterdir()) == [
        "funnel.parquet",
        "funnel_by_value.parquet",
        "funnel_by_value_totals.parquet",
        "funnel_totals.parquet",
    ]
    table = pq.read_table(str(folder / "funnel.parquet"))
    totals = pq.read_table(str(folder / "funnel_totals.parquet"))
    assert table.num_rows == result.rows == 10 * 2  # days x steps
    assert totals.num_rows == 3 * 2  # windows x steps
    assert pq.read_table(str(folder / "funnel_by_value.parquet")).num_rows == 0
    assert result.tables["funnel_totals"]["uri"] == f"file://{folder}/funnel_totals.parquet"
    assert result.windows == 3
    assert result.headline == {
        "steps": 2,
        "first_step_users": 100,
        "last_step_users": 40,
        "overall_conversion": 0.4,
    }
    assert set(totals.column("query_to_date").to_pylist()) == {
        dt.date(2024, 1, 4),
        dt.date(2024, 1, 8),
        dt.date(2024, 1, 10),
    }


def test_event_headline_sums_totals_per_measure(client: AnalyticsClient, tmp_path) -> None:
    response = {
        "measures": ["event.purchase", "event.purchase.amount"],
        "byFields": ["event.purchase.$city"],
        "series": ["2024-01-01", "2024-01-02"],
        "rows": [
            {"byValue": ["上海"], "values": [[1, 2], [10.5, 20]], "sum": [3, 30.5]},
            {"byValue": ["北京"], "values": [[4, 0], [7, 0]], "sum": [4, 7]},
        ],
        "numRows": 2,
        "reportUpdateTime": "2024-02-01 08:00:00",
    }
    request = {
        "measures": [
            {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
            {"expression": "event.purchase.amount", "aggregator": "SUM"},
        ],
        "crowds": ["$ALL"],
        "byFields": [{"expression": "event.purchase.$city"}],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
    }
    target = ObjectStoragePath(f"file://{tmp_path}/events.parquet")
    with rm.Mocker() as mock:
        mock.post(f"{BASE}/uba/api/events/analyze", json=response)
        paths = {name: target.parent / f"{name}.parquet" for name in ("events", "events_totals")}
        result = run_report(EVENTS, client, request, ParquetTables(paths))
    totals = [(m["expression"], m["aggregator"], m["total"]) for m in result.headline["measures"]]
    assert totals == [
        ("event.purchase", "TOTAL_COUNT", 7),
        ("event.purchase.amount", "SUM", 37.5),
    ]
    assert pq.read_table(str(tmp_path / "events.parquet")).num_rows == 2 * 2 * 2
    assert pq.read_table(str(tmp_path / "events_totals.parquet")).num_rows == 2 * 2


def test_operator_fills_the_interval_and_validates_before_sending(tmp_path, connection) -> None:
    start = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
    context = {"ds": "2024-01-15", "data_interval_start": start, "data_interval_end": start}
    bad = FunnelReportOperator(
        task_id="funnel",
        request={"steps": STEPS[:1], "crowds": ["$ALL"]},
        destination=f"file://{tmp_path}/",
        report_key="checkout",
    )
    with rm.Mocker() as mock, pytest.raises(AnalyticsValidationError, match="steps"):
        bad.execute(context)  # type: ignore[arg-type]
    assert mock.request_history == []
    assert not any(tmp_path.iterdir())
    good = FunnelReportOperator(
        task_id="funnel",
        request={"steps": STEPS, "crowds": ["$ALL"]},
        destination=f"file://{tmp_path}/",
        report_key="checkout",
    )

    class _Events(dict):
        def __missing__(self, key):  # any outlet gets an object with an ``extra`` slot
            value = type("Event", (), {"extra": None})()
            self[key] = value
            return value

    with rm.Mocker() as mock:
        mock.post(
            f"{BASE}/uba/api/funnels/analyze", json=lambda req, ctx: funnel_response(req.json())
        )
        summary = good.execute({**context, "outlet_events": _Events()})  # type: ignore[arg-type]
        body = mock.request_history[0].json()
    assert (body["fromDate"], body["toDate"]) == ("2024-01-15", "2024-01-15")
    assert (
        summary["uri"]
        == f"file://{tmp_path}/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet"
    )
    assert summary["tables"]["funnel_totals"]["uri"] == (
        f"file://{tmp_path}/funnel_totals/report_key=checkout/dt=2024-01-15/funnel_totals.parquet"
    )


def test_partition_is_the_first_day_the_run_covers(tmp_path, connection) -> None:
    """A manual run for D under a data-interval timetable gets the interval before D from
    Airflow; by the day rule it still covers D, and the file says D."""
    end = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
    context = {
        "ds": "2024-01-15",
        "logical_date": end,
        "data_interval_start": end - dt.timedelta(days=1),
        "data_interval_end": end,
        "outlet_events": {},
    }
    report = FunnelReportOperator(
        task_id="funnel",
        request={"steps": STEPS, "crowds": ["$ALL"]},
        destination=f"file://{tmp_path}/",
        report_key="checkout",
        outlets=[],
    )
    with rm.Mocker() as mock:
        mock.post(
            f"{BASE}/uba/api/funnels/analyze", json=lambda req, ctx: funnel_response(req.json())
        )
        summary = report.execute(context)  # type: ignore[arg-type]
        body = mock.request_history[0].json()
    assert (body["fromDate"], body["toDate"]) == ("2024-01-15", "2024-01-15")
    assert (
        summary["uri"]
        == f"file://{tmp_path}/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet"
    )


def test_an_answer_the_frames_cannot_read_is_a_protocol_error(
    client: AnalyticsClient, tmp_path
) -> None:
    request = {"steps": STEPS, "crowds": ["$ALL"], "fromDate": "2024-01-01", "toDate": "2024-01-02"}
    response = funnel_response(request)
    response["dateList"][1] = "01/02/2024"
    with rm.Mocker() as mock, pytest.raises(AnalyticsProtocolError) as caught:
        mock.post(f"{BASE}/uba/api/funnels/analyze", json=response)
        run_report(FUNNEL, client, request, ParquetTables(funnel_paths(tmp_path)))
    assert isinstance(caught.value, AnalyticsError)
    assert "analyze_funnel: dateList[1] '01/02/2024'" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_report_update_time_with_milliseconds_is_read(client: AnalyticsClient, tmp_path) -> None:
    request = {"steps": STEPS, "crowds": ["$ALL"], "fromDate": "2024-01-01", "toDate": "2024-01-01"}
    response = {**funnel_response(request), "reportUpdateTime": "2019-07-30 09:59:06.345"}
    with rm.Mocker() as mock:
        mock.post(f"{BASE}/uba/api/funnels/analyze", json=response)
        run_report(FUNNEL, client, request, ParquetTables(funnel_paths(tmp_path)))
    column = pq.read_table(str(tmp_path / "funnel.parquet")).column("report_updated_at")
    assert {str(v) for v in column.to_pylist()} == {"2019-07-30 09:59:06.345000+00:00"}


def funnel_paths(root: Path) -> dict[str, ObjectStoragePath]:
    """Every funnel table's object in ``root``."""
    names = ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")
    return {name: ObjectStoragePath(f"file://{root}/{name}.parquet") for name in names}


FUNNEL_TABLES = ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")


class _Events(dict):
    def __missing__(self, key):  # any outlet gets an object with an ``extra`` slot
        value = type("Event", (), {"extra": None})()
        self[key] = value
        return value


def day_context(day: str, days: int = 1) -> dict:
    start = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
    return {
        "ds": day,
        "logical_date": start,
        "data_interval_start": start,
        "data_interval_end": start + dt.timedelta(days=days),
        "outlet_events": _Events(),
    }


@pytest.fixture
def connection(monkeypatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps(
            {
                "conn_type": "analytics",
                "host": BASE,
                "password": "tok-1234567",
                "extra": {"app_key": "ak-1234567"},
            }
        ),
    )


def without_report_time(table):
    return table.drop_columns(["report_updated_at", "report_updated_at_text"])


def test_a_look_back_queries_each_day_alone_and_writes_it_as_its_own_run_does(
    tmp_path, connection
) -> None:
    def report(**kwargs) -> FunnelReportOperator:
        return FunnelReportOperator(
            task_id="funnel",
            request={"steps": STEPS, "crowds": ["$ALL"]},
            destination=f"file://{tmp_path}/",
            report_key="checkout",
            window_days=7,  # one day is one window anyway
            **kwargs,
        )

    with rm.Mocker() as mock:
        mock.post(
            f"{BASE}/uba/api/funnels/analyze", json=lambda req, ctx: funnel_response(req.json())
        )
        own = report().execute(day_context("2024-01-13"))  # type: ignore[arg-type]
        own_run = {
            name: pq.read_table(
                tmp_path / f"{name}/report_key=checkout/dt=2024-01-13/{name}.parquet"
            )
            for name in FUNNEL_TABLES
        }
        mock.reset_mock()
        context = day_context("2024-01-15")
        summary = report(lookback_days=2).execute(context)  # type: ignore[arg-type]
        sent = [(r.json()["fromDate"], r.json()["toDate"]) for r in mock.request_history]
    days = ["2024-01-13", "2024-01-14", "2024-01-15"]
    assert sent == [(day, day) for day in days]
    folder = tmp_path / "funnel" / "report_key=checkout"
    assert sorted(p.name for p in folder.iterdir()) == [f"dt={d}" for d in days]
    for name in FUNNEL_TABLES:
        again = pq.read_table(tmp_path / f"{name}/report_key=checkout/dt=2024-01-13/{name}.parquet")
        assert without_report_time(again).equals(without_report_time(own_run[name])), name
    for day in days:
        totals = pq.read_table(
            tmp_path / f"funnel_totals/report_key=checkout/dt={day}/funnel_totals.parquet"
        )
        # $ALL is the day's own figure: one row per step, the window being the day
        assert totals.column("converted_users").to_pylist() == [10, 4]
        assert set(totals.column("query_from_date").to_pylist()) == {dt.date.fromisoformat(day)}
        assert set(totals.column("query_to_date").to_pylist()) == {dt.date.fromisoformat(day)}
    assert own["days_written"] == ["2024-01-13"] and own["lookback_days"] == 0
    assert own["repulled"] == {}
    assert summary["days_written"] == days
    assert summary["lookback_days"] == 2
    assert (
        summary["uri"]
        == f"file://{tmp_path}/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet"
    )
    assert (summary["from_date"], summary["to_date"], summary["windows"]) == (days[2], days[2], 1)
    assert set(summary["repulled"]) == set(days[:2])
    repulled = summary["repulled"]["2024-01-14"]
    assert repulled["rows"] == 2
    assert repulled["tables"]["funnel_totals"]["uri"] == (
        f"file://{tmp_path}/funnel_totals/report_key=checkout/dt=2024-01-14/funnel_totals.parquet"
    )
    assert repulled["headline"]["overall_conversion"] == 0.4
    extra = next(iter(context["outlet_events"].values())).extra
    assert extra["uri"] == summary["uri"]
    assert extra["days_written"] == days


def looking_back(days: int, tmp_path: Path) -> FunnelReportOperator:
    """The checkout funnel written under ``tmp_path``, looking ``days`` back."""
    return FunnelReportOperator(
        task_id="funnel",
        request={"steps": STEPS, "crowds": ["$ALL"]},
        destination=f"file://{tmp_path}/",
        report_key="checkout",
        lookback_days=days,
    )


def test_a_failed_query_in_a_look_back_writes_no_day(tmp_path, connection) -> None:
    def answer(req, ctx) -> dict:
        response = funnel_response(req.json())
        if req.json()["fromDate"] == "2024-01-15":
            response["dateList"][1] = "01/15/2024"  # the run's own day cannot be read
        return response

    report = looking_back(2, tmp_path)
    with rm.Mocker() as mock, pytest.raises(AnalyticsProtocolError):
        mock.post(f"{BASE}/uba/api/funnels/analyze", json=answer)
        report.execute(day_context("2024-01-15"))  # type: ignore[arg-type]
    assert len(mock.request_history) == 3
    assert list(tmp_path.iterdir()) == []


def test_a_look_back_written_in_part_says_which_days_were_replaced(tmp_path, connection) -> None:
    """The second day's write failed after the first day's tables were replaced, yet the error
    said nothing was replaced and no lineage was reported for the day written."""
    blocked = tmp_path / "funnel" / "report_key=checkout" / "dt=2024-01-15"
    blocked.parent.mkdir(parents=True)
    blocked.write_bytes(b"")  # a file where the run's own day needs a folder
    report = looking_back(1, tmp_path)
    refusal = r"^the look-back was written in part: 2024-01-14 replaced; 2024-01-15 not replaced"
    with rm.Mocker() as mock, pytest.raises(ReportWrittenInPartError, match=refusal) as raised:
        mock.post(
            f"{BASE}/uba/api/funnels/analyze", json=lambda req, ctx: funnel_response(req.json())
        )
        report.execute(day_context("2024-01-15"))  # type: ignore[arg-type]
    assert raised.value.replaced == ["2024-01-14"]
    assert raised.value.not_replaced == ["2024-01-15"]
    assert isinstance(raised.value.__cause__, AnalyticsStorageError)
    assert (tmp_path / "funnel_totals/report_key=checkout/dt=2024-01-14").is_dir()
    written = sorted(target.name.rsplit("/", 1)[-1] for target in report.written)
    assert written == sorted(f"{name}.parquet" for name in FUNNEL_TABLES)
    assert all("dt=2024-01-14" in target.name for target in report.written)


@pytest.mark.parametrize(
    ("changes", "context", "rule"),
    [
        ({}, day_context("2024-01-15", days=7), "this run reports '2024-01-15'..'2024-01-21'"),
        (
            {"request": {"steps": STEPS, "crowds": ["$ALL"], "fromDate": "2024-01-14"}},
            day_context("2024-01-15"),
            "this run reports '2024-01-14'..'2024-01-15'",
        ),
        (
            {"destination": "file:///nonexistent-lookback/dt=2024-01-15/funnel.parquet"},
            day_context("2024-01-15"),
            "needs a destination prefix",
        ),
    ],
    ids=["a week's run", "a request with dates of its own", "an object URI"],
)
def test_a_look_back_needs_one_day_per_partition(changes, context, rule, connection) -> None:
    arguments = {
        "request": {"steps": STEPS, "crowds": ["$ALL"]},
        "destination": "file:///nonexistent-lookback/",
        "lookback_days": 1,
        **changes,
    }
    report = FunnelReportOperator(task_id="funnel", **arguments)
    with rm.Mocker() as mock, pytest.raises(AnalyticsValidationError) as caught:
        report.execute(context)  # type: ignore[arg-type]
    assert mock.request_history == []
    assert caught.value.field == "lookback_days"
    assert rule in str(caught.value)
