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
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.identity import IDENTITY_METADATA_KEY, PARTITION_COLUMNS
from airflow_provider_analytics.output.destination import (
    CohortFile,
    LineageTarget,
    iceberg_table_uri,
    iceberg_target,
)
from airflow_provider_analytics.output.roots import (
    allowed_roots,
    checked_destination,
    private_folder,
    staging_folder,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from pyiceberg.catalog import Catalog

    from airflow_provider_analytics.core.identity import Identity
    from airflow_provider_analytics.output.iceberg import IcebergDayWriter
    from airflow_provider_analytics.output.roots import RootList


class IcebergDestination:
    """The main table ``identifier`` (and its siblings) in the catalog ``catalog_name``.

    :param open_catalog: opens the pyiceberg catalog (called once, when first needed).
    :param catalog_name: names the catalog in asset URIs and lineage (the connection id).
    :param identifier: the main table's ``namespace.table``.
    :param identity: what the run's rows are.
    :param staging_root: where a cohort read in shards keeps its parts (an object-storage URI
        all workers reach); default: the worker's private folder in its temporary space
        (:func:`~airflow_provider_analytics.output.roots.private_folder`).
    :param allowed_roots: the roots the deployment allows the package to write under: the
        staging and the table's data files must lie under them.
    """

    def __init__(
        self,
        open_catalog: Callable[[], Catalog],
        catalog_name: str,
        identifier: str,
        identity: Identity,
        *,
        staging_root: str | None = None,
        allowed_roots: Sequence[RootList] = (),
    ) -> None:
        namespace, _, table = str(identifier).rpartition(".")
        if not namespace or not table:
            rules.fail("iceberg_table", "must be namespace.table", identifier)
        if staging_root is not None:
            checked_destination(staging_root, allowed_roots, "staging")
        self._open_catalog = open_catalog
        self.catalog_name = catalog_name
        self.identifier = str(identifier)
        self.identity = identity
        self.staging_root = staging_root
        self.allowed_roots = list(allowed_roots)

    @cached_property
    def catalog(self) -> Catalog:
        return self._open_catalog()

    def identifier_for(self, names: Sequence[str], name: str) -> str:
        """The table a report table ``name`` goes to (``names[0]`` is the main one)."""
        return self.identifier + name.removeprefix(names[0])

    def writer(self, day: str, identifier: str | None = None) -> IcebergDayWriter:
        """The writer of the run's ``day`` in ``identifier`` (by default the main table)."""
        from airflow_provider_analytics.output.iceberg import IcebergDayWriter

        table = identifier or self.identifier
        return IcebergDayWriter(
            self.catalog,
            table,
            dt.date.fromisoformat(day),
            identity=self.identity,
            allowed_roots=self.allowed_roots,
        )

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
        writer, uri = self.writer(day), self.uri(day, ())
        metadata = {IDENTITY_METADATA_KEY: str(self.identity)}
        target = CohortFile(uri, uri, metadata, stream=writer.stream)
        yield target
        target.published["iceberg"] = writer.summary

    def staging(self, day: str) -> Any:
        """``staging`` (an object-storage URI every worker reaches) when given, else the
        worker's private folder (made 0700 and checked at each use); either way per table,
        identity and day, through the roots' gate (:func:`~airflow_provider_analytics.output.
        roots.staging_folder`): under the allowed roots (the private folder is the worker's
        own), and no level the package makes a link."""
        table = self.identifier.replace(".", "/")
        allowed = self.allowed_roots
        if self.staging_root:
            root = self.staging_root.rstrip("/")
        else:
            private = private_folder().as_uri()
            root = f"{private}/shards"
            own = allowed_roots(private, "the worker's private folder")
            allowed = [(origin, roots + own) for origin, roots in allowed]
        top = f"{root}/{self.catalog_name}/"
        folder = f"{top}{table}/{self.identity.folder}/dt={day}/"
        return staging_folder(folder, allowed, own_from=top)

    def publish_parts(self, day: str, parts: Sequence[Any]) -> CohortFile:
        """The parts as the identity's day in one commit (one snapshot)."""
        from airflow_provider_analytics.output.parquet import part_row_groups, unified_schema

        schema = unified_schema(parts)
        committed = self.writer(day).replace(schema, part_row_groups(parts, schema))
        return CohortFile(parts[0], self.uri(day, ()), {}, {"iceberg": committed})

    def held_schema(self, day: str) -> pa.Schema | None:
        """The table's columns but the identity and ``dt`` (a ``number`` column keeps the
        type the table has: Iceberg cannot turn a long into a double)."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            schema = self.catalog.load_table(self.identifier).schema().as_arrow()
        except NoSuchTableError:
            return None
        return pa.schema([field for field in schema if field.name not in PARTITION_COLUMNS])

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
        self.day = day
        self.names = names

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
        identifier = self.destination.identifier_for(self.names, name)
        written = self.destination.writer(self.day, identifier).replace(table.schema, [table])
        return {**written, "uri": iceberg_table_uri(self.destination.catalog_name, identifier)}
