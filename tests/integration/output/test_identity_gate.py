"""The identity gate end to end, against the emulator on loopback and real files: every path
(the export and report operators, the migration command) refuses or writes an identity by the
one rule of ``core/identity.py``, and every reader reads back what was written."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from airflow_provider_analytics.client.analysis_requests import FunnelRequest, FunnelStep
from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.hooks.iceberg_migration import main as migrate
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from airflow_provider_analytics.output.iceberg import catalog_properties, open_catalog
from tests.reliability.connections import use_connection
from tests.run_context import run_context

if TYPE_CHECKING:
    from pathlib import Path

    from analytics_emulator.server import EmulatorServer
    from pyiceberg.catalog import Catalog

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

DAY = "2024-01-15"


@pytest.fixture
def platform(emulator: EmulatorServer, monkeypatch: pytest.MonkeyPatch) -> EmulatorServer:
    use_connection(monkeypatch, emulator)
    return emulator


def requests_made(admin: EmulatorAdmin) -> int:
    return sum(admin.stats()["requests"].values())


def export(code: str, destination: str, **arguments: Any) -> dict[str, Any]:
    arguments.setdefault("properties", ["distinct_id"])
    operator = CohortExportToParquetOperator(
        task_id="users", cohort_code=code, destination=destination, **arguments
    )
    return operator.execute(run_context(DAY))  # type: ignore[arg-type]


@pytest.mark.usefixtures("platform")
def test_a_code_with_percent_stays_its_own_cohort_in_pyarrow_and_duckdb(
    tmp_path: Path, emulator_admin: EmulatorAdmin
) -> None:
    """``%76ip`` was written as ``cohort_code=%76ip``, which every hive reader decodes to
    ``vip``: its rows merged into the real ``vip``. Escaped as Hive escapes, each stays."""
    sizes = {"vip": 5, "%76ip": 3, "a%2Fb": 2}
    for code, size in sizes.items():
        emulator_admin.define_cohort(quote(code, safe=""), size)
        export(code, f"{tmp_path.as_uri()}/users/")
    read = ds.dataset(tmp_path / "users", format="parquet", partitioning="hive").to_table()
    counts = read.group_by("cohort_code").aggregate([("distinct_id", "count")]).to_pylist()
    assert {row["cohort_code"]: row["distinct_id_count"] for row in counts} == sizes
    pattern = str(tmp_path / "users" / "*" / "*" / "*.parquet")
    rows = duckdb.sql(
        f"select cohort_code, count(*) from read_parquet('{pattern}', hive_partitioning = true) "
        "group by cohort_code"
    ).fetchall()
    assert dict(rows) == sizes


@pytest.mark.usefixtures("platform")
def test_a_code_too_long_in_bytes_is_refused_by_name_before_any_request(
    tmp_path: Path, emulator_admin: EmulatorAdmin
) -> None:
    """90 Chinese characters pass a rule of 100 characters, but their folder name is 282
    bytes: the export made its requests, then failed on "File name too long"."""
    code = "用" * 90
    emulator_admin.define_cohort(quote(code, safe=""), 2)
    before = requests_made(emulator_admin)
    with pytest.raises(AnalyticsValidationError, match="255 bytes") as refused:
        export(code, f"{tmp_path.as_uri()}/users/")
    assert refused.value.field == "cohort_code"
    assert requests_made(emulator_admin) == before
    assert not (tmp_path / "users").exists()


def test_ids_naming_refuses_a_property_named_like_a_partition_column(
    fresh_emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``column_names="ids"``, properties ``cohort_code`` and ``dt`` were written inside
    a ``cohort_code=…/dt=…`` folder, and folder-based readers replaced their values."""
    from airflow_provider_analytics.hooks.analytics import AnalyticsHook
    from tests.emulator_helpers import EmulatorAdmin

    use_connection(monkeypatch, fresh_emulator)
    client = AnalyticsHook().get_conn()
    for name in ("cohort_code", "dt"):
        client.add_user_property(name, "string")
    admin = EmulatorAdmin(fresh_emulator)
    try:
        before = requests_made(admin)
        for name in ("cohort_code", "dt"):
            with pytest.raises(AnalyticsValidationError, match="partition column") as refused:
                export(
                    "cohort_tiny",
                    f"{tmp_path.as_uri()}/users/",
                    properties=["distinct_id", name],
                    column_names="ids",
                )
            assert refused.value.field == "properties"
        assert requests_made(admin) == before
        summary = export(
            "cohort_tiny", f"{tmp_path.as_uri()}/users/", properties=["distinct_id", "dt"]
        )
        assert summary["rows"] == 7  # warehouse naming writes it as dt_
    finally:
        admin.close()


def funnel(request: Any, destination: str) -> dict[str, Any]:
    operator = FunnelReportOperator(task_id="funnel", request=request, destination=destination)
    return operator.execute(run_context(DAY))  # type: ignore[arg-type]


