"""The columns of a cohort export: names, Parquet types and where each type came from.

The type of a column follows the plan's ``dataType`` (spec 2.5); :data:`TYPE_TABLE` is the
table the README shows (a test keeps the two equal). A ``number`` column is ``int64`` while
every value of the export is an integer token that fits, and double once one is a decimal
(:mod:`~airflow_provider_analytics.export.number_rule`), because the platform's ``number``
holds integers and decimals alike: ids, counts and epoch milliseconds are integers, many beyond
2**53, where a double no longer holds every integer (``4255875062385414000`` stored as a double
and cast back is ``4255875062385414144``, and joins against the id kept as an integer elsewhere
find nothing). A column that holds decimals on one day and integers only on another is double
on the first day, int64 on the second (a widening every Parquet reader and warehouse takes);
``schema_overrides`` keeps the exceptions (``"double"`` every day, ``"int64"``, ``"decimal"``,
any Arrow type).

A column is decoded by its id (the record key) and written under the name
:mod:`~airflow_provider_analytics.core.column_names` gives it; each Parquet field keeps its
id in the field metadata (``analytics.id``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, NoReturn

import pyarrow as pa

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.arrow_types import is_text
from airflow_provider_analytics.core.column_names import (
    ID_METADATA_KEY,
    ColumnNames,
    column_name_map,
    warehouse_name,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

MASKED_MARKER: Final = "(已脱敏)"
NUMBER_TYPE: Final = pa.int64()
"""A ``number`` column's type while every value is an integer; :data:`DOUBLE_TYPE` after."""
DOUBLE_TYPE: Final = pa.float64()
EXACT_NUMBER_TYPE: Final = pa.decimal128(38, 9)
TIMESTAMP_TYPE: Final = pa.timestamp("ms", tz="UTC")

