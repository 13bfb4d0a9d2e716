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


def answer(
    client: Any, dag_id: str, answers: dict[str, str], *, run_id: str = "~", timeout: float = 600
) -> None:
    """Choose ``answers[task_id]`` for each named task of ``dag_id`` once it asks for input.

    :param client: an HTTP client on Airflow's API (``get``/``patch`` with paths).
    :param run_id: the run whose tasks to answer; ``~`` answers the first run that asks.
    """
    base = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/hitlDetails"
    waiting = dict(answers)
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        found = client.get(base, params={"response_received": False})
        found.raise_for_status()
        for detail in found.json()["hitl_details"]:
            ti = detail["task_instance"]
            option = waiting.get(ti["task_id"])
            if option is None:
                continue
            path = (
                f"/api/v2/dags/{dag_id}/dagRuns/{ti['dag_run_id']}/taskInstances/"
                f"{ti['task_id']}/{ti['map_index']}/hitlDetails"
            )
            answered = client.patch(path, json={"chosen_options": [option], "params_input": {}})
            answered.raise_for_status()
            print(f"answered {ti['task_id']}: {option}", flush=True)
            del waiting[ti["task_id"]]
        time.sleep(0.5)
    if waiting:
        raise SystemExit(f"no input was asked for by {sorted(waiting)}")


def main(dag_id: str, answers: dict[str, str]) -> None:
    from airflow.api_fastapi.app import create_app
    from fastapi.testclient import TestClient

    answer(TestClient(create_app("core")), dag_id, answers)


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
