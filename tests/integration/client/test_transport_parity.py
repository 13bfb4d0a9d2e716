"""The synchronous (requests) and asynchronous (httpx) transports against the same table of
server behaviours, over real HTTP on 127.0.0.1: both must send the same request and end the
same way (same answer or error class, same attempts, same waits, same masked message).

The tables cover the credentials too (a Latin-1 token, a one-character token) and the proxy
rule: real proxies on loopback and on a name that does not look like loopback, named by the
environment or by the ``proxy`` setting, with plain http and https."""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_analytics.client import (
    AnalyticsApiError,
    AnalyticsAuthenticationError,
    AnalyticsClient,
    AnalyticsConfigurationError,
    AnalyticsError,
    AnalyticsProtocolError,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsTransportError,
    ClientConfig,
)
from airflow_provider_analytics.client.answers import AnswerShapeError
from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
from airflow_provider_analytics.client.operations import CREATE_UTM, LIST_EVENTS, ApiCall
from devtools.ports import free_port
from tests.loopback import ServedOnLoopback
from tests.loopback_proxy import (
    NON_LOOPBACK_ADDRESS,
    NON_LOOPBACK_NAME,
    LoopbackProxy,
    resolving,
)
from tests.reliability.local_servers import LocalServer, self_signed_certificate

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from types import TracebackType

pytestmark = pytest.mark.integration

TOKEN = "tok-Parity-7781-secret"
APP_KEY = "app-Parity-2290"
LATIN1_TOKEN = "tökenSECRETü12345"
"""Printable Latin-1, so the configuration accepts it; httpx would encode text as ASCII."""
LIST = ApiCall(LIST_EVENTS, {"plan": 1, "dataStatus": None})
CREATE = ApiCall(
    CREATE_UTM,
    {"loginUser": "ops"},
    {"pageUrl": "https://shop.example.com", "utmCampaign": "c", "utmMedium": "m"},
)


@dataclass(frozen=True)
class Answer:
    """One scripted answer: a status, headers and a JSON body (bytes: sent as they are);
    ``trickle`` sends the body one byte every 0.1 s instead (a stalled server that never times
    a read out)."""

    status: int = 200
    body: Any = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    trickle: bool = False


class ScriptedServer(ServedOnLoopback):
    """Answers the n-th request with ``script[n]`` (the last entry repeats) and records
    each request's method, path, headers and body.

    :param script: the answers, in order.
    :param tls: (certificate, key) files to serve HTTPS with.
    """

    def __init__(self, script: list[Answer], tls: tuple[Path, Path] | None = None) -> None:
        self.received: list[dict[str, Any]] = []
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                server.received.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": json.loads(body) if body else None,
                    }
                )
                answer = script[min(len(server.received), len(script)) - 1]
                body = answer.body
                payload = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(answer.status)
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload) + 1000 * answer.trickle))
                self.end_headers()
                if not answer.trickle:
                    self.wfile.write(payload)
                    return
                while not server.stop.wait(0.1):
                    try:
                        self.wfile.write(b" ")
                        self.wfile.flush()
                    except OSError:  # the client gave up and closed the connection
                        return

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return None

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(tls[0]), str(tls[1]))
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        super().__init__(httpd, "http" if tls is None else "https")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()  # end the trickles first: shutting down waits for no handler
        super().__exit__(exc_type, exc, tb)


def refused_url() -> str:
    """An address on which nothing listens."""
    return f"http://127.0.0.1:{free_port()}"


@dataclass(frozen=True)
class Outcome:
    """How one call ended, in the terms both transports must agree on."""

    result: Any
    error: type[AnalyticsError] | None
    message: str | None
    waits: list[float]


def _shared_message(error: AnalyticsError) -> str:
    """The error's message; a transport error's trailing ``(<exception>: <text>)`` names the
    HTTP library's own exception, so it is left out of the comparison."""
    message = str(error)
    if type(error) is AnalyticsTransportError:
        message = re.sub(r" \(\w+: .*\)(\.|$)", r"\1", message, flags=re.DOTALL)
    return message


def call_sync(config: ClientConfig, call: ApiCall) -> Outcome:
    waits: list[float] = []
    with AnalyticsClient(config, sleep=waits.append) as client:
        try:
            result = client.request_json(call)
        except AnalyticsError as error:
            return Outcome(None, type(error), _shared_message(error), waits)
    return Outcome(result, None, None, waits)


