"""Iceberg tables another tool made, in layouts a run cannot keep its rules in: each is refused
by name before the first request to the platform, and the refused run leaves the table as it
was (same metadata file: no column added, no snapshot, no property) and no data file.

Against the emulator on loopback and a SQL catalog on SQLite in a temporary folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import (
    BinaryType,
    DateType,
    ListType,
    LongType,
    NestedField,
    StringType,
    TimestampType,
)

from airflow_provider_analytics.core.errors import (
    AnalyticsValidationError,
    IcebergLayoutError,
    IcebergSchemaError,
)
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from collections.abc import Sequence

    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog
    from pyiceberg.types import IcebergType

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-10"
TABLE = "lake.users"


@pytest.fixture
def lake(emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    use_connection(monkeypatch, emulator)
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "iceberg", "extra": extra}))
    catalog = open_catalog("lake", catalog_properties(extra=extra))
    catalog.create_namespace("lake")
    return catalog


def export(table: str = TABLE, **arguments: Any) -> dict[str, Any]:
    operator = CohortExportToParquetOperator(
        task_id="users",
        cohort_code="cohort_tiny",
        iceberg_table=table,
        iceberg_conn_id="lake",
        properties=["distinct_id"],
        **arguments,
    )
    return operator.execute(run_context(DAY))  # type: ignore[arg-type]


def requests_made(admin: EmulatorAdmin) -> int:
    return sum(admin.stats()["requests"].values())


def foreign_table(
    catalog: Catalog,
    *,
    code: IcebergType | None = None,
    day: IcebergType | None = None,
    properties: dict[str, str] | None = None,
    columns: Sequence[NestedField] = (),
    partitions: Sequence[PartitionField] = (),
) -> None:
    """``lake.users`` as another tool makes it: optional columns (``columns`` after them,
    from field id 3), partitioned by identity(cohort_code) and identity(dt) (then
    ``partitions``, from id 1002)."""
    schema = Schema(
        NestedField(1, "cohort_code", code or StringType(), required=False),
        NestedField(2, "dt", day or DateType(), required=False),
        *columns,
    )
    spec = PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "cohort_code"),
        PartitionField(2, 1001, IdentityTransform(), "dt"),
        *partitions,
    )
    catalog.create_table(TABLE, schema=schema, partition_spec=spec, properties=properties or {})


def refused_untouched(
    catalog: Catalog, tmp_path: Path, admin: EmulatorAdmin, match: str
) -> IcebergLayoutError:
    """The export's refusal (matching ``match``), made before any request, the table left as
    it was and no data file written."""
    location = catalog.load_table(TABLE).metadata_location
    before = requests_made(admin)
    with pytest.raises(IcebergLayoutError, match=match) as refused:
        export()
    assert requests_made(admin) == before
    assert catalog.load_table(TABLE).metadata_location == location
    assert not list(tmp_path.glob("wh/**/*.parquet"))
    return refused.value


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("write.metadata.metrics.default", "none"),
        ("write.metadata.metrics.default", "counts"),
        ("write.metadata.metrics.column.dt", "none"),
        ("write.metadata.metrics.column.cohort_code", "None"),
        ("write.metadata.metrics.column.cohort_code", "truncate(4)"),
    ],
)
def test_metrics_that_lose_a_partition_columns_bounds_are_refused(
    lake: Catalog, tmp_path: Path, emulator_admin: EmulatorAdmin, key: str, value: str
) -> None:
    """Each data file's partition is read from its bounds: without them the files were
    committed in partition (null, null), so a rerun duplicated the day and a reader's filter
    on ``dt`` found nothing (or a bare TypeError escaped after the download)."""
    foreign_table(lake, properties={key: value})
    refused = refused_untouched(lake, tmp_path, emulator_admin, f"table property {key}=")
    assert "=full" in str(refused)


def test_metrics_kept_whole_for_the_partition_columns_are_written(
    lake: Catalog, emulator_admin: EmulatorAdmin
) -> None:
    """The default ``none`` with the partition columns kept whole: each run's day is its own."""
    none_but_partitions = {
        "write.metadata.metrics.default": "none",
        "write.metadata.metrics.column.cohort_code": "full",
        "write.metadata.metrics.column.dt": "truncate(1)",
    }
    foreign_table(lake, properties=none_but_partitions)
    first, again = export(), export()
    table = lake.load_table(TABLE)
    assert again["iceberg"]["replaced_files"] == first["iceberg"]["data_files"] == 1
    assert table.scan(row_filter=f"dt = '{DAY}'").to_arrow().num_rows == again["rows"] > 0


