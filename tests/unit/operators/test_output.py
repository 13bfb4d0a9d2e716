"""Writing operators: the Asset they declare and the lineage they report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from airflow.sdk import Asset, ObjectStoragePath

from airflow_provider_analytics.core.identity import Identity, cohort_identity
from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.output import destination_asset
from airflow_provider_analytics.operators.reports import FunnelReportOperator
from airflow_provider_analytics.output.destination import LineageTarget, object_target

KEY = Identity("report_key", "checkout")


@pytest.mark.parametrize(
    ("destination", "uri"),
    [
        ("file:///data/analytics/cohort_users/", "file:///data/analytics/cohort_users/"),
        ("/data/analytics/funnel/", "file:///data/analytics/funnel/"),
        ("s3://aws_default@lake/analytics/users/", "s3://lake/analytics/users/"),
        ("s3://lake/a/cohort=vip/dt={{ ds }}/users.parquet", "s3://lake/a/cohort=vip/"),
        ("file:///data/{{ params.team }}/out.parquet", "file:///data/"),
    ],
)
def test_asset_is_the_untemplated_prefix_without_connection_id(destination: str, uri: str) -> None:
    asset = destination_asset(destination)
    assert asset is not None
    assert asset.name == uri
    assert asset.uri == uri.rstrip("/")


def test_no_asset_without_a_static_location() -> None:
    assert destination_asset("{{ var.value.target }}") is None
    assert destination_asset("relative/path/") is None


def test_operators_declare_their_asset_unless_outlets_are_given() -> None:
    export = CohortExportToParquetOperator(
        task_id="export", cohort_code="vip", destination="s3://aws@lake/users/"
    )
    assert export.outlets == [Asset(uri="s3://lake/users/", name="s3://lake/users/")]
    custom = Asset(uri="s3://lake/custom", name="custom")
    report = FunnelReportOperator(
        task_id="funnel", request={}, destination="file:///x/", outlets=[custom]
    )
    assert report.outlets == [custom]


class _Event:
    extra: dict | None = None


@pytest.fixture
def analytics_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps({"conn_type": "analytics", "host": "https://analytics.example.com:4005"}),
    )


@pytest.mark.usefixtures("analytics_connection")
def test_asset_event_names_the_object_and_lineage_its_bucket_and_key() -> None:
    export = CohortExportToParquetOperator(
        task_id="export", cohort_code="vip", destination="s3://aws@lake/users/"
    )
    events: dict[Asset, _Event] = {export.outlets[0]: _Event()}
    rendered = "s3://aws@lake/users/cohort_code=vip/dt=2024-01-15/users.parquet"
    destination = export.output_destination(cohort_identity("vip"))

    export.publish_output(
        {"outlet_events": events},  # type: ignore[arg-type]
        destination,
        ["2024-01-15"],
        ["users"],
        rows=42,
    )
    # the event keeps the connection id: a consumer opens the object with it
    assert events[export.outlets[0]].extra == {"uri": rendered, "day": "2024-01-15", "rows": 42}
    lineage = export.get_openlineage_facets_on_complete(None)
    (source,) = lineage.inputs
    (target,) = lineage.outputs
    assert (source.namespace, source.name) == ("https://analytics.example.com:4005", "cohort/vip")
    assert (target.namespace, target.name) == (
        "s3://lake",
        "users/cohort_code=vip/dt=2024-01-15/users.parquet",
    )


def test_object_target_matches_airflows_file_transfer_naming() -> None:
    """Airflow's own FileTransferOperator names a local object ``file`` + its key, and an
    object in a bucket ``<scheme>://<bucket>`` + its key: the same object gets the same name
    whichever operator touches it."""
    local = ObjectStoragePath("file:///data/f/dt=2024-01-15/funnel.parquet")
    assert object_target(local) == LineageTarget("file", "data/f/dt=2024-01-15/funnel.parquet")
    plain = ObjectStoragePath("/data/f/funnel.parquet")
    assert object_target(plain) == LineageTarget("file", "data/f/funnel.parquet")


@pytest.mark.usefixtures("analytics_connection")
def test_report_lineage_names_every_table_written(tmp_path: Path) -> None:
    report = FunnelReportOperator(task_id="funnel", request={}, destination=f"file://{tmp_path}/f/")
    destination = report.output_destination(KEY)
    tables = ("funnel", "funnel_totals", "funnel_by_value", "funnel_by_value_totals")
    uri = destination.uri("2024-01-15", tables)
    written = destination.lineage(["2024-01-15"], tables)
    assert uri == f"file://{tmp_path}/f/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet"
    key = str(tmp_path).lstrip("/")
    assert written == [
        LineageTarget("file", f"{key}/f/{table}/report_key=checkout/dt=2024-01-15/{table}.parquet")
        for table in tables
    ]
    # a look-back run writes, and names, every day's objects
    looked_back = destination.lineage(["2024-01-14", "2024-01-15"], tables)
    assert looked_back == [
        LineageTarget("file", f"{key}/f/{table}/report_key=checkout/dt={day}/{table}.parquet")
        for day in ("2024-01-14", "2024-01-15")
        for table in tables
    ]
    report.written = dict.fromkeys(written, ())
    lineage = report.get_openlineage_facets_on_complete(None)
    assert lineage.inputs[0].name == "funnel_analysis"
    assert [(o.namespace, o.name) for o in lineage.outputs] == [
        (t.namespace, t.name) for t in written
    ]


@pytest.mark.usefixtures("analytics_connection")
def test_iceberg_lineage_names_the_catalog_and_each_table() -> None:
    report = FunnelReportOperator(
        task_id="funnel", request={}, iceberg_table="lake.funnel", iceberg_conn_id="lakehouse"
    )
    destination = report.output_destination(KEY)
    assert destination.lineage(["2024-01-15"], ["funnel", "funnel_totals"]) == [
        LineageTarget("iceberg://lakehouse", "lake.funnel"),
        LineageTarget("iceberg://lakehouse", "lake.funnel_totals"),
    ]
    assert destination.uri("2024-01-15", ["funnel"]) == "iceberg://lakehouse/lake/funnel"


class _Run:
    def __init__(self, partition_key: str | None) -> None:
        self.partition_key = partition_key


@pytest.mark.usefixtures("analytics_connection")
@pytest.mark.parametrize(
    ("partition_outputs", "run_key", "keys"),
    [
        (None, None, set()),  # a plain run: no partition, consumers on the plain asset run
        (None, "2024-01-15T00:00:00", {"2024-01-15"}),  # a partitioned run: the day is the key
        (True, None, {"2024-01-15"}),  # asked for (a run started by a data-ready event)
        (False, "2024-01-15", set()),
    ],
)
def test_every_asset_event_names_its_day_and_identity_and_partitions_by_day(
    partition_outputs: bool | None, run_key: str | None, keys: set[str]
) -> None:
    from airflow.sdk.execution_time.context import OutletEventAccessors

    report = FunnelReportOperator(
        task_id="funnel",
        request={},
        destination="file:///x/f/",
        report_key="checkout",
        partition_outputs=partition_outputs,
    )
    events = OutletEventAccessors()
    tables = ["funnel", "funnel_totals"]
    report.publish_output(
        {"outlet_events": events, "dag_run": _Run(run_key)},  # type: ignore[arg-type]
        report.output_destination(KEY),
        ["2024-01-14", "2024-01-15"],  # a look-back day, then the run's own
        tables,
        report_key="checkout",
    )
    event = events[report.outlets[0]]
    assert event.extra == {
        "uri": "file:///x/f/funnel/report_key=checkout/dt=2024-01-15/funnel.parquet",
        "day": "2024-01-15",
        "report_key": "checkout",
    }
    assert event.partition_keys == keys


def test_partition_outputs_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="partition_outputs"):
        CohortExportToParquetOperator(
            task_id="export", cohort_code="vip", destination="file:///x/", partition_outputs="yes"
        )


# --- lineage to the column, from a real export and report against the emulator ----------------

EXPORTED = ["distinct_id", "$city", "phone", "income", "tag.tag_rfm"]
"""Plain, preset, masked (the emulator's plan masks ``phone`` and ``income``) and tag columns."""
WRITTEN = {
    "distinct_id": "distinct_id",
    "city": "$city",
    "phone": "phone",
    "income": "income",
    "tag_tag_rfm": "tag.tag_rfm",
}
"""Each written column and the platform property it holds."""


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Airflow's hook lineage collector, as it is when a lineage reader (OpenLineage) is on."""
    from airflow.sdk import lineage

    collected = lineage.HookLineageCollector()
    monkeypatch.setattr(lineage, "get_hook_lineage_collector", lambda: collected)
    return collected


def _input_fields(dataset: Any) -> dict[str, list[tuple[str, str, str, bool | None]]]:
    facet = dataset.facets["columnLineage"]
    return {
        column: [
            (f.namespace, f.name, f.field, f.transformations[0].masking) for f in fields.inputFields
        ]
        for column, fields in facet.fields.items()
    }


@pytest.mark.parametrize("mode", ["stream", "pages"])
def test_column_lineage_of_an_export_names_every_columns_property(
    analytics_emulator: Any, tmp_path: Path, collector: Any, mode: str
) -> None:
    from tests.run_context import run_context

    export = CohortExportToParquetOperator(
        task_id="export",
        cohort_code="cohort_small",
        destination=f"file://{tmp_path}/users/",
        properties=EXPORTED,
        mode=mode,
    )
    summary = export.execute(run_context("2024-01-15"))  # type: ignore[arg-type]
    written = pq.read_table(tmp_path / "users/cohort_code=cohort_small/dt=2024-01-15/users.parquet")
    assert written.column_names == list(WRITTEN)
    assert summary["column_ids"] == WRITTEN  # in the XCom too, streamed or read in pages

    base_url = analytics_emulator.base_url.rstrip("/")
    lineage = export.get_openlineage_facets_on_complete(None)
    (source,) = lineage.inputs
    (target,) = lineage.outputs
    assert (source.namespace, source.name) == (base_url, "cohort/cohort_small")
    key = f"{str(tmp_path).lstrip('/')}/users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    assert (target.namespace, target.name) == ("file", key)
    # every written column names the one platform property it holds; masked ones are marked
    masked = {"phone", "income"}
    assert _input_fields(target) == {
        column: [(base_url, "cohort/cohort_small", property_id, column in masked)]
        for column, property_id in WRITTEN.items()
    }
    kinds = {c: f.transformationType for c, f in target.facets["columnLineage"].fields.items()}
    assert kinds == {c: "MASKED" if c in masked else "IDENTITY" for c in WRITTEN}
    tags = {(t.key, t.value, t.field) for t in target.facets["tags"].tags}
    assert tags == {("personal_data", "masked", column) for column in masked}
    assert {(t.key, t.value, t.field) for t in source.facets["tags"].tags} == tags

    # Airflow's hook lineage: the platform read and the object written, with the same origins
    # (ObjectStoragePath reports what it reads itself: the staging parts of a paged export)
    assets = collector.collected_assets
    assert [a.asset for a in assets.inputs if a.context is export.hook] == [
        Asset(uri=f"{base_url}/cohort/cohort_small", extra={"personal_data": ["income", "phone"]})
    ]
    (output,) = [a.asset for a in assets.outputs if a.context is export.hook]
    # the hidden temporaries and staging parts are written unheard: no output but the object
    assert {a.asset.uri for a in assets.outputs} == {output.uri}
    assert (
        output.uri
        == f"file://{tmp_path}/users/cohort_code=cohort_small/dt=2024-01-15/users.parquet"
    )
    assert output.extra == {
        "columns": {column: [property_id] for column, property_id in WRITTEN.items()},
        "personal_data": ["phone", "income"],
    }


def test_column_lineage_of_a_report_names_its_steps_and_split_field(
    analytics_emulator: Any, tmp_path: Path, collector: Any
) -> None:
    from tests.run_context import run_context

    steps = ["event.$startup", "event.search", "event.purchase"]
    report = FunnelReportOperator(
        task_id="funnel",
        request={
            "steps": [{"expression": step} for step in steps],
            "crowds": ["$ALL"],
            "byField": {"expression": "user.$city"},
        },
        destination=f"file://{tmp_path}/f/",
        report_key="checkout",
    )
    report.execute(run_context("2024-01-15"))  # type: ignore[arg-type]
    lineage = report.get_openlineage_facets_on_complete(None)
    assert len(lineage.outputs) == 4
    base_url = analytics_emulator.base_url.rstrip("/")
    figures = {"step_number", "step_expression", "step_event", "converted_users"}
    figures |= {"conversion_rate", "completion_rate", "median_seconds_to_next"}
    for target in lineage.outputs:
        assert pq.read_table(f"/{target.name}").num_rows > 0
        columns = _input_fields(target)
        split = {"by_field", "by_value"} if "by_value" in target.name else set()
        assert set(columns) == figures | split, target.name
        for column in figures:
            assert columns[column] == [(base_url, "funnel_analysis", step, False) for step in steps]
        for column in split:
            assert columns[column] == [(base_url, "funnel_analysis", "user.$city", False)]
    written = [a.asset.uri for a in collector.collected_assets.outputs if a.context is report.hook]
    assert len(written) == 4 and all(uri.startswith(f"file://{tmp_path}/f/") for uri in written)
