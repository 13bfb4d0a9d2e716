"""`make demo`: the emulator, a real `airflow dags test` of the daily pipeline, a short report.

Everything stays on this machine: the emulator listens on 127.0.0.1, Airflow runs with its own
AIRFLOW_HOME and SQLite under .demo/, and the Parquet output lands under out/demo/. The report
shows the files written with their row counts, the checkout funnel with its rates and the day's
event totals per platform.
"""

from __future__ import annotations

import decimal
import shutil
import sys
import time
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from analytics_emulator.catalog import PROJECT_TIMEZONE
from analytics_emulator.process import EmulatorProcess

from devtools.airflow_runner import REPO, DagRunner, connection_env, migrate

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from devtools.airflow_runner import DagRunResult

DEMO_DATE = "2024-01-15"
DAG_ID = "analytics_daily"
EXAMPLES = REPO / "example_dags"
DAG_FILES = [EXAMPLES / "analytics_daily.py", EXAMPLES / "analytics_outputs.py"]
ADDITIVE_AGGREGATORS = ("TOTAL_COUNT", "SUM")
"""Measures whose split values add up to the unsplit figure (docs/report_tables.md)."""
CREDENTIALS = {"token": "demo-token", "app_key": "demo-app-key", "xtoken": "demo-xtoken"}


def readable(table: pa.Table) -> pd.DataFrame:
    """``table`` as a DataFrame for printing: decimals without trailing zeros (an id stays an
    integer, 12.50 reads 12.5) and timestamps to the second."""
    columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_decimal(column.type):
            column = pa.array([_plain(value) for value in column.to_pylist()], pa.string())
        elif pa.types.is_timestamp(column.type):
            seconds = column.cast(pa.timestamp("s", tz=column.type.tz), safe=False)
            column = pc.strftime(seconds, "%Y-%m-%d %H:%M:%S")
        columns[name] = column
    return pa.table(columns).to_pandas()


def _plain(value: decimal.Decimal | None) -> str | None:
    if value is None:
        return None
    return format(value.normalize() if value != 0 else decimal.Decimal(0), "f")


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}"


