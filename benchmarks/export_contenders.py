"""The contenders of the cohort export benchmark, each run as its own child process.

``python export_contenders.py NAME ARGS...`` runs one and prints one JSON line: the wall and CPU
seconds of its timed part (CPU: every thread of the process and of children it waited for), its
peak RSS and the rows it wrote. Imports, and for (a) a first small export, come before the timed
part; everything a contender does with the data is inside it.

Only the standard library is imported at the top: the dlt contenders run under the interpreter
of their own virtual environment (made by ``cohort_export.py``), which has dlt, pyarrow and
requests but not this project.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from export_data import APP_KEY, TIMEZONE, TOKEN


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_seconds() -> float:
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


class _Timer:
    """Wall and CPU seconds since it was made."""

    def __init__(self) -> None:
        self._wall, self._cpu = time.perf_counter(), _cpu_seconds()

    def report(self, rows: int, baseline: float = 0.0, **extra: Any) -> None:
        """Print the figures; ``baseline``: the peak RSS before the timed part."""
        wall, cpu = time.perf_counter() - self._wall, _cpu_seconds() - self._cpu
        figures = {"seconds": wall, "cpu": cpu, "rows": rows, "peak_rss_mib": _peak_rss_mib()}
        print(json.dumps(figures | {"before": baseline} | extra))


def _export_url(base_url: str) -> str:
    return f"{base_url}/uba/api/cohort/users/export"


def provider(base_url: str, cohort: str, out: str) -> None:
    """(a) the operator's path: Airflow imported, the hook built from an ``AIRFLOW_CONN_*``
    connection, an ``ObjectStoragePath`` ``file://`` destination."""
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

    from airflow_provider_analytics.export.stream import export_cohort_to_parquet
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook

    client = AnalyticsHook().get_conn()
    # a worker that has run a task before: modules imported, filesystem and plugins loaded
    export_cohort_to_parquet(
        client, "warm-up", ObjectStoragePath(f"file://{out}.warm"), timezone=TIMEZONE
    )
    destination = ObjectStoragePath(f"file://{out}")
    if os.environ.get("BENCH_PROFILE_HANDSHAKE"):  # profile_export.py attaches a profiler now
        print("ready", flush=True)
        sys.stdin.readline()
    baseline = _peak_rss_mib()
    timer = _Timer()
    result = export_cohort_to_parquet(client, cohort, destination, timezone=TIMEZONE)
    timer.report(result.rows, baseline, bytes=result.bytes_written)


def provider_iceberg(base_url: str, cohort: str, out: str) -> None:
    """(a) Iceberg: (a)'s path into an Iceberg table of a SQL catalog (SQLite) whose warehouse
    is local files, streamed (``mode="stream"``): the day's data files and their one commit."""
    os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = json.dumps(
        {
            "conn_type": "analytics",
            "host": base_url,
            "password": TOKEN,
            "extra": {"app_api_key": APP_KEY},
        }
    )
    import airflow  # noqa: F401  (a worker has imported Airflow)

    from airflow_provider_analytics.client.validation import cohort_query
    from airflow_provider_analytics.core.identity import cohort_identity
    from airflow_provider_analytics.export.cohort_day import export_cohort_day
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.output.iceberg import open_catalog
    from airflow_provider_analytics.output.iceberg_destination import IcebergDestination

    work = Path(out)
    work.mkdir(parents=True, exist_ok=True)
    properties = {"type": "sql", "uri": f"sqlite:///{work}/catalog.db", "warehouse": work.as_uri()}
    catalog = open_catalog("bench", properties)
    client = AnalyticsHook().get_conn()

    def export(code: str, table: str) -> dict[str, Any]:
        destination = IcebergDestination(
            lambda: catalog, "bench", f"lake.{table}", cohort_identity(code)
        )
        return export_cohort_day(
            client, cohort_query(code), destination, "2024-01-10", mode="stream", timezone=TIMEZONE
        )

    export("warm-up", "warm")  # as (a): a worker that has run a task before
    baseline = _peak_rss_mib()
    timer = _Timer()
    result = export(cohort, "users")
    timer.report(result["rows"], baseline, bytes=result["bytes_written"])


