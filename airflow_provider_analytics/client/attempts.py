"""The decisions of one call, free of any HTTP library: what to send, and after each attempt
whether to accept the answer, wait and try again, or fail with which client error.

The synchronous transport (``requests``) and the asynchronous one (``httpx``) both drive a
:class:`CallAttempts` and only do the I/O themselves (send, sleep, close), so they send the
same credentials and headers, retry the same failures after the same waits, keep to the
same overall deadline and raise the same errors with the same masked messages.

Before each attempt a transport takes its turn with the platform's
:class:`~airflow_provider_analytics.client.throttle.PlatformThrottle`: it waits out the hold-off
(:meth:`CallAttempts.hold_off`), then for a place among the calls in flight
(:meth:`CallAttempts.place_timeout`), and the call's deadline covers both waits.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.client.failures import error_from_response, error_from_transport
from airflow_provider_analytics.client.operations import AuthKind
from airflow_provider_analytics.client.retry import RETRY_AFTER_STATUSES, parse_retry_after
from airflow_provider_analytics.client.throttle import throttle_for
from airflow_provider_analytics.client.transport_failures import classify_transport_error
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsError,
    AnalyticsRateLimitError,
    AnalyticsTransportError,
)
from airflow_provider_analytics.core.redaction import Redactor

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.failures import HttpAnswer
    from airflow_provider_analytics.client.operations import Operation
    from airflow_provider_analytics.client.retry import RetryPolicy
    from airflow_provider_analytics.client.throttle import PlatformThrottle

logger = logging.getLogger("airflow_provider_analytics.client")


def auth_headers(config: ClientConfig, operation: Operation) -> dict[str, str]:
    """The credential headers ``operation`` needs: ``token`` and ``appKey``, or ``xtoken``.

    :param config: the credentials.
    :param operation: decides which credentials.
    :raises AnalyticsConfigurationError: the connection does not set them (checked before
        anything is sent).
    """
    if operation.auth is AuthKind.PLATFORM:
        if not config.xtoken:
            raise AnalyticsConfigurationError(
                f"{operation.name} is an account operation and needs the platform "
                "credential xtoken, which the connection does not set",
                operation=operation.name,
            )
        return {"xtoken": config.xtoken}
    token, app_key = config.token, config.app_key
    if not token or not app_key:
        missing = [n for n, v in (("token", token), ("appKey", app_key)) if not v]
        raise AnalyticsConfigurationError(
            f"{operation.name} is a project operation and needs the project credentials "
            f"token and appKey; the connection does not set {' and '.join(missing)}",
            operation=operation.name,
        )
    return {"token": token, "appKey": app_key}


@dataclass(frozen=True)
class Outgoing:
    """The request every attempt of a call sends.

    :param method: HTTP method.
    :param url: absolute URL without the query.
    :param params: query parameters, ``None`` values dropped (``None`` for no query).
    :param json: JSON body, ``None`` for no body.
    :param headers: user agent, ``Accept``, credentials and, with a body, ``Content-Type``.
    :param connect_timeout: seconds to wait for the connection.
    :param read_timeout: seconds to wait for each piece of the answer.
    """

    method: str
    url: str
    params: dict[str, Any] | None
    json: Any
    headers: dict[str, str]
    connect_timeout: float
    read_timeout: float


@dataclass(frozen=True)
class Verdict:
    """What to do after one attempt: accept its answer, wait ``retry_in`` seconds and try
    again, or raise ``error``."""

    retry_in: float | None = None
    error: AnalyticsError | None = None

    @property
    def accepted(self) -> bool:
        """The answer is a success (2xx) to hand back."""
        return self.retry_in is None and self.error is None


class CallAttempts:
    """One call of ``operation``: the request to send and the verdict on every attempt.

    :param config: where and how to connect, and the credentials.
    :param policy: the retry policy.
    :param operation: the operation; decides credentials and retry safety.
    :param path: request path (already percent-encoded) below the base URL.
    :param params: query parameters (``None`` values are dropped).
    :param json: JSON body, or ``None`` for no body.
    :param read_timeout: read timeout instead of the configured one.
    :param extra_secrets: values of this request to mask in errors, besides the credentials.
    :param time_limit: seconds the whole call may take, retries included, instead of
        ``request_deadline``.
    :param clock: monotonic seconds (injectable for tests).
    :param throttle: the platform's throttle, instead of this process' one for ``base_url``.
    :raises AnalyticsConfigurationError: the needed credentials are not configured.
    """

    def __init__(
        self,
        config: ClientConfig,
        policy: RetryPolicy,
        operation: Operation,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        read_timeout: float | None = None,
        extra_secrets: Iterable[str] = (),
        time_limit: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        throttle: PlatformThrottle | None = None,
    ) -> None:
        headers = {"User-Agent": config.user_agent, "Accept": "application/json"}
        headers.update(auth_headers(config, operation))
        if json is not None:
            headers["Content-Type"] = "application/json"
        self.request = Outgoing(
            method=operation.method,
            url=config.api_root + path,
            params=None if params is None else {k: v for k, v in params.items() if v is not None},
            json=json,
            headers=headers,
            connect_timeout=config.connect_timeout,
            read_timeout=read_timeout or config.read_timeout,
        )
        self.operation = operation
        self.attempt = 0
        self._policy = policy
        self._secrets = (*config.secrets(), *extra_secrets)
        self._clock = clock
        self._limit = config.request_deadline if time_limit is None else time_limit
        self._ends = clock() + self._limit
        self.throttle = throttle_for(config.base_url) if throttle is None else throttle
        """The platform's shared bound on calls in flight and its hold-off."""
        self.concurrency = config.max_concurrent_calls
        """Calls in flight to the platform this call tolerates before it starts."""
        self._covered = -math.inf

    def hold_off(self) -> float | None:
        """Seconds to wait before the next attempt because the platform asked every caller
        to (a ``Retry-After`` another call got), or ``None`` to go on.

        A moment this call has already waited for (its own ``Retry-After``) asks nothing more.

        :raises AnalyticsRateLimitError: the wait would outlast the call's deadline (raised at
            once rather than after sleeping into it).
        """
        pending = self.throttle.pending(self._covered)
        if pending is None:
            return None
        moment, seconds = pending
        left = self._ends - self._clock()
        if seconds >= left:
            name = self.operation.name
            raise AnalyticsRateLimitError(
                f"{name}: the platform asked every caller to wait {seconds:.1f} s more "
                f"(Retry-After of an earlier answer), beyond the {max(left, 0.0):.1f} s left "
                "of this call's deadline; run fewer calls at once (max_concurrent_calls, the "
                "Airflow pool) or raise request_deadline",
                operation=name,
            )
        self._covered = moment
        logger.info(
            "%s: the platform asked every caller to wait (Retry-After); waiting %.2f s",
            self.operation.name,
            seconds,
        )
        return seconds

    def held_off(self) -> bool:
        """Whether a hold-off not yet waited for has been set (checked again once a place
        among the calls in flight is taken, in case another call got a ``Retry-After``
        meanwhile)."""
        return self.throttle.pending(self._covered) is not None

    def place_timeout(self) -> float:
        """The seconds this call may wait for a place among the calls in flight (the rest of
        its deadline).

        :raises AnalyticsTransportError: the deadline has passed already.
        """
        left = self._ends - self._clock()
        if left <= 0:
            raise self._deadline_error()
        return left

    def no_place_error(self) -> AnalyticsTransportError:
        """The error of a call that found no place among the calls in flight in time."""
        name = self.operation.name
        return AnalyticsTransportError(
            f"{name}: no turn to call the platform within {self._limit:g} s: "
            f"{self.concurrency} call(s) to it stayed in flight from this process "
            "(max_concurrent_calls), a streamed export holding its place until its body is "
            "read; raise max_concurrent_calls or request_deadline, or run fewer calls at once",
            operation=name,
        )

    def start(self) -> float:
        """Count the next attempt and return the seconds it may take (the rest of the
        call's deadline).

        :raises AnalyticsTransportError: the deadline has passed already.
        """
        self.attempt += 1
        left = self._ends - self._clock()
        if left <= 0:
            raise self._deadline_error()
        return left

    def after_answer(self, answer: HttpAnswer) -> Verdict:
        """The verdict on an attempt that got an HTTP answer.

        :param answer: the answer (its body is read only for an error to raise).
        """
        status = answer.status_code
        if 200 <= status < 300:
            return Verdict()
        policy, operation = self._policy, self.operation
        wait, moment = None, -math.inf
        if status in RETRY_AFTER_STATUSES:
            wait = parse_retry_after(answer.headers.get("Retry-After"), now=policy.clock())
            if wait is not None:  # every caller of the platform holds off, not only this one
                wait = min(wait, policy.retry_after_max)
                moment = self.throttle.hold_off(wait, status=status)
        if policy.has_attempts_left(self.attempt) and policy.retries_status(
            status, idempotent=operation.idempotent
        ):
            delay = self._wait_within_deadline(f"HTTP {status}", wait)
            if delay is not None:
                if wait is not None:
                    self._covered = max(self._covered, moment)  # this wait covers it
                return Verdict(retry_in=delay)
        error = error_from_response(operation, answer, attempts=self.attempt, secrets=self._secrets)
        return Verdict(error=error)

    def after_failure(self, exc: BaseException, *, cut_by_deadline: bool = False) -> Verdict:
        """The verdict on an attempt that got no HTTP answer.

        :param exc: what the HTTP library raised.
        :param cut_by_deadline: the transport stopped the attempt because the call's
            deadline passed.
        """
        if cut_by_deadline or self._clock() >= self._ends:
            return Verdict(error=self._deadline_error())
        failure = classify_transport_error(exc)
        policy, operation = self._policy, self.operation
        if policy.has_attempts_left(self.attempt) and policy.retries_transport(
            failure, idempotent=operation.idempotent
        ):
            delay = self._wait_within_deadline(failure.reason)
            if delay is not None:
                return Verdict(retry_in=delay)
        error = error_from_transport(
            operation,
            failure,
            attempts=self.attempt,
            detail=Redactor(self._secrets).text(str(exc)),
            secrets=self._secrets,
        )
        return Verdict(error=error)

    def _wait_within_deadline(self, reason: str, retry_after: float | None = None) -> float | None:
        """The wait before the next attempt, logged; ``None`` when the call's deadline would
        pass before that attempt could start (the attempt's own error is raised at once then,
        instead of sleeping into a deadline error)."""
        policy = self._policy
        delay = policy.delay(self.attempt, retry_after)
        if delay >= self._ends - self._clock():
            return None
        return policy.announce(self.operation.name, self.attempt, reason, delay)

    def _deadline_error(self) -> AnalyticsTransportError:
        name = self.operation.name
        return AnalyticsTransportError(
            f"{name}: no complete answer within {self._limit:g} s (attempt {self.attempt}); "
            "the server is stalled or sends too slowly; raise request_deadline if it is "
            "merely slow",
            operation=name,
        )
