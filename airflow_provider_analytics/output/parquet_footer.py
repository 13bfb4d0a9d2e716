"""Parquet files joined by their bytes: the parts' encoded column chunks copied one after the
other under one footer (Thrift compact ``FileMetaData``) whose offsets are moved, instead of
decoding and encoding every row group again (``docs/export_profile.md``). The footer's schema,
metadata and column orders are those pyarrow's writer gives the final schema, so the joined
file is what the decoding merge writes.
"""

from __future__ import annotations

import io
import struct
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core.errors import AnalyticsError
from airflow_provider_analytics.output.roots import open_own

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pyarrow as pa

    from airflow_provider_analytics.output.storage import StoragePath

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET = range(11)
_STRUCT: Final = 12
_MAGIC: Final = b"PAR1"
_COPY: Final = 1 << 20  # bytes copied at once
# FileMetaData: 2 schema, 3 num_rows, 4 row_groups; RowGroup: 1 columns, 5 file_offset,
# 7 ordinal; ColumnChunk: 2 file_offset, 3 meta_data, 4 offset index, 6 column index;
# ColumnMetaData: 4 codec, 9 data page, 10 index page, 11 dictionary page, 14 bloom filter
_CHUNK_OFFSETS: Final = (2, 4, 6)
_META_OFFSETS: Final = (9, 10, 11, 14)
_MOST_GROUPS: Final = 2**15 - 1  # a row group's ordinal is a 16-bit integer

Fields = dict[int, tuple[int, Any]]
"""A Thrift struct: field id -> (type, value); a list is (element type, items)."""


class FooterUnreadable(AnalyticsError, ValueError):
    """A part's footer this module cannot read: the merge falls back to decoding the part."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _read(data: bytes, at: int, kind: int) -> tuple[Any, int]:
    """The value of Thrift type ``kind`` at ``at`` (compact protocol), and where it ends."""
    if kind in (_TRUE, _FALSE):  # a struct field's boolean is its type
        return kind == _TRUE, at
    if kind == _BYTE:
        return data[at], at + 1
    if kind in (_I16, _I32, _I64):
        raw, at = _varint(data, at)
        return (raw >> 1) ^ -(raw & 1), at
    if kind == _DOUBLE:
        return data[at : at + 8], at + 8
    if kind == _BINARY:
        size, at = _varint(data, at)
        return data[at : at + size], at + size
    if kind in (_LIST, _SET):
        size, element = data[at] >> 4, data[at] & 0x0F
        at += 1
        if size == 15:
            size, at = _varint(data, at)
        items = []
        for _ in range(size):
            if element in (_TRUE, _FALSE):
                items.append(data[at] == _TRUE)
                at += 1
            else:
                item, at = _read(data, at, element)
                items.append(item)
        return (element, items), at
    if kind == _STRUCT:
        fields: Fields = {}
        field = 0
        while (head := data[at]) != _STOP:
            at += 1
            if head >> 4:  # the id as a step from the last one
                field += head >> 4
            else:
                field, at = _read(data, at, _I16)
            value, at = _read(data, at, head & 0x0F)
            fields[field] = (_TRUE if head & 0x0F in (_TRUE, _FALSE) else head & 0x0F, value)
        return fields, at + 1
    raise FooterUnreadable(f"Thrift type {kind} is not in a Parquet footer")


def _put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)


class _Encoded(bytes):
    """A value encoded already, written as it is."""


def _write(out: bytearray, kind: int, value: Any) -> None:
    """Append ``value`` of Thrift type ``kind`` (as :func:`_read` gives it) to ``out``."""
    if isinstance(value, _Encoded):
        out += value
    elif kind == _BYTE:
        out.append(value)
    elif kind in (_I16, _I32, _I64):
        _put_varint(out, (value << 1) ^ (value >> 63))
    elif kind in (_DOUBLE, _BINARY):
        if kind == _BINARY:
            _put_varint(out, len(value))
        out += value
    elif kind in (_LIST, _SET):
        element, items = value
        if len(items) < 15:
            out.append(len(items) << 4 | element)
        else:
            out.append(0xF0 | element)
            _put_varint(out, len(items))
        for item in items:
            if element in (_TRUE, _FALSE):
                out.append(_TRUE if item else _FALSE)
            else:
                _write(out, element, item)
    else:
        field = 0
        for number, (kind_of, item) in sorted(value.items()):
            wire = (_TRUE if item else _FALSE) if kind_of == _TRUE else kind_of
            if 0 < number - field <= 15:
                out.append((number - field) << 4 | wire)
            else:
                out.append(wire)
                _put_varint(out, (number << 1) ^ (number >> 63))
            field = number
            if kind_of != _TRUE:
                _write(out, kind_of, item)
        out.append(_STOP)


def _footer(handle: Any) -> tuple[int, Fields]:
    """Where a Parquet file's footer starts, and the footer."""
    size = handle.seek(0, io.SEEK_END)
    handle.seek(size - 8)
    tail = handle.read(8)
    length = struct.unpack("<i", tail[:4])[0]
    if tail[4:] != _MAGIC or not 0 < length <= size - 12:
        raise FooterUnreadable("not a Parquet file")
    handle.seek(size - 8 - length)
    return size - 8 - length, _read(handle.read(length), 0, _STRUCT)[0]


