"""How fast funnel and event responses become their report tables (Arrow, one per grain).

Builds large responses in memory (no server, no JSON decoding), times ``event_tables`` and
``funnel_tables`` with ``time.perf_counter`` and prints the best of a few runs. The event
case, 10,000 split values x 3 measures x 31 days, should take well under half a second.

Run: ``.venv/bin/python benchmarks/flatten_reports.py [--runs N]``
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from airflow_provider_analytics.reports.frames import event_tables, funnel_tables

if TYPE_CHECKING:
    from collections.abc import Callable

    import pyarrow as pa

EVENT_SPLITS = 10_000
EVENT_DAYS = 31
EVENT_TARGET_SECONDS = 0.5
FUNNEL_SPLITS = 2_000
FUNNEL_DAYS = 31
FUNNEL_STEPS = 6
START = date(2024, 1, 1)


def event_response(splits: int, days: int, seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    """An event request and its response: cities x price buckets, three measures (two counts,
    JSON integers as the platform sends them, and a sum of amounts), one null in 50."""
    rng = random.Random(seed)
    request = {
        "measures": [
            {"expression": "event.$Anything", "aggregator": "TRIGGER_USER_COUNT"},
            {"expression": "event.purchase", "aggregator": "TOTAL_COUNT"},
            {"expression": "event.purchase.amount", "aggregator": "SUM"},
        ],
        "byFields": [
            {"expression": "event.purchase.$city", "buckets": None},
            {"expression": "event.purchase.price", "buckets": [600, 800]},
        ],
        "crowds": ["$ALL"],
        "fromDate": START.isoformat(),
        "toDate": (START + timedelta(days=days - 1)).isoformat(),
        "unit": "DAY",
    }
    buckets = ["-∞~600", "600~800", "800~+∞", "未知"]
    rows = []
    for split in range(splits):
        counts = [
            [None if rng.random() < 0.02 else rng.randint(0, 5_000) for _ in range(days)]
            for _ in range(2)
        ]
        amounts = [
            None if rng.random() < 0.02 else rng.randint(0, 500_000) / 100 for _ in range(days)
        ]
        values = [*counts, amounts]
        rows.append(
            {
                "byValue": [f"city_{split // 4}", buckets[split % 4]],
                "values": values,
                "sum": [sum(v for v in measure if v is not None) for measure in values],
            }
        )
    response = {
        "measures": ["event.$Anything.unique", "event.purchase.total", "event.purchase.amount.sum"],
        "byFields": ["event.purchase.$city", "event.purchase.price"],
        "series": [(START + timedelta(days=day)).isoformat() for day in range(days)],
        "rows": rows,
        "numRows": splits,
        "reportUpdateTime": "2024-02-01 06:00:00",
    }
    return request, response


def funnel_response(splits: int, days: int, steps: int, seed: int = 11) -> dict[str, Any]:
    """A funnel response split by city, with narrowing counts and some null medians."""
    rng = random.Random(seed)
    step_events = [f"event.step_{step}" for step in range(steps)]
    date_list = ["$ALL"] + [
        (START + timedelta(days=day)).strftime("%Y/%m/%d 00:00:00") for day in range(days)
    ]
    rows = []
    for split in range(splits):
        counts = [rng.randint(0, 10_000) for _ in date_list]
        details = []
        for step in step_events:
            details.append({"expression": step, "convertedUser": counts})
            counts = [rng.randint(0, count) for count in counts]
        medians = [
            {
                "stepsExpress": f"step_{step}~step_{step + 1}",
                "median": None
                if rng.random() < 0.1
                else [rng.randint(1, 86_400) for _ in date_list],
            }
            for step in range(steps - 1)
        ]
        rows.append(
            {
                "byValue": "-1" if split == 0 else f"city_{split}",
                "stepsDetail": details,
                "medianConvertedTime": medians,
            }
        )
    return {
        "dateList": date_list,
        "byField": "user.$city",
        "byValues": [row["byValue"] for row in rows],
        "stepEvents": step_events,
        "rows": rows,
        "reportUpdateTime": "2024-02-01 06:00:00",
    }


@dataclass(frozen=True)
class Timing:
    """Best wall-clock and CPU seconds over several runs, and the last run's rows (all tables)."""

    wall: float
    cpu: float
    rows: int

    def describe(self, runs: int) -> str:
        return (
            f"{self.rows:,} rows in {self.wall:.3f} s wall, {self.cpu:.3f} s CPU "
            f"(best of {runs}; {self.rows / self.wall:,.0f} rows/s)"
        )


def best_of(runs: int, call: Callable[[], dict[str, pa.Table]]) -> Timing:
    """Time ``runs`` (at least one) calls with ``time.perf_counter`` and ``time.process_time``.

    CPU time is shown beside wall time because on a shared machine the wall clock also
    counts the time other processes held the cores.
    """
    walls, cpus, rows = [], [], 0
    for _ in range(max(runs, 1)):
        wall, cpu = time.perf_counter(), time.process_time()
        rows = sum(table.num_rows for table in call().values())
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return Timing(min(walls), min(cpus), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (best is shown)")
    args = parser.parse_args()

    request, response = event_response(EVENT_SPLITS, EVENT_DAYS)
    timing = best_of(args.runs, lambda: event_tables(response, request))
    verdict = "within" if timing.wall < EVENT_TARGET_SECONDS else "OVER"
    print(
        f"event_tables  {EVENT_SPLITS:,} splits x 3 measures x {EVENT_DAYS} days, with request: "
        f"{timing.describe(args.runs)}; {verdict} the {EVENT_TARGET_SECONDS} s target"
    )
    timing = best_of(args.runs, lambda: event_tables(response))
    print(f"event_tables  same response, no request: {timing.describe(args.runs)}")

    funnel = funnel_response(FUNNEL_SPLITS, FUNNEL_DAYS, FUNNEL_STEPS)
    timing = best_of(args.runs, lambda: funnel_tables(funnel))
    print(
        f"funnel_tables {FUNNEL_SPLITS:,} splits x {FUNNEL_DAYS + 1} date columns x "
        f"{FUNNEL_STEPS} steps: {timing.describe(args.runs)}"
    )


if __name__ == "__main__":
    main()
