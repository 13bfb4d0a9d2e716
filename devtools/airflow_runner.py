"""Run DAGs for real: `airflow dags test` in a subprocess with its own AIRFLOW_HOME and SQLite."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

AIRFLOW = str(Path(sys.executable).with_name("airflow"))
REPO = Path(__file__).resolve().parents[1]
RESPONDER_ENV = {"AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True"}
"""The responder's API app lets every request in as an admin (it is never served)."""


def airflow_env(
    home: Path, dags_folder: Path, extra: dict[str, str] | None = None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW_", "AIRFLOW__"))}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
            # Each `airflow` process imports thousands of modules: keep their bytecode in the
            # home, even where the environment disables writing it (saves ~10 s a run).
            "PYTHONDONTWRITEBYTECODE": "",
            "PYTHONPYCACHEPREFIX": str(home / "pycache"),
        }
    )
    env.update(extra or {})
    return env


def migrate(home: Path) -> None:
    """Create the metadata database once; every run on this home reuses it."""
    home.mkdir(parents=True, exist_ok=True)
    dags = home / "dags"
    dags.mkdir(exist_ok=True)
    done = subprocess.run(
        [AIRFLOW, "db", "migrate"],
        env=airflow_env(home, dags),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"airflow db migrate failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


class Responder:
    """The human-in-the-loop responder beside a run (``devtools.hitl_responder``), started again
    when it ends with an error (a busy database at its start, say) while the run still waits:
    a responder gone for good would leave the run waiting for input for ever."""

    STARTS = 3

    def __init__(self, command: list[str], env: dict[str, str], output: IO[str]) -> None:
        self.command, self.env, self.output = command, env, output
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def gave_up(self) -> str:
        """Why the run cannot be answered any more ("" while it can): (re)starts the responder."""
        if self.process is not None and self.process.poll() in (None, 0):
            return ""
        if self.starts == self.STARTS:
            return f"stopped: the responder failed {self.STARTS} times"
        self.starts += 1
        self.process = subprocess.Popen(
            self.command, env=self.env, cwd=REPO, stdout=self.output, stderr=subprocess.STDOUT
        )
        return ""

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()


def wait(dag_test: subprocess.Popen[str], responder: Responder | None, timeout: float) -> str:
    """Wait for the run, but no longer than ``timeout``, nor once its responder has given up:
    the run is then stopped, and the reason returned for the test's assertion to show."""
    deadline = time.monotonic() + timeout
    while dag_test.poll() is None:
        reason = "" if responder is None else responder.gave_up()
        if time.monotonic() > deadline:
            reason = f"stopped: the run took longer than {timeout:.0f} s"
        if reason:
            dag_test.kill()
            dag_test.wait()
            return reason
        time.sleep(0.5)
    return ""


@dataclass
class DagRunResult:
    dag_id: str
    returncode: int
    output: str
    run_id: str | None
    state: str | None
    xcoms: dict[str, Any]
    task_states: dict[str, str | None]

    def task_xcom(self, task_id: str, map_index: int = -1) -> Any:
        return (
            self.xcoms.get(f"{task_id}[{map_index}]") if map_index >= 0 else self.xcoms.get(task_id)
        )


class DagRunner:
    """Runs one DAG at a time with `airflow dags test` against a migrated home."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def run(
        self,
        dag_id: str,
        logical_date: str,
        *,
        dag_files: list[Path],
        env: dict[str, str] | None = None,
        conf: dict[str, Any] | None = None,
        timeout: float = 480,
        respond: dict[str, str] | None = None,
    ) -> DagRunResult:
        """Run ``dag_id`` for ``logical_date``; ``respond`` answers its human-in-the-loop tasks
        (task id -> the option chosen, e.g. ``{"approve": "Approve"}``) through Airflow's REST
        API, as a person does on the task's Required Actions page."""
        dags = self.home / f"dags-{dag_id}"
        shutil.rmtree(dags, ignore_errors=True)
        dags.mkdir(parents=True)
        for path in dag_files:
            if path.is_dir():
                shutil.copytree(path, dags / path.name)
            else:
                shutil.copy(path, dags / path.name)
        # `airflow dags test`, with the fix of devtools/airflow_cli.py for DAGs with a deadline
        command = [
            sys.executable,
            "-m",
            "devtools.airflow_cli",
            "dags",
            "test",
            dag_id,
            logical_date,
        ]
        if conf is not None:
            command += ["--conf", json.dumps(conf)]
        with tempfile.TemporaryFile("w+") as log, tempfile.TemporaryFile("w+") as answers:
            responder = (
                Responder(
                    [sys.executable, "-m", "devtools.hitl_responder", dag_id, json.dumps(respond)],
                    airflow_env(self.home, dags, {**(env or {}), **RESPONDER_ENV}),
                    answers,
                )
                if respond
                else None
            )
            with subprocess.Popen(
                command,
                env=airflow_env(self.home, dags, env),
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            ) as dag_test:
                try:
                    reason = wait(dag_test, responder, timeout)
                finally:
                    if responder is not None:
                        responder.stop()
            log.seek(0)
            output = log.read() + (f"\n{reason}\n" if reason else "")
            if respond:
                answers.seek(0)
                output += "\n--- responder ---\n" + answers.read()
        run_id, state, xcoms, task_states = self._read_run(dag_id)
        assert dag_test.returncode is not None
        return DagRunResult(dag_id, dag_test.returncode, output, run_id, state, xcoms, task_states)

    def _read_run(
        self, dag_id: str
    ) -> tuple[str | None, str | None, dict[str, Any], dict[str, str | None]]:
        with sqlite3.connect(self.home / "airflow.db") as db:
            row = db.execute(
                "SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1",
                (dag_id,),
            ).fetchone()
            if row is None:
                return None, None, {}, {}
            run_id, state = row
            xcoms: dict[str, Any] = {}
            for task_id, map_index, value in db.execute(
                "SELECT task_id, map_index, value FROM xcom "
                "WHERE dag_id = ? AND run_id = ? AND key = 'return_value'",
                (dag_id, run_id),
            ):
                key = task_id if map_index < 0 else f"{task_id}[{map_index}]"
                xcoms[key] = json.loads(value) if isinstance(value, str | bytes) else value
            task_states = {
                (task_id if map_index < 0 else f"{task_id}[{map_index}]"): task_state
                for task_id, map_index, task_state in db.execute(
                    "SELECT task_id, map_index, state FROM task_instance "
                    "WHERE dag_id = ? AND run_id = ?",
                    (dag_id, run_id),
                )
            }
        return run_id, state, xcoms, task_states


def connection_env(
    base_url: str, *, token: str, app_key: str, xtoken: str, **extra: Any
) -> dict[str, str]:
    """`AIRFLOW_CONN_ANALYTICS_DEFAULT` for a platform (or the emulator) at base_url."""
    return {
        "AIRFLOW_CONN_ANALYTICS_DEFAULT": json.dumps(
            {
                "conn_type": "analytics",
                "host": base_url,
                "password": token,
                "extra": {"app_api_key": app_key, "xtoken": xtoken, **extra},
            }
        )
    }
