"""IcebergMaintenanceOperator: expire old snapshots and remove orphan files of Iceberg tables."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow.sdk import Context

DEFAULT_SNAPSHOT_RETENTION = dt.timedelta(days=5)
"""Iceberg's own default for ``history.expire.max-snapshot-age-ms``."""

DEFAULT_ORPHAN_FILE_AGE = dt.timedelta(days=3)
"""Iceberg's (Spark's and Java's) default age before an unreachable file counts as orphan."""


class IcebergMaintenanceOperator(BaseOperator):
    """Expire old snapshots of Iceberg tables, then delete their orphan files: files under the
    table's location its metadata no longer reaches, older than ``orphan_file_age``
    (``docs/operators/iceberg_maintenance.md`` says which, and what the XCom holds). Readers of
    an expired snapshot (time travel) lose it; the current table is never touched. A table
    that does not exist is skipped with a warning (``{"table": identifier, "missing": true}``).

    :param iceberg_tables: the tables (``namespace.table``), one or a list; templated.
    :param iceberg_conn_id: the connection describing the Iceberg catalog.
    :param snapshot_retention: snapshots older than this are expired (default 5 days).
    :param retain_last: the newest snapshots always kept, at least 1 (default 1).
    :param orphan_file_age: unreachable files younger than this are kept (default 3 days);
        longer than any writer of these tables takes from its first data file to its commit.
    :param report_only: report what would be expired and deleted, change nothing (a dry run:
        the orphans are those of the snapshots as they are).
    """

    template_fields: Sequence[str] = ("iceberg_tables", "iceberg_conn_id")

    def __init__(
        self,
        *,
        iceberg_tables: str | list[str],
        iceberg_conn_id: str = "iceberg_default",
        snapshot_retention: dt.timedelta = DEFAULT_SNAPSHOT_RETENTION,
        retain_last: int = 1,
        orphan_file_age: dt.timedelta = DEFAULT_ORPHAN_FILE_AGE,
        report_only: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        ages = {"snapshot_retention": snapshot_retention, "orphan_file_age": orphan_file_age}
        for name, value in ages.items():
            if not isinstance(value, dt.timedelta) or value < dt.timedelta(0):
                rules.fail(name, "must be a timedelta of at least 0", value)
        rules.positive_int(retain_last, "retain_last")
        self.iceberg_tables = iceberg_tables
        self.iceberg_conn_id = iceberg_conn_id
        self.snapshot_retention = snapshot_retention
        self.retain_last = retain_last
        self.orphan_file_age = orphan_file_age
        self.report_only = rules.boolean(report_only, "report_only")

    def execute(self, context: Context) -> dict[str, Any]:
        from pyiceberg.exceptions import NoSuchTableError

        from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook
        from airflow_provider_analytics.output.iceberg_maintenance import maintain_table
        from airflow_provider_analytics.output.roots import deployment_roots

        tables = self.iceberg_tables
        if isinstance(tables, str) and tables.lstrip().startswith("["):  # skipped as missing
            rules.fail("iceberg_tables", "must be a list, not a list rendered as text", tables)
        identifiers = [tables] if isinstance(tables, str) else tables
        if not isinstance(identifiers, list) or not identifiers:
            rules.fail("iceberg_tables", "must name at least one table", tables)
        for table in identifiers:
            rules.table_identifier(table, "iceberg_tables", "each must be namespace.table")
        catalog = IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id).get_conn()
        results: dict[str, dict[str, Any]] = {}
        for identifier in identifiers:
            try:
                result = maintain_table(
                    catalog,
                    identifier,
                    snapshot_retention=self.snapshot_retention,
                    retain_last=self.retain_last,
                    orphan_file_age=self.orphan_file_age,
                    dry_run=self.report_only,
                    allowed_roots=deployment_roots(),
                )
            except NoSuchTableError:
                self.log.warning("%s: no such table; nothing to maintain", identifier)
                results[identifier] = {"table": identifier, "missing": True}
                continue
            self.log.info(
                "%s: %d snapshots expired (%d kept), %d orphan files %s of %d scanned",
                identifier,
                len(result.expired_snapshots),
                result.snapshots_kept,
                len(result.orphan_files),
                "found" if self.report_only else "removed",
                result.files_scanned,
            )
            results[identifier] = result.as_dict()
        return {"tables": results}
