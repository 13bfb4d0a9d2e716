"""Late data: events for a past day reach the platform after that day's run, and the next daily
run with ``lookback_days`` re-pulls the day and corrects its partition, in Parquet and in Iceberg
(a SQL catalog on SQLite), without ever holding a day twice.

Daily runs of 2024-01-12, -13 and -14 with ``lookback_days=1`` write 2024-01-11 to -14; then
the emulator receives late events for 2024-01-13 (three new users who start the app and buy, on
iOS); the run of 2024-01-15 with ``lookback_days=2`` rewrites -13 and -14 and writes -15.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from analytics_emulator import catalog as emulator_catalog

from airflow_provider_analytics.operators.reports import EventReportOperator, FunnelReportOperator
from airflow_provider_analytics.output.iceberg import (
    COMMIT_PROPERTY,
    DAY_PROPERTY,
    catalog_properties,
    open_catalog,
)
from airflow_provider_analytics.reports.schemas import REPORT_TIME_COLUMNS
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

LATE_DAY = "2024-01-13"
FIRST_RUNS = ["2024-01-12", "2024-01-13", "2024-01-14"]
LOOK_BACK_RUN = "2024-01-15"
ALL_DAYS = ["2024-01-11", "2024-01-12", "2024-01-13", "2024-01-14", "2024-01-15"]
LATE_USERS = 3
FUNNEL_REQUEST = {
    "steps": [
        {"expression": "event.$startup", "filter": None},
        {"expression": "event.purchase", "filter": None},
    ],
    "crowds": ["$ALL"],
    "convertTime": 1,
    "convertTimeUnit": "DAY",
    "byField": {"expression": "event.$startup.$platform"},
}
EVENT_REQUEST = {
    "measures": [
        {"expression": "event.$Anything", "aggregator": "TOTAL_COUNT"},
        {"expression": "event.purchase.amount", "aggregator": "SUM"},
    ],
    "crowds": ["$ALL"],
    "unit": "DAY",
    "byFields": [{"expression": "event.$Anything.$platform"}],
}
KEYS = {
    "funnel": ["date", "step_number"],
    "funnel_totals": ["step_number"],
    "funnel_by_value": ["by_value", "date", "step_number"],
    "funnel_by_value_totals": ["by_value", "step_number"],
    "events": ["by_event_anything_platform", "measure_index", "period"],
    "events_totals": ["by_event_anything_platform", "measure_index"],
}
"""What identifies a row within one day's partition of each table."""


def late_events() -> list[dict[str, Any]]:
    """Three users the platform had not seen that day start the app and buy for 10, on iOS."""
    events = []
    for user in range(100_000, 100_000 + LATE_USERS):
        properties = {"$platform": "iOS"}
        events.append(
            {
                "user": user,
                "event": "$startup",
                "time": f"{LATE_DAY} 10:00:00",
                "properties": properties,
            }
        )
        events.append(
            {
                "user": user,
                "event": "purchase",
                "time": f"{LATE_DAY} 10:05:00",
                "properties": {**properties, "amount": 10},
            }
        )
    return events


@dataclass
class Sink:
    """Where the reports go, and how to read a table back with its ``dt`` column."""

    kind: str
    where: Callable[[str], dict[str, Any]]
    """Report name (``checkout``, ``daily_events``) -> the operator's destination arguments."""
    read: Callable[[str, str], pa.Table]
    """(report name, table name) -> every row of the table, with ``dt``."""
    day_state: Callable[[str, str, str], Any]
    """(report name, table name, day) -> what tells one write of the day from another."""
    commits: Callable[[str, str], list[str]] | None = None
    """(report name, table name) -> the day each Iceberg snapshot replaced, oldest first."""


