"""Column names of the cohort export: the warehouse mapping, its collisions, and the schema."""

from __future__ import annotations

import re

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.client import AnalyticsValidationError
from airflow_provider_analytics.core.column_names import (
    ID_METADATA_KEY,
    ColumnNames,
    column_name_map,
    column_names_setting,
    warehouse_name,
)
from airflow_provider_analytics.export.schema import export_schema

SAFE = re.compile(r"[a-z_][a-z0-9_]{0,62}")
"""What the warehouses this mapping serves take unquoted, folded or not, within PostgreSQL's
63 characters (written here, not imported)."""

RESERVED_SAMPLE = ["select", "order", "user", "group", "table", "qualify", "window", "limit"]
"""Words reserved by at least one of DuckDB, PostgreSQL, BigQuery, Snowflake and Spark (from
their documentation; a sample written here, not the package's list)."""

PLAN = [
    {"id": "distinct_id", "dataType": "number"},
    {"id": "$city", "dataType": "string"},
    {"id": "age", "dataType": "number"},
    {"id": "registerTime", "dataType": "datetime"},
]


@pytest.mark.parametrize(
    ("column_id", "name"),
    [
        ("age", "age"),
        ("$city", "city"),
        ("tag.tag_rfm", "tag_tag_rfm"),
        ("tag.2024-vip", "tag_2024_vip"),
        ("registerTime", "register_time"),
        ("userID", "user_id"),
        ("VIPLevel", "viplevel"),
        ("7day", "c_7day"),
        ("$7day", "c_7day"),
        ("_partitiontime", "c__partitiontime"),
        ("order", "order_"),
        ("$user", "user_"),
        ("dt", "dt_"),
        ("cohort_code", "cohort_code_"),
        ("年龄", "u5e74u9f84"),
        ("a b", "a_b"),
        ("", ""),
        ("$", ""),
    ],
)
def test_warehouse_name(column_id: str, name: str) -> None:
    assert warehouse_name(column_id) == name


def test_ids_are_kept_as_they_are() -> None:
    ids = ["$city", "tag.tag_rfm", "city", "Age", "age"]
    assert column_name_map(ids, ColumnNames.IDS) == {i: i for i in ids}


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        ("$city", "city", "city"),
        ("tag.a-b", "tag.a_b", "tag_a_b"),
        ("tag.a_b", "tag_a.b", "tag_a_b"),
        ("Age", "age", "age"),
        ("registerTime", "register_time", "register_time"),
    ],
)
def test_a_collision_names_both_ids_and_the_name(first: str, second: str, shared: str) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        column_name_map(["distinct_id", first, second], ColumnNames.WAREHOUSE)
    assert caught.value.field == "properties"
    message = str(caught.value)
    assert repr(first) in message and repr(second) in message and repr(shared) in message


@pytest.mark.parametrize("word", RESERVED_SAMPLE)
def test_a_reserved_word_gets_a_trailing_underscore(word: str) -> None:
    assert warehouse_name(word) == f"{word}_"
    assert warehouse_name(word.upper()) == f"{word}_"


def test_a_long_id_is_cut_to_63_characters_and_stays_distinct() -> None:
    first, second = "a" * 80 + "x", "a" * 80 + "y"
    names = column_name_map([first, second], ColumnNames.WAREHOUSE)
    assert [len(name) for name in names.values()] == [63, 63]
    assert names[first] != names[second]
    assert all(name.startswith("a" * 54 + "_") for name in names.values())
    assert warehouse_name("a" * 63) == "a" * 63


def test_a_long_id_holding_a_lone_surrogate_gets_a_name() -> None:
    """A JSON answer may decode to a lone surrogate; the digest of a long id raised a bare
    UnicodeEncodeError."""
    first, second = "a" * 70 + "\ud800", "a" * 70 + "\udc00"
    names = column_name_map([first, second], ColumnNames.WAREHOUSE)
    assert [len(name) for name in names.values()] == [63, 63]
    assert names[first] != names[second]
    assert all(name.isascii() for name in names.values())


def test_an_id_that_leaves_no_name_is_refused() -> None:
    with pytest.raises(AnalyticsValidationError, match=r"'\$' leaves no warehouse column name"):
        column_name_map(["age", "$"], ColumnNames.WAREHOUSE)


@pytest.mark.parametrize("value", ["snake", "IDS", None, 1, ""])
def test_the_setting_takes_ids_or_warehouse(value: object) -> None:
    with pytest.raises(AnalyticsValidationError, match=r"^column_names: must be one of "):
        column_names_setting(value)
    assert column_names_setting("warehouse") is ColumnNames.WAREHOUSE


ids = st.text(alphabet=st.sampled_from("aAbZ_09$.-é年 "), min_size=0, max_size=8) | st.sampled_from(
    ["$city", "city", "tag.x", "tag_x", "City", "select", "dt", "a" * 70, "a" * 71, "aB", "a_b"]
)


