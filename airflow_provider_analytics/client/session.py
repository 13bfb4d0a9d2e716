"""The synchronous transport: one pooled ``requests.Session`` driving
:class:`~airflow_provider_analytics.client.attempts.CallAttempts`. A read timeout bounds each
wait, not the whole call, so the pool's connections tell the thread's :class:`_Watch` which
socket they sent on, and :func:`deadline` shuts it down when the call's time is up."""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from typing import TYPE_CHECKING, Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from airflow_provider_analytics.client.attempts import CallAttempts
from airflow_provider_analytics.client.proxies import proxy_route
from airflow_provider_analytics.core.retry import RetryPolicy

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.operations import Operation
    from airflow_provider_analytics.client.throttle import Slot

_current = threading.local()


class _Watch:
    """The socket of one request and whether its deadline has passed."""

    def __init__(self) -> None:
        self.sock: socket.socket | None = None
        self.expired = False
        self._lock = threading.Lock()

    def attach(self, connection: HTTPConnection) -> None:
        """Keep the socket (the connection may drop it while the answer is still read)."""
        with self._lock:
            self.sock = connection.sock
            if self.expired:
                self._cut()

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            self._cut()

    def _cut(self) -> None:
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)


def _watched(connection: type[HTTPConnection]) -> type[HTTPConnection]:

    def request(self: HTTPConnection, *args: Any, **kwargs: Any) -> None:
        connection.request(self, *args, **kwargs)
        watch = getattr(_current, "watch", None)
        if watch is not None:
            watch.attach(self)

    return type(f"_Watched{connection.__name__}", (connection,), {"request": request})


_WATCHED_POOLS = {
    scheme: type(f"_Watched{pool.__name__}", (pool,), {"ConnectionCls": _watched(connection)})
    for scheme, pool, connection in (
        ("http", HTTPConnectionPool, HTTPConnection),
        ("https", HTTPSConnectionPool, HTTPSConnection),
    )
}


class DeadlineAdapter(HTTPAdapter):
    """An ``HTTPAdapter`` whose connections (direct or tunnelled) :func:`deadline` can cut."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_WATCHED_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = dict(_WATCHED_POOLS)
        return manager


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[_Watch]:
    """Cut the current thread's request if it is still running after ``seconds``; the watch's
    ``expired`` tells whether it did."""
    watch = _Watch()
    previous = getattr(_current, "watch", None)
    _current.watch = watch
    timer = threading.Timer(max(seconds, 0.0), watch.expire)
    timer.daemon = True
    timer.start()
    try:
        yield watch
    finally:
        timer.cancel()
        _current.watch = previous


class HttpSession:
    """Sends the operations over ``session`` (its owner closes it), else a pool of its own."""

    def __init__(
        self, config: ClientConfig, session: requests.Session | None, sleep: Callable[[float], None]
    ) -> None:
        self._config = config
        self._owns_session = session is None
        if session is None:
            session = requests.Session()
            adapter = DeadlineAdapter(pool_maxsize=config.pool_maxsize, max_retries=0)
            session.mount("https://", adapter)
            session.mount("http://", adapter)
        self._session = session
        self._retry = RetryPolicy.from_config(config)
        self._sleep = sleep
        self._route = proxy_route(config)

    def close(self) -> None:
        if self._owns_session:
            self._session.close()

    def send(
        self, operation: Operation, *, stream: bool = False, **options: Any
    ) -> tuple[requests.Response, Slot]:
        """Send ``operation`` (``options``: :class:`CallAttempts`') and return its 2xx answer
        with its place among the calls in flight: given back once the body is read, or, with
        ``stream`` (body unread), when the caller releases it or the answer is collected."""
        call = CallAttempts(self._config, self._retry, operation, route=self._route, **options)
        proxies = self._route.for_requests(call.url)

        def attempt() -> tuple[requests.Response, Slot]:
            while True:
                while (wait := call.hold_off()) is not None:
                    self._sleep(wait)
                if slot := call.kept(call.throttle.acquire(call.concurrency, call.place_timeout())):
                    break
            response: requests.Response | None = None
            try:
                with deadline(call.start()) as watch:
                    response = self._session.request(
                        call.method,
                        call.url,
                        params=call.params,
                        json=call.json,
                        headers=call.headers,
                        timeout=(call.connect_timeout, call.read_timeout),
                        verify=self._config.verify,
                        stream=True,
                        allow_redirects=False,
                        proxies=proxies,  # type: ignore[arg-type]
                    )
                    if not stream or not 200 <= response.status_code < 300:  # read within
                        # the deadline (an error answer's too, as judge reads it), 1 MiB a read
                        # (requests reads 10 KiB at a time: ~220 trips for a 2.2 MB page)
                        body = bytearray()
                        for chunk in response.iter_content(1 << 20):
                            call.grown(body, chunk, response)
                        response._content = bytes(body)
            except requests.RequestException as exc:
                slot.release()
                if response is not None:  # its body broke off: the connection is not reused
                    response.close()
                error = call.failed(exc, cut_by_deadline=watch.expired)
            except BaseException:
                slot.release()
                if response is not None:  # a body refused as too long, half read
                    response.close()
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

        response, slot = call.retrying(self._sleep)(attempt)
        if stream:
            weakref.finalize(response, slot.release)
        else:
            slot.release()
        return response, slot
