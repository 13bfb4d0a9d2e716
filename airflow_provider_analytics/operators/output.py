"""What operators that write to object storage or Iceberg share: the destination, its Airflow
Asset and its lineage.

Each such operator declares, unless given ``outlets``, one Asset for its destination: the part
of the URI before anything templated (``.../cohort_users/`` for
``.../cohort_users/cohort=vip/dt={{ ds }}/users.parquet``), so a downstream DAG can be scheduled
on it. At run time the asset event carries the rendered object's URI and row count, and, where
the OpenLineage provider is installed, the task reports the platform as input and the object
as output. With ``iceberg_table`` instead of ``destination``, the asset and the lineage output
are the table (``iceberg://<catalog>/<namespace>/<table>``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset

from airflow_provider_analytics.operators.base import AnalyticsBaseOperator

if TYPE_CHECKING:
    from airflow.sdk import Context, ObjectStoragePath

_CONN_IN_AUTHORITY = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://[^@/]+@")


def without_conn_id(uri: str) -> str:
    """``s3://conn_id@bucket/key`` -> ``s3://bucket/key``: the connection is not the data's name."""
    return _CONN_IN_AUTHORITY.sub(r"\g<scheme>://", uri)


def destination_asset(destination: str) -> Asset | None:
    """The Asset standing for every object a templated ``destination`` can render to.

    :param destination: the operator's (unrendered) destination.
    """
    static = destination.split("{{", 1)[0]
    if "/" not in static:
        return None
    static = static[: static.rfind("/") + 1]
    if static.startswith("/"):
        static = f"file://{static}"
    if "://" not in static:
        return None
    uri = without_conn_id(static)
    return Asset(uri=uri, name=uri)


def iceberg_asset(iceberg_conn_id: str, iceberg_table: str) -> Asset | None:
    """The Asset standing for an Iceberg table (none while the name is templated).

    :param iceberg_conn_id: the catalog's connection id, which names the catalog.
    :param iceberg_table: ``namespace.table``.
    """
    if "{{" in iceberg_table or "{{" in iceberg_conn_id:
        return None
    uri = iceberg_table_uri(iceberg_conn_id, iceberg_table)
    return Asset(uri=uri, name=uri)


def iceberg_table_uri(catalog_name: str, identifier: str) -> str:
    """``iceberg://<catalog>/<namespace>/<table>``: how assets and lineage name a table."""
    namespace, _, table = identifier.rpartition(".")
    return f"iceberg://{catalog_name}/{namespace.replace('.', '/')}/{table}"


class AnalyticsOutputOperator(AnalyticsBaseOperator):
    """Base of operators that write one object, or one Iceberg table's day, per run.

    :param destination: object URI or a prefix ending in ``/`` (templated by the subclass).
    :param iceberg_table: instead of ``destination``: the Iceberg table ``namespace.table``
        whose ``dt`` partition for the run's day is replaced (needs the ``[iceberg]`` extra).
    :param iceberg_conn_id: the connection describing the Iceberg catalog.
    """

    lineage_source = "analytics"
    """What the input dataset is called in lineage; subclasses name their source."""

    def __init__(
        self,
        *,
        destination: str | None = None,
        iceberg_table: str | None = None,
        iceberg_conn_id: str = "iceberg_default",
        **kwargs: Any,
    ) -> None:
        if (destination is None) == (iceberg_table is None):
            raise ValueError("give exactly one of destination and iceberg_table")
        if "outlets" not in kwargs:
            asset = (
                destination_asset(destination)
                if destination is not None
                else iceberg_asset(iceberg_conn_id, str(iceberg_table))
            )
            if asset is not None:
                kwargs["outlets"] = [asset]
        super().__init__(**kwargs)
        self.destination = destination or ""
        self.iceberg_table = iceberg_table
        self.iceberg_conn_id = iceberg_conn_id
        self.written_uri: str | None = None

    def iceberg_catalog(self) -> tuple[Any, str]:
        """The pyiceberg catalog of ``iceberg_conn_id``, and the table's URI (which names the
        catalog by the connection id, as the Asset declared at parse time does)."""
        from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook

        catalog = IcebergCatalogHook(iceberg_conn_id=self.iceberg_conn_id).get_conn()
        return catalog, iceberg_table_uri(self.iceberg_conn_id, str(self.iceberg_table))

    def publish_output(
        self, context: Context, path: ObjectStoragePath | str, **details: Any
    ) -> None:
        """Record what was written (an object, or a table's URI) on the asset events and for
        lineage."""
        self.written_uri = str(path)
        for outlet in self.outlets:
            if isinstance(outlet, Asset):
                context["outlet_events"][outlet].extra = {"uri": self.written_uri, **details}

    def lineage_input_name(self) -> str:
        return self.lineage_source

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """Input: the platform's analysis or cohort; output: the object written."""
        from airflow.providers.common.compat.openlineage.facet import Dataset
        from airflow.providers.openlineage.extractors import OperatorLineage

        base_url = self.hook.client_config.base_url.rstrip("/")
        inputs = [Dataset(namespace=base_url, name=self.lineage_input_name())]
        outputs = []
        if self.written_uri:
            scheme, _, rest = without_conn_id(self.written_uri).partition("://")
            if scheme == "iceberg":
                catalog, _, table = rest.partition("/")
                name = table.replace("/", ".")
                outputs.append(Dataset(namespace=f"iceberg://{catalog}", name=name))
            elif scheme == "file":
                outputs.append(Dataset(namespace="file", name=rest))
            else:
                bucket, _, key = rest.partition("/")
                outputs.append(Dataset(namespace=f"{scheme}://{bucket}", name=key))
        return OperatorLineage(inputs=inputs, outputs=outputs)
