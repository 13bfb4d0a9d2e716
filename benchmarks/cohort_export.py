"""Cohort export benchmark: the provider's client against DuckDB and a 20-line Arrow script.

A pre-generated NDJSON file (21 properties of every plan type: full-precision doubles, ids
printed the way a Java double prints them, CJK text, nulls inside lists, a masked marker in a
typed column (a datetime) every 10,000 rows) is served by a stdlib HTTP server with
``socket.sendfile``, so the server costs almost nothing and the figures measure the client.
Each contender runs in its own child process; rounds alternate the contenders, and the median
of the in-process job time is reported with the child's peak RSS:

  (a) provider        a process that imported Airflow (its own AIRFLOW_HOME, examples off as in
                      production); hook from an AIRFLOW_CONN_* connection, ObjectStoragePath
                      file:// destination; only the export call is timed
  (b) duckdb          COPY (SELECT * FROM read_json(<local file>)) TO ... (parquet, zstd)
  (d) reference       requests streaming into pyarrow.json.open_json and a zstd ParquetWriter
  (a) markers         (a) on data with a masked marker every 1,000 rows, in turn in a number,
                      boolean, list, datetime and number column
  (a) 4x              (a) on four times the rows (the file served four times over)

Usage: python benchmarks/cohort_export.py [--rows 1000000] [--rounds 3] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
TOKEN, APP_KEY = "bench-token", "bench-app-key"
TIMEZONE = "Asia/Shanghai"
MARKER = "(已脱敏)"
PLAN = [
    *({"id": name, "dataType": "number"} for name in ("user_id", "score", "price", "ratio")),
    *({"id": name, "dataType": "number"} for name in ("age", "balance")),
    *({"id": name, "dataType": "string"} for name in ("city", "nickname", "email", "channel")),
    {"id": "device", "dataType": "string"},
    {"id": "phone", "dataType": "string", "masking": 1},
    *({"id": name, "dataType": "boolean"} for name in ("is_vip", "opted_in", "verified")),
    *({"id": name, "dataType": "datetime"} for name in ("register_time", "last_login")),
    {"id": "birthday", "dataType": "datetime"},
    *({"id": name, "dataType": "array<string>"} for name in ("interests", "devices", "labels")),
]
COLUMNS = [item["id"] for item in PLAN]
MARKED_COLUMNS = ["score", "is_vip", "interests", "last_login", "balance"]
CITIES = ["上海", "北京", "深圳", "杭州", "成都", "Wien", "São Paulo", "東京"]
WORDS = ["运动", "音乐", "旅行", "美食", "读书", "gaming", "电影", None]


def _java_double(value: float) -> str:
    """A double as a Java platform prints it (``BigDecimal.valueOf(d).toPlainString()``):
    shortest digits in plain notation, so ids end in 000, and a whole number of 10^7 or more
    without ``.0`` (Java's ``Double.toString`` turns to exponent notation there; Python's
    ``repr`` only at 10^16, which used to give one id in ~460 a ``.0``)."""
    text = format(Decimal(repr(value)), "f")
    if abs(value) >= 1e7 and text.endswith(".0"):
        text = text[:-2]
    return text


def _record(rng: random.Random, row: int, marker_every: int, rotate: bool) -> str:
    day = rng.randrange(1, 28)
    values: dict[str, Any] = {
        "user_id": _java_double(float(rng.getrandbits(63) - (1 << 62))),
        "score": repr(rng.random() * 100),
        "price": repr(round(rng.uniform(0, 5000), 2)),
        "ratio": repr(rng.random()),
        "age": str(rng.randrange(16, 90)),
        "balance": repr(rng.uniform(-1000, 1e6)),
        "city": json.dumps(rng.choice(CITIES), ensure_ascii=False),
        "nickname": json.dumps(f"用户{row}_{rng.choice(CITIES)}", ensure_ascii=False),
        "email": json.dumps(f"user{row}@example.com"),
        "channel": json.dumps(rng.choice(["app", "web", "mini", "ads"])),
        "device": json.dumps(
            rng.choice(["iPhone 15", "Pixel 8", "华为 Mate 60"]), ensure_ascii=False
        ),
        "phone": json.dumps(MARKER, ensure_ascii=False),
        "is_vip": rng.choice(["true", "false"]),
        "opted_in": rng.choice(["true", "false", "null"]),
        "verified": rng.choice(["true", "false"]),
        "register_time": f'"2023-{rng.randrange(1, 13):02d}-{day:02d} 10:{day:02d}:05"',
        "last_login": f'"2024-01-{day:02d} 0{rng.randrange(10)}:00:00.{rng.randrange(1000):03d}"',
        "birthday": f'"19{rng.randrange(50, 99)}-0{rng.randrange(1, 10)}-{day:02d}"',
        "interests": json.dumps(rng.sample(WORDS, rng.randrange(0, 4)), ensure_ascii=False),
        "devices": json.dumps(["ios", None] if row % 7 == 0 else ["android"]),
        "labels": "null" if row % 5 == 0 else json.dumps(["新客", "高价值"], ensure_ascii=False),
    }
    if row % marker_every == marker_every - 1:
        column = (
            MARKED_COLUMNS[(row // marker_every) % len(MARKED_COLUMNS)] if rotate else "last_login"
        )
        values[column] = json.dumps(MARKER, ensure_ascii=False)
    return "{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + "}\n"


def write_ndjson(path: Path, rows: int, marker_every: int, rotate: bool) -> None:
    rng = random.Random(20240105)
    with path.open("w", encoding="utf-8") as sink:
        for start in range(0, rows, 10_000):
            sink.write(
                "".join(
                    _record(rng, row, marker_every, rotate)
                    for row in range(start, min(start + 10_000, rows))
                )
            )


class _Handler(BaseHTTPRequestHandler):
    """Answers the three calls of an export; the body is sent with ``socket.sendfile``."""

    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _json(self, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # list_user_properties
        self._json(PLAN)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        path, repeat, rows = self.server.cohorts[request["cohortCode"]]
        if not self.path.endswith("/export"):  # get_cohort_users: the count
            self._json({"count": rows, "page": 1, "size": 0, "users": []})
            return
        size = path.stat().st_size
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(size * repeat))
        self.end_headers()
        self.wfile.flush()
        with path.open("rb") as body:
            for _ in range(repeat):
                self.connection.sendfile(body, 0, size)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    cohorts: dict[str, tuple[Path, int, int]]


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Timer:
    """Wall and CPU seconds (all the process's threads) since it was made."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), _cpu_seconds()

    def elapsed(self) -> tuple[float, float]:
        return time.perf_counter() - self._wall, _cpu_seconds() - self._cpu


def _report(elapsed: tuple[float, float], rows: int, baseline: float = 0.0) -> None:
    """The child's figures: wall and CPU seconds of the timed call, and the peak RSS;
    ``baseline`` is the peak RSS before the timed call."""
    seconds, cpu = elapsed
    peak = _peak_rss_mib()
    figures = {"seconds": seconds, "cpu": cpu, "rows": rows, "peak_rss_mib": peak}
    print(json.dumps(figures | {"before": baseline}))


def child_provider(base_url: str, cohort: str, out: str) -> None:
    """(a): the operator's path, through the hook built from an Airflow connection."""
    os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = json.dumps(
        {
            "conn_type": "analytics",
            "host": base_url,
            "password": TOKEN,
            "extra": {"app_api_key": APP_KEY},
        }
    )
    import airflow  # noqa: F401  (a worker has imported Airflow)
    from airflow.sdk import ObjectStoragePath

    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.jobs.cohort_export import export_cohort_to_parquet

    client = AnalyticsHook().get_conn()
    # a worker that has run a task before: modules imported, filesystem and plugins loaded
    export_cohort_to_parquet(
        client, "warm-up", ObjectStoragePath(f"file://{out}.warm"), timezone=TIMEZONE
    )
    destination = ObjectStoragePath(f"file://{out}")
    baseline = _peak_rss_mib()
    timer = _Timer()
    result = export_cohort_to_parquet(client, cohort, destination, timezone=TIMEZONE)
    _report(timer.elapsed(), result.rows, baseline)


def child_duckdb(ndjson: str, out: str) -> None:
    """(b): what a user might do by hand with DuckDB, on the local file."""
    import duckdb

    con = duckdb.connect()
    timer = _Timer()
    con.execute(
        f"COPY (SELECT * FROM read_json('{ndjson}', format='newline_delimited')) "
        f"TO '{out}' (FORMAT parquet, COMPRESSION zstd)"
    )
    elapsed = timer.elapsed()
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()
    _report(elapsed, int(rows[0]) if rows else 0)


def child_reference(base_url: str, cohort: str, out: str) -> None:
    """(d): requests streaming into Arrow's streaming JSON reader and a zstd ParquetWriter.

    Datetimes are read as text, which also lets the clean data's masked markers (in the
    ``last_login`` datetime column) through.
    """
    import pyarrow as pa
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq
    import requests

    types = {"number": pa.float64(), "string": pa.string(), "boolean": pa.bool_()}
    types |= {"datetime": pa.string(), "array<string>": pa.list_(pa.string())}
    fields = [(p["id"], types[p["dataType"]]) for p in PLAN]
    schema = pa.schema(fields)
    timer = _Timer()
    with requests.post(
        f"{base_url}/uba/api/cohort/users/export",
        json={"cohortCode": cohort},
        headers={"token": TOKEN, "appKey": APP_KEY},
        stream=True,
        timeout=(10, 600),
    ) as response:
        response.raw.decode_content = True
        reader = pa_json.open_json(
            response.raw,
            read_options=pa_json.ReadOptions(block_size=1 << 20),
            parse_options=pa_json.ParseOptions(explicit_schema=schema),
        )
        rows = 0
        with pq.ParquetWriter(out, schema, compression="zstd") as writer:
            for batch in reader:
                writer.write_batch(batch)
                rows += batch.num_rows
    _report(timer.elapsed(), rows)


def _run(command: list[str], airflow_home: Path) -> dict[str, float]:
    # bytecode is written (once) so that imports do not recompile sources in every child
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    # a worker of its own, configured as in production: the machine's ~/airflow (and its
    # example plugins, which a worker loads with its first object storage write) stay out
    env |= {"AIRFLOW_HOME": str(airflow_home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:])} failed:\n{done.stdout}\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@contextlib.contextmanager
