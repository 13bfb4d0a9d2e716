"""The cohort export's ``column_names`` against the emulator over real HTTP, and the client's
rules applied once per export and per report."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
from airflow.sdk import ObjectStoragePath
from analytics_emulator import catalog

from airflow_provider_analytics.client import (
    AnalyticsClient,
    AnalyticsValidationError,
    FunnelRequest,
)
from airflow_provider_analytics.client.validation import CohortQuery
from airflow_provider_analytics.export.stream import export_cohort_to_parquet
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.reports.job import FUNNEL, run_report
from tests.reliability.connections import use_connection

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa
    from analytics_emulator.server import EmulatorServer

    from tests.emulator_helpers import EmulatorAdmin

pytestmark = pytest.mark.integration

PROPERTIES = ["distinct_id", "$city", "age", "tag.tag_rfm", "tag_lifecycle"]


def target(tmp_path: Path, name: str = "users.parquet") -> ObjectStoragePath:
    return ObjectStoragePath((tmp_path / name).as_uri())


def export(client: AnalyticsClient, path: ObjectStoragePath, **kwargs: Any) -> Any:
    kwargs.setdefault("timezone", catalog.PROJECT_TIMEZONE)
    return export_cohort_to_parquet(client, "cohort_small", path, **kwargs)


def sent(admin: EmulatorAdmin) -> dict[str, int]:
    return {name: count for name, count in admin.stats()["requests"].items() if count}


def test_warehouse_names_hold_the_same_data_and_keep_each_id(
    client: AnalyticsClient, tmp_path: Path
) -> None:
    by_id = export(
        client, target(tmp_path, "ids.parquet"), properties=PROPERTIES, column_names="ids"
    )
    by_name = export(
        client,
        target(tmp_path, "names.parquet"),
        properties=PROPERTIES,
        column_names="warehouse",
    )
    names = ["distinct_id", "city", "age", "tag_tag_rfm", "tag_tag_lifecycle"]
    ids = ["distinct_id", "$city", "age", "tag.tag_rfm", "tag.tag_lifecycle"]
    assert by_id.columns == ids
    assert by_name.columns == names
    assert by_name.column_ids == dict(zip(names, ids, strict=True))
    assert list(by_name.column_origins) == names
    assert by_name.column_origins["tag_tag_lifecycle"] == "tag"

    written = pq.read_table(tmp_path / "names.parquet")
    original = pq.read_table(tmp_path / "ids.parquet")
    assert written.column_names == names
    assert [f.metadata[b"analytics.id"].decode() for f in written.schema] == ids
    assert [f.metadata[b"analytics.id"].decode() for f in original.schema] == ids
    assert written.num_rows == original.num_rows == 1000
    assert written.rename_columns(ids).to_pylist() == original.to_pylist()


def refusal(
    client: AnalyticsClient, admin: EmulatorAdmin, tmp_path: Path, **kwargs: Any
) -> tuple[AnalyticsValidationError, dict[str, int]]:
    """Run an export that must be refused: the error, and the requests made before it."""
    before = sent(admin)
    with pytest.raises(AnalyticsValidationError) as caught:
        export(client, target(tmp_path), **kwargs)
    after = sent(admin)
    assert not list(tmp_path.iterdir())
    asked = {name: after[name] - before.get(name, 0) for name in after}
    return caught.value, {name: count for name, count in asked.items() if count}


def test_a_collision_in_the_given_properties_is_refused_before_any_request(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    error, asked = refusal(
        client,
        emulator_admin,
        tmp_path,
        properties=["distinct_id", "$city", "city"],
        column_names="warehouse",
    )
    assert error.field == "properties"
    assert "'$city' and 'city' would share the column name 'city'" in str(error)
    assert asked == {}


def test_a_collision_among_the_plans_columns_is_refused_after_the_plan_alone(
    client: AnalyticsClient, emulator_admin: EmulatorAdmin, tmp_path: Path
) -> None:
    client.add_user_property("city", "string", name="City (own)")
    error, asked = refusal(client, emulator_admin, tmp_path, column_names="warehouse")
    assert "'$city' and 'city'" in str(error)
    assert asked == {"list_user_properties": 1}
    # with the ids, the same plan exports both columns
    result = export(client, target(tmp_path), limit=5, column_names="ids")
    assert {"$city", "city"} <= set(result.columns)


@pytest.mark.parametrize(
    ("settings", "message", "asked"),
    [
        pytest.param(
            {
                "schema_overrides": {"$city": "string", "city": "boolean"},
                "column_names": "warehouse",
            },
            "'$city' and 'city' both name the column '$city'",
            {},
            id="an id and its file name, before any request",
        ),
        pytest.param(
            {
                "properties": PROPERTIES,
                "schema_overrides": {"tag.tag_rfm": "string", "tag_rfm": "boolean"},
            },
            "'tag.tag_rfm' and 'tag_rfm' both name the column 'tag.tag_rfm'",
            {"list_user_properties": 1},
            id="a tag and its bare code, after the plan alone",
        ),
    ],
)
def test_overrides_naming_one_column_twice_are_refused(
    client: AnalyticsClient,
    emulator_admin: EmulatorAdmin,
    tmp_path: Path,
    settings: dict[str, Any],
    message: str,
    asked: dict[str, int],
) -> None:
    error, made = refusal(client, emulator_admin, tmp_path, **settings)
    assert error.field == "schema_overrides"
    assert message in str(error)
    assert made == asked


def test_operator_renders_column_names(
    emulator: EmulatorServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_connection(monkeypatch, emulator, timezone=catalog.PROJECT_TIMEZONE)
    operator = CohortExportToParquetOperator(
        task_id="users",
        cohort_code="cohort_small",
        destination=f"{tmp_path.as_uri()}/",
        properties=["$city", "tag.tag_rfm"],
        limit=7,
        column_names="{{ params.naming }}",
    )
    start = dt.datetime(2024, 1, 15, tzinfo=dt.UTC)
    context: dict[str, Any] = {
        "ds": "2024-01-15",
        "logical_date": start,
        "data_interval_start": start,
        "data_interval_end": start + dt.timedelta(days=1),
        "params": {"naming": "warehouse"},
        "outlet_events": defaultdict(lambda: SimpleNamespace(extra=None)),
    }
    operator.render_template_fields(context)  # type: ignore[arg-type]
    assert operator.column_names == "warehouse"
    result = operator.execute(context)  # type: ignore[arg-type]
    assert result["columns"] == ["city", "tag_tag_rfm"]
    assert result["column_ids"] == {"city": "$city", "tag_tag_rfm": "tag.tag_rfm"}
    written = pq.read_table(
        tmp_path / "cohort_code=cohort_small" / "dt=2024-01-15" / "users.parquet"
    )
    assert written.column_names == ["city", "tag_tag_rfm"]
    assert written.num_rows == 7


def test_an_export_checks_its_query_once(
    client: AnalyticsClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query is checked when it is made; the smaller query that sizes the cohort is a
    part of it, and the client sends both as they are."""
    made: list[Any] = []
    original = CohortQuery.__init__

    def counted(self: CohortQuery, *args: Any, **kwargs: Any) -> None:
        made.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(CohortQuery, "__init__", counted)
    result = export(client, target(tmp_path), properties=["distinct_id", "$city"], limit=20)
    assert result.rows == 20
    assert len(made) == 1


def test_a_report_checks_its_request_once_for_all_its_windows(
    client: AnalyticsClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    checks: list[Any] = []
    original = FunnelRequest.model_validate

    def counted(cls: type[FunnelRequest], obj: Any, **kwargs: Any) -> FunnelRequest:
        checks.append(obj)
        return original(obj, **kwargs)

    monkeypatch.setattr(FunnelRequest, "model_validate", classmethod(counted))
    request = {
        "steps": [{"expression": "event.$startup"}, {"expression": "event.purchase"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-03",
    }

    class _Tables:
        def write_table(self, name: str, table: pa.Table) -> dict[str, Any]:
            return {"uri": name, "rows": table.num_rows}

    result = run_report(FUNNEL, client, request, _Tables(), window_days=1)
    assert result.windows == 3
    assert len(checks) == 1
