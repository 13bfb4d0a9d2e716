"""Masked markers in typed columns written as null before Arrow parses a block
(export/typed_markers.py)."""

from __future__ import annotations

import json

import pyarrow as pa

from airflow_provider_analytics.export.schema import MASKED_MARKER
from airflow_provider_analytics.export.typed_markers import TypedMarkers

SCHEMA = pa.schema([("age", pa.int64()), ("city", pa.string()), ("vip", pa.bool_())])
MARKER = json.dumps(MASKED_MARKER, ensure_ascii=False)


def test_markers_of_typed_columns_become_null_and_text_columns_keep_theirs() -> None:
    block = (
        f'{{"age": {MARKER}, "city": {MARKER}, "vip":{MARKER}}}\n{{"age": 3, "city": "x"}}\n'
    ).encode()
    nulled, count = TypedMarkers(SCHEMA).null(block)
    assert count == 2
    assert [json.loads(line) for line in nulled.decode().splitlines()] == [
        {"age": None, "city": MASKED_MARKER, "vip": None},
        {"age": 3, "city": "x"},
    ]


def test_a_block_whose_match_may_end_a_longer_key_is_left_alone() -> None:
    """``"x\\"age": "(已脱敏)"`` ends like the typed key ``"age"``, but is another key: the block
    is returned as it is (the line rule decodes it)."""
    block = f'{{"x\\"age": {MARKER}, "age": {MARKER}}}\n'.encode()
    assert TypedMarkers(SCHEMA).null(block) == (block, 0)


def test_nothing_to_do_without_typed_columns_or_markers() -> None:
    block = b'{"age": 1}\n'
    assert TypedMarkers(SCHEMA).null(block) == (block, 0)
    only_text = pa.schema([("city", pa.string())])
    assert TypedMarkers(only_text).null(f'{{"city": {MARKER}}}\n'.encode())[1] == 0
