"""The three operators of a cohort export spread over workers (plan, read each shard, publish),
run as Airflow runs them, one task after the other, against the emulator: the plan's shard
numbers, each shard read once however often its task is retried, one publication with the
Asset only the publish task declares, and the arguments each refuses before any request. (The
export the operators drive, its faults and its resumption: tests/integration/export/
test_cohort_shards.py.)"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from airflow.sdk import Asset
from analytics_emulator import catalog as emulator_catalog

from airflow_provider_analytics.core.errors import AnalyticsValidationError, ShardStagingError
from airflow_provider_analytics.operators.cohort_shards import (
    CohortShardPlanOperator,
    CohortShardPublishOperator,
    CohortShardReadOperator,
)
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
SHARDS = {"cohort_code": "cohort_small", "page_size": 100, "shard_rows": 250}
"""1000 users: 10 pages of 100, 2 pages a shard, 5 shards."""


@pytest.fixture
def platform(emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> EmulatorServer:
    use_connection(monkeypatch, emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)
    return emulator


def step(operator: Any, **arguments: Any) -> Any:
    """``operator`` as a DAG declares it: the read task also names its shard."""
    if operator is CohortShardReadOperator:
        arguments.setdefault("shard_index", 0)
    return operator(task_id="step", **arguments)


def requests_made(admin: EmulatorAdmin) -> int:
    return sum(int(count) for count in admin.stats()["requests"].values())


def test_plan_read_and_publish_export_the_cohort_once(
    platform: EmulatorServer, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    prefix = f"{tmp_path.as_uri()}/users/"
    context = run_context(DAY)
    plan = CohortShardPlanOperator(task_id="plan", destination=prefix, **SHARDS)
    assert plan.execute(context) == [0, 1, 2, 3, 4]  # type: ignore[arg-type]

    def read(index: Any) -> dict[str, Any]:
        task = CohortShardReadOperator(
            task_id="read", destination=prefix, shard_index=index, **SHARDS
        )
        return task.execute(context)  # type: ignore[arg-type]

    reads = [read(index) for index in range(5)]
    assert [(r["shard"], r["read"]) for r in reads] == [(i, True) for i in range(5)]
    assert sum(r["rows"] for r in reads) == 1000
    pages = emulator_admin.stats()["requests"]["get_cohort_users"]
    again = read(2)  # a retried task: the shard was read already
    assert again == {"shard": 2, "rows": reads[2]["rows"], "read": False}
    assert emulator_admin.stats()["requests"]["get_cohort_users"] == pages

    publish = CohortShardPublishOperator(task_id="publish", destination=prefix, **SHARDS)
    summary = publish.execute(context)  # type: ignore[arg-type]
    assert summary["rows"] == summary["count"] == 1000
    published = tmp_path / "users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    ids = pq.read_table(published)["distinct_id"].to_pylist()
    assert len(ids) == len(set(ids)) == 1000

    (asset,) = publish.outlets
    assert isinstance(asset, Asset)
    event = context["outlet_events"][asset]
    assert event.extra["day"] == DAY and event.extra["rows"] == 1000
    assert event.extra["cohort_code"] == "cohort_small"
    assert event.extra["uri"].endswith("cohort_code=cohort_small/dt=2024-01-15/users.parquet")
    # only the publish task declares the destination
    assert plan.outlets == []
    assert step(CohortShardReadOperator, destination=prefix, **SHARDS).outlets == []


@pytest.mark.parametrize(
    "operator", [CohortShardPlanOperator, CohortShardReadOperator, CohortShardPublishOperator]
)
@pytest.mark.parametrize(
    "where", [{}, {"destination": "file:///tmp/users/", "iceberg_table": "analytics.users"}]
)
def test_each_step_needs_exactly_one_destination(operator: Any, where: dict[str, str]) -> None:
    with pytest.raises(AnalyticsValidationError, match="exactly one of destination"):
        step(operator, **SHARDS, **where)


@pytest.mark.parametrize(
    "operator", [CohortShardPlanOperator, CohortShardReadOperator, CohortShardPublishOperator]
)
@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"cohort_code": "../all"}, "cohort_code"),
        ({"cohort_code": "cohort_small", "limit": True}, "limit"),
        ({"cohort_code": "cohort_small", "properties": []}, "properties"),
    ],
)
def test_a_bad_cohort_argument_is_refused_before_any_request(
    operator: Any,
    arguments: dict[str, Any],
    field: str,
    platform: EmulatorServer,
    emulator_admin: EmulatorAdmin,
    tmp_path: Path,
) -> None:
    before = requests_made(emulator_admin)
    task = step(operator, destination=f"{tmp_path.as_uri()}/users/", **arguments)
    with pytest.raises(AnalyticsValidationError) as refused:
        task.execute(run_context(DAY))
    assert refused.value.field == field
    assert requests_made(emulator_admin) == before


@pytest.mark.parametrize("index", [5, -1, "2", None])
def test_a_shard_index_outside_the_plan_is_refused(
    index: Any, platform: EmulatorServer, tmp_path: Path
) -> None:
    prefix = f"{tmp_path.as_uri()}/users/"
    context = run_context(DAY)
    assert (
        len(
            CohortShardPlanOperator(task_id="plan", destination=prefix, **SHARDS).execute(
                context  # type: ignore[arg-type]
            )
        )
        == 5
    )
    read = CohortShardReadOperator(task_id="read", destination=prefix, shard_index=index, **SHARDS)
    with pytest.raises(AnalyticsValidationError) as refused:
        read.execute(context)  # type: ignore[arg-type]
    assert refused.value.field == "shard_index"
    assert not (tmp_path / "users/cohort_code=cohort_small/dt=2024-01-15").exists()


def planned_and_read(root: Path, context: Any, **arguments: Any) -> None:
    """The plan step and every read step of one run, with the same ``arguments``."""
    shards = step(CohortShardPlanOperator, **arguments).execute(context)
    for index in shards:
        step(CohortShardReadOperator, shard_index=index, **arguments).execute(context)


@pytest.mark.parametrize(
    ("other", "said"),
    [
        ({"limit": 300}, "limit None -> 300"),
        ({"properties": ["distinct_id", "$city"]}, "properties ("),
        ({"timezone": "Asia/Shanghai"}, "timezone 'UTC' -> 'Asia/Shanghai'"),
        ({"schema_overrides": {"register_time": "string"}}, "type 'timestamp"),
        ({"column_names": "ids"}, "name 'city' -> '$city'"),
        ({"id_property": "$city"}, "id_property 'distinct_id' -> '$city'"),
    ],
)
def test_a_step_whose_request_makes_another_plan_is_refused_by_name(
    platform: EmulatorServer, tmp_path: Path, other: dict[str, Any], said: str
) -> None:
    """Every step compares the plan its own request makes with the recorded one (the run's
    fingerprint) and names what differs: a read step does not read, and the publish step does
    not publish, the recorded plan's rows under settings it was not given."""
    context = run_context(DAY)
    common = {
        "destination": f"{tmp_path.as_uri()}/users/",
        "timezone": "UTC",
        "properties": ["distinct_id", "$city", "register_time"],
        **SHARDS,
    }
    planned_and_read(tmp_path, context, **common)
    for operator in (CohortShardReadOperator, CohortShardPublishOperator):
        with pytest.raises(ShardStagingError, match=re.escape(said)):
            step(operator, **{**common, **other}).execute(context)
    assert not (tmp_path / "users/cohort_code=cohort_small").exists()
    assert step(CohortShardPublishOperator, **common).execute(context)["rows"] == 1000


