"""Migrating an earlier version's Iceberg table (partitioned by ``dt`` alone) to the identity
layout, on a SQL catalog in a temporary folder: a dry run changes nothing; the migration gives
every old row the identity (one commit for the schema, one for the rows) and is not repeated;
a table that is not the provider's is refused by name with nothing changed. (The same migration
on every catalog, and the writer's refusal before it: ``case_old_layout_is_refused_then_migrated``
in tests/iceberg_cases.py.)"""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.types import DateType, LongType, NestedField, StringType

from airflow_provider_analytics.core.errors import IcebergCommitError, IcebergSchemaError
from airflow_provider_analytics.core.identity import Identity
from airflow_provider_analytics.output.iceberg import (
    COMMIT_PROPERTY,
    IDENTITY_PROPERTY,
    catalog_properties,
    open_catalog,
)
from airflow_provider_analytics.output.iceberg_migration import migrate_to_identity

if TYPE_CHECKING:
    from pathlib import Path

    from pyiceberg.catalog import Catalog

DAYS = [dt.date(2024, 1, 10), dt.date(2024, 1, 11)]
COHORT = Identity("cohort_code", "to_cart")
ARROW = pa.schema([("user_id", pa.int64()), pa.field("dt", pa.date32(), False)])


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    return open_catalog("lake", catalog_properties(extra=extra))


def old_table(catalog: Catalog, identifier: str, *fields: NestedField, spec: str = "dt") -> None:
    """A table as 0.1.0 wrote it: ``user_id`` and ``dt``, partitioned by ``spec``, two rows a
    day for each of ``DAYS``."""
    schema = Schema(
        NestedField(1, "user_id", LongType(), required=False),
        NestedField(2, "dt", DateType(), required=True),
        *fields,
    )
    catalog.create_namespace_if_not_exists(identifier.partition(".")[0])
    with (
        catalog.create_table_transaction(identifier, schema=schema) as create,
        create.update_spec() as update,
    ):
        update.add_identity(spec)
    table = catalog.load_table(identifier)
    for n, day in enumerate(DAYS):
        rows = {"user_id": [n * 10, n * 10 + 1], "dt": [day, day]}
        extra = {field.name: [None, None] for field in fields}
        table.append(
            pa.table(rows | extra, schema=ARROW.append(pa.field("cohort_code", pa.string())))
            if fields
            else pa.table(rows, schema=ARROW)
        )


def test_a_dry_run_names_the_days_and_changes_nothing(catalog: Catalog) -> None:
    old_table(catalog, "lake.users_daily")
    before = catalog.load_table("lake.users_daily")
    summary = migrate_to_identity(catalog, "lake.users_daily", COHORT, dry_run=True)
    assert summary == {
        "table": "lake.users_daily",
        "identity": "cohort_code=to_cart",
        "dry_run": True,
        "days": ["2024-01-10", "2024-01-11"],
        "rows": 0,
        "migrated": False,
    }
    after = catalog.load_table("lake.users_daily")
    assert after.schema().column_names == before.schema().column_names == ["user_id", "dt"]
    assert len(after.snapshots()) == len(before.snapshots())


