"""The day rule as a timeline: for each kind of run, what Airflow gives it and the days
``covered_days`` (``operators/intervals.py``) makes it cover.

Each row's days are computed by the provider's own function from the context Airflow gives
that kind of run, so the picture follows the rule if the rule ever changes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from charts import ACCENT, INK, MUTED, save

from airflow_provider_analytics.operators.intervals import CoveredDays, covered_days

if TYPE_CHECKING:
    from pathlib import Path

COVERED = "#059669"
INTERVAL = "#cbd2d9"
RUN = "#db2777"


def _at(day: int, hour: int = 0) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Run:
    """One kind of run: its label, logical date, data interval and when it starts."""

    label: str
    logical: dt.datetime | None
    interval: tuple[dt.datetime, dt.datetime] | None
    starts: dt.datetime

    def covered(self) -> CoveredDays:
        start, end = self.interval if self.interval else (None, None)
        return covered_days(
            {
                "logical_date": self.logical,
                "data_interval_start": start,
                "data_interval_end": end,
                "dag_run": SimpleNamespace(run_after=self.starts),
            }
        )


RUNS = (
    Run("scheduled @daily (cron)", _at(15), (_at(15), _at(15)), _at(15)),
    Run("scheduled, daily data intervals", _at(15), (_at(15), _at(16)), _at(16)),
    Run("scheduled, weekly data intervals", _at(15), (_at(15), _at(22)), _at(22)),
    Run("scheduled @hourly, the 13:00 run", _at(15, 13), (_at(15, 13), _at(15, 13)), _at(15, 13)),
    Run("manual, --logical-date 2024-01-15", _at(15), (_at(18, 10), _at(18, 10)), _at(18, 10)),
    Run("manual, no logical date", None, None, _at(18, 10)),
)
"""Runs as Airflow 3 gives them their logical date and data interval (the table on the page)."""


def timeline(target: Path) -> list[tuple[str, str, str]]:
    """Draw one row per run; returns each run's label and first and last covered day."""
    figure, axes = plt.subplots(figsize=(10, 0.56 * len(RUNS) + 1.3))
    covered_rows = []
    for row, run in enumerate(RUNS):
        y = len(RUNS) - 1 - row
        days = run.covered()
        covered_rows.append((run.label, *days.dates))
        first = dt.datetime.combine(days.first, dt.time(), tzinfo=dt.UTC)
        span = (days.last - days.first).days + 1
        axes.broken_barh(
            [(mdates.date2num(first + dt.timedelta(days=n)), 0.94) for n in range(span)],
            (y - 0.3, 0.6),
            facecolors=COVERED,
            alpha=0.85,
        )
        axes.text(
            mdates.date2num(first) - 0.16,
            y,
            f"dt={days.partition}",
            va="center",
            ha="right",
            fontsize=7.5,
            color=COVERED,
        )
        if run.interval and run.interval[1] > run.interval[0]:
            start, end = (mdates.date2num(moment) for moment in run.interval)
            axes.plot([start, end], [y - 0.42] * 2, color=INTERVAL, lw=4, solid_capstyle="butt")
        if run.logical is not None:
            axes.plot(mdates.date2num(run.logical), y + 0.42, marker="v", color=INK, ms=7)
        axes.plot(mdates.date2num(run.starts), y, marker="X", color=RUN, ms=8)
        if days.end > run.starts:
            axes.annotate(
                "",
                xy=(mdates.date2num(days.end), y - 0.42),
                xytext=(mdates.date2num(run.starts), y - 0.42),
                arrowprops={"arrowstyle": "->", "color": ACCENT, "lw": 1.2, "ls": "--"},
            )
    axes.set_yticks(range(len(RUNS))[::-1], [run.label for run in RUNS])
    axes.set_ylim(-0.8, len(RUNS) - 0.3)
    axes.set_xlim(mdates.date2num(_at(13, 6)), mdates.date2num(_at(23)))
    axes.xaxis.set_major_locator(mdates.DayLocator())
    axes.xaxis.set_major_formatter(mdates.DateFormatter("%d\n%a"))
    axes.grid(axis="x", color="#eef1f4")
    axes.set_xlabel("January 2024 (UTC)", color=MUTED)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=COVERED, label="days the run covers"),
        plt.Line2D([], [], color=INTERVAL, lw=4, label="data interval Airflow gives it"),
        plt.Line2D([], [], color=INK, marker="v", ls="", label="logical date"),
        plt.Line2D([], [], color=RUN, marker="X", ls="", label="the run starts"),
        plt.Line2D([], [], color=ACCENT, ls="--", label="covered days not over when it starts"),
    ]
    axes.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.45, -0.24),
        ncols=3,
        frameon=False,
        fontsize=8,
    )
    save(figure, target)
    return covered_rows
