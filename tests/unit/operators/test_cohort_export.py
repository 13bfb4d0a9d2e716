"""The cohort export and its three shard steps take the cohort's arguments from one base class
(operators/cohort_export.py): each keyword argument keeps working on each of them, and only the
one-task export takes the writing options of a single task."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import pytest

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.cohort_shards import (
    CohortShardPlanOperator,
    CohortShardPublishOperator,
    CohortShardReadOperator,
)
from airflow_provider_analytics.operators.output import destination_asset

if TYPE_CHECKING:
    from airflow.sdk import BaseOperator

SHARED = {
    "cohort_code": "vip",
    "destination": "file:///data/cohorts/",
    "staging": "s3://lake/staging/",
    "properties": ["distinct_id", "$city"],
    "limit": 10,
    "timezone": "Europe/Paris",
    "schema_overrides": {"balance": "double"},
    "column_names": "ids",
    "schema_contract": "freeze",
    "page_size": 1_000,
    "shard_rows": 5_000,
    "attempts": 4,
    "id_property": "$city",
    "consistency": "strict",
}
STEPS: list[tuple[type[BaseOperator], dict[str, object]]] = [
    (CohortExportToParquetOperator, {}),
    (CohortShardPlanOperator, {}),
    (CohortShardReadOperator, {"shard_index": 2}),
    (CohortShardPublishOperator, {}),
]


@pytest.mark.parametrize(("cls", "own"), STEPS, ids=lambda value: getattr(value, "__name__", ""))
def test_every_shared_argument_reaches_each_operator(
    cls: type[BaseOperator], own: dict[str, object]
) -> None:
    task = cls(task_id="t", **SHARED, **own)
    settings = task.settings  # type: ignore[attr-defined]
    assert (settings.attempts, settings.schema_contract) == (4, "freeze")
    for name, value in SHARED.items():
        if name not in ("attempts", "schema_contract"):
            assert getattr(task, name) == value, name
    assert {"cohort_code", "destination", "properties", "limit"} <= set(task.template_fields)
    doc = inspect.getdoc(cls) or ""
    assert all(f":param {name}:" in doc for name in SHARED)


def test_only_the_one_task_export_takes_the_single_task_options() -> None:
    export = CohortExportToParquetOperator(
        task_id="export",
        **SHARED,
        compression="snappy",
        row_group_rows=1_000,
        progress_interval=5.0,
        mode="pages",
        max_parallel_shards=3,
    )
    assert (export.settings.compression, export.settings.row_group_rows) == ("snappy", 1_000)
    assert (export.settings.progress_interval, export.settings.attempts) == (5.0, 4)
    assert (export.mode, export.max_parallel_shards) == ("pages", 3)
    assert "mode" in export.template_fields
    assert "mode" not in CohortShardPlanOperator.template_fields
    with pytest.raises(Exception, match="compression"):
        CohortShardPlanOperator(task_id="plan", **SHARED, compression="snappy")


def test_only_the_publish_step_declares_the_destinations_asset() -> None:
    plan = CohortShardPlanOperator(task_id="plan", **SHARED)
    publish = CohortShardPublishOperator(task_id="publish", **SHARED)
    assert plan.outlets == []
    assert publish.outlets == [destination_asset("file:///data/cohorts/")]


@pytest.mark.parametrize("rendered", ["", " ", "Mars/Olympus"])
def test_a_timezone_that_renders_to_no_zone_is_refused_not_the_default(rendered: str) -> None:
    """``timezone="{{ params.tz }}"`` rendering ``""`` silently meant the project's zone."""
    from airflow_provider_analytics.core.errors import AnalyticsValidationError

    task = CohortExportToParquetOperator(task_id="t", **{**SHARED, "timezone": rendered})
    with pytest.raises(AnalyticsValidationError, match=r"^timezone: must be a time zone"):
        task.export_timezone  # noqa: B018 (a property that checks)
    assert CohortExportToParquetOperator(task_id="t", **SHARED).export_timezone == "Europe/Paris"
