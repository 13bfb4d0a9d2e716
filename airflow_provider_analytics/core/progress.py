"""Progress of long work: a log line at a steady interval, a final line with the rate, and a
progress bar for a person at a terminal or in a notebook.

One :class:`Progress` follows one piece of work (an export attempt, a report's windows, a
client iterator). Each :meth:`Progress.update` costs one clock read unless a line is due.
A line gives what is done (rows, or windows, days ...), the bytes when they are counted, the
rates, and the percentage and the time left when the total is known::

    cohort vip: 250000 of 1000000 rows (25.0%), 11.2 MB received; 50000 rows/s, 2.2 MB/s;
    about 15 s left

Where someone watches (stderr is a terminal, or the code runs in a Jupyter kernel) a bar on
stderr also shows the count, and with a total the percentage and the time left, with no
setup: ``tqdm`` is a dependency, so a plain script gets the bar without installing anything
or configuring logging. The lines go to the logger ``airflow_provider_analytics.core.progress``
at INFO; the package adds no handler (a library leaves that to the application), so they
show where the application or Airflow logs them. Airflow tasks log lines only (the hook
turns the bar off).
"""

from __future__ import annotations

import logging
import math
import sys
import time
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core.rules import fail

if TYPE_CHECKING:
    from collections.abc import Callable

log = logging.getLogger(__name__)

DEFAULT_PROGRESS_INTERVAL: Final = 10.0
"""Seconds between progress lines unless a connection or an operator says otherwise."""


def progress_interval(value: Any, field: str = "progress_interval") -> float:
    """Seconds between progress lines: a finite number above 0 (text and bools refused).

    :param value: the setting as given.
    :param field: its name, for the message.
    :raises AnalyticsValidationError: naming ``field``.
    """
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        fail(field, "must be a number of seconds above 0 (e.g. 10)", value)
    return float(value)


def in_notebook() -> bool:
    """Whether the code runs in a Jupyter kernel (IPython with a kernel attached)."""
    shell = sys.modules.get("IPython")
    get_ipython = getattr(shell, "get_ipython", None)
    if get_ipython is None:
        return False
    try:
        return getattr(get_ipython(), "kernel", None) is not None
    except Exception:  # an odd IPython: no bar rather than a failed export
        return False


def interactive() -> bool:
    """Whether someone is likely watching: stderr is a terminal, or a notebook runs the code."""
    stream = sys.stderr
    try:
        tty = stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stderr
        tty = False
    return tty or in_notebook()


def bar_wanted(wanted: bool | None) -> bool:
    """Whether a bar is shown: ``True`` or ``False`` force it, ``None`` asks :func:`interactive`."""
    return wanted if wanted is not None else interactive()


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


