"""The publication's duplicate check against a plain reference: ids given as row-group chunks
(integer ids as numpy views of their buffers, other ids as Arrow arrays), split into buckets,
must report an id held twice exactly when a ``collections.Counter`` over all of them does."""

from __future__ import annotations

import itertools
from collections import Counter

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.export import shards as cohort_shards

ids_lists = st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60) | st.lists(
    st.integers(0, 40), max_size=60
)


def _found(chunks: list[pa.Array], buckets: int) -> set[object]:
    """What the check reports, bucket by bucket (``None`` dropped)."""
    found = set()
    for bucket in range(buckets):
        twice = cohort_shards._repeated(
            [cohort_shards._in_bucket(ids, buckets, bucket) for ids in chunks]
        )
        if twice is not None:
            found.add(twice)
    return found


def _chunks(values: list[object], cuts: list[int], arrow_type: pa.DataType) -> list[pa.Array]:
    """``values`` as slices of one array (offsets not zero), cut where ``cuts`` say."""
    pad = 0 if pa.types.is_integer(arrow_type) else ""
    whole = pa.array([pad, *values], arrow_type)[1:]  # every slice has an offset
    edges = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return [whole[a:b] for a, b in itertools.pairwise(edges)]


@given(ids_lists, st.lists(st.integers(0, 100), max_size=5), st.integers(1, 4))
def test_integer_ids_held_twice_are_found_in_any_bucketing(values, cuts, buckets) -> None:
    twice = {value for value, times in Counter(values).items() if times > 1}
    found = _found(_chunks(values, cuts, pa.int64()), buckets)
    assert found <= twice
    assert bool(found) == bool(twice)


@given(st.lists(st.text(max_size=3), max_size=40), st.lists(st.integers(0, 50), max_size=4))
def test_text_ids_held_twice_are_found(values, cuts) -> None:
    twice = {value for value, times in Counter(values).items() if times > 1}
    chunks = _chunks(values, cuts, pa.string()) if values else []
    for buckets in (1, 3):
        found = _found(chunks, buckets)
        assert found <= twice
        assert bool(found) == bool(twice)


def test_an_integer_view_reads_the_slice_it_is_given() -> None:
    ids = pa.array(range(100), pa.int32())[37:41]
    view = cohort_shards._integers(ids)
    assert view is not None
    assert view.tolist() == [37, 38, 39, 40]
    assert cohort_shards._integers(pa.array([1, None], pa.int64())) is None
    assert cohort_shards._integers(pa.array(["1"])) is None
