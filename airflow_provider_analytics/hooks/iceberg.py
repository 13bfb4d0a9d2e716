"""IcebergCatalogHook: an Airflow connection as a pyiceberg catalog (the ``[iceberg]`` extra)."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.log import mask_secret

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog


class IcebergCatalogHook(BaseHook):
    """Open the Iceberg catalog an Airflow connection describes.

    The connection's extra holds pyiceberg's catalog properties: ``{"type": "sql", "uri":
    "sqlite:////data/catalog.db", "warehouse": "file:///data/warehouse"}`` locally,
    ``{"uri": "postgresql+psycopg2://iceberg@db:5432/catalog", "warehouse": "s3://..."}``
    with the database password in the password field, a REST catalog (host, port,
    schema ``https``; the password is its bearer token), or AWS Glue (``{"type": "glue",
    "warehouse": "s3://lake/warehouse"}``; login and password are the AWS access key id and
    secret, else the standard AWS credentials and region apply; host and port, when given,
    are a Glue endpoint of your own). Object storage takes pyiceberg's FileIO properties in
    the extra (``s3.endpoint``, ``s3.region``, ...). ``catalog_name`` in the extra names the
    catalog for pyiceberg (default: the connection id); a SQL catalog keeps its tables under
    that name. See
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
        return str((self.connection.extra_dejson or {}).get("catalog_name") or self.iceberg_conn_id)

    def get_conn(self) -> Catalog:
        """The pyiceberg catalog (SQL, REST or Glue) for this connection."""
        from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog

        connection = self.connection
        if connection.password:
            mask_secret(connection.password)
        properties = catalog_properties(
            host=connection.host,
            port=connection.port,
            schema=connection.schema,
            login=connection.login,
            password=connection.password,
            extra=connection.extra_dejson,
        )
        for key in ("token", "credential", "uri", "client.secret-access-key"):
            if key in properties and connection.password and connection.password in properties[key]:
                mask_secret(properties[key])
        return open_catalog(self.catalog_name, properties)