def _moved(group: Fields, by: int, ordinal: int) -> Fields:
    """A row group's footer entry with every offset moved ``by`` bytes."""
    group = dict(group)
    columns = []
    for chunk in group[1][1][1]:
        chunk = dict(chunk)
        for field in _CHUNK_OFFSETS:
            if field in chunk:
                chunk[field] = (_I64, chunk[field][1] + by)
        meta = dict(chunk[3][1])
        for field in _META_OFFSETS:
            if field in meta:
                meta[field] = (_I64, meta[field][1] + by)
        chunk[3] = (_STRUCT, meta)
        columns.append(chunk)
    group[1] = (_LIST, (_STRUCT, columns))
    if 5 in group:
        group[5] = (_I64, group[5][1] + by)
    if 7 in group:
        group[7] = (_I16, ordinal)
    return group


def _codecs(footer: Fields) -> set[int]:
    return {chunk[3][1][4][1] for group in footer[4][1][1] for chunk in group[1][1][1]}


def join_parts(
    parts: Sequence[StoragePath],
    sink: Any,
    schema: pa.Schema,
    open_writer: Callable[[Any, pa.Schema], Any],
) -> bool:
    """Write the parts' row groups, as encoded, and one footer to the empty ``sink``; False,
    with nothing written, when a part's schema or codec is not the one ``open_writer`` (the
    ``ParquetWriter`` factory) gives ``schema`` (then the caller decodes)."""
    import pyarrow as pa

    empty = io.BytesIO()
    with open_writer(empty, schema) as writer:
        # one row group of no rows, for its codecs (``schema.empty_table()`` loads pandas)
        writer.write_table(pa.Table.from_batches([], schema=schema))
    template = _footer(empty)[1]
    codecs = _codecs(template)
    count = 0
    try:  # every part checked before a byte is written; their footers are not kept
        for part in parts:
            with open_own(part) as handle:
                footer = _footer(handle)[1]
            count += len(footer[4][1][1])
            if count > _MOST_GROUPS or footer[2] != template[2] or not _codecs(footer) <= codecs:
                return False
    except (ValueError, LookupError, OSError):  # the decoding merge names what is wrong
        return False
    groups: list[_Encoded] = []  # each row group's footer entry, encoded as its part is copied
    rows, written = 0, len(_MAGIC)
    sink.write(_MAGIC)
    for part in parts:
        with open_own(part) as handle:
            start, footer = _footer(handle)
            for group in footer[4][1][1]:
                entry = bytearray()
                _write(entry, _STRUCT, _moved(group, written - len(_MAGIC), len(groups)))
                groups.append(_Encoded(entry))
            rows += footer[3][1]
            handle.seek(len(_MAGIC))
            left = start - len(_MAGIC)
            while left > 0:
                chunk = handle.read(min(_COPY, left))
                if not chunk:
                    raise pa.ArrowInvalid(f"{part}: ended before its footer")
                sink.write(chunk)
                left -= len(chunk)
        written += start - len(_MAGIC)
    encoded = bytearray()
    _write(encoded, _STRUCT, {**template, 3: (_I64, rows), 4: (_LIST, (_STRUCT, groups))})
    sink.write(bytes(encoded) + struct.pack("<i", len(encoded)) + _MAGIC)
    return True