TYPE_TABLE: Final[tuple[tuple[str, pa.DataType, str], ...]] = (
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
"""Plan data type, Parquet type, note: the README's cohort type table."""

_TYPE_NAMES: Final[Mapping[str, pa.DataType]] = {
    **{name: arrow_type for name, arrow_type, _ in TYPE_TABLE},
    "double": DOUBLE_TYPE,
    "int64": pa.int64(),
    "decimal": EXACT_NUMBER_TYPE,
}
"""Type names ``schema_overrides`` takes; ``number`` is the plan's rule (int64, or double)."""

CONTRACTS: Final = ("evolve", "freeze", "discard_new")
"""The values of ``schema_contract``, the default first."""


@dataclass(frozen=True)
class ExportColumn:
    """One output column.

    :param name: the column's id, which is also its record key (a property id or
        ``tag.<code>``).
    :param arrow_type: the column's type in the Parquet file.
    :param origin: ``plan``, ``masked`` (string because the plan masks it), ``tag``,
        ``unknown`` (a ``$`` preset the plan does not list) or ``override`` (set by the caller).
    :param written_as: the name in the Parquet file when it differs from the id.
    :param widens: a ``number`` column: ``arrow_type`` (int64) until the export holds a
        decimal, then double (:mod:`~airflow_provider_analytics.export.number_rule`).
    :param starts_double: a ``number`` column that is double from the first row (the
        destination's earlier days hold it so), its integers checked as in any double column.
    """

    name: str
    arrow_type: pa.DataType
    origin: str
    written_as: str | None = None
    widens: bool = False
    starts_double: bool = False

    @property
    def written_name(self) -> str:
        """The column's name in the Parquet file."""
        return self.written_as or self.name

    @property
    def field(self) -> pa.Field:
        """The Parquet field: the written name, the type, and the id in the metadata."""
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
    discarded: tuple[str, ...] = ()
    """Columns the plan has and ``schema_contract="discard_new"`` left out (written names)."""

    @property
    def names(self) -> list[str]:
        """The column ids (the record keys), in order."""
        return [c.name for c in self.columns]

    @property
    def written_names(self) -> list[str]:
        """The column names in the Parquet file, in order."""
        return [c.written_name for c in self.columns]

    @property
    def arrow_schema(self) -> pa.Schema:
        """The schema written (decoded tables come out in it)."""
        return pa.schema([c.field for c in self.columns])

    @property
    def described(self) -> dict[str, Any]:
        """Per column, by its name in the file: the platform id it holds (``column_ids``) and
        where its type came from (``column_origins``); the ``discarded_columns``; for the XCom
        and lineage."""
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
    """Refuse, before any request, two ``schema_overrides`` keys that name one column whatever
    the plan holds: a preset's or a tag's id and its name in the file under ``warehouse``
    (``$city`` and ``city``). Other double namings (``tag.vip`` and a bare ``vip``, which may
    be a property of the plan) are refused by :func:`export_schema`, once the plan is known.

    :param overrides: the ``schema_overrides`` argument.
    :param column_names: how the columns are named in the file.
    :raises AnalyticsValidationError: naming ``schema_overrides`` and both keys.
    """
    if column_names is not ColumnNames.WAREHOUSE or not overrides:
        return
    for key in overrides:
        if isinstance(key, str) and key.startswith(("$", "tag.")):
            name = warehouse_name(key)
            if name in overrides:
                _named_twice(key, name, key)


def _overrides_by_column(
    overrides: Mapping[str, pa.DataType | str],
    by_written: Mapping[str, str],
    plan_ids: Mapping[str, Any],
) -> dict[str, pa.DataType | str]:
    """Each override under the column id its key names (a written name, an id, a tag's bare
    code); two keys naming one column are refused rather than the last one winning."""
    by_column: dict[str, pa.DataType | str] = {}
    keys: dict[str, str] = {}
    for key, value in overrides.items():
        column = by_written.get(key) or column_name(key, plan_ids)
        if column in keys:
            _named_twice(keys[column], key, column)
        keys[column] = key
        by_column[column] = value
    return by_column


def export_schema(
    properties: Sequence[str],
    plan: Iterable[Mapping[str, Any]],
    *,
    timezone: str = "UTC",
    overrides: Mapping[str, pa.DataType | str] | None = None,
    column_names: ColumnNames = ColumnNames.IDS,
    earlier: pa.Schema | None = None,
) -> ExportSchema:
    """Build the export's schema for ``properties`` (in that order) from the tracking plan.

    :param properties: requested user property ids, ``tag.<code>`` keys or bare tag codes.
    :param plan: user property records (spec 2.2) as listed by the platform.
    :param timezone: the project's timezone, in which datetime texts are read.
    :param overrides: column -> Arrow type or type name (a plan data type; ``double``, the
        nearest double of every number; ``int64``; ``decimal``, exact ``decimal128(38, 9)``), for
        columns the caller types itself. A column is named by its id, a tag by its bare code
        too, or by its written name.
    :param column_names: how the columns are named in the file (:class:`ColumnNames`).
    :param earlier: the columns the destination holds (an earlier day's file, the table): a
        ``number`` column it holds as int64 or double, found by its id or its name, keeps that
        type (origin ``earlier``), unless ``overrides`` names it.
    :raises AnalyticsValidationError: when two columns would be written under one name, or
        two keys of ``overrides`` name one column.
    """
    by_id = {str(item["id"]): item for item in plan}
    names = [column_name(name, by_id) for name in properties]
    if len(set(names)) != len(names):
        rules.fail("properties", f"name a column more than once: {list(properties)}")
    written = column_name_map(names, column_names)
    by_written = {name: column_id for column_id, name in written.items()}
    overrides = _overrides_by_column(overrides or {}, by_written, by_id)
    unknown_overrides = set(overrides) - set(names)
    if unknown_overrides:
        rules.fail(
            "schema_overrides",
            f"name columns that are not exported: {sorted(unknown_overrides)}",
        )
    kept_types: dict[str, pa.DataType] = {}
    for field in earlier or ():
        if field.type in (NUMBER_TYPE, DOUBLE_TYPE):
            column_id = (field.metadata or {}).get(ID_METADATA_KEY.encode(), b"")
            kept_types[field.name] = kept_types[column_id.decode("utf-8", "replace")] = field.type
    columns = []
    for name in names:
        if name in overrides:
            override = overrides[name]
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
    """A type as two destinations may hold the same one: Iceberg reads its strings and lists
    as large ones, and its timestamps in microseconds."""
    if is_text(arrow_type):
        return pa.string()
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return pa.list_(_plain(arrow_type.value_type))
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("ms", "UTC" if arrow_type.tz else None)
    return arrow_type


def contracted(schema: ExportSchema, held: pa.Schema | None, contract: str) -> ExportSchema:
    """``schema`` as ``contract`` (:data:`CONTRACTS`) lets it meet the columns the destination
    holds (``held``, by name; ``None``: nothing to meet), before the cohort is asked for.

    ``evolve`` takes added and removed columns; ``freeze`` refuses both; ``discard_new``
    leaves the added ones out (:attr:`ExportSchema.discarded`) and refuses a removed one (its
    readers expect it). A type other than the held one is refused under each, unless
    ``schema_overrides`` set it under ``evolve``.

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
