"""The decisions of one call, free of any HTTP library (what to send, whose turn it is, which
answer to accept, which error to raise), so both transports, which only do the I/O, behave
alike (docs/architecture.md, the client room)."""

from __future__ import annotations

import logging
import math
import re
import ssl
import sys
import time
from typing import TYPE_CHECKING, Any

import requests
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from airflow_provider_analytics.client.answers import ResponseReader
from airflow_provider_analytics.client.operations import AuthKind
from airflow_provider_analytics.client.throttle import throttle_for
from airflow_provider_analytics.core import errors, strict_json
from airflow_provider_analytics.core.errors import (
    AnalyticsConfigurationError,
    AnalyticsError,
    AnalyticsRateLimitError,
    AnalyticsTransportError,
    FailurePhase,
)
from airflow_provider_analytics.core.redaction import Redactor, known, remember
from airflow_provider_analytics.core.retry import parse_retry_after

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from tenacity import AsyncRetrying, Retrying

    from airflow_provider_analytics.client.answers import HttpAnswer
    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.operations import Operation
    from airflow_provider_analytics.client.proxies import Route
    from airflow_provider_analytics.client.throttle import PlatformThrottle, Slot
    from airflow_provider_analytics.core.retry import RetryPolicy

logger = logging.getLogger("airflow_provider_analytics.client")
# decimal digits of any script, as int() reads them, up to its default length limit
_INTEGER = re.compile(rf"-?\d{{1,{sys.get_int_max_str_digits()}}}")

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""Statuses whose ``Retry-After`` header is honoured."""

NOT_PROCESSED_STATUSES = frozenset({429})
"""Statuses that say the request was not processed, so even a create may be repeated."""


_BY_STATUS: dict[int, tuple[type[errors.AnalyticsApiError], str]] = {
    400: (errors.AnalyticsBadRequestError, "the server rejected the request's parameters"),
    401: (
        errors.AnalyticsAuthenticationError,
        "authentication failed: check {which} of the connection",
    ),
    404: (
        errors.AnalyticsNotFoundError,
        "no such API: check the connection's base URL and the ad tracking path prefix "
        "(utm_prefix: '/svc' in the spec, '/ark' on many deployments)",
    ),
    415: (
        errors.AnalyticsUnsupportedMediaTypeError,
        "the server refused the content type; a proxy between may be rewriting requests",
    ),
    429: (
        errors.AnalyticsRateLimitError,
        "still rate limited after {attempts} attempt(s); lower the request rate or raise "
        "max_attempts",
    ),
}
_BY_STATUS[498] = _BY_STATUS[400]
_CREDENTIALS = {
    AuthKind.PLATFORM: "the xtoken (platform credential)",
    AuthKind.PROJECT: "the token and appKey (project credentials)",
}
_BY_CLASS = {  # status // 100
    3: (
        errors.AnalyticsApiError,
        "unexpected redirect (not followed, so credentials stay with the configured host); "
        "check the scheme, host and path of the base URL",
    ),
    5: (
        errors.AnalyticsServerError,
        "server error after {attempts} attempt(s); the platform or a proxy failed",
    ),
}

_NOT_COMPLETED_BY_CODE: dict[int, tuple[type[errors.AnalyticsNotCompletedError], str]] = {
    501: (
        errors.AnalyticsQuotaExceededError,
        "a quota is exhausted (projects, cohorts); free some up or ask for a larger quota",
    ),
    50101: (
        errors.AnalyticsAlreadyExistsError,
        "the object already exists; look it up instead of creating it again",
    ),
    50102: (
        errors.AnalyticsDisabledError,
        "the object exists but is disabled; enable it (for an account: "
        "set_account_activation) instead of creating it again",
    ),
}


def _error_body(response: HttpAnswer, redactor: Redactor) -> tuple[Any, str | None, Any]:
    """``(code, msg, data)`` of the platform's error body (``msg`` masked, then cut); a code
    written as digits is read as the number."""
    try:
        body = strict_json.loads(response.content)
    except strict_json.StrictJsonError:
        return None, None, None
    if not isinstance(body, dict):
        return None, None, None
    msg, code = body.get("msg"), body.get("code")
    if isinstance(code, str) and _INTEGER.fullmatch(digits := code.strip()):
        code = int(digits)  # the stripped text: int() keeps some separators strip() takes
    return code, None if msg is None else redactor.excerpt(msg), body.get("data")


def _classify(
    status: int, code: Any, operation: Operation, attempts: int
) -> tuple[type[errors.AnalyticsApiError], str]:
    if status in (499, 501):
        return _NOT_COMPLETED_BY_CODE.get(
            code if isinstance(code, int) else -1,
            (errors.AnalyticsNotCompletedError, "the operation was not completed"),
        )
    unexpected = (errors.AnalyticsApiError, "unexpected answer")
    cls, advice = _BY_STATUS.get(status) or _BY_CLASS.get(status // 100, unexpected)
    which = _CREDENTIALS[operation.auth]
    return cls, advice.format(attempts=attempts, which=which)


def error_from_response(
    operation: Operation, response: HttpAnswer, *, attempts: int
) -> errors.AnalyticsApiError:
    """The error for a non-success answer, named by its status and the platform's body."""
    status = response.status_code
    redactor = known()
    code, msg, data = _error_body(response, redactor)
    cls, advice = _classify(status, code, operation, attempts)
    detail = f"HTTP {status}"
    if code is not None and code != status:
        detail += f", code {redactor.excerpt(code, 80)}"
    if msg:
        detail += f": {msg}"
    message = f"{operation.name}: {advice} ({detail})"
    if cls is errors.AnalyticsBadRequestError and isinstance(data, list) and data:
        message += f"; offending parameters: {redactor.excerpt(', '.join(map(str, data)))}"
    if cls is errors.AnalyticsServerError:
        message += operation.after_sending
    return cls(message, status=status, code=code, msg=msg, data=data, operation=operation.name)


