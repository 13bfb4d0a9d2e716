"""The one retry engine (on tenacity): every loop that tries something again goes through
:class:`RetryPolicy`.

What is worth another attempt is the error's own answer (``AnalyticsError.transient``); a
caller may only narrow it. The wait is an exponential backoff with a ``jitter`` share drawn at
random, or the server's ``Retry-After`` up to ``retry_after_max`` (apart from ``backoff_max``,
so a server asking for a minute gets it), and never past the call's ``deadline``: a wait that
would outlast it ends the loop with the last error. Each retry is logged at WARNING.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import re
import time
import warnings
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
    """Seconds to wait by a ``Retry-After`` header (RFC 9110: ASCII delay seconds, a fraction
    or a negative accepted, or an HTTP date with its zone, measured from epoch ``now``); ``None``
    if absent or unreadable (an exponent, digits of other scripts, a date without a zone or
    beyond what a datetime holds), and the caller backs off."""
    value = (value or "").strip()
    if _DELAY_SECONDS.fullmatch(value):
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
            seconds = math.nan if when.tzinfo is None else when.timestamp() - now
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return max(seconds, 0.0) if math.isfinite(seconds) else None


@dataclass(frozen=True)
class RetryPolicy:
    """Attempt budget (``max_attempts``, the first included) and waits between attempts:
    ``backoff_base`` seconds doubled per attempt up to ``backoff_max``, of which ``jitter`` (0 to
    1) is drawn from ``random``; ``retry_after_max``; ``clock`` (epoch) reads Retry-After dates."""

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

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based): the server's
        ``retry_after`` (bounded by ``retry_after_max``) when it sent one, else the backoff."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))
        return ceiling * (1.0 - self.jitter + self.jitter * self.random())

    def backoff(self, attempt: int) -> float:
        """Deprecated: :meth:`delay` without a ``retry_after`` (kept for one release)."""
        warnings.warn(
            "RetryPolicy.backoff(attempt) is deprecated: use RetryPolicy.delay(attempt)",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.delay(attempt)

    def _engine(
        self,
        subject: str,
        *,
        retries: Callable[[BaseException], bool] = is_transient,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
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

        retry = retry_if_exception(retries)
        return dict(retry=retry, wait=wait, stop=stop, before_sleep=announce, reraise=True)

    def retrying(
        self, subject: str, *, sleep: Callable[[float], None] = time.sleep, **options: Any
    ) -> Retrying:
        """The engine for a blocking loop: ``policy.retrying(...)(function, *args)`` calls
        ``function`` until it returns, raises what ``retries`` refuses (by default what is not
        transient), or the attempts or the ``clock`` moment ``deadline`` run out (its last error
        raised as it is, ``clock`` being monotonic by default); ``subject`` names what is tried
        in the lines of ``logger`` (this module's by default)."""
        return Retrying(sleep=sleep, **self._engine(subject, **options))

    def retrying_async(
        self, subject: str, *, sleep: Callable[[float], Awaitable[None]], **options: Any
    ) -> AsyncRetrying:
        """:meth:`retrying` for a coroutine: ``await policy.retrying_async(...)(function)``."""
        return AsyncRetrying(sleep=sleep, **self._engine(subject, **options))
