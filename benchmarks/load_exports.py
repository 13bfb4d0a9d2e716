"""Load benchmark: several large cohort exports at once, in one process pool, on two cores.

The emulator runs in its own process (127.0.0.1) serving a cohort of ``--rows`` users. A
process pool of ``--exports`` workers, pinned with the parent to ``--cores`` CPUs, starts that
many exports of the whole cohort together (a barrier makes them really concurrent), each
through the hook built from an Airflow connection, into its own Parquet file. Each worker reports
its rows and its own peak RSS (getrusage); the parent also samples the workers' RSS every
0.1 s, so the figures show both the sum of the peaks (an upper bound) and the highest sampled
total. Every file is read back: its row count and the number of distinct user ids must equal
the cohort's size.

Usage: python benchmarks/load_exports.py [--rows 1000000] [--exports 4] [--cores 2]
           [--json FILE] [--keep]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analytics_emulator.process import EmulatorProcess

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier

TOKEN, APP_KEY, XTOKEN, ADMIN = "load-token", "load-app-key", "load-xtoken", "load-admin"
COHORT = "load_cohort"
RSS_TARGET_MIB = 1024.0
SAMPLE_SECONDS = 0.1


def pin_to_cores(cores: int) -> list[int]:
    """Restrict this process (and the children it starts) to its first ``cores`` CPUs."""
    available = sorted(os.sched_getaffinity(0))
    chosen = available[:cores]
    os.sched_setaffinity(0, chosen)
    return chosen


def export_one(base_url: str, index: int, out: str, via: str, barrier: Barrier) -> dict[str, Any]:
    """One worker: wait for the others, then export the whole cohort to ``out``.

    :param via: ``client``: the export job with a plain client (no Airflow import), or
        ``hook``: the client from an Airflow connection through the hook, as the operator does.
    """
    if via == "hook":
        os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = json.dumps(
            {
                "conn_type": "analytics",
                "host": base_url,
                "password": TOKEN,
                "extra": {"app_api_key": APP_KEY, "xtoken": XTOKEN},
            }
        )
        from airflow.sdk import ObjectStoragePath

        from airflow_provider_analytics.hooks.analytics import AnalyticsHook

        client = AnalyticsHook().get_conn()
        target: Any = ObjectStoragePath(f"file://{out}")
    else:
        from airflow_provider_analytics.client import AnalyticsClient, ClientConfig

        client = AnalyticsClient(ClientConfig(base_url, token=TOKEN, app_key=APP_KEY))
        target = Path(out)
    from airflow_provider_analytics.export.stream import export_cohort_to_parquet

    barrier.wait(timeout=300)
    started = time.perf_counter()
    result = export_cohort_to_parquet(client, COHORT, target, timezone="Asia/Shanghai")
    return {
        "export": index,
        "rows": result.rows,
        "expected_rows": result.expected_rows,
        "attempts": result.attempts,
        "bytes": result.bytes_written,
        "seconds": round(time.perf_counter() - started, 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }


def verify(result: dict[str, Any], out: Path) -> dict[str, Any]:
    """Read the file back: its rows and its distinct user ids."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    ids = pq.read_table(out, columns=["distinct_id"]).column("distinct_id")
    return {
        **result,
        "file_rows": pq.ParquetFile(out).metadata.num_rows,
        "distinct_ids": pc.count_distinct(ids).as_py(),
    }


def memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of a live process in MiB; PSS shares pages among the processes using them."""
    rss = pss = 0.0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1]) / 1024.0
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1]) / 1024.0
    except OSError:
        return 0.0, 0.0
    return rss, pss


class MemorySampler:
    """Samples the summed RSS and PSS of a set of processes in a background thread."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.peak_rss_mib = 0.0
        self.peak_pss_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            samples = [memory_mib(pid) for pid in self.pids]
            self.peak_rss_mib = max(self.peak_rss_mib, sum(rss for rss, _ in samples))
            self.peak_pss_mib = max(self.peak_pss_mib, sum(pss for _, pss in samples))

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def run(rows: int, exports: int, cores: int, via: str, workdir: Path) -> dict[str, Any]:
    """Start the emulator, run the exports in the pool, verify the files, return the figures."""
    pinned = pin_to_cores(cores)
    emulator = EmulatorProcess(
        credentials={"token": TOKEN, "app_key": APP_KEY, "xtoken": XTOKEN, "admin_token": ADMIN},
        cohorts={COHORT: rows},
    ).start()
    files = [workdir / f"{i}.parquet" for i in range(exports)]
    try:
        context = multiprocessing.get_context("spawn")
        with context.Manager() as manager, ProcessPoolExecutor(exports, mp_context=context) as pool:
            barrier = manager.Barrier(exports)
            started = time.perf_counter()
            futures = [
                pool.submit(export_one, emulator.base_url, i, str(files[i]), via, barrier)
                for i in range(exports)
            ]
            while len(pool._processes) < exports:  # the pool starts its workers on demand
                time.sleep(0.05)
            with MemorySampler(list(pool._processes)) as sampler:
                results = [future.result() for future in futures]
            wall = time.perf_counter() - started
        emulator_rss = 0.0 if emulator.process is None else memory_mib(emulator.process.pid)[0]
    finally:
        emulator.stop()
    results = [verify(result, files[result["export"]]) for result in results]
    lost = sum(rows - min(r["rows"], r["file_rows"], r["distinct_ids"]) for r in results)
    return {
        "machine": {"cpus_used": len(pinned), "cpus_online": os.cpu_count()},
        "via": via,
        "rows_per_export": rows,
        "exports": exports,
        "results": results,
        "wall_seconds": round(wall, 2),
        "rows_per_second": round(rows * exports / wall),
        "sum_of_peak_rss_mib": round(sum(r["peak_rss_mib"] for r in results), 1),
        "sampled_combined_rss_mib": round(sampler.peak_rss_mib, 1),
        "sampled_combined_pss_mib": round(sampler.peak_pss_mib, 1),
        "emulator_rss_mib_at_end": round(emulator_rss, 1),
        "rows_lost": lost,
        "rss_target_mib": RSS_TARGET_MIB,
    }


def report(figures: dict[str, Any]) -> None:
    print(f"\n{'export':>6}{'rows':>12}{'in file':>12}{'distinct ids':>14}{'s':>8}{'peak MiB':>10}")
    for r in figures["results"]:
        print(
            f"{r['export']:>6}{r['rows']:>12,}{r['file_rows']:>12,}{r['distinct_ids']:>14,}"
            f"{r['seconds']:>8.1f}{r['peak_rss_mib']:>10.1f}"
        )
    combined = figures["sum_of_peak_rss_mib"]
    print(
        f"\n{figures['exports']} exports ({figures['via']}) x {figures['rows_per_export']:,} "
        f"rows on {figures['machine']['cpus_used']} cores: {figures['wall_seconds']:.1f} s wall, "
        f"{figures['rows_per_second']:,} rows/s together"
    )
    print(
        f"combined peak RSS: sum of the workers' peaks {combined:.1f} MiB "
        f"(target < {RSS_TARGET_MIB:.0f}); highest sampled total RSS "
        f"{figures['sampled_combined_rss_mib']:.1f} MiB, PSS "
        f"{figures['sampled_combined_pss_mib']:.1f} MiB"
    )
    print(f"rows lost: {figures['rows_lost']}  (target 0)")
    print(f"emulator process RSS at the end: {figures['emulator_rss_mib_at_end']:.1f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--exports", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--via",
        choices=("client", "hook"),
        default="client",
        help="client: the export job with a plain client; hook: through an Airflow connection",
    )
    parser.add_argument(
        "--rss-target",
        type=float,
        default=RSS_TARGET_MIB,
        help="fail when the combined peak RSS reaches this many MiB (0: report only)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true", help="keep the Parquet files")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="load-exports-"))
    try:
        figures = run(args.rows, args.exports, args.cores, args.via, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    report(figures)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    within = not args.rss_target or figures["sum_of_peak_rss_mib"] < args.rss_target
    sys.exit(0 if figures["rows_lost"] == 0 and within else 1)


if __name__ == "__main__":
    main()
