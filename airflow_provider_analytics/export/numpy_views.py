"""Numpy views of Arrow arrays, built from their buffers.

``Array.to_numpy`` (and giving Arrow a Python constant) makes pyarrow import pandas, ~40 MiB of
a worker's memory that an export does not need; a fixed-width array's values are read from its
data buffer instead, without a copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa


def value_slots(array: pa.Array, dtype: Any) -> np.ndarray[Any, Any]:
    """A fixed-width array's value slots as a view of its data buffer (a null slot holds
    whatever the builder left there)."""
    data = np.frombuffer(array.buffers()[1], dtype=dtype)
    return data[array.offset : array.offset + len(array)]
