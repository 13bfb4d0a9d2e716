"""When to try an operation again, and how long to wait before doing so.

Safe operations (reads, analyses, updates and the adds the spec makes idempotent) are
retried on 429, 500, 502, 503, 504, connection failures and timeouts. Operations that
create something (ad tracking links, accounts) are retried only when the request provably
never reached the server: the connection could not be made, or a 429 said it was not
processed. Waits use exponential backoff with full jitter, or ``Retry-After`` when a 429
or 503 carries it.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import requests
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_analytics.client.config import ClientConfig

logger = logging.getLogger("airflow_provider_analytics.client")

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses worth another attempt for a safe operation."""

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""Statuses whose ``Retry-After`` header is honoured."""

NOT_PROCESSED_STATUSES = frozenset({429})
"""Statuses that say the request was not processed, so even a create may be retried."""


class FailurePhase(StrEnum):
    """How far a request got before it failed without an HTTP answer."""

    CONNECT = "could not connect"
    """Refused, unresolvable or timed out while connecting: never reached the server."""
    TLS = "TLS failed"
    """The TLS handshake failed: never reached the server, and retrying will not help."""
    EXCHANGE = "connection dropped or timed out after sending"
    """Sent, but no complete answer came back: the server may have processed it."""
    OTHER = "request could not be made"
    """Anything else (an invalid URL or header, for example): retrying will not help."""


@dataclass(frozen=True)
class TransportFailure:
    """A request that got no HTTP answer, classified for the retry decision.

    :param phase: how far the request got.
    :param exception: class name of what was raised, for logs and messages.
    """

    phase: FailurePhase
    exception: str

    @property
    def reached_server(self) -> bool:
        """``False`` only when the request provably never reached the server."""
        return self.phase not in (FailurePhase.CONNECT, FailurePhase.TLS)

    @property
    def retryable(self) -> bool:
        """Whether another attempt may help at all."""
        return self.phase in (FailurePhase.CONNECT, FailurePhase.EXCHANGE)

    @property
    def reason(self) -> str:
        """Exception class and phase, for logs and messages."""
        return f"{self.exception}: {self.phase.value}"


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception, the exceptions it wraps (``args`` and ``reason``) and its context chain."""
    seen: list[BaseException] = []
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        for nested in (
            getattr(current, "reason", None),
            current.__cause__,
            current.__context__,
            *current.args,
        ):
            if isinstance(nested, BaseException):
                pending.append(nested)
    return seen


def classify_transport_error(exc: requests.RequestException) -> TransportFailure:
    """Tell how far a failed request got, which decides whether it may be retried.

    :param exc: what ``requests`` raised instead of returning a response.
    """
    name = type(exc).__name__
    if isinstance(exc, requests.exceptions.SSLError):
        return TransportFailure(FailurePhase.TLS, name)
    if isinstance(exc, requests.ConnectTimeout):
        return TransportFailure(FailurePhase.CONNECT, name)
    if isinstance(exc, requests.ConnectionError) and any(
        isinstance(c, NewConnectionError | ConnectTimeoutError) for c in _causes(exc)
    ):
        return TransportFailure(FailurePhase.CONNECT, name)
    if isinstance(
        exc,
        requests.Timeout | requests.ConnectionError | requests.exceptions.ChunkedEncodingError,
    ):
        return TransportFailure(FailurePhase.EXCHANGE, name)
    return TransportFailure(FailurePhase.OTHER, name)


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header, ``None`` if absent or unreadable.

    :param value: the header: delay seconds, or an HTTP date.
    :param now: the current epoch time, to turn a date into a delay.
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - now
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


@dataclass(frozen=True)
class RetryPolicy:
    """Attempt budget and waits between attempts.

    :param max_attempts: attempts per operation, first try included.
    :param backoff_base: ceiling of the first backoff, in seconds; doubles per attempt.
    :param backoff_max: largest backoff ceiling, in seconds.
    :param retry_after_max: largest ``Retry-After`` honoured, in seconds; kept apart from
        ``backoff_max`` so a server asking for a minute gets its minute.
    :param sleep: waits the given seconds (injectable for tests).
    :param random: returns a float in [0, 1) for the jitter (injectable for tests).
    :param clock: returns the epoch time, to read ``Retry-After`` dates.
    """

    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    random: Callable[[], float] = field(default=random.random, repr=False)
    clock: Callable[[], float] = field(default=time.time, repr=False)

    @classmethod
    def from_config(
        cls, config: ClientConfig, *, sleep: Callable[[float], None] = time.sleep
    ) -> RetryPolicy:
        """The policy a client configuration asks for."""
        return cls(config.max_attempts, config.backoff_base, config.backoff_max, sleep=sleep)

    def backoff(self, attempt: int) -> float:
        """Full-jitter backoff after failed attempt ``attempt`` (1-based)."""
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))
        return self.random() * ceiling

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt``.

        :param retry_after: the server's ``Retry-After`` in seconds, if it sent one.
        """
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        return self.backoff(attempt)

    def retries_status(self, status: int, *, idempotent: bool) -> bool:
        """Whether an answer with ``status`` deserves another attempt (budget aside)."""
        if idempotent:
            return status in RETRYABLE_STATUSES
        return status in NOT_PROCESSED_STATUSES

    def retries_transport(self, failure: TransportFailure, *, idempotent: bool) -> bool:
        """Whether a request that got no answer deserves another attempt (budget aside)."""
        if not failure.retryable:
            return False
        return idempotent or not failure.reached_server

    def has_attempts_left(self, attempt: int) -> bool:
        """Whether another attempt may follow failed attempt ``attempt`` (1-based)."""
        return attempt < self.max_attempts

    def wait(
        self, operation: str, attempt: int, reason: str, retry_after: float | None = None
    ) -> float:
        """Log the retry at WARNING and sleep before the next attempt; return the delay.

        Only the operation, the attempt count, the reason and the delay are logged, never
        headers, bodies or URLs with their queries.
        """
        delay = self.delay(attempt, retry_after)
        logger.warning(
            "%s: attempt %d/%d failed (%s); retrying in %.2f s",
            operation,
            attempt,
            self.max_attempts,
            reason,
            delay,
        )
        self.sleep(delay)
        return delay
