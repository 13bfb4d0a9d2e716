"""The synchronous transport: one pooled ``requests.Session`` driving :class:`CallAttempts`.

Every operation goes through :meth:`HttpSession.request`. What to send and what each attempt's
outcome is are decided by :mod:`~airflow_provider_analytics.client.attempts`, shared with the
asynchronous transport, and the retry engine repeats the attempts; this module only sends,
sleeps and closes. The adapter's own retries
are off (``max_retries=0``): retrying is decided per operation, because creating something
twice is not the same as reading it twice. The proxy is decided by
:mod:`~airflow_provider_analytics.client.proxies` and given with every request, so
``requests`` adds none of its own from the environment.

Every attempt first takes its turn with the platform's throttle
(:mod:`~airflow_provider_analytics.client.throttle`): it waits out a hold-off another call's
``Retry-After`` set, then for a place among the calls in flight from this process. An ordinary
answer gives its place back once its body has been read; a streamed one
(:meth:`HttpSession.open_stream`) keeps it until the caller releases it.
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING, Any

import requests

from airflow_provider_analytics.client.attempts import CallAttempts
from airflow_provider_analytics.client.deadline import DeadlineAdapter, deadline
from airflow_provider_analytics.client.proxies import proxy_route
from airflow_provider_analytics.core.retry import RetryPolicy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.operations import Operation
    from airflow_provider_analytics.client.throttle import Slot


def _new_session(config: ClientConfig) -> requests.Session:
    session = requests.Session()
    adapter = DeadlineAdapter(pool_maxsize=config.pool_maxsize, max_retries=0)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


class HttpSession:
    """Sends the spec's operations over one connection pool.

    :param config: where and how to connect.
    :param session: a ``requests.Session`` to use instead of a new pooled one; the caller
        keeps ownership and closes it.
    :param sleep: waits between attempts (injectable for tests).
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._config = config
        self._owns_session = session is None
        self._session = _new_session(config) if session is None else session
        self._retry = RetryPolicy.from_config(config)
        self._sleep = sleep
        self._route = proxy_route(config)

    def close(self) -> None:
        """Close the pool if this object created it."""
        if self._owns_session:
            self._session.close()

    def request(
        self,
        operation: Operation,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        read_timeout: float | None = None,
        extra_secrets: Iterable[str] = (),
        time_limit: float | None = None,
    ) -> requests.Response:
        """Send ``operation`` and return its successful (2xx) answer, body read.

        :param operation: the operation; decides credentials and retry safety.
        :param path: request path (already percent-encoded) below the base URL.
        :param params: query parameters (``None`` values are dropped).
        :param json: JSON body, or ``None`` for no body.
        :param read_timeout: read timeout instead of the configured one.
        :param extra_secrets: values of this request to mask in errors, besides the
            credentials (a password in the body, for example).
        :param time_limit: seconds the whole call may take, retries and turns included,
            instead of ``request_deadline``. Enforced on the pool this object creates.
        :raises AnalyticsConfigurationError: the needed credentials are not configured, or
            the environment names a proxy that plain ``http://`` may not go through.
        :raises AnalyticsApiError: the server answered with an error status.
        :raises AnalyticsRateLimitError: also when the platform's hold-off would outlast the
            call's deadline.
        :raises AnalyticsTransportError: no answer, after the retries allowed, or no turn
            among the calls in flight within the deadline.
        """
        options = {"params": params, "json": json, "read_timeout": read_timeout}
        options |= {"extra_secrets": extra_secrets, "time_limit": time_limit}
        response, slot = self._exchange(operation, path, stream=False, options=options)
        slot.release()
        return response

    def open_stream(
        self, operation: Operation, path: str, **options: Any
    ) -> tuple[requests.Response, Slot]:
        """Send ``operation`` and return its successful answer with the body unread, and the
        place among the calls in flight it holds.

        Release the place once the body has been read or closed; if neither happens, it is
        released when the answer is garbage-collected. Arguments and errors as in
        :meth:`request` (``time_limit`` runs until the headers have arrived).
        """
        response, slot = self._exchange(operation, path, stream=True, options=options)
        weakref.finalize(response, slot.release)
        return response, slot

    def _take_turn(self, call: CallAttempts) -> Slot:
        """Wait until the platform's hold-off has passed and a place among the calls in flight
        is free, and take it."""
        while True:
            while (wait := call.hold_off()) is not None:
                self._sleep(wait)
            slot = call.throttle.acquire(call.concurrency, call.place_timeout())
            if slot is None:
                raise call.no_place_error()
            if not call.held_off():
                return slot
            slot.release()  # another call got a Retry-After meanwhile: wait that out first

    def _exchange(
        self, operation: Operation, path: str, *, stream: bool, options: dict[str, Any]
    ) -> tuple[requests.Response, Slot]:
        call = CallAttempts(
            self._config, self._retry, operation, path, route=self._route, **options
        )
        out = call.request
        proxies = self._route.for_requests(out.url)

        def attempt() -> tuple[requests.Response, Slot]:
            slot = self._take_turn(call)
            try:
                left = call.start()
                with deadline(left) as watch:
                    response = self._session.request(
                        out.method,
                        out.url,
                        params=out.params,
                        json=out.json,
                        headers=out.headers,
                        timeout=(out.connect_timeout, out.read_timeout),
                        verify=self._config.verify,
                        stream=stream,
                        allow_redirects=False,
                        proxies=proxies,  # type: ignore[arg-type]
                    )
            except requests.RequestException as exc:
                slot.release()
                error = call.failed(exc, cut_by_deadline=watch.expired)
            except BaseException:
                slot.release()
                raise
            else:
                try:
                    call.judge(response)
                except BaseException:
                    slot.release()
                    response.close()
                    raise
                return response, slot
            raise error from None

        return call.retrying(self._sleep)(attempt)
