"""The provider makes the system allocator Arrow's C++ default, unless told otherwise.

Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, the first time it picks its default allocator,
which pyarrow does as it loads: each case runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPORT = (
    "import json, os, pyarrow; "
    "print(json.dumps([os.environ.get('ARROW_DEFAULT_MEMORY_POOL'), "
    "pyarrow.default_memory_pool().backend_name]))"
)


def run(code: str, **env: str) -> list[str | None]:
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-c", f"{code}; {REPORT}"],
        env=clean | env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_provider_first_makes_the_system_allocator_arrow_s_default() -> None:
    assert run("import airflow_provider_analytics") == ["system", "system"]


def test_an_allocator_set_in_the_environment_is_kept() -> None:
    assert run("import airflow_provider_analytics", ARROW_DEFAULT_MEMORY_POOL="mimalloc") == [
        "mimalloc",
        "mimalloc",
    ]


def test_a_process_that_loaded_pyarrow_first_keeps_its_allocator() -> None:
    plain = run("pass")
    assert plain[0] is None
    assert run("import pyarrow; import airflow_provider_analytics") == plain


def exported_log(code: str) -> str:
    """What an export's allocator switch logs in a fresh interpreter after ``code``."""
    clean = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    script = (
        f"{code}; import logging; logging.basicConfig(level=logging.INFO); "
        "from airflow_provider_analytics.export.arrow_pool import arrow_memory_pool\n"
        "for _ in range(2):\n"
        "    with arrow_memory_pool('system'): pass"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=clean, capture_output=True, text=True, check=True
    )
    return done.stderr


def test_an_export_says_once_when_pyarrow_loaded_first_kept_arrow_s_allocator() -> None:
    told = exported_log("import pyarrow")
    assert told.count("Arrow's C++ allocator is mimalloc") == 1
    assert "ARROW_DEFAULT_MEMORY_POOL=system" in told


def test_an_export_says_nothing_when_the_provider_chose_the_allocator() -> None:
    assert "Arrow's C++ allocator" not in exported_log("import airflow_provider_analytics")