def _serving(cohorts: dict[str, tuple[Path, int, int]]) -> Any:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.cohorts = cohorts
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="cohort-export-bench-"))
    clean, marked = workdir / "clean.ndjson", workdir / "markers.ndjson"
    started = time.perf_counter()
    write_ndjson(clean, args.rows, 10_000, rotate=False)
    write_ndjson(marked, args.rows, 1_000, rotate=True)
    print(
        f"generated 2 x {args.rows:,} rows ({clean.stat().st_size / 2**20:,.0f} MiB each) "
        f"in {time.perf_counter() - started:.0f} s"
    )
    warm_up = workdir / "warm-up.ndjson"
    write_ndjson(warm_up, 1_000, 10_000, rotate=False)
    cohorts = {
        "warm-up": (warm_up, 1, 1_000),
        "clean": (clean, 1, args.rows),
        "markers": (marked, 1, args.rows),
        "clean4x": (clean, 4, 4 * args.rows),
    }
    me = [sys.executable, str(HERE)]
    out = str(workdir / "out.parquet")
    results: dict[str, list[dict[str, float]]] = {}
    try:
        with _serving(cohorts) as base_url:
            contenders = {
                "(a) provider": [*me, "child-provider", base_url, "clean", out],
                "(b) duckdb": [*me, "child-duckdb", str(clean), out],
                "(d) reference": [*me, "child-reference", base_url, "clean", out],
                "(a) markers 1/1000": [*me, "child-provider", base_url, "markers", out],
                "(a) 4x rows": [*me, "child-provider", base_url, "clean4x", out],
            }
            for round_number in range(args.rounds):
                for name, command in contenders.items():
                    figures = _run(command, workdir / "airflow")
                    results.setdefault(name, []).append(figures)
                    print(
                        f"round {round_number + 1} {name:<20} {figures['seconds']:7.2f} s "
                        f"{figures['cpu']:7.2f} s CPU {figures['peak_rss_mib']:7.1f} MiB peak "
                        f"({figures['before']:.1f} MiB before the timed call)",
                        flush=True,
                    )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    median = {
        name: {
            "seconds": statistics.median(r["seconds"] for r in runs),
            "cpu": statistics.median(r["cpu"] for r in runs),
            "peak_rss_mib": statistics.median(r["peak_rss_mib"] for r in runs),
            "rows": runs[0]["rows"],
        }
        for name, runs in results.items()
    }
    print(f"\n{'contender':<22}{'rows':>12}{'median s':>10}{'CPU s':>8}{'peak RSS MiB':>14}")
    for name, figures in median.items():
        print(
            f"{name:<22}{int(figures['rows']):>12,}{figures['seconds']:>10.2f}"
            f"{figures['cpu']:>8.2f}{figures['peak_rss_mib']:>14.1f}"
        )
    a, b, d = median["(a) provider"], median["(b) duckdb"], median["(d) reference"]
    marked_a, large = median["(a) markers 1/1000"], median["(a) 4x rows"]
    print(f"\n(a)/(b) wall          {a['seconds'] / b['seconds']:.2f}  (target <= 1.0)")
    print(f"(a)/(d) wall          {a['seconds'] / d['seconds']:.2f}  (target <= 1.0)")
    print(f"(a)/(d) CPU           {a['cpu'] / d['cpu']:.2f}  (work done; load changes it less)")
    print(f"(a) peak RSS          {a['peak_rss_mib']:.0f} MiB  (target <= 256)")
    print(f"markers/(a) wall      {marked_a['seconds'] / a['seconds']:.2f}  (target <= 1.2)")
    growth = large["peak_rss_mib"] / a["peak_rss_mib"] - 1
    print(f"4x/(a) peak RSS       {growth:+.1%}  (target within 10%)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("child-"):
        {
            "child-provider": child_provider,
            "child-duckdb": child_duckdb,
            "child-reference": child_reference,
        }[sys.argv[1]](*sys.argv[2:])
    else:
        main()
