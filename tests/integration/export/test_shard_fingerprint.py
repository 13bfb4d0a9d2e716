"""A sharded export's fingerprint: a try resumes another only when both make the same plan
(request, count, timezone, column names and types, id property), else it starts again saying
why; a part is finished only when its bytes are the ones its record names.

Each test kills a try after some shards (the shards read, nothing published), then resumes it
the way a retry or the next run does."""

from __future__ import annotations

import logging
import shutil
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.errors import CohortChangedError, ShardStagingError
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export import shards as cohort_shards
from airflow_provider_analytics.export.cohort_day import (
    export_cohort_day,
    publish_shards,
    shard_reader,
    start_shards,
)
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import prepare_export
from airflow_provider_analytics.output.parquet_destination import ParquetDestination

if TYPE_CHECKING:
    from pathlib import Path

    from airflow_provider_analytics.client import AnalyticsClient
    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
SHARDED = {"mode": "pages", "page_size": 100, "shard_rows": 250}
"""1000 users: 10 pages of 100, 2 pages a shard, 5 shards."""
PROPERTIES = ["distinct_id", "$city", "register_time", "tag_rfm"]
QUERY = cohort_query("cohort_small", properties=PROPERTIES)
"""The id, a preset (named ``city`` in warehouse naming), a datetime, and a tag."""


def destination(root: Path) -> ParquetDestination:
    return ParquetDestination(f"{root.as_uri()}/users/", cohort_identity("cohort_small"))


def killed_try(client: AnalyticsClient, root: Path, shards: int, **export: Any) -> None:
    """A try that read ``shards`` shards and was killed before publishing."""
    query = cohort_query("cohort_small", properties=PROPERTIES)
    prepared = prepare_export(client, query, **{"timezone": "Asia/Shanghai", **export})
    plan, reader = start_shards(client, prepared, destination(root), DAY, 100, 250)
    for shard in plan.shards[:shards]:
        reader.read(shard)


def resume(client: AnalyticsClient, root: Path, **export: Any) -> dict[str, Any]:
    query = cohort_query("cohort_small", properties=PROPERTIES)
    settings = {"timezone": "Asia/Shanghai", "settings": ExportSettings(retry_delay=0.01)}
    return export_cohort_day(client, query, destination(root), DAY, **SHARDED, **settings, **export)


def published(root: Path) -> Any:
    path = root / "users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    return pq.read_table(path).sort_by("distinct_id")


def staging_part(root: Path, index: int) -> Path:
    return root / f"users.staging/cohort_code=cohort_small/dt={DAY}/part-{index:05d}.parquet"


def page_calls(admin: EmulatorAdmin) -> int:
    return int(admin.stats()["requests"].get("get_cohort_users", 0))


def test_a_try_in_utc_resumed_in_shanghai_starts_again_and_says_why(
    client: AnalyticsClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two shards read in UTC are not mixed into a day read in Asia/Shanghai: every datetime
    of the published day is what a whole run in Asia/Shanghai gives."""
    killed_try(client, tmp_path / "a", 2, timezone="UTC")
    with caplog.at_level(logging.WARNING):
        resume(client, tmp_path / "a")
    resume(client, tmp_path / "b")  # a run of its own, all in Asia/Shanghai
    assert published(tmp_path / "a").equals(published(tmp_path / "b"))
    (said,) = [r.getMessage() for r in caplog.records if "another run" in r.getMessage()]
    assert "timezone 'UTC' -> 'Asia/Shanghai'" in said and "starting over" in said


def test_a_try_with_ids_resumed_with_warehouse_names_starts_again(
    client: AnalyticsClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Parts written under the platform's ids are removed, not merged with parts under
    warehouse names (which failed every retry and every new run on the same staging)."""
    killed_try(client, tmp_path, 3, column_names="ids")
    with caplog.at_level(logging.WARNING):
        result = resume(client, tmp_path)
    assert result["rows"] == 1000
    assert published(tmp_path).column_names == [
        "distinct_id",
        "city",
        "register_time",
        "tag_tag_rfm",
    ]
    assert any("column '$city' name '$city' -> 'city'" in r.getMessage() for r in caplog.records)
    # the next run finds nothing of either try left behind
    assert not any((tmp_path / "users.staging").rglob("*.parquet"))


def test_other_schema_overrides_start_again(client: AnalyticsClient, tmp_path: Path) -> None:
    """A column typed otherwise (here a datetime as a string, then as the plan's type) is part of
    the fingerprint as the names are."""
    killed_try(client, tmp_path / "a", 2, schema_overrides={"register_time": "string"})
    resume(client, tmp_path / "a")
    resume(client, tmp_path / "b")
    assert published(tmp_path / "a").equals(published(tmp_path / "b"))


@pytest.mark.parametrize("damage", ["emptied", "replaced by another shard's part"])
def test_a_part_that_is_not_the_one_recorded_is_read_again(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path, damage: str
) -> None:
    """A part overwritten after its record was written (with zero bytes, or with another
    valid part of as many rows) is not finished: the resumed try reads that shard again."""
    killed_try(client, tmp_path, 3)
    if damage == "emptied":
        staging_part(tmp_path, 1).write_bytes(b"")
    else:
        shutil.copyfile(staging_part(tmp_path, 0), staging_part(tmp_path, 1))
    before = page_calls(emulator_admin)
    result = resume(client, tmp_path)
    # a one-row call to plan, the 2 pages of shard 1 and 4 of the two shards left, the last
    # count, and the first page of each of the 5 shards read again
    assert page_calls(emulator_admin) - before == 1 + 2 + 4 + 1 + 5
    assert result["rows"] == published(tmp_path).num_rows == 1000
    assert len(set(published(tmp_path).column("distinct_id").to_pylist())) == 1000


def test_publication_refuses_a_part_that_is_not_the_one_recorded(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    killed_try(client, tmp_path, 5)
    staging_part(tmp_path, 4).write_bytes(b"")
    plan = cohort_shards.read_plan(staging_part(tmp_path, 0).parent)
    with pytest.raises(CohortChangedError, match=r"shards \[4\] are not read yet \(or their"):
        publish_shards(client, plan, destination(tmp_path), DAY)
    assert not (tmp_path / "users/cohort_code=cohort_small").exists()


def test_a_read_step_whose_settings_make_another_plan_is_refused_by_name(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    """The mapped read step of the three-step pattern cannot start over (the plan step owns the
    staging): given another timezone than the plan's, it names the difference."""
    killed_try(client, tmp_path, 0, timezone="UTC")
    with pytest.raises(ShardStagingError, match="timezone 'UTC' -> 'Asia/Shanghai'"):
        shard_reader(client, QUERY, destination(tmp_path), DAY, timezone="Asia/Shanghai")
    with pytest.raises(ShardStagingError, match="id_property 'distinct_id' -> 'tag_rfm'"):
        shard_reader(client, QUERY, destination(tmp_path), DAY, "tag_rfm", timezone="UTC")
    reader = shard_reader(client, QUERY, destination(tmp_path), DAY, timezone="UTC")
    assert reader.plan.timezone == "UTC"
