"""`make demo`: the emulator, a real `airflow dags test` of the example pipeline, a short report.

Everything stays on this machine: the emulator listens on 127.0.0.1, Airflow runs with its own
AIRFLOW_HOME and SQLite under .demo/, and the Parquet output lands under out/demo/.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from airflow_provider_analytics.emulator.process import EmulatorProcess
from devtools.airflow_runner import REPO, DagRunner, connection_env, migrate

if TYPE_CHECKING:
    from pathlib import Path

DEMO_DATE = "2024-01-15"
DAG_ID = "analytics_daily"
CREDENTIALS = {"token": "demo-token", "app_key": "demo-app-key", "xtoken": "demo-xtoken"}


def _print_outputs(root: Path) -> int:
    files = sorted(root.rglob("*.parquet"))
    if not files:
        print("no Parquet files were written")
        return 1
    print(f"\nFiles written under {root}:")
    for path in files:
        metadata = pq.read_metadata(path)
        size_kb = path.stat().st_size / 1024
        rel = path.relative_to(root)
        shape = f"{metadata.num_rows:,} rows, {metadata.num_columns} columns"
        print(f"  {rel}  {shape}, {size_kb:,.0f} KiB")
    for path in files:
        table = pq.read_table(path)
        print(f"\nFirst rows of {path.relative_to(root)}:")
        shown = table.select(table.column_names[:6]).slice(0, 5).to_pandas()
        print(shown.to_string(index=False, max_colwidth=28))
    return 0


def main() -> int:
    home = REPO / ".demo" / "airflow"
    output = REPO / "out" / "demo"
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    if not (home / "airflow.db").exists():
        print("creating the demo's Airflow metadata database (once)...")
        migrate(home)
    started = time.monotonic()
    with EmulatorProcess(credentials=CREDENTIALS) as emulator:
        print(f"emulator listening on {emulator.base_url}")
        env = connection_env(emulator.base_url, **CREDENTIALS)
        env["ANALYTICS_OUTPUT_ROOT"] = f"file://{output}/"
        print(f"running `airflow dags test {DAG_ID} {DEMO_DATE}` ...")
        result = DagRunner(home).run(
            DAG_ID, DEMO_DATE, dag_files=[REPO / "example_dags" / f"{DAG_ID}.py"], env=env
        )
    print("emulator stopped")
    if result.returncode != 0 or result.state != "success":
        print(result.output[-6000:])
        print(f"\nthe DAG run did not succeed (state {result.state}, exit {result.returncode})")
        return 1
    print(f"DAG run {result.run_id}: {result.state} in {time.monotonic() - started:.0f} s")
    for task_id, value in sorted(result.xcoms.items()):
        print(f"  {task_id}: {value}")
    return _print_outputs(output)


if __name__ == "__main__":
    sys.exit(main())
