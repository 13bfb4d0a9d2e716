"""The asynchronous transport: one ``httpx.AsyncClient`` driving :class:`CallAttempts`.

The twin of :mod:`~airflow_provider_analytics.client.session` for code that runs in an event
loop (the triggerer). Both let :mod:`~airflow_provider_analytics.client.attempts` decide what
to send and what to do after each attempt; here the waits are ``asyncio.sleep`` and the
call's deadline is an ``asyncio.timeout`` around each attempt. Only this module and
:mod:`~airflow_provider_analytics.client.async_api` import ``httpx``; nothing imported when a
DAG file is parsed loads them.

The proxy is the one :mod:`~airflow_provider_analytics.client.proxies` decides, given when the
client is built (``trust_env=False``: ``httpx`` reads no proxy variable itself; the CA
variables ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` are still honoured). Header values are
sent as Latin-1 bytes, as ``requests`` sends them (``httpx`` would encode text as ASCII and
fail on a Latin-1 token).

Each attempt takes its turn with the same per-process throttle as the synchronous transport
(:mod:`~airflow_provider_analytics.client.throttle`), waiting without blocking the loop.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from airflow_provider_analytics.client.attempts import CallAttempts
from airflow_provider_analytics.client.proxies import Route, proxy_route
from airflow_provider_analytics.core.retry import RetryPolicy

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from types import TracebackType

    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.operations import Operation
    from airflow_provider_analytics.client.throttle import Slot


def _tls(verify: bool | str) -> bool | ssl.SSLContext:
    """``ClientConfig.verify`` as httpx takes it: a CA bundle (file or directory) becomes a
    context, as ``requests`` reads the same setting; ``True`` is httpx's default context,
    which honours ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``."""
    if verify is True:
        return httpx.create_ssl_context(verify=True, trust_env=True)
    if isinstance(verify, bool):
        return verify
    if Path(verify).is_dir():
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify)


def _new_client(config: ClientConfig, route: Route) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        verify=_tls(config.verify),
        follow_redirects=False,
        limits=httpx.Limits(max_keepalive_connections=config.pool_maxsize),
        proxy=route.proxy_url,
        trust_env=False,
    )


def _latin1(headers: Mapping[str, str]) -> dict[bytes, bytes]:
    """Headers as the bytes ``requests`` (``http.client``) sends: values in Latin-1."""
    return {name.encode("ascii"): value.encode("latin-1") for name, value in headers.items()}


class AsyncHttpSession:
    """Sends the spec's operations from an event loop over one connection pool.

    :param config: where and how to connect.
    :param client: an ``httpx.AsyncClient`` to use instead of a new one; the caller keeps
        ownership and closes it, and its proxy settings are the caller's.
    :param sleep: waits between attempts (injectable for tests).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._config = config
        self._route = proxy_route(config)
        self._owns_client = client is None
        self._client = _new_client(config, self._route) if client is None else client
        self._retry = RetryPolicy.from_config(config)
        self._sleep = sleep

    async def aclose(self) -> None:
        """Close the pool if this object created it."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncHttpSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _take_turn(self, call: CallAttempts) -> Slot:
        """Wait until the platform's hold-off has passed and a place among the calls in flight
        is free, and take it (as the synchronous transport does)."""
        while True:
            while (wait := call.hold_off()) is not None:
                await self._sleep(wait)
            slot = await call.throttle.acquire_async(call.concurrency, call.place_timeout())
            if slot is None:
                raise call.no_place_error()
            if not call.held_off():
                return slot
            slot.release()

    async def request(self, operation: Operation, path: str, **options: Any) -> httpx.Response:
        """Send ``operation`` and return its successful (2xx) answer, body read.

        Same arguments (but ``read_timeout``), retries, deadline and errors as
        :meth:`~airflow_provider_analytics.client.session.HttpSession.request` (there is no
        streaming here).
        """
        call = CallAttempts(
            self._config, self._retry, operation, path, route=self._route, **options
        )
        out = call.request
        headers = _latin1(out.headers)
        timeout = httpx.Timeout(out.read_timeout, connect=out.connect_timeout)

        async def attempt() -> httpx.Response:
            slot = await self._take_turn(call)
            try:
                left = call.start()
                async with asyncio.timeout(left):
                    response = await self._client.request(
                        out.method,
                        out.url,
                        params=out.params,
                        json=out.json,
                        headers=headers,
                        timeout=timeout,
                    )
            except TimeoutError as exc:  # the call's deadline, not an httpx timeout
                error = call.failed(exc, cut_by_deadline=True)
            except (httpx.RequestError, httpx.InvalidURL) as exc:
                error = call.failed(exc)
            else:
                call.judge(response)
                return response
            finally:
                slot.release()  # the body is read (no streaming here)
            raise error from None

        response: httpx.Response = await call.retrying_async(self._sleep)(attempt)
        return response
