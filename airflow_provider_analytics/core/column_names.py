"""How a cohort export names its columns: names every warehouse takes (the default), or the
platform's ids.

The platform names a user property by its id (``age``, ``$city`` for a preset,
``registerTime``) and a tag by ``tag.<code>``. DuckDB, pandas, Polars and pyarrow read such
columns as they are; Snowflake, BigQuery, Redshift, Athena and Trino refuse ``$`` or ``.`` in a
column name or need it quoted in every query, Spark reads ``tag.tag_rfm`` as the field
``tag_rfm`` of a struct ``tag``, and PostgreSQL folds an unquoted ``registerTime`` to
``registertime``.

``warehouse`` names (the default) load unquoted into DuckDB, PostgreSQL, Redshift, BigQuery,
Snowflake and Spark:

- a preset's leading ``$`` is dropped: ``$city`` -> ``city``;
- a lower-case letter or digit followed by an upper-case one gets a ``_`` between them, and
  everything is lower case: ``registerTime`` -> ``register_time``, ``VIPLevel`` -> ``viplevel``;
- ``.`` and ``-`` (and any other ASCII character outside ``[a-z0-9_]``) become ``_``:
  ``tag.tag_rfm`` -> ``tag_tag_rfm``, ``tag.vip-2024`` -> ``tag_vip_2024``;
- a character beyond ASCII becomes ``u`` and its code point in hex (``u5e74`` for 年), so two
  ids in another script do not all fall onto the same underscores;
- a name that would start with a digit, or with a prefix BigQuery keeps for itself
  (``_table_``, ``_partition``, ...), gets a leading ``c_``;
- a reserved word of one of those warehouses (``select``, ``order``, ``user``, ...), or a
  column the provider adds itself (``dt``, ``cohort_code``, ``report_key``), gets a trailing
  ``_``: ``order`` -> ``order_``;
- a name longer than 63 characters (PostgreSQL's limit; Redshift's is 127) keeps its first 54
  and ends in ``_`` and 8 hex digits of a digest of the id, so it stays distinct.

The mapping is a pure function of the id, so a column keeps its name from one run to the next
whatever else is exported, and the Parquet field keeps the id in its metadata
(``analytics.id``). Two ids that would share a name (``$city`` and ``city``, ``tag.a-b`` and
``tag.a_b``, ``registerTime`` and ``register_time``) are refused before any request, naming
both ids and the name. An id that leaves nothing (``$``) is refused too.

``ids`` writes the platform's ids as they are (the naming of earlier versions), and so refuses a
property named like a column the provider adds (``dt``, ``cohort_code``, ``report_key``, in any
case): renaming it would break the promise of ids as they are, and keeping it would let
folder-based readers replace its values with the partition's. The Iceberg writer refuses such a
column by the same rule (``core.identity.refuse_partition_columns``).
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

ID_METADATA_KEY: Final = "analytics.id"
"""Parquet field metadata key holding the platform id a column was exported from."""

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

RESERVED_WORDS: Final = frozenset(
    [
        "all",
        "alter",
        "analyse",
        "analyze",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "assert_rows_modified",
        "asymmetric",
        "at",
        "authorization",
        "between",
        "binary",
        "both",
        "by",
        "case",
        "cast",
        "check",
        "collate",
        "column",
        "connect",
        "connection",
        "constraint",
        "create",
        "cross",
        "cube",
        "current",
        "current_catalog",
        "current_date",
        "current_role",
        "current_schema",
        "current_time",
        "current_timestamp",
        "current_user",
        "default",
        "deferrable",
        "define",
        "delete",
        "desc",
        "describe",
        "distinct",
        "do",
        "drop",
        "else",
        "end",
        "enum",
        "escape",
        "except",
        "exclude",
        "exists",
        "extract",
        "false",
        "fetch",
        "following",
        "for",
        "foreign",
        "freeze",
        "from",
        "full",
        "function",
        "grant",
        "group",
        "grouping",
        "groups",
        "hash",
        "having",
        "ilike",
        "in",
        "increment",
        "inner",
        "insert",
        "intersect",
        "interval",
        "into",
        "is",
        "isnull",
        "join",
        "lateral",
        "leading",
        "left",
        "like",
        "limit",
        "localtime",
        "localtimestamp",
        "lookup",
        "merge",
        "minus",
        "natural",
        "new",
        "no",
        "not",
        "notnull",
        "null",
        "nulls",
        "of",
        "offset",
        "on",
        "only",
        "or",
        "order",
        "outer",
        "over",
        "overlaps",
        "partition",
        "placing",
        "preceding",
        "primary",
        "proto",
        "qualify",
        "range",
        "recursive",
        "references",
        "regexp",
        "respect",
        "returning",
        "revoke",
        "right",
        "rlike",
        "rollup",
        "row",
        "rows",
        "sample",
        "schema",
        "select",
        "session_user",
        "set",
        "similar",
        "some",
        "start",
        "struct",
        "symmetric",
        "table",
        "tablesample",
        "then",
        "to",
        "trailing",
        "treat",
        "trigger",
        "true",
        "try_cast",
        "unbounded",
        "union",
        "unique",
        "unknown",
        "unnest",
        "update",
        "user",
        "using",
        "values",
        "variadic",
        "verbose",
        "view",
        "when",
        "whenever",
        "where",
        "window",
        "with",
        "within",
    ]
)
"""Reserved words of DuckDB, PostgreSQL, Redshift, BigQuery, Snowflake and Spark (ANSI mode),
together: an unquoted column of one of these names fails in at least one of them."""


class ColumnNames(StrEnum):
    """How the export names its columns."""

    WAREHOUSE = "warehouse"
    """Lower-case ASCII letters, digits and ``_`` that load unquoted everywhere: ``city``,
    ``tag_tag_rfm``, ``register_time`` (the default)."""
    IDS = "ids"
    """The platform's ids as they are: ``$city``, ``tag.tag_rfm``."""


