"""When to try an operation again, and how long to wait before doing so.

Safe operations (reads, analyses, updates and the adds the spec makes idempotent) are
retried on 429, 500, 502, 503, 504, connection failures and timeouts. Operations that
create something (ad tracking links, accounts) are retried only when the request provably
never reached the server: the connection could not be made, or a 429 said it was not
processed. Waits use exponential backoff with full jitter, or ``Retry-After`` when a 429
or 503 carries it (up to ``retry_after_max``); such a ``Retry-After`` also holds off every other
call to the platform from the process
(:mod:`~airflow_provider_analytics.client.throttle`).

This module only decides; the transports do the waiting (``time.sleep`` or
``asyncio.sleep``), and :mod:`~airflow_provider_analytics.client.transport_failures` tells
how far a failed request got.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from airflow_provider_analytics.client.config import ClientConfig
    from airflow_provider_analytics.client.transport_failures import TransportFailure

logger = logging.getLogger("airflow_provider_analytics.client")

RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses worth another attempt for a safe operation."""

RETRY_AFTER_STATUSES = frozenset({429, 503})
"""Statuses whose ``Retry-After`` header is honoured."""

NOT_PROCESSED_STATUSES = frozenset({429})
"""Statuses that say the request was not processed, so even a create may be retried."""

_DELAY_SECONDS = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header, ``None`` if absent or unreadable
    (the caller then backs off as after any other failure).

    Two forms are read (RFC 9110, 10.2.3): delay seconds, ASCII digits (a fraction is
    accepted too, and a negative delay means no wait), or an HTTP date with its zone
    (``Wed, 21 Oct 2015 07:28:00 GMT``), whose distance from ``now`` is the wait (none if
    past). Anything else, an exponent or digits of other scripts among them, is unreadable.

    :param value: the header.
    :param now: the current epoch time, to turn a date into a delay.
    """
    if value is None:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        seconds = float(value)
    else:
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
    :param random: returns a float in [0, 1) for the jitter (injectable for tests).
    :param clock: returns the epoch time, to read ``Retry-After`` dates.
    """

    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    random: Callable[[], float] = field(default=random.random, repr=False)
    clock: Callable[[], float] = field(default=time.time, repr=False)

    @classmethod
    def from_config(cls, config: ClientConfig) -> RetryPolicy:
        """The policy a client configuration asks for."""
        return cls(
            config.max_attempts, config.backoff_base, config.backoff_max, config.retry_after_max
        )

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

    def announce(self, operation: str, attempt: int, reason: str, delay: float) -> float:
        """Log the coming retry at WARNING and return ``delay``, the wait before it.

        Only the operation, the attempt count, the reason and the delay are logged, never
        headers, bodies or URLs with their queries.
        """
        logger.warning(
            "%s: attempt %d/%d failed (%s); retrying in %.2f s",
            operation,
            attempt,
            self.max_attempts,
            reason,
            delay,
        )
        return delay
