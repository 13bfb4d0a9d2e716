"""TrackingPlanSyncOperator: arguments, templating, path resolution and its result."""

from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import pytest
from airflow.sdk import DAG

from airflow_provider_analytics.operators.tracking_plan import TrackingPlanSyncOperator
from airflow_provider_analytics.plan.file import TrackingPlanFileError
from airflow_provider_analytics.plan.sync import (
    TrackingPlanChangedError,
    TrackingPlanConflictError,
)

if TYPE_CHECKING:
    import requests_mock as rm

BASE = "https://analytics.example.com:4005"
SCHEMA = f"{BASE}/uba/api/schema"
PLAN_YAML = """\
user_properties:
  - {id: age, name: Age in years, data_type: number}
  - {id: vip_level, name: VIP level, data_type: number}
events:
  - {id: purchase, name: Purchase}
"""
CONFLICTING_YAML = "user_properties:\n  - {id: age, data_type: string}\n"


@pytest.fixture(autouse=True)
def connection(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {
        "conn_type": "analytics",
        "host": BASE,
        "password": "tok-op-91a2",
        "extra": {"app_key": "app-op-33f0", "max_attempts": 1},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(conn))


@pytest.fixture
def platform(requests_mock: rm.Mocker) -> rm.Mocker:
    live = {"id": "age", "name": "Age", "dataType": "number", "plan": 1, "dataStatus": 1}
    requests_mock.get(f"{SCHEMA}/userProperties", json=[live])
    requests_mock.get(f"{SCHEMA}/event", json=[{"id": "purchase", "name": "Purchase", "plan": 1}])
    requests_mock.get(f"{SCHEMA}/eventProperties", json=[])
    for path in ("userProperties", "event"):
        requests_mock.post(f"{SCHEMA}/{path}", json={"success": 0})
        requests_mock.put(f"{SCHEMA}/{path}", json={"success": 0})
    return requests_mock


def dag_in(folder: Path) -> DAG:
    dag = DAG("plan_sync", schedule=None, start_date=datetime.datetime(2024, 1, 1))
    dag.fileloc = str(folder / "plan_sync_dag.py")
    return dag


class _TaskInstance:
    """``context["ti"]`` holding the XComs of the run's other tasks."""

    def __init__(self, xcoms: dict[str, Any]) -> None:
        self.xcoms = xcoms

    def xcom_pull(self, task_ids: str) -> Any:
        return self.xcoms.get(task_ids)


def run(
    operator: TrackingPlanSyncOperator, folder: Path, xcoms: dict[str, Any] | None = None
) -> dict[str, Any]:
    context: Any = {"dag": dag_in(folder), "ti": _TaskInstance(xcoms or {})}
    result: dict[str, Any] = operator.execute(context)
    return result


def write_plan(folder: Path, text: str = PLAN_YAML) -> Path:
    path = folder / "plans" / "tracking_plan.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_arguments_and_template_fields(tmp_path: Path) -> None:
    operator = TrackingPlanSyncOperator(
        task_id="sync", plan=tmp_path / "plan.yaml", dry_run=True, analytics_conn_id="other"
    )
    assert set(TrackingPlanSyncOperator.template_fields) >= {"analytics_conn_id", "plan"}
    assert operator.plan == str(tmp_path / "plan.yaml")
    assert operator.analytics_conn_id == "other"
    assert operator.is_dry_run is True
    assert operator.apply_despite_conflicts is False
    assert callable(operator.dry_run)  # BaseOperator's own method stays usable


def test_the_plan_path_is_templated() -> None:
    operator = TrackingPlanSyncOperator(task_id="sync", plan="plans/{{ params.team }}.yaml")
    operator.render_template_fields({"params": {"team": "shop"}}, jinja_env=jinja2.Environment())
    assert operator.plan == "plans/shop.yaml"


def test_a_relative_path_is_read_from_the_dag_folder_and_the_result_is_json(
    tmp_path: Path, platform: rm.Mocker
) -> None:
    write_plan(tmp_path)
    result = run(
        TrackingPlanSyncOperator(task_id="sync", plan="plans/tracking_plan.yaml"), tmp_path
    )
    assert json.loads(json.dumps(result)) == result
    assert len(result.pop("live_digest")) == 16
    assert result == {
        "added": [
            {
                "target": "user_property",
                "id": "vip_level",
                "fields": {
                    "name": {"old": None, "new": "VIP level"},
                    "dataType": {"old": None, "new": "number"},
                },
            }
        ],
        "modified": [
            {
                "target": "user_property",
                "id": "age",
                "fields": {"name": {"old": "Age", "new": "Age in years"}},
            }
        ],
        "skipped": 1,
        "conflicts": [],
        "untracked": {"user_properties": 0, "events": 0, "event_properties": 0},
        "dry_run": False,
    }
    assert [r.method for r in platform.request_history].count("GET") == 3
    assert {(r.method, r.path) for r in platform.request_history if r.method != "GET"} == {
        ("POST", "/uba/api/schema/userproperties"),
        ("PUT", "/uba/api/schema/userproperties"),
    }


def test_a_plan_given_as_a_dict(tmp_path: Path, platform: rm.Mocker) -> None:
    plan = {"user_properties": [{"id": "age", "name": "Age", "data_type": "number"}]}
    result = run(TrackingPlanSyncOperator(task_id="sync", plan=plan), tmp_path)
    assert (result["added"], result["modified"], result["skipped"]) == ([], [], 1)


def test_a_dry_run_writes_nothing(tmp_path: Path, platform: rm.Mocker) -> None:
    path = write_plan(tmp_path)
    result = run(TrackingPlanSyncOperator(task_id="sync", plan=path, dry_run=True), tmp_path)
    assert result["dry_run"] is True
    assert [c["id"] for c in result["added"] + result["modified"]] == ["vip_level", "age"]
    assert {r.method for r in platform.request_history} == {"GET"}


def test_conflicts_fail_the_task_before_any_write(tmp_path: Path, platform: rm.Mocker) -> None:
    path = write_plan(tmp_path, CONFLICTING_YAML)
    with pytest.raises(TrackingPlanConflictError, match="user_property age"):
        run(TrackingPlanSyncOperator(task_id="sync", plan=path), tmp_path)
    assert {r.method for r in platform.request_history} == {"GET"}


def test_conflicts_set_aside_leave_a_warning_and_the_result(
    tmp_path: Path, platform: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_plan(tmp_path, CONFLICTING_YAML)
    operator = TrackingPlanSyncOperator(task_id="sync", plan=path, apply_despite_conflicts=True)
    with caplog.at_level(logging.WARNING):
        result = run(operator, tmp_path)
    assert [c["id"] for c in result["conflicts"]] == ["age"]
    assert "Conflict, not applied: user_property age (dataType" in caplog.text


def test_a_bad_file_fails_before_any_request(tmp_path: Path, platform: rm.Mocker) -> None:
    path = write_plan(tmp_path, "events:\n  - {id: 1st}\n  - {id: ok, name: 'a;b'}\n")
    with pytest.raises(TrackingPlanFileError) as caught:
        run(TrackingPlanSyncOperator(task_id="sync", plan=path), tmp_path)
    assert [p.split(":")[0] for p in caught.value.problems] == ["events[0].id", "events[1].name"]
    assert platform.request_history == []


def test_a_reviewed_preview_is_applied_and_a_stale_one_refused(
    tmp_path: Path, platform: rm.Mocker
) -> None:
    path = write_plan(tmp_path)
    preview = run(TrackingPlanSyncOperator(task_id="preview", plan=path, dry_run=True), tmp_path)
    assert preview["review"].startswith("**Tracking plan**: 1 to add, 1 to modify, 1 unchanged")
    assert "| modify | user_property age | name: 'Age' → 'Age in years' |" in preview["review"]
    apply = TrackingPlanSyncOperator(task_id="sync", plan=path, reviewed_preview="preview")

    stale = {**preview, "live_digest": "0" * 16}  # the platform's records were others then
    with pytest.raises(TrackingPlanChangedError, match="platform's records"):
        run(apply, tmp_path, {"preview": stale})
    with pytest.raises(ValueError, match=r"reviewed_preview.*left no result"):
        run(apply, tmp_path, {})
    assert {r.method for r in platform.request_history} == {"GET"}

    applied = run(apply, tmp_path, {"preview": json.loads(json.dumps(preview))})
    assert (applied["added"], applied["modified"]) == (preview["added"], preview["modified"])
    assert "review" not in applied
    assert {r.method for r in platform.request_history} == {"GET", "POST", "PUT"}


def test_a_dry_run_cannot_apply_a_review() -> None:
    with pytest.raises(ValueError, match="reviewed_preview"):
        TrackingPlanSyncOperator(
            task_id="sync", plan="p.yaml", dry_run=True, reviewed_preview="preview"
        )
