"""Migrate an Iceberg table of the earlier layout (partitioned by ``dt`` alone) to the one that
holds many cohorts or reports: one commit adds the identity column and partition, each day's
rows are rewritten into files that carry the identity, and one commit swaps them in, so readers
see the old rows or the migrated ones, never both. Run from a shell through
:mod:`~airflow_provider_analytics.hooks.iceberg_migration` (``docs/howto/iceberg.md``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyiceberg.expressions import AlwaysTrue, And
from pyiceberg.types import StringType

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import IcebergSchemaError
from airflow_provider_analytics.core.identity import DAY_COLUMN, REPORT_COLUMN, table_holds
from airflow_provider_analytics.output.iceberg import (
    COMMIT_PROPERTY,
    IDENTITY_PROPERTY,
    IcebergDayWriter,
    column_equals,
    column_is_null,
    full_metrics,
    identity_partitions,
)
from airflow_provider_analytics.output.roots import checked_destination

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyiceberg.catalog import Catalog

    from airflow_provider_analytics.core.identity import Identity
    from airflow_provider_analytics.output.roots import RootList

log = logging.getLogger(__name__)


def migrate_to_identity(
    catalog: Catalog,
    identifier: str,
    identity: Identity,
    *,
    dry_run: bool = False,
    allowed_roots: Sequence[RootList] = (),
) -> dict[str, Any]:
    """Give an earlier version's table its identity column and partition, every existing row
    holding ``identity`` (a cohort table takes a cohort, a report table a report); the table's
    location and each rewritten file are checked against ``allowed_roots``. Returns the days
    and rows migrated, and whether it was needed."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    rules.table_identifier(identifier, "table")
    try:
        table = catalog.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        raise IcebergSchemaError(
            f"{identifier}: no such table in the catalog; check the name and the connection"
        ) from None
    checked_destination(f"{table.location().rstrip('/')}/", allowed_roots, "iceberg table location")
    holds = table_holds(table.schema().column_names)
    if holds != identity.column:
        raise IcebergSchemaError(
            f"{identifier} holds {'reports' if holds == REPORT_COLUMN else 'cohorts'}, and "
            f"{identity} names {'a report' if identity.column == REPORT_COLUMN else 'a cohort'}; "
            f"give it {holds}=<{'key' if holds == REPORT_COLUMN else 'code'}>"
        )
    partitioned = identity_partitions(table)
    if DAY_COLUMN not in partitioned:
        raise IcebergSchemaError(
            f"{identifier} is not partitioned by identity({DAY_COLUMN}): it was not "
            "written by this provider, and there is nothing to migrate"
        )
    has_column = identity.column in table.schema().column_names
    if has_column and identity.column not in partitioned:
        raise IcebergSchemaError(
            f"{identifier} has a column {identity.column!r} that is not a partition; rename it "
            "first (it is the identity column the provider adds)"
        )
    if not dry_run and not has_column:
        with table.transaction() as transaction:
            with transaction.update_schema() as update:
                update.add_column(identity.column, StringType(), doc="the rows' identity")
            with transaction.update_spec() as spec:
                spec.add_identity(identity.column)
            transaction.set_properties(full_metrics(identity.column))
        table = catalog.load_table(identifier)
    # a dry run on a table without the column: every row is unmigrated
    unmigrated = column_is_null(identity.column) if has_column or not dry_run else AlwaysTrue()
    rows = table.scan(row_filter=unmigrated, selected_fields=(DAY_COLUMN,)).to_arrow()
    days = sorted(set(rows[DAY_COLUMN].to_pylist()))
    summary = {"table": identifier, "identity": str(identity), "dry_run": dry_run}
    summary["days"] = [day.isoformat() for day in days]
    if dry_run or not days:
        return {**summary, "rows": 0, "migrated": False}
    properties = {IDENTITY_PROPERTY: str(identity), COMMIT_PROPERTY: "migration"}
    writers: list[IcebergDayWriter] = []
    try:
        for day in days:  # the day's rows without an identity into new files that carry it
            condition = And(
                column_is_null(identity.column), column_equals(DAY_COLUMN, day.isoformat())
            )
            reader = table.scan(row_filter=condition).to_arrow_batch_reader()
            kept = [f.name for f in reader.schema if f.name not in (identity.column, DAY_COLUMN)]
            writer = IcebergDayWriter(
                catalog, identifier, day, identity=identity, allowed_roots=allowed_roots
            )
            writer.open(pa.schema([reader.schema.field(name) for name in kept]))
            writers.append(writer)
            for batch in reader:
                writer.write(batch.select(kept))
            writer.close_files()
        # one commit: the rows without an identity out, the rewritten files in
        table = catalog.load_table(identifier)
        replaced = column_is_null(identity.column)
        IcebergDayWriter.swap_in(table, identifier, replaced, writers, properties, "migration", 1)
        summary["rows"] = sum(writer.rows for writer in writers)
    except BaseException:
        for writer in writers:
            writer.abort()
        raise
    summary["migrated"] = True
    log.info(
        "migrated %s: %d rows of %d days now hold %s",
        identifier,
        summary["rows"],
        len(days),
        identity,
    )
    return summary
