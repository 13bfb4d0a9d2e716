"""Retry policy: which failures are retried for safe and for creating operations, how often,
and how long the client waits."""

from __future__ import annotations

import email.utils
import json
import logging
import ssl
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import requests
from urllib3.exceptions import MaxRetryError, NewConnectionError

from airflow_provider_analytics.client import (
    AnalyticsApiError,
    AnalyticsClient,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsTransportError,
    ClientConfig,
    RetryPolicy,
)
from airflow_provider_analytics.client import operations as ops
from airflow_provider_analytics.client.attempts import (
    CallAttempts,
    classify_transport_error,
    error_from_transport,
)
from airflow_provider_analytics.client.throttle import PlatformThrottle
from airflow_provider_analytics.core.errors import FailurePhase
from airflow_provider_analytics.core.retry import parse_retry_after

if TYPE_CHECKING:
    from collections.abc import Callable

    import requests_mock as rm

BASE = "https://analytics.example.com"
EVENTS = BASE + "/uba/api/schema/event"
CREATE_UTM = BASE + "/svc/uba/api/operations/utm"
ACCOUNTS = BASE + "/uba/manage/enterprise/accounts"
EXPORT = BASE + "/uba/api/cohort/users/export"
CREATED = {"json": {"success": 0, "campaignId": 77}}


def refused() -> requests.ConnectionError:
    """What requests raises when nothing listens on the port."""
    cause = NewConnectionError(None, "Failed to establish a new connection: refused")  # type: ignore[arg-type]
    return requests.ConnectionError(MaxRetryError(None, "/x", cause))  # type: ignore[arg-type]


def tls_refused() -> httpx.ConnectError:
    """What httpx raises when the server's certificate is not trusted."""
    try:
        try:
            raise ssl.SSLCertVerificationError("certificate verify failed")
        except ssl.SSLError as cause:
            raise httpx.ConnectError(str(cause)) from cause
    except httpx.ConnectError as error:
        return error


class Recorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Recorder:
    return Recorder()


@pytest.fixture
def client(sleeps: Recorder) -> AnalyticsClient:
    config = ClientConfig(
        BASE, token="tok", app_key="app", xtoken="xt", backoff_base=0.5, backoff_max=4.0
    )
    return AnalyticsClient(config, sleep=sleeps)


def create_utm(client: AnalyticsClient) -> str:
    return client.create_utm("https://shop.example.com", "c", "m", "s")


def register(client: AnalyticsClient) -> Any:
    return client.register_account("a@example.com")


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_safe_operation_retries_transient_statuses(
    client: AnalyticsClient, requests_mock: rm.Mocker, sleeps: Recorder, status: int
) -> None:
    requests_mock.get(EVENTS, [{"status_code": status}, {"json": [{"id": "a"}]}])
    assert client.list_events() == [{"id": "a"}]
    assert requests_mock.call_count == 2
    assert len(sleeps.delays) == 1


@pytest.mark.parametrize(
    "exc",
    [
        requests.ConnectTimeout,
        requests.ReadTimeout,
        requests.ConnectionError,
        requests.exceptions.ChunkedEncodingError,
    ],
)
def test_safe_operation_retries_connection_failures_and_timeouts(
    client: AnalyticsClient, requests_mock: rm.Mocker, exc: type[Exception]
) -> None:
    requests_mock.get(EVENTS, [{"exc": exc}, {"exc": exc}, {"json": []}])
    assert client.list_events() == []
    assert requests_mock.call_count == 3


def test_safe_operation_gives_up_after_max_attempts(
    client: AnalyticsClient, requests_mock: rm.Mocker, sleeps: Recorder
) -> None:
    requests_mock.get(EVENTS, status_code=503, json={"code": 503, "msg": "down", "data": None})
    with pytest.raises(AnalyticsServerError, match="after 4 attempt") as caught:
        client.list_events()
    assert caught.value.status == 503
    assert requests_mock.call_count == 4
    assert len(sleeps.delays) == 3


