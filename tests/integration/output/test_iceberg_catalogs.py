"""Iceberg tables in an S3-protocol warehouse (moto's server on loopback) through three catalogs:
the SQL catalog on PostgreSQL, AWS Glue (moto serves Glue's API too) and a REST catalog.

The REST catalog is the test server in tests/iceberg_rest_server.py: no Iceberg REST catalog
server that runs here installs from PyPI or Debian (``apache-polaris`` on PyPI is Polaris'
client and CLI; ``lakana-server`` is a pre-beta platform that pins pyiceberg below 0.13 and
does not implement staged table creation, which pyiceberg uses). Its docstring lists what it
does not implement.

Each catalog runs the cases of tests/iceberg_cases.py (a rerun, schema evolution, two days
committed at once with pyiceberg's retry and with the writer's, two cohorts of one day
committed at once, an earlier version's table refused and then migrated), a cohort export
rerun through the operator and the hook's connection, late data re-pulled by a report's
look-back, and the maintenance operator after a killed commit. Credentials come the standard
AWS way (the environment); the catalogs need no dummy host.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import uuid
from collections import defaultdict
from typing import TYPE_CHECKING, Any

import pytest
from analytics_emulator import catalog as emulator_catalog
from moto.core.exceptions import JsonRESTError
from moto.glue.responses import GlueResponse

from airflow_provider_analytics.hooks.iceberg import IcebergCatalogHook
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from tests import iceberg_cases, iceberg_rest_server
from tests.moto_s3 import REGION, moto_server
from tests.moto_s3 import keys as bucket_keys

if TYPE_CHECKING:
    from collections.abc import Iterator

    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BUCKET = "lake"
CATALOGS = ["sql-postgresql", "glue", "rest"]


def _glue_checks_version_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make moto's Glue refuse an ``UpdateTable`` whose ``VersionId`` is not the table's current
    version, as AWS Glue does (ConcurrentModificationException). Moto ignores it, and pyiceberg's
    Glue catalog relies on it to refuse the second of two commits that read the same version."""
    lock = threading.Lock()
    update_table = GlueResponse.update_table

    def checked(self: GlueResponse) -> Any:
        with lock:
            version = self.parameters.get("VersionId")
            if version is not None:
                name = self.parameters["TableInput"]["Name"]
                table = self.glue_backend.get_table(self.parameters["DatabaseName"], name)
                if str(table._current_version) != str(version):
                    raise JsonRESTError(
                        "ConcurrentModificationException",
                        f"table {name} is at version {table._current_version}, not {version}",
                    )
            return update_table(self)

    monkeypatch.setattr(GlueResponse, "update_table", checked)


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    """moto's server on 127.0.0.1 (S3 and Glue), with the bucket ``lake``."""
    with pytest.MonkeyPatch.context() as patch:
        _glue_checks_version_id(patch)
        with moto_server(BUCKET) as endpoint:
            yield endpoint


def keys(endpoint: str, prefix: str) -> list[str]:
    return bucket_keys(endpoint, BUCKET, prefix)


@pytest.fixture(autouse=True)
def aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard AWS settings, as a worker would have them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)


class Lake:
    """One catalog over a warehouse prefix of its own in the bucket."""

    def __init__(self, kind: str, endpoint: str, prefix: str, namespace: str) -> None:
        self.kind = kind
        self.endpoint = endpoint
        self.prefix = prefix
        self.namespace = namespace

    @property
    def catalog(self) -> Catalog:
        return IcebergCatalogHook().get_conn()

    def identifier(self, name: str) -> str:
        return f"{self.namespace}.{name}"


@pytest.fixture(params=CATALOGS)
def lake(
    request: pytest.FixtureRequest, s3_endpoint: str, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Lake]:
    """The ``iceberg_default`` connection to one catalog; tables go to s3://lake/<prefix>/."""
    kind = request.param
    token = uuid.uuid4().hex[:10]
    prefix = f"wh-{kind}-{token}"
    warehouse = f"s3://{BUCKET}/{prefix}"
    storage = {"s3.endpoint": s3_endpoint, "s3.region": REGION}
    connection: dict[str, Any]
    if kind == "sql-postgresql":
        extra = {
            "type": "sql",
            "uri": request.getfixturevalue("postgres_uri"),
            "catalog_name": f"lake_{token}",
            "warehouse": warehouse,
            **storage,
        }
        connection = {"conn_type": "iceberg", "extra": extra}
    elif kind == "glue":
        host, port = s3_endpoint.removeprefix("http://").split(":")
        # no uri, no dummy host: moto's Glue endpoint, the region, keys from the environment
        extra = {"type": "glue", "warehouse": warehouse, "region_name": REGION, **storage}
        connection = {
            "conn_type": "iceberg",
            "host": host,
            "port": int(port),
            "schema": "http",
            "extra": extra,
        }
    else:
        servers = iceberg_rest_server.serve(
            str(tmp_path), token="rest-token-5f2c9e", warehouse=warehouse, properties=storage
        )
        server = next(servers)
        request.addfinalizer(lambda: next(servers, None))
        host, port = server.server_address[:2]
        connection = {
            "conn_type": "iceberg",
            "host": host,
            "port": port,
            "password": "rest-token-5f2c9e",
            "extra": storage,
        }
    monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", json.dumps(connection))
    yield Lake(kind, s3_endpoint, prefix, namespace=f"ns_{token}")


