"""Hostile arguments of the cohort export: each refused by name before the first request."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import export_cohort_to_parquet, prepare_export


class NoRequests:
    """A client no request may reach."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a request was made ({name}) before the arguments were checked")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("block_bytes", "1048576"),
        ("block_bytes", 0),
        ("chunk_bytes", 0),  # read no body at all: "0 rows delivered", retried
        ("chunk_bytes", "x"),
        ("max_line_bytes", 0),
        ("max_line_bytes", True),
        ("row_group_bytes", -1),
        ("row_group_bytes", 2**70),
        ("parse_threads", "2"),
        ("parse_threads", 0),
        ("parse_threads", 10**6),  # a block in flight each: the whole cohort held
        ("retry_delay", math.nan),
        ("retry_delay", math.inf),
        ("retry_delay", -1.0),
        ("retry_delay", "2"),
        ("retry_delay", 1e300),  # OverflowError out of time.sleep between attempts
        ("memory_pool", "jemalloc"),
    ],
)
def test_every_setting_is_refused_by_name_before_a_request(field: str, value: Any) -> None:
    settings = dataclasses.replace(ExportSettings(), **{field: value})
    with pytest.raises(AnalyticsValidationError) as refused:
        prepare_export(NoRequests(), "c1", settings=settings)  # type: ignore[arg-type]
    assert refused.value.field == field


def test_settings_that_are_not_export_settings_are_refused_by_name() -> None:
    with pytest.raises(AnalyticsValidationError) as refused:
        prepare_export(NoRequests(), "c1", settings={"attempts": 1})  # type: ignore[arg-type]
    assert refused.value.field == "settings"


@pytest.mark.parametrize(
    "overrides",
    [{None: "string"}, {"": "string"}, ["score"], "score"],
    ids=["None key", "empty key", "list", "text"],
)
def test_schema_overrides_not_keyed_by_names_are_refused_by_name(overrides: Any) -> None:
    """A ``None`` key raised AttributeError, a list TypeError, a text was read as its letters."""
    with pytest.raises(AnalyticsValidationError) as refused:
        prepare_export(NoRequests(), "c1", schema_overrides=overrides)  # type: ignore[arg-type]
    assert refused.value.field == "schema_overrides"


@pytest.mark.parametrize(
    "metadata",
    [{"k": 1}, {1: "v"}, {"k": "\udc00"}, ["k"]],
    ids=["int", "key", "surrogate", "list"],
)
def test_file_metadata_that_is_not_text_is_refused_by_name(metadata: Any, tmp_path: Any) -> None:
    """Each raised TypeError or UnicodeEncodeError once the cohort's count was asked for."""
    with pytest.raises(AnalyticsValidationError) as refused:
        export_cohort_to_parquet(
            NoRequests(),  # type: ignore[arg-type]
            "c1",
            tmp_path / "users.parquet",
            file_metadata=metadata,
        )
    assert refused.value.field == "file_metadata"


@pytest.mark.parametrize("destination", ["users.parquet", None], ids=["text", "None"])
def test_a_destination_that_is_not_a_path_is_refused_by_name(destination: Any) -> None:
    """Text raised a bare AssertionError once the cohort was counted, None AttributeError."""
    with pytest.raises(AnalyticsValidationError) as refused:
        export_cohort_to_parquet(NoRequests(), "c1", destination)  # type: ignore[arg-type]
    assert refused.value.field == "destination"


@pytest.mark.parametrize("value", ["nonsense", 5, None, "Int64"])
def test_a_schema_override_of_no_known_type_is_refused_before_the_plan_is_read(value: Any) -> None:
    """A type name is known without the plan: it was refused only after the plan's listing."""
    with pytest.raises(AnalyticsValidationError, match="is not an Arrow type") as refused:
        prepare_export(NoRequests(), "c1", schema_overrides={"distinct_id": value})  # type: ignore[arg-type]
    assert refused.value.field == "schema_overrides"


@pytest.mark.parametrize("value", ["a b", "", "1st", "tag.vip", "x" * 101, 5])
def test_an_id_property_that_is_no_property_id_is_refused_before_any_request(value: Any) -> None:
    """In ``auto`` mode the property list is not known yet: ``"a b"`` was refused only after
    the plan's listing and the count, once the cohort turned out to need pages."""
    from airflow_provider_analytics.core.identity import cohort_identity
    from airflow_provider_analytics.export.cohort_day import export_cohort_day
    from airflow_provider_analytics.output.parquet_destination import ParquetDestination

    destination = ParquetDestination("file:///tmp/never-written/", cohort_identity("c1"))
    with pytest.raises(AnalyticsValidationError) as refused:
        export_cohort_day(NoRequests(), "c1", destination, "2024-01-15", id_property=value)  # type: ignore[arg-type]
    assert refused.value.field == "id_property"
