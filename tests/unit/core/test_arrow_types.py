"""Which Arrow types hold text: the decoder checks their bytes as UTF-8 and reads masked markers
as text, the Parquet writer dictionary-encodes them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.arrow_types import holds_text, is_text, wall_clock_in


@pytest.mark.parametrize(
    ("arrow_type", "text", "holds"),
    [
        (pa.string(), True, True),
        (pa.large_string(), True, True),
        (pa.list_(pa.string()), False, True),
        (pa.large_list(pa.large_string()), False, True),
        (pa.list_(pa.list_(pa.string())), False, True),
        (pa.binary(), False, False),
        (pa.int64(), False, False),
        (pa.list_(pa.float64()), False, False),
        (pa.dictionary(pa.int32(), pa.string()), False, False),
    ],
)
def test_text_and_lists_of_text_are_told_apart(
    arrow_type: pa.DataType, text: bool, holds: bool
) -> None:
    assert is_text(arrow_type) is text
    assert holds_text(arrow_type) is holds


def test_wall_clock_times_a_clock_change_skips_are_the_transition_and_repeated_ones_earlier() -> (
    None
):
    """A skipped time was read as the microsecond before the transition: a time of the day
    before (midnight skipped in Santiago on 2024-09-08 read as 23:59:59.999999 on 09-07)."""
    import datetime as dt

    utc = dt.UTC

    def instants(zone: str, *times: dt.datetime) -> list[dt.datetime]:
        naive = pa.array(list(times), pa.timestamp("us"))
        return [t.astimezone(utc) for t in wall_clock_in(naive, zone).to_pylist()]

    # skipped: Santiago's midnight (UTC-4 from 04:00Z), New York's 02:00-03:00 (EDT from 07:00Z)
    assert instants("America/Santiago", dt.datetime(2024, 9, 8)) == [
        dt.datetime(2024, 9, 8, 4, tzinfo=utc)
    ]
    assert instants("America/New_York", dt.datetime(2024, 3, 10, 2, 30)) == [
        dt.datetime(2024, 3, 10, 7, tzinfo=utc)
    ]
    # repeated: Berlin's 02:30 on 2024-10-27 is first read in summer time (UTC+2)
    assert instants("Europe/Berlin", dt.datetime(2024, 10, 27, 2, 30)) == [
        dt.datetime(2024, 10, 27, 0, 30, tzinfo=utc)
    ]