def call_async(config: ClientConfig, call: ApiCall) -> Outcome:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    async def main() -> Outcome:
        async with AsyncAnalyticsClient(config, sleep=record) as client:
            try:
                result = await client.request_json(call)
            except AnalyticsError as error:
                return Outcome(None, type(error), _shared_message(error), waits)
        return Outcome(result, None, None, waits)

    return asyncio.run(main())


TRANSPORTS: dict[str, Callable[[ClientConfig, ApiCall], Outcome]] = {
    "sync": call_sync,
    "async": call_async,
}


@dataclass(frozen=True)
class Row:
    """A server behaviour, the call sent to it and what both transports must end with."""

    script: list[Answer] | None  # None: nothing listens
    call: ApiCall
    error: type[AnalyticsError] | None
    attempts: int
    says: tuple[str, ...] = ()
    waits: list[float] | None = None  # exact waits when the server chose them
    settings: dict[str, Any] = field(default_factory=dict)


CORRUPT_GZIP = b"\x1f\x8b\x08\x00garbagegarbage"
ROWS = {
    "429 with Retry-After, then 200": Row(
        [Answer(429, {"code": 429}, {"Retry-After": "7"}), Answer(200, [{"id": "buy"}])],
        LIST,
        None,
        2,
        waits=[7.0],
    ),
    "429 with Retry-After until the attempts run out, on a create": Row(
        [Answer(429, {"code": 429, "msg": "slow down"}, {"Retry-After": "2"})],
        CREATE,
        AnalyticsRateLimitError,
        3,
        ("still rate limited after 3 attempt(s)", "slow down"),
        waits=[2.0, 2.0],
    ),
    "503 then 200": Row([Answer(503, {}), Answer(200, [])], LIST, None, 2),
    "500 on a create is not retried": Row(
        [Answer(500, {"code": 500, "msg": "boom"})],
        CREATE,
        AnalyticsServerError,
        1,
        ("server error after 1 attempt(s)", "its outcome is unknown"),
        waits=[],
    ),
    "connection refused": Row(
        None, LIST, AnalyticsTransportError, 0, ("could not connect after 3 attempt(s)",)
    ),
    "a server stalled past the deadline": Row(
        [Answer(200, [], trickle=True)],
        LIST,
        AnalyticsTransportError,
        1,
        ("no complete answer within 1 s (attempt 1)",),
        waits=[],
        settings={"request_deadline": 1.0},
    ),
    "a corrupt gzip body": Row(
        [Answer(200, CORRUPT_GZIP, {"Content-Encoding": "gzip"})],
        LIST,
        AnalyticsTransportError,
        3,
        ("no complete answer after 3 attempt(s)",),
    ),
    "a corrupt gzip body on a create": Row(
        [Answer(200, CORRUPT_GZIP, {"Content-Encoding": "gzip"})],
        CREATE,
        AnalyticsTransportError,
        1,
        ("no complete answer after 1 attempt(s)", "its outcome is unknown"),
        waits=[],
    ),
    "a create's answer stalled past the deadline": Row(
        [Answer(200, {"success": 0, "campaignId": 5}, trickle=True)],
        CREATE,
        AnalyticsTransportError,
        1,
        ("no complete answer within 1 s (attempt 1)", "its outcome is unknown"),
        waits=[],
        settings={"request_deadline": 1.0},
    ),
    "a create answered by a page that is not JSON": Row(
        [Answer(200, b"<html>ok</html>")],
        CREATE,
        AnalyticsProtocolError,
        1,
        ("is not valid JSON", "its outcome is unknown", "Look the campaign up"),
        waits=[],
    ),
    "a create answered without its campaign id": Row(
        [Answer(200, {"success": 0})],
        CREATE,
        AnswerShapeError,
        1,
        ("campaignId is missing", "its outcome is unknown", "Look the campaign up"),
        waits=[],
    ),
    "401 echoing the token": Row(
        [Answer(401, {"code": 401, "msg": f"bad token {TOKEN} for appKey {APP_KEY}"})],
        LIST,
        AnalyticsAuthenticationError,
        1,
        ("authentication failed", "bad token *** for appKey ***"),
        waits=[],
    ),
    "a redirect to another host is not followed": Row(
        [Answer(307, {}, {"Location": "http://127.0.0.2:9/uba/api/schema/event"})],
        LIST,
        AnalyticsApiError,
        1,
        ("unexpected redirect (not followed, so credentials stay with the configured host)",),
        waits=[],
    ),
    "a Latin-1 token is sent": Row(
        [Answer(200, [{"id": "buy"}])], LIST, None, 1, settings={"token": LATIN1_TOKEN}
    ),
    "a Latin-1 token echoed in a 401": Row(
        [Answer(401, {"code": 401, "msg": f"bad token {LATIN1_TOKEN}"})],
        LIST,
        AnalyticsAuthenticationError,
        1,
        ("authentication failed", "bad token ***"),
        waits=[],
        settings={"token": LATIN1_TOKEN},
    ),
    "a one-character token leaves the message readable": Row(
        [Answer(401, {"code": 401, "msg": "bad token t for this project"})],
        LIST,
        AnalyticsAuthenticationError,
        1,
        ("list_events: authentication failed", "bad token t for this project"),
        waits=[],
        settings={"token": "t"},
    ),
}


