"""Progress of long work: a log line at a steady interval, a final line with the rate, and a
progress bar for a person at a terminal or in a notebook.

A line gives what is done, the bytes when counted, the rates, and with a known total the
percentage and the time left::

    cohort vip: 250000 of 1000000 rows (25.0%), 11.2 MB received; 50000 rows/s, 2.2 MB/s;
    about 15 s left

The lines go to this module's logger at INFO (no handler added: a library leaves that to the
application). Where someone watches, a ``tqdm`` bar on stderr shows the same with no setup;
Airflow tasks log lines only (the hook turns the bar off).
"""

from __future__ import annotations

import contextlib
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
    """Seconds between progress lines: a finite number above 0 (text and bools refused)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value < math.inf:
        fail(field, "must be a number of seconds above 0 (e.g. 10)", value)
    return float(value)


def bar_wanted(wanted: bool | None = None) -> bool:
    """Whether a bar is shown: ``True`` or ``False`` force it; ``None`` asks whether someone is
    likely watching (stderr is a terminal, or a Jupyter kernel runs)."""
    if wanted is not None:
        return wanted
    with contextlib.suppress(AttributeError, ValueError):  # none, a replaced or a closed stderr
        if sys.stderr.isatty():
            return True
    get_ipython = getattr(sys.modules.get("IPython"), "get_ipython", None)
    try:
        return get_ipython is not None and getattr(get_ipython(), "kernel", None) is not None
    except Exception:  # an odd IPython: no bar rather than a failed export
        return False


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


class Progress:
    """Follows one piece of long work (``subject``, first in every line) and tells how far it
    has come; each :meth:`update` costs one clock read unless a line is due.

    ``total`` (settable later) gives the percentage and the time left; ``size_label`` follows
    the bytes (``received``); ``bar`` forces the bar on or off (``None``: :func:`bar_wanted`).
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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.subject = subject
        self.total = total
        self.unit = unit
        self.interval = progress_interval(interval)
        self.size_label = size_label
        self._clock = clock
        self.started = clock()
        self._last = self.started
        self._bar: Any = None
        self._shown = 0
        if bar_wanted(bar):
            from tqdm.auto import tqdm  # imported only where a bar is shown

            self._bar = tqdm(
                total=total, desc=subject, unit=f" {unit}", unit_scale=True, file=sys.stderr
            )

    def update(self, done: int | None, size: int | None = None) -> None:
        """Record units ``done`` (``None`` while not counted) and bytes; log a line if
        ``interval`` seconds passed since the last."""
        now = self._clock()
        self._advance_bar(done, size)
        if now - self._last >= self.interval:
            self._last = now
            log.info("%s", self.line(done, size, now=now))

    def finish(self, done: int | None, size: int | None = None) -> None:
        """Log the final line: what was done, in how long, at what rate; close the bar."""
        now = self._clock()
        self._advance_bar(done, size)
        self.close()
        elapsed = max(now - self.started, 1e-9)
        rates = rate_text(done, size, elapsed, unit=self.unit)
        text = f"{self._parts(done, size, None) or 'nothing'} in {elapsed:.1f} s"
        log.info("%s: done, %s", self.subject, f"{text} ({rates})" if rates else text)

    def close(self) -> None:
        """Close the bar, if one is shown (also when the work failed)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _advance_bar(self, done: int | None, size: int | None) -> None:
        if self._bar is None:
            return
        self._bar.total = self.total
        if done is not None and done > self._shown:
            self._bar.update(done - self._shown)
            self._shown = done
        if size is not None:
            self._bar.set_postfix_str(_megabytes(size), refresh=False)

    def _parts(self, done: int | None, size: int | None, total: int | None) -> str:
        parts = []
        if done is not None and total is not None:
            percent = 100.0 * done / total if total else 100.0
            parts.append(f"{done} of {total} {self.unit} ({percent:.1f}%)")
        elif done is not None:
            parts.append(f"{done} {self.unit}")
        if size is not None:
            parts.append(f"{_megabytes(size)} {self.size_label}".rstrip())
        return ", ".join(parts)

    def line(self, done: int | None, size: int | None, *, now: float) -> str:
        """One progress line (see the module's docstring)."""
        elapsed = max(now - self.started, 1e-9)
        text = f"{self.subject}: {self._parts(done, size, self.total) or 'started'}"
        rates = rate_text(done, size, elapsed, unit=self.unit)
        if rates:
            text += f"; {rates}"
        if done is not None and self.total and 0 < done < self.total:
            left = round((self.total - done) * elapsed / done)
            minutes, secs = divmod(left, 60)
            hours, minutes = divmod(minutes, 60)
            shown = f"{minutes} min {secs} s" if minutes else f"{secs} s"
            text += f"; about {f'{hours} h {minutes} min' if hours else shown} left"
        return text


def rate_text(done: int | None, size: int | None, seconds: float, *, unit: str = "rows") -> str:
    """``<n> <unit>/s, <m> MB/s`` over ``seconds`` (of what is counted; ``""`` for nothing)."""
    seconds = max(seconds, 1e-9)
    rates = []
    if done is not None:
        per_second = done / seconds
        shown = f"{per_second:.0f}" if per_second >= 10 else f"{per_second:.3g}"
        rates.append(f"{shown} {unit}/s")
    if size is not None:
        rates.append(f"{size / 1e6 / seconds:.1f} MB/s")
    return ", ".join(rates)
