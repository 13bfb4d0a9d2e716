"""Rendered destinations and partition values: nothing climbs out of its prefix."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client import AnalyticsValidationError
from airflow_provider_analytics.operators.paths import output_path

PREFIX = "file:///data/analytics/users/"


@pytest.mark.parametrize(
    "destination",
    [
        "file:///etc/",
        "file:///etc/cron.d/job",
        "/usr/lib/x/",
        "local:///proc/self/",
        "file:///data/../etc/",
        "file:///data/./x/",
        "s3://aws@bucket/a/../../b/",
        "file:///data/a\\..\\b/",
        "file:///data/\x00/",
        "",
    ],
)
def test_destinations_that_escape_or_point_into_the_system_are_refused(destination: str) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        output_path(destination, {"dt": "2024-01-15"}, "x.parquet")
    assert caught.value.field == "destination"


@pytest.mark.parametrize(
    "destination",
    ["file:///data/out/", "/srv/etc/", "s3://aws@bucket/etc/", "file:///data/out/x..y.parquet"],
)
def test_ordinary_destinations_are_accepted(destination: str) -> None:
    path = output_path(destination, {"dt": "2024-01-15"}, "x.parquet")
    assert str(path).endswith(("x.parquet", "x..y.parquet"))


@pytest.mark.parametrize("value", ["..", "a/b", "a\\b", "a=b", " a", "a\n", "", "x..y"])
def test_partition_values_that_would_add_or_climb_a_level_are_refused(value: str) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        output_path(PREFIX, {"cohort": value, "dt": "2024-01-15"}, "users.parquet")
    assert caught.value.field == "cohort"


@settings(max_examples=100)
@given(st.text(min_size=1, max_size=30))
def test_whatever_a_partition_value_is_the_object_stays_one_level_below(value: str) -> None:
    """Property, judged by posixpath independently: accepted values never leave the prefix."""
    try:
        path = output_path(PREFIX, {"cohort": value}, "users.parquet")
    except AnalyticsValidationError as error:
        assert error.field == "cohort"
        return
    local = str(path).removeprefix("file://")
    assert posixpath.dirname(posixpath.normpath(local)) == posixpath.normpath(
        f"/data/analytics/users/cohort={value}"
    )
    assert posixpath.normpath(local).startswith("/data/analytics/users/cohort=")
