"""Many cohorts and reports in one destination, through the operators: nothing is lost.

- two cohorts exported to one prefix, and to one Iceberg table, on one day both stay;
- two funnels with different steps written to one Iceberg table, and to one prefix, both stay;
- an object URI that holds another cohort is refused before any request;
- a prefix or table laid out by an earlier version is refused by name, and the migration
  command migrates a table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import requests_mock as rm
from analytics_emulator import catalog as emulator_catalog

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from airflow_provider_analytics.output.iceberg import (
    IcebergLayoutError,
    catalog_properties,
    open_catalog,
)
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
STARTUP = {"expression": "event.$startup", "filter": None}
FUNNELS = {
    "to_cart": [STARTUP, {"expression": "event.add_to_cart", "filter": None}],
    "to_purchase": [STARTUP, {"expression": "event.purchase", "filter": None}],
}


@pytest.fixture
def platform(emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> EmulatorServer:
    use_connection(monkeypatch, emulator, timezone=emulator_catalog.PROJECT_TIMEZONE)
    return emulator


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    connection = json.dumps({"conn_type": "iceberg", "extra": extra})
    monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", connection)
    return open_catalog("iceberg_default", catalog_properties(extra=extra))


def export(code: str, **destination: Any) -> dict[str, Any]:
    operator = CohortExportToParquetOperator(
        task_id=f"users_{code}", cohort_code=code, properties=["distinct_id"], **destination
    )
    return operator.execute(run_context(DAY))  # type: ignore[arg-type]


def funnel(key: str | None, steps: list[dict[str, Any]], **destination: Any) -> dict[str, Any]:
    operator = FunnelReportOperator(
        task_id="funnel",
        request={"steps": steps, "crowds": ["$ALL"]},
        report_key=key,
        **destination,
    )
    return operator.execute(run_context(DAY))  # type: ignore[arg-type]


@pytest.mark.usefixtures("platform")
def test_two_cohorts_of_one_day_share_a_prefix_and_a_table(tmp_path: Path, lake: Catalog) -> None:
    for code in ("cohort_small", "cohort_tiny"):
        export(code, destination=f"{tmp_path.as_uri()}/users/")
        export(code, iceberg_table="analytics.users")
    export("cohort_tiny", destination=f"{tmp_path.as_uri()}/users/")  # a rerun of one
    export("cohort_tiny", iceberg_table="analytics.users")
    sizes = {"cohort_small": 1000, "cohort_tiny": 7}
    files = ds.dataset(tmp_path / "users", format="parquet", partitioning="hive").to_table()
    table = lake.load_table("analytics.users").scan().to_arrow()
    for rows in (files, table):
        counts = rows.group_by("cohort_code").aggregate([("distinct_id", "count")]).to_pylist()
        assert {row["cohort_code"]: row["distinct_id_count"] for row in counts} == sizes
    schema = pq.read_schema(tmp_path / "users/cohort_code=cohort_tiny/dt=2024-01-15/users.parquet")
    assert schema.metadata[b"analytics.identity"] == b"cohort_code=cohort_tiny"


@pytest.mark.usefixtures("platform")
def test_two_funnels_share_a_table_and_a_prefix(tmp_path: Path, lake: Catalog) -> None:
    summaries = {
        key: funnel(key, steps, iceberg_table="analytics.funnels") for key, steps in FUNNELS.items()
    }
    unnamed = funnel(None, FUNNELS["to_cart"], iceberg_table="analytics.funnels")
    assert unnamed["report_key"].startswith("funnel_")
    for key, steps in FUNNELS.items():
        funnel(key, steps, destination=f"{tmp_path.as_uri()}/reports/")
    totals = lake.load_table("analytics.funnels_totals").scan().to_arrow()
    files = ds.dataset(
        tmp_path / "reports/funnel_totals", format="parquet", partitioning="hive"
    ).to_table()
    for rows, keys in ((totals, {*FUNNELS, unnamed["report_key"]}), (files, set(FUNNELS))):
        assert set(rows.column("report_key").to_pylist()) == keys
        for key in FUNNELS:
            steps = rows.filter(pa.compute.equal(rows.column("report_key"), key))
            expected = [step["expression"].removeprefix("event.") for step in FUNNELS[key]]
            assert sorted(set(steps.column("step_event").to_pylist())) == sorted(expected)
    assert summaries["to_cart"]["report_key"] == "to_cart"


def test_an_object_holding_another_cohort_is_refused_before_any_request(
    platform: EmulatorServer, tmp_path: Path
) -> None:
    target = f"{tmp_path.as_uri()}/users.parquet"
    export("cohort_tiny", destination=target)
    before = (tmp_path / "users.parquet").read_bytes()
    with rm.Mocker() as mock, pytest.raises(AnalyticsValidationError) as caught:
        export("cohort_small", destination=target)
    assert mock.request_history == []
    assert caught.value.field == "destination"
    assert "holds cohort_code=cohort_tiny" in str(caught.value)
    assert (tmp_path / "users.parquet").read_bytes() == before
    export("cohort_tiny", destination=target)  # its own cohort replaces it


def test_a_prefix_of_an_earlier_version_is_refused_with_the_move(
    platform: EmulatorServer, tmp_path: Path
) -> None:
    old = tmp_path / "users" / "cohort=cohort_tiny" / "dt=2024-01-14"
    old.mkdir(parents=True)
    pq.write_table(pa.table({"distinct_id": [1]}), old / "users.parquet")
    with rm.Mocker() as mock, pytest.raises(AnalyticsValidationError, match="move that folder"):
        export("cohort_tiny", destination=f"{tmp_path.as_uri()}/users/")
    assert mock.request_history == []
    reports = tmp_path / "reports" / "funnel" / "dt=2024-01-14"
    reports.mkdir(parents=True)
    with rm.Mocker() as mock, pytest.raises(AnalyticsValidationError, match="report_key=old"):
        funnel("old", FUNNELS["to_cart"], destination=f"{tmp_path.as_uri()}/reports/")
    assert mock.request_history == []


def test_a_table_of_an_earlier_version_is_refused_then_migrated_by_the_command(
    platform: EmulatorServer, lake: Catalog
) -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, LongType, NestedField

    lake.create_namespace("analytics")
    schema = Schema(
        NestedField(1, "distinct_id", LongType(), required=False),
        NestedField(2, "dt", DateType(), required=True),
    )
    with (
        lake.create_table_transaction("analytics.users", schema=schema) as create,
        create.update_spec() as spec,
    ):
        spec.add_identity("dt")
    rows = pa.table(
        {"distinct_id": pa.array([7], pa.int64()), "dt": pa.array([pa.scalar(0, pa.date32())])},
        schema=pa.schema([("distinct_id", pa.int64()), pa.field("dt", pa.date32(), False)]),
    )
    lake.load_table("analytics.users").append(rows)
    with pytest.raises(IcebergLayoutError, match="iceberg_migration"):
        export("cohort_tiny", iceberg_table="analytics.users")

    command = [sys.executable, "-m", "airflow_provider_analytics.hooks.iceberg_migration"]
    target = ["analytics.users", "cohort_code=cohort_old"]
    dry = subprocess.run([*command, *target, "--dry-run"], capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout.splitlines()[-1])["days"] == ["1970-01-01"]
    done = subprocess.run(command + target, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["migrated"] is True
    bad = subprocess.run([*command, "analytics.users", "team=x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "cohort_code=<code> or report_key=<key>" in bad.stderr

    export("cohort_tiny", iceberg_table="analytics.users")
    table = lake.load_table("analytics.users").scan().to_arrow()
    counts = table.group_by("cohort_code").aggregate([("distinct_id", "count")]).to_pylist()
    assert {row["cohort_code"]: row["distinct_id_count"] for row in counts} == {
        "cohort_old": 1,
        "cohort_tiny": 7,
    }
