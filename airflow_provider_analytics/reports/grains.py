"""The report tables: the flattened analyses cut so that no table mixes grains.

A funnel response mixes four grains (the overall row and the split values, each per day and
over the whole range) and an event response two (per period and over the whole range). A
naive ``SUM`` over such a mix counts things twice, so each grain becomes a table of its own,
named here with the sentence ``docs/report_tables.md`` uses for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


@dataclass(frozen=True)
class Grain:
    """One report table cut from a flattened analysis.

    :param name: the table's name (Parquet object stem, Iceberg table name suffix).
    :param grain: what one row stands for, "one row per ...".
    :param rows: selects the table's rows from the flattened table.
    :param dropped: flattened columns the table does not have (flags and dimensions that
        are constant within it).
    """

    name: str
    grain: str
    rows: Callable[[pa.Table], pa.ChunkedArray]
    dropped: tuple[str, ...]

    def schema(self, flattened: pa.Schema) -> pa.Schema:
        """This table's columns, given the flattened table's."""
        return pa.schema([field for field in flattened if field.name not in self.dropped])

    def cut(self, flattened: pa.Table) -> pa.Table:
        """This table's rows and columns of ``flattened``."""
        kept = flattened.filter(self.rows(flattened))
        return kept.drop_columns([name for name in self.dropped if name in kept.column_names])


def _flags(**values: bool) -> Callable[[pa.Table], pa.ChunkedArray]:
    def rows(table: pa.Table) -> pa.ChunkedArray:
        masks = [pc.equal(table.column(column), value) for column, value in values.items()]
        mask = masks[0]
        for other in masks[1:]:
            mask = pc.and_(mask, other)
        return mask

    return rows


_FUNNEL_FLAGS: Final = ("is_overall", "is_all_dates")
_SPLIT: Final = ("by_field", "by_value")

FUNNEL_GRAINS: Final = (
    Grain(
        "funnel",
        "one row per (query window, date, step), all users together",
        _flags(is_overall=True, is_all_dates=False),
        (*_FUNNEL_FLAGS, *_SPLIT),
    ),
    Grain(
        "funnel_totals",
        "one row per (query window, step), all users together, over the whole window",
        _flags(is_overall=True, is_all_dates=True),
        (*_FUNNEL_FLAGS, *_SPLIT, "date"),
    ),
    Grain(
        "funnel_by_value",
        "one row per (query window, split value, date, step)",
        _flags(is_overall=False, is_all_dates=False),
        _FUNNEL_FLAGS,
    ),
    Grain(
        "funnel_by_value_totals",
        "one row per (query window, split value, step), over the whole window",
        _flags(is_overall=False, is_all_dates=True),
        (*_FUNNEL_FLAGS, "date"),
    ),
)
"""The funnel report's tables; the first is the main one."""

EVENT_GRAINS: Final = (
    Grain(
        "events",
        "one row per (query window, split values, measure, period)",
        _flags(is_total=False),
        ("is_total",),
    ),
    Grain(
        "events_totals",
        "one row per (query window, split values, measure), over the whole window",
        _flags(is_total=True),
        ("is_total", "period", "period_start", "date"),
    ),
)
"""The event report's tables; the first is the main one."""


def cut_grains(flattened: pa.Table, grains: Sequence[Grain]) -> dict[str, pa.Table]:
    """Each grain's table of ``flattened``, by grain name, in the order of ``grains``."""
    return {grain.name: grain.cut(flattened) for grain in grains}