def test_another_cohorts_or_days_staging_is_refused_by_name(
    platform: EmulatorServer, tmp_path: Path
) -> None:
    """The plan records its cohort and day: another cohort's finished staging where this
    cohort's is looked for, or one object's single staging folder holding another cohort's or
    another day's plan, is refused by name, never published as this cohort's day."""
    context = run_context(DAY)
    prefix = {"destination": f"{tmp_path.as_uri()}/users/", **SHARDS}
    planned_and_read(tmp_path, context, **{**prefix, "cohort_code": "cohort_tiny"})
    staging = tmp_path / "users.staging"
    shutil.copytree(staging / "cohort_code=cohort_tiny", staging / "cohort_code=cohort_small")
    with pytest.raises(ShardStagingError, match="cohort_code 'cohort_tiny' -> 'cohort_small'"):
        step(CohortShardPublishOperator, **prefix).execute(context)
    assert not (tmp_path / "users/cohort_code=cohort_small").exists()

    one = {"destination": f"{tmp_path.as_uri()}/object/users.parquet", **SHARDS}
    planned_and_read(tmp_path, context, **{**one, "cohort_code": "cohort_tiny"})
    for operator in (CohortShardReadOperator, CohortShardPublishOperator):
        with pytest.raises(ShardStagingError, match="cohort_code 'cohort_tiny' -> 'cohort_"):
            step(operator, **one).execute(context)
    for operator in (CohortShardReadOperator, CohortShardPublishOperator):
        with pytest.raises(ShardStagingError, match="day '2024-01-15' -> '2024-01-16'"):
            step(operator, **{**one, "cohort_code": "cohort_tiny"}).execute(
                run_context("2024-01-16")
            )
    assert not (tmp_path / "object/users.parquet").exists()
