"""How written data is named for lineage and for Airflow assets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from airflow.sdk import ObjectStoragePath


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