@settings(max_examples=200)
@given(column_ids=st.lists(ids, max_size=8, unique=True))
def test_any_ids_map_to_safe_unique_names_or_a_named_collision(column_ids: list[str]) -> None:
    try:
        names = column_name_map(column_ids, ColumnNames.WAREHOUSE)
    except AnalyticsValidationError as error:
        # the refusal is right: two ids share a name, or one leaves none
        message = str(error)
        by_name: dict[str, list[str]] = {}
        for column_id in column_ids:
            by_name.setdefault(warehouse_name(column_id).casefold(), []).append(column_id)
        pairs = [group[:2] for key, group in by_name.items() if key and len(group) > 1]
        empty = [column_id for column_id in column_ids if not warehouse_name(column_id)]
        assert pairs or empty
        assert any(repr(a) in message and repr(b) in message for a, b in pairs) or any(
            repr(column_id) in message for column_id in empty
        )
        return
    assert list(names) == column_ids
    assert all(SAFE.fullmatch(name) for name in names.values())
    assert not any(
        name in RESERVED_SAMPLE or name in ("dt", "cohort_code") for name in names.values()
    )
    assert len({name.casefold() for name in names.values()}) == len(column_ids)
    # deterministic, and each name depends on its own id alone
    assert column_name_map(list(reversed(column_ids)), ColumnNames.WAREHOUSE) == names
    assert all(names[column_id] == warehouse_name(column_id) for column_id in column_ids)


def test_schema_writes_mapped_names_and_keeps_each_id_in_the_metadata() -> None:
    schema = export_schema(
        ["distinct_id", "$city", "tag.tag_rfm", "tag_lifecycle"],
        PLAN,
        column_names=ColumnNames.WAREHOUSE,
    )
    assert schema.names == ["distinct_id", "$city", "tag.tag_rfm", "tag.tag_lifecycle"]
    assert schema.written_names == ["distinct_id", "city", "tag_tag_rfm", "tag_tag_lifecycle"]
    arrow = schema.arrow_schema
    assert arrow.names == schema.written_names
    assert [f.metadata[ID_METADATA_KEY.encode()].decode() for f in arrow] == schema.names
    assert arrow.field("city").type == pa.string()


def test_schema_with_ids_writes_the_ids() -> None:
    schema = export_schema(["$city", "tag.tag_rfm"], PLAN, column_names=ColumnNames.IDS)
    assert schema.arrow_schema.names == ["$city", "tag.tag_rfm"]
    assert schema.arrow_schema.field("$city").metadata == {b"analytics.id": b"$city"}


@pytest.mark.parametrize("key", ["age", "tag_tag_rfm", "tag.tag_rfm", "city", "$city"])
def test_overrides_take_the_id_the_bare_tag_code_or_the_written_name(key: str) -> None:
    schema = export_schema(
        ["age", "$city", "tag.tag_rfm"],
        PLAN,
        overrides={key: "decimal"},
        column_names=ColumnNames.WAREHOUSE,
    )
    overridden = [c.written_name for c in schema.columns if c.origin == "override"]
    expected = {"age": "age", "tag_tag_rfm": "tag_tag_rfm", "tag.tag_rfm": "tag_tag_rfm"}
    assert overridden == [expected.get(key, "city")]


@pytest.mark.parametrize(
    ("naming", "first", "second", "column"),
    [
        (ColumnNames.WAREHOUSE, "$city", "city", "$city"),
        (ColumnNames.WAREHOUSE, "tag_tag_rfm", "tag.tag_rfm", "tag.tag_rfm"),
        (ColumnNames.WAREHOUSE, "tag_rfm", "tag_tag_rfm", "tag.tag_rfm"),
        (ColumnNames.IDS, "tag.tag_rfm", "tag_rfm", "tag.tag_rfm"),
        (ColumnNames.IDS, "tag_rfm", "tag.tag_rfm", "tag.tag_rfm"),
    ],
)
def test_overrides_naming_one_column_twice_are_refused_naming_both_keys(
    naming: ColumnNames, first: str, second: str, column: str
) -> None:
    with pytest.raises(AnalyticsValidationError) as caught:
        export_schema(
            ["age", "$city", "tag.tag_rfm"],
            PLAN,
            overrides={first: "string", second: "decimal"},
            column_names=naming,
        )
    assert caught.value.field == "schema_overrides"
    assert f"{first!r} and {second!r} both name the column {column!r}" in str(caught.value)


def test_a_plan_property_and_a_tag_of_the_same_code_are_two_columns_to_override() -> None:
    plan = [*PLAN, {"id": "vip", "dataType": "string"}]
    schema = export_schema(
        ["vip", "tag.vip"], plan, overrides={"vip": "boolean", "tag.vip": "decimal"}
    )
    assert [(c.name, c.arrow_type, c.origin) for c in schema.columns] == [
        ("vip", pa.bool_(), "override"),
        ("tag.vip", pa.decimal128(38, 9), "override"),
    ]


def test_a_collision_among_the_plans_columns_is_refused_by_the_schema() -> None:
    plan = [*PLAN, {"id": "city", "dataType": "string"}]
    with pytest.raises(AnalyticsValidationError, match=r"'\$city' and 'city'"):
        export_schema(["$city", "city"], plan, column_names=ColumnNames.WAREHOUSE)
