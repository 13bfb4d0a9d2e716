"""Answer a DAG run's human-in-the-loop tasks through Airflow's REST API, as a person would.

Run beside ``airflow dags test`` on the same metadata database (``DagRunner.run(respond=...)``):
it waits until each named task asks for input, then sends the chosen option with the API's
``PATCH .../taskInstances/{task_id}/-1/hitlDetails``, which records the response and hands the
task back to the run. The API app is built in this process (Airflow's own routes, auth and
database code) and reached through a test client, so no server is started. A running
api-server (the stack's) is answered over HTTP with :func:`answer` and an ``httpx.Client``.

    python -m devtools.hitl_responder <dag_id> '{"approve": "Approve"}'
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

PARKED = ("awaiting_input", "deferred")
"""The states of a task that waits for its answer. A person answers once the task asks (it is
parked); so does the responder: on SQLite, where Airflow's row locks are no-ops, an answer
recorded while the task is still on its way to parking can be missed, and the run then waits
for ever."""


def answer(
    client: Any, dag_id: str, answers: dict[str, str], *, run_id: str = "~", timeout: float = 600
) -> None:
    """Choose ``answers[task_id]`` for each named task of ``dag_id`` once it asks for input.

    A task is answered once it is parked (``PARKED``). A failed look or answer (a server
    error, a database busy for a moment) is tried again on the next round rather than ending
    the responder, which would leave the run waiting for input for ever; an answer the API
    says was already recorded counts as given.

    :param client: an HTTP client on Airflow's API (``get``/``patch`` with paths).
    :param run_id: the run whose tasks to answer; ``~`` answers the first run that asks.
    """
    base = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/hitlDetails"
    waiting = dict(answers)
    deadline = time.monotonic() + timeout
    last_problem = ""
    while waiting and time.monotonic() < deadline:
        try:
            found = client.get(base, params={"response_received": False})
            found.raise_for_status()
            details = found.json()["hitl_details"]
        except Exception as error:  # retried until the deadline
            last_problem = report(f"looking for input failed: {error!r}", last_problem)
            details = []
        for detail in details:
            ti = detail["task_instance"]
            option = waiting.get(ti["task_id"])
            if option is None or ti["state"] not in PARKED:
                continue
            path = (
                f"/api/v2/dags/{dag_id}/dagRuns/{ti['dag_run_id']}/taskInstances/"
                f"{ti['task_id']}/{ti['map_index']}/hitlDetails"
            )
            try:
                answered = client.patch(path, json={"chosen_options": [option], "params_input": {}})
                if answered.status_code != 409:  # 409: this answer was recorded already
                    answered.raise_for_status()
            except Exception as error:  # retried on the next round
                last_problem = report(f"answering {ti['task_id']} failed: {error!r}", last_problem)
                continue
            print(f"answered {ti['task_id']}: {option}", flush=True)
            del waiting[ti["task_id"]]
        time.sleep(0.5)
    if waiting:
        raise SystemExit(f"no input was asked for by {sorted(waiting)} ({last_problem or 'none'})")


def report(problem: str, last: str) -> str:
    """Print a problem once, not on every round it repeats."""
    if problem != last:
        print(problem, flush=True)
    return problem


def main(dag_id: str, answers: dict[str, str]) -> None:
    from airflow.api_fastapi.app import create_app
    from fastapi.testclient import TestClient

    # Server errors come back as 500 answers, to be retried, not as exceptions that end the loop.
    answer(TestClient(create_app("core"), raise_server_exceptions=False), dag_id, answers)


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
