"""Iceberg tables in a catalog: each run replaces its (identity, day) in one commit per table.

A streamed cohort is written into the day's data files as it arrives (the one Parquet
encoding) and committed once its rows are verified; a cohort read in shards is written from its
parts; report tables are written from Arrow directly. The writer
(:mod:`~airflow_provider_analytics.output.iceberg`) streams the data files, adds
the identity and ``dt`` columns and refuses an earlier version's table by name.
The report tables other than the main one go to tables whose names end the way theirs do
(``analytics.funnel`` -> ``analytics.funnel_totals``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.identity import IDENTITY_METADATA_KEY
from airflow_provider_analytics.output.destination import CohortFile
from airflow_provider_analytics.output.lineage import (
    LineageTarget,
    iceberg_table_uri,
    iceberg_target,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from pyiceberg.catalog import Catalog

    from airflow_provider_analytics.core.identity import Identity

NUMBER_TYPES = {"long": pa.int64(), "double": pa.float64()}
"""The Iceberg types a ``number`` column can have been created with, as Arrow types."""


class IcebergDestination:
    """The main table ``identifier`` (and its siblings) in the catalog ``catalog_name``.

    :param open_catalog: opens the pyiceberg catalog (called once, when first needed).
    :param catalog_name: names the catalog in asset URIs and lineage (the connection id).
    :param identifier: the main table's ``namespace.table``.
    :param identity: what the run's rows are.
    :param staging_root: where a cohort read in shards keeps its parts (an object-storage URI
        all workers reach); default: this machine's temporary space.
    """

    def __init__(
        self,
        open_catalog: Callable[[], Catalog],
        catalog_name: str,
        identifier: str,
        identity: Identity,
        *,
        staging_root: str | None = None,
    ) -> None:
        namespace, _, table = str(identifier).rpartition(".")
        if not namespace or not table:
            rules.fail("iceberg_table", "must be namespace.table", identifier)
        self._open_catalog = open_catalog
        self.catalog_name = catalog_name
        self.identifier = str(identifier)
        self.identity = identity
        self.staging_root = staging_root

    @cached_property
    def catalog(self) -> Catalog:
        return self._open_catalog()

    def identifier_for(self, names: Sequence[str], name: str) -> str:
        """The table a report table ``name`` goes to (``names[0]`` is the main one)."""
        return self.identifier + name.removeprefix(names[0])

    def check(self, days: Sequence[str], names: Sequence[str]) -> None:
        """The days must be dates; the table's layout is checked when it is opened (before
        anything is written), the catalog being reached only then."""
        for day in days:
            rules.date(day, "dt")

    @contextlib.contextmanager
    def cohort_file(self, day: str) -> Iterator[CohortFile]:
        """The export's rows streamed into the day's data files, encoded once, and committed
        when the stream ends whole (:meth:`~airflow_provider_analytics.output.iceberg.
        IcebergDayWriter.stream`)."""
        from airflow_provider_analytics.output.iceberg import IcebergDayWriter

        writer = IcebergDayWriter(
            self.catalog, self.identifier, dt.date.fromisoformat(day), identity=self.identity
        )
        uri = iceberg_table_uri(self.catalog_name, self.identifier)
        metadata = {IDENTITY_METADATA_KEY: str(self.identity)}
        target = CohortFile(uri, uri, metadata, stream=writer.stream)
        yield target
        target.published["iceberg"] = writer.summary

    def staging(self, day: str) -> Any:
        """``staging`` (an object-storage URI every worker reaches) when given, else a folder
        of this machine's temporary space; either way per table, identity and day."""
        from airflow.sdk import ObjectStoragePath

        table = self.identifier.replace(".", "/")
        if self.staging_root:
            root = self.staging_root.rstrip("/")
        else:
            root = (Path(tempfile.gettempdir()) / "analytics-shards").as_uri()
        folder = f"{root}/{self.catalog_name}/{table}/{self.identity.folder}/dt={day}/"
        return ObjectStoragePath(folder)

    def publish_parts(self, day: str, parts: Sequence[Any]) -> CohortFile:
        """The parts as the identity's day in one commit (one snapshot)."""
        from airflow_provider_analytics.output.iceberg import IcebergDayWriter
        from airflow_provider_analytics.output.parts import iter_part_batches, unified_schema

        schema = unified_schema(parts)
        writer = IcebergDayWriter(
            self.catalog, self.identifier, dt.date.fromisoformat(day), identity=self.identity
        )
        committed = writer.replace(schema, iter_part_batches(parts, schema))
        uri = iceberg_table_uri(self.catalog_name, self.identifier)
        return CohortFile(parts[0], uri, {}, {"iceberg": committed})

    def earlier_number_types(self, day: str) -> dict[str, pa.DataType]:
        """The table's long and double columns, by name: a ``number`` column keeps the type
        the table has (Iceberg cannot turn a long into a double)."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            table = self.catalog.load_table(self.identifier)
        except NoSuchTableError:
            return {}
        return {
            field.name: NUMBER_TYPES[str(field.field_type)]
            for field in table.schema().fields
            if str(field.field_type) in NUMBER_TYPES
        }

    def report_tables(self, day: str, names: Sequence[str]) -> _ReportTables:
        return _ReportTables(self, day, names)

    def uri(self, day: str, names: Sequence[str]) -> str:
        return iceberg_table_uri(self.catalog_name, self.identifier)

    def lineage(self, days: Sequence[str], names: Sequence[str]) -> list[LineageTarget]:
        return [iceberg_target(self.catalog_name, self.identifier_for(names, n)) for n in names]


class _ReportTables:
    """A day's report tables, each replacing the run's (report, day) of its Iceberg table and
    described by the table's URI."""

    def __init__(self, destination: IcebergDestination, day: str, names: Sequence[str]) -> None:
        self.destination = destination
        self.day = dt.date.fromisoformat(day)
        self.names = names

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
        from airflow_provider_analytics.output.iceberg import IcebergDayWriter

        destination = self.destination
        identifier = destination.identifier_for(self.names, name)
        writer = IcebergDayWriter(
            destination.catalog, identifier, self.day, identity=destination.identity
        )
        written = writer.replace(table.schema, [table])
        return {**written, "uri": iceberg_table_uri(destination.catalog_name, identifier)}
