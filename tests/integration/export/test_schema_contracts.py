"""Schema contracts through the cohort export operator, against the emulator, into a Parquet
prefix and an Iceberg table alike.

A property is added to the tracking plan between two days (through the platform's own API):
``evolve`` writes it, ``freeze`` refuses the day by name with no export request sent and
nothing written, ``discard_new`` writes the destination's columns and names the new one. A
type the destination holds otherwise is refused under every contract, before any export
request.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from analytics_emulator import catalog as emulator_catalog

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.cohort_shards import (
    CohortShardPlanOperator,
    CohortShardPublishOperator,
    CohortShardReadOperator,
)
from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog
from tests.emulator_helpers import EmulatorAdmin
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer

pytestmark = pytest.mark.integration

FIRST, SECOND = "2024-01-10", "2024-01-11"
TABLE = "analytics.cohort_users"
ASKING = ("get_cohort_users", "export_cohort_users")
"""The operations that ask for the cohort (its size, its pages, its stream)."""


class Lake:
    """A Parquet prefix or an Iceberg table, written by the operator and read back."""

    def __init__(self, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kind = kind
        self.prefix = f"file://{tmp_path}/lake/"
        extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
        if kind == "iceberg":
            connection = json.dumps({"conn_type": "iceberg", "extra": extra})
            monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", connection)
            self.catalog = open_catalog("iceberg_default", catalog_properties(extra=extra))
        self.days = tmp_path / "lake" / "cohort_code=cohort_tiny"

    def export(
        self, day: str, operator: type[Any] = CohortExportToParquetOperator, **kwargs: Any
    ) -> Any:
        where: dict[str, Any] = {"destination": self.prefix}
        if self.kind == "iceberg":
            where = {"iceberg_table": TABLE}
        task = operator(task_id="users", cohort_code="cohort_tiny", **where, **kwargs)
        return task.execute(run_context(day))

    def columns(self, day: str) -> list[str]:
        """The columns the day reads with (Iceberg: the table's but the identity and dt)."""
        if self.kind == "iceberg":
            table = self.catalog.load_table(TABLE)
            rows = table.scan(row_filter=f"dt = '{day}'").to_arrow()
            assert rows.num_rows == 7
            return [name for name in rows.column_names if name not in ("cohort_code", "dt")]
        return pq.read_schema(self.days / f"dt={day}" / "users.parquet").names

    def written(self, day: str) -> bool:
        if self.kind == "iceberg":
            table = self.catalog.load_table(TABLE)
            return table.scan(row_filter=f"dt = '{day}'").to_arrow().num_rows > 0
        return (self.days / f"dt={day}").exists()


@pytest.fixture(params=["parquet", "iceberg"])
def lake(
    request: pytest.FixtureRequest,
    fresh_emulator: EmulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Lake:
    use_connection(monkeypatch, fresh_emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)
    return Lake(request.param, tmp_path, monkeypatch)


@pytest.fixture
def admin(fresh_emulator: EmulatorServer) -> Iterator[EmulatorAdmin]:
    admin = EmulatorAdmin(fresh_emulator)
    yield admin
    admin.close()


def add_to_plan(server: EmulatorServer, prop: str = "loyalty_tier") -> None:
    config = ClientConfig(server.base_url, token=server.config.token, app_key=server.config.app_key)
    with AnalyticsClient(config) as client:
        client.add_user_property(prop, "string", name="Loyalty tier")


def asked(admin: EmulatorAdmin) -> int:
    return sum(admin.stats()["requests"].get(name, 0) for name in ASKING)


def test_freeze_refuses_a_changed_plan_before_any_export_request(
    lake: Lake, admin: EmulatorAdmin, fresh_emulator: EmulatorServer
) -> None:
    first = lake.export(FIRST, schema_contract="freeze")  # nothing to meet: written as it is
    assert "loyalty_tier" not in first["columns"]
    add_to_plan(fresh_emulator)
    before = asked(admin)
    with pytest.raises(AnalyticsValidationError) as refused:
        lake.export(SECOND, schema_contract="freeze")
    assert "schema_contract: 'freeze' refuses" in str(refused.value)
    assert "'loyalty_tier' added" in str(refused.value)
    assert asked(admin) == before  # neither the size nor the stream was asked for
    assert not lake.written(SECOND)
    with pytest.raises(AnalyticsValidationError, match="'loyalty_tier' added"):
        lake.export(SECOND, CohortShardPlanOperator, schema_contract="freeze")
    assert asked(admin) == before  # the shards' plan step is refused the same way
    if lake.kind == "iceberg":
        assert "loyalty_tier" not in lake.catalog.load_table(TABLE).schema().column_names


@pytest.mark.parametrize("mode", ["stream", "pages"])
def test_discard_new_writes_the_known_columns_and_names_the_new_ones(
    lake: Lake, fresh_emulator: EmulatorServer, mode: str
) -> None:
    lake.export(FIRST)
    known = lake.columns(FIRST)
    add_to_plan(fresh_emulator)
    second = lake.export(SECOND, schema_contract="discard_new", mode=mode)
    assert second["discarded_columns"] == ["loyalty_tier"]
    assert second["rows"] == 7
    assert lake.columns(SECOND) == known
    assert list(second["column_ids"]) == known


def test_the_three_shard_steps_discard_a_new_column_an_override_names(
    lake: Lake, fresh_emulator: EmulatorServer
) -> None:
    """The plan step checks the override against every property asked for; the read and
    publish steps decide the columns again from the recorded plan, which lacks the discarded
    column, and pass its override over instead of refusing it."""
    lake.export(FIRST)
    known = lake.columns(FIRST)
    add_to_plan(fresh_emulator)
    steps = {"schema_contract": "discard_new", "schema_overrides": {"loyalty_tier": "string"}}
    shards = lake.export(SECOND, CohortShardPlanOperator, **steps)
    for index in shards:
        lake.export(SECOND, CohortShardReadOperator, shard_index=index, **steps)
    published = lake.export(SECOND, CohortShardPublishOperator, **steps)
    assert published["rows"] == 7
    assert lake.columns(SECOND) == known
    with pytest.raises(AnalyticsValidationError, match="name columns that are not exported"):
        lake.export(SECOND, CohortShardPlanOperator, schema_overrides={"no_such_column": "string"})


def test_evolve_writes_the_new_column(lake: Lake, fresh_emulator: EmulatorServer) -> None:
    lake.export(FIRST)
    known = lake.columns(FIRST)
    add_to_plan(fresh_emulator)
    second = lake.export(SECOND)
    assert second["discarded_columns"] == []
    assert lake.columns(SECOND) == [*known, "loyalty_tier"]


@pytest.mark.parametrize("contract", ["evolve", "freeze", "discard_new"])
def test_a_changed_type_is_refused_by_name_under_every_contract(
    lake: Lake, admin: EmulatorAdmin, contract: str
) -> None:
    lake.export(FIRST, schema_overrides={"age": "string"})
    before = asked(admin)
    with pytest.raises(AnalyticsValidationError, match=r"'age' type string -> int64"):
        lake.export(SECOND, schema_contract=contract)
    assert asked(admin) == before
    assert not lake.written(SECOND)


def test_freeze_meets_the_columns_of_the_one_object_a_run_replaces(
    admin: EmulatorAdmin,
    fresh_emulator: EmulatorServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A destination naming one object (no prefix) holds that object's columns: freeze meets
    them as it meets an earlier day's."""
    use_connection(monkeypatch, fresh_emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)
    target = tmp_path / "vip" / "users.parquet"

    def export(**kwargs: Any) -> Any:
        task = CohortExportToParquetOperator(
            task_id="users", cohort_code="cohort_tiny", destination=f"file://{target}", **kwargs
        )
        return task.execute(run_context(SECOND))

    export(schema_contract="freeze")  # nothing there yet: written as it is
    known = pq.read_schema(target)
    add_to_plan(fresh_emulator)
    before = asked(admin)
    with pytest.raises(AnalyticsValidationError, match="'loyalty_tier' added"):
        export(schema_contract="freeze")
    assert asked(admin) == before
    assert pq.read_schema(target) == known
    assert export(schema_contract="discard_new")["discarded_columns"] == ["loyalty_tier"]