class Progress:
    """Follows one piece of long work and tells how far it has come.

    :param subject: what is worked on, first in every line (``cohort vip``).
    :param total: how many units there are, when known (for the percentage and the time
        left); may be set later through :attr:`total`.
    :param unit: what is counted (``rows``, ``windows``, ``days``).
    :param interval: seconds between lines (:func:`progress_interval`).
    :param size_label: what the bytes are (``received``), after their size in a line.
    :param bar: ``True`` or ``False`` to force the bar on or off; ``None`` shows it when
        :func:`interactive` holds (:func:`bar_wanted`).
    :param logger: where the lines go.
    :param clock: seconds, monotonic (injectable for tests).
    """

    def __init__(
        self,
        subject: str,
        *,
        total: int | None = None,
        unit: str = "rows",
        interval: float = DEFAULT_PROGRESS_INTERVAL,
        size_label: str = "",
        bar: bool | None = None,
        logger: logging.Logger | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.subject = subject
        self.total = total
        self.unit = unit
        self.interval = progress_interval(interval)
        self.size_label = size_label
        self._log = logger or log
        self._clock = clock
        self.started = clock()
        self._last = self.started
        self._bar = self._open_bar(bar)
        self._shown = 0

    def _open_bar(self, wanted: bool | None) -> Any | None:
        if not bar_wanted(wanted):
            return None
        from tqdm.auto import tqdm  # imported only where a bar is shown

        return tqdm(
            total=self.total,
            desc=self.subject,
            unit=f" {self.unit}",
            unit_scale=True,
            leave=True,
            file=sys.stderr,
        )

    def update(self, done: int | None, size: int | None = None) -> None:
        """Record how much is done; log a line if ``interval`` seconds passed since the last.

        :param done: units done so far (``None`` while they are not counted, e.g. raw bytes).
        :param size: bytes so far, when counted.
        """
        now = self._clock()
        self._advance_bar(done, size)
        if now - self._last < self.interval:
            return
        self._last = now
        self._log.info("%s", self.line(done, size, now=now))

    def finish(self, done: int | None, size: int | None = None) -> None:
        """Log the final line: what was done, in how long, at what rate; close the bar."""
        now = self._clock()
        self._advance_bar(done, size)
        self.close()
        self._log.info("%s: done, %s", self.subject, self.summary(done, size, now=now))

    def close(self) -> None:
        """Close the bar, if one is shown (also when the work failed)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _advance_bar(self, done: int | None, size: int | None) -> None:
        if self._bar is None:
            return
        if self._bar.total != self.total:
            self._bar.total = self.total
        count = done if done is not None else 0
        if count > self._shown:
            self._bar.update(count - self._shown)
            self._shown = count
        if size is not None:
            self._bar.set_postfix_str(_megabytes(size), refresh=False)

    def line(self, done: int | None, size: int | None, *, now: float) -> str:
        """One progress line (see the module's docstring)."""
        elapsed = max(now - self.started, 1e-9)
        parts = []
        if done is not None and self.total is not None:
            percent = 100.0 * done / self.total if self.total else 100.0
            parts.append(f"{done} of {self.total} {self.unit} ({percent:.1f}%)")
        elif done is not None:
            parts.append(f"{done} {self.unit}")
        if size is not None:
            parts.append(f"{_megabytes(size)} {self.size_label}".rstrip())
        text = f"{self.subject}: {', '.join(parts) or 'started'}"
        rates = rate_text(done, size, elapsed, unit=self.unit)
        if rates:
            text += f"; {rates}"
        left = self._seconds_left(done, elapsed)
        if left is not None:
            text += f"; about {_duration(left)} left"
        return text

    def summary(self, done: int | None, size: int | None, *, now: float | None = None) -> str:
        """``<done> <unit>, <MB> in <seconds> (<rates>)``: the final line's account."""
        elapsed = max((self._clock() if now is None else now) - self.started, 1e-9)
        parts = [] if done is None else [f"{done} {self.unit}"]
        if size is not None:
            parts.append(f"{_megabytes(size)} {self.size_label}".rstrip())
        rates = rate_text(done, size, elapsed, unit=self.unit)
        text = f"{', '.join(parts) or 'nothing'} in {elapsed:.1f} s"
        return f"{text} ({rates})" if rates else text

    def _seconds_left(self, done: int | None, elapsed: float) -> float | None:
        if done is None or not self.total or done <= 0 or done >= self.total:
            return None
        return (self.total - done) * elapsed / done


def rate_text(done: int | None, size: int | None, seconds: float, *, unit: str = "rows") -> str:
    """``<n> <unit>/s, <m> MB/s`` over ``seconds`` (of what is counted; ``""`` for nothing).

    :param done: units done, or ``None`` when not counted.
    :param size: bytes, or ``None`` when not counted.
    :param seconds: the time they took.
    """
    seconds = max(seconds, 1e-9)
    rates = []
    if done is not None:
        per_second = done / seconds
        shown = f"{per_second:.0f}" if per_second >= 10 else f"{per_second:.3g}"
        rates.append(f"{shown} {unit}/s")
    if size is not None:
        rates.append(f"{size / 1e6 / seconds:.1f} MB/s")
    return ", ".join(rates)


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s`` or ``2 h 4 min``."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
