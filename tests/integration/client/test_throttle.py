"""Protecting the platform, over real HTTP on 127.0.0.1: many threads and client objects of one
process never have more than ``max_concurrent_calls`` calls in flight to one platform (a
streamed export counting until its body is read), and a ``429``/``503`` with ``Retry-After``
to one of them makes every other caller wait until that moment too.

The server records when each request arrives; the assertions compare those moments with the
moment the ``Retry-After`` names, a lower bound that holds by construction (no speed is
asserted)."""

from __future__ import annotations

import asyncio
import email.utils
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
from airflow_provider_analytics.client.operations import LIST_EVENTS, ApiCall
from airflow_provider_analytics.client.throttle import throttle_for
from tests.loopback import ServedOnLoopback

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

pytestmark = pytest.mark.integration

EXPORT_PATH = "/uba/api/cohort/users/export"
ROWS = [{"distinct_id": n, "$city": f"c{n}"} for n in range(5)]
TOLERANCE = 0.02
"""Seconds an arrival may precede the Retry-After moment: clock reading noise only."""


@dataclass(frozen=True)
class Arrival:
    path: str
    monotonic: float
    wall: float


class PlatformStandIn(ServedOnLoopback):
    """A platform that counts the requests in flight and records when each arrives.

    :param hold_first: hold the first requests until this many are in flight at once (then
        let every request through), so that a client allowed that many shows it; ``0`` holds
        nothing.
    :param retry_after: answer the first request with ``status`` and this ``Retry-After``
        (``None``: answer every request with 200).
    :param status: the status of that first answer.
    """

    def __init__(
        self, *, hold_first: int = 0, retry_after: str | None = None, status: int = 429
    ) -> None:
        self.arrivals: list[Arrival] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.refused_at: float | None = None
        """Monotonic time just before the Retry-After answer was written."""
        self.stream_finish = threading.Event()
        self.stream_ended_at: float | None = None
        self._condition = threading.Condition()
        self._opened = hold_first <= 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with server._condition:
                    server.arrivals.append(Arrival(self.path, time.monotonic(), time.time()))
                    first = len(server.arrivals) == 1
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                    if server.in_flight >= hold_first:
                        server._opened = True
                        server._condition.notify_all()
                    server._condition.wait_for(lambda: server._opened, timeout=30)
                self.left = False
                try:
                    if first and retry_after is not None:
                        server.refused_at = time.monotonic()
                        self._send(status, {"code": status}, {"Retry-After": retry_after})
                    elif self.path.startswith(EXPORT_PATH):
                        self._stream()
                    else:
                        time.sleep(0.01)  # long enough for calls to overlap
                        self._send(200, [{"id": "buy"}])
                finally:
                    self._leave()

            def _leave(self) -> None:
                """The call is no longer in flight once its answer's last bytes are sent: the
                client may release its place as soon as it has read them, so counting until
                the handler returns would count a call twice."""
                if not self.left:
                    self.left = True
                    with server._condition:
                        server.in_flight -= 1

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self._leave()
                self.wfile.write(payload)

            def _stream(self) -> None:
                """The first rows at once, the rest once the test lets the stream finish."""
                lines = [json.dumps(row).encode() + b"\n" for row in ROWS]
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Content-Length", str(sum(map(len, lines))))
                self.end_headers()
                self.wfile.write(b"".join(lines[:2]))
                self.wfile.flush()
                server.stream_finish.wait(30)
                server.stream_ended_at = time.monotonic()
                self._leave()
                self.wfile.write(b"".join(lines[2:]))
                self.wfile.flush()

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return None

        super().__init__(ThreadingHTTPServer(("127.0.0.1", 0), Handler))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stream_finish.set()
        with self._condition:
            self._opened = True
            self._condition.notify_all()
        super().__exit__(exc_type, exc, tb)


def config(base_url: str, **settings: Any) -> ClientConfig:
    return ClientConfig(base_url, token="tok-throttle-5521", app_key="app-throttle", **settings)


def run_threads(targets: list[Callable[[], None]]) -> None:
    """Run each target on its own thread, all started together; re-raise the first failure."""
    failures: list[BaseException] = []
    start = threading.Barrier(len(targets))

    def run(target: Callable[[], None]) -> None:
        try:
            start.wait(30)
            target()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=run, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    if failures:
        raise failures[0]


def _wait_for(condition: Callable[[], bool]) -> None:
    for _ in range(6000):
        if condition():
            return
        time.sleep(0.005)
    raise AssertionError("condition never held")


@pytest.mark.parametrize("limit", [1, 3, 12])
def test_threads_of_several_clients_never_exceed_the_bound(limit: int) -> None:
    """12 threads over 4 client objects, 3 calls each. The server holds the first calls until
    ``limit`` are in flight, so the bound is reached; with a limit of 12 all 12 threads are
    in flight at once, which shows the server would see a broken bound."""
    calls_per_thread = 3
    with PlatformStandIn(hold_first=limit) as server:
        clients = [AnalyticsClient(config(server.base_url, max_concurrent_calls=limit))]
        clients += [
            AnalyticsClient(config(server.base_url + "/", max_concurrent_calls=limit))
            for _ in range(3)
        ]
        answers: list[Any] = []

        def work(client: AnalyticsClient) -> Callable[[], None]:
            def calls() -> None:
                for _ in range(calls_per_thread):
                    answers.append(client.list_events())

            return calls

        run_threads([work(clients[n % 4]) for n in range(12)])
        for client in clients:
            client.close()
    assert answers == [[{"id": "buy"}]] * (12 * calls_per_thread)
    assert len(server.arrivals) == 12 * calls_per_thread
    assert server.most_in_flight == limit
    assert throttle_for(server.base_url).in_flight == 0


