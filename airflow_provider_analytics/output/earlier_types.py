"""The types a cohort's earlier days were written with, so that a ``number`` column keeps its
type from day to day in one destination.

A ``number`` column is int64 while the day's values are integers and double once one is a
decimal (:mod:`~airflow_provider_analytics.export.number_rule`). Decided afresh each day, a
column could be int64 one day and double the next, and readers of the folder of days differ on
that: DuckDB takes the first file's type and rounds later decimals without a word, a pyarrow
dataset refuses the folder. So the newest earlier day's file decides: its ``number`` columns
keep their type, and a day whose data does not fit is refused by name, naming the setting
(``schema_overrides``) that changes the type on purpose.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_provider_analytics.core.column_names import ID_METADATA_KEY
from airflow_provider_analytics.core.errors import EarlierDayUnreadableError

if TYPE_CHECKING:
    from airflow_provider_analytics.output.storage import StoragePath

log = logging.getLogger(__name__)


def _column_id(field: pa.Field) -> str:
    """The column's id as the export wrote it in the field metadata, else its name."""
    return (field.metadata or {}).get(ID_METADATA_KEY.encode(), field.name.encode()).decode()


LOCKED_TYPES = (pa.int64(), pa.float64())
"""The types a ``number`` column can have been written with by default."""


def earlier_number_types(days: StoragePath, day: str, file_name: str) -> dict[str, pa.DataType]:
    """Column id -> int64 or double, from the newest file of a day before ``day``.

    :param days: the folder holding one ``dt=<yyyy-MM-dd>`` folder per day.
    :param day: the day being written (``yyyy-MM-dd``); it and later days are not read.
    :param file_name: the file in each day's folder (``users.parquet``).
    :return: {} when no earlier day has a file (the first day decides for itself).
    """
    if not days.exists():
        return {}
    earlier = sorted(
        (entry.name for entry in days.iterdir() if entry.name.startswith("dt=")),
        reverse=True,
    )
    for name in earlier:
        if name[len("dt=") :] >= day:
            continue
        source = days / name / file_name
        if not source.exists():
            continue
        try:
            with source.open("rb") as handle:
                schema = pq.read_schema(handle)
            types = {
                _column_id(field): field.type
                for field in schema
                if any(field.type.equals(locked) for locked in LOCKED_TYPES)
            }
        except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
            raise EarlierDayUnreadableError(
                f"{source}: the newest earlier day's file, which decides the types of the "
                f"number columns, cannot be read as this provider's Parquet ({error}); rewrite "
                "that day (rerun it) or remove its file"
            ) from None
        log.info("number columns keep the types of %s: %s", name, types)
        return types
    return {}