def test_rerun_replaces_its_day(lake: Lake) -> None:
    identifier = lake.identifier("rerun")
    iceberg_cases.case_rerun_replaces_its_day(lake.catalog, identifier)
    table = lake.catalog.load_table(identifier)
    assert table.location().startswith(f"s3://{BUCKET}/{lake.prefix}/")
    files = [task.file.file_path for task in table.scan().plan_files()]
    prefix = f"{table.location()}/data/cohort_code=vip/dt="
    assert files and all(path.startswith(prefix) for path in files)
    stored = keys(lake.endpoint, lake.prefix + "/")
    assert {path.removeprefix(f"s3://{BUCKET}/") for path in files} <= set(stored)


def test_schema_evolution(lake: Lake) -> None:
    iceberg_cases.case_schema_evolution(lake.catalog, lake.identifier("evolution"))


@pytest.mark.parametrize("pyiceberg_retries", [True, False], ids=["pyiceberg-retry", "own-retry"])
def test_two_days_commit_at_once(
    lake: Lake, pyiceberg_retries: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        iceberg_cases.case_two_days_commit_at_once(
            lake.catalog, lake.identifier("race"), pyiceberg_retries=pyiceberg_retries
        )
    expected = "Commit failed due to a concurrent update" if pyiceberg_retries else "lost a race"
    assert expected in caplog.text


def test_two_cohorts_commit_one_day_at_once(lake: Lake) -> None:
    iceberg_cases.case_two_identities_commit_at_once(lake.catalog, lake.identifier("shared"))


def test_cohorts_create_one_new_table_at_once(lake: Lake) -> None:
    iceberg_cases.case_two_writers_create_one_table(lake.catalog, lake.identifier("created"))
    iceberg_cases.case_two_cohorts_create_one_table_at_once(
        lake.catalog, lake.identifier("at_once")
    )


def test_an_old_layout_is_refused_then_migrated(lake: Lake) -> None:
    iceberg_cases.case_old_layout_is_refused_then_migrated(lake.catalog, lake.identifier("old"))


def test_maintenance_after_a_killed_commit(lake: Lake) -> None:
    identifier = lake.identifier("maintained")
    iceberg_cases.case_killed_commit_is_cleaned_up(lake.catalog, identifier)
    # what the bucket holds under the table is what the table reaches (less the empty folder
    # markers, keys ending in /, that pyarrow's S3 file system leaves when it deletes the last
    # file of a folder)
    table = lake.catalog.load_table(identifier)
    stored = {
        f"s3://{BUCKET}/{key}"
        for key in keys(lake.endpoint, lake.prefix + "/")
        if not key.endswith("/")
    }
    assert {path for path in stored if path.startswith(table.location() + "/")} == (
        iceberg_cases.table_files(table)
    )


def test_a_cohort_export_rerun_through_the_operator(
    lake: Lake, emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cohort export's path (a verified local Parquet file, loaded row group by row group)
    into the catalog the hook opens from the connection; a rerun replaces the day."""
    config = emulator.config
    platform = {
        "conn_type": "analytics",
        "host": emulator.base_url,
        "password": config.token,
        "extra": {"app_key": config.app_key, "timezone": emulator_catalog.PROJECT_TIMEZONE},
    }
    monkeypatch.setenv("AIRFLOW_CONN_ANALYTICS_DEFAULT", json.dumps(platform))
    identifier = lake.identifier("cohort_users")
    operator = CohortExportToParquetOperator(
        task_id="users",
        cohort_code="cohort_small",
        iceberg_table=identifier,
        column_names="warehouse",
        row_group_rows=128,  # several row groups, streamed one by one
    )
    day = iceberg_cases.DAYS[0]
    first = operator.execute(run_context(day))  # type: ignore[arg-type]
    again = operator.execute(run_context(day))  # type: ignore[arg-type]

    table = lake.catalog.load_table(identifier)
    assert first["rows"] == again["rows"] == 1000
    assert again["iceberg"]["replaced_files"] == first["iceberg"]["data_files"] == 1
    rows = table.scan().to_arrow()
    assert rows.num_rows == 1000 and len(rows.column("distinct_id").unique()) == 1000
    assert {value.isoformat() for value in rows.column("dt").to_pylist()} == {day.isoformat()}
    assert table.location().startswith(f"s3://{BUCKET}/{lake.prefix}/")


def test_late_data_is_re_pulled(
    lake: Lake, emulator: EmulatorServer, emulator_admin: EmulatorAdmin, monkeypatch
) -> None:
    """The look-back case of tests/integration/reports/test_report_lookback.py, on this
    catalog and the S3 warehouse: late events for a past day, corrected by the next run, no
    day twice."""
    from tests.integration.reports import test_report_lookback as lookback

    lookback.use_platform(emulator, monkeypatch)
    sink = lookback.iceberg_sink(lake.catalog, lake.namespace)
    lookback.test_the_next_run_corrects_a_day_whose_events_arrived_late(emulator_admin, sink)


def run_context(day: dt.date) -> dict[str, Any]:
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    outlets: dict[Any, Any] = defaultdict(lambda: type("AssetEvent", (), {"extra": None})())
    return {
        "ds": day.isoformat(),
        "data_interval_start": start,
        "data_interval_end": start + dt.timedelta(days=1),
        "outlet_events": outlets,
    }
