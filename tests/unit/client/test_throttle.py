"""The per-platform throttle of the client: places among the calls in flight, the hold-off a
``Retry-After`` sets for every caller in the process, the settings that size them, and the
reading of ``Retry-After`` itself. (Real HTTP with many threads: the integration tests.)"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import json
import math
import multiprocessing
import threading
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsConfigurationError,
    AnalyticsRateLimitError,
    AnalyticsServerError,
    AnalyticsTransportError,
    ClientConfig,
)
from airflow_provider_analytics.client.async_api import AsyncAnalyticsClient
from airflow_provider_analytics.client.operations import LIST_EVENTS, ApiCall
from airflow_provider_analytics.client.throttle import (
    DEFAULT_MAX_CONCURRENT_CALLS,
    PlatformThrottle,
    forget_platforms,
    platform_key,
    throttle_for,
)
from airflow_provider_analytics.core.retry import parse_retry_after
from airflow_provider_analytics.hooks.analytics import AnalyticsHook
from airflow_provider_analytics.provider_info import CONNECTION_FIELDS, PLATFORM_POOL

if TYPE_CHECKING:
    import requests_mock as rm

BASE = "https://analytics.example.com"
EVENTS = BASE + "/uba/api/schema/event"
CREATE_UTM = BASE + "/svc/uba/api/operations/utm"


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def client(sleeps: list[float], **settings: Any) -> AnalyticsClient:
    config = ClientConfig(BASE, token="tok", app_key="app", backoff_base=0.5, **settings)
    return AnalyticsClient(config, sleep=sleeps.append)


# -- the hold-off -----------------------------------------------------------------------------


def test_a_hold_off_asks_each_caller_once_and_a_later_moment_stays() -> None:
    clock = Clock(100.0)
    throttle = PlatformThrottle(clock=clock)
    assert throttle.pending(-math.inf) is None
    moment = throttle.hold_off(5.0)
    assert moment == 105.0
    assert throttle.pending(-math.inf) == (105.0, 5.0)
    assert throttle.pending(105.0) is None  # the caller that waited for it waits no more
    clock.now = 103.0
    assert throttle.hold_off(1.0) == 104.0  # its own moment; the later one stays
    assert throttle.pending(104.0) == (105.0, 2.0)
    clock.now = 105.0
    assert throttle.pending(-math.inf) is None
    assert throttle.hold_off(-3.0) == 105.0  # a negative wait is no wait


# -- places among the calls in flight ---------------------------------------------------------


def test_places_are_bounded_by_the_callers_limit_and_given_back_once() -> None:
    throttle = PlatformThrottle()
    first, second = throttle.acquire(2, 0), throttle.acquire(2, 0)
    assert first is not None and second is not None
    assert throttle.acquire(2, 0) is None
    assert throttle.in_flight == 2 and throttle.waiting == 0  # a timed-out waiter leaves
    third = throttle.acquire(3, 0)  # a caller that tolerates three goes on
    assert third is not None and throttle.in_flight == 3
    first.release()
    first.release()
    assert not first.held and throttle.in_flight == 2
    assert throttle.acquire(2, 0) is None
    second.release()
    third.release()
    assert throttle.in_flight == 0


def _wait_for(condition: Any) -> None:
    for _ in range(2000):
        if condition():
            return
        threading.Event().wait(0.005)
    raise AssertionError("condition never held")


def test_waiters_get_places_in_the_order_they_came() -> None:
    throttle = PlatformThrottle()
    held = throttle.acquire(1, 0)
    assert held is not None
    order: list[str] = []
    slots: dict[str, Any] = {}

    def wait(name: str) -> None:
        slot = throttle.acquire(1, 30)
        order.append(name)
        slots[name] = slot

    threads = []
    for index, name in enumerate(("a", "b", "c")):
        thread = threading.Thread(target=wait, args=(name,))
        thread.start()
        threads.append(thread)
        _wait_for(lambda count=index + 1: throttle.waiting == count)
    held.release()
    for name in ("a", "b", "c"):
        _wait_for(lambda name=name: name in slots)
        assert order[-1] == name and throttle.in_flight == 1
        slots[name].release()
    for thread in threads:
        thread.join(5)
    assert order == ["a", "b", "c"]
    assert throttle.in_flight == 0 and throttle.waiting == 0


def test_a_coroutine_waits_for_a_place_without_blocking_its_loop() -> None:
    throttle = PlatformThrottle()
    held = throttle.acquire(1, 0)
    assert held is not None

    async def main() -> list[str]:
        steps: list[str] = []
        waiting = asyncio.create_task(throttle.acquire_async(1, 30))
        while throttle.waiting == 0:
            await asyncio.sleep(0.005)
        steps.append("loop runs while waiting")
        threading.Thread(target=held.release).start()
        slot = await waiting
        assert slot is not None and slot.held
        steps.append("place taken")
        slot.release()
        return steps

    assert asyncio.run(main()) == ["loop runs while waiting", "place taken"]
    assert throttle.in_flight == 0


def test_a_coroutine_that_times_out_or_is_cancelled_leaves_nothing_behind() -> None:
    throttle = PlatformThrottle()
    held = throttle.acquire(1, 0)
    assert held is not None

    async def main() -> None:
        assert await throttle.acquire_async(1, 0.01) is None
        task = asyncio.create_task(throttle.acquire_async(1, 30))
        while throttle.waiting == 0:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert throttle.waiting == 0 and throttle.in_flight == 1
    held.release()
    assert throttle.in_flight == 0


def test_one_throttle_per_platform_in_the_process() -> None:
    assert platform_key("https://A.Example.com:4005/") == "https://a.example.com:4005"
    one = throttle_for("https://A.example.com:4005/")
    assert throttle_for("https://a.example.com:4005") is one
    assert throttle_for("https://a.example.com:4006") is not one
    assert throttle_for("http://a.example.com:4005") is not one
    forget_platforms()
    assert throttle_for("https://a.example.com:4005") is not one


def _child_sees(base_url: str, answers: Any) -> None:
    throttle = throttle_for(base_url)
    answers.put((throttle.in_flight, throttle.pending(-math.inf)))


def test_a_forked_child_starts_without_its_parents_calls() -> None:
    throttle = throttle_for(BASE)
    slot = throttle.acquire(1, 0)
    throttle.hold_off(60)
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_child_sees, args=(BASE, answers))
    child.start()
    seen = answers.get(timeout=30)
    child.join(30)
    assert seen == (0, None)
    assert throttle.in_flight == 1 and throttle.pending(-math.inf) is not None
    assert slot is not None
    slot.release()


# -- the client: every caller of the platform holds off ---------------------------------------


def test_a_retry_after_holds_off_the_other_clients_of_the_platform(
    requests_mock: rm.Mocker,
) -> None:
    requests_mock.get(
        EVENTS, [{"status_code": 429, "headers": {"Retry-After": "30"}}, {"json": []}]
    )
    first_sleeps: list[float] = []
    assert client(first_sleeps).list_events() == []
    assert first_sleeps == [30.0]  # its own wait covers the hold-off: no second wait

    other_sleeps: list[float] = []
    assert client(other_sleeps).list_events() == []
    assert len(other_sleeps) == 1 and 29.0 < other_sleeps[0] <= 30.0
    assert requests_mock.call_count == 3

    elsewhere: list[float] = []
    requests_mock.get("https://other.example.com/uba/api/schema/event", json=[])
    config = ClientConfig("https://other.example.com", token="tok", app_key="app")
    assert AnalyticsClient(config, sleep=elsewhere.append).list_events() == []
    assert elsewhere == []  # another platform is not held off


def test_the_async_client_holds_off_alike(requests_mock: rm.Mocker) -> None:
    requests_mock.get(EVENTS, [{"status_code": 503, "headers": {"Retry-After": "20"}}])
    with pytest.raises(AnalyticsServerError):
        client([], max_attempts=1).list_events()
    waits: list[float] = []

    class Stop(Exception):
        """Ends the call before it sends (requests_mock answers the sync transport only)."""

    async def record(seconds: float) -> None:
        waits.append(seconds)
        raise Stop

    async def main() -> None:
        config = ClientConfig(BASE, token="tok", app_key="app", max_attempts=1)
        async with AsyncAnalyticsClient(config, sleep=record) as async_client:
            with pytest.raises(Stop):
                await async_client.request_json(ApiCall(LIST_EVENTS, {}))

    asyncio.run(main())
    assert len(waits) == 1 and 19.0 < waits[0] <= 20.0
    assert throttle_for(BASE).in_flight == 0


def test_a_create_that_is_not_retried_still_holds_the_others_off(
    requests_mock: rm.Mocker,
) -> None:
    requests_mock.post(CREATE_UTM, status_code=503, headers={"Retry-After": "12"})
    with pytest.raises(AnalyticsServerError):
        client([]).create_utm("https://shop.example.com", "c", "m", "s")
    assert requests_mock.call_count == 1  # a create is not retried after a 503
    requests_mock.get(EVENTS, json=[])
    sleeps: list[float] = []
    client(sleeps).list_events()
    assert len(sleeps) == 1 and 11.0 < sleeps[0] <= 12.0


@pytest.mark.parametrize(
    ("status", "retry_after"),
    [(429, "soon"), (429, "1e3"), (503, "Wed, 99 Foo 2024 99:99:99"), (500, "60")],
)
def test_an_unreadable_or_unhonoured_retry_after_holds_nobody_off(
    requests_mock: rm.Mocker, status: int, retry_after: str
) -> None:
    requests_mock.get(
        EVENTS, [{"status_code": status, "headers": {"Retry-After": retry_after}}, {"json": []}]
    )
    sleeps: list[float] = []
    client(sleeps).list_events()
    assert len(sleeps) == 1 and sleeps[0] <= 0.5  # the call's own backoff
    assert throttle_for(BASE).pending(-math.inf) is None
    others: list[float] = []
    client(others).list_events()
    assert others == []


def test_the_hold_off_is_capped_by_retry_after_max(requests_mock: rm.Mocker) -> None:
    requests_mock.get(
        EVENTS, [{"status_code": 429, "headers": {"Retry-After": "3600"}}, {"json": []}]
    )
    sleeps: list[float] = []
    client(sleeps, retry_after_max=5.0).list_events()
    assert sleeps == [5.0]
    others: list[float] = []
    client(others, retry_after_max=5.0).list_events()
    assert len(others) == 1 and others[0] <= 5.0


def test_a_hold_off_beyond_the_deadline_fails_at_once_without_a_request(
    requests_mock: rm.Mocker,
) -> None:
    requests_mock.get(
        EVENTS, [{"status_code": 429, "headers": {"Retry-After": "60"}}, {"json": []}]
    )
    client([]).list_events()
    sent = requests_mock.call_count
    sleeps: list[float] = []
    with pytest.raises(AnalyticsRateLimitError, match=r"Retry-After.*request_deadline") as caught:
        client(sleeps, request_deadline=10.0).list_events()
    assert caught.value.operation == "list_events"
    assert sleeps == [] and requests_mock.call_count == sent


def test_no_place_within_the_deadline_is_named_and_sends_nothing(
    requests_mock: rm.Mocker,
) -> None:
    requests_mock.get(EVENTS, json=[])
    held = throttle_for(BASE).acquire(1, 0)
    assert held is not None
    with pytest.raises(AnalyticsTransportError, match="max_concurrent_calls") as caught:
        client([], max_concurrent_calls=1, request_deadline=0.2).list_events()
    assert "no turn" in str(caught.value)
    assert requests_mock.call_count == 0
    assert throttle_for(BASE).waiting == 0
    held.release()
    client([], max_concurrent_calls=1).list_events()
    assert throttle_for(BASE).in_flight == 0  # an ordinary answer gives its place back


# -- settings ---------------------------------------------------------------------------------


def test_the_defaults_agree_everywhere() -> None:
    config = ClientConfig(BASE)
    assert config.max_concurrent_calls == DEFAULT_MAX_CONCURRENT_CALLS == 4
    assert config.retry_after_max == 120.0
    assert CONNECTION_FIELDS["max_concurrent_calls"]["schema"]["default"] == 4
    assert CONNECTION_FIELDS["retry_after_max"]["schema"]["default"] == config.retry_after_max
    assert PLATFORM_POOL == "analytics_platform"


@pytest.mark.parametrize("value", [0, -1, True, False, "4", 2.5, None])
def test_max_concurrent_calls_must_be_a_whole_number_of_at_least_one(value: Any) -> None:
    with pytest.raises(AnalyticsConfigurationError, match="max_concurrent_calls"):
        ClientConfig(BASE, max_concurrent_calls=value)


@pytest.mark.parametrize("value", [-1.0, math.inf, math.nan, "60", True])
def test_retry_after_max_must_be_a_finite_number_of_seconds(value: Any) -> None:
    with pytest.raises(AnalyticsConfigurationError, match="retry_after_max"):
        ClientConfig(BASE, retry_after_max=value)


def _connect(monkeypatch: pytest.MonkeyPatch, **extra: Any) -> AnalyticsHook:
    connection = {
        "conn_type": "analytics",
        "host": BASE,
        "password": "tok-3f9a1c77e2",
        "extra": {"app_api_key": "ak-5d2e8b01c4", **extra},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(connection))
    return AnalyticsHook()


@pytest.mark.parametrize(("value", "expected"), [(6, 6), (6.0, 6), (1, 1), ("4", 4)])
def test_the_connection_extra_sets_max_concurrent_calls(
    monkeypatch: pytest.MonkeyPatch, value: Any, expected: int
) -> None:
    hook = _connect(monkeypatch, max_concurrent_calls=value, retry_after_max=30)
    assert hook.client_config.max_concurrent_calls == expected
    assert hook.client_config.retry_after_max == 30.0


@pytest.mark.parametrize("value", [0, -2, True, False, "true", "four", 2.5, "2.5", [4]])
def test_the_connection_extra_refuses_what_is_not_a_whole_number_of_calls(
    monkeypatch: pytest.MonkeyPatch, requests_mock: rm.Mocker, value: Any
) -> None:
    hook = _connect(monkeypatch, max_concurrent_calls=value)
    with pytest.raises(
        AnalyticsConfigurationError, match=r"'max_concurrent_calls': must be an integer >= 1"
    ):
        hook.get_conn().list_events()
    assert requests_mock.call_count == 0


# -- reading Retry-After ----------------------------------------------------------------------

NOW = 1_700_000_000.0


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["", " ", "\t"]))
def test_delay_seconds_are_read_as_written(seconds: int, padding: str) -> None:
    assert parse_retry_after(f"{padding}{seconds}{padding}", now=NOW) == float(seconds)


@given(
    st.datetimes(
        min_value=dt.datetime(1995, 1, 1),
        max_value=dt.datetime(2090, 1, 1),
        timezones=st.timezones(),
    )
)
def test_an_http_date_is_the_wait_until_it_or_none_if_past(moment: dt.datetime) -> None:
    moment = moment.replace(microsecond=0)
    header = email.utils.format_datetime(moment.astimezone(dt.UTC), usegmt=True)
    expected = max(moment.timestamp() - NOW, 0.0)
    assert parse_retry_after(header, now=NOW) == pytest.approx(expected, abs=1e-6)


@given(st.text(max_size=40))
def test_any_header_reads_as_none_or_a_finite_wait(value: str) -> None:
    seconds = parse_retry_after(value, now=NOW)
    assert seconds is None or (math.isfinite(seconds) and seconds >= 0)
    if not any("0" <= char <= "9" for char in value):
        assert seconds is None  # both forms need ASCII digits


@pytest.mark.parametrize(
    "value", ["1e3", "1_000", "١٢", "0x10", "+5", "5 s", "inf", "nan", "9" * 400, ""]
)
def test_what_is_neither_form_is_unreadable(value: str) -> None:
    assert parse_retry_after(value, now=NOW) is None
