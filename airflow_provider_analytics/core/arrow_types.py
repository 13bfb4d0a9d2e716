"""What an Arrow type holds, for the rules that treat text apart: the decoder's UTF-8 check and
masked markers, and the Parquet writer's dictionary encoding."""

from __future__ import annotations

import pyarrow as pa


def is_text(arrow_type: pa.DataType) -> bool:
    """Whether Arrow reads a column of ``arrow_type`` as text (a marker is then its text)."""
    return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)


def holds_text(arrow_type: pa.DataType) -> bool:
    """Whether a column of ``arrow_type`` holds text, in a list or not (its bytes are checked
    to be UTF-8 after Arrow's parser, which copies them as they are)."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return holds_text(arrow_type.value_type)
    return is_text(arrow_type)


def wall_clock_in(naive: pa.Array | pa.ChunkedArray, zone: str) -> pa.Array | pa.ChunkedArray:
    """Naive wall-clock times read in ``zone`` (the export's datetimes, the reports' times):
    one a clock change repeats is the earlier instant, one it skips the transition, so a
    clock change never fails a run (Arrow's "earliest" for a skipped time is the microsecond
    before the transition, a time of the day before)."""
    import pyarrow.compute as pc

    return pc.assume_timezone(naive, zone, ambiguous="earliest", nonexistent="latest")
