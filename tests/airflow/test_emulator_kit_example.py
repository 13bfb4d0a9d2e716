"""The documented example of the emulator's pytest plugin, run exactly as a user runs it: its
DAG folder and its tests (docs/examples/emulator_kit) copied into a project of their own, and
pytest started there with a migrated AIRFLOW_HOME. The plugin comes from the installed
emulator distribution (entry point ``pytest11``); each test runs the DAG with ``dag.test()``."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from devtools.airflow_runner import REPO, airflow_env

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("airflow")]

EXAMPLE = REPO / "docs" / "examples" / "emulator_kit"


def test_the_documented_dag_tests_pass_against_the_plugin(
    airflow_home: Path, tmp_path: Path
) -> None:
    project = tmp_path / "my_project"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    env = airflow_env(airflow_home, project / "dags")
    for name in list(env):
        if name.startswith(("PYTEST_", "ANALYTICS_")):  # nothing of this session's pytest leaks
            del env[name]
    env["PYTHONPATH"] = ""  # the user's project does not see this repository's tests
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    tests = re.findall(r"^PASSED (\S+)", output, flags=re.MULTILINE)
    assert sorted(tests) == [
        "tests/test_vip_cohort_export.py::test_a_larger_cohort",
        "tests/test_vip_cohort_export.py::test_a_passing_503_is_retried",
        "tests/test_vip_cohort_export.py::test_a_stream_the_proxy_cuts_every_time_is_read_in_pages",
        "tests/test_vip_cohort_export.py::test_every_user_of_the_cohort_lands",
    ]
