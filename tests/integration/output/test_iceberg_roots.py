"""Iceberg output through the one roots check (``[analytics] allowed_destinations``): the
staging of an export read in shards, the data files of a run, the files the migration
rewrites and the files maintenance deletes all lie under the allowed roots, or nothing is
written or deleted. On a real file system, a SQL catalog on SQLite, the emulator as the
platform."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.iceberg_maintenance import IcebergMaintenanceOperator
from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog

pytestmark = pytest.mark.integration

DAY = "2024-01-15"
ROOTS_OPTION = "AIRFLOW__ANALYTICS__ALLOWED_DESTINATIONS"


def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    """The ``iceberg_default`` catalog, its warehouse in ``tmp_path/wh``."""
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    connection = {"conn_type": "iceberg", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps(connection))
    return open_catalog("iceberg_default", catalog_properties(extra=extra))


def export(**kwargs: object) -> CohortExportToParquetOperator:
    return CohortExportToParquetOperator(
        task_id="users", cohort_code="cohort_small", iceberg_table="analytics.users", **kwargs
    )


def files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def test_iceberg_staging_outside_the_roots_is_refused_before_any_request(
    emulator: EmulatorServer, emulator_admin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``staging=`` names a folder outside the allowed roots: refused by name, before any
    request, and no part is written there."""
    use_connection(monkeypatch, emulator)
    lake(tmp_path, monkeypatch)
    monkeypatch.setenv(ROOTS_OPTION, f"{tmp_path.as_uri()}/wh/")
    outside = tmp_path / "outside"
    before = emulator_admin.stats()["requests"]
    operator = export(staging=f"{outside.as_uri()}/", mode="pages", page_size=100)

    with pytest.raises(AnalyticsValidationError) as refused:
        operator.execute(run_context(DAY))  # type: ignore[arg-type]
    assert refused.value.field == "staging"
    assert "[analytics] allowed_destinations" in str(refused.value)
    assert emulator_admin.stats()["requests"] == before
    assert files(outside) == []


def test_a_table_whose_files_would_land_outside_the_roots_is_not_written(
    emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog puts the table's data files outside the allowed roots: the run refuses
    the first one by name, and no data file is written."""
    use_connection(monkeypatch, emulator)
    catalog = lake(tmp_path, monkeypatch)
    monkeypatch.setenv(ROOTS_OPTION, f"{tmp_path.as_uri()}/allowed/")

    with pytest.raises(AnalyticsValidationError) as refused:
        export(mode="stream").execute(run_context(DAY))  # type: ignore[arg-type]
    assert refused.value.field == "iceberg data file"
    assert f"{tmp_path}/wh/" in str(refused.value)
    assert [path for path in files(tmp_path / "wh") if path.suffix == ".parquet"] == []
    assert catalog.load_table("analytics.users").current_snapshot() is None


def old_layout_table(catalog: Catalog, identifier: str) -> None:
    """A table of an earlier version: partitioned by ``dt`` alone, two rows."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, LongType, NestedField

    schema = Schema(
        NestedField(1, "user_id", LongType(), required=False),
        NestedField(2, "dt", DateType(), required=True),
    )
    catalog.create_namespace_if_not_exists(identifier.rpartition(".")[0])
    with (
        catalog.create_table_transaction(identifier, schema=schema) as create,
        create.update_spec() as spec,
    ):
        spec.add_identity("dt")
    day = dt.date.fromisoformat(DAY)
    arrow = pa.schema([("user_id", pa.int64()), pa.field("dt", pa.date32(), False)])
    catalog.load_table(identifier).append(pa.table({"user_id": [1, 2], "dt": [day, day]}, arrow))


def test_the_migration_writes_no_file_outside_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The migration command under ``[analytics] allowed_destinations`` that do not hold the
    table: refused by name, the table unchanged and no file written."""
    from airflow_provider_analytics.hooks.iceberg_migration import main

    catalog = lake(tmp_path, monkeypatch)
    old_layout_table(catalog, "analytics.old")
    before = set(files(tmp_path / "wh"))
    snapshots = len(catalog.load_table("analytics.old").snapshots())
    monkeypatch.setenv(ROOTS_OPTION, f"{tmp_path.as_uri()}/allowed/")

    with pytest.raises(SystemExit) as exited:
        main(["analytics.old", "cohort_code=vip"])
    assert exited.value.code == 2
    assert "allowed_destinations" in capsys.readouterr().err
    table = catalog.load_table("analytics.old")
    assert len(table.snapshots()) == snapshots
    assert "cohort_code" not in table.schema().column_names
    assert set(files(tmp_path / "wh")) == before


def test_maintenance_deletes_nothing_outside_the_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Orphan removal under roots that do not hold the table: refused by name, the orphan
    stays."""
    catalog = lake(tmp_path, monkeypatch)
    old_layout_table(catalog, "analytics.kept")
    location = catalog.load_table("analytics.kept").location().removeprefix("file://")
    orphan = Path(location) / "data" / "orphan.parquet"
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(b"not reached by the table")
    monkeypatch.setenv(ROOTS_OPTION, f"{tmp_path.as_uri()}/allowed/")
    operator = IcebergMaintenanceOperator(
        task_id="maintain",
        iceberg_tables=["analytics.kept"],
        snapshot_retention=dt.timedelta(0),
        orphan_file_age=dt.timedelta(0),
    )

    with pytest.raises(AnalyticsValidationError, match="allowed_destinations"):
        operator.execute({})  # type: ignore[arg-type]
    assert orphan.exists()
