"""The sharded export against the emulator playing the platform at scale, chosen through the
pytest plugin's marker: a cohort past the proxy cut, which the stream cannot carry, exports
completely in shards with the stream's values; a cohort recomputed while it is read (its
membership grows, shrinks or is exchanged between calls) is refused by name and nothing is
published."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.core.identity import cohort_identity
from airflow_provider_analytics.export import shards as cohort_shards
from airflow_provider_analytics.export.cohort_day import export_cohort_day
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.output.parquet_destination import ParquetDestination

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from analytics_emulator.testing import RunningEmulator

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
USERS = 30_000
PROPERTIES = ["distinct_id", "email", "age", "balance", "register_time", "interests"]
SHARDED = {"mode": "pages", "page_size": 2_000, "shard_rows": 6_000}


@pytest.fixture
def client(analytics_emulator: RunningEmulator) -> Iterator[AnalyticsClient]:
    config = ClientConfig(
        analytics_emulator.base_url,
        token=analytics_emulator.token.reveal(),
        app_key=analytics_emulator.app_key.reveal(),
        max_attempts=2,
        backoff_base=0.01,
    )
    with AnalyticsClient(config) as api:
        yield api


def export(client: AnalyticsClient, root: Path, code: str, **settings: Any) -> dict[str, Any]:
    return export_cohort_day(
        client,
        cohort_query(code, properties=PROPERTIES),
        ParquetDestination(f"{root.as_uri()}/users/", cohort_identity(code)),
        DAY,
        timezone="Asia/Shanghai",
        settings=ExportSettings(retry_delay=0.01),
        **settings,
    )


def published(root: Path, code: str) -> Any:
    return pq.read_table(root / f"users/cohort_code={code}/dt={DAY}/users.parquet")


@pytest.mark.analytics_emulator(
    cohorts={"past_the_cut": USERS, "same_users": USERS},
    proxy_cuts={"past_the_cut": {"rows": 10_000}},
)
def test_a_cohort_past_the_cut_exports_completely_in_shards(
    client: AnalyticsClient, analytics_emulator: RunningEmulator, tmp_path: Path
) -> None:
    with pytest.raises(AnalyticsError):  # the buffering proxy answers 504, every attempt
        export(client, tmp_path / "stream", "past_the_cut", mode="stream")
    assert list((tmp_path / "stream").rglob("*.parquet")) == []
    sharded = export(client, tmp_path / "pages", "past_the_cut", **SHARDED)
    assert sharded["rows"] == sharded["count"] == USERS and sharded["shards"] == 5
    # the same users streamed where no proxy cuts them: the same rows and values
    export(client, tmp_path / "uncut", "same_users", mode="stream")
    assert published(tmp_path / "pages", "past_the_cut").equals(
        published(tmp_path / "uncut", "same_users")
    )
    calls = analytics_emulator.admin.cohorts()["past_the_cut"]["calls"]
    assert calls >= 1 + USERS // SHARDED["page_size"]


@pytest.mark.parametrize("kind", ["grow", "shrink", "shift"])
def test_a_cohort_recomputed_while_read_is_refused_and_nothing_published(
    analytics_emulator: RunningEmulator, client: AnalyticsClient, tmp_path: Path, kind: str
) -> None:
    change = {"after_calls": 6, "kind": kind, "users": 500}
    analytics_emulator.admin.define_cohort("recomputed", USERS, membership_change=change)
    with pytest.raises(cohort_shards.CohortChangedError, match="changed while it was read"):
        export(client, tmp_path, "recomputed", **SHARDED)
    assert list((tmp_path / "users").rglob("*.parquet")) == []  # staged parts only