def config_for(base_url: str, **settings: Any) -> ClientConfig:
    options: dict[str, Any] = {
        "token": TOKEN,
        "app_key": APP_KEY,
        "max_attempts": 3,
        "backoff_base": 0.01,
        **settings,
    }
    return ClientConfig(base_url, **options)


def run_row(row: Row, transport: str) -> tuple[Outcome, list[dict[str, Any]]]:
    if row.script is None:
        return TRANSPORTS[transport](config_for(refused_url(), **row.settings), row.call), []
    with ScriptedServer(row.script) as server:
        outcome = TRANSPORTS[transport](config_for(server.base_url, **row.settings), row.call)
    return outcome, server.received


def _comparable(request: dict[str, Any]) -> dict[str, Any]:
    """What the call decides about a request; the HTTP libraries' own defaults (connection
    handling, accepted encodings, body length) are theirs."""
    own = {"connection", "accept-encoding", "content-length", "host"}
    headers = {k: v for k, v in request["headers"].items() if k not in own}
    return {**request, "headers": headers}


@pytest.mark.parametrize("name", list(ROWS))
def test_both_transports_end_alike(name: str) -> None:
    row = ROWS[name]
    outcomes = {transport: run_row(row, transport) for transport in TRANSPORTS}
    (sync, sync_seen), (async_, async_seen) = outcomes["sync"], outcomes["async"]

    assert sync.error is async_.error is row.error
    assert sync.message == async_.message
    assert sync.result == async_.result
    assert len(sync_seen) == len(async_seen) == row.attempts
    assert [_comparable(r) for r in sync_seen] == [_comparable(r) for r in async_seen]
    assert len(sync.waits) == len(async_.waits)
    if row.waits is not None:
        assert sync.waits == async_.waits == row.waits
    for phrase in row.says:
        assert phrase in (sync.message or "")
    for secret in (TOKEN, APP_KEY, LATIN1_TOKEN):
        assert secret not in (sync.message or "") and secret not in json.dumps(sync.result)
    if "token" in row.settings:
        for request in sync_seen + async_seen:
            assert request["headers"]["token"] == row.settings["token"]


def test_both_transports_send_the_credentials_and_query_of_the_call() -> None:
    seen = {transport: run_row(ROWS["503 then 200"], transport)[1] for transport in TRANSPORTS}
    for requests_seen in seen.values():
        request = requests_seen[-1]
        assert request["method"] == "GET"
        assert request["path"] == "/uba/api/schema/event?plan=1"
        assert request["headers"]["token"] == TOKEN
        assert request["headers"]["appkey"] == APP_KEY
        assert request["headers"]["accept"] == "application/json"
        assert request["headers"]["user-agent"].startswith("airflow-provider-analytics/")


def test_a_create_sends_its_body_and_query_alike() -> None:
    row = Row([Answer(200, {"success": 0, "campaignId": 5})], CREATE, None, 1)
    for transport in TRANSPORTS:
        outcome, seen = run_row(row, transport)
        assert outcome.result == {"success": 0, "campaignId": 5}
        assert seen[0]["method"] == "POST"
        assert seen[0]["path"] == "/svc/uba/api/operations/utm?loginUser=ops"
        assert seen[0]["body"] == CREATE.body
        assert seen[0]["headers"]["content-type"] == "application/json"


