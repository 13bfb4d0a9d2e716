"""The columns of a cohort export: names, Parquet types and where each type came from.

A type follows the plan's ``dataType`` (spec 2.5; :data:`TYPE_TABLE` is the README's table); a
``number`` column is int64 until the export holds a decimal, then double
(:mod:`~airflow_provider_analytics.export.number_rule`; why: ``docs/output_tables.md``). A column
is decoded by its id (the record key), written under the name ``column_names`` gives it, and its
Parquet field keeps the id in its metadata (``analytics.id``).
"""

from __future__ import annotations

from collections import abc
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, NoReturn

import pyarrow as pa

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.arrow_types import is_text
from airflow_provider_analytics.core.column_names import (
    ID_METADATA_KEY,
    ColumnNames,
    column_id,
    column_name_map,
    warehouse_name,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

MASKED_MARKER: Final = "(已脱敏)"
NUMBER_TYPE: Final = pa.int64()
DOUBLE_TYPE: Final = pa.float64()
EXACT_NUMBER_TYPE: Final = pa.decimal128(38, 9)
TIMESTAMP_TYPE: Final = pa.timestamp("ms", tz="UTC")

TYPE_TABLE: Final[tuple[tuple[str, pa.DataType, str], ...]] = (  # plan type, Parquet type, note
    ("string", pa.string(), ""),
    (
        "number",
        NUMBER_TYPE,
        "double (float64) instead when the export holds a decimal (`1.5`, `2e3`); integers are "
        "kept exact: one a double cannot hold fails the export by name (see below)",
    ),
    ("boolean", pa.bool_(), ""),
    (
        "datetime",
        TIMESTAMP_TYPE,
        "`yyyy-MM-dd HH:mm:ss[.SSS]` or `yyyy-MM-dd`, read in the project's timezone",
    ),
    ("array<string>", pa.list_(pa.string()), "null items stay null"),
)

_TYPE_NAMES: Final[Mapping[str, pa.DataType]] = {
    **{name: arrow_type for name, arrow_type, _ in TYPE_TABLE},
    "double": DOUBLE_TYPE,
    "int64": pa.int64(),
    "decimal": EXACT_NUMBER_TYPE,
}  # the type names schema_overrides takes; "number" is the plan's rule (int64, or double)

CONTRACTS: Final = ("evolve", "freeze", "discard_new")  # of schema_contract, the default first


@dataclass(frozen=True)
class ExportColumn:
    """One output column: its id (the record key, a property id or ``tag.<code>``), its Parquet
    type, its ``origin`` (``plan``, ``masked``, ``tag``, ``unknown``, ``override`` or
    ``earlier``) and its name in the file when it differs from the id. A ``number`` column
    ``widens`` from int64 to double at its first decimal, or ``starts_double`` (the
    destination's earlier days hold it so)."""

    name: str
    arrow_type: pa.DataType
    origin: str
    written_as: str | None = None
    widens: bool = False
    starts_double: bool = False

    @property
    def written_name(self) -> str:
        return self.written_as or self.name

    @property
    def field(self) -> pa.Field:
        return self.field_of(self.arrow_type)

    def field_of(self, arrow_type: pa.DataType) -> pa.Field:
        """The Parquet field with ``arrow_type`` (a ``number`` column once it is double)."""
        return pa.field(self.written_name, arrow_type, metadata={ID_METADATA_KEY: self.name})


def _as_arrow_type(name: str, value: pa.DataType | str) -> pa.DataType:
    if isinstance(value, pa.DataType):
        return value
    named = _TYPE_NAMES.get(value) if isinstance(value, str) else None
    if named is None:
        rules.fail(
            "schema_overrides",
            f"{name!r}: {value!r} is not an Arrow type or one of {', '.join(_TYPE_NAMES)}",
        )
    return named


@dataclass(frozen=True)
class ExportSchema:
    """The columns of a cohort export, in a stable order, and the project's timezone."""

    columns: tuple[ExportColumn, ...]
    timezone: str = "UTC"
    discarded: tuple[str, ...] = ()  # written names schema_contract="discard_new" left out

    @property
    def names(self) -> list[str]:
        """The column ids (the record keys), in order."""
        return [c.name for c in self.columns]

    @property
    def written_names(self) -> list[str]:
        return [c.written_name for c in self.columns]

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([c.field for c in self.columns])

    @property
    def described(self) -> dict[str, Any]:
        """For the XCom and lineage: each written column's id and origin, and the discarded."""
        return {
            "column_ids": {c.written_name: c.name for c in self.columns},
            "column_origins": {c.written_name: c.origin for c in self.columns},
            "discarded_columns": list(self.discarded),
        }


def default_properties(plan: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the platform returns when a request names no properties: visible items of the plan."""
    return [
        str(item["id"])
        for item in plan
        if int(item.get("visible", 1)) == 1 and int(item.get("plan", 1)) == 1
    ]


def column_name(name: str, plan_ids: Iterable[str]) -> str:
    """The column (and record key) of a requested name: a name the plan does not know and
    that is not a ``$`` preset is a tag's bare code (spec 2.6), whose data comes back under
    ``tag.<code>``."""
    if name.startswith(("tag.", "$")) or name in plan_ids:
        return name
    return f"tag.{name}"


def _named_twice(first: str, second: str, column: str) -> NoReturn:
    rules.fail(
        "schema_overrides",
        f"{first!r} and {second!r} both name the column {column!r}; give its type once",
    )


def check_override_keys(
    overrides: Mapping[str, Any] | None, column_names: ColumnNames = ColumnNames.IDS
) -> None:
    """Refuse, before any request, a ``schema_overrides`` type that is neither an Arrow type nor
    a type name, and two keys that name one column whatever the plan holds: a preset's or a
    tag's id and its ``warehouse`` name (``$city`` and ``city``). Other double namings are
    refused by :func:`export_schema` once the plan is known.

    :raises AnalyticsValidationError: naming ``schema_overrides`` and both keys, or when it
        is not a mapping keyed by names.
    """
    if overrides is not None and not (
        isinstance(overrides, abc.Mapping) and all(isinstance(k, str) and k for k in overrides)
    ):
        rules.fail("schema_overrides", "must be a mapping of column names to types", overrides)
    for key, value in (overrides or {}).items():
        _as_arrow_type(key, value)  # a type name is known without the plan
    if column_names is not ColumnNames.WAREHOUSE or not overrides:
        return
    for key in overrides:
        if isinstance(key, str) and key.startswith(("$", "tag.")):
            name = warehouse_name(key)
            if name in overrides:
                _named_twice(key, name, key)


def export_schema(
    properties: Sequence[str],
    plan: Iterable[Mapping[str, Any]],
    *,
    timezone: str = "UTC",
    overrides: Mapping[str, pa.DataType | str] | None = None,
    column_names: ColumnNames = ColumnNames.IDS,
    earlier: pa.Schema | None = None,
    from_plan: bool = False,
) -> ExportSchema:
    """The export's schema for ``properties`` (ids, ``tag.<code>`` keys or bare tag codes, in
    that order) from the tracking plan's records (spec 2.2). ``overrides`` types columns named
    by id, bare tag code or written name (an Arrow type or a name of :data:`_TYPE_NAMES`); a
    ``number`` column the destination holds (``earlier``) as int64 or double, by id or name,
    keeps that type unless overridden.

    :param from_plan: ``properties`` are a recorded shard plan's, whose step checked
        ``overrides`` against every property asked for: a key naming a column
        ``schema_contract="discard_new"`` left out of the plan is passed over, not refused.
    :raises AnalyticsValidationError: two columns written under one name, or two keys of
        ``overrides`` naming one column.
    """
    by_id = {str(item["id"]): item for item in plan}
    names = [column_name(name, by_id) for name in properties]
    if len(set(names)) != len(names):
        rules.fail("properties", f"name a column more than once: {list(properties)}")
    written = column_name_map(names, column_names)
    by_written = {name: key for key, name in written.items()}
    given = overrides or {}
    keys: dict[str, str] = {}  # column -> its key; two keys naming one column are refused
    for key in given:
        target = by_written.get(key) or column_name(key, by_id)
        if target in keys:
            _named_twice(keys[target], key, target)
        keys[target] = key
    if (unknown := sorted(set(keys) - set(names))) and not from_plan:
        rules.fail("schema_overrides", f"name columns that are not exported: {unknown}")
    kept_types: dict[str, pa.DataType] = {}
    for field in earlier or ():
        if field.type in (NUMBER_TYPE, DOUBLE_TYPE):
            kept_types[field.name] = field.type
            if (held_id := column_id(field)) is not None:
                kept_types[held_id] = field.type
    columns = []
    for name in names:
        if name in keys:
            override = given[keys[name]]
            column = ExportColumn(
                name, _as_arrow_type(name, override), "override", widens=override == "number"
            )
        elif name.startswith("tag."):
            column = ExportColumn(name, pa.string(), "tag")
        elif (item := by_id.get(name)) is None:
            column = ExportColumn(name, pa.string(), "unknown")
        elif int(item.get("masking", 0)) == 1:
            column = ExportColumn(name, pa.string(), "masked")
        else:
            data_type = str(item.get("dataType"))
            # an earlier day's type, by the column's id (Parquet) or its name (Iceberg)
            kept = kept_types.get(name) or kept_types.get(written[name])
            kept = kept if data_type == "number" else None
            if kept is not None and kept.equals(pa.float64()):
                column = ExportColumn(name, NUMBER_TYPE, "earlier", widens=True, starts_double=True)
            elif kept is not None:
                column = ExportColumn(name, kept, "earlier")
            else:
                column = ExportColumn(
                    name, _as_arrow_type(name, data_type), "plan", widens=data_type == "number"
                )
        alias = written[name]
        columns.append(replace(column, written_as=alias) if alias != name else column)
    return ExportSchema(tuple(columns), timezone)


def _plain(arrow_type: pa.DataType) -> pa.DataType:
    """A type as two destinations may hold the same one (Iceberg reads large strings and lists,
    and timestamps in microseconds)."""
    if is_text(arrow_type):
        return pa.string()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_plain(arrow_type.value_type))
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("ms", "UTC" if arrow_type.tz else None)
    return arrow_type


def contracted(schema: ExportSchema, held: pa.Schema | None, contract: str) -> ExportSchema:
    """``schema`` as ``contract`` (:data:`CONTRACTS`) lets it meet the columns the destination
    holds (``held``, by name; ``None``: nothing to meet), before the cohort is asked for:
    ``evolve`` takes added and removed columns; ``freeze`` refuses both; ``discard_new`` leaves
    the added ones out and refuses a removed one. A type other than the held one is refused
    under each, unless ``schema_overrides`` set it under ``evolve``.

    :raises AnalyticsValidationError: naming ``schema_contract`` and every column at fault.
    """
    if held is None:
        return schema
    types = {field.name: _plain(field.type) for field in held}
    ours = {c.written_name: c for c in schema.columns}
    new = [name for name in ours if name not in types]
    faults = [f"{name!r} removed" for name in types if name not in ours and contract != "evolve"]
    faults += [f"{name!r} added" for name in new if contract == "freeze"]
    for name, column in ours.items():
        mine = _plain(DOUBLE_TYPE if column.starts_double else column.arrow_type)
        retyped = name in types and mine != types[name]
        if retyped and (column.origin != "override" or contract != "evolve"):
            faults.append(f"{name!r} type {types[name]} -> {mine}")
    if faults:
        rules.fail(
            "schema_contract",
            f"{contract!r} refuses this day's columns against the destination's: "
            f"{'; '.join(faults)}. Nothing was exported: 'evolve' takes added and removed "
            "columns, and a type changes only as schema_overrides sets it under 'evolve' (or in "
            "a new destination)",
        )
    if contract != "discard_new" or not new:
        return schema
    kept = tuple(c for c in schema.columns if c.written_name not in new)
    return replace(schema, columns=kept, discarded=tuple(new))
