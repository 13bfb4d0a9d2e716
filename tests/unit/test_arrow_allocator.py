"""The provider makes the system allocator Arrow's C++ default, unless told otherwise.

Arrow reads ``ARROW_DEFAULT_MEMORY_POOL`` once, when pyarrow loads: each case runs in a fresh
interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

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


def test_importing_any_module_of_the_provider_is_enough() -> None:
    assert run("import airflow_provider_analytics.tabular.arrow") == ["system", "system"]


@pytest.mark.parametrize("chosen", ["mimalloc", "jemalloc"])
def test_an_allocator_set_in_the_environment_is_kept(chosen: str) -> None:
    import pyarrow as pa

    available = {"mimalloc": pa.mimalloc_memory_pool, "jemalloc": pa.jemalloc_memory_pool}
    try:
        available[chosen]()
    except NotImplementedError:
        pytest.fail(f"this pyarrow build lacks {chosen}; the lock pins one that has it")
    assert run("import airflow_provider_analytics", ARROW_DEFAULT_MEMORY_POOL=chosen) == [
        chosen,
        chosen,
    ]


def test_a_process_that_loaded_pyarrow_first_keeps_its_allocator() -> None:
    plain = run("pass")
    assert plain[0] is None
    assert run("import pyarrow; import airflow_provider_analytics") == plain
