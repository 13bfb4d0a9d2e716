"""Object storage for real: the daily pipeline writes to an S3-protocol server on loopback (moto)
through the Amazon provider (``s3://<aws_conn_id>@bucket/...``), and everything is read back
through the same kind of path. The writes go to a hidden temporary object that is renamed into
place; no ``.inprogress`` object may be left behind, whether a write succeeds or fails."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from airflow.sdk import ObjectStoragePath

from airflow_provider_analytics.output.parquet import write_table_atomically
from airflow_provider_analytics.output.storage import atomic_destination
from devtools.airflow_runner import connection_env
from tests.moto_s3 import keys as bucket_keys
from tests.moto_s3 import moto_server

if TYPE_CHECKING:
    from collections.abc import Iterator

    from analytics_emulator.server import EmulatorServer

    from devtools.airflow_runner import DagRunner, DagRunResult

pytestmark = [pytest.mark.integration]

EXAMPLES = Path(__file__).resolve().parents[2] / "example_dags"
CONN_ID = "aws_lake"
BUCKET = "analytics-lake"
ROOT = f"s3://{CONN_ID}@{BUCKET}/warehouse/"
RUN_DATE = "2024-01-20"
OUTPUT_KEYS = [
    "warehouse/checkout_funnel/funnel/report_key=checkout/dt=2024-01-20/funnel.parquet",
    "warehouse/cohort_users/cohort_code=cohort_small/dt=2024-01-20/users.parquet",
    "warehouse/daily_events/events/report_key=daily_events/dt=2024-01-20/events.parquet",
]
"""The main object of each task (the funnel and event reports write more tables beside them)."""
OTHER_REPORT_KEYS = [
    f"warehouse/checkout_funnel/{name}/report_key=checkout/dt=2024-01-20/{name}.parquet"
    for name in ("funnel_by_value", "funnel_by_value_totals", "funnel_totals")
] + [
    "warehouse/daily_events/events_totals/report_key=daily_events/dt=2024-01-20/events_totals.parquet"
]
LOOKED_BACK_KEYS = [
    f"warehouse/{report}/{name}/report_key={key}/dt={day}/{name}.parquet"
    for report, key, names in (
        (
            "checkout_funnel",
            "checkout",
            ("funnel", "funnel_by_value", "funnel_by_value_totals", "funnel_totals"),
        ),
        ("daily_events", "daily_events", ("events", "events_totals")),
    )
    for name in names
    for day in ("2024-01-18", "2024-01-19")
]
"""The report objects of the two days before, which the reports re-pull (lookback_days=2)."""


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """An S3-protocol server on 127.0.0.1 with one empty bucket."""
    with moto_server(BUCKET) as endpoint:
        yield endpoint


def keys(endpoint: str, prefix: str = "") -> list[str]:
    """Every object key under ``prefix``, sorted."""
    return bucket_keys(endpoint, BUCKET, prefix)


@pytest.fixture(scope="module")
def aws_connection(s3_endpoint: str) -> dict[str, str]:
    """The ``aws_lake`` connection: test credentials, the loopback server as endpoint."""
    connection = {
        "conn_type": "aws",
        "login": "testing",
        "password": "testing",
        "extra": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    return {f"AIRFLOW_CONN_{CONN_ID.upper()}": json.dumps(connection)}


@pytest.fixture
def lake(aws_connection: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the connection known to ObjectStoragePath in this process."""
    for name, value in aws_connection.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(scope="module")
def pipeline(
    dag_runner: DagRunner,
    airflow_home: Path,
    emulator: EmulatorServer,
    aws_connection: dict[str, str],
) -> DagRunResult:
    config = emulator.config
    env = connection_env(
        emulator.base_url, token=config.token, app_key=config.app_key, xtoken=config.xtoken
    )
    env |= aws_connection | {"ANALYTICS_OUTPUT_ROOT": ROOT, "AWS_EC2_METADATA_DISABLED": "true"}
    # Compiled bytecode cached in the home (see test_backfill.py).
    result = dag_runner.run(
        "analytics_daily",
        RUN_DATE,
        dag_files=[EXAMPLES / "analytics_daily.py", EXAMPLES / "analytics_outputs.py"],
        env=env,
    )
    assert result.returncode == 0, result.output[-6000:]
    assert result.state == "success", result.task_states
    return result


