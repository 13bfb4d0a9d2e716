"""IcebergCatalogHook: an Airflow connection as a pyiceberg catalog (the ``[iceberg]`` extra)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

from airflow_provider_analytics.client.config import connection_extras
from airflow_provider_analytics.core.redaction import remember

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog


_FIELDS = ("host", "port", "schema", "login", "password")  # what catalog_properties reads


class IcebergCatalogHook(BaseHook):
    """Open the Iceberg catalog (SQL, REST or AWS Glue) an Airflow connection describes: its
    extra holds pyiceberg's catalog and FileIO properties, ``catalog_name`` names the catalog
    (default: the connection id). docs/howto/iceberg.md gives each kind's fields; see
    :func:`~airflow_provider_analytics.output.iceberg.catalog_properties`.

    :param iceberg_conn_id: the connection's id.
    """

    conn_name_attr = "iceberg_conn_id"
    default_conn_name = "iceberg_default"
    conn_type = "iceberg"
    hook_name = "Apache Iceberg catalog (analytics)"

    def __init__(self, iceberg_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.iceberg_conn_id = iceberg_conn_id

    @cached_property
    def connection(self) -> Any:
        return self.get_connection(self.iceberg_conn_id)

    @property
    def catalog_name(self) -> str:
        """The catalog's name for pyiceberg (a SQL catalog's tables are kept under it)."""
        return str(connection_extras(self.connection).get("catalog_name") or self.iceberg_conn_id)

    def get_conn(self) -> Catalog:
        """The pyiceberg catalog (SQL, REST or Glue) for this connection."""
        from airflow_provider_analytics.output.iceberg import (
            catalog_properties,
            catalog_secrets,
            open_catalog,
        )

        connection = self.connection
        if connection.password:
            mask_secret(connection.password)
        fields = {name: getattr(connection, name) for name in _FIELDS}
        properties = catalog_properties(**fields, extra=connection_extras(connection))
        secrets = catalog_secrets(properties)  # the extra's too, with the password or without
        for secret in secrets:
            mask_secret(secret)
        remember(secrets)
        return open_catalog(self.catalog_name, properties)
