"""The one retry engine: every loop that tries something again goes through :class:`RetryPolicy`.

Client calls (sync and async), the export's attempts, the shard reads, the Iceberg commits and
the Iceberg maintenance all retry here, built on tenacity (which Airflow itself ships). What is
worth another attempt is the error's own answer (:attr:`AnalyticsError.transient
<airflow_provider_analytics.core.errors.AnalyticsError.transient>`); a caller may only narrow it
(a create that reached the server is not repeated). The policy decides how long to wait:

- exponential backoff, ``backoff_base`` doubled per attempt up to ``backoff_max``, of which the
  share ``jitter`` is drawn at random (1: full jitter, 0.5: between half and all of it, 0: none);
- or the error's ``retry_after`` (the server's ``Retry-After``), up to ``retry_after_max``, kept
  apart from ``backoff_max`` so that a server asking for a minute gets its minute;
- never past the call's ``deadline``: a wait that would outlast it ends the loop at once with
  the last attempt's error, instead of sleeping into the deadline.

Waits go through an injected ``sleep`` (and the deadline through an injected ``clock``), so tests
never sleep. Each retry is logged at WARNING: the subject, the attempt, the reason, the wait.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tenacity import AsyncRetrying, Retrying, retry_if_exception

from airflow_provider_analytics.core.errors import is_transient

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tenacity import RetryCallState

log = logging.getLogger(__name__)

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

    :param max_attempts: attempts in all, the first included.
    :param backoff_base: ceiling of the first backoff, in seconds; doubles per attempt.
    :param backoff_max: largest backoff ceiling, in seconds.
    :param retry_after_max: largest ``Retry-After`` honoured, in seconds.
    :param jitter: the share of each backoff drawn at random (0 to 1).
    :param random: returns a float in [0, 1) for the jitter (injectable for tests).
    :param clock: returns the epoch time, to read ``Retry-After`` dates.
    """

    max_attempts: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    retry_after_max: float = 120.0
    jitter: float = 1.0
    random: Callable[[], float] = field(default=random.random, repr=False)
    clock: Callable[[], float] = field(default=time.time, repr=False)

    @classmethod
    def from_config(cls, config: Any) -> RetryPolicy:
        """The policy a client configuration (``ClientConfig``) asks for: full jitter."""
        return cls(
            config.max_attempts, config.backoff_base, config.backoff_max, config.retry_after_max
        )

    @classmethod
    def doubling(cls, attempts: int, base: float, *, jitter: float = 0.5) -> RetryPolicy:
        """``attempts`` tries ``base``, ``2 * base``, ... seconds apart, less up to ``jitter`` of
        each at random (the jobs' loops: export attempts, shard reads, Iceberg commits)."""
        return cls(attempts, base, math.inf, jitter=jitter)

    def backoff(self, attempt: int) -> float:
        """The backoff after failed attempt ``attempt`` (1-based)."""
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))
        return ceiling * (1.0 - self.jitter + self.jitter * self.random())

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt``: the server's ``retry_after``
        (bounded by ``retry_after_max``) when it sent one, else the backoff."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        return self.backoff(attempt)

    def _engine(
        self,
        subject: str,
        retries: Callable[[BaseException], bool],
        deadline: float | None,
        clock: Callable[[], float],
        logger: logging.Logger,
    ) -> dict[str, Any]:
        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            return self.delay(state.attempt_number, getattr(error, "retry_after", None))

        def stop(state: RetryCallState) -> bool:
            if state.attempt_number >= self.max_attempts:
                return True
            return deadline is not None and state.upcoming_sleep >= deadline - clock()

        def announce(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            logger.warning(
                "%s: attempt %d/%d failed (%s); retrying in %.2f s",
                subject,
                state.attempt_number,
                self.max_attempts,
                getattr(error, "reason", None) or error,
                state.upcoming_sleep,
            )

        return {
            "retry": retry_if_exception(retries),
            "wait": wait,
            "stop": stop,
            "before_sleep": announce,
            "reraise": True,
        }

    def retrying(
        self,
        subject: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        retries: Callable[[BaseException], bool] = is_transient,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> Retrying:
        """The engine for a blocking loop: ``policy.retrying(...)(function, *args)`` calls
        ``function`` until it returns, raises what ``retries`` refuses, or the attempts or the
        deadline run out (its last error raised as it is).

        :param subject: what is tried, for the log (``list_events``, ``cohort vip``).
        :param sleep: waits between attempts (injectable for tests).
        :param retries: which errors deserve another attempt; by default the transient ones.
        :param deadline: the ``clock`` moment no wait may reach.
        :param clock: monotonic seconds, for ``deadline`` (injectable for tests).
        :param logger: where the retries are logged.
        """
        engine = self._engine(subject, retries, deadline, clock, logger)
        return Retrying(sleep=sleep, **engine)

    def retrying_async(
        self,
        subject: str,
        *,
        sleep: Callable[[float], Awaitable[None]],
        retries: Callable[[BaseException], bool] = is_transient,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> AsyncRetrying:
        """:meth:`retrying` for a coroutine: ``await policy.retrying_async(...)(function)``."""
        engine = self._engine(subject, retries, deadline, clock, logger)
        return AsyncRetrying(sleep=sleep, **engine)