def test_every_old_row_gets_the_identity_once(catalog: Catalog) -> None:
    old_table(catalog, "lake.users_daily")
    before = catalog.load_table("lake.users_daily")
    snapshots, commits = len(before.snapshots()), len(before.metadata.metadata_log)
    summary = migrate_to_identity(catalog, "lake.users_daily", COHORT)
    assert (summary["migrated"], summary["rows"]) == (True, 4)
    assert summary["days"] == ["2024-01-10", "2024-01-11"]

    table = catalog.load_table("lake.users_daily")
    assert table.schema().find_field("cohort_code").field_type == StringType()
    assert [field.name for field in table.spec().fields] == ["dt", "cohort_code"]
    rows = table.scan().to_arrow().sort_by("user_id").to_pylist()
    assert [(row["user_id"], row["cohort_code"]) for row in rows] == [
        (0, "to_cart"),
        (1, "to_cart"),
        (10, "to_cart"),
        (11, "to_cart"),
    ]
    # two catalog commits: the schema and spec, then the rows swapped (old out, new in) at once
    assert len(table.metadata.metadata_log) == commits + 2
    swapped = [snapshot.summary for snapshot in table.snapshots()[snapshots:]]
    assert [summary.operation for summary in swapped] == [Operation.OVERWRITE, Operation.APPEND]
    for properties in (summary.additional_properties for summary in swapped):
        assert properties[IDENTITY_PROPERTY] == "cohort_code=to_cart"
        assert properties[COMMIT_PROPERTY] == "migration"

    again = migrate_to_identity(catalog, "lake.users_daily", COHORT)
    assert (again["migrated"], again["days"], again["rows"]) == (False, [], 0)
    assert len(catalog.load_table("lake.users_daily").metadata.metadata_log) == commits + 2


def test_a_table_not_partitioned_by_day_is_not_the_providers(catalog: Catalog) -> None:
    old_table(catalog, "lake.other", spec="user_id")
    with pytest.raises(IcebergSchemaError, match=r"not partitioned by identity\(dt\)"):
        migrate_to_identity(catalog, "lake.other", COHORT)


def test_a_column_of_the_identitys_name_that_is_no_partition_is_refused(
    catalog: Catalog,
) -> None:
    column = NestedField(3, "cohort_code", StringType(), required=False)
    old_table(catalog, "lake.users", column)
    before = catalog.load_table("lake.users")
    with pytest.raises(IcebergSchemaError, match="'cohort_code' that is not a partition"):
        migrate_to_identity(catalog, "lake.users", Identity("cohort_code", "vip"))
    after = catalog.load_table("lake.users")
    assert len(after.snapshots()) == len(before.snapshots())
    assert [field.name for field in after.spec().fields] == ["dt"]


def test_a_migration_commit_of_unknown_outcome_keeps_its_files(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rewritten files were deleted whatever the commit's failure: after a lost answer of
    a commit that landed, the table named files that were gone."""
    from pyiceberg.table import Transaction

    old_table(catalog, "lake.users_daily")
    commit = Transaction.commit_transaction

    def lost_answer(self: Transaction) -> object:
        committed = commit(self)
        if sys._getframe(1).f_code.co_name == "swap_in":  # the rows' commit
            raise OSError("connection reset while the catalog committed")
        return committed

    monkeypatch.setattr(Transaction, "commit_transaction", lost_answer)
    with pytest.raises(OSError, match="connection reset"):
        migrate_to_identity(catalog, "lake.users_daily", COHORT)
    rows = catalog.load_table("lake.users_daily").scan().to_arrow()
    assert sorted(rows["user_id"].to_pylist()) == [0, 1, 10, 11]
    assert set(rows["cohort_code"].to_pylist()) == {"to_cart"}


def test_a_migration_commit_that_lost_a_race_is_refused_by_name_and_leaves_no_file(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows' commit lost to another writer: nothing landed, so the rewritten files go, and
    the error names the table and the race (it was pyiceberg's own exception before)."""
    from pyiceberg.exceptions import CommitFailedException
    from pyiceberg.table import Transaction

    old_table(catalog, "lake.users_daily")
    files_before = sorted(tmp_path.rglob("*.parquet"))
    commit = Transaction.commit_transaction

    def lost_race(self: Transaction) -> object:
        if sys._getframe(1).f_code.co_name == "swap_in":  # the rows' commit
            raise CommitFailedException("another writer committed first")
        return commit(self)

    monkeypatch.setattr(Transaction, "commit_transaction", lost_race)
    with pytest.raises(IcebergCommitError, match=r"lake\.users_daily: the migration lost"):
        migrate_to_identity(catalog, "lake.users_daily", COHORT)
    assert sorted(tmp_path.rglob("*.parquet")) == files_before
    rows = catalog.load_table("lake.users_daily").scan().to_arrow()
    assert rows["cohort_code"].null_count == rows.num_rows == 4
