"""The rule that reads reportUpdateTime against the answer's Date header."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_analytics.core.report_dates import sent_at
from airflow_provider_analytics.reports.unset_timezone import CLOCK_TOLERANCE, clock_lead

SENT = dt.datetime(2024, 5, 1, 8, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Wed, 01 May 2024 08:00:00 GMT", SENT),
        ("Wed, 01 May 2024 16:00:00 +0800", SENT),  # another offset, the same moment
        ("Wed, 01 May 2024 08:00:00 -0000", SENT),  # no zone given: UTC by the RFC
        ("yesterday at noon", None),
        ("", None),
        (None, None),
        ("Fri, 31 Dec 9999 23:00:00 -0200", None),  # year 10000 in UTC: OverflowError escaped
        ("Wed, 01 May 99999999999999999999 08:00:01 GMT", None),  # so did a year beyond C long
    ],
)
def test_the_date_header_is_read_as_a_utc_moment_or_not_at_all(
    header: str | None, expected: dt.datetime | None
) -> None:
    assert sent_at(header) == expected


def test_a_lead_beyond_the_tolerance_is_evidence_and_nothing_else_is() -> None:
    at_tolerance = (SENT + CLOCK_TOLERANCE).strftime("%Y-%m-%d %H:%M:%S")
    past_it = (SENT + CLOCK_TOLERANCE + dt.timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S")
    assert clock_lead(at_tolerance, SENT) is None
    found = clock_lead(past_it, SENT)
    assert found is not None and found.lead == CLOCK_TOLERANCE + dt.timedelta(seconds=1)
    assert found.rounded == "+00:15"
    assert clock_lead("2024-05-01 03:00:00", SENT) is None  # earlier: cached, or west of UTC
    assert clock_lead("2024-05-01 16:00:00", None) is None  # no Date: no evidence
    assert clock_lead("1 May 2024, 4 pm", SENT) is None  # in no accepted form
    assert clock_lead(None, SENT) is None and clock_lead(1714550400, SENT) is None


@pytest.mark.parametrize(
    ("written", "rounded"),
    [
        ("2024-05-01 15:59:58", "+08:00"),  # a fresh report, sent two seconds later
        ("2024-05-01 13:44:30", "+05:45"),
        ("2024-05-02 00:00:00", "+16:00"),  # past any real zone: still only reported
    ],
)
def test_the_lead_is_told_to_the_nearest_quarter_hour(written: str, rounded: str) -> None:
    found = clock_lead(written, SENT)
    assert found is not None and found.rounded == rounded
