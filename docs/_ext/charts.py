"""The funnel chart and the event trend, drawn from the Parquet tables the demo's tasks wrote."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pyarrow.compute as pc
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

INK = "#1f2933"
MUTED = "#7b8794"
ACCENT = "#2563eb"
PALETTE = ("#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2")

matplotlib.rcParams.update(
    {
        "svg.hashsalt": "airflow-provider-analytics",
        "font.family": "DejaVu Sans",
        "font.size": 10,
        "axes.edgecolor": MUTED,
        "axes.labelcolor": INK,
        "xtick.color": INK,
        "ytick.color": INK,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)


def save(figure: Figure, path: Path) -> None:
    """Write ``figure`` as SVG without a date, so that equal data gives equal bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(figure)


def funnel_chart(funnel_totals: Path, target: Path) -> dict[str, int]:
    """Users at each step of the funnel over the day, with the step's conversion from the
    previous one and from the first; returns the users per step."""
    table = pq.read_table(funnel_totals).sort_by("step_number")
    rows = table.to_pylist()
    steps = [row["step_event"] for row in rows]
    users = [row["converted_users"] for row in rows]
    figure, axes = plt.subplots(figsize=(7.2, 0.62 * len(rows) + 1.0))
    positions = range(len(rows))[::-1]
    axes.barh(list(positions), users, color=ACCENT, height=0.62)
    axes.set_yticks(list(positions), steps)
    axes.set_xlabel("users who reached the step")
    top = max(users, default=0) or 1
    axes.set_xlim(0, top * 1.55)
    for position, row in zip(positions, rows, strict=True):
        label = f"{row['converted_users']:,}"
        if row["conversion_rate"] is not None:
            label += (
                f"   {row['conversion_rate']:.0%} of the previous step,"
                f" {row['completion_rate']:.0%} of the first"
            )
        axes.text(row["converted_users"] + top * 0.02, position, label, va="center", color=INK)
    day = rows[0]["query_from_date"] if rows else ""
    axes.set_title(f"Checkout funnel on {day} (funnel_totals)", loc="left", color=INK)
    save(figure, target)
    return dict(zip(steps, users, strict=True))


def event_trend(events_tables: list[Path], days: list[dt.date], target: Path) -> int:
    """Daily active users per platform (``TRIGGER_USER_COUNT``) and purchases per day, one line
    per platform: distinct users are not added up over platforms. Returns the points drawn."""
    first, last = days[0], days[-1]
    series: dict[tuple[str, str, str], dict[dt.date, float]] = {}
    for path in events_tables:
        table = pq.read_table(path)
        split = next(name for name in table.column_names if name.startswith("by_"))
        for row in table.to_pylist():
            if first <= row["date"] <= last and row["count"] is not None:
                key = (row["measure_aggregator"], row["measure_expression"], row[split])
                series.setdefault(key, {})[row["date"]] = row["count"]
    panels = [
        ("TRIGGER_USER_COUNT", "event.$Anything", "active users"),
        ("TOTAL_COUNT", "event.purchase", "purchases"),
    ]
    figure, axes_pair = plt.subplots(1, 2, figsize=(9.6, 3.4), sharex=True)
    points = 0
    for axes, (aggregator, expression, title) in zip(axes_pair, panels, strict=True):
        lines = sorted(
            (key[2], values)
            for key, values in series.items()
            if key[:2] == (aggregator, expression)
        )
        for color, (platform, values) in zip(PALETTE, lines, strict=False):
            xs = sorted(values)
            axes.plot(xs, [values[x] for x in xs], color=color, marker="o", ms=3, label=platform)
            points += len(xs)
        axes.set_title(f"{title} per day ({aggregator})", loc="left", color=INK, fontsize=10)
        axes.set_ylim(bottom=0)
        axes.xaxis.set_major_formatter(matplotlib.dates.DateFormatter("%d %b"))
        axes.tick_params(axis="x", labelrotation=45)
    handles, labels = axes_pair[0].get_legend_handles_labels()
    figure.legend(
        handles, labels, loc="lower center", bbox_to_anchor=(0.5, -0.06), ncols=6, frameon=False
    )
    figure.suptitle(
        f"daily_events by platform, {first.isoformat()} to {last.isoformat()}",
        x=0.01,
        ha="left",
        color=INK,
    )
    figure.tight_layout()
    save(figure, target)
    return points


def unique_dates(paths: list[Path]) -> list[dt.date]:
    """The days the tables hold, in order."""
    days: set[dt.date] = set()
    for path in paths:
        days.update(pc.unique(pq.read_table(path, columns=["date"]).column("date")).to_pylist())
    return sorted(days)
