"""What each ``schema_contract`` lets a day change in the destination's columns, and its one
gate: a value outside the three is refused by name before any request."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_analytics.core.errors import AnalyticsValidationError
from airflow_provider_analytics.export.schema import contracted, export_schema
from airflow_provider_analytics.export.settings import ExportSettings
from airflow_provider_analytics.export.stream import prepare_export

PLAN = [
    {"id": "distinct_id", "dataType": "number"},
    {"id": "$city", "dataType": "string"},
    {"id": "seen", "dataType": "datetime"},
    {"id": "tags", "dataType": "array<string>"},
    {"id": "balance", "dataType": "number"},
]
COLUMNS = [item["id"] for item in PLAN]
HELD = export_schema(COLUMNS, PLAN).arrow_schema


def schema(columns: list[str] = COLUMNS, **kwargs: Any) -> Any:
    return export_schema(columns, PLAN, earlier=HELD, **kwargs)


@pytest.mark.parametrize("contract", ["evolve", "freeze", "discard_new"])
def test_the_same_columns_pass_every_contract(contract: str) -> None:
    assert contracted(schema(), HELD, contract) == schema()
    assert contracted(schema(), None, contract) == schema()  # nothing written yet


@pytest.mark.parametrize("contract", ["evolve", "freeze", "discard_new"])
def test_the_types_iceberg_reads_its_columns_as_are_the_same_types(contract: str) -> None:
    # pyiceberg reads strings and lists as large ones and timestamps in microseconds
    iceberg = pa.schema(
        [
            ("distinct_id", pa.int64()),
            ("$city", pa.large_string()),
            ("seen", pa.timestamp("us", tz="UTC")),
            ("tags", pa.large_list(pa.field("element", pa.large_string(), nullable=False))),
            ("balance", pa.float64()),
        ]
    )
    kept = contracted(export_schema(COLUMNS, PLAN, earlier=iceberg), iceberg, contract)
    assert kept.columns[-1].starts_double  # a number column keeps the double it is held as


def test_evolve_takes_added_and_removed_columns() -> None:
    held = HELD.remove(HELD.get_field_index("balance"))
    assert contracted(schema(), held, "evolve").names == COLUMNS
    assert contracted(schema(COLUMNS[:3]), HELD, "evolve").names == COLUMNS[:3]


def test_freeze_refuses_every_change_by_name() -> None:
    held = HELD.remove(HELD.get_field_index("balance")).append(pa.field("gone", pa.bool_()))
    changed = schema(overrides={"$city": "number"})
    with pytest.raises(AnalyticsValidationError) as refused:
        contracted(changed, held, "freeze")
    message = str(refused.value)
    assert message.startswith("schema_contract: 'freeze' refuses")
    assert "'gone' removed" in message
    assert "'balance' added" in message
    assert "'$city' type string -> int64" in message


def test_discard_new_leaves_the_new_columns_out_and_names_them() -> None:
    held = HELD.remove(HELD.get_field_index("tags"))
    kept = contracted(schema(), held, "discard_new")
    assert kept.names == ["distinct_id", "$city", "seen", "balance"]
    assert kept.discarded == ("tags",)
    assert kept.described["discarded_columns"] == ["tags"]
    with pytest.raises(AnalyticsValidationError, match=r"'discard_new' refuses.*'balance' removed"):
        contracted(schema(COLUMNS[:4]), HELD, "discard_new")


@pytest.mark.parametrize("contract", ["evolve", "freeze", "discard_new"])
def test_a_type_changes_only_as_schema_overrides_sets_it_under_evolve(contract: str) -> None:
    # the plan retyped a column: never applied silently
    retyped = export_schema(COLUMNS, [*PLAN[:1], {"id": "$city", "dataType": "boolean"}, *PLAN[2:]])
    with pytest.raises(AnalyticsValidationError, match=r"'\$city' type string -> bool"):
        contracted(retyped, HELD, contract)
    overridden = schema(overrides={"$city": "boolean"})
    if contract == "evolve":
        assert contracted(overridden, HELD, contract) == overridden
    else:
        with pytest.raises(AnalyticsValidationError, match=r"'\$city' type string -> bool"):
            contracted(overridden, HELD, contract)


class Offline:
    """A client any request would fail on differently."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} was called")


@pytest.mark.parametrize("value", ["merge", "Freeze", None, 1])
def test_the_gate_refuses_another_value_before_any_request(value: Any) -> None:
    with pytest.raises(AnalyticsValidationError, match="schema_contract: must be one of evolve"):
        prepare_export(Offline(), "vip", settings=ExportSettings(schema_contract=value))  # type: ignore[arg-type]
