"""The publication's duplicate check against a plain reference: ids given as row-group chunks
(integer ids as numpy views of their buffers, other ids as Arrow arrays), split into buckets,
must report an id held twice exactly when a ``collections.Counter`` over all of them does."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.client.validation import cohort_query
from airflow_provider_analytics.core.errors import AnalyticsValidationError, ShardStagingError
from airflow_provider_analytics.core.identity import request_digest
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
    view = cohort_shards._in_bucket(ids, 1, 0)
    assert isinstance(view, np.ndarray)
    assert view.tolist() == [37, 38, 39, 40]
    assert cohort_shards._in_bucket(ids, 2, 1).tolist() == [37, 39]
    with_null = pa.array([1, None], pa.int64())
    assert cohort_shards._in_bucket(with_null, 1, 0) is with_null  # kept in Arrow
    texts = pa.array(["1"])
    assert cohort_shards._in_bucket(texts, 1, 0) is texts


def test_a_plan_is_its_own_record_and_refuses_what_it_does_not_declare(tmp_path: Path) -> None:
    """``plan.json`` round-trips through the one declared shape; its digest is the request
    digest of its fields, the run's whole fingerprint; a record of another shape, or none
    (an earlier version's plan, without timezone and columns), is refused by name."""
    columns = (
        cohort_shards.PlanColumn(id="distinct_id", name="distinct_id", type="string"),
        cohort_shards.PlanColumn(id="$city", name="city", type="string"),
    )
    plan = cohort_shards.ShardPlan(
        cohort_code="vip",
        day="2024-01-15",
        properties=("distinct_id", "$city"),
        limit=None,
        count=12_345,
        page_size=5_000,
        shard_pages=2,
        timezone="UTC",
        columns=columns,
    )
    assert [(s.first_page, s.last_page, s.rows) for s in plan.shards] == [
        (1, 2, 10_000),
        (3, 3, 2_345),
    ]
    fields = {
        "cohort_code": "vip",
        "day": "2024-01-15",
        "properties": ["distinct_id", "$city"],
        "limit": None,
        "count": 12_345,
        "page_size": 5_000,
        "shard_pages": 2,
        "timezone": "UTC",
        "columns": [
            {"id": c.id, "name": c.name, "type": c.type, "widens": False, "starts_double": False}
            for c in columns
        ],
        "id_property": "distinct_id",
    }
    assert plan.digest == request_digest(fields)
    assert plan.id_column == columns[0]
    renamed = (columns[0], columns[1].model_copy(update={"name": "$city", "type": "int64"}))
    other = plan.model_copy(update={"timezone": "Asia/Shanghai", "columns": renamed})
    assert other.digest != plan.digest
    assert plan.differences(other) == (
        "timezone 'UTC' -> 'Asia/Shanghai'; column '$city' name 'city' -> '$city'; "
        "column '$city' type 'string' -> 'int64'"
    )
    assert plan.differences(plan.model_copy(update={"columns": columns[::-1]})) == (
        "columns ['distinct_id', '$city'] -> ['$city', 'distinct_id']"
    )
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(ShardStagingError, match="no shard plan recorded"):
        cohort_shards.read_plan(staging)
    assert cohort_shards.load_or_start_plan(staging, plan) is False
    assert cohort_shards.read_plan(staging) == plan
    assert cohort_shards.load_or_start_plan(staging, plan) is True  # a resumed try
    (staging / "plan.json").write_text(json.dumps({**fields, "page_size": 20_000}))
    with pytest.raises(ShardStagingError, match=r"not a shard plan \(page_size: "):
        cohort_shards.read_plan(staging)
    assert cohort_shards.load_or_start_plan(staging, plan) is False  # started over
    assert cohort_shards.read_plan(staging) == plan
    earlier = {k: v for k, v in fields.items() if k not in ("timezone", "columns", "id_property")}
    (staging / "plan.json").write_text(json.dumps(earlier))  # an earlier version's plan
    assert cohort_shards.load_or_start_plan(staging, plan) is False


def test_a_plan_too_large_to_list_or_not_readable_is_refused_by_name(tmp_path: Path) -> None:
    """A count no cohort has (a server's, within int64; or a plan.json's) is refused when the
    plan is made or read: its list of shards alone never ended. A recorded plan whose id is
    not among its properties, or without a column each, is refused too (not an IndexError at
    publication)."""
    column = SimpleNamespace(name="distinct_id", written_name="distinct_id", arrow_type="string")
    column.widens = column.starts_double = False
    schema = SimpleNamespace(timezone="UTC", columns=[column])
    prepared = SimpleNamespace(query=cohort_query("vip", properties=["distinct_id"]), schema=schema)
    plan = cohort_shards.plan_of(
        prepared, day="2024-01-15", count=10**6, page_size=5_000, shard_pages=40
    )
    assert len(plan.shards) == 5
    for count in (2**62, 2**31 * 5_000):
        with pytest.raises(AnalyticsValidationError) as refused:
            cohort_shards.plan_of(
                prepared, day="2024-01-15", count=count, page_size=5_000, shard_pages=40
            )
        assert refused.value.field == "shard_rows"
    with pytest.raises(AnalyticsValidationError, match=r"or 2147483647 pages"):
        cohort_shards.plan_of(
            prepared, day="2024-01-15", count=2**62, page_size=1, shard_pages=2**62
        )
    recorded = plan.model_dump(mode="json")
    (tmp_path / "plan.json").write_text(json.dumps(recorded))
    assert cohort_shards.read_plan(tmp_path) == plan
    for hostile in (
        {"count": 10**400},
        {"count": 2**62},
        {"id_property": "user_id"},
        {"properties": ["distinct_id", "$city"]},
        {"columns": []},
    ):
        (tmp_path / "plan.json").write_text(json.dumps({**recorded, **hostile}))
        with pytest.raises(ShardStagingError, match=r"plan.json: not a shard plan"):
            cohort_shards.read_plan(tmp_path)


def test_the_export_errors_have_one_home() -> None:
    """Each export error is defined in ``core.errors`` and still importable from the export
    module that raised it before."""
    from airflow_provider_analytics.core import errors
    from airflow_provider_analytics.export import number_rule, stream, value_rule

    assert stream.ExportIncompleteError is errors.ExportIncompleteError
    assert cohort_shards.CohortChangedError is errors.CohortChangedError
    assert value_rule.ExportDataError is errors.ExportDataError
    assert number_rule.NumberRefusal is errors.NumberRefusal
    assert number_rule.DecimalFound is errors.DecimalFound
