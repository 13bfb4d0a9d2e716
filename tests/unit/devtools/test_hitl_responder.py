"""The test harness's answer to Airflow's human-in-the-loop tasks: it answers a task only once
the task is parked, keeps going through failed requests, and a run whose responder keeps
failing is stopped with the reason instead of waiting for input for ever."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from typing import Any

from devtools import hitl_responder
from devtools.airflow_runner import Responder, wait


class Answer:
    def __init__(self, status: int, body: Any = None) -> None:
        self.status_code, self.body = status, body

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}")

    def json(self) -> Any:
        return self.body


def detail(state: str) -> dict[str, Any]:
    ti = {"task_id": "approve", "dag_run_id": "r1", "map_index": -1, "state": state}
    return {"hitl_details": [{"task_instance": ti}]}


class ScriptedApi:
    """Answers the responder's looks from a script, one per look; records every answer sent."""

    def __init__(self, looks: list[Answer], patches: list[Answer]) -> None:
        self.looks, self.patches, self.sent = looks, patches, []

    def get(self, path: str, params: dict[str, Any]) -> Answer:
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]

    def patch(self, path: str, json: dict[str, Any]) -> Answer:
        self.sent.append((path, json["chosen_options"]))
        return self.patches.pop(0)


def test_a_task_is_answered_only_once_parked_and_through_failed_requests(monkeypatch) -> None:
    monkeypatch.setattr(hitl_responder.time, "sleep", lambda _: None)
    api = ScriptedApi(
        looks=[Answer(500), detail_answer("running"), detail_answer("awaiting_input")],
        patches=[Answer(503), Answer(200)],
    )
    hitl_responder.answer(api, "plan", {"approve": "Reject"}, timeout=30)
    path = "/api/v2/dags/plan/dagRuns/r1/taskInstances/approve/-1/hitlDetails"
    # nothing was sent while the task ran; the failed answer was sent again
    assert api.sent == [(path, ["Reject"]), (path, ["Reject"])]


def detail_answer(state: str) -> Answer:
    return Answer(200, detail(state))


def test_an_answer_already_recorded_counts_as_given(monkeypatch) -> None:
    monkeypatch.setattr(hitl_responder.time, "sleep", lambda _: None)
    api = ScriptedApi(looks=[detail_answer("deferred")], patches=[Answer(409)])
    hitl_responder.answer(api, "plan", {"approve": "Approve"}, timeout=30)
    assert len(api.sent) == 1


def test_a_run_whose_responder_keeps_failing_is_stopped_with_the_reason() -> None:
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    with tempfile.TemporaryFile("w+") as output:
        responder = Responder(failing, {}, output)
        with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) as run:
            reason = wait(run, responder, timeout=110)
        assert reason == "stopped: the responder failed 3 times"
        assert run.returncode is not None and run.returncode != 0
        assert responder.starts == Responder.STARTS


def test_a_run_past_its_time_is_stopped_with_the_reason() -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) as run:
        assert wait(run, None, timeout=1) == "stopped: the run took longer than 1 s"
    assert run.returncode is not None and run.returncode != 0
