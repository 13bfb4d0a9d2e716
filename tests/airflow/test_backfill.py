"""A three-day backfill of the daily pipeline, one real `airflow dags test` per logical date (the
dates `airflow backfill create` plans for the range), then one day run again: each day has its own
partitions, the rerun replaces that day's files and its two look-back days' report files only,
nothing is duplicated, and warehouse-style readers (DuckDB, pyarrow datasets) load the
Hive-partitioned tables with the expected schema."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.reports.schemas import REPORT_TIME_COLUMNS
from devtools.airflow_runner import AIRFLOW, airflow_env, connection_env

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer

    from devtools.airflow_runner import DagRunner, DagRunResult

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("airflow")]

EXAMPLES = Path(__file__).resolve().parents[2] / "example_dags"
DAG_ID = "analytics_daily"
DAG_FILES = [EXAMPLES / "analytics_daily.py", EXAMPLES / "analytics_outputs.py"]
DAYS = ["2024-01-10", "2024-01-11", "2024-01-12"]
RERUN_DAY = "2024-01-11"
LOOKBACK_DAYS = 2
"""The example's reports re-pull the two days before their own (lookback_days=2)."""
REPORT_DAYS = ["2024-01-08", "2024-01-09", *DAYS]
"""Every day a report table is written for: the backfilled days and the first one's look-back."""
RERUN_REPORT_DAYS = ["2024-01-09", "2024-01-10", RERUN_DAY]
TABLES = {
    "cohort_users": "cohort_users/cohort_code=cohort_small/dt={day}/users.parquet",
    **{
        name: f"checkout_funnel/{name}/report_key=checkout/dt={{day}}/{name}.parquet"
        for name in ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")
    },
    **{
        name: f"daily_events/{name}/report_key=daily_events/dt={{day}}/{name}.parquet"
        for name in ("events", "events_totals")
    },
}
UNSPLIT_FUNNEL_TABLES = ("funnel_by_value", "funnel_by_value_totals")
"""The example funnel is not split: these tables are written, and empty."""


@dataclass(frozen=True)
class FileState:
    """What tells one version of a file from another."""

    sha256: str
    mtime_ns: int
    inode: int


def snapshot(root: Path) -> dict[str, FileState]:
    """Every file under ``root``, hidden ones included, by relative path."""
    states = {}
    for path in root.rglob("*"):
        if path.is_file():
            stat = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            states[str(path.relative_to(root))] = FileState(digest, stat.st_mtime_ns, stat.st_ino)
    return states


def day_files(day: str) -> set[str]:
    return {layout.format(day=day) for layout in TABLES.values()}


def report_files(day: str) -> set[str]:
    return {layout.format(day=day) for name, layout in TABLES.items() if name != "cohort_users"}


def run_files(day: str) -> set[str]:
    """What the run of ``day`` writes: its own day, and its look-back days' report tables."""
    first = dt.date.fromisoformat(day)
    looked_back = [(first - dt.timedelta(days=n)).isoformat() for n in range(1, LOOKBACK_DAYS + 1)]
    return day_files(day).union(*(report_files(other) for other in looked_back))


def without_report_time(table: pa.Table) -> pa.Table:
    """The rows as the platform computed them, without the moment it computed them."""
    return table.drop_columns([c for c in REPORT_TIME_COLUMNS if c in table.column_names])


@dataclass(frozen=True)
class Backfill:
    out: Path
    runs: dict[str, DagRunResult]
    before_rerun: dict[str, FileState]
    rerun_day_tables: dict[str, pa.Table]
    rerun: DagRunResult
    after_rerun: dict[str, FileState]


def run_day(runner: DagRunner, day: str, env: dict[str, str]) -> DagRunResult:
    result = runner.run(DAG_ID, day, dag_files=DAG_FILES, env=env)
    assert result.returncode == 0, result.output[-6000:]
    assert result.state == "success", result.task_states
    return result


