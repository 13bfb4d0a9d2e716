"""Split labels: how property values become the ``byValue`` strings of analysis rows.

Without buckets a value's label is its text (eventlog_columns.value_label); with buckets
b1 < ... < bn a number falls into ``-∞~b1``, ``b1~b2``, ..., ``bn~+∞``, each interval
closed on its lower bound. A null value (or a value the property's type cannot hold) gets
the unknown label ``未知``. Rows are grouped by label text.

Label order (used for rows): buckets in interval order, numbers and datetimes by value,
booleans false before true, strings and lists by label text, and ``未知`` always last.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from analytics_emulator.eventlog_columns import (
    UNKNOWN_LABEL,
    format_number,
    value_label,
)

if TYPE_CHECKING:
    from analytics_emulator.eventlog_columns import Column

SortKey = tuple[int, Any]
UNKNOWN_SORT_KEY: SortKey = (1, 0)


@dataclass(frozen=True)
class SplitLabels:
    """Per-row label ids into ``labels``; ``sort_keys[i]`` orders label i."""

    ids: np.ndarray
    labels: list[str]
    sort_keys: list[SortKey]


def bucket_labels(bounds: tuple[float, ...]) -> list[str]:
    """Interval labels for bucket bounds, e.g. (600, 800) -> -∞~600, 600~800, 800~+∞."""
    texts = [format_number(b) for b in bounds]
    edges = ["-∞", *texts, "+∞"]
    return [f"{low}~{high}" for low, high in itertools.pairwise(edges)]


def _value_sort_key(data_type: str, entry: Any, label: str) -> SortKey:
    if label == UNKNOWN_LABEL:
        return UNKNOWN_SORT_KEY
    if data_type in {"number", "datetime"}:
        return (0, entry.item() if isinstance(entry, np.generic) else entry)
    if data_type == "boolean":
        return (0, bool(entry))
    return (0, label)


def split_labels(column: Column, buckets: tuple[float, ...] | None) -> SplitLabels:
    """Label every row of ``column`` (see the module docstring).

    :param column: the split property's values at the rows.
    :param buckets: ascending bucket bounds for a number property, or None.
    """
    if buckets is not None:
        labels = [*bucket_labels(buckets), UNKNOWN_LABEL]
        entry_ids = np.searchsorted(
            np.asarray(buckets, dtype=np.float64),
            column.dictionary.astype(np.float64),
            side="right",
        )
        keys: list[SortKey] = [(0, i) for i in range(len(buckets) + 1)] + [UNKNOWN_SORT_KEY]
        return SplitLabels(column.per_row(entry_ids, len(buckets) + 1), labels, keys)
    position: dict[str, int] = {UNKNOWN_LABEL: 0}
    labels = [UNKNOWN_LABEL]
    keys = [UNKNOWN_SORT_KEY]
    entry_ids = np.empty(len(column.dictionary), dtype=np.int64)
    for i, entry in enumerate(column.dictionary):
        label = value_label(column.data_type, entry)
        if label not in position:
            position[label] = len(labels)
            labels.append(label)
            keys.append(_value_sort_key(column.data_type, entry, label))
        entry_ids[i] = position[label]
    return SplitLabels(column.per_row(entry_ids, 0), labels, keys)
