"""Which Arrow types hold text: the decoder checks their bytes as UTF-8 and reads masked markers
as text, the Parquet writer dictionary-encodes them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.arrow_types import holds_text, is_text


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
