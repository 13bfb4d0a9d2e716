"""The daily pipeline's output, made at build time: the figures are drawn from it.

The tasks of ``example_dags/analytics_daily.py`` (the DAG ``make demo`` runs) are executed in
this process against an emulator on a free loopback port: for the demo's day, as ``make demo``
runs it, and the event report also for the two weeks before (a backfill), so the event trend
has days to show. Every file lands in a temporary folder. It takes a few seconds.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
import io
import json
import logging
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_dags"
DAG_FILE = EXAMPLES / "analytics_daily.py"
DEMO_DAY = dt.date(2024, 1, 15)
"""The day ``make demo`` runs (``devtools/demo.py``)."""
TREND_DAYS = 14
"""Days of the event report's backfill that end on the demo's day."""
PROJECT_TIMEZONE = "Asia/Shanghai"
"""The emulator's project timezone, which the demo's connection names."""
DAY_TASKS = ("export_cohort_users", "checkout_funnel", "daily_events")
TREND_TASK = "daily_events"


@dataclass(frozen=True)
class DemoOutput:
    """Where the run of the demo's day wrote (``day``), and the backfill of its event report
    (``trend``), each a root with the example DAGs' prefixes under it."""

    day: Path
    trend: Path
    demo_day: dt.date
    results: dict[str, Any]


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """The tasks log as they would in Airflow (through structlog, to standard output); the docs
    build only wants its own messages."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        root.setLevel(level)


def _load_dag(output_root: Path) -> Any:
    """A fresh DAG object of the daily pipeline, writing under ``output_root``."""
    with _environment({"ANALYTICS_OUTPUT_ROOT": f"{output_root.as_uri()}/"}):
        sys.modules.pop("analytics_outputs", None)  # it reads the root when imported
        sys.path.insert(0, str(EXAMPLES))
        try:
            spec = importlib.util.spec_from_file_location("docs_analytics_daily", DAG_FILE)
            if spec is None or spec.loader is None:
                raise RuntimeError(f"cannot load {DAG_FILE}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module.analytics_daily()
        finally:
            sys.path.remove(str(EXAMPLES))
            sys.modules.pop("analytics_outputs", None)


def _context(dag: Any, day: dt.date) -> dict[str, Any]:
    """The template context of a scheduled ``@daily`` run of ``day``, as the day rule reads it."""
    logical = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return {
        "dag": dag,
        "ds": day.isoformat(),
        "ds_nodash": day.strftime("%Y%m%d"),
        "logical_date": logical,
        "data_interval_start": logical,
        "data_interval_end": logical,
        "run_id": f"scheduled__{logical.isoformat()}",
        "params": {},
        "outlet_events": defaultdict(SimpleNamespace),
    }


def _run(dag: Any, task_ids: tuple[str, ...], day: dt.date) -> dict[str, Any]:
    results = {}
    for task_id in task_ids:
        task = dag.get_task(task_id)
        context = _context(dag, day)
        task.render_template_fields(context)
        results[task_id] = task.execute(context)
    return results


def run_demo(workdir: Path) -> DemoOutput:
    """Run the demo's tasks against a fresh emulator; output under ``workdir``."""
    from analytics_emulator.config import EmulatorConfig
    from analytics_emulator.server import EmulatorServer

    day_root = workdir / "demo"
    trend_root = workdir / "trend"
    with EmulatorServer(EmulatorConfig(port=0)) as server, _quiet_logs():
        config = server.config
        connection = {
            "conn_type": "analytics",
            "host": server.base_url,
            "password": config.token,
            "extra": {
                "app_api_key": config.app_key,
                "xtoken": config.xtoken,
                "timezone": PROJECT_TIMEZONE,
            },
        }
        with _environment({"AIRFLOW_CONN_ANALYTICS_DEFAULT": json.dumps(connection)}):
            results = _run(_load_dag(day_root), DAY_TASKS, DEMO_DAY)
            trend_dag = _load_dag(trend_root)
            for offset in range(TREND_DAYS - 1, -1, -1):
                _run(trend_dag, (TREND_TASK,), DEMO_DAY - dt.timedelta(days=offset))
    return DemoOutput(day=day_root, trend=trend_root, demo_day=DEMO_DAY, results=results)
