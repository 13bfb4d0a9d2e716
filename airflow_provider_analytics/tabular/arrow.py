"""Cohort users as Arrow: a typed schema from the tracking plan, NDJSON blocks -> tables.

Column types follow the plan's ``dataType`` (spec 2.5):

============== ================================ =========================================
plan type      Arrow / Parquet type             why
============== ================================ =========================================
string         string                           as is
number         decimal128(38, 9)                exact: ids beyond 2**53 and decimals both
                                                round-trip (BigQuery NUMERIC's shape)
boolean        bool
datetime       timestamp[ms, tz=UTC]            the platform writes local time in one of
                                                three formats; it is read in the
                                                project's timezone and stored as UTC
array<string>  list<string>
============== ================================ =========================================

Masking rule: a property the plan marks ``masking=1`` is a string column (it holds the marker
text ``(已脱敏)``). A marker met in a typed column (the plan says unmasked, the data disagrees)
becomes null and is counted in :attr:`BlockDecoder.masked_values`. Any other value that does not
fit its column's type fails the export with the column, the row and what was found.
``tag.<code>`` keys and keys the plan doesn't know are string columns.

Decoding is done in C++ by ``pyarrow.json`` on whole blocks of lines; a block it refuses (a
marker in a typed column, a number in a string column) is decoded again line by line in Python
with the rules above, so correctness never depends on the fast path.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

MASKED_MARKER: Final = "(已脱敏)"
NUMBER_TYPE: Final = pa.decimal128(38, 9)
TIMESTAMP_TYPE: Final = pa.timestamp("ms", tz="UTC")
_PLAN_TYPES: Final[Mapping[str, pa.DataType]] = {
    "string": pa.string(),
    "number": NUMBER_TYPE,
    "boolean": pa.bool_(),
    "datetime": TIMESTAMP_TYPE,
    "array<string>": pa.list_(pa.string()),
}
_DATETIME_TEXT: Final = re.compile(r"^\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2}(\.\d{1,3})?)?$")


class ExportDataError(ValueError):
    """A value in the export does not fit its column's type (and is not the masked marker)."""


class MalformedStreamError(ValueError):
    """A line of the export is not a JSON object (a corrupted or cut-off stream)."""


@dataclass(frozen=True)
class ExportColumn:
    """One output column.

    :param name: the record key (a property id or ``tag.<code>``).
    :param arrow_type: the column's type in the Parquet file.
    :param origin: ``plan``, ``masked`` (string because the plan masks it), ``tag``,
        ``unknown`` (not in the plan) or ``override`` (set by the caller).
    """

    name: str
    arrow_type: pa.DataType
    origin: str

    @property
    def is_timestamp(self) -> bool:
        return pa.types.is_timestamp(self.arrow_type)

    @property
    def read_type(self) -> pa.DataType:
        """The type the JSON parser produces; timestamps are parsed from their text afterwards."""
        return pa.string() if self.is_timestamp else self.arrow_type


def _as_arrow_type(name: str, value: pa.DataType | str) -> pa.DataType:
    if isinstance(value, pa.DataType):
        return value
    try:
        return _PLAN_TYPES[value]
    except KeyError:
        raise ValueError(
            f"schema override for {name!r}: {value!r} is not an Arrow type or one of "
            f"{', '.join(_PLAN_TYPES)}"
        ) from None


@dataclass(frozen=True)
class ExportSchema:
    """The columns of a cohort export, in a stable order, and the project's timezone."""

    columns: tuple[ExportColumn, ...]
    timezone: str = "UTC"

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])

    @property
    def read_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.read_type) for c in self.columns])