def test_tls_failures_are_not_retried_and_a_ca_bundle_is_honoured(tmp_path: Path) -> None:
    certificate, key = self_signed_certificate(tmp_path)
    with LocalServer(body=[{"id": "buy"}], tls=(certificate, key)) as server:
        untrusted = {t: call(config_for(server.base_url), LIST) for t, call in TRANSPORTS.items()}
        trusted = {
            t: call(config_for(server.base_url, verify=str(certificate)), LIST)
            for t, call in TRANSPORTS.items()
        }
        received = len(server.received)
    for outcome in untrusted.values():
        assert outcome.error is AnalyticsTransportError
        assert outcome.message is not None and "TLS failed" in outcome.message
        assert outcome.waits == []
    assert untrusted["sync"].message == untrusted["async"].message
    assert trusted["sync"] == trusted["async"]
    assert trusted["sync"].result == [{"id": "buy"}]
    assert received == 2


# Proxies --------------------------------------------------------------------------------

PROXY_VARIABLES = [f"{scheme}_proxy" for scheme in ("http", "https", "all", "no")] + [
    f"{scheme}_PROXY" for scheme in ("HTTP", "HTTPS", "ALL", "NO")
]
LOOPBACK, ELSEWHERE = "loopback", "elsewhere"


@dataclass(frozen=True)
class ProxyRow:
    """A proxy named for the base URL and how both transports must end.

    :param scheme: the base URL's: ``http`` or ``https``.
    :param where: the proxy on ``loopback`` (127.0.0.1) or ``elsewhere`` by its looks
        (:data:`NON_LOOPBACK_NAME`, resolving to 127.0.0.2).
    :param via: the environment variable naming it, or ``setting`` (``ClientConfig.proxy``).
    :param error: the error both raise, or ``None`` for the answer.
    :param says: phrases of the message.
    :param tunnelled: the call went through the proxy's ``CONNECT`` tunnel.
    :param env: more environment (``NO_PROXY``, a second proxy as ``{other}``).
    """

    scheme: str
    where: str
    via: str
    error: type[AnalyticsError] | None
    says: tuple[str, ...] = ()
    tunnelled: bool = False
    env: dict[str, str] = field(default_factory=dict)


REFUSED_IN_CLEAR = ("list_events: plain http:// would send the credentials in clear",)
PROXY_ROWS = {
    "plain http, HTTP_PROXY on loopback": ProxyRow(
        "http", LOOPBACK, "HTTP_PROXY", AnalyticsConfigurationError, REFUSED_IN_CLEAR
    ),
    "plain http, HTTP_PROXY elsewhere": ProxyRow(
        "http",
        ELSEWHERE,
        "HTTP_PROXY",
        AnalyticsConfigurationError,
        (*REFUSED_IN_CLEAR, f"to the proxy {NON_LOOPBACK_NAME}:", "named by HTTP_PROXY"),
    ),
    "plain http, http_proxy elsewhere": ProxyRow(
        "http", ELSEWHERE, "http_proxy", AnalyticsConfigurationError, ("named by http_proxy",)
    ),
    "plain http, ALL_PROXY elsewhere": ProxyRow(
        "http", ELSEWHERE, "ALL_PROXY", AnalyticsConfigurationError, ("named by ALL_PROXY",)
    ),
    "plain http, HTTP_PROXY with the host in NO_PROXY": ProxyRow(
        "http", ELSEWHERE, "HTTP_PROXY", None, env={"NO_PROXY": "localhost,127.0.0.0/8"}
    ),
    "https, HTTPS_PROXY on loopback": ProxyRow(
        "https", LOOPBACK, "HTTPS_PROXY", None, tunnelled=True
    ),
    "https, HTTPS_PROXY elsewhere": ProxyRow(
        "https", ELSEWHERE, "HTTPS_PROXY", None, tunnelled=True
    ),
    "https, https_proxy elsewhere, HTTP_PROXY naming another": ProxyRow(
        "https", ELSEWHERE, "https_proxy", None, tunnelled=True, env={"HTTP_PROXY": "{other}"}
    ),
    "https, the proxy setting on loopback": ProxyRow(
        "https", LOOPBACK, "setting", None, tunnelled=True
    ),
    "https, the proxy setting elsewhere, HTTPS_PROXY naming another": ProxyRow(
        "https", ELSEWHERE, "setting", None, tunnelled=True, env={"HTTPS_PROXY": "{other}"}
    ),
    "https, HTTPS_PROXY with the host in no_proxy": ProxyRow(
        "https", ELSEWHERE, "HTTPS_PROXY", None, env={"no_proxy": "127.0.0.1:0,127.0.0.1"}
    ),
    "https, ALL_PROXY naming a socks proxy": ProxyRow(
        "https",
        ELSEWHERE,
        "ALL_PROXY",
        AnalyticsConfigurationError,
        ("list_events: ALL_PROXY names a socks5:// proxy", "add 127.0.0.1 to NO_PROXY"),
    ),
}


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No proxy variable but the test's own; the non-loopback name resolves to 127.0.0.2."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with resolving():
        yield monkeypatch