@pytest.fixture(scope="module")
def backfill(
    dag_runner: DagRunner,
    airflow_home: Path,
    emulator: EmulatorServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Backfill:
    out = tmp_path_factory.mktemp("backfill-out")
    config = emulator.config
    env = connection_env(
        emulator.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
    )
    env["ANALYTICS_OUTPUT_ROOT"] = f"file://{out}/"
    runs = {day: run_day(dag_runner, day, env) for day in DAYS}
    before = snapshot(out)
    tables = {name: pq.read_table(out / name) for name in run_files(RERUN_DAY)}
    rerun = run_day(dag_runner, RERUN_DAY, env)
    return Backfill(out, runs, before, tables, rerun, snapshot(out))


def planned_backfill(airflow_home: Path, last_day: str, *options: str) -> list[str]:
    """Logical dates `airflow backfill create --dry-run` plans from the first day to last_day."""
    command = [AIRFLOW, "backfill", "create", "--dag-id", DAG_ID, "--dry-run", *options]
    command += ["--from-date", DAYS[0], "--to-date", last_day]
    done = subprocess.run(
        command,
        env=airflow_env(airflow_home, airflow_home / f"dags-{DAG_ID}"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return re.findall(r"\|\s*(\d{4}-\d{2}-\d{2}) 00:00:00\+00:00\s*\|", done.stdout)


def test_the_documented_backfill_command_plans_one_run_per_day(
    backfill: Backfill, airflow_home: Path
) -> None:
    # Days that already have a run are skipped unless reprocessing is asked for.
    assert planned_backfill(airflow_home, "2024-01-13") == ["2024-01-13"]
    everything = planned_backfill(airflow_home, "2024-01-13", "--reprocess-behavior", "completed")
    assert everything == [*DAYS, "2024-01-13"]


def test_each_logical_date_wrote_its_own_partitions_and_nothing_else(backfill: Backfill) -> None:
    expected = set().union(*(run_files(day) for day in DAYS))
    assert expected == set().union(*(report_files(day) for day in REPORT_DAYS)) | {
        TABLES["cohort_users"].format(day=day) for day in DAYS
    }
    assert set(backfill.before_rerun) == expected
    assert set(backfill.after_rerun) == expected
    for day, result in backfill.runs.items():
        export = result.task_xcom("export_cohort_users")
        assert export["uri"] == f"file://{backfill.out}/{TABLES['cohort_users'].format(day=day)}"
        assert export["rows"] == export["expected_rows"] == 1000
        first = dt.date.fromisoformat(day)
        days = [(first - dt.timedelta(days=n)).isoformat() for n in (2, 1, 0)]
        assert result.task_xcom("checkout_funnel")["days_written"] == days
        assert result.task_xcom("daily_events")["days_written"] == days


def test_rerunning_a_day_replaces_its_files_and_leaves_the_others_untouched(
    backfill: Backfill,
) -> None:
    before, after = backfill.before_rerun, backfill.after_rerun
    assert run_files(RERUN_DAY) == day_files(RERUN_DAY).union(
        *(report_files(day) for day in RERUN_REPORT_DAYS)
    )
    for name in sorted(before):
        if name in run_files(RERUN_DAY):
            assert after[name].inode != before[name].inode, f"{name} was not replaced"
            assert after[name].mtime_ns > before[name].mtime_ns
        else:
            assert after[name] == before[name], f"{name} changed"


def test_the_rerun_wrote_the_same_rows_again(backfill: Backfill) -> None:
    for name, earlier in backfill.rerun_day_tables.items():
        again = pq.read_table(backfill.out / name)
        assert without_report_time(again).equals(without_report_time(earlier)), name


def test_no_partition_holds_duplicates(backfill: Backfill) -> None:
    keys = {
        "cohort_users": ["distinct_id"],
        "funnel": ["date", "step_number"],
        "funnel_totals": ["query_from_date", "step_number"],
        "funnel_by_value": ["by_value", "date", "step_number"],
        "funnel_by_value_totals": ["by_value", "query_from_date", "step_number"],
        "events": ["by_event_anything_platform", "measure_index", "period"],
        "events_totals": ["by_event_anything_platform", "measure_index", "query_from_date"],
    }
    for day in REPORT_DAYS:
        for table_name, layout in TABLES.items():
            if table_name == "cohort_users" and day not in DAYS:
                continue
            table = pq.read_table(backfill.out / layout.format(day=day))
            distinct = table.group_by(keys[table_name]).aggregate([]).num_rows
            assert distinct == table.num_rows, (table_name, day)
            assert (table.num_rows == 0) == (table_name in UNSPLIT_FUNNEL_TABLES), table_name


def test_each_partition_holds_the_day_it_is_named_after(backfill: Backfill) -> None:
    for day in REPORT_DAYS:  # a re-pulled day too: its own day alone, one query
        date = dt.date.fromisoformat(day)
        for table_name in ("funnel", "funnel_totals", "events", "events_totals"):
            rows = pq.read_table(backfill.out / TABLES[table_name].format(day=day)).to_pylist()
            assert {(r["query_from_date"], r["query_to_date"]) for r in rows} == {(date, date)}
            if "date" in rows[0]:
                assert {r["date"] for r in rows} == {date}


def test_duckdb_reads_the_hive_partitioned_tables(backfill: Backfill) -> None:
    users_glob = f"{backfill.out}/cohort_users/*/*/*.parquet"
    funnel_glob = f"{backfill.out}/checkout_funnel/funnel_totals/*/*/*.parquet"
    with duckdb.connect() as db:
        users = f"read_parquet('{users_glob}', hive_partitioning = true)"
        schema = {
            name: kind
            for name, kind, *_ in db.execute(f"DESCRIBE SELECT * FROM {users}").fetchall()
        }
        assert schema == {
            "distinct_id": "BIGINT",
            "city": "VARCHAR",
            "os": "VARCHAR",
            "register_time": "TIMESTAMP WITH TIME ZONE",
            "balance": "DOUBLE",
            "is_vip": "BOOLEAN",
            "cohort_code": "VARCHAR",
            "dt": "DATE",
        }
        per_day = db.execute(
            f"SELECT dt, count(*), count(DISTINCT distinct_id) FROM {users} GROUP BY dt ORDER BY dt"
        ).fetchall()
        assert per_day == [(dt.date.fromisoformat(day), 1000, 1000) for day in DAYS]
        funnel = f"read_parquet('{funnel_glob}', hive_partitioning = true)"
        mismatched = db.execute(
            f"SELECT count(*) FROM {funnel} WHERE dt <> query_from_date OR dt <> query_to_date"
        ).fetchone()
        assert mismatched == (0,)
        first_steps = db.execute(
            f"SELECT dt, converted_users FROM {funnel} WHERE step_number = 1 ORDER BY dt"
        ).fetchall()
        assert [day for day, _ in first_steps] == [dt.date.fromisoformat(d) for d in REPORT_DAYS]
        assert all(users > 0 for _, users in first_steps)


def test_pyarrow_dataset_reads_the_event_table(backfill: Backfill) -> None:
    partitioning = ds.partitioning(pa.schema([("dt", pa.date32())]), flavor="hive")
    dataset = ds.dataset(
        backfill.out / "daily_events/events", format="parquet", partitioning=partitioning
    )
    written = pq.read_schema(backfill.out / TABLES["events"].format(day=DAYS[0]))
    assert dataset.schema.remove_metadata() == written.remove_metadata().append(
        pa.field("dt", pa.date32())
    )
    assert sorted(Path(path).name for path in dataset.files) == ["events.parquet"] * len(
        REPORT_DAYS
    )
    table = dataset.to_table()
    counts = table.group_by("dt").aggregate([("dt", "count")]).sort_by("dt").to_pylist()
    assert [(row["dt"].isoformat(), row["dt_count"]) for row in counts] == [
        (day, pq.read_metadata(backfill.out / TABLES["events"].format(day=day)).num_rows)
        for day in REPORT_DAYS
    ]
    assert table.filter(pa.compute.not_equal(table["dt"], table["query_from_date"])).num_rows == 0
