"""Where the operator path's export CPU goes, by stage, from the threads' own CPU clocks.

A sampling profiler stops every thread to read its stack, and with ``--native`` that stretches
the threads running Python far more than the ones inside Arrow: its shares put the main thread
at a third of the export where its clock says a twentieth. Here each stage's functions are
wrapped, in the export's own process, with ``time.thread_time()`` (the calling thread's CPU
seconds) around every call, and a stage is charged what its calls took beyond the stages inside
them. What no wrapped function took (thread hand-offs, the GIL passing between threads, the main
loop, the socket reads' own bookkeeping) is the remainder of the process's CPU seconds.

Runs contender (a) of ``cohort_export.py`` (Airflow imported, hook from an ``AIRFLOW_CONN_*``
connection, ``ObjectStoragePath`` ``file://``, a first small export before the timed one) in a
child process per round, and prints the medians.

Usage: python benchmarks/stage_times.py [--rows 1000000] [--rounds 3] [--workdir out/bench]
           [--settings '{"block_bytes": 2097152}']   (ExportSettings of the timed export)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from export_data import APP_KEY, TIMEZONE, TOKEN, ndjson_file, serving  # noqa: E402

STAGES = {
    "read_json": "Arrow's JSON parser",
    "arrow_rest": "UTF-8 check of text columns, parser set-up",
    "key_ends": "key count (every record holds every key)",
    "parse_rest": "marker scans, parse set-up",
    "finish": "number checks, keys, rows (finish)",
    "add": "row groups: slicing and queueing",
    "complete": "datetimes in the project's timezone (complete)",
    "write": "Parquet encoding, zstd, the file",
    "reading": "socket reads and splitting into blocks",
}


class _Clock:
    """CPU seconds by stage, charged exclusive of the wrapped calls made inside."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self._lock = threading.Lock()
        self._inner = threading.local()

    def _charge(self, stage: str, seconds: float) -> None:
        with self._lock:
            self.spent[stage] += seconds

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        function = getattr(owner, name)
        clock = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            inner = getattr(clock._inner, "seconds", 0.0)
            clock._inner.seconds = 0.0
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                took = time.thread_time() - started
                clock._charge(stage, took - clock._inner.seconds)
                clock._inner.seconds = inner + took

        setattr(owner, name, timed)

    def wrap_iterator(self, owner: Any, name: str, stage: str) -> None:
        """Charge each step of a generator to ``stage``, in full: for one that calls no wrapped
        function and is not itself consumed inside one (the splitter, read in its own thread),
        which :meth:`wrap`'s accounting of nested calls would otherwise need."""
        function = getattr(owner, name)
        clock = self

        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            items = iter(function(*args, **kwargs))
            while True:
                started = time.thread_time()
                try:
                    item = next(items)
                except StopIteration:
                    clock._charge(stage, time.thread_time() - started)
                    return
                clock._charge(stage, time.thread_time() - started)
                yield item

        setattr(owner, name, timed)


def _instrument(clock: _Clock) -> None:
    from airflow_provider_analytics.export import decoder as arrow
    from airflow_provider_analytics.export import stream as cohort_export
    from airflow_provider_analytics.output import parquet

    clock.wrap(arrow.pa_json, "read_json", "read_json")
    clock.wrap(arrow.BlockDecoder, "_arrow", "arrow_rest")
    clock.wrap(arrow.byte_scans, "key_ends", "key_ends")
    clock.wrap(arrow.BlockDecoder, "parse", "parse_rest")
    clock.wrap(arrow.BlockDecoder, "finish", "finish")
    clock.wrap(parquet.ParquetStream, "add", "add")
    clock.wrap(arrow.BlockDecoder, "complete", "complete")
    clock.wrap(parquet.SegmentedWriter, "write", "write")
    clock.wrap_iterator(cohort_export, "iter_counted_blocks", "reading")


def child(base_url: str, out: str, settings: str) -> None:
    """One round: the operator path with the stages clocked; prints the figures as JSON."""
    os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = json.dumps(
        {"conn_type": "analytics", "host": base_url, "password": TOKEN,
         "extra": {"app_api_key": APP_KEY}}
    )  # fmt: skip
    import airflow  # noqa: F401  (a worker has imported Airflow)
    from airflow.sdk import ObjectStoragePath

    from airflow_provider_analytics.export.settings import ExportSettings
    from airflow_provider_analytics.export.stream import export_cohort_to_parquet
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook

    client = AnalyticsHook().get_conn()
    export_cohort_to_parquet(
        client, "warm-up", ObjectStoragePath(f"file://{out}.warm"), timezone=TIMEZONE
    )
    clock = _Clock()
    _instrument(clock)
    started, cpu = time.perf_counter(), time.process_time()
    export_cohort_to_parquet(
        client,
        "clean",
        ObjectStoragePath(f"file://{out}"),
        timezone=TIMEZONE,
        settings=ExportSettings(**json.loads(settings)),
    )
    figures = {"wall": time.perf_counter() - started, "cpu": time.process_time() - cpu}
    print(json.dumps(figures | clock.spent))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=ROOT / "out" / "bench")
    parser.add_argument("--settings", default="{}", help="ExportSettings as JSON")
    parser.add_argument("--child", nargs=2, metavar=("BASE_URL", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.settings)
        return
    workdir: Path = args.workdir.resolve()
    data = ndjson_file(workdir / "data", args.rows)
    warm_up = ndjson_file(workdir / "data", 1_000)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"AIRFLOW_HOME": str(workdir / "airflow"), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    runs: list[dict[str, float]] = []
    cohorts = {"warm-up": (warm_up, 1, 1_000), "clean": (data, 1, args.rows)}
    with serving(cohorts) as base_url, tempfile.TemporaryDirectory() as scratch:
        for round_number in range(args.rounds):
            out = str(Path(scratch) / f"round{round_number}.parquet")
            command = [sys.executable, __file__, "--settings", args.settings, "--child"]
            command += [base_url, out]
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
            if done.returncode != 0:
                raise SystemExit(f"round {round_number + 1} failed:\n{done.stderr}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {round_number + 1}: {runs[-1]['cpu']:.2f} CPU s", flush=True)
    print_table(runs)


def print_table(runs: list[dict[str, float]]) -> None:
    median: Callable[[str], float] = lambda key: statistics.median(run[key] for run in runs)  # noqa: E731
    cpu = median("cpu")
    print(f"\n{len(runs)} rounds, medians: {median('wall'):.2f} s wall, {cpu:.2f} CPU s\n")
    print(f"{'stage':<50}{'CPU s':>8}{'share':>8}")
    staged = 0.0
    for key, label in STAGES.items():
        seconds = median(key)
        staged += seconds
        print(f"{label:<50}{seconds:>8.3f}{seconds / cpu:>8.1%}")
    rest = cpu - staged
    print(f"{'the rest (hand-offs, GIL, main loop, set-up)':<50}{rest:>8.3f}{rest / cpu:>8.1%}")


if __name__ == "__main__":
    main()