_TRANSPORT_ADVICE = {
    FailurePhase.TLS: "TLS failed; check the certificate, the verify setting or the CA bundle",
    FailurePhase.CONNECT: "could not connect after {attempts} attempt(s); check the base URL, "
    "that the platform is up and that no firewall or proxy is in the way",
    FailurePhase.EXCHANGE: "no complete answer after {attempts} attempt(s); the server or a "
    "proxy dropped the connection or was too slow (see read_timeout)",
    FailurePhase.OTHER: "the request could not be made",
}


def error_from_transport(
    operation: Operation, exc: BaseException, *, attempts: int
) -> AnalyticsTransportError:
    """The error for a request that got no answer, by how far it got (``exc`` masked)."""
    phase = classify_transport_error(exc)
    shown = known().excerpt(exc)
    name = type(exc).__name__
    advice = _TRANSPORT_ADVICE[phase].format(attempts=attempts)
    message = f"{operation.name}: {advice} ({name}: {shown})"
    if phase is FailurePhase.EXCHANGE:
        message += operation.after_sending
    error = AnalyticsTransportError(message, operation=operation.name)
    error.phase = phase
    error.reason = f"{name}: {phase.value}"
    return error


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception, the exceptions it wraps (``args`` and ``reason``) and its context chain."""
    seen: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if not any(current is s for s in seen):
            seen.append(current)
            nested = (getattr(current, "reason", None), current.__cause__, current.__context__)
            pending += [n for n in (*nested, *current.args) if isinstance(n, BaseException)]
    return seen


def classify_transport_error(exc: BaseException) -> FailurePhase:
    """How far a failed request got (which decides whether it may be retried): the one
    place that reads what ``requests`` and ``httpx`` raise (``httpx`` is imported only for
    its own exceptions, so the synchronous path never loads it)."""
    if isinstance(exc, requests.exceptions.SSLError):
        return FailurePhase.TLS
    if isinstance(exc, requests.ConnectTimeout) or (
        isinstance(exc, requests.ConnectionError)
        and any(isinstance(c, NewConnectionError | ConnectTimeoutError) for c in _causes(exc))
    ):
        return FailurePhase.CONNECT
    if isinstance(
        exc,
        requests.Timeout
        | requests.ConnectionError
        | requests.exceptions.ChunkedEncodingError
        | requests.exceptions.ContentDecodingError,  # answered, undecodable, as httpx's
    ):
        return FailurePhase.EXCHANGE
    if type(exc).__module__.split(".")[0] != "httpx":
        return FailurePhase.OTHER
    import httpx

    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        tls = any(isinstance(c, ssl.SSLError) for c in _causes(exc))
        return FailurePhase.TLS if tls else FailurePhase.CONNECT
    exchange = httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError
    if isinstance(exc, exchange | httpx.DecodingError):  # NetworkError: read, write, close
        return FailurePhase.EXCHANGE
    return FailurePhase.OTHER


def auth_headers(config: ClientConfig, operation: Operation) -> dict[str, str]:
    """The credential headers ``operation`` needs (``token`` and ``appKey``, or ``xtoken``);
    refused before anything is sent when the connection does not set them."""
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


class CallAttempts:
    """One call of ``operation``: the request every attempt sends (``method``, ``url``,
    ``params`` and a ``json`` object without ``None`` values, ``headers``, timeouts), its
    turns with the platform's throttle and the verdict on every attempt. ``route``'s refusal
    is raised before anything is sent; ``time_limit`` replaces ``request_deadline``."""

    def __init__(
        self,
        config: ClientConfig,
        policy: RetryPolicy,
        operation: Operation,
        *,
        path_params: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        read_timeout: float | None = None,
        route: Route | None = None,
        time_limit: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        throttle: PlatformThrottle | None = None,
    ) -> None:
        if route is not None:
            route.check(operation.name)
        self.headers = {"User-Agent": config.user_agent, "Accept": "application/json"}
        self.headers.update(auth_headers(config, operation))
        if json is not None:
            self.headers["Content-Type"] = "application/json"
        path = operation.build_path(config.utm_prefix, **(path_params or {}))
        self.method, self.url = operation.method, config.api_root + path
        self.json = {k: v for k, v in json.items() if v is not None} if type(json) is dict else json
        self.params = None if params is None else {k: v for k, v in params.items() if v is not None}
        self.connect_timeout = config.connect_timeout
        self.read_timeout = read_timeout or config.read_timeout
        self.operation = operation
        self.attempt = 0
        # every message masks the credentials of the call, its route's proxy password too
        remember((*config.secrets(), *(route.secrets if route is not None else ())))
        self._policy = policy
        self._clock = clock
        self._limit = config.request_deadline if time_limit is None else time_limit
        self._ends = clock() + self._limit
        self.throttle = throttle_for(config.base_url) if throttle is None else throttle
        self.concurrency = config.max_concurrent_calls
        self._covered = -math.inf  # the latest hold-off moment this call has waited for
        self._ended: AnalyticsError | None = None  # ends the call at once (deadline, no turn)

    def hold_off(self) -> float | None:
        """Seconds to wait before the next attempt for a ``Retry-After`` this or another call
        got (``None``: go on); refused at once when the wait would outlast the deadline."""
        pending = self.throttle.pending(self._covered)
        if pending is None:
            return None
        moment, seconds = pending
        left = self._ends - self._clock()
        name = self.operation.name
        if seconds >= left:
            self._ended = AnalyticsRateLimitError(
                f"{name}: the platform asked every caller to wait {seconds:.1f} s more "
                f"(Retry-After of an earlier answer), beyond the {max(left, 0.0):.1f} s left "
                "of this call's deadline; run fewer calls at once (max_concurrent_calls, the "
                "Airflow pool) or raise request_deadline",
                operation=name,
            )
            raise self._ended
        self._covered = moment
        logger.info(
            "%s: the platform asked every caller to wait (Retry-After); waiting %.2f s",
            name,
            seconds,
        )
        return seconds

    def place_timeout(self) -> float:
        """The rest of the call's deadline (refused once it has passed)."""
        left = self._ends - self._clock()
        if left <= 0:
            raise self._deadline_error()
        return left

    def kept(self, slot: Slot | None) -> Slot | None:
        """The place the throttle gave (none within the deadline ends the call), or ``None``
        when a hold-off was set meanwhile: the place is given back to wait it out first."""
        if slot is None:
            self._ended = AnalyticsTransportError(
                f"{self.operation.name}: no turn to call the platform within {self._limit:g} "
                f"s: {self.concurrency} call(s) to it stayed in flight from this process "
                "(max_concurrent_calls), a streamed export holding its place until its body is "
                "read; raise max_concurrent_calls or request_deadline, or run fewer calls at once",
                operation=self.operation.name,
            )
            raise self._ended
        if self.throttle.pending(self._covered) is None:
            return slot
        slot.release()
        return None

    def start(self) -> float:
        """Count the next attempt and return the seconds it may take."""
        self.attempt += 1
        return self.place_timeout()

    def judge(self, answer: HttpAnswer) -> None:
        """Accept a successful (2xx) answer, or raise the error of an attempt that got an error
        answer. A readable ``Retry-After`` on a 429 or 503 becomes the error's ``retry_after``
        (up to ``retry_after_max``) and holds off every caller of the platform."""
        status = answer.status_code
        if 200 <= status < 300:
            return
        policy, wait = self._policy, None
        if status in RETRY_AFTER_STATUSES:
            wait = parse_retry_after(answer.headers.get("Retry-After"), now=policy.clock())
            if wait is not None:
                wait = min(wait, policy.retry_after_max)
                moment = self.throttle.hold_off(wait, status=status)
                self._covered = max(self._covered, moment)  # a retry waits for it anyway
        error = error_from_response(self.operation, answer, attempts=self.attempt)
        error.retry_after, error.reason = wait, f"HTTP {status}"
        raise error

    def grown(self, body: bytearray, chunk: bytes, answer: HttpAnswer) -> None:
        """Add ``chunk`` of the decoded answer to ``body``; past :data:`strict_json.MAX_BYTES`
        the answer is refused (and not asked again) before a small compressed body inflates
        without bound."""
        body += chunk
        if len(body) > strict_json.MAX_BYTES:
            too_long = strict_json.StrictJsonError(
                f"is at least {len(body)} bytes long, more than the {strict_json.MAX_BYTES} "
                "bytes a document may be"
            )
            reader = ResponseReader(self.operation.name, self.operation.after_sending)
            self._ended = error = reader.unreadable(answer, too_long)
            raise error

    def failed(self, exc: BaseException, *, cut_by_deadline: bool = False) -> AnalyticsError:
        """The error of an attempt that got no HTTP answer (``cut_by_deadline``: the transport
        stopped it because the call's deadline passed)."""
        if cut_by_deadline or self._clock() >= self._ends:  # sent, unless it never connected
            unsent = classify_transport_error(exc) in (FailurePhase.CONNECT, FailurePhase.TLS)
            return self._deadline_error(sent=not unsent)
        return error_from_transport(self.operation, exc, attempts=self.attempt)

    def retries(self, error: BaseException) -> bool:
        """Whether the call is tried again after ``error`` (the attempt budget and the deadline
        aside): the error says it is transient, and the operation may be repeated, or the
        request provably never reached the server."""
        if error is self._ended or not errors.is_transient(error):
            return False
        if self.operation.idempotent:
            return True
        if isinstance(error, AnalyticsTransportError):
            return error.phase is FailurePhase.CONNECT
        return getattr(error, "status", None) in NOT_PROCESSED_STATUSES

    def retrying(self, sleep: Callable[[float], None]) -> Retrying:
        """The retry engine for this call's attempts, within its deadline."""
        return self._policy.retrying(self.operation.name, sleep=sleep, **self._engine)

    def retrying_async(self, sleep: Callable[[float], Awaitable[None]]) -> AsyncRetrying:
        return self._policy.retrying_async(self.operation.name, sleep=sleep, **self._engine)

    @property
    def _engine(self) -> dict[str, Any]:
        return {
            "retries": self.retries,
            "deadline": self._ends,
            "clock": self._clock,
            "logger": logger,
        }

    def _deadline_error(self, *, sent: bool = False) -> AnalyticsTransportError:
        name = self.operation.name
        self._ended = error = AnalyticsTransportError(
            f"{name}: no complete answer within {self._limit:g} s (attempt {self.attempt}); "
            "the server is stalled or sends too slowly; raise request_deadline if it is "
            f"merely slow{self.operation.after_sending if sent else ''}",
            operation=name,
        )
        return error