def test_transport_failure_after_max_attempts(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(EVENTS, exc=requests.ReadTimeout("read timed out"))
    with pytest.raises(AnalyticsTransportError, match="no complete answer after 4") as caught:
        client.list_events()
    assert caught.value.status is None
    assert caught.value.operation == "list_events"
    assert requests_mock.call_count == 4


@pytest.mark.parametrize("status", [400, 401, 404, 415, 501, 403, 498, 499])
def test_client_errors_are_never_retried(
    client: AnalyticsClient, requests_mock: rm.Mocker, sleeps: Recorder, status: int
) -> None:
    requests_mock.get(EVENTS, status_code=status, json={"code": 50101, "msg": "x", "data": None})
    with pytest.raises(AnalyticsApiError):
        client.list_events()
    assert requests_mock.call_count == 1
    assert sleeps.delays == []


@pytest.mark.parametrize(
    ("url", "call", "answer"),
    [
        (CREATE_UTM, create_utm, CREATED),
        (ACCOUNTS, register, {"json": {"userId": 1, "email": "a@example.com"}}),
    ],
    ids=["create_utm", "register_account"],
)
class TestCreatingOperations:
    @pytest.mark.parametrize("status", [500, 502, 503, 504])
    def test_server_errors_after_sending_are_not_retried(
        self,
        client: AnalyticsClient,
        requests_mock: rm.Mocker,
        url: str,
        call: Callable[[AnalyticsClient], Any],
        answer: dict[str, Any],
        status: int,
    ) -> None:
        requests_mock.post(url, [{"status_code": status}, answer])
        with pytest.raises(AnalyticsServerError, match="outcome is unknown") as caught:
            call(client)
        assert requests_mock.call_count == 1
        assert "before" in str(caught.value)

    @pytest.mark.parametrize(
        "exc", [requests.ReadTimeout, requests.ConnectionError, requests.Timeout]
    )
    def test_failures_after_sending_are_not_retried(
        self,
        client: AnalyticsClient,
        requests_mock: rm.Mocker,
        url: str,
        call: Callable[[AnalyticsClient], Any],
        answer: dict[str, Any],
        exc: type[Exception],
    ) -> None:
        requests_mock.post(url, [{"exc": exc}, answer])
        with pytest.raises(AnalyticsTransportError, match="outcome is unknown"):
            call(client)
        assert requests_mock.call_count == 1

    @pytest.mark.parametrize(
        "exc", [requests.ConnectTimeout, refused()], ids=["connect_timeout", "refused"]
    )
    def test_failures_before_sending_are_retried(
        self,
        client: AnalyticsClient,
        requests_mock: rm.Mocker,
        url: str,
        call: Callable[[AnalyticsClient], Any],
        answer: dict[str, Any],
        exc: Any,
    ) -> None:
        requests_mock.post(url, [{"exc": exc}, answer])
        call(client)
        assert requests_mock.call_count == 2

    def test_rate_limit_is_retried_because_nothing_was_processed(
        self,
        client: AnalyticsClient,
        requests_mock: rm.Mocker,
        sleeps: Recorder,
        url: str,
        call: Callable[[AnalyticsClient], Any],
        answer: dict[str, Any],
    ) -> None:
        requests_mock.post(url, [{"status_code": 429, "headers": {"Retry-After": "3"}}, answer])
        call(client)
        assert requests_mock.call_count == 2
        assert sleeps.delays == [3.0]


def test_creating_operation_gives_up_on_repeated_connect_failures(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.post(CREATE_UTM, exc=requests.ConnectTimeout)
    with pytest.raises(AnalyticsTransportError, match="could not connect after 4") as caught:
        create_utm(client)
    assert "outcome is unknown" not in str(caught.value)
    assert requests_mock.call_count == 4


def test_rate_limit_error_after_the_budget(
    client: AnalyticsClient, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(EVENTS, status_code=429)
    with pytest.raises(AnalyticsRateLimitError, match="after 4 attempt"):
        client.list_events()
    assert requests_mock.call_count == 4


def test_tls_failures_are_not_retried(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.get(EVENTS, exc=requests.exceptions.SSLError("certificate verify failed"))
    with pytest.raises(AnalyticsTransportError, match="TLS"):
        client.list_events()
    assert requests_mock.call_count == 1


def test_export_start_is_retried(client: AnalyticsClient, requests_mock: rm.Mocker) -> None:
    requests_mock.post(EXPORT, [{"status_code": 503}, {"content": b'{"a":1}\n'}])
    with client.export_cohort_users("cohort_tiny") as export:
        assert list(export.iter_records()) == [{"a": 1}]
    assert requests_mock.call_count == 2


@pytest.mark.parametrize(
    ("name", "call", "method", "url"),
    [
        ("delete_utm", lambda c: c.delete_utm(5), "DELETE", "/svc/uba/api/operations/utm/drop/5"),
        (
            "add_user_property",
            lambda c: c.add_user_property("a", "string"),
            "POST",
            "/uba/api/schema/userProperties",
        ),
        ("add_event", lambda c: c.add_event("a"), "POST", "/uba/api/schema/event"),
        (
            "update_event",
            lambda c: c.update_event("a", name="A"),
            "PUT",
            "/uba/api/schema/event",
        ),
        (
            "set_account_activation",
            lambda c: c.set_account_activation("a@example.com", True),
            "POST",
            "/uba/manage/enterprise/accounts/activation",
        ),
    ],
)
def test_idempotent_writes_retry_after_sending(
    client: AnalyticsClient,
    requests_mock: rm.Mocker,
    name: str,
    call: Callable[[AnalyticsClient], Any],
    method: str,
    url: str,
) -> None:
    requests_mock.register_uri(
        method,
        BASE + url,
        [{"exc": requests.ReadTimeout}, {"status_code": 502}, {"json": {"success": 0}}],
    )
    call(client)
    assert requests_mock.call_count == 3


def test_retry_after_seconds_is_honoured_beyond_backoff_max(
    client: AnalyticsClient, requests_mock: rm.Mocker, sleeps: Recorder
) -> None:
    requests_mock.get(
        EVENTS,
        [
            {"status_code": 503, "headers": {"Retry-After": "60"}},
            {"status_code": 429, "headers": {"Retry-After": "1.5"}},
            {"json": []},
        ],
    )
    client.list_events()
    assert sleeps.delays == [60.0, 1.5]


def test_retry_after_is_capped(
    client: AnalyticsClient, requests_mock: rm.Mocker, sleeps: Recorder
) -> None:
    requests_mock.get(
        EVENTS, [{"status_code": 429, "headers": {"Retry-After": "3600"}}, {"json": []}]
    )
    client.list_events()
    assert sleeps.delays == [120.0]


def test_retry_after_on_other_statuses_is_ignored(
    client: AnalyticsClient, requests_mock: rm.Mocker, sleeps: Recorder
) -> None:
    requests_mock.get(
        EVENTS, [{"status_code": 500, "headers": {"Retry-After": "60"}}, {"json": []}]
    )
    client.list_events()
    assert len(sleeps.delays) == 1 and sleeps.delays[0] <= 0.5


def test_client_backoff_stays_within_the_growing_capped_ceiling(
    requests_mock: rm.Mocker, sleeps: Recorder
) -> None:
    config = ClientConfig(
        BASE, token="t", app_key="a", max_attempts=7, backoff_base=0.5, backoff_max=3.0
    )
    requests_mock.get(EVENTS, status_code=502)
    with pytest.raises(AnalyticsServerError):
        AnalyticsClient(config, sleep=sleeps).list_events()
    ceilings = [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert len(sleeps.delays) == len(ceilings)
    assert all(0.0 <= d <= c for d, c in zip(sleeps.delays, ceilings, strict=True))


def test_retries_are_logged_without_secrets(
    client: AnalyticsClient, requests_mock: rm.Mocker, caplog: pytest.LogCaptureFixture
) -> None:
    requests_mock.get(EVENTS, [{"status_code": 503}, {"exc": requests.ReadTimeout}, {"json": []}])
    with caplog.at_level(logging.WARNING, logger="airflow_provider_analytics.client"):
        client.list_events()
    records = [r for r in caplog.records if r.name == "airflow_provider_analytics.client"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING]
    first, second = (r.getMessage() for r in records)
    assert first.startswith("list_events: attempt 1/4 failed (HTTP 503); retrying in ")
    assert first.endswith(" s")
    assert second.startswith("list_events: attempt 2/4 failed (ReadTimeout")
    for record in records:
        assert "tok" not in record.getMessage() and "app" not in record.getMessage()


# The policy itself, with injected randomness.


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(6, 0.5, 3.0, random=lambda: 1.0)
    assert [policy.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_backoff_uses_full_jitter() -> None:
    policy = RetryPolicy(4, 1.0, 30.0, random=lambda: 0.25)
    assert [policy.delay(n) for n in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert RetryPolicy(4, 1.0, 30.0, random=lambda: 0.0).delay(3) == 0.0


def test_delay_prefers_retry_after_up_to_its_own_cap() -> None:
    policy = RetryPolicy(4, 0.5, 2.0, retry_after_max=90.0, random=lambda: 1.0)
    assert policy.delay(1, retry_after=60.0) == 60.0
    assert policy.delay(1, retry_after=500.0) == 90.0
    assert policy.delay(2) == 1.0


@pytest.mark.parametrize(
    ("exc", "phase"),
    [
        (requests.ConnectTimeout(), FailurePhase.CONNECT),
        (refused(), FailurePhase.CONNECT),
        (requests.exceptions.SSLError(), FailurePhase.TLS),
        (requests.ReadTimeout(), FailurePhase.EXCHANGE),
        (requests.ConnectionError("Connection aborted."), FailurePhase.EXCHANGE),
        (requests.exceptions.ChunkedEncodingError(), FailurePhase.EXCHANGE),
        (requests.exceptions.ContentDecodingError(), FailurePhase.EXCHANGE),
        (httpx.DecodingError("corrupt gzip"), FailurePhase.EXCHANGE),
        (requests.exceptions.InvalidURL(), FailurePhase.OTHER),
        (requests.exceptions.InvalidHeader(), FailurePhase.OTHER),
        (httpx.ConnectError("[Errno 111] Connection refused"), FailurePhase.CONNECT),
        (httpx.ConnectTimeout("timed out"), FailurePhase.CONNECT),
        (httpx.PoolTimeout("no free connection"), FailurePhase.CONNECT),
        (tls_refused(), FailurePhase.TLS),
        (httpx.ReadTimeout("timed out"), FailurePhase.EXCHANGE),
        (httpx.WriteTimeout("timed out"), FailurePhase.EXCHANGE),
        (httpx.ReadError("reset"), FailurePhase.EXCHANGE),
        (httpx.RemoteProtocolError("peer closed the connection"), FailurePhase.EXCHANGE),
        (httpx.UnsupportedProtocol("ftp"), FailurePhase.OTHER),
        (httpx.LocalProtocolError("bad header"), FailurePhase.OTHER),
        (httpx.InvalidURL("no host"), FailurePhase.OTHER),
        (ValueError("neither library's"), FailurePhase.OTHER),
    ],
)
def test_transport_failures_are_classified_by_how_far_they_got(
    exc: Exception, phase: FailurePhase
) -> None:
    assert classify_transport_error(exc) is phase
    config = ClientConfig(BASE, token="tok", app_key="app")
    for operation, retried in (
        (ops.LIST_EVENTS, phase in (FailurePhase.CONNECT, FailurePhase.EXCHANGE)),
        (ops.CREATE_UTM, phase is FailurePhase.CONNECT),
    ):
        error = error_from_transport(operation, exc, attempts=1)
        assert error.phase is phase and error.reason == f"{type(exc).__name__}: {phase.value}"
        assert CallAttempts(config, RetryPolicy(), operation).retries(error) is retried


def test_parse_retry_after() -> None:
    now = 1_700_000_000.0
    later = email.utils.formatdate(now + 45, usegmt=True)
    earlier = email.utils.formatdate(now - 45, usegmt=True)
    assert parse_retry_after("30", now=now) == 30.0
    assert parse_retry_after(" 2.5 ", now=now) == 2.5
    assert parse_retry_after("-4", now=now) == 0.0
    assert parse_retry_after(later, now=now) == 45.0
    assert parse_retry_after(earlier, now=now) == 0.0
    for bad in (None, "", "soon", "nan", "inf", "Wed, 99 Foo 2024 99:99:99"):
        assert parse_retry_after(bad, now=now) is None
    # a date without its zone says no moment: the caller backs off
    assert parse_retry_after("Wed, 01 May 2024 08:00:30", now=now) is None
    # the far future is a (long) wait, which the policy bounds, never a crash
    assert parse_retry_after("Fri, 31 Dec 9999 23:00:00 -1200", now=now) == pytest.approx(
        253_402_340_400.0 - now
    )


class FakeAnswer:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.headers = headers or {}

    @property
    def content(self) -> bytes:
        return json.dumps({"code": self.status_code}).encode()


def test_a_wait_longer_than_the_deadline_ends_the_call_at_once() -> None:
    """The call's deadline covers the waits: a Retry-After (or a backoff) that outlasts it
    ends the call with that attempt's error at once, instead of sleeping past the deadline."""
    now = [100.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    def call(operation: ops.Operation = ops.LIST_EVENTS) -> CallAttempts:
        config = ClientConfig(BASE, token="tok", app_key="app", request_deadline=10.0)
        policy = RetryPolicy(max_attempts=4, backoff_base=0.5, random=lambda: 1.0)
        throttle = PlatformThrottle(clock=lambda: now[0])
        return CallAttempts(config, policy, operation, clock=lambda: now[0], throttle=throttle)

    limited = call()
    answers = iter([FakeAnswer(503, {"Retry-After": "4"}), FakeAnswer(429, {"Retry-After": "100"})])
    lefts: list[float] = []

    def answered() -> None:
        lefts.append(limited.start())
        limited.judge(next(answers))

    with pytest.raises(AnalyticsRateLimitError, match="after 2 attempt"):
        limited.retrying(sleep)(answered)
    assert waits == [4.0]  # fitted in the 10 s left; the 100 s did not
    assert lefts == [10.0, 6.0]

    slow = call()

    def dropped() -> None:
        slow.start()
        now[0] += 9.5  # a 0.5 s backoff would leave nothing of the deadline
        raise slow.failed(requests.ReadTimeout("slow"))

    with pytest.raises(AnalyticsTransportError, match="no complete answer after 1"):
        slow.retrying(sleep)(dropped)
    assert waits == [4.0]


def test_outcomes_of_answers_and_failures() -> None:
    config = ClientConfig(BASE, token="tok", app_key="app", max_attempts=2)
    call = CallAttempts(config, RetryPolicy.from_config(config), ops.CREATE_UTM, json={})
    assert call.headers["Content-Type"] == "application/json"
    call.start()
    call.judge(FakeAnswer(201))  # accepted: nothing raised
    dropped = call.failed(requests.ConnectionError("Connection aborted."))
    assert isinstance(dropped, AnalyticsTransportError)  # a create that may have arrived
    assert "outcome is unknown" in str(dropped)
    assert not call.retries(dropped)
    assert call.retries(call.failed(refused()))  # never arrived: retried
    with pytest.raises(AnalyticsRateLimitError) as caught:
        call.judge(FakeAnswer(429))
    assert call.retries(caught.value)  # a 429 says it was not processed
    with pytest.raises(AnalyticsServerError) as failed:
        call.judge(FakeAnswer(503, {"Retry-After": "2"}))
    assert failed.value.retry_after == 2.0 and not call.retries(failed.value)


@pytest.mark.parametrize(
    ("exc", "warned"),
    [
        (requests.ReadTimeout("stalled"), True),
        (TimeoutError(), True),  # the async transport's deadline: how far it got is unknown
        (refused(), False),
        (requests.ConnectTimeout(), False),
    ],
)
def test_a_create_cut_by_the_deadline_says_its_outcome_is_unknown_once_it_was_sent(
    exc: Exception, warned: bool
) -> None:
    config = ClientConfig(BASE, token="tok", app_key="app")
    call = CallAttempts(config, RetryPolicy.from_config(config), ops.CREATE_UTM, json={})
    call.start()
    error = call.failed(exc, cut_by_deadline=True)
    assert "no complete answer within" in str(error)
    assert ("its outcome is unknown" in str(error)) is warned
    plain = CallAttempts(config, RetryPolicy.from_config(config), ops.LIST_EVENTS)
    assert "outcome" not in str(plain.failed(exc, cut_by_deadline=True))