def test_two_platforms_have_a_bound_each() -> None:
    with PlatformStandIn(hold_first=2) as one, PlatformStandIn(hold_first=2) as two:
        clients = [
            AnalyticsClient(config(server.base_url, max_concurrent_calls=2))
            for server in (one, two)
        ]
        run_threads([clients[n % 2].list_events for n in range(8)])
    assert one.most_in_flight == two.most_in_flight == 2


def test_a_streamed_export_holds_its_place_until_its_body_has_been_read() -> None:
    with PlatformStandIn() as server:
        exporter = AnalyticsClient(config(server.base_url, max_concurrent_calls=1))
        other = AnalyticsClient(config(server.base_url, max_concurrent_calls=1))
        throttle = throttle_for(server.base_url)
        export = exporter.export_cohort_users("cohort_all", progress=False)
        assert throttle.in_flight == 1
        waiter = threading.Thread(target=other.list_events)
        waiter.start()
        _wait_for(lambda: throttle.waiting == 1)
        assert [a.path for a in server.arrivals] == [EXPORT_PATH]  # the other call waits
        records = export.iter_records()
        assert next(records) == ROWS[0]
        assert throttle.waiting == 1  # still reading: still holding
        server.stream_finish.set()
        assert [ROWS[0], *records] == ROWS
        waiter.join(30)
        assert not waiter.is_alive()
        assert [a.path for a in server.arrivals] == [EXPORT_PATH, "/uba/api/schema/event"]
        assert server.stream_ended_at is not None
        assert server.arrivals[1].monotonic >= server.stream_ended_at
        export.close()
        assert throttle.in_flight == 0

        with exporter.export_cohort_users("cohort_all", progress=False) as unread:
            assert throttle.in_flight == 1
            assert unread.bytes_read == 0  # closed without reading: the place comes back
        assert throttle.in_flight == 0
        assert other.list_events() == [{"id": "buy"}]


def _async_list_events(base_url: str) -> None:
    async def main() -> None:
        async with AsyncAnalyticsClient(config(base_url)) as client:
            assert await client.request_json(ApiCall(LIST_EVENTS, {})) == [{"id": "buy"}]

    asyncio.run(main())


@pytest.mark.slow
@pytest.mark.parametrize("status", [429, 503])
def test_a_retry_after_to_one_thread_holds_every_other_caller_off(status: int) -> None:
    """The first call gets ``Retry-After: 1``; the moment its client has read it, three other
    callers (two client objects on threads, one coroutine) start their calls. None of them,
    nor the retry, reaches the server before the moment the answer named."""
    with PlatformStandIn(retry_after="1", status=status) as server:
        read = threading.Event()

        def sleep_after_reading(seconds: float) -> None:
            read.set()
            time.sleep(seconds)

        first = AnalyticsClient(config(server.base_url), sleep=sleep_after_reading)
        others = [AnalyticsClient(config(server.base_url)) for _ in range(2)]

        def after_the_answer(call: Callable[[], Any]) -> Callable[[], None]:
            def run() -> None:
                assert read.wait(30)
                call()

            return run

        run_threads(
            [
                first.list_events,
                *(after_the_answer(client.list_events) for client in others),
                after_the_answer(lambda: _async_list_events(server.base_url)),
            ]
        )
    assert server.refused_at is not None
    later = server.arrivals[1:]
    assert len(later) == 4
    moment = server.refused_at + 1.0
    assert all(arrival.monotonic >= moment - TOLERANCE for arrival in later), [
        round(arrival.monotonic - server.refused_at, 3) for arrival in later
    ]


@pytest.mark.slow
def test_a_retry_after_date_holds_every_other_caller_off_until_that_date() -> None:
    when = int(time.time()) + 2  # an HTTP date has whole seconds: 1 to 2 s from now
    header = email.utils.formatdate(when, usegmt=True)
    with PlatformStandIn(retry_after=header) as server:
        read = threading.Event()

        def sleep_after_reading(seconds: float) -> None:
            read.set()
            time.sleep(seconds)

        first = AnalyticsClient(config(server.base_url), sleep=sleep_after_reading)
        other = AnalyticsClient(config(server.base_url))

        def later_call() -> None:
            assert read.wait(30)
            other.list_events()

        run_threads([first.list_events, later_call, later_call])
    later = server.arrivals[1:]
    assert len(later) == 3
    assert all(arrival.wall >= when - TOLERANCE for arrival in later), [
        round(arrival.wall - when, 3) for arrival in later
    ]


def test_an_unreadable_retry_after_slows_only_the_call_that_got_it() -> None:
    with PlatformStandIn(retry_after="in a while") as server:
        sleeps: list[float] = []
        first = AnalyticsClient(config(server.base_url), sleep=sleeps.append)
        assert first.list_events() == [{"id": "buy"}]
        assert len(sleeps) == 1 and sleeps[0] <= 0.5  # its own backoff
        other_sleeps: list[float] = []
        other = AnalyticsClient(config(server.base_url), sleep=other_sleeps.append)
        assert other.list_events() == [{"id": "buy"}]
    assert other_sleeps == []
    assert len(server.arrivals) == 3
