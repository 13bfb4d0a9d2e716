"""The ``number`` columns of one export as its blocks are finished in stream order: each int64
until it holds a decimal, then double (:mod:`~airflow_provider_analytics.export.number_rule`).
The first integer a double cannot hold is remembered as blocks pass, so the change is refused
at once, by name; tables read before it are widened where they are, every integer checked.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from airflow_provider_analytics.core.errors import ExportDataError
from airflow_provider_analytics.export import number_rule

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_analytics.core.errors import NumberRefusal
    from airflow_provider_analytics.export.schema import ExportColumn

log = logging.getLogger(__name__)


class NumberColumns:
    """Which ``number`` columns (:attr:`ExportColumn.widens`) of an export are double by now,
    and why the others may not be."""

    def __init__(self, columns: Sequence[ExportColumn]) -> None:
        self.columns = tuple(columns)
        # double by now: the 1-based row of the decimal that made it so (0: from the start)
        self.doubles = {index: 0 for index, column in enumerate(columns) if column.starts_double}
        # still int64: the first (1-based row, integer) a double cannot hold
        self._inexact: dict[int, tuple[int, int]] = {}

    def int64_columns(self) -> list[int]:
        return [
            index
            for index, column in enumerate(self.columns)
            if column.widens and index not in self.doubles
        ]

    def become_double(self, index: int, row: int) -> None:
        """Column ``index`` holds a decimal in ``row`` (1-based): double from now on.

        :raises ExportDataError: an earlier integer of it that a double cannot hold.
        """
        self.doubles[index] = row
        if index in self._inexact:
            inexact_row, value = self._inexact[index]
            raise self._inexact_refused(index, inexact_row, value)
        log.info(
            "column %s holds decimals (the first in row %d of the export): it is written as double",
            self.columns[index].written_name,
            row,
        )

    def note_inexact(self, table: pa.Table, first_row: int) -> None:
        """Remember, per column still int64, the first integer of ``table`` (from the 0-based
        row ``first_row`` of the export) that a double cannot hold."""
        for index in self.int64_columns():
            if index not in self._inexact:
                values = table.column(index)
                found = number_rule.first_inexact(values)
                if found is not None:
                    self._inexact[index] = (first_row + found + 1, values[found].as_py())

    def widen(self, table: pa.Table, schema: pa.Schema, first_row: int) -> pa.Table:
        """``table`` (from the 0-based row ``first_row``) with its int64 columns that are
        double in ``schema`` cast to double, once every integer is checked.

        :raises ExportDataError: an integer a double cannot hold, naming the column and row.
        """
        arrays = []
        for index, (values, field) in enumerate(zip(table.columns, schema, strict=True)):
            if pa.types.is_integer(values.type) and pa.types.is_floating(field.type):
                inexact = number_rule.first_inexact(values)
                if inexact is not None:
                    value = values[inexact].as_py()
                    raise self._inexact_refused(index, first_row + inexact + 1, value)
                values = pc.cast(values, field.type, safe=False)
            arrays.append(values)
        return pa.Table.from_arrays(arrays, schema=schema)

    def _inexact_refused(self, index: int, row: int, value: int) -> ExportDataError:
        column = self.columns[index]
        refusal = number_rule.inexact_in_double(column.name, value, self.doubles.get(index) or None)
        return self.refused(index, row, value, refusal)

    def refused(self, index: int, row: int, value: Any, refusal: NumberRefusal) -> ExportDataError:
        """The refusal of ``value`` (a number or its JSON text) in column ``index``, 1-based
        ``row``, naming the setting that accepts it."""
        text = str(value)
        shown = text if len(text) <= 60 else text[:57] + "..."
        return ExportDataError(
            f"column {self.columns[index].name!r} (row {row} of the export): {shown} is "
            f"{refusal.why}; nothing was written. {refusal.setting}"
        )
