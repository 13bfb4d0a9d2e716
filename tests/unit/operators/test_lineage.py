"""Where each written column comes from (operators/lineage.py), read from an export's summary
and from a report's request, checked against what the test writes down by hand."""

from __future__ import annotations

from airflow_provider_analytics.operators.lineage import (
    ColumnOrigin,
    export_origins,
    report_origins,
)
from airflow_provider_analytics.reports.job import EVENTS, FUNNEL


def test_an_export_column_holds_its_property_and_a_masked_one_says_so() -> None:
    summary = {
        "column_ids": {"city": "$city", "tag_vip": "tag.vip", "distinct_id": "distinct_id"},
        "column_origins": {"city": "plan", "tag_vip": "masked", "distinct_id": "plan"},
    }

    assert export_origins(summary) == (
        ColumnOrigin("city", ("$city",)),
        ColumnOrigin("tag_vip", ("tag.vip",), masked=True),
        ColumnOrigin("distinct_id", ("distinct_id",)),
    )
    assert export_origins({}) == ()


def test_a_funnel_tables_computed_columns_come_from_its_steps_and_split() -> None:
    request = {
        "steps": [{"expression": "event.search"}, {"expression": "event.purchase"}],
        "byField": {"expression": "event.$Anything.$platform"},
        "crowds": ["$ALL"],
        "convertTime": 1,
        "convertTimeUnit": "DAY",
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
    }
    origins = report_origins(FUNNEL, request)

    steps = ("event.search", "event.purchase")
    every = [origin for table in origins.values() for origin in table]
    assert every, "no computed column was traced"
    assert {origin.how for origin in every} == {"AGGREGATION"}
    assert {origin.fields for origin in every} <= {steps, ("event.$Anything.$platform",)}
    assert any(origin.fields == ("event.$Anything.$platform",) for origin in every)


def test_an_event_tables_computed_columns_come_from_its_measures() -> None:
    request = {
        "measures": [{"expression": "event.purchase", "aggregator": "TOTAL_COUNT"}],
        "crowds": ["$ALL"],
        "fromDate": "2024-01-01",
        "toDate": "2024-01-02",
        "unit": "DAY",
    }
    origins = report_origins(EVENTS, request)

    every = [origin for table in origins.values() for origin in table]
    assert every
    assert {origin.fields for origin in every} == {("TOTAL_COUNT(event.purchase)",)}


def test_names_that_differ_only_after_a_hash_or_question_mark_stay_apart() -> None:
    """Airflow drops a URI's fragment and query: cohorts ``vip#2024`` and ``vip#2025``, tables
    ``lake.t#1`` and ``lake.t#2`` and the prefix ``a#b/`` became ``vip``, ``lake/t`` and ``a``."""
    from airflow.sdk import Asset

    from airflow_provider_analytics.operators.lineage import target_uri
    from airflow_provider_analytics.operators.output import destination_asset
    from airflow_provider_analytics.output.destination import LineageTarget, iceberg_table_uri

    sources = [
        target_uri(LineageTarget("https://analytics.example.com", f"cohort/{code}"))
        for code in ("vip#2024", "vip#2025", "vip?x", "vip", "vip 2024", "vip%202024")
    ]
    tables = [iceberg_table_uri("lake", name) for name in ("db.t#1", "db.t#2", "db.t")]
    objects = [
        target_uri(LineageTarget("s3://bucket", key))
        for key in ("a#b/dt=2024-01-15/users.parquet", "a/dt=2024-01-15/users.parquet")
    ]
    for uris in (sources, tables, objects):
        assets = {Asset(uri).uri for uri in uris}
        assert len(assets) == len(uris), uris
    assert tables[0] == "iceberg://lake/db/t%231"
    assert objects[0] == "s3://bucket/a%23b/dt=2024-01-15/users.parquet"
    asset = destination_asset("s3://conn@bucket/a#b/{{ ds }}/users.parquet")
    assert asset is not None and asset.uri == "s3://bucket/a%23b"
