"""Snapshot expiry and orphan-file removal through either of pyiceberg's FileIOs, on a SQL
catalog in a temporary folder; the operator's own checks. (A killed commit, on every catalog
and on S3: tests/iceberg_cases.py.)"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError, IcebergMaintenanceError
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
from airflow_provider_analytics.output.roots import allowed_roots

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


def lake_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A SQL catalog on SQLite, also the operator's ``iceberg_default`` connection."""
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    connection = {"conn_type": "iceberg", "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps(connection))
    return open_catalog("iceberg_default", catalog_properties(extra=extra))


def tree(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_a_location_holding_another_table_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another tool's ``lake.parent`` lies in the namespace folder that holds ``lake.t``:
    its orphan removal deleted lake.t's live data, metadata and manifests. Refused, naming
    lake.t, before its snapshots are expired; nothing written or deleted."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    catalog = lake_catalog(tmp_path, monkeypatch)
    write(catalog, 1, 1)
    schema = Schema(NestedField(1, "x", LongType(), required=False))
    parent = catalog.create_table(
        "lake.parent", schema=schema, location=f"file://{tmp_path}/wh/lake"
    )
    parent.append(pa.table({"x": pa.array([1], pa.int64())}))
    parent.append(pa.table({"x": pa.array([2], pa.int64())}))
    before = tree(tmp_path / "wh")

    with pytest.raises(IcebergMaintenanceError, match=r"lake\.parent: refused.*lake\.t\b"):
        maintain_table(
            catalog,
            "lake.parent",
            snapshot_retention=dt.timedelta(0),
            orphan_file_age=dt.timedelta(0),
        )
    assert tree(tmp_path / "wh") == before
    assert len(catalog.load_table("lake.parent").snapshots()) == 2
    assert catalog.load_table("lake.t").scan().to_arrow()["n"].to_pylist() == [1]
    # lake.t's own location holds no other table: maintained as before
    result = maintain_table(
        catalog, "lake.t", snapshot_retention=dt.timedelta(0), orphan_file_age=dt.timedelta(0)
    )
    assert result.orphan_files == []


def test_a_location_outside_the_roots_is_refused_before_expiry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The roots were checked after the expiry had committed (a new metadata file written
    where the roots forbid); now first, and nothing changes."""
    catalog = lake_catalog(tmp_path, monkeypatch)
    write(catalog, 1, 1)
    write(catalog, 1, 10)
    snapshots = len(catalog.load_table("lake.t").snapshots())
    before = tree(tmp_path / "wh")
    roots = [("test", allowed_roots(f"{tmp_path.as_uri()}/elsewhere/", "test"))]

    with pytest.raises(AnalyticsValidationError, match="iceberg table location"):
        maintain_table(
            catalog,
            "lake.t",
            snapshot_retention=dt.timedelta(0),
            orphan_file_age=dt.timedelta(0),
            allowed_roots=roots,
        )
    assert tree(tmp_path / "wh") == before
    assert len(catalog.load_table("lake.t").snapshots()) == snapshots > 1


@pytest.mark.parametrize("damage", ["truncated metadata", "manifest list gone"])
def test_unreadable_metadata_is_the_tables_error_and_nothing_is_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    """A truncated metadata file let pydantic's ValidationError out of the operator, a
    missing manifest list the builtin FileNotFoundError."""
    catalog = lake_catalog(tmp_path, monkeypatch)
    write(catalog, 1, 1)
    table = catalog.load_table("lake.t")
    local = Path(table.metadata_location.removeprefix("file://"))
    if damage == "truncated metadata":
        local.write_text('{"format-version": 2, "table-uuid": ')
    else:
        Path(table.current_snapshot().manifest_list.removeprefix("file://")).unlink()
    stray = Path(table.location().removeprefix("file://")) / "data" / "killed.parquet"
    stray.write_bytes(b"PAR1")
    before = tree(tmp_path / "wh")
    operator = IcebergMaintenanceOperator(
        task_id="m",
        iceberg_tables=["lake.t"],
        snapshot_retention=dt.timedelta(0),
        orphan_file_age=dt.timedelta(0),
    )

    with pytest.raises(IcebergMaintenanceError, match=r"^lake\.t: cannot read"):
        operator.execute({})  # type: ignore[arg-type]
    assert tree(tmp_path / "wh") == before


def test_files_outside_the_location_are_never_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``write.data.path`` elsewhere, a killed run's file there stays (that folder may
    hold other tables' files), as docs/howto/iceberg.md says; the table is unharmed."""
    catalog = lake_catalog(tmp_path, monkeypatch)
    write(catalog, 1, 1)
    elsewhere = tmp_path / "elsewhere"
    with catalog.load_table("lake.t").transaction() as change:
        change.set_properties({"write.data.path": elsewhere.as_uri()})
    write(catalog, 2, 2)
    stray = elsewhere / "killed-00000.parquet"
    stray.write_bytes(b"PAR1")

    result = maintain_table(
        catalog, "lake.t", snapshot_retention=dt.timedelta(0), orphan_file_age=dt.timedelta(0)
    )
    assert stray.exists() and len(list(elsewhere.rglob("*.parquet"))) == 2
    assert not [path for path in result.orphan_files if "elsewhere" in path]
    assert sorted(catalog.load_table("lake.t").scan().to_arrow()["n"].to_pylist()) == [1, 2]


@pytest.mark.parametrize("trouble", ["unreadable neighbour", "listing forbidden"])
def test_where_other_tables_lie_unknown_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trouble: str
) -> None:
    """Whether another table lies in the location cannot be told: refused by name, nothing
    expired or deleted (never pyiceberg's bare error)."""
    from pyiceberg.exceptions import ForbiddenError

    catalog = lake_catalog(tmp_path, monkeypatch)
    write(catalog, 1, 1)
    write(catalog, 1, 10)
    if trouble == "unreadable neighbour":
        other = catalog.create_table("lake.other", schema=catalog.load_table("lake.t").schema())
        Path(other.metadata_location.removeprefix("file://")).write_text("{")
        expected = r"lake\.t: refused, the location of lake\.other cannot be read"
    else:

        def forbidden(namespace: object) -> list[tuple[str, ...]]:
            raise ForbiddenError("not allowed to list tables")

        monkeypatch.setattr(catalog, "list_tables", forbidden)
        expected = r"lake\.t: refused, the catalog's tables cannot be listed.*not allowed"
    snapshots = len(catalog.load_table("lake.t").snapshots())
    before = tree(tmp_path / "wh")

    with pytest.raises(IcebergMaintenanceError, match=expected):
        maintain_table(
            catalog, "lake.t", snapshot_retention=dt.timedelta(0), orphan_file_age=dt.timedelta(0)
        )
    assert tree(tmp_path / "wh") == before
    assert len(catalog.load_table("lake.t").snapshots()) == snapshots > 1
