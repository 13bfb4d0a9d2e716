"""Apache Iceberg tables as a destination: one day's partition replaced in one atomic commit.

Needs the ``[iceberg]`` extra (pyiceberg). Every table written here is partitioned by the
identity of a ``dt`` date column, the day the run stands for. A run writes its data files
first, then commits one OVERWRITE snapshot that removes the files of its own day and adds
the new ones, so a rerun or a backfill replaces its day and never duplicates it, readers see
the old day or the new one, and the other days are not touched. When another run commits in
between (another day of a backfill), the commit is retried against the new table state; the
data files already written are reused, not rewritten.

Before anything is written, the table gains the columns the data has and it lacks (existing
data files are not rewritten; old rows read the new column as null), and a column whose
type cannot be evolved to the data's type fails naming the column. A cohort column holding a
property the table holds under another name (``$city`` against ``city``: the export's
``column_names`` changed) fails too, instead of becoming a second column.

pyiceberg's public ``overwrite`` commits a delete snapshot and an append snapshot and rewrites
nothing it cannot drop whole; to make a day one snapshot whose files are written once, the
data files are written with pyiceberg's own writer (``_dataframe_to_data_files``) and
committed through its public snapshot API. That writer is internal, hence the extra's pin to
one pyiceberg minor version.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import logging
import random
import time
import uuid
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchTableError,
    TableAlreadyExistsError,
    ValidationError,
    ValidationException,
)
from pyiceberg.io.pyarrow import _check_pyarrow_schema_compatible, _dataframe_to_data_files
from pyiceberg.transforms import IdentityTransform

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsError,
    AnalyticsUsageError,
)
from airflow_provider_analytics.tabular.column_names import ID_METADATA_KEY, warehouse_name

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping

    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

log = logging.getLogger(__name__)

PARTITION_COLUMN: Final = "dt"
"""The date column every table written here is partitioned by (identity)."""

DAY_PROPERTY: Final = "analytics.dt"
"""Snapshot summary property naming the day a commit replaced."""


class IcebergSchemaError(AnalyticsError, ValueError):
    """The data cannot be written to the table as it is (a column's type cannot evolve)."""


def catalog_properties(
    *,
    host: str | None = None,
    port: int | None = None,
    schema: str | None = None,
    login: str | None = None,
    password: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, str]:
    """pyiceberg catalog properties from the fields of an Airflow connection.

    The connection's extra holds the catalog properties as pyiceberg names them (``type``,
    ``uri``, ``warehouse``, ...). Without ``uri``, a REST catalog's is built from host, port
    and schema (the scheme, ``http`` by default); a SQL catalog needs its database URL as
    ``uri`` (``sqlite:///catalog.db``, ``postgresql+psycopg2://user@host/db``). The password
    is the REST catalog's bearer ``token``, or the database user's password, put into
    ``uri``. ``type`` defaults to ``sql`` for a database URL (``sqlite:``, ``postgresql``)
    and ``rest`` otherwise.

    :raises AnalyticsConfigurationError: naming the field when neither ``uri`` nor ``host``
        is given.
    """
    properties = {key: str(value) for key, value in (extra or {}).items() if value is not None}
    properties.pop("catalog_name", None)
    if "uri" not in properties:
        if not host:
            raise AnalyticsConfigurationError(
                "iceberg connection: give the catalog's uri in the extra (e.g. "
                "sqlite:///catalog.db, postgresql+psycopg2://host/db) or a REST host"
            )
        scheme = schema or "http"
        properties["uri"] = f"{scheme}://{host}" + (f":{port}" if port else "")
    uri = properties["uri"]
    is_database = uri.startswith(("sqlite:", "postgresql"))
    properties.setdefault("type", "sql" if is_database else "rest")
    if password:
        if properties["type"] == "sql":
            properties["uri"] = _with_password(uri, login, password)
        else:
            properties.setdefault("token", password)
    return properties


def _with_password(uri: str, login: str | None, password: str) -> str:
    """A database URL carrying the connection's login and password (SQLAlchemy's parser)."""
    from sqlalchemy.engine import make_url

    url = make_url(uri)
    url = url.set(username=url.username or login, password=password)
    return url.render_as_string(hide_password=False)


def open_catalog(name: str, properties: Mapping[str, str]) -> Catalog:
    """The pyiceberg catalog these properties describe (nothing is contacted for SQL)."""
    return load_catalog(name, **properties)


class IcebergDayWriter:
    """Replace one day's partition of one Iceberg table: open, write batches, commit (or abort).

    :param catalog: the pyiceberg catalog.
    :param identifier: ``namespace.table``; namespace and table are created when missing.
    :param day: the day whose partition the commit replaces.
    :param attempts: commit attempts when another writer commits in between.
    :param retry_delay: base seconds between attempts (doubled each time, with jitter).
    :param sleep: waits between attempts (injectable for tests).
    """

    def __init__(
        self,
        catalog: Catalog,
        identifier: str,
        day: dt.date,
        *,
        attempts: int = 10,
        retry_delay: float = 0.05,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        namespace, _, name = identifier.rpartition(".")
        if not namespace or not name:
            rules.fail("iceberg_table", "must be namespace.table", identifier)
        self.catalog = catalog
        self.identifier = identifier
        self.day = day
        self.attempts = attempts
        self.retry_delay = retry_delay
        self.sleep = sleep
        self.commit_uuid = uuid.uuid4()
        self.counter = itertools.count(0)
        self.files: list[DataFile] = []
        self.rows = 0
        self._table: Table | None = None

    @property
    def table(self) -> Table:
        if self._table is None:
            raise AnalyticsUsageError("IcebergDayWriter.open() must be called first")
        return self._table

    def open(self, schema: pa.Schema) -> None:
        """Create the table if missing, or add the columns ``schema`` has and it lacks.

        :param schema: the data's columns (without ``dt``, which is added).
        :raises IcebergSchemaError: naming the column, when a column's type cannot evolve to
            the data's, or the table is not partitioned by ``dt``; nothing is written then.
        """
        if PARTITION_COLUMN in schema.names:
            raise IcebergSchemaError(
                f"{self.identifier}: the data has a column {PARTITION_COLUMN!r}, which is the "
                "partition column the writer adds"
            )
        full = schema.append(pa.field(PARTITION_COLUMN, pa.date32(), nullable=False))
        table = self._load_or_create(full)
        self._refuse_renamed_columns([field.name for field in table.schema().fields], schema)
        if not any(
            isinstance(field.transform, IdentityTransform)
            and table.schema().find_column_name(field.source_id) == PARTITION_COLUMN
            for field in table.spec().fields
        ):
            raise IcebergSchemaError(
                f"{self.identifier}: the table must be partitioned by identity({PARTITION_COLUMN})"
                " so that a run replaces exactly its day"
            )
        self._table = self._evolve(table, full)

    def _refuse_renamed_columns(self, existing: Collection[str], schema: pa.Schema) -> None:
        """Refuse data whose column holds a platform id (field metadata ``analytics.id``) that
        the table holds under the other naming (``$city`` against ``city``): evolving would add
        a second column for the same property and leave the first null from this day on."""
        for field in schema:
            column_id = (field.metadata or {}).get(ID_METADATA_KEY.encode())
            if column_id is None or field.name in existing:
                continue
            for other in {column_id.decode(), warehouse_name(column_id.decode())} - {field.name}:
                if other in existing:
                    raise IcebergSchemaError(
                        f"{self.identifier}: the table holds {column_id.decode()!r} as column "
                        f"{other!r} and this run names it {field.name!r}; write with the "
                        "column_names the table was created with, or to a new table"
                    )

    def _load_or_create(self, schema: pa.Schema) -> Table:
        namespace = self.identifier.rpartition(".")[0]
        self.catalog.create_namespace_if_not_exists(namespace)
        try:
            return self.catalog.load_table(self.identifier)
        except NoSuchTableError:
            pass
        try:
            with (
                self.catalog.create_table_transaction(self.identifier, schema=schema) as create,
                create.update_spec() as spec,
            ):
                spec.add_identity(PARTITION_COLUMN)
            log.info(
                "created Iceberg table %s partitioned by %s", self.identifier, PARTITION_COLUMN
            )
        except TableAlreadyExistsError:
            pass  # created by a concurrent run of another day
        return self.catalog.load_table(self.identifier)

    def _evolve(self, table: Table, schema: pa.Schema) -> Table:
        """Add missing columns (retrying on concurrent commits) and check every type."""
        for attempt in range(1, self.attempts + 1):
            try:
                with table.update_schema() as update:
                    update.union_by_name(schema)
                break
            except (ValidationError, ValueError, TypeError) as error:
                raise IcebergSchemaError(
                    f"{self.identifier}: the data cannot be written as the table is: {error}"
                ) from error
            except CommitFailedException:
                if attempt == self.attempts:
                    raise
                self._pause(attempt)
                table = self.catalog.load_table(self.identifier)
        table = self.catalog.load_table(self.identifier)
        try:
            _check_pyarrow_schema_compatible(
                table.schema(), schema, format_version=table.metadata.format_version
            )
        except ValueError as error:
            raise IcebergSchemaError(
                f"{self.identifier}: the data cannot be written as the table is: {error}"
            ) from error
        return table

    def write(self, batch: pa.Table) -> None:
        """Write ``batch`` (the columns given to :meth:`open`) as data files of the day."""
        if batch.num_rows == 0:
            return
        day = pa.repeat(pa.scalar(self.day, pa.date32()), batch.num_rows)
        with_day = batch.append_column(pa.field(PARTITION_COLUMN, pa.date32(), False), day)
        table = self.table
        self.files.extend(
            _dataframe_to_data_files(
                table_metadata=table.metadata,
                df=with_day,
                io=table.io,
                write_uuid=self.commit_uuid,
                counter=self.counter,
            )
        )
        self.rows += batch.num_rows

    def commit(self) -> dict[str, Any]:
        """One OVERWRITE snapshot: the day's old files out, the written files in.

        Retried against the current table when another writer committed first.
        """
        for attempt in range(1, self.attempts + 1):
            table = self.catalog.load_table(self.identifier)
            old = [
                task.file
                for task in table.scan(
                    row_filter=f"{PARTITION_COLUMN} = '{self.day.isoformat()}'"
                ).plan_files()
            ]
            transaction = table.transaction()
            snapshot = transaction.update_snapshot(
                snapshot_properties={DAY_PROPERTY: self.day.isoformat()}
            )
            with snapshot.overwrite(commit_uuid=self.commit_uuid) as overwrite:
                for data_file in old:
                    overwrite.delete_data_file(data_file)
                for data_file in self.files:
                    overwrite.append_data_file(data_file)
            try:
                committed = transaction.commit_transaction()
            except (CommitFailedException, ValidationException) as error:
                # pyiceberg retries a lost race itself, but its conflict check refuses files
                # added to any partition; both errors guarantee nothing landed, and the next
                # attempt plans the day's files again against the table as it is now
                if attempt == self.attempts:
                    raise
                log.info(
                    "%s: commit for %s lost a race (%s); retrying", self.identifier, self.day, error
                )
                self._pause(attempt)
                continue
            current = committed.current_snapshot()
            return {
                "uri": self.identifier,
                "rows": self.rows,
                "data_files": len(self.files),
                "replaced_files": len(old),
                "snapshot_id": current.snapshot_id if current else None,
                "commit_attempts": attempt,
            }
        rules.fail("attempts", "must be at least 1", self.attempts)

    def abort(self) -> None:
        """Delete the data files written so far (nothing was committed)."""
        if self._table is None:
            return
        for data_file in self.files:
            with contextlib.suppress(Exception):
                self._table.io.delete(data_file.file_path)
        self.files = []

    def _pause(self, attempt: int) -> None:
        self.sleep(self.retry_delay * 2 ** (attempt - 1) * random.uniform(0.5, 1.0))


class IcebergTables:
    """Named report tables written to Iceberg tables, each replacing the run's day.

    The main table goes to ``identifier``; another table to the identifier whose name ends
    the way its name does: with ``analytics.funnel`` and main name ``funnel``, the table
    ``funnel_totals`` goes to ``analytics.funnel_totals``.

    :param catalog: the pyiceberg catalog.
    :param identifier: the main table's ``namespace.table``.
    :param main_name: the main table's name.
    :param day: the run's day (the partition replaced).
    """

    def __init__(self, catalog: Catalog, identifier: str, main_name: str, day: dt.date) -> None:
        self.catalog = catalog
        self.identifier = identifier
        self.main_name = main_name
        self.day = day

    def identifier_for(self, name: str) -> str:
        """The Iceberg table a report table of this name is written to."""
        return self.identifier + name.removeprefix(self.main_name)

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
        """Replace the day of one table; return its identifier, rows and snapshot."""
        writer = IcebergDayWriter(self.catalog, self.identifier_for(name), self.day)
        writer.open(table.schema)
        try:
            writer.write(table)
            return writer.commit()
        except BaseException:
            writer.abort()
            raise


def replace_day_from_parquet(
    catalog: Catalog, identifier: str, day: dt.date, source: str
) -> dict[str, Any]:
    """Replace ``day`` in an Iceberg table with a local Parquet file's rows, row group by row
    group (memory stays at one row group).

    :param catalog: the pyiceberg catalog.
    :param identifier: ``namespace.table``.
    :param day: the partition replaced.
    :param source: path of the Parquet file (e.g. a finished cohort export).
    """
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(source)
    writer = IcebergDayWriter(catalog, identifier, day)
    writer.open(parquet.schema_arrow)
    try:
        for group in range(parquet.num_row_groups):
            writer.write(parquet.read_row_group(group))
        return writer.commit()
    except BaseException:
        writer.abort()
        raise
