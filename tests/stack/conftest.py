"""A production-like stack (devtools/stack.py) per test module, and ways to watch it work."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import httpx
import pyarrow.parquet as pq
import pytest

from devtools.airflow_runner import REPO
from devtools.ports import free_port
from devtools.stack import Stack
from tests.emulator_helpers import EmulatorAdmin

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

STACK_DAGS = sorted((Path(__file__).parent / "dags").glob("*.py"))
FINISHED = ("success", "failed")


# The scheduler creates no runs of its own: every run a test looks at is one it triggered or
# backfilled. Scheduled runs of the example DAGs would start whenever the clock says (a new
# day begins at 00:00 UTC, in the middle of a CI run perhaps), take DAG run slots, executor
# slots and platform faults armed for a test, and their tasks would wait for days to end.
NO_SCHEDULED_RUNS = {"AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False"}

# The event-driven examples ask the platform every few seconds, not every five minutes.
FAST_READY_POLLS = {"ANALYTICS_READY_POLL_SECONDS": "5"}


def bring_up(executor: str) -> Iterator[Stack]:
    """A stack of ``executor`` under out/stack-tests/, stopped (by pid) when the module ends.

    Its directory is private (0700, as ``mktemp -d`` makes), as a checkout in a home
    directory often is: PostgreSQL, which runs as another user, must still start."""
    parent = REPO / "out" / "stack-tests"
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"{executor}-{os.getpid()}-", dir=parent))
    assert root.stat().st_mode & 0o777 == 0o700
    stack = Stack(
        root=root,
        executor=executor,
        api_port=free_port(),
        extra_dags=STACK_DAGS,
        settings={**NO_SCHEDULED_RUNS, **FAST_READY_POLLS},
    )
    seconds = stack.up()
    print(f"\n{executor} stack up in {seconds:.0f} s")
    try:
        yield stack
    finally:
        stack.down()
        shutil.rmtree(root, ignore_errors=True)


def wait_until(ready: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``ready`` each second until it returns something true; fail after ``timeout``.

    Timeouts here bound liveness, not speed: a healthy stack is done long before them, and
    they are generous because a shared 2-core machine can be many times slower than usual.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def admin(stack: Stack) -> EmulatorAdmin:
    server = SimpleNamespace(
        base_url=stack.emulator_url, config=SimpleNamespace(admin_token=stack.admin_token)
    )
    return EmulatorAdmin(server)  # type: ignore[arg-type]


def rest_api(stack: Stack) -> httpx.Client:
    """A client of the stack's api-server (its REST API at ``/api/v2``), where every request
    is an admin's, as in the UI."""
    return httpx.Client(base_url=f"http://127.0.0.1:{stack.api_port}", timeout=60)


def trigger(stack: Stack, dag_id: str, day: str) -> str:
    """``airflow dags trigger <dag> --logical-date <day>``; the new run's id."""
    done = stack.airflow("dags", "trigger", dag_id, "--logical-date", day)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = stack.query(
        "SELECT run_id FROM dag_run WHERE dag_id = %s AND run_type = 'manual' "
        "AND logical_date = %s::timestamptz",
        dag_id,
        f"{day}T00:00:00+00:00",
    )
    return str(row[0])


def run_state(stack: Stack, dag_id: str, run_id: str) -> str:
    (row,) = stack.query(
        "SELECT state FROM dag_run WHERE dag_id = %s AND run_id = %s", dag_id, run_id
    )
    return str(row[0])


def wait_for_run(stack: Stack, dag_id: str, run_id: str, timeout: float = 300) -> str:
    state = wait_until(
        lambda: (s := run_state(stack, dag_id, run_id)) in FINISHED and s,
        timeout,
        f"{dag_id} {run_id}",
    )
    assert state == "success", task_report(stack, dag_id, run_id)
    return str(state)


def task_instances(stack: Stack, dag_id: str, run_id: str) -> list[dict[str, Any]]:
    rows = stack.query(
        "SELECT task_id, map_index, state, try_number, hostname FROM task_instance "
        "WHERE dag_id = %s AND run_id = %s ORDER BY task_id, map_index",
        dag_id,
        run_id,
    )
    keys = ("task_id", "map_index", "state", "try_number", "hostname")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def task_report(stack: Stack, dag_id: str, run_id: str) -> str:
    return json.dumps(task_instances(stack, dag_id, run_id), indent=1, default=str)


def xcom(stack: Stack, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> Any:
    (row,) = stack.query(
        "SELECT value FROM xcom WHERE dag_id = %s AND run_id = %s AND task_id = %s "
        "AND map_index = %s AND key = 'return_value'",
        dag_id,
        run_id,
        task_id,
        map_index,
    )
    value = row[0]
    return json.loads(value) if isinstance(value, str | bytes) else value


def parquet_rows(uri: str) -> int:
    return int(pq.read_metadata(uri.removeprefix("file://")).num_rows)


class OneStackAtATime:
    """Brings up the stack a test asks for, stopping the other one first."""

    def __init__(self) -> None:
        self.executor = ""
        self.running: Iterator[Stack] | None = None
        self.stack: Stack | None = None

    def get(self, executor: str) -> Stack:
        if executor != self.executor:
            self.close()
            self.running = bring_up(executor)
            self.stack = next(self.running)
            self.executor = executor
        assert self.stack is not None
        return self.stack

    def close(self) -> None:
        if self.running is not None:
            self.running.close()  # runs bring_up's clean-up
        self.running, self.stack, self.executor = None, None, ""


@pytest.fixture(scope="module")
def stacks() -> Iterator[OneStackAtATime]:
    switch = OneStackAtATime()
    try:
        yield switch
    finally:
        switch.close()


@pytest.fixture(scope="module")
def local_stack(stacks: OneStackAtATime) -> Stack:
    return stacks.get("local")


@pytest.fixture(scope="module")
def celery_stack(stacks: OneStackAtATime) -> Stack:
    return stacks.get("celery")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Collect the stack tests first: their worker is mostly waiting on Airflow, so starting
    them early lets the other worker run the rest of the suite meanwhile."""
    items.sort(key=lambda item: "tests/stack/" not in item.nodeid)