def parquet_sink(root: Path) -> Sink:
    def path(report: str, table: str, day: str) -> Path:
        return root / report / table / f"report_key={report}" / f"dt={day}" / f"{table}.parquet"

    def read(report: str, table: str) -> pa.Table:
        keys = pa.schema([("report_key", pa.string()), ("dt", pa.date32())])
        partitioning = ds.partitioning(keys, flavor="hive")
        dataset = ds.dataset(root / report / table, format="parquet", partitioning=partitioning)
        return dataset.to_table()

    def day_state(report: str, table: str, day: str) -> Any:
        stat = path(report, table, day).stat()
        return stat.st_ino, stat.st_mtime_ns

    return Sink(
        "parquet", lambda report: {"destination": f"file://{root}/{report}/"}, read, day_state
    )


def iceberg_sink(lake: Catalog, namespace: str = "analytics") -> Sink:
    def identifier(report: str, table: str) -> str:
        return f"{namespace}.{report}{table.removeprefix(table.split('_')[0])}"

    def read(report: str, table: str) -> pa.Table:
        return lake.load_table(identifier(report, table)).scan().to_arrow()

    def day_state(report: str, table: str, day: str) -> Any:
        scan = lake.load_table(identifier(report, table)).scan(row_filter=f"dt = '{day}'")
        return frozenset(task.file.file_path for task in scan.plan_files())

    def commits(report: str, table: str) -> list[str]:
        """The day of each commit, in order (a commit's delete and append snapshots share
        its commit id)."""
        snapshots = lake.load_table(identifier(report, table)).snapshots()
        days = {
            snapshot.summary[COMMIT_PROPERTY]: snapshot.summary[DAY_PROPERTY]
            for snapshot in snapshots
        }
        return list(days.values())

    return Sink(
        "iceberg",
        lambda report: {"iceberg_table": f"{namespace}.{report}"},
        read,
        day_state,
        commits,
    )


