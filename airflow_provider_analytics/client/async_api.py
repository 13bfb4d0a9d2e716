"""``AsyncAnalyticsClient``: the client for code that runs in an event loop (the triggerer).

It sends requests described as data (an ``ApiCall``) through ``AsyncHttpSession``, with the
retries, deadline, errors and answer checks of the synchronous ``AnalyticsClient.request_json``.
Importing it loads ``httpx``: import it where it is used, not at DAG-parse time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.client.async_session import AsyncHttpSession
from airflow_provider_analytics.client.config import ClientConfig
from airflow_provider_analytics.client.responses import ResponseReader
from airflow_provider_analytics.core.errors import AnalyticsConfigurationError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from types import TracebackType

    import httpx

    from airflow_provider_analytics.client.operations import ApiCall


class AsyncAnalyticsClient:
    """Asynchronous client of the platform's open API; use it as an async context manager.

    :param config: where the platform is and which credentials to send.
    :param client: an ``httpx.AsyncClient`` to use instead of a new one (the caller keeps
        ownership and closes it).
    :param sleep: waits between retries (injectable for tests).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if not isinstance(config, ClientConfig):
            raise AnalyticsConfigurationError(
                f"AsyncAnalyticsClient needs a ClientConfig, got {type(config).__name__}"
            )
        self._config = config
        self._http = AsyncHttpSession(config, client=client, sleep=sleep)

    @property
    def config(self) -> ClientConfig:
        """The configuration the client was built with (its repr masks the secrets)."""
        return self._config

    def __repr__(self) -> str:
        return (
            f"AsyncAnalyticsClient(base_url={self._config.base_url!r}, "
            f"utm_prefix={self._config.utm_prefix!r})"
        )

    async def __aenter__(self) -> AsyncAnalyticsClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the connection pool (if the client created it)."""
        await self._http.aclose()

    async def request_json(self, call: ApiCall) -> Any:
        """Send a request described as data and return its decoded JSON answer.

        :param call: the operation, its query, body and path parameters.
        """
        path = call.path(self._config.utm_prefix)
        response = await self._http.request(
            call.operation, path, params=call.params, json=call.body
        )
        return ResponseReader(call.operation.name, self._config.secrets()).answer(
            response, call.asked
        )
