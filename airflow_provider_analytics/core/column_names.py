"""How a cohort export names its columns: ``warehouse`` names (the default) that load unquoted
into DuckDB, PostgreSQL, Redshift, BigQuery, Snowflake and Spark, or the platform's ``ids``.

docs/output_tables.md ("Column names") gives the mapping. It is a pure function of the id, so a
column keeps its name from run to run; two ids sharing a name, or an id leaving none, are
refused before any request. ``ids`` refuses a property named like a partition column (``dt``...),
which folder-based readers would overwrite, by the Iceberg writer's rule.
"""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.identity import PARTITION_COLUMNS, refuse_partition_columns

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pyarrow as pa

ID_METADATA_KEY: Final = "analytics.id"
"""Parquet field metadata key holding the platform id a column was exported from."""


def column_id(field: pa.Field) -> str | None:
    """The platform id a written column was exported from (:data:`ID_METADATA_KEY`), if any."""
    found = (field.metadata or {}).get(ID_METADATA_KEY.encode())
    return None if found is None else found.decode("utf-8", "replace")


MAX_NAME_LENGTH: Final = 63
"""The longest warehouse name (PostgreSQL keeps 63 bytes of an identifier; names are ASCII)."""

_OUTSIDE_NAME = re.compile(r"[^a-z0-9_]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

BIGQUERY_RESERVED_PREFIXES: Final = (
    "_table_",
    "_file_",
    "_partition",
    "_row_timestamp",
    "__root__",
    "_colidentifier",
)

_RESERVED = """
    all alter analyse analyze and any array as asc assert_rows_modified asymmetric at
    authorization between binary both by case cast check collate column connect connection
    constraint create cross cube current current_catalog current_date current_role
    current_schema current_time current_timestamp current_user default deferrable define delete
    desc describe distinct do drop else end enum escape except exclude exists extract false
    fetch following for foreign freeze from full function grant group grouping groups hash
    having ilike in increment inner insert intersect interval into is isnull join lateral
    leading left like limit localtime localtimestamp lookup merge minus natural new no not
    notnull null nulls of offset on only or order outer over overlaps partition placing
    preceding primary proto qualify range recursive references regexp respect returning revoke
    right rlike rollup row rows sample schema select session_user set similar some start struct
    symmetric table tablesample then to trailing treat trigger true try_cast unbounded union
    unique unknown unnest update user using values variadic verbose view when whenever where
    window with within
    """
RESERVED_WORDS: Final = frozenset(_RESERVED.split())
"""Reserved words of DuckDB, PostgreSQL, Redshift, BigQuery, Snowflake and Spark (ANSI mode):
an unquoted column of one of these names fails in at least one of them."""


class ColumnNames(StrEnum):
    """How the export names its columns."""

    WAREHOUSE = "warehouse"  # lower-case ASCII, digits and _: city, tag_tag_rfm (the default)
    IDS = "ids"  # the platform's ids as they are: $city, tag.tag_rfm


def column_names_setting(value: Any, field: str = "column_names") -> ColumnNames:
    """The ``column_names`` setting: ``warehouse`` or ``ids``."""
    return ColumnNames(rules.one_of(value, field, tuple(ColumnNames)))


def warehouse_name(column_id: str) -> str:
    """The warehouse-safe name of a property id (``$city``) or ``tag.<code>``; ``""`` when
    nothing is left. Beyond ASCII a character becomes ``u`` and its hex code point, so ids in
    another script do not all fall onto the same underscores."""
    name = _CAMEL.sub("_", column_id.removeprefix("$")).lower()
    name = _OUTSIDE_NAME.sub(lambda m: "_" if m[0].isascii() else f"u{ord(m[0]):04x}", name)
    if not name:
        return ""
    if name[0].isdigit() or name.startswith(BIGQUERY_RESERVED_PREFIXES):
        name = f"c_{name}"
    if name in RESERVED_WORDS or name in PARTITION_COLUMNS:
        name = f"{name}_"
    if len(name) > MAX_NAME_LENGTH:
        digest = hashlib.sha256(column_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[: MAX_NAME_LENGTH - 9]}_{digest}"
    return name


def column_name_map(
    column_ids: Iterable[str], setting: ColumnNames, field: str = "properties"
) -> dict[str, str]:
    """Each column id and the name it is written under, refusing (naming ``field``) a name two
    ids share or an id that leaves none; with ``ids`` the names are the ids."""
    if setting is ColumnNames.IDS:
        column_ids = list(column_ids)
        refuse_partition_columns(column_ids, field, "with column_names='ids' the columns")
        return {column_id: column_id for column_id in column_ids}
    names: dict[str, str] = {}
    holders: dict[str, str] = {}
    for column_id in column_ids:
        name = warehouse_name(column_id)
        if not name:
            rules.fail(field, f"{column_id!r} leaves no warehouse column name", column_id)
        held = holders.setdefault(name.casefold(), column_id)
        if held != column_id:
            rules.fail(
                field,
                f"{held!r} and {column_id!r} would share the column name {name!r} under "
                "column_names='warehouse'; export one of them, or keep the ids with "
                "column_names='ids'",
            )
        names[column_id] = name
    return names
