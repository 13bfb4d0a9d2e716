"""How a cohort export names its columns: the platform's ids, or names every warehouse takes.

The platform names a user property by its id (``age``, ``$city`` for a preset) and a tag by
``tag.<code>``. DuckDB, pandas, Polars and pyarrow read such columns as they are; Snowflake,
BigQuery, Redshift, Athena and Trino refuse ``$`` or ``.`` in a column name or need it quoted in
every query, and Spark reads ``tag.tag_rfm`` as the field ``tag_rfm`` of a struct ``tag``.

``warehouse`` names are made of ASCII letters, digits and ``_`` and never start with a digit:

- a preset's leading ``$`` is dropped: ``$city`` -> ``city``;
- ``.`` and ``-`` (and any other ASCII character outside ``[A-Za-z0-9_]``) become ``_``:
  ``tag.tag_rfm`` -> ``tag_tag_rfm``, ``tag.vip-2024`` -> ``tag_vip_2024``;
- a character beyond ASCII becomes ``u`` and its code point in hex (``u5e74`` for 年), so two
  ids in another script do not all fall onto the same underscores;
- a name that would start with a digit gets a leading ``_``;
- letter case is kept (``registerTime`` stays ``registerTime``).

The mapping is a pure function of the id, so a column keeps its name from one run to the next
whatever else is exported. Two ids whose names are equal ignoring case (``$city`` and ``city``,
``tag.a-b`` and ``tag.a_b``, ``Age`` and ``age``) are refused, naming both ids and the name:
Snowflake, BigQuery and Spark match column names without regard to case. An id that leaves
nothing (``$``) is refused too. The platform's ids are ASCII today (spec 2.5), so the last two
rules only guard what the spec does not promise.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core import rules

if TYPE_CHECKING:
    from collections.abc import Iterable

ID_METADATA_KEY: Final = "analytics.id"
"""Parquet field metadata key holding the platform id a column was exported from."""

_OUTSIDE_NAME = re.compile(r"[^A-Za-z0-9_]")


class ColumnNames(StrEnum):
    """How the export names its columns."""

    IDS = "ids"
    """The platform's ids as they are: ``$city``, ``tag.tag_rfm``."""
    WAREHOUSE = "warehouse"
    """ASCII letters, digits and ``_``, not starting with a digit: ``city``, ``tag_tag_rfm``."""


def column_names_setting(value: Any, field: str = "column_names") -> ColumnNames:
    """The ``column_names`` setting: ``ids`` or ``warehouse``.

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
    name = _OUTSIDE_NAME.sub(_replace, column_id.removeprefix("$"))
    return f"_{name}" if name[:1].isdigit() else name


def column_name_map(
    column_ids: Iterable[str], setting: ColumnNames, field: str = "properties"
) -> dict[str, str]:
    """Each column id and the name it is written under, refusing names two ids share.

    :param column_ids: the export's column ids, in column order.
    :param setting: :class:`ColumnNames`.
    :param field: the argument the ids came from, for the message.
    :raises AnalyticsValidationError: naming both ids of a collision and the name they share,
        or an id that maps to no name. With ``ids`` the names are the ids (the caller keeps
        them unique).
    """
    if setting is ColumnNames.IDS:
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
                "column_names='warehouse' (names are compared ignoring case); export one of "
                "them, or keep the ids with column_names='ids'",
            )
        names[column_id] = name
    return names
