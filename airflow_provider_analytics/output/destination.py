"""The interface every destination offers the jobs, and how written data is named for lineage
and for Airflow assets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

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
    """An object's lineage name as Airflow's ``FileTransferOperator`` gives it (namespace and
    key, no connection id), so the two meet in one lineage graph."""
    return LineageTarget(path.namespace or "file", path.key)


def uri_path(name: str, *, safe: str = "/") -> str:
    """``name`` as it stands in an asset's URI: what a path may not hold (``#``, ``?``, ``%``,
    spaces, other than ASCII) percent-encoded, so it stays part of the name (Airflow drops a
    URI's fragment and query: ``vip#2024`` and ``vip#2025`` were one asset); ``=`` and the
    path's other delimiters (RFC 3986), and ``safe``, are kept."""
    return quote(name, safe=safe + "!$&'()*+,;=:@")


def iceberg_table_uri(catalog_name: str, identifier: str) -> str:
    """``iceberg://<catalog>/<namespace>/<table>``: how assets and lineage name a table."""
    parts = identifier.split(".")
    return f"iceberg://{catalog_name}/" + "/".join(uri_path(part, safe="") for part in parts)


class TableWriter(Protocol):
    """Where the report tables go: each named table replaced as a whole; ``write_table``
    describes what it wrote (at least ``uri`` and ``rows``)."""

    def write_table(self, name: str, table: pa.Table) -> dict[str, Any]: ...


@dataclass
class CohortFile:
    """Where a cohort export writes its file (``path``, named ``uri`` in the asset event),
    the metadata it records, what publishing did (filled once the block ends), and ``stream``
    when the rows go elsewhere than ``path`` (an Iceberg day's data files)."""

    path: StoragePath | str
    uri: str
    metadata: dict[str, str] = field(default_factory=dict)
    published: dict[str, Any] = field(default_factory=dict)
    stream: StreamOpener | None = None


class Destination(Protocol):
    """Parquet objects or Iceberg tables, holding rows of one ``identity`` per run."""

    identity: Identity

    def check(self, days: Sequence[str], names: Sequence[str]) -> None:
        """Check every place the run will write (``days``; ``names``: the report tables, or
        ``("users",)`` for a cohort) before the first request, refusing by name."""

    def cohort_file(self, day: str) -> contextlib.AbstractContextManager[CohortFile]:
        """A place to write the day's cohort file, published only when the block succeeds."""

    def staging(self, day: str) -> StoragePath:
        """Where a cohort read in shards keeps its parts and records (no reader sees it)."""

    def publish_parts(self, day: str, parts: Sequence[StoragePath]) -> CohortFile:
        """Publish a cohort's parts as the day's output, all at once or not at all."""

    def held_schema(self, day: str) -> pa.Schema | None:
        """The columns the destination holds already (``None`` when empty), which a
        ``number`` column's type and the ``schema_contract`` meet: under a Parquet prefix the
        newest earlier day's file of the identity, for one Parquet object that object, for
        an Iceberg table the whole table's columns (every identity and day)."""

    def report_tables(self, day: str, names: Sequence[str]) -> TableWriter:
        """The writer of one day's report tables (``names``, main table first)."""

    def uri(self, day: str, names: Sequence[str]) -> str:
        """What names the run's main output (the day's main object, or the main table)."""

    def lineage(self, days: Sequence[str], names: Sequence[str]) -> list[LineageTarget]:
        """Every object or table the run writes, as lineage names it."""