def duckdb(ndjson: str, out: str) -> None:
    """(b) DuckDB by hand, on the local file."""
    import duckdb

    con = duckdb.connect()
    timer = _Timer()
    con.execute(
        f"COPY (SELECT * FROM read_json('{ndjson}')) TO '{out}' (FORMAT parquet, COMPRESSION zstd)"
    )
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()
    timer.report(int(rows[0]) if rows else 0, bytes=os.path.getsize(out))


def reference(base_url: str, cohort: str, out: str) -> None:
    """(d) the 20 lines: requests streaming into Arrow's streaming JSON reader (16 MiB blocks,
    its threads on, types inferred) and a zstd ``ParquetWriter``."""
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq
    import requests

    timer = _Timer()
    rows = 0
    with requests.post(
        _export_url(base_url),
        json={"cohortCode": cohort},
        headers={"token": TOKEN, "appKey": APP_KEY},
        stream=True,
        timeout=(10, 600),
    ) as response:
        response.raise_for_status()
        reader = pa_json.open_json(
            response.raw, read_options=pa_json.ReadOptions(block_size=16 << 20)
        )
        with pq.ParquetWriter(out, reader.schema, compression="zstd") as writer:
            for batch in reader:
                writer.write_batch(batch)
                rows += batch.num_rows
    timer.report(rows, bytes=os.path.getsize(out))


def _dlt_run(resource_function: Any, out: str) -> None:
    """Run a dlt pipeline of one resource into Parquet files under ``out`` (a directory)."""
    os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")
    import dlt
    import pyarrow.parquet as pq

    work = Path(out)
    pipeline = dlt.pipeline(
        pipeline_name="bench",
        pipelines_dir=str(work / "pipelines"),
        destination=dlt.destinations.filesystem(bucket_url=(work / "data").as_uri()),
        dataset_name="cohort",
    )
    timer = _Timer()
    pipeline.run(resource_function(), loader_file_format="parquet", write_disposition="replace")
    files = sorted((work / "data" / "cohort" / "users").rglob("*.parquet"))
    rows = sum(pq.ParquetFile(path).metadata.num_rows for path in files)
    timer.report(rows, bytes=sum(path.stat().st_size for path in files))


def _dlt_response(base_url: str, cohort: str) -> Any:
    import requests

    response = requests.post(
        _export_url(base_url),
        json={"cohortCode": cohort},
        headers={"token": TOKEN, "appKey": APP_KEY},
        stream=True,
        timeout=(10, 600),
    )
    response.raise_for_status()
    return response


def dlt_dicts(base_url: str, cohort: str, out: str) -> None:
    """dlt's default idiom: a resource yielding the records as dicts (pages of 10,000)."""
    import dlt

    @dlt.resource(name="users")
    def users() -> Any:
        with _dlt_response(base_url, cohort) as response:
            page = []
            for line in response.iter_lines(chunk_size=1 << 20):
                page.append(json.loads(line))
                if len(page) == 10_000:
                    yield page
                    page = []
            if page:
                yield page

    _dlt_run(users, out)


def dlt_arrow(base_url: str, cohort: str, out: str) -> None:
    """dlt's documented fast path: a resource yielding Arrow tables (read as in (d))."""
    import dlt
    import pyarrow as pa
    import pyarrow.json as pa_json

    @dlt.resource(name="users")
    def users() -> Any:
        with _dlt_response(base_url, cohort) as response:
            reader = pa_json.open_json(
                response.raw, read_options=pa_json.ReadOptions(block_size=16 << 20)
            )
            for batch in reader:
                yield pa.Table.from_batches([batch])

    _dlt_run(users, out)


CONTENDERS = {
    "provider": provider,
    "provider-iceberg": provider_iceberg,
    "duckdb": duckdb,
    "reference": reference,
    "dlt-dicts": dlt_dicts,
    "dlt-arrow": dlt_arrow,
}

if __name__ == "__main__":
    CONTENDERS[sys.argv[1]](*sys.argv[2:])