def column_names_setting(value: Any, field: str = "column_names") -> ColumnNames:
    """The ``column_names`` setting: ``warehouse`` or ``ids``.

    :raises AnalyticsValidationError: naming ``field``.
    """
    return ColumnNames(rules.one_of(value, field, tuple(ColumnNames)))


def _replace(match: re.Match[str]) -> str:
    char = match.group()
    return "_" if char.isascii() else f"u{ord(char):04x}"


def warehouse_name(column_id: str) -> str:
    """The warehouse-safe name of a column id (the rules of this module's docstring).

    :param column_id: a property id (``$city``) or ``tag.<code>``.
    :return: the name, or ``""`` when nothing is left (the caller refuses it).
    """
    name = _CAMEL.sub("_", column_id.removeprefix("$")).lower()
    name = _OUTSIDE_NAME.sub(_replace, name)
    if not name:
        return ""
    if name[0].isdigit() or name.startswith(BIGQUERY_RESERVED_PREFIXES):
        name = f"c_{name}"
    if name in RESERVED_WORDS or name in PARTITION_COLUMNS:
        name = f"{name}_"
    if len(name) > MAX_NAME_LENGTH:
        digest = hashlib.sha256(column_id.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME_LENGTH - 9]}_{digest}"
    return name


def column_name_map(
    column_ids: Iterable[str], setting: ColumnNames, field: str = "properties"
) -> dict[str, str]:
    """Each column id and the name it is written under, refusing names two ids share.

    :param column_ids: the export's column ids, in column order.
    :param setting: :class:`ColumnNames`.
    :param field: the argument the ids came from, for the message.
    :raises AnalyticsValidationError: naming both ids of a collision and the name they share,
        or an id that maps to no name. With ``ids`` the names are the ids (the caller keeps
        them unique), a partition column's name refused.
    """
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
