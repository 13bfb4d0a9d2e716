"""The contenders of the cohort export benchmark, each run as its own child process.

``python export_contenders.py NAME ARGS...`` runs one and prints one JSON line: the wall and CPU
seconds of its timed part (CPU: every thread of the process and of children it waited for), its
peak RSS and the rows it wrote.

Each contender is timed as a fresh process's first run, as an Airflow task runs it: its imports,
its client or connection and its export are inside the timed part. Only Airflow's own start is
done before the clock, for the contenders that write through ``ObjectStoragePath`` (the
provider's): Airflow imported, as the task runner has it, and its filesystem discovery (the
filesystems of the installed providers registered, and the hook lineage collector a first
object storage write builds), which every task pays once in its process; its cost is printed
apart (``airflow_start``, ``discovery``). With ``BENCH_WARM`` set, the same export runs a second
time in the same process, timed apart (``warm_seconds``, ``warm_cpu``): a warm process, which an
Airflow task is not.

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

    def figures(self) -> dict[str, float]:
        return {"seconds": time.perf_counter() - self._wall, "cpu": _cpu_seconds() - self._cpu}


def _export_url(base_url: str) -> str:
    return f"{base_url}/uba/api/cohort/users/export"


def airflow_worker(base_url: str) -> dict[str, float]:
    """What an Airflow worker has done before a task's code runs: the analytics connection in
    the environment, Airflow imported; then Airflow's filesystem discovery (which every task
    pays with its first ``ObjectStoragePath`` use). Returns the CPU seconds of each."""
    os.environ["AIRFLOW_CONN_ANALYTICS_DEFAULT"] = json.dumps(
        {
            "conn_type": "analytics",
            "host": base_url,
            "password": TOKEN,
            "extra": {"app_api_key": APP_KEY},
        }
    )
    timer = _Timer()
    import airflow.sdk  # noqa: F401  (the task runner has imported it)

    started = timer.figures()["cpu"]
    discovery = _Timer()
    from airflow.sdk.io.fs import has_fs
    from airflow.sdk.lineage import get_hook_lineage_collector

    has_fs("file")  # the providers' filesystems, registered once per process
    get_hook_lineage_collector()  # built (plugins loaded) by a first object storage write
    figures = {"airflow_start": started, "discovery": discovery.figures()["cpu"]}
    if os.environ.get("BENCH_MODELS_READY"):
        # a LocalExecutor worker is forked from the scheduler, whose ORM has imported every
        # Airflow model and configured its mappers: the first SQLAlchemy mapper a task
        # configures (an Iceberg SQL catalog's) then no longer fires Airflow's import of
        # every model (its "before_configured" listener, once per process)
        models = _Timer()
        from airflow.models import import_all_models
        from sqlalchemy.orm import configure_mappers

        import_all_models()
        configure_mappers()
        figures["models"] = models.figures()["cpu"]
    return figures


def provider(base_url: str, cohort: str, out: str) -> tuple[int, int]:
    """(a) the operator's path: the hook built from an ``AIRFLOW_CONN_*`` connection, an
    ``ObjectStoragePath`` ``file://`` destination, the streamed export job."""
    from airflow.sdk import ObjectStoragePath

    try:
        from airflow_provider_analytics.export.stream import export_cohort_to_parquet
    except ModuleNotFoundError:  # a baseline from before 0.2.0's rooms (--baseline)
        from airflow_provider_analytics.jobs.cohort_export import export_cohort_to_parquet
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook

    client = AnalyticsHook().get_conn()
    destination = ObjectStoragePath(f"file://{out}")
    if os.environ.get("BENCH_PROFILE_HANDSHAKE"):  # profile_export.py attaches a profiler now
        print("ready", flush=True)
        sys.stdin.readline()
    result = export_cohort_to_parquet(client, cohort, destination, timezone=TIMEZONE)
    return result.rows, result.bytes_written


