"""The interface every destination offers the jobs, and how written data is named for lineage
and for Airflow assets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Sequence

    import pyarrow as pa
    from airflow.sdk import ObjectStoragePath

    from airflow_provider_analytics.core.identity import Identity
    from airflow_provider_analytics.output.parquet import StreamOpener
    from airflow_provider_analytics.output.storage import StoragePath


@dataclass(frozen=True)
class LineageTarget:
    """A dataset written, named as OpenLineage names it: ``namespace`` and ``name``."""

    namespace: str
    name: str


def object_target(path: ObjectStoragePath) -> LineageTarget:
    """An object's lineage name from the path's own attributes (``s3://bucket`` and the key,
    ``file`` and the path), the way Airflow's ``FileTransferOperator`` names the objects it
    copies, so the two meet in one lineage graph. The connection id is not part of it."""
    return LineageTarget(path.namespace or "file", path.key)


def iceberg_target(catalog_name: str, identifier: str) -> LineageTarget:
    """An Iceberg table's lineage name: namespace ``iceberg://<catalog>``, name
    ``<namespace>.<table>``."""
    return LineageTarget(f"iceberg://{catalog_name}", identifier)


def iceberg_table_uri(catalog_name: str, identifier: str) -> str:
    """``iceberg://<catalog>/<namespace>/<table>``: how assets and lineage name a table."""
    namespace, _, table = identifier.rpartition(".")
    return f"iceberg://{catalog_name}/{namespace.replace('.', '/')}/{table}"


class TableWriter(Protocol):
    """Where the report tables go: each named table replaced as a whole.

    :meth:`write_table` returns a small JSON-able description of what was written (at least
    ``uri`` and ``rows``).
    """

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]: ...


@dataclass
class CohortFile:
    """Where a cohort export writes its Parquet file, and what publishing it did.

    :param path: the object the export writes (atomically) and verifies (for a table, what
        names it).
    :param uri: what the run's asset event and XCom name as written.
    :param metadata: Parquet file metadata the file must record (its identity).
    :param published: filled once the block ends: what the publication did (an Iceberg
        commit's summary under ``iceberg``; nothing for a Parquet object, which is in place
        once written).
    :param stream: opens what the export writes its rows to, when it is not the Parquet
        object ``path`` (an Iceberg day's data files, committed when the stream closes).
    """

    path: StoragePath | str
    uri: str
    metadata: dict[str, str] = field(default_factory=dict)
    published: dict[str, Any] = field(default_factory=dict)
    stream: StreamOpener | None = None


class Destination(Protocol):
    """Parquet objects or Iceberg tables, holding rows of one identity per run.

    :attr identity: what the run's rows are (``cohort_code=vip``, ``report_key=...``).
    """

    identity: Identity

    def check(self, days: Sequence[str], names: Sequence[str]) -> None:
        """Check every place the run will write (``days``; ``names``: the report tables, or
        ``("users",)`` for a cohort) before the first request, refusing by name."""
        ...

    def cohort_file(self, day: str) -> contextlib.AbstractContextManager[CohortFile]:
        """A place to write the day's cohort file; the file is published when the block ends
        without an error, and nothing is published otherwise."""
        ...

    def staging(self, day: str) -> StoragePath:
        """The folder where a cohort read in shards keeps its parts and records until they
        are published (outside every folder readers read)."""
        ...

    def publish_parts(self, day: str, parts: Sequence[StoragePath]) -> CohortFile:
        """Publish a cohort's parts as the day's output, all at once or not at all; returns
        what names it (``uri``) and what publishing did."""
        ...

    def held_schema(self, day: str) -> pa.Schema | None:
        """The columns the destination holds already for the identity (before ``day``), which
        a ``number`` column's type and the ``schema_contract`` meet; ``None`` when empty."""
        ...

    def report_tables(self, day: str, names: Sequence[str]) -> TableWriter:
        """The writer of one day's report tables (``names``, main table first)."""
        ...

    def uri(self, day: str, names: Sequence[str]) -> str:
        """What names the run's main output (the day's main object, or the main table)."""
        ...

    def lineage(self, days: Sequence[str], names: Sequence[str]) -> list[LineageTarget]:
        """Every object or table the run writes, as lineage names it."""
        ...
