"""Sphinx extension: the site's figures, drawn at build time from the code and the emulator.

When the build starts, the demo's tasks run against an emulator (``demo_output``), and the
figures are written into ``docs/_generated/`` (not kept in git), where the pages include
them as images:

- ``funnel.svg`` and ``event_trend.svg``: the checkout funnel and the daily events by
  platform, from the Parquet tables the tasks wrote;
- ``output_layout.svg``: the folders and files of the demo's day;
- ``day_rule.svg``: the day rule as a timeline, computed by ``covered_days``;
- ``layers.svg``: the package's layers, from its modules' imports.

Nothing is fetched: the emulator listens on loopback, and the figures use matplotlib or plain
SVG text.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import charts
import day_timeline
import demo_output
import layers_diagram
import layout_diagram
from sphinx.util import logging

if TYPE_CHECKING:
    from sphinx.application import Sphinx

LOGGER = logging.getLogger(__name__)
FOLDER = "_generated"
"""Where the figures go, under the documentation's source folder."""


def write_figures(target: Path) -> dict[str, Any]:
    """Every figure into ``target``; returns what each one shows, for the build's log."""
    target.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="analytics-docs-figures-") as workdir:
        output = demo_output.run_demo(Path(workdir))
        day = output.demo_day.isoformat()
        funnel = (
            output.day / "checkout_funnel" / "funnel_totals" / "report_key=checkout" / f"dt={day}"
        )
        summary["funnel"] = charts.funnel_chart(
            funnel / "funnel_totals.parquet", target / "funnel.svg"
        )
        events = sorted(
            (output.trend / "daily_events" / "events").glob("report_key=*/dt=*/events.parquet")
        )
        days = charts.unique_dates(events)[-demo_output.TREND_DAYS :]
        summary["event_trend"] = charts.event_trend(events, days, target / "event_trend.svg")
        owners = {
            Path(result["uri"]).relative_to(output.day.as_uri()).parts[0]: task_id
            for task_id, result in output.results.items()
        }
        tree = layout_diagram.read_tree(output.day, output.demo_day, owners)
        (target / "output_layout.svg").write_text(
            layout_diagram.render(tree, f"What one run of analytics_daily for {day} writes"),
            encoding="utf-8",
        )
        summary["output_layout"] = layout_diagram.count_files(tree)
    summary["day_rule"] = day_timeline.timeline(target / "day_rule.svg")
    layers = layers_diagram.read_layers(demo_output.REPO / layers_diagram.PACKAGE)
    (target / "layers.svg").write_text(layers_diagram.render(layers), encoding="utf-8")
    summary["layers"] = {"upward imports": layers.upward}
    return summary


def _build_figures(app: Sphinx) -> None:
    started = time.monotonic()
    summary = write_figures(Path(app.srcdir) / FOLDER)
    LOGGER.info("figures drawn in %.1f s: %s", time.monotonic() - started, summary)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _build_figures)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
