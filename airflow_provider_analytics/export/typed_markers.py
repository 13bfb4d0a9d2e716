"""Masked markers in typed columns, written as ``null`` in a block's bytes before Arrow parses it:
the platform writes ``(已脱敏)`` whatever the property's type, Arrow refuses that text in a
number, boolean, list or decimal column, and a refused block costs a second parse and the
line-by-line rule.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from airflow_provider_analytics.core.arrow_types import is_text
from airflow_provider_analytics.core.byte_scans import positions
from airflow_provider_analytics.export.schema import MASKED_MARKER

if TYPE_CHECKING:
    import pyarrow as pa


class TypedMarkers:
    """Writes ``"<column>": "(已脱敏)"`` as ``"<column>": null`` for the columns Arrow does not
    read as text (``read_schema``), in the two spacings a serializer writes. A match counts only
    where the key's opening quote follows ``{``, ``,`` or white space (not the end of a longer
    key holding an escaped quote); a block with any other match is left alone."""

    def __init__(self, read_schema: pa.Schema) -> None:
        self.marker = json.dumps(MASKED_MARKER, ensure_ascii=False).encode()
        keys = [json.dumps(f.name, ensure_ascii=False).encode() for f in read_schema]
        self.prefixes = tuple(
            key + colon
            for key, field in zip(keys, read_schema, strict=True)
            if not is_text(field.type)  # a text column keeps the marker as its text
            for colon in (b": ", b":")
        )
        self._tail = min((len(p) for p in self.prefixes), default=0)
        self._tails = np.array(sorted({p[-self._tail :] for p in self.prefixes}), dtype=bytes)
        self._anchor = self.marker.index(b"(")  # its rarest byte in JSON text

    def null(self, block: bytes) -> tuple[bytes, int]:
        """``block`` with its typed markers written as null, and how many (0, and ``block``
        itself, when none or a match is not certainly a record's key). Text columns often hold
        the marker in every row: numpy finds the markers, Python looks only at those whose
        bytes before could end a typed key."""
        if not self.prefixes:
            return block, 0
        marker, anchor, tail = self.marker, self._anchor, self._tail
        data = np.frombuffer(block, dtype=np.uint8)
        # where the marker starts (two overlap only on a quote, the second then after ")",
        # which ends no typed key: passed over below), found from its rarest byte
        at = positions(data, marker[anchor]) - anchor
        at = at[(at >= tail) & (at <= len(data) - len(marker))]
        for offset, byte in enumerate(marker):
            if offset != anchor and at.size:
                at = at[data[at + offset] == byte]
        if not at.size:
            return block, 0
        before = data[at[:, None] + np.arange(-tail, 0)]
        at = at[np.isin(before.view(f"S{tail}").ravel(), self._tails)]
        pieces, done, size = [], 0, len(marker)
        for start in at.tolist():
            matched = [len(p) for p in self.prefixes if block.endswith(p, 0, start)]
            if not matched:
                continue
            key = start - max(matched)
            if key < 1 or block[key - 1] not in b"{, \t\r\n":
                return block, 0
            pieces += [block[done:start], b"null"]
            done = start + size
        if not pieces:
            return block, 0
        pieces.append(block[done:])
        return b"".join(pieces), len(pieces) // 2
