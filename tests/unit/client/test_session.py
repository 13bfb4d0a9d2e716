"""Real sockets on 127.0.0.1: how far a request got decides the retry, cut streams fail, and the
synchronous transport's deadline cuts a call however slowly the server sends.

A scripted raw HTTP server plays one behaviour per accepted connection, so the failures are
the ones ``requests`` and ``urllib3`` really raise, not imitations.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
import requests

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsStreamError,
    AnalyticsTransportError,
    ClientConfig,
)
from airflow_provider_analytics.client.operations import LIST_EVENTS
from airflow_provider_analytics.client.session import DeadlineAdapter, HttpSession, deadline
from devtools.ports import free_port

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

Handler = "Callable[[socket.socket], None]"


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += conn.recv(65536)
    return head


def answer_json(value: Any) -> Callable[[socket.socket], None]:
    def handle(conn: socket.socket) -> None:
        body = json.dumps(value).encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )

    return handle


def drop(conn: socket.socket) -> None:
    """Close without answering."""


def chunked(*pieces: bytes, finish: bool) -> Callable[[socket.socket], None]:
    def handle(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        for piece in pieces:
            conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        if finish:
            conn.sendall(b"0\r\n\r\n")

    return handle


class ScriptedServer:
    """Accepts connections on 127.0.0.1 and runs one handler per connection, in order."""

    def __init__(self, handlers: list[Callable[[socket.socket], None]]) -> None:
        self._handlers = list(handlers)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self.connections = 0
        self.release = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _accept(self) -> socket.socket | None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return None
            conn.settimeout(10)
            return conn
        return None

    def _serve(self) -> None:
        for handler in self._handlers:
            conn = self._accept()
            if conn is None:
                return
            with conn:
                self.connections += 1
                read_request(conn)
                handler(conn)

    def close(self) -> None:
        self._stop.set()
        self.release.set()
        self._thread.join(timeout=10)
        self._listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(*handlers: Callable[[socket.socket], None]) -> ScriptedServer:
        server = ScriptedServer(list(handlers))
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def client_for(port: int, **options: Any) -> AnalyticsClient:
    config = ClientConfig(
        f"http://127.0.0.1:{port}",
        token="tok-19fe",
        app_key="app-77d0",
        xtoken="xt-4c2b",
        max_attempts=3,
        **options,
    )
    return AnalyticsClient(config, sleep=lambda _: None)


def test_refused_connection_is_retried_even_for_a_create() -> None:
    client = client_for(free_port())
    with pytest.raises(AnalyticsTransportError, match="could not connect after 3") as caught:
        client.create_utm("https://shop.example.com", "c", "m", "s")
    assert "outcome is unknown" not in str(caught.value)


def test_dropped_after_sending_a_create_is_not_retried(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(drop, answer_json({"success": 0, "campaignId": 1}))
    with pytest.raises(AnalyticsTransportError, match="outcome is unknown") as caught:
        client_for(server.port).create_utm("https://shop.example.com", "c", "m", "s")
    assert "Look the campaign up" in str(caught.value)
    assert server.connections == 1


def test_dropped_after_sending_a_read_is_retried(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(drop, answer_json([{"id": "$startup"}]))
    assert client_for(server.port).list_events() == [{"id": "$startup"}]
    assert server.connections == 2


def test_read_timeout_on_a_create_is_not_retried(serve: Callable[..., ScriptedServer]) -> None:
    def hang(conn: socket.socket) -> None:
        server.release.wait(10)

    server = serve(hang, answer_json({"userId": 1, "email": "a@example.com"}))
    client = client_for(server.port, read_timeout=0.3)
    with pytest.raises(AnalyticsTransportError, match="outcome is unknown") as caught:
        client.register_account("a@example.com")
    assert "ReadTimeout" in str(caught.value)
    server.release.set()
    assert server.connections == 1


def test_stream_cut_after_complete_rows(serve: Callable[..., ScriptedServer]) -> None:
    rows = [b'{"distinct_id": %d, "nickname": "\xe5\xbc\xa0"}\n' % i for i in range(3)]
    server = serve(chunked(*rows, finish=False))
    received = []
    with (
        pytest.raises(AnalyticsStreamError, match="stream broke after") as caught,
        client_for(server.port).export_cohort_users("cohort_tiny") as export,
    ):
        for record in export.iter_records():
            received.append(record)
    assert [r["distinct_id"] for r in received] == [0, 1, 2]
    assert received[0]["nickname"] == "张"
    assert caught.value.operation == "export_cohort_users"
    assert export.bytes_read == sum(len(r) for r in rows)


def test_stream_ending_inside_a_line(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(chunked(b'{"a": 1}\n{"a": 2}\n', b'{"a": ', finish=True))
    with client_for(server.port).export_cohort_users("cohort_tiny") as export:
        records = export.iter_records()
        assert [next(records), next(records)] == [{"a": 1}, {"a": 2}]
        with pytest.raises(AnalyticsStreamError, match="inside a line after 2 complete rows"):
            next(records)


def test_stream_cut_in_the_middle_of_a_chunk(serve: Callable[..., ScriptedServer]) -> None:
    def half_chunk(conn: socket.socket) -> None:
        conn.sendall(
            b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{"a": 1}\n\r\n20\r\n{"a": 2'
        )

    server = serve(half_chunk)
    with client_for(server.port).export_cohort_users("cohort_tiny") as export:
        lines = export.iter_lines()
        with pytest.raises(AnalyticsStreamError):
            for _ in lines:
                pass
    assert export.lines_read <= 1


# The synchronous transport itself (client/session.py): the deadline that cuts a socket, and
# who closes the pool.


def drip(conn: socket.socket) -> None:
    """Answer a body of 1000 bytes one byte every 0.1 s: each read gets data in time, so only
    a deadline on the whole call ends it."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n")
    with contextlib.suppress(OSError):
        for _ in range(1000):
            conn.sendall(b"x")
            time.sleep(0.1)


