"""The sharded export at scale: a cohort of ten million users (the emulator's ``cohort_massive``,
with the documented proxy cut at two million rows, so the stream cannot carry it) and every
visible property of the plan (strings, numbers, booleans, datetimes, lists), read in shards.

Each case runs in a process of its own that has imported Airflow, exports to a local Parquet
prefix and reports its wall time, CPU seconds and peak RSS (``ru_maxrss``):

- ``stream 1M`` and ``pages 1M``: the stream and the shards on the same million-user cohort
  (``cohort_large``), so that the cost of paging is known;
- ``pages 1M sequential`` against ``pages 10M sequential``: memory from one to ten million;
- ``pages 10M, 4 at once``: one process reading four shards at once;
- ``two processes``: two processes reading the even and the odd shards of one plan at the same
  time, then one publication: what two workers on this machine give (the Celery stack runs the
  same pattern with ``example_dags/analytics_cohort_shards.py``);
- ``resume at 50%``: a process killed (``os._exit``) after half the shards, then the full run
  again, which reads only the other half.

Figures are printed, never asserted; the machine is shared, so compare the ratios of one run.

Usage: python benchmarks/cohort_shards.py [--users 10000000] [--skip-10m]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

CREDENTIALS: Final = {"token": "bench-token", "app_key": "bench-key", "xtoken": "bench-x"}
LARGE: Final = "cohort_massive"
MILLION: Final = "cohort_large"
SHARD_ROWS: Final = 200_000


def child(options: dict[str, Any]) -> None:
    """One export in this process; prints its figures as one line of JSON."""
    import airflow.sdk  # noqa: F401  (the operator path: Airflow imported)

    from airflow_provider_analytics.client import AnalyticsClient, ClientConfig
    from airflow_provider_analytics.client.validation import cohort_query
    from airflow_provider_analytics.core.identity import cohort_identity
    from airflow_provider_analytics.export import shards as cohort_shards
    from airflow_provider_analytics.export.cohort_day import (
        export_cohort_day,
        publish_shards,
        start_shards,
    )
    from airflow_provider_analytics.export.stream import prepare_export
    from airflow_provider_analytics.output.parquet_destination import ParquetDestination

    started, cpu = time.perf_counter(), time.process_time()
    config = ClientConfig(
        options["base_url"], token=CREDENTIALS["token"], app_key=CREDENTIALS["app_key"]
    )
    code = options["cohort"]
    destination = ParquetDestination(options["out"], cohort_identity(code))
    day = "2024-01-15"
    summary: dict[str, Any] = {}
    with AnalyticsClient(config) as client:
        query = cohort_query(code)
        if options.get("shards") is None:  # the whole export
            summary = export_cohort_day(
                client,
                query,
                destination,
                day,
                mode=options["mode"],
                page_size=options.get("page_size", cohort_shards.PAGE_SIZE),
                shard_rows=SHARD_ROWS,
                max_parallel_shards=options.get("parallel", 1),
                timezone="Asia/Shanghai",
            )
        else:  # some shards of a plan, then maybe the publication
            prepared = prepare_export(client, query, timezone="Asia/Shanghai")
            plan, reader = start_shards(
                client, prepared, destination, day, cohort_shards.PAGE_SIZE, SHARD_ROWS
            )
            mine = plan.shards[options["shards"][0] :: options["shards"][1]]
            if options.get("stop_after") is not None:
                mine = plan.shards[: options["stop_after"]]
            cohort_shards.read_shards(reader, mine, parallel=options.get("parallel", 1))
            if options.get("stop_after") is not None:
                os._exit(9)  # killed half-way: nothing published
            if options.get("publish"):
                summary = publish_shards(client, plan, destination, day)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "wall": time.perf_counter() - started,
                "cpu": time.process_time() - cpu,
                "rss_mib": usage.ru_maxrss / 1024,
                "rows": summary.get("rows"),
                "mode": summary.get("mode"),
            }
        )
    )


def run_child(options: dict[str, Any]) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", json.dumps(options)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"exit": done.returncode, "error": done.stderr[-400:]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def show(name: str, figures: dict[str, Any], rows: int | None = None) -> None:
    if "wall" not in figures:
        print(f"{name:<34} exit {figures.get('exit')}: {figures.get('error', '')!r}")
        return
    rate = f"{(rows or figures['rows'] or 0) / figures['wall']:>10,.0f} rows/s"
    print(
        f"{name:<34} {figures['wall']:>8.1f} s wall {figures['cpu']:>8.1f} s CPU "
        f"{rate} {figures['rss_mib']:>6.0f} MiB peak RSS"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--skip-10m", action="store_true", help="only the 1M cases")
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    from analytics_emulator.process import EmulatorProcess

    print(__doc__.split("\n\n")[0])
    with (
        EmulatorProcess(credentials=CREDENTIALS) as emulator,
        tempfile.TemporaryDirectory(prefix="bench-shards-") as work,
    ):

        def out(name: str) -> str:
            return Path(work, name).as_uri() + "/"

        base = {"base_url": emulator.base_url}
        results: dict[str, dict[str, Any]] = {}
        results["stream 1M"] = run_child(
            {**base, "cohort": MILLION, "mode": "stream", "out": out("s1")}
        )
        results["pages 1M sequential"] = run_child(
            {**base, "cohort": MILLION, "mode": "pages", "out": out("p1")}
        )
        for name in results:
            show(name, results[name])
        if args.skip_10m:
            return
        cases = {
            "pages 10M sequential": {"mode": "pages", "out": out("p10")},
            "pages 10M, 4 shards at once": {"mode": "pages", "parallel": 4, "out": out("p10x4")},
        }
        for name, options in cases.items():
            results[name] = run_child({**base, "cohort": LARGE, **options})
            show(name, results[name])
        # two processes, the even and the odd shards at once, then one publication
        both = out("two")
        started = time.perf_counter()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    json.dumps(
                        {**base, "cohort": LARGE, "mode": "pages", "out": both, "shards": [k, 2]}
                    ),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for k in (0, 1)
        ]
        figures = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        publish = run_child(
            {
                **base,
                "cohort": LARGE,
                "mode": "pages",
                "out": both,
                "shards": [0, 1],
                "publish": True,
            }
        )
        wall = time.perf_counter() - started
        for k, one in enumerate(figures):
            show(f"  process {k + 1} (half the shards)", one, rows=5_000_000)
        show("  publication (check, merge)", publish, rows=10_000_000)
        print(f"{'two processes, total':<34} {wall:>8.1f} s wall")
        # resume: killed after half the shards, then run again
        resumed_at = out("resume")
        shards = 10_000_000 // SHARD_ROWS
        killed = run_child(
            {
                **base,
                "cohort": LARGE,
                "mode": "pages",
                "out": resumed_at,
                "shards": [0, 1],
                "stop_after": shards // 2,
            }
        )
        again = run_child({**base, "cohort": LARGE, "mode": "pages", "out": resumed_at})
        show("resumed after a kill at 50%", again, rows=10_000_000)
        print(f"  (the killed try exited {killed.get('exit')})")
        full = results["pages 10M sequential"]
        if "wall" in full and "wall" in again:
            print(f"resume / full run: {again['wall'] / full['wall']:.2f} (target <= 0.60)")
        four = results["pages 10M, 4 shards at once"]
        if "wall" in full and "wall" in four:
            print(f"4 at once / sequential: {four['wall'] / full['wall']:.2f}")
            print(f"two processes / sequential: {wall / full['wall']:.2f} (target <= 0.60)")
        one = results["pages 1M sequential"]
        if "rss_mib" in one and "rss_mib" in full:
            print(f"peak RSS 10M / 1M: {full['rss_mib'] / one['rss_mib']:.2f} (target within 10%)")


if __name__ == "__main__":
    main()
