"""AnalyticsHook: an Airflow connection of type ``analytics`` turned into an API client."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from airflow.sdk import BaseHook, conf
from airflow.sdk.log import mask_secret

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.client.config import proxy_secrets
from airflow_provider_analytics.core import redaction
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsValidationError,
    bounded_repr,
)
from airflow_provider_analytics.core.progress import progress_interval
from airflow_provider_analytics.provider_info import APP_KEY_EXTRA, DEFAULT_CONN_ID

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from airflow.sdk import Connection

R = TypeVar("R")

_INT_EXTRAS = ("max_attempts", "pool_maxsize")
_FLOAT_EXTRAS = (
    "connect_timeout",
    "read_timeout",
    "export_read_timeout",
    "backoff_base",
    "retry_after_max",
)
_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off"}


def _extra(extras: Mapping[str, Any], name: str, *aliases: str) -> Any:
    """An extra by its name, its UI-prefixed form ``extra__analytics__<name>`` or an alias."""
    for key in (name, f"extra__analytics__{name}", *aliases):
        value = extras.get(key)
        if value not in (None, ""):
            return value
    return None


def _as_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _BOOL_TRUE:
        return True
    if text in _BOOL_FALSE:
        return False
    raise AnalyticsConfigurationError(
        f"connection extra {name!r} must be true or false (got {value!r})"
    )


def _as_number(name: str, value: Any, kind: Callable[[Any], R]) -> R:
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise AnalyticsConfigurationError(
            f"connection extra {name!r} must be a number (got {value!r})"
        ) from None


def _max_concurrent_calls(value: Any) -> int:
    """The ``max_concurrent_calls`` extra: a whole number of at least 1, written as a number
    (``4`` or ``4.0``); text, a bool, 0 or a fraction are refused."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < 1:
        raise AnalyticsConfigurationError(
            "connection extra 'max_concurrent_calls' must be a whole number of calls of at "
            f"least 1, written as a number such as 4 (got {bounded_repr(value, 40)})"
        )
    return int(value)


def _progress_interval(value: Any) -> float:
    """The ``progress_interval`` extra: a JSON number of seconds above 0, never text."""
    try:
        return progress_interval(value)
    except AnalyticsValidationError:
        raise AnalyticsConfigurationError(
            f"connection extra 'progress_interval' must be a number of seconds above 0, "
            f"written as a number (got {bounded_repr(value, 40)})"
        ) from None


def _base_url(conn: Connection, extras: Mapping[str, Any]) -> str:
    host = (conn.host or "").strip()
    if not host:
        raise AnalyticsConfigurationError(
            f"connection {conn.conn_id!r} has no host: set it to the platform's base URL, "
            "for example https://analytics.example.com:4005"
        )
    if "://" not in host:
        scheme = _extra(extras, "scheme") or (
            conn.schema if conn.schema in ("http", "https") else "https"
        )
        host = f"{scheme}://{host}"
    if conn.port and host.count(":") < 2:
        host = f"{host.rstrip('/')}:{conn.port}"
    return host


def client_config_from_connection(conn: Connection) -> ClientConfig:
    """Build the client's configuration from an ``analytics`` connection.

    Host is the base URL, password the project ``token``; extras carry ``app_api_key`` (the
    appKey; ``app_key`` and ``appKey`` are still read), ``xtoken``, ``utm_prefix``, timeouts,
    ``verify``, ``max_attempts``, ``max_concurrent_calls`` (calls in flight to the platform
    from one process), ``retry_after_max``, ``allow_insecure_http``, ``proxy`` and
    ``progress_interval`` (seconds between progress lines; the bar is off in Airflow). Every secret
    is registered with Airflow's secret masker before anything can log it, and the client's own
    masking follows the same rule (``[logging] min_length_masked_secret``).

    :param conn: the Airflow connection.
    """
    redaction.set_min_secret_length(
        conf.getint("logging", "min_length_masked_secret", fallback=redaction.MIN_SECRET_LENGTH)
    )
    extras = conn.extra_dejson or {}
    token = conn.password or _extra(extras, "token")
    app_key = _extra(extras, APP_KEY_EXTRA) or _extra(extras, "app_key", "appKey")
    xtoken = _extra(extras, "xtoken")
    proxy = _extra(extras, "proxy")
    for secret in (token, app_key, xtoken, *proxy_secrets(str(proxy or ""))):
        if secret:
            mask_secret(secret)

    options: dict[str, Any] = {}
    for name in _INT_EXTRAS:
        if (value := _extra(extras, name)) is not None:
            options[name] = _as_number(name, value, int)
    for name in _FLOAT_EXTRAS:
        if (value := _extra(extras, name)) is not None:
            options[name] = _as_number(name, value, float)
    if (prefix := _extra(extras, "utm_prefix")) is not None:
        options["utm_prefix"] = str(prefix)
    if (insecure := _extra(extras, "allow_insecure_http")) is not None:
        options["allow_insecure_http"] = _as_bool("allow_insecure_http", insecure)
    if proxy is not None:
        options["proxy"] = str(proxy)
    if (calls := _extra(extras, "max_concurrent_calls")) is not None:
        options["max_concurrent_calls"] = _max_concurrent_calls(calls)
    if (interval := _extra(extras, "progress_interval")) is not None:
        options["progress_interval"] = _progress_interval(interval)
    verify = _extra(extras, "verify")
    if verify is not None:
        try:
            options["verify"] = _as_bool("verify", verify)
        except AnalyticsConfigurationError:
            options["verify"] = str(verify)  # a CA bundle path
    return ClientConfig(
        base_url=_base_url(conn, extras),
        token=token,
        app_key=app_key,
        xtoken=xtoken,
        progress_bar=False,  # a task's progress goes to its log, in lines
        **options,
    )


class AnalyticsHook(BaseHook):
    """Interact with the analytics platform's open API through an ``analytics`` connection.

    The hook turns the connection into an :class:`AnalyticsClient`; every operation of the
    interface is a method of that client (``hook.get_conn().create_utm(...)``). The client is
    built on first use, so constructing the hook does no I/O.

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
    def client_config(self) -> ClientConfig:
        """The client configuration read from the connection (secrets masked)."""
        return client_config_from_connection(self.connection)

    @cached_property
    def client(self) -> AnalyticsClient:
        return AnalyticsClient(self.client_config)

    @cached_property
    def project_timezone(self) -> str | None:
        """The project's timezone (connection extra ``timezone``), in which the platform writes
        datetime values; ``None`` when unset (the jobs then read UTC, and say so)."""
        value = _extra(self.connection.extra_dejson or {}, "timezone")
        return None if value in (None, "") else str(value)

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