def read_parquet(uri: str) -> pa.Table:
    with ObjectStoragePath(uri).open("rb") as source:
        return pq.read_table(source)


@pytest.mark.slow
@pytest.mark.xdist_group("airflow")
def test_pipeline_writes_exactly_its_objects_and_no_temporary(
    pipeline: DagRunResult, s3_endpoint: str
) -> None:
    assert keys(s3_endpoint, "warehouse/") == sorted(
        OUTPUT_KEYS + OTHER_REPORT_KEYS + LOOKED_BACK_KEYS
    )
    assert [key for key in keys(s3_endpoint) if ".inprogress" in key] == []
    uris = [
        pipeline.task_xcom(task_id)["uri"]
        for task_id in ("checkout_funnel", "export_cohort_users", "daily_events")
    ]
    assert uris == [f"s3://{CONN_ID}@{BUCKET}/{key}" for key in OUTPUT_KEYS]


@pytest.mark.slow
@pytest.mark.xdist_group("airflow")
@pytest.mark.usefixtures("lake")
def test_outputs_read_back_through_object_storage_paths(pipeline: DagRunResult) -> None:
    export = pipeline.task_xcom("export_cohort_users")
    users = read_parquet(export["uri"])
    assert users.num_rows == export["rows"] == export["expected_rows"] == 1000
    assert len(users.column("distinct_id").unique()) == 1000
    assert users.schema.field("distinct_id").type == pa.int64()
    assert users.schema.field("balance").type == pa.float64()
    for task_id in ("checkout_funnel", "daily_events"):
        summary = pipeline.task_xcom(task_id)
        table = read_parquet(summary["uri"])
        assert table.num_rows == summary["rows"] > 0
        assert {d.isoformat() for d in table.column("query_from_date").to_pylist()} == {RUN_DATE}


@pytest.mark.slow
@pytest.mark.xdist_group("airflow")
@pytest.mark.usefixtures("lake")
def test_asset_events_name_the_bucket_and_lead_to_the_objects(
    pipeline: DagRunResult, airflow_home: Path
) -> None:
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        events = db.execute(
            "SELECT a.uri, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
            "WHERE e.source_dag_id = 'analytics_daily' AND e.source_run_id = ?",
            (pipeline.run_id,),
        ).fetchall()
    announced = {uri: json.loads(extra) for uri, extra in events}
    assert sorted(announced) == [
        f"s3://{BUCKET}/warehouse/checkout_funnel",
        f"s3://{BUCKET}/warehouse/cohort_users",
        f"s3://{BUCKET}/warehouse/daily_events",
    ]
    # A consumer (e.g. analytics_funnel_digest) opens what the event names.
    funnel = announced[f"s3://{BUCKET}/warehouse/checkout_funnel"]
    assert read_parquet(funnel["uri"]).num_rows == funnel["rows"]


@pytest.mark.usefixtures("lake")
def test_atomic_write_replaces_an_object_and_leaves_no_temporary(s3_endpoint: str) -> None:
    target = ObjectStoragePath(f"s3://{CONN_ID}@{BUCKET}/atomic/replace/users.parquet")
    write_table_atomically(pa.table({"user": [1, 2, 3]}), target)
    write_table_atomically(pa.table({"user": [4, 5]}), target)
    assert keys(s3_endpoint, "atomic/replace/") == ["atomic/replace/users.parquet"]
    assert read_parquet(str(target)).column("user").to_pylist() == [4, 5]


@pytest.mark.usefixtures("lake")
def test_failed_write_keeps_the_old_object_and_removes_the_temporary(s3_endpoint: str) -> None:
    target = ObjectStoragePath(f"s3://{CONN_ID}@{BUCKET}/atomic/failed/users.parquet")
    write_table_atomically(pa.table({"user": [1, 2, 3]}), target)
    with pytest.raises(ConnectionError), atomic_destination(target) as temporary:
        with temporary.open("wb") as sink:
            sink.write(b"PAR1 half of a file")
        assert len(keys(s3_endpoint, "atomic/failed/")) == 2  # the temporary exists meanwhile
        raise ConnectionError("stream cut")
    assert keys(s3_endpoint, "atomic/failed/") == ["atomic/failed/users.parquet"]
    assert read_parquet(str(target)).column("user").to_pylist() == [1, 2, 3]
