"""A DAG processor imports the operator and sensor modules at every parse of a DAG file that
uses them: they must not load the HTTP stack, Arrow, pandas or numpy, which a task loads when it
runs. (How long the import takes is measured by ``benchmarks/import_time.py``.)"""

from __future__ import annotations

import json
import subprocess
import sys

from airflow_provider_analytics import get_provider_info

LOADED_WHEN_A_TASK_RUNS = frozenset(
    {"pyarrow", "pandas", "numpy", "requests", "urllib3", "yaml", "pyiceberg", "analytics_emulator"}
)
DECLARED_MODELS = frozenset(
    {
        "airflow_provider_analytics.client.analysis_requests",
        "airflow_provider_analytics.client.answers",
        "airflow_provider_analytics.client.config",
        "airflow_provider_analytics.client.validation",
    }
)
"""The modules that build pydantic models as they load (a few hundred milliseconds together):
a task builds them when it runs, a DAG file's parse never."""


def parse_time_modules() -> list[str]:
    info = get_provider_info()
    return [
        module
        for kind in ("operators", "sensors")
        for entry in info[kind]
        for module in entry["python-modules"]
    ]


def test_operator_and_sensor_modules_load_nothing_heavy_beyond_airflow_sdk() -> None:
    modules = parse_time_modules()
    assert len(modules) >= 6
    script = (
        "import json, sys, airflow.sdk\n"
        "before = set(sys.modules)\n"
        + "".join(f"import {module}\n" for module in modules)
        + "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    added = json.loads(finished.stdout.splitlines()[-1])
    heavy = sorted({name.split(".")[0] for name in added} & LOADED_WHEN_A_TASK_RUNS)
    assert heavy == [], f"imported at parse time: {heavy}"
    assert sorted(DECLARED_MODELS & set(added)) == []
    assert any(name.endswith("operators.cohort_export") for name in added)