@pytest.fixture(params=["parquet", "iceberg"])
def sink(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Sink:
    if request.param == "parquet":
        return parquet_sink(tmp_path / "out")
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    monkeypatch.setenv(
        "AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps({"conn_type": "iceberg", "extra": extra})
    )
    return iceberg_sink(open_catalog("iceberg_default", catalog_properties(extra=extra)))


@pytest.fixture
def platform(
    emulator: EmulatorServer, emulator_admin: EmulatorAdmin, monkeypatch: pytest.MonkeyPatch
) -> EmulatorAdmin:
    """The connection to the session emulator, and its admin API (reset after the test)."""
    use_platform(emulator, monkeypatch)
    return emulator_admin


def use_platform(emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``analytics_default`` names the session emulator."""
    use_connection(monkeypatch, emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)


REPORTS = {
    "checkout": (
        FunnelReportOperator,
        FUNNEL_REQUEST,
        ["funnel", *(f"funnel{s}" for s in ("_totals", "_by_value", "_by_value_totals"))],
    ),
    "daily_events": (EventReportOperator, EVENT_REQUEST, ["events", "events_totals"]),
}


def run_reports(sink: Sink, day: str, lookback_days: int, prefix: str = "") -> dict[str, Any]:
    """Both reports' summaries for the run of ``day``."""
    summaries = {}
    for report, (operator_class, request, _) in REPORTS.items():
        operator = operator_class(
            task_id=report,
            request=request,
            lookback_days=lookback_days,
            report_key=report,
            **sink.where(prefix + report),
        )
        summaries[report] = operator.execute(run_context(day))  # type: ignore[arg-type]
    return summaries


def rows_per_day(table: pa.Table) -> dict[str, int]:
    counts = table.group_by("dt").aggregate([("dt", "count")]).to_pylist()
    return {row["dt"].isoformat(): row["dt_count"] for row in counts}


def day_rows(table: pa.Table, day: str) -> pa.Table:
    """One day's rows without the partition column and the moment the platform computed them,
    in a stable order."""
    rows = table.filter(pc.equal(table.column("dt"), pa.scalar(dt.date.fromisoformat(day))))
    rows = rows.drop_columns(["dt", "report_key", *REPORT_TIME_COLUMNS])
    return rows.sort_by([(name, "ascending") for name in rows.column_names])


def test_the_next_run_corrects_a_day_whose_events_arrived_late(
    platform: EmulatorAdmin, sink: Sink
) -> None:
    for day in FIRST_RUNS:
        run_reports(sink, day, lookback_days=1)
    tables = [(report, table) for report, (_, _, names) in REPORTS.items() for table in names]
    before = {key: sink.read(*key) for key in tables}
    states = {(key, day): sink.day_state(*key, day) for key in tables for day in ALL_DAYS[:-1]}

    platform.add_events(late_events())
    summaries = run_reports(sink, LOOK_BACK_RUN, lookback_days=2)

    for summary in summaries.values():
        assert summary["days_written"] == ["2024-01-13", "2024-01-14", "2024-01-15"]
        assert list(summary["repulled"]) == ["2024-01-13", "2024-01-14"]
    for report, table in tables:
        after = sink.read(report, table)
        counts = rows_per_day(after)
        # every day once: the re-pulled days hold as many rows as before, nothing appended
        assert sorted(counts) == ALL_DAYS, table
        assert {day: counts[day] for day in ALL_DAYS[:-1]} == rows_per_day(before[(report, table)])
        distinct = after.group_by(["dt", *KEYS[table]]).aggregate([]).num_rows
        assert distinct == after.num_rows, table
        for day in ALL_DAYS[:-1]:
            state = sink.day_state(report, table, day)
            if day in ("2024-01-11", "2024-01-12"):
                assert state == states[((report, table), day)], (table, day)  # not touched
            else:
                assert state != states[((report, table), day)], (table, day)  # replaced
        if sink.commits is not None:
            # one commit per day and table: the look-back run's three days, oldest first
            assert sink.commits(report, table)[-3:] == [
                "2024-01-13",
                "2024-01-14",
                "2024-01-15",
            ]
        # a re-pulled day on time is written again as it was
        again = day_rows(after, "2024-01-14")
        assert again.equals(day_rows(before[(report, table)], "2024-01-14")), table

    # the late day now counts the late users: funnel steps and event figures, of the day
    # and over the day (the $ALL column and the totals, the query being the day alone)
    for table in ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals"):
        scope = pc.field("by_value") == "iOS" if "by_value" in table else pc.scalar(True)
        was = day_rows(before[("checkout", table)], LATE_DAY).filter(scope)
        now = day_rows(sink.read("checkout", table), LATE_DAY).filter(scope)
        added = pc.subtract(now.column("converted_users"), was.column("converted_users"))
        assert added.to_pylist() == [LATE_USERS, LATE_USERS], table
    for table in ("events", "events_totals"):
        ios = pc.equal(pc.field("by_event_anything_platform"), "iOS")
        was = day_rows(before[("daily_events", table)], LATE_DAY).filter(ios)
        now = day_rows(sink.read("daily_events", table), LATE_DAY).filter(ios)
        assert now.column("count")[0].as_py() - was.column("count")[0].as_py() == 2 * LATE_USERS
        assert now.column("value")[1].as_py() - was.column("value")[1].as_py() == pytest.approx(
            10 * LATE_USERS
        )


def test_a_re_pulled_day_holds_what_its_own_run_writes(platform: EmulatorAdmin, sink: Sink) -> None:
    """The rule: a day re-pulled by a later run's look-back holds the very rows a run of that
    day alone writes (one query over the day, so the funnel's $ALL column and the event totals
    are the day's own)."""
    platform.add_events(late_events())
    run_reports(sink, LOOK_BACK_RUN, lookback_days=2)
    run_reports(sink, LATE_DAY, lookback_days=0, prefix="own_")
    for report, (_, _, names) in REPORTS.items():
        for table in names:
            re_pulled = day_rows(sink.read(report, table), LATE_DAY)
            own = day_rows(sink.read("own_" + report, table), LATE_DAY)
            assert re_pulled.equals(own), table
            if "query_from_date" in re_pulled.column_names and re_pulled.num_rows:
                windows = set(
                    zip(
                        re_pulled.column("query_from_date").to_pylist(),
                        re_pulled.column("query_to_date").to_pylist(),
                        strict=True,
                    )
                )
                assert windows == {(dt.date(2024, 1, 13), dt.date(2024, 1, 13))}, table