OPTIONAL = (
    NestedField(3, "distinct_id", StringType(), required=False),
    NestedField(4, "city", StringType(), required=False),
)


@pytest.mark.parametrize(
    ("partition", "named"),
    [
        (PartitionField(3, 1002, BucketTransform(16), "b"), r"bucket\[16\]\(distinct_id\)"),
        (PartitionField(4, 1002, IdentityTransform(), "c"), r"identity\(city\)"),
        (PartitionField(4, 1002, TruncateTransform(1), "c1"), r"truncate\[1\]\(city\)"),
    ],
    ids=["bucket", "identity", "truncate"],
)
def test_a_table_partitioned_by_more_is_refused_before_its_columns_change(
    lake: Catalog, tmp_path: Path, emulator_admin: EmulatorAdmin, partition: Any, named: str
) -> None:
    """Refused only at the commit, after the download, once the table had gained the run's
    columns (2-4 fields became 26-27)."""
    foreign_table(lake, columns=OPTIONAL, partitions=[partition])
    refused_untouched(lake, tmp_path, emulator_admin, f"partitioned by {named} besides")


@pytest.mark.parametrize(
    ("column", "named"),
    [
        (NestedField(3, "distinct_id", LongType(), required=True), "'distinct_id'"),
        (NestedField(3, "must_have", StringType(), required=True), "'must_have'"),
        (
            NestedField(3, "tags", ListType(4, StringType(), element_required=True)),
            "'tags.element'",
        ),
    ],
    ids=["held", "missing", "list element"],
)
def test_a_required_column_is_refused_not_made_optional(
    lake: Catalog, tmp_path: Path, emulator_admin: EmulatorAdmin, column: Any, named: str
) -> None:
    """pyiceberg's union by name quietly made another tool's required column optional; one
    the export lacks was refused only at the commit, after the download, with the table's
    columns already added."""
    foreign_table(lake, columns=[column])
    refused_untouched(lake, tmp_path, emulator_admin, f"columns \\[{named}\\] are required")


@pytest.mark.parametrize(
    ("types", "named"),
    [
        ({"code": BinaryType()}, "'cohort_code' is binary"),
        ({"code": LongType()}, "'cohort_code' is long"),
        ({"day": StringType()}, "'dt' is string"),
        ({"day": TimestampType()}, "'dt' is timestamp"),
    ],
    ids=["binary code", "long code", "string dt", "timestamp dt"],
)
def test_partition_columns_of_other_types_are_refused(
    lake: Catalog, tmp_path: Path, emulator_admin: EmulatorAdmin, types: Any, named: str
) -> None:
    """A binary ``cohort_code`` passed (string to binary counts as a promotion), then the
    day's delete raised a bare TypeError after the download."""
    foreign_table(lake, **types)
    refused_untouched(lake, tmp_path, emulator_admin, f"column {named} in the table")


def test_a_nested_namespace_the_catalog_lacks_is_refused_before_anything_is_made(
    lake: Catalog, tmp_path: Path, emulator_admin: EmulatorAdmin
) -> None:
    """The SQL catalog made namespaces ``a`` and ``a.b``, then refused the table with a bare
    ValueError once the stream had started."""
    before = requests_made(emulator_admin)
    with pytest.raises(AnalyticsValidationError, match="no nested namespaces") as refused:
        export("a.b.c")
    assert refused.value.field == "iceberg_table"
    assert requests_made(emulator_admin) == before
    assert lake.list_namespaces() == [("lake",)]
    assert not list(tmp_path.glob("wh/**/*.*"))


@pytest.mark.parametrize("fault", ["truncated metadata", "missing manifest list"])
def test_a_table_whose_metadata_cannot_be_read_is_refused_by_name(
    lake: Catalog, emulator_admin: EmulatorAdmin, fault: str
) -> None:
    """A truncated metadata file let pydantic's bare ValidationError out, a missing manifest
    list a bare FileNotFoundError after the download."""
    export()
    table = lake.load_table(TABLE)
    if fault == "truncated metadata":
        path = table.metadata_location
        text = '{"format-version": 2, "table-uuid": '
    else:
        path, text = table.current_snapshot().manifest_list, ""  # type: ignore[union-attr]
    written = Path(path.removeprefix("file://"))
    written.unlink()
    if text:
        written.write_text(text)
    before = requests_made(emulator_admin)
    with pytest.raises(IcebergSchemaError, match=f"{TABLE}: the table's metadata cannot be read"):
        export()
    assert requests_made(emulator_admin) == before
