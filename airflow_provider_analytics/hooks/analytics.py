"""AnalyticsHook: an Airflow connection of type ``analytics`` turned into an API client."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from airflow.sdk import BaseHook, conf
from airflow.sdk.log import mask_secret

from airflow_provider_analytics.client import AnalyticsClient
from airflow_provider_analytics.client.config import ConnectionSettings
from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.provider_info import DEFAULT_CONN_ID

if TYPE_CHECKING:
    from airflow.sdk import Connection


def client_config_from_connection(conn: Connection) -> ConnectionSettings:
    """The settings of an ``analytics`` connection (the client's configuration), read through
    their one declaration; every secret is registered with Airflow's masker, and the client's
    own masking follows the same ``[logging] min_length_masked_secret``."""
    redaction.set_min_secret_length(
        conf.getint("logging", "min_length_masked_secret", fallback=redaction.MIN_SECRET_LENGTH)
    )
    settings = ConnectionSettings.from_connection(conn)
    for secret in settings.secrets():
        mask_secret(secret)
    return settings


class AnalyticsHook(BaseHook):
    """Interact with the analytics platform's open API through an ``analytics`` connection:
    every operation is a method of its :class:`AnalyticsClient`
    (``hook.get_conn().create_utm(...)``), built on first use: making the hook does no I/O.

    :param analytics_conn_id: id of the ``analytics`` connection.
    """

    conn_name_attr = "analytics_conn_id"
    default_conn_name = DEFAULT_CONN_ID
    conn_type = "analytics"
    hook_name = "Analytics"

    def __init__(self, analytics_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.analytics_conn_id = analytics_conn_id

    def __repr__(self) -> str:
        return f"{type(self).__name__}(analytics_conn_id={self.analytics_conn_id!r})"

    @cached_property
    def connection(self) -> Connection:
        """The Airflow connection, looked up once per hook (lookups may reach a secrets backend)."""
        return self.get_connection(self.analytics_conn_id)

    @cached_property
    def client_config(self) -> ConnectionSettings:
        """The connection's settings: the client's configuration (secrets masked)."""
        return client_config_from_connection(self.connection)

    @cached_property
    def client(self) -> AnalyticsClient:
        return AnalyticsClient(self.client_config)

    @cached_property
    def project_timezone(self) -> str | None:
        """The project's timezone (extra ``timezone``) the platform writes datetimes in; ``None``
        when unset (the jobs then read UTC, and say so)."""
        return self.client_config.timezone

    def get_conn(self) -> AnalyticsClient:
        """The API client for this connection (built once per hook)."""
        return self.client

    def close(self) -> None:
        """Release pooled HTTP connections, if a client was built."""
        if "client" in self.__dict__:
            self.client.close()
            del self.__dict__["client"]

    def test_connection(self) -> tuple[bool, str]:
        """Make a harmless read call and report success or the reason it failed."""
        try:
            return self.get_conn().test_connection()
        except Exception as error:  # the UI shows the reason instead of a stack trace
            return False, str(error)