def test_the_deadline_cuts_a_read_that_never_times_out(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(drip)
    pool = requests.Session()
    pool.mount("http://", DeadlineAdapter(max_retries=0))
    started = time.monotonic()
    with (
        pytest.raises(requests.RequestException),
        deadline(0.5) as watch,
    ):
        pool.get(f"http://127.0.0.1:{server.port}/slow", timeout=(5, 5))
    assert watch.expired
    assert time.monotonic() - started < 4  # the body alone would take 100 s
    pool.close()


def test_a_deadline_not_reached_cuts_nothing_and_nests() -> None:
    with deadline(30) as outer:
        with deadline(30) as inner:
            assert inner is not outer
        assert not inner.expired
    assert not outer.expired
    with deadline(0) as spent:
        time.sleep(0.2)  # the timer fires; with no socket attached, it only marks the watch
    assert spent.expired


class _CountedSession(requests.Session):
    closed = 0

    def close(self) -> None:
        type(self).closed += 1
        super().close()


def test_the_session_sends_an_operation_and_closes_only_its_own_pool(
    serve: Callable[..., ScriptedServer],
) -> None:
    server = serve(answer_json([{"id": "$startup"}]), answer_json([]))
    config = ClientConfig(f"http://127.0.0.1:{server.port}", token="tok-19fe", app_key="app-77d0")
    own = HttpSession(config, None, sleep=lambda _: None)
    response, _ = own.send(LIST_EVENTS)
    assert response.status_code == 200 and response.json() == [{"id": "$startup"}]
    request_headers = response.request.headers
    assert request_headers["token"] == "tok-19fe" and request_headers["appKey"] == "app-77d0"
    own.close()

    given = _CountedSession()
    borrowed = HttpSession(config, given, sleep=lambda _: None)
    assert borrowed.send(LIST_EVENTS)[0].json() == []
    borrowed.close()
    assert _CountedSession.closed == 0  # its owner closes it
    given.close()


def test_a_body_refused_as_too_long_closes_its_response(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refused answer's connection was left checked out of the pool, half read, until the
    garbage collector found it."""
    import io

    from requests.adapters import HTTPAdapter
    from urllib3.response import HTTPResponse

    from airflow_provider_analytics.client import AnalyticsProtocolError
    from airflow_provider_analytics.core import strict_json

    monkeypatch.setattr(strict_json, "MAX_BYTES", 1000)
    closed: list[bool] = []

    class Body(HTTPResponse):
        def close(self) -> None:
            closed.append(True)
            super().close()

    class Adapter(HTTPAdapter):
        def send(self, request: Any, *args: Any, **kwargs: Any) -> requests.Response:
            body = io.BytesIO(b'{"x": "' + b"a" * 5000 + b'"}')
            return self.build_response(request, Body(body=body, status=200, preload_content=False))

    session = requests.Session()
    session.mount("http://", Adapter())
    http = HttpSession(
        ClientConfig("http://127.0.0.1:9", token="t0k3n", app_key="app-k3y"),
        session,
        sleep=time.sleep,
    )
    with pytest.raises(AnalyticsProtocolError, match="bytes long"):
        http.send(LIST_EVENTS)
    assert closed
