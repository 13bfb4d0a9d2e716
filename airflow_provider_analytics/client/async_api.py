"""``AsyncAnalyticsClient``: the client for code that runs in an event loop (the triggerer).

It sends requests described as data (an ``ApiCall``) over one ``httpx.AsyncClient``, driving the
same :class:`~airflow_provider_analytics.client.attempts.CallAttempts` as the synchronous
client, so turns, retries, deadline, errors and answer checks are the same. It loads ``httpx``:
import it where it is used, not at DAG-parse time.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from airflow_provider_analytics.client.answers import ResponseReader
from airflow_provider_analytics.client.attempts import CallAttempts
from airflow_provider_analytics.client.config import ClientConfig, ConfiguredClient
from airflow_provider_analytics.client.proxies import proxy_route
from airflow_provider_analytics.core.retry import RetryPolicy

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from airflow_provider_analytics.client.operations import ApiCall


def _tls(verify: bool | str) -> bool | ssl.SSLContext:
    """``ClientConfig.verify`` as httpx takes it, read as ``requests`` reads it (``True``
    honours ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``)."""
    if verify is True:
        return httpx.create_ssl_context(verify=True, trust_env=True)
    if isinstance(verify, bool):
        return verify
    if Path(verify).is_dir():
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify)


class AsyncAnalyticsClient(ConfiguredClient):
    """Asynchronous client of the platform's open API; use it as an async context manager.

    :param config: where the platform is and which credentials to send.
    :param client: an ``httpx.AsyncClient`` to use instead of a new one (the caller keeps
        ownership and closes it, and its proxy settings are the caller's).
    :param sleep: waits between retries (injectable for tests).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(config)
        self._route = proxy_route(config)
        self._owns_client = client is None
        if client is None:
            client = httpx.AsyncClient(  # the proxy decided once; httpx reads none itself
                verify=_tls(config.verify),
                follow_redirects=False,
                limits=httpx.Limits(max_keepalive_connections=config.pool_maxsize),
                proxy=self._route.proxy_url,
                trust_env=False,
            )
        self._client = client
        self._retry = RetryPolicy.from_config(config)
        self._sleep = sleep

    async def __aenter__(self) -> AsyncAnalyticsClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the connection pool (if the client created it)."""
        if self._owns_client:
            await self._client.aclose()

    async def request_json(self, call: ApiCall) -> Any:
        """Send a request described as data and return its decoded JSON answer.

        :param call: the operation, its query, body and path parameters.
        """
        attempts = CallAttempts(
            self._config,
            self._retry,
            call.operation,
            path_params=call.path_params,
            params=call.params,
            json=call.body,
            route=self._route,
        )
        headers = {  # Latin-1, as requests sends them (httpx would fail on a Latin-1 token)
            name.encode("ascii"): value.encode("latin-1")
            for name, value in attempts.headers.items()
        }
        timeout = httpx.Timeout(attempts.read_timeout, connect=attempts.connect_timeout)

        async def attempt() -> httpx.Response:
            while True:
                while (wait := attempts.hold_off()) is not None:
                    await self._sleep(wait)
                limit, within = attempts.concurrency, attempts.place_timeout()
                if slot := attempts.kept(await attempts.throttle.acquire_async(limit, within)):
                    break
            try:
                async with (
                    asyncio.timeout(attempts.start()),
                    self._client.stream(
                        attempts.method,
                        attempts.url,
                        params=attempts.params,
                        json=attempts.json,
                        headers=headers,
                        timeout=timeout,
                    ) as response,
                ):
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        attempts.grown(body, chunk, response)
                    response._content = bytes(body)
            except TimeoutError as exc:  # the call's deadline, not an httpx timeout
                error = attempts.failed(exc, cut_by_deadline=True)
            except (httpx.RequestError, httpx.InvalidURL) as exc:
                error = attempts.failed(exc)
            else:
                attempts.judge(response)
                return response
            finally:
                slot.release()  # the body is read
            raise error from None

        response: httpx.Response = await attempts.retrying_async(self._sleep)(attempt)
        reader = ResponseReader(call.operation.name, call.operation.after_sending)
        return reader.answer(response, call.asked)