def _server(scheme: str, certificate: tuple[Path, Path]) -> ServedOnLoopback:
    if scheme == "https":
        return LocalServer(body=[{"id": "buy"}], tls=certificate)
    return ScriptedServer([Answer(200, [{"id": "buy"}])])


def _received(server: ServedOnLoopback) -> list[dict[str, str]]:
    """The headers of each request the server got, lower-case names."""
    if isinstance(server, ScriptedServer):
        return [request["headers"] for request in server.received]
    assert isinstance(server, LocalServer)
    return [{k.lower(): v for k, v in headers.items()} for _, headers in server.received]


@pytest.mark.parametrize("name", list(PROXY_ROWS))
def test_both_transports_follow_the_proxy_rule_alike(
    name: str, clean_environment: pytest.MonkeyPatch, certificate: tuple[Path, Path]
) -> None:
    row = PROXY_ROWS[name]
    bind, host = (
        ("127.0.0.1", "127.0.0.1")
        if row.where == LOOPBACK
        else (NON_LOOPBACK_ADDRESS, NON_LOOPBACK_NAME)
    )
    with (
        _server(row.scheme, certificate) as server,
        LoopbackProxy(bind, host) as proxy,
        LoopbackProxy() as other,
    ):
        address = f"socks5://{host}:1080" if "socks" in name else proxy.url
        settings: dict[str, Any] = {"verify": str(certificate[0])} if row.scheme == "https" else {}
        if row.via == "setting":
            settings["proxy"] = address
        else:
            clean_environment.setenv(row.via, address)
        for variable, value in row.env.items():
            clean_environment.setenv(variable, value.format(other=other.url))
        outcomes, received, tunnels = {}, {}, {}
        for transport, call in TRANSPORTS.items():
            before = len(proxy.seen.tunnels)
            outcomes[transport] = call(config_for(server.base_url, **settings), LIST)
            received[transport] = _received(server)
            tunnels[transport] = proxy.seen.tunnels[before:]
        seen, others = proxy.seen, other.seen

    sync, async_ = outcomes["sync"], outcomes["async"]
    assert sync.error is async_.error is row.error
    assert sync.message == async_.message
    assert sync.result == async_.result
    for phrase in row.says:
        assert phrase in (sync.message or "")
    if row.error is None:
        assert sync.result == [{"id": "buy"}]
        assert len(received["async"]) == 2  # one request from each transport
        for headers in received["async"]:
            assert headers["token"] == TOKEN and headers["appkey"] == APP_KEY
    else:
        assert received["async"] == []  # refused before anything was sent
    target = server.base_url.removeprefix(f"{row.scheme}://")
    expected = [target] if row.tunnelled else []
    assert tunnels["sync"] == tunnels["async"] == expected
    assert len(seen.heads) == len(seen.tunnels)  # nothing but CONNECT reached the proxy
    assert others.heads == []
    for secret in (TOKEN, APP_KEY):
        assert secret.encode() not in bytes(seen.relayed)
        assert not any(secret in head for head in seen.heads)
        assert secret not in (sync.message or "")


def test_the_deadline_cuts_a_stalled_answer_through_a_proxy_alike(
    clean_environment: pytest.MonkeyPatch, certificate: tuple[Path, Path]
) -> None:
    """A tunnelled connection is watched like a direct one: the call's deadline ends a
    trickling answer for both transports."""
    with (
        ScriptedServer([Answer(200, [], trickle=True)], tls=certificate) as server,
        LoopbackProxy(NON_LOOPBACK_ADDRESS, NON_LOOPBACK_NAME) as proxy,
    ):
        clean_environment.setenv("HTTPS_PROXY", proxy.url)
        config = config_for(server.base_url, verify=str(certificate[0]), request_deadline=1.0)
        outcomes = {transport: call(config, LIST) for transport, call in TRANSPORTS.items()}
        tunnels = list(proxy.seen.tunnels)
    assert outcomes["sync"] == outcomes["async"]
    assert outcomes["sync"].error is AnalyticsTransportError
    assert "no complete answer within 1 s (attempt 1)" in (outcomes["sync"].message or "")
    assert len(tunnels) == 2