def provider_pages(base_url: str, cohort: str, out: str) -> tuple[int, int]:
    """(a) pages: the cohort day job in ``mode="pages"`` (shards of the paged endpoint, each
    into a part, checked, merged into one object) into a Parquet prefix, as
    ``CohortExportToParquetOperator(mode="pages")`` runs it."""
    from airflow_provider_analytics.client.validation import cohort_query
    from airflow_provider_analytics.core.identity import cohort_identity
    from airflow_provider_analytics.export.cohort_day import export_cohort_day
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from airflow_provider_analytics.output.parquet_destination import ParquetDestination

    client = AnalyticsHook().get_conn()
    destination = ParquetDestination(f"file://{out}/", cohort_identity(cohort))
    result = export_cohort_day(
        client, cohort_query(cohort), destination, "2024-01-10", mode="pages", timezone=TIMEZONE
    )
    return result["rows"], result["bytes_written"]


def provider_iceberg(base_url: str, cohort: str, out: str) -> tuple[int, int]:
    """(a) Iceberg: (a)'s path into an Iceberg table of a SQL catalog (SQLite) whose warehouse
    is local files, streamed (``mode="stream"``): the day's data files and their one commit."""
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
    destination = IcebergDestination(
        lambda: catalog, "bench", "lake.users", cohort_identity(cohort)
    )
    result = export_cohort_day(
        client, cohort_query(cohort), destination, "2024-01-10", mode="stream", timezone=TIMEZONE
    )
    return result["rows"], result["bytes_written"]


def duckdb(ndjson: str, out: str) -> tuple[int, int]:
    """(b) DuckDB by hand, on the local file."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * FROM read_json('{ndjson}')) TO '{out}' (FORMAT parquet, COMPRESSION zstd)"
    )
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{out}')").fetchone()
    return (int(rows[0]) if rows else 0), os.path.getsize(out)


def reference(base_url: str, cohort: str, out: str) -> tuple[int, int]:
    """(d) the 20 lines: requests streaming into Arrow's streaming JSON reader (16 MiB blocks,
    its threads on, types inferred) and a zstd ``ParquetWriter``."""
    import pyarrow.json as pa_json
    import pyarrow.parquet as pq
    import requests

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
    return rows, os.path.getsize(out)


def _dlt_run(resource_function: Any, out: str) -> tuple[int, int]:
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
    pipeline.run(resource_function(), loader_file_format="parquet", write_disposition="replace")
    files = sorted((work / "data" / "cohort" / "users").rglob("*.parquet"))
    rows = sum(pq.ParquetFile(path).metadata.num_rows for path in files)
    return rows, sum(path.stat().st_size for path in files)


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


def dlt_dicts(base_url: str, cohort: str, out: str) -> tuple[int, int]:
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

    return _dlt_run(users, out)


def dlt_arrow(base_url: str, cohort: str, out: str) -> tuple[int, int]:
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

    return _dlt_run(users, out)


CONTENDERS = {
    "provider": provider,
    "provider-pages": provider_pages,
    "provider-iceberg": provider_iceberg,
    "duckdb": duckdb,
    "reference": reference,
    "dlt-dicts": dlt_dicts,
    "dlt-arrow": dlt_arrow,
}
ON_AIRFLOW = {"provider", "provider-pages", "provider-iceberg"}
"""The contenders that run as the operator does: Airflow started before the clock."""


def main(name: str, *args: str) -> None:
    """Run contender ``name`` once as a fresh process's first run (and, with ``BENCH_WARM``,
    once more, timed apart); print the figures as one JSON line."""
    start = airflow_worker(args[0]) if name in ON_AIRFLOW else {}
    baseline = _peak_rss_mib()
    timer = _Timer()
    rows, size = CONTENDERS[name](*args)
    figures: dict[str, Any] = timer.figures()
    figures |= {"rows": rows, "bytes": size, "peak_rss_mib": _peak_rss_mib(), "before": baseline}
    if os.environ.get("BENCH_WARM"):
        warm = _Timer()
        CONTENDERS[name](*args[:-1], args[-1] + "-warm")
        figures |= {f"warm_{key}": value for key, value in warm.figures().items()}
    print(json.dumps(figures | start))


if __name__ == "__main__":
    main(sys.argv[1], *sys.argv[2:])
