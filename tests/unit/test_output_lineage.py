"""Writing operators: the Asset they declare and the lineage they report."""

from __future__ import annotations

import json

import pytest
from airflow.sdk import Asset

from airflow_provider_analytics.operators.cohort_export import CohortExportToParquetOperator
from airflow_provider_analytics.operators.output import destination_asset
from airflow_provider_analytics.operators.reports import FunnelReportOperator


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


def test_publish_output_and_openlineage_facets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps({"conn_type": "analytics", "host": "https://analytics.example.com:4005"}),
    )
    export = CohortExportToParquetOperator(
        task_id="export", cohort_code="vip", destination="s3://aws@lake/users/"
    )
    events: dict[Asset, _Event] = {export.outlets[0]: _Event()}
    rendered = "s3://aws@lake/users/cohort=vip/dt=2024-01-15/users.parquet"

    class _Path:
        def __str__(self) -> str:
            return rendered

    export.publish_output({"outlet_events": events}, _Path(), rows=42)  # type: ignore[arg-type]
    assert events[export.outlets[0]].extra == {"uri": rendered, "rows": 42}
    lineage = export.get_openlineage_facets_on_complete(None)
    (source,) = lineage.inputs
    (target,) = lineage.outputs
    assert (source.namespace, source.name) == ("https://analytics.example.com:4005", "cohort/vip")
    assert (target.namespace, target.name) == (
        "s3://lake",
        "users/cohort=vip/dt=2024-01-15/users.parquet",
    )


def test_local_output_lineage_namespace_is_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_ANALYTICS_DEFAULT",
        json.dumps({"conn_type": "analytics", "host": "https://analytics.example.com"}),
    )
    report = FunnelReportOperator(task_id="funnel", request={}, destination="file:///data/f/")
    report.written_uri = "file:///data/f/dt=2024-01-15/funnel.parquet"
    lineage = report.get_openlineage_facets_on_complete(None)
    assert lineage.inputs[0].name == "funnel_analysis"
    assert (lineage.outputs[0].namespace, lineage.outputs[0].name) == (
        "file",
        "/data/f/dt=2024-01-15/funnel.parquet",
    )
