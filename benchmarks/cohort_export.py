"""Cohort export benchmark: this provider's streamed path against DuckDB and a naive script.

Serves cohorts from the bundled emulator (a separate process on 127.0.0.1) and measures, each
contender in its own child process, wall time, CPU seconds and peak RSS:

  (a) provider   hook -> Arrow -> Parquet, reading the export over HTTP
  (b) duckdb     COPY (SELECT * FROM read_json(<saved NDJSON>)) TO ... (FORMAT parquet)
  (c) naive      json.loads per line into a list -> pandas.DataFrame -> to_parquet

(b) and (c) read the same NDJSON, saved to local disk first (which also warms the emulator's
cache, so (a) measures the client rather than the data generator). (a) also runs on a 4x larger
cohort to show that its memory does not grow with the cohort.

Usage: python benchmarks/cohort_export.py [--rows 1000000] [--large-rows 4000000] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from analytics_emulator.process import EmulatorProcess

HERE = Path(__file__).resolve()
TOKEN, APP_KEY, XTOKEN = "bench-token", "bench-app-key", "bench-xtoken"


def _child_usage(command: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Run a child to completion; its wall time, CPU seconds and peak RSS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: run the biggest last or
        # trust the child's own report, which we also collect.
        "peak_rss_mib": float(json.loads(done.stdout.strip().splitlines()[-1])["peak_rss_mib"]),
        "rows": float(json.loads(done.stdout.strip().splitlines()[-1])["rows"]),
    }


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _report(rows: int) -> None:
    print(json.dumps({"rows": rows, "peak_rss_mib": round(_peak_rss_mib(), 1)}))


def child_provider(base_url: str, cohort: str, out: str) -> None:
    """(a): the operator's path, through the hook built from an Airflow connection."""
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
    from airflow_provider_analytics.jobs.cohort_export import export_cohort_to_parquet

    hook = AnalyticsHook()
    result = export_cohort_to_parquet(
        hook.get_conn(), cohort, ObjectStoragePath(f"file://{out}"), timezone="Asia/Shanghai"
    )
    _report(result.rows)


def child_duckdb(ndjson: str, out: str) -> None:
    """(b): what a user might do by hand with DuckDB."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * FROM read_json('{ndjson}', format='newline_delimited')) "
        f"TO '{out}' (FORMAT parquet, COMPRESSION zstd)"
    )
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()
    _report(int(rows[0]) if rows else 0)


def _as_text(value: object) -> object:
    return (
        value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    )


def child_naive(ndjson: str, out: str) -> None:
    """(c): json.loads per line, a DataFrame, to_parquet."""
    import pandas as pd

    with open(ndjson, encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    frame = pd.DataFrame(records)
    for column in frame.columns:  # lists and mixed types need object -> string to write at all
        if frame[column].dtype == object:
            frame[column] = frame[column].map(
                lambda v: (
                    v if v is None or isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                )
            )
    frame.to_parquet(out, compression="zstd")
    _report(len(frame))


def _save_ndjson(base_url: str, cohort: str, path: Path) -> float:
    headers = {"token": TOKEN, "appKey": APP_KEY, "Content-Type": "application/json"}
    with requests.post(
        f"{base_url}/uba/api/cohort/users/export",
        json={"cohortCode": cohort},
        headers=headers,
        stream=True,
        timeout=(10, 600),
    ) as response:
        response.raise_for_status()
        with path.open("wb") as sink:
            for chunk in response.iter_content(1 << 20):
                sink.write(chunk)
    return path.stat().st_size / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--large-rows", type=int, default=4_000_000)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="cohort-export-bench-"))
    cohorts = {"bench": args.rows, "bench_large": args.large_rows}
    emulator = EmulatorProcess(
        credentials={"token": TOKEN, "app_key": APP_KEY, "xtoken": XTOKEN}, cohorts=cohorts
    ).start()
    base_url = emulator.base_url
    try:
        ndjson = workdir / "bench.ndjson"
        started = time.perf_counter()
        size_mb = _save_ndjson(base_url, "bench", ndjson)
        print(
            f"saved {args.rows:,} rows of NDJSON ({size_mb:,.0f} MB) in "
            f"{time.perf_counter() - started:.1f} s (emulator cold)"
        )
        me = [sys.executable, str(HERE)]
        results = {
            "(a) provider": _child_usage(
                [*me, "child-provider", base_url, "bench", str(workdir / "a.parquet")]
            ),
            "(b) duckdb": _child_usage(
                [*me, "child-duckdb", str(ndjson), str(workdir / "b.parquet")]
            ),
            "(c) naive": _child_usage(
                [*me, "child-naive", str(ndjson), str(workdir / "c.parquet")]
            ),
        }
        ndjson.unlink()
        _save_ndjson(base_url, "bench_large", workdir / "warm.ndjson")  # warm the cache
        (workdir / "warm.ndjson").unlink()
        results[f"(a) provider {args.large_rows:,}"] = _child_usage(
            [*me, "child-provider", base_url, "bench_large", str(workdir / "a_large.parquet")]
        )
    finally:
        emulator.stop()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    print(f"\n{'path':<28}{'rows':>12}{'wall s':>9}{'cpu s':>9}{'peak RSS MiB':>14}")
    for name, figures in results.items():
        print(
            f"{name:<28}{int(figures['rows']):>12,}{figures['wall_s']:>9.2f}"
            f"{figures['cpu_s']:>9.2f}{figures['peak_rss_mib']:>14.1f}"
        )
    a, b, c = results["(a) provider"], results["(b) duckdb"], results["(c) naive"]
    large = results[f"(a) provider {args.large_rows:,}"]
    print(f"\nwall (a)/(b) = {a['wall_s'] / b['wall_s']:.2f}  (target <= 1.0)")
    print(f"wall (a)/(c) = {a['wall_s'] / c['wall_s']:.2f}")
    print(f"peak RSS (a) = {a['peak_rss_mib']:.1f} MiB  (target <= 256)")
    growth = large["peak_rss_mib"] / a["peak_rss_mib"] - 1
    print(
        f"peak RSS (a) at {args.large_rows:,} rows = {large['peak_rss_mib']:.1f} MiB, "
        f"{growth:+.1%} vs {args.rows:,} rows  (target within 10%)"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("child-"):
        {
            "child-provider": child_provider,
            "child-duckdb": child_duckdb,
            "child-naive": child_naive,
        }[sys.argv[1]](*sys.argv[2:])
    else:
        main()
