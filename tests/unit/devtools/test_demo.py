"""`make demo`'s event totals add up only the measures whose split values add up, and its
list of files explains the empty ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from devtools.demo import empty_note, print_event_totals

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_distinct_user_counts_are_not_summed_over_platforms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events_totals.parquet"
    platforms = ["Android", "iOS"]
    pq.write_table(
        pa.table(
            {
                "by_event_anything_platform": platforms * 3,
                "measure_expression": ["event.$Anything"] * 2
                + ["event.purchase"] * 2
                + ["event.purchase.amount"] * 2,
                "measure_aggregator": [
                    *["TRIGGER_USER_COUNT"] * 2,
                    *["TOTAL_COUNT"] * 2,
                    *["SUM"] * 2,
                ],
                "count": pa.array([57, 55, 6, 5, None, None], pa.int64()),
                "value": pa.array([None, None, None, None, 9587.5, 9291.25], pa.float64()),
            }
        ),
        path,
    )

    print_event_totals(path)
    printed = capsys.readouterr().out

    assert "(all)" not in printed
    assert "112" not in printed  # 57 + 55 distinct users would count a two-platform user twice
    (summary,) = [line for line in printed.splitlines() if "over all split values" in line]
    assert "purchase TOTAL_COUNT 11" in summary
    assert "purchase.amount SUM 18,878.75" in summary
    assert "TRIGGER_USER_COUNT" not in summary


def test_empty_report_files_are_explained_in_one_line() -> None:
    note = empty_note({"funnel_by_value.parquet", "funnel_by_value_totals.parquet"})
    assert "\n" not in note
    assert "not split" in note and "same tables" in note
    assert "unexpectedly empty: users.parquet" in empty_note({"users.parquet"})
