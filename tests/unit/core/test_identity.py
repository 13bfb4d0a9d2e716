"""What a table holds: cohort and report identities, and the report key's digest."""

from __future__ import annotations

import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.core.identity import (
    Identity,
    cohort_identity,
    report_identity,
)

STEPS = [{"expression": "event.$startup", "filter": None}]


def test_a_cohort_is_named_by_its_code() -> None:
    assert str(cohort_identity("vip")) == "cohort_code=vip"
    assert Identity.parse("cohort_code=vip") == cohort_identity("vip")


@pytest.mark.parametrize("text", ["vip", "cohort=vip", "cohort_code=", "=x", "dt=2024-01-01"])
def test_only_the_two_identity_columns_parse(text: str) -> None:
    assert Identity.parse(text) is None


def test_the_digest_ignores_the_dates_and_the_key_order() -> None:
    one = report_identity("funnel", {"steps": STEPS, "crowds": ["$ALL"], "fromDate": "2024-01-01"})
    other = report_identity("funnel", {"toDate": "2024-02-01", "crowds": ["$ALL"], "steps": STEPS})
    assert one == other
    assert one.column == "report_key"
    assert one.value.startswith("funnel_") and len(one.value) == len("funnel_") + 12


def test_any_other_value_changes_the_digest() -> None:
    base = {"steps": STEPS, "crowds": ["$ALL"]}
    changed = [
        {**base, "crowds": ["vip"]},
        {**base, "steps": [*STEPS, {"expression": "event.purchase", "filter": None}]},
        {**base, "convertTime": 1},
    ]
    keys = {report_identity("funnel", body).value for body in [base, *changed]}
    assert len(keys) == 4
    assert report_identity("events", base).value != report_identity("funnel", base).value


def test_a_given_key_is_kept() -> None:
    assert report_identity("funnel", {}, "checkout.v2").value == "checkout.v2"


@pytest.mark.parametrize("key", ["", "-x", "a/b", "a b", "a=b", "x" * 65, 7, "ключ"])
def test_a_key_outside_the_rule_is_refused_by_name(key: object) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        report_identity("funnel", {}, key)
    assert caught.value.field == "report_key"