def _percent(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"


def print_files(root: Path) -> list[Path]:
    """List every Parquet file under ``root`` with its rows, columns and size."""
    files = sorted(root.rglob("*.parquet"))
    print(f"\nFiles written under {root}:")
    empty = set()
    for path in files:
        metadata = pq.read_metadata(path)
        size_kib = path.stat().st_size / 1024
        print(
            f"  {path.relative_to(root)}  {metadata.num_rows:,} rows, "
            f"{metadata.num_columns} columns, {size_kib:,.1f} KiB"
        )
        if metadata.num_rows == 0:
            empty.add(path.name)
    if empty:
        print(empty_note(empty))
    return files


def empty_note(names: set[str]) -> str:
    """One line on why some files hold 0 rows: the funnel's per-split-value tables are written
    empty when the funnel is not split, so every day has the same set of tables."""
    split = {name for name in names if name.startswith("funnel_by_value")}
    other = sorted(names - split)
    note = (
        "  0 rows in funnel_by_value*: the checkout funnel is not split by a property, and its "
        "per-split-value tables are written empty so every day has the same tables"
        if split
        else ""
    )
    if other:  # not expected from the example pipeline: say so rather than explain it away
        note += ("; " if note else "  ") + f"unexpectedly empty: {', '.join(other)}"
    return note


def print_funnel(path: Path) -> None:
    """The funnel's steps over the whole day: users and the two rates the platform leaves out."""
    overall = pq.read_table(path)
    print(f"\nCheckout funnel ({path.name}, all users, whole range):")
    print(f"  {'step':<14}{'users':>8}{'vs previous':>14}{'vs first':>11}{'median to next':>16}")
    for row in overall.sort_by("step_number").to_pylist():
        median = row["median_seconds_to_next"]
        print(
            f"  {row['step_event']:<14}{row['converted_users']:>8,}"
            f"{_percent(row['conversion_rate']):>14}{_percent(row['completion_rate']):>11}"
            f"{'' if median is None else f'{median} s':>16}"
        )


def print_event_totals(path: Path) -> None:
    """Each measure's total for the range, one column per measure, one row per split value."""
    table = pq.read_table(path)
    totals = table.to_pandas()
    split = [name for name in table.column_names if name.startswith("by_")]
    expression = totals["measure_expression"].str.removeprefix("event.")
    totals["measure"] = expression + " " + totals["measure_aggregator"]
    totals["number"] = totals["count"].fillna(totals["value"])
    pivot = totals.pivot_table(index=split, columns="measure", values="number", aggfunc="sum")
    print(f"\nEvent totals ({path.name}, one row per split value):")
    print(pivot.to_string(float_format=_number))
    additive = totals[totals["measure_aggregator"].isin(ADDITIVE_AGGREGATORS)]
    if not additive.empty:
        sums = additive.groupby("measure", sort=False)["number"].sum()
        print("  over all split values: " + ", ".join(f"{m} {_number(v)}" for m, v in sums.items()))
    print(
        "  (distinct user counts such as TRIGGER_USER_COUNT are not added up: a user active on"
        " two platforms is one user; see docs/report_tables.md)"
    )


def print_users(path: Path, rows: int = 5) -> None:
    # the connection names the project's timezone, so the export converted its local times
    print(f"\nFirst rows of {path.name} (cohort export, times converted to UTC):")
    print(readable(pq.read_table(path).slice(0, rows)).to_string(index=False))


def run_pipeline(home: Path, output: Path) -> tuple[DagRunResult, float]:
    """Start the emulator, run the DAG once for DEMO_DATE, stop the emulator."""
    started = time.monotonic()
    with EmulatorProcess(credentials=CREDENTIALS) as emulator:
        print(f"emulator listening on {emulator.base_url}")
        # the emulator writes datetimes in its project's timezone, as the platform does
        env = connection_env(emulator.base_url, **CREDENTIALS, timezone=PROJECT_TIMEZONE)
        env["ANALYTICS_OUTPUT_ROOT"] = f"file://{output}/"
        print(f"running `airflow dags test {DAG_ID} {DEMO_DATE}` ...")
        result = DagRunner(home).run(DAG_ID, DEMO_DATE, dag_files=DAG_FILES, env=env)
    print("emulator stopped")
    return result, time.monotonic() - started


def main() -> int:
    home = REPO / ".demo" / "airflow"
    output = REPO / "out" / "demo"
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    if not (home / "airflow.db").exists():
        print("creating the demo's Airflow metadata database (once)...")
        migrate(home)
    result, seconds = run_pipeline(home, output)
    if result.returncode != 0 or result.state != "success":
        print(result.output[-6000:])
        print(f"\nthe DAG run did not succeed (state {result.state}, exit {result.returncode})")
        return 1
    # `airflow dags test` names the run after the moment it started, not after the day it covers
    print(
        f"DAG run for logical date {DEMO_DATE}: {result.state} in {seconds:.0f} s "
        f"(run id {result.run_id}, named by Airflow after when it started)"
    )
    for task_id, state in sorted(result.task_states.items()):
        print(f"  {task_id}: {state}")
    files = print_files(output)
    # the run's own day (the reports also rewrote the days they look back on)
    by_name = {path.name: path for path in files if f"dt={DEMO_DATE}" in path.parts[-2]}
    missing = {"funnel_totals.parquet", "events_totals.parquet", "users.parquet"} - set(by_name)
    if missing:
        print(f"missing output: {sorted(missing)}")
        return 1
    print_funnel(by_name["funnel_totals.parquet"])
    print_event_totals(by_name["events_totals.parquet"])
    print_users(by_name["users.parquet"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
