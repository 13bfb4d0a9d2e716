"""The one retry engine (core/retry) every loop uses: attempts, backoff and jitter,
Retry-After and its bound, the deadline, the log, sync and async alike, without sleeping. (Which
errors are transient is each error class's answer: tests/unit/core/test_errors.py.)"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from airflow_provider_analytics.core import errors
from airflow_provider_analytics.core.retry import RetryPolicy


class Clock:
    """Monotonic seconds that the injected sleep moves."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)


def failing(*faults: BaseException, result: Any = "done") -> Any:
    """A function raising ``faults`` one call after the other, then returning ``result``."""
    pending = list(faults)
    calls: list[int] = []

    def attempt() -> Any:
        calls.append(1)
        if pending:
            raise pending.pop(0)
        return result

    attempt.calls = calls  # type: ignore[attr-defined]
    return attempt


def busy(retry_after: float | None = None) -> errors.AnalyticsServerError:
    error = errors.AnalyticsServerError("busy", status=503)
    error.retry_after = retry_after
    return error


def test_transient_errors_are_retried_with_doubling_capped_backoff() -> None:
    clock = Clock()
    policy = RetryPolicy(5, 0.5, 1.5, jitter=0.0)
    attempt = failing(busy(), busy(), busy(), busy())
    assert policy.retrying("job", sleep=clock.sleep)(attempt) == "done"
    assert clock.waits == [0.5, 1.0, 1.5, 1.5]


def test_the_deprecated_backoff_warns_and_waits_as_delay_does() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=8.0, jitter=0.0)
    with pytest.warns(DeprecationWarning, match=r"use RetryPolicy\.delay"):
        assert policy.backoff(3) == policy.delay(3) == 4.0


def test_jitter_draws_its_share_of_each_wait() -> None:
    for jitter, draw, expected in ((1.0, 0.25, 0.5), (0.5, 0.0, 1.0), (0.5, 1.0, 2.0), (0, 0.3, 2)):
        policy = RetryPolicy(2, 2.0, 10.0, jitter=jitter, random=lambda d=draw: d)
        assert policy.delay(1) == expected


def test_a_permanent_error_is_raised_at_once_and_the_last_transient_one_as_it_is() -> None:
    clock = Clock()
    policy = RetryPolicy.doubling(3, 1.0, jitter=0.0)
    refused = errors.AnalyticsAuthenticationError("no", status=401)
    attempt = failing(busy(), refused)
    with pytest.raises(errors.AnalyticsAuthenticationError) as caught:
        policy.retrying("job", sleep=clock.sleep)(attempt)
    assert caught.value is refused and clock.waits == [1.0]
    last = busy()
    attempt = failing(busy(), busy(), last)
    with pytest.raises(errors.AnalyticsServerError) as caught:
        policy.retrying("job", sleep=clock.sleep)(attempt)
    assert caught.value is last and len(attempt.calls) == 3


def test_retry_after_is_the_wait_up_to_its_bound() -> None:
    clock = Clock()
    policy = RetryPolicy(4, 0.5, 1.0, retry_after_max=90.0, jitter=0.0)
    attempt = failing(busy(60.0), busy(500.0), busy())
    policy.retrying("job", sleep=clock.sleep)(attempt)
    assert clock.waits == [60.0, 90.0, 1.0]  # beyond backoff_max; bounded; then the backoff


def test_no_wait_reaches_the_deadline() -> None:
    clock = Clock()
    policy = RetryPolicy(10, 1.0, 100.0, jitter=0.0)
    attempt = failing(*(busy() for _ in range(9)))
    engine = policy.retrying("job", sleep=clock.sleep, deadline=6.5, clock=clock)
    with pytest.raises(errors.AnalyticsServerError):
        engine(attempt)
    assert clock.waits == [1.0, 2.0]  # 4 s more would end at 7 s, past the deadline
    assert len(attempt.calls) == 3


def test_a_caller_may_narrow_what_is_retried() -> None:
    clock = Clock()
    attempt = failing(busy())
    with pytest.raises(errors.AnalyticsServerError):
        RetryPolicy().retrying("create", sleep=clock.sleep, retries=lambda _: False)(attempt)
    assert clock.waits == [] and len(attempt.calls) == 1


def test_each_retry_is_logged_with_its_reason(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    error = busy()
    error.reason = "HTTP 503"
    policy = RetryPolicy(3, 1.0, 10.0, jitter=0.0)
    with caplog.at_level(logging.WARNING):
        policy.retrying("get_utm", sleep=clock.sleep)(failing(error, busy()))
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "get_utm: attempt 1/3 failed (HTTP 503); retrying in 1.00 s",
        "get_utm: attempt 2/3 failed (busy); retrying in 2.00 s",
    ]


def test_the_async_engine_follows_the_same_policy() -> None:
    clock = Clock()
    policy = RetryPolicy(4, 0.5, 10.0, jitter=0.0)
    faults = [busy(3.0), errors.AnalyticsRateLimitError("slow", status=429)]

    async def attempt() -> str:
        if faults:
            raise faults.pop(0)
        return "done"

    engine = policy.retrying_async("job", sleep=clock.asleep, deadline=100.0, clock=clock)
    assert asyncio.run(engine(attempt)) == "done"
    assert clock.waits == [3.0, 1.0]
