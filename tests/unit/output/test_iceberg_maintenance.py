"""Snapshot expiry and orphan-file removal through either of pyiceberg's FileIOs, on a SQL
catalog in a temporary folder; the operator's own checks. (A killed commit, on every catalog
and on S3: tests/iceberg_cases.py.)"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.operators.iceberg_maintenance import IcebergMaintenanceOperator
from airflow_provider_analytics.output.iceberg import (
    IcebergDayWriter,
    catalog_properties,
    open_catalog,
)
from airflow_provider_analytics.output.iceberg_maintenance import (
    file_key,
    list_files,
    maintain_table,
    reachable_files,
)

if TYPE_CHECKING:
    from pathlib import Path

COHORT = Identity("cohort_code", "vip")


def write(catalog, day: int, value: int) -> None:
    writer = IcebergDayWriter(catalog, "lake.t", dt.date(2024, 1, day), identity=COHORT)
    data = pa.table({"n": pa.array([value], pa.int64())})
    writer.open(data.schema)
    writer.write(data)
    writer.commit()


@pytest.mark.parametrize(
    "io", ["pyiceberg.io.pyarrow.PyArrowFileIO", "pyiceberg.io.fsspec.FsspecFileIO"]
)
def test_expiry_then_orphans_leave_exactly_what_the_table_reaches(tmp_path: Path, io: str) -> None:
    extra = {
        "uri": f"sqlite:///{tmp_path}/catalog.db",
        "warehouse": f"file://{tmp_path}/wh",
        "py-io-impl": io,
    }
    catalog = open_catalog("lake", catalog_properties(extra=extra))
    write(catalog, 1, 1)
    write(catalog, 1, 10)  # a rerun: the first file is reached by the first snapshot only
    write(catalog, 2, 2)
    table = catalog.load_table("lake.t")
    stray = f"{table.location()}/data/dt=2024-01-03/killed-00000.parquet"
    with table.io.new_output(stray).create() as out:
        out.write(b"PAR1 written by a run that never committed")
    now = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)

    young = maintain_table(
        catalog,
        "lake.t",
        snapshot_retention=dt.timedelta(days=1),
        orphan_file_age=dt.timedelta(hours=1),
        now=now,
    )
    assert (young.expired_snapshots, young.orphan_files) == ([], [])

    kept_last = 2
    result = maintain_table(
        catalog,
        "lake.t",
        snapshot_retention=dt.timedelta(0),
        retain_last=kept_last,
        orphan_file_age=dt.timedelta(0),
        now=now,
    )
    table = catalog.load_table("lake.t")
    assert len(result.expired_snapshots) == 2 and result.snapshots_kept == kept_last
    assert len(table.snapshots()) == kept_last
    assert file_key(stray) in {file_key(path) for path in result.orphan_files}
    files = {file_key(path) for path, _ in list_files(table.io, table.location())}
    assert files == reachable_files(table)
    assert sorted(table.scan().to_arrow()["n"].to_pylist()) == [2, 10]


def test_file_keys_spell_one_location_one_way() -> None:
    assert file_key("s3a://lake/a/b.parquet") == file_key("s3://lake/a/b.parquet")
    assert file_key("/data/a.parquet") == file_key("file:///data/a.parquet")


def test_the_operator_refuses_what_it_cannot_use() -> None:
    with pytest.raises(AnalyticsValidationError, match="orphan_file_age"):
        IcebergMaintenanceOperator(
            task_id="m", iceberg_tables="a.b", orphan_file_age=dt.timedelta(hours=-1)
        )
    with pytest.raises(AnalyticsValidationError, match="retain_last"):
        IcebergMaintenanceOperator(task_id="m", iceberg_tables="a.b", retain_last=0)
    operator = IcebergMaintenanceOperator(task_id="m", iceberg_tables=["a.b", "no_namespace"])
    with pytest.raises(AnalyticsValidationError, match="iceberg_tables"):
        operator.execute({})  # type: ignore[arg-type]


def test_an_age_reaching_past_the_calendar_keeps_everything(tmp_path: Path) -> None:
    """``timedelta.max`` as a retention or an orphan age let a bare OverflowError out."""
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    catalog = open_catalog("lake", catalog_properties(extra=extra))
    write(catalog, 1, 1)
    write(catalog, 1, 10)
    table = catalog.load_table("lake.t")
    snapshots = len(table.snapshots())
    stray = f"{table.location()}/data/killed-00000.parquet"
    with table.io.new_output(stray).create() as out:
        out.write(b"PAR1")
    result = maintain_table(
        catalog,
        "lake.t",
        snapshot_retention=dt.timedelta.max,
        orphan_file_age=dt.timedelta.max,
    )
    assert (result.expired_snapshots, result.orphan_files) == ([], [])
    assert len(catalog.load_table("lake.t").snapshots()) == snapshots > 1
    assert table.io.new_input(stray).exists()