def default_properties(plan: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the platform returns when a request names no properties: visible items of the plan."""
    return [
        str(item["id"])
        for item in plan
        if int(item.get("visible", 1)) == 1 and int(item.get("plan", 1)) == 1
    ]


def export_schema(
    properties: Sequence[str],
    plan: Iterable[Mapping[str, Any]],
    *,
    timezone: str = "UTC",
    overrides: Mapping[str, pa.DataType | str] | None = None,
) -> ExportSchema:
    """Build the export's schema for ``properties`` (in that order) from the tracking plan.

    :param properties: requested user property ids and ``tag.<code>`` keys.
    :param plan: user property records (spec 2.2) as listed by the platform.
    :param timezone: the project's timezone, in which datetime texts are read.
    :param overrides: column -> Arrow type or plan data type, for columns the caller types itself.
    """
    overrides = dict(overrides or {})
    unknown_overrides = set(overrides) - set(properties)
    if unknown_overrides:
        raise ValueError(
            f"schema overrides name columns that are not exported: {sorted(unknown_overrides)}"
        )
    by_id = {str(item["id"]): item for item in plan}
    columns = []
    for name in properties:
        if name in overrides:
            column = ExportColumn(name, _as_arrow_type(name, overrides[name]), "override")
        elif name.startswith("tag."):
            column = ExportColumn(name, pa.string(), "tag")
        elif (item := by_id.get(name)) is None:
            column = ExportColumn(name, pa.string(), "unknown")
        elif int(item.get("masking", 0)) == 1:
            column = ExportColumn(name, pa.string(), "masked")
        else:
            column = ExportColumn(name, _as_arrow_type(name, str(item.get("dataType"))), "plan")
        columns.append(column)
    if len(set(properties)) != len(properties):
        raise ValueError(f"properties are listed more than once: {list(properties)}")
    return ExportSchema(tuple(columns), timezone)


def iter_line_blocks(chunks: Iterable[bytes], block_bytes: int = 4 << 20) -> Iterator[bytes]:
    """Group arbitrary byte chunks into blocks of whole lines of about ``block_bytes``.

    Only newline bytes are cut at, so a multi-byte UTF-8 character is never split. A final
    piece without a newline is yielded as its own block only if it holds a complete JSON
    object; otherwise the stream ended inside a line and :class:`MalformedStreamError` says so.
    """
    pending: list[bytes | memoryview] = []
    size = 0
    for chunk in chunks:
        if not chunk:
            continue
        pending.append(chunk)
        size += len(chunk)
        if size < block_bytes:
            continue
        # Cut at the last newline of the newest chunk: one copy of each byte, no rescans.
        last = chunk
        cut = last.rfind(b"\n") + 1
        if cut == 0:
            continue  # a line longer than this chunk: keep reading
        pending[-1] = memoryview(last)[:cut]
        yield b"".join(pending)
        rest = last[cut:]
        pending, size = ([rest], len(rest)) if rest else ([], 0)
    data = b"".join(pending)
    cut = data.rfind(b"\n") + 1
    if cut:
        yield data[:cut]
    tail = data[cut:].strip()
    if tail:
        try:
            complete = isinstance(json.loads(tail), dict)
        except ValueError:
            complete = False
        if not complete:
            raise MalformedStreamError(
                f"the stream ended inside a line ({len(tail)} bytes after the last newline)"
            )
        yield tail + b"\n"


class BlockDecoder:
    """Decode blocks of NDJSON cohort user records into tables of an :class:`ExportSchema`.

    :param schema: the export's columns.
    """

    def __init__(self, schema: ExportSchema) -> None:
        self.schema = schema
        self.rows = 0
        self.masked_values = 0
        self.slow_blocks = 0
        self._arrow_schema = schema.arrow_schema
        self._parse_options = pa_json.ParseOptions(
            explicit_schema=schema.read_schema, unexpected_field_behavior="ignore"
        )
        # blocks are ~1 MiB, below Arrow's own split size, so its thread pool only adds cost
        self._read_options = pa_json.ReadOptions(use_threads=False, block_size=1 << 20)

    def parse(self, block: bytes) -> pa.Table | None:
        """The fast path alone: Arrow's C++ parser, or None when it refuses the block.

        Thread-safe (it touches no state), so several blocks may be parsed at once; hand the
        results to :meth:`finish` in stream order.
        """
        try:
            return pa_json.read_json(
                io.BytesIO(block),
                read_options=self._read_options,
                parse_options=self._parse_options,
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return None

    def finish(self, block: bytes, parsed: pa.Table | None) -> pa.Table:
        """Complete a block in stream order: the line-by-line path where :meth:`parse` gave
        up, then column order and datetime parsing; counts rows and masked values."""
        if parsed is None:
            self.slow_blocks += 1
            parsed = self._decode_line_by_line(block)
        table = self._finish(parsed)
        self.rows += table.num_rows
        return table

    def decode(self, block: bytes) -> pa.Table:
        """Decode one block of whole lines (as produced by :func:`iter_line_blocks`)."""
        return self.finish(block, self.parse(block))

    def _finish(self, table: pa.Table) -> pa.Table:
        """Put columns in schema order (absent keys -> nulls) and parse datetime texts."""
        arrays = []
        for column in self.schema.columns:
            index = table.schema.get_field_index(column.name)
            values = (
                table.column(index)
                if index >= 0
                else pa.nulls(table.num_rows, type=column.read_type)
            )
            if column.is_timestamp:
                values = self._timestamps(column, values)
            arrays.append(values)
        return pa.Table.from_arrays(arrays, schema=self._arrow_schema)

    def _timestamps(self, column: ExportColumn, texts: pa.ChunkedArray | pa.Array) -> pa.Array:
        try:
            naive = pc.cast(texts, pa.timestamp(column.arrow_type.unit))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            naive = pa.array(
                [self._datetime_value(column, i, t) for i, t in enumerate(texts.to_pylist())],
                type=pa.timestamp(column.arrow_type.unit),
            )
        local = pc.assume_timezone(
            naive, self.schema.timezone, ambiguous="earliest", nonexistent="earliest"
        )
        return pc.cast(local, column.arrow_type)

    def _datetime_value(self, column: ExportColumn, row: int, text: Any) -> dt.datetime | None:
        if text is None:
            return None
        if text == MASKED_MARKER:
            self.masked_values += 1
            return None
        if isinstance(text, str) and _DATETIME_TEXT.match(text):
            return dt.datetime.fromisoformat(text)
        raise self._type_error(column, row, text)

    def _type_error(self, column: ExportColumn, row: int, value: Any) -> ExportDataError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return ExportDataError(
            f"column {column.name!r} (row {self.rows + row + 1} of the export): expected "
            f"{column.arrow_type}, got {type(value).__name__} {shown}; override the column's type "
            "with schema_overrides if the plan's data type is wrong"
        )

    def _decode_line_by_line(self, block: bytes) -> pa.Table:
        records: list[dict[str, Any]] = []
        for number, line in enumerate(block.split(b"\n")):
            if not line.strip():
                continue
            try:
                record = json.loads(line, parse_float=decimal.Decimal)
            except ValueError:
                raise MalformedStreamError(
                    f"line {self.rows + len(records) + 1} of the export is not JSON "
                    f"(block line {number + 1})"
                ) from None
            if not isinstance(record, dict):
                raise MalformedStreamError(
                    f"line {self.rows + len(records) + 1} of the export is not a JSON object"
                )
            records.append(record)
        arrays = []
        for column in self.schema.columns:
            coerce = _COERCERS.get(_kind(column.read_type), _coerce_as_is)
            values: list[Any] = []
            for row, record in enumerate(records):
                value = record.get(column.name)
                if value is None:
                    values.append(None)
                elif value == MASKED_MARKER and column.read_type != pa.string():
                    self.masked_values += 1
                    values.append(None)
                else:
                    try:
                        values.append(coerce(value))
                    except (TypeError, ValueError, decimal.InvalidOperation):
                        raise self._type_error(column, row, value) from None
            try:
                arrays.append(pa.array(values, type=column.read_type))
            except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
                raise ExportDataError(
                    f"column {column.name!r}: a value does not fit {column.read_type} ({error}); "
                    "override the column's type with schema_overrides"
                ) from None
        return pa.Table.from_arrays(arrays, schema=self.schema.read_schema)


def _kind(arrow_type: pa.DataType) -> str:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_decimal(arrow_type):
        return "decimal"
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type):
        return "float"
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return "list"
    return "other"


def _coerce_string(value: Any) -> str:
    """A non-string value in a string column becomes its JSON text (numbers exactly)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | decimal.Decimal):
        return str(value)
    return json.dumps(value, default=float, ensure_ascii=False)


def _coerce_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool):
        raise TypeError("a boolean is not a number")
    if isinstance(value, int | decimal.Decimal):
        return decimal.Decimal(value)
    if isinstance(value, str) and value.strip():
        return decimal.Decimal(value.strip())
    raise TypeError("not a number")


def _coerce_integer(value: Any) -> int:
    number = _coerce_decimal(value)
    if number != number.to_integral_value():
        raise ValueError("not an integer")
    return int(number)


def _coerce_float(value: Any) -> float:
    return float(_coerce_decimal(value))


def _coerce_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise TypeError("not a boolean")


def _coerce_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return [item if isinstance(item, str) else _coerce_string(item) for item in value]


def _coerce_as_is(value: Any) -> Any:
    return value


_COERCERS = {
    "string": _coerce_string,
    "decimal": _coerce_decimal,
    "integer": _coerce_integer,
    "float": _coerce_float,
    "boolean": _coerce_boolean,
    "list": _coerce_list,
}