@pytest.mark.usefixtures("platform")
def test_a_dict_and_the_equivalent_typed_request_write_one_report(tmp_path: Path) -> None:
    """The digest was taken over the request as written: ``funnel_1d28…`` for the dict,
    ``funnel_cc9a…`` for the typed request, so a DAG switched to typed requests left the old
    rows beside the new ones."""
    prefix = f"{tmp_path.as_uri()}/reports/"
    written = funnel({"steps": ["event.$startup", "event.purchase"], "crowds": ["$ALL"]}, prefix)
    typed = FunnelRequest(
        steps=[FunnelStep("event.$startup"), FunnelStep("event.purchase")], crowds=["$ALL"]
    )
    assert funnel(typed, prefix)["report_key"] == written["report_key"]
    keys = [path.name for path in (tmp_path / "reports" / "funnel").iterdir()]
    assert keys == [f"report_key={written['report_key']}"]


DATED = {
    "expression": "event.purchase",
    "filter": {
        "relation": "AND",
        "conditions": [
            {
                "expression": "event.purchase.$city",
                "function": "EQ",
                "params": [dt.date(2024, 1, 1)],
            }
        ],
    },
}


@pytest.mark.usefixtures("platform")
@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"steps": ["event.$startup", DATED]}, "steps[1].filter.conditions[0].params[0]"),
        ({"crowds": {"$ALL"}}, "crowds"),
    ],
)
def test_a_date_or_a_set_in_a_report_request_is_named_by_the_requests_check(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    """The digest ran before the request's check: ``TypeError: not JSON serializable``."""
    request = {"steps": ["event.$startup", "event.purchase"], "crowds": ["$ALL"], **change}
    with pytest.raises(AnalyticsValidationError) as refused:
        funnel(request, f"{tmp_path.as_uri()}/reports/")
    assert refused.value.field == field


@pytest.mark.usefixtures("platform")
def test_a_date_object_the_request_accepts_gets_the_key_of_its_text(tmp_path: Path) -> None:
    """A ``datetime.date`` where the request takes one (``fromDate``) is sent as its text, and
    its digest is the text's: it no longer fails with ``TypeError`` in the digest."""
    steps = {"steps": ["event.$startup", "event.purchase"], "crowds": ["$ALL"]}
    prefix = f"{tmp_path.as_uri()}/reports/"
    dated = funnel({**steps, "fromDate": dt.date(2024, 1, 15), "toDate": "2024-01-15"}, prefix)
    assert dated["report_key"] == funnel(steps, prefix)["report_key"]


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Catalog:
    extra = {"uri": f"sqlite:///{tmp_path}/catalog.db", "warehouse": f"file://{tmp_path}/wh"}
    connection = json.dumps({"conn_type": "iceberg", "extra": extra})
    monkeypatch.setenv("AIRFLOW_CONN_ICEBERG_DEFAULT", connection)
    return open_catalog("iceberg_default", catalog_properties(extra=extra))


def earlier_table(catalog: Catalog, identifier: str) -> None:
    """A cohort table as an earlier version wrote it: partitioned by ``dt`` alone."""
    from pyiceberg.schema import Schema
    from pyiceberg.types import DateType, LongType, NestedField

    schema = Schema(
        NestedField(1, "user_id", LongType(), required=False),
        NestedField(2, "dt", DateType(), required=True),
    )
    catalog.create_namespace_if_not_exists(identifier.rpartition(".")[0])
    with (
        catalog.create_table_transaction(identifier, schema=schema) as create,
        create.update_spec() as spec,
    ):
        spec.add_identity("dt")
    arrow_schema = pa.schema([("user_id", pa.int64()), pa.field("dt", pa.date32(), False)])
    rows = {"user_id": [1, 2], "dt": [dt.date(2024, 1, 15)] * 2}
    catalog.load_table(identifier).append(pa.table(rows, schema=arrow_schema))


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        migrate(list(argv))
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error
    return error


@pytest.mark.parametrize(
    "identity",
    ["cohort_code=a/b", "cohort_code=' OR 1=1 --", "cohort_code=a\nb", "cohort_code=" + "x" * 1000],
)
def test_the_migration_refuses_identities_no_operator_could_write(
    lake: Catalog, capsys: pytest.CaptureFixture[str], identity: str
) -> None:
    earlier_table(lake, "analytics.users")
    table = lake.load_table("analytics.users")
    snapshots, columns = len(table.snapshots()), table.schema().column_names
    for dry_run in (["--dry-run"], []):
        assert "cohort_code: " in refused(capsys, *dry_run, "analytics.users", identity)
    table = lake.load_table("analytics.users")
    assert (len(table.snapshots()), table.schema().column_names) == (snapshots, columns)


def test_the_migration_refuses_a_report_key_for_a_cohort_table(
    lake: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier_table(lake, "analytics.users")
    for dry_run in (["--dry-run"], []):
        error = refused(capsys, *dry_run, "analytics.users", "report_key=checkout")
        assert "holds cohorts" in error and "cohort_code=<code>" in error
    assert "report_key" not in lake.load_table("analytics.users").schema().column_names


@pytest.mark.parametrize(
    ("table", "said"),
    [("analytics.missing", "no such table"), ("users", "namespace.table")],
)
def test_the_migration_names_a_missing_table_or_namespace(
    lake: Catalog, capsys: pytest.CaptureFixture[str], table: str, said: str
) -> None:
    assert said in refused(capsys, table, "cohort_code=vip")
