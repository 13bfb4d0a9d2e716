"""Iceberg tables in a catalog: each run replaces its (identity, day) in one commit per table,
written by :mod:`~airflow_provider_analytics.output.iceberg`. Report tables other than the main
one go to tables named the way theirs are (``analytics.funnel`` -> ``analytics.funnel_totals``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import KW_ONLY, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.identity import IDENTITY_METADATA_KEY, PARTITION_COLUMNS
from airflow_provider_analytics.output.destination import (
    CohortFile,
    LineageTarget,
    iceberg_table_uri,
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


@dataclass(eq=False, repr=False)
class IcebergDestination:
    """The main table ``identifier`` (and its siblings) in the catalog ``catalog_name`` (the
    connection id, naming it in asset URIs and lineage), opened by ``open_catalog`` when first
    needed."""

    open_catalog: Callable[[], Catalog]
    catalog_name: str
    identifier: str
    identity: Identity
    _: KW_ONLY
    staging_root: str | None = None
    allowed_roots: Sequence[RootList] = ()

    def __post_init__(self) -> None:
        rules.table_identifier(self.identifier, "iceberg_table")
        if self.staging_root is not None:
            checked_destination(self.staging_root, self.allowed_roots, "staging")
        self.identifier = str(self.identifier)

    @cached_property
    def catalog(self) -> Catalog:
        return self.open_catalog()

    def identifier_for(self, names: Sequence[str], name: str) -> str:
        return self.identifier + name.removeprefix(names[0])

    def writer(self, day: str, identifier: str | None = None) -> IcebergDayWriter:
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
        """The days must be dates, and a nested namespace one the catalog has; the table's
        layout is checked when it is opened."""
        for day in days:
            rules.date(day, "dt")
        if self.identifier.count(".") > 1:  # only then is the catalog opened to ask
            from airflow_provider_analytics.output.iceberg import refuse_nested_namespace

            refuse_nested_namespace(self.catalog, self.identifier)

    @contextlib.contextmanager
    def cohort_file(self, day: str) -> Iterator[CohortFile]:
        """The export's rows streamed into the day's data files, committed when the stream ends
        whole."""
        writer, uri = self.writer(day), self.uri(day, ())
        metadata = {IDENTITY_METADATA_KEY: str(self.identity)}
        target = CohortFile(uri, uri, metadata, stream=writer.stream)
        yield target
        target.published["iceberg"] = writer.summary

    def staging(self, day: str) -> Any:
        """Per table, identity and day under ``staging_root`` when given, else in the worker's
        private folder (allowed besides the roots), through the roots' gate at each use."""
        table = self.identifier.replace(".", "/")
        allowed = self.allowed_roots
        if self.staging_root:
            root = self.staging_root.rstrip("/")
        else:
            private = f"file://{private_folder()}"  # as written: no percent-escapes, which
            # Airflow's object storage would take literally
            root = f"{private}/shards"
            own = allowed_roots(private, "the worker's private folder")
            allowed = [(origin, roots + own) for origin, roots in allowed]
        top = f"{root}/{self.catalog_name}/"
        folder = f"{top}{table}/{self.identity.folder}/dt={day}/"
        return staging_folder(folder, allowed, own_from=top)

    def publish_parts(self, day: str, parts: Sequence[Any]) -> CohortFile:
        from airflow_provider_analytics.output.parquet import part_row_groups, unified_schema

        schema = unified_schema(parts)
        committed = self.writer(day).replace(schema, part_row_groups(parts, schema))
        return CohortFile(parts[0], self.uri(day, ()), {}, {"iceberg": committed})

    def held_schema(self, day: str) -> pa.Schema | None:
        """The table's columns but the identity and ``dt`` (a ``number`` column keeps the
        type the table has: Iceberg cannot turn a long into a double); a table whose layout a
        run cannot keep its rules in is refused here, before the first request
        (:func:`~airflow_provider_analytics.output.iceberg.refuse_layout`)."""
        from pyiceberg.exceptions import NoSuchTableError

        from airflow_provider_analytics.output.iceberg import load_table, refuse_layout

        try:
            table = load_table(self.catalog, self.identifier)
        except NoSuchTableError:
            return None
        refuse_layout(table, self.identifier, self.identity)
        schema = table.schema().as_arrow()
        return pa.schema([field for field in schema if field.name not in PARTITION_COLUMNS])

    def report_tables(self, day: str, names: Sequence[str]) -> _ReportTables:
        return _ReportTables(self, day, names)

    def uri(self, day: str, names: Sequence[str]) -> str:
        return iceberg_table_uri(self.catalog_name, self.identifier)

    def lineage(self, days: Sequence[str], names: Sequence[str]) -> list[LineageTarget]:
        namespace = f"iceberg://{self.catalog_name}"  # the table's name: <namespace>.<table>
        return [LineageTarget(namespace, self.identifier_for(names, name)) for name in names]


@dataclass
class _ReportTables:
    """A day's report tables, each replacing the run's (report, day) of its Iceberg table."""

    destination: IcebergDestination
    day: str
    names: Sequence[str]

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
        identifier = self.destination.identifier_for(self.names, name)
        written = self.destination.writer(self.day, identifier).replace(table.schema, [table])
        return {**written, "uri": iceberg_table_uri(self.destination.catalog_name, identifier)}
