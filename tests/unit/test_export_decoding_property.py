"""One decoding rule: the table depends only on the stream's bytes, never on how they are cut.

Hypothesis writes NDJSON with values of every plan type (the odd ones included: full-precision
doubles, ids beyond 2**53, 31-digit numbers, nulls inside lists, masked markers in typed
columns, numbers in string columns, impossible dates), cuts it at arbitrary points into
arbitrary blocks, and the decoder's table must equal the one an independent reference builds
with ``json.loads`` and the rules the README documents. Invalid values must be refused by both,
and the decoder must name a cell the reference also finds invalid.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import pathlib
import re
import tempfile
import zoneinfo
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.core.ndjson import iter_line_blocks
from airflow_provider_analytics.sinks.parquet import parquet_stream
from airflow_provider_analytics.tabular.arrow import BlockDecoder, ExportDataError
from airflow_provider_analytics.tabular.export_schema import export_schema

MARKER = "(已脱敏)"
TIMEZONE = "Asia/Shanghai"
PLAN = [
    {"id": "score", "dataType": "number"},
    {"id": "name", "dataType": "string"},
    {"id": "vip", "dataType": "boolean"},
    {"id": "seen", "dataType": "datetime"},
    {"id": "labels", "dataType": "array<string>"},
    {"id": "phone", "dataType": "string", "masking": 1},
    {"id": "user_id", "dataType": "number"},
]
COLUMNS = ["score", "name", "vip", "seen", "labels", "phone", "user_id", "tag.t_vip"]
KINDS = {
    "score": "float",
    "name": "string",
    "vip": "bool",
    "seen": "datetime",
    "labels": "list",
    "phone": "string",
    "user_id": "decimal",
    "tag.t_vip": "string",
}
SCHEMA = export_schema(COLUMNS, PLAN, timezone=TIMEZONE, overrides={"user_id": "decimal"})


class Invalid(Exception):
    """The reference refuses a cell."""


# ---- the reference: json.loads and the documented rules, nothing shared with the decoder

DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2}(\.\d{1,3})?)?", re.ASCII)


def ref_datetime(text: str) -> dt.datetime:
    if not DATETIME.fullmatch(text):
        raise Invalid
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    try:
        naive = dt.datetime.strptime(text, fmt if " " in text else "%Y-%m-%d")
    except ValueError:
        raise Invalid from None
    naive = naive.replace(microsecond=naive.microsecond // 1000 * 1000)
    local = naive.replace(tzinfo=zoneinfo.ZoneInfo(TIMEZONE))
    return local.astimezone(dt.UTC)


def ref_value(kind: str, value: Any, counts: dict[str, Any]) -> Any:
    """One cell by the documented rule; numbers arrive as ("num", text)."""
    is_number = isinstance(value, tuple)
    if value is None:
        return None
    if value == MARKER and kind != "string":
        counts["masked"] += 1
        return None
    if kind == "string":
        if is_number:
            return value[1]
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return value
    elif kind == "float" and is_number:
        return float(value[1])
    elif kind == "decimal" and (is_number or isinstance(value, str)):
        text = value[1] if is_number else value
        if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
            raise Invalid  # decimals are also taken from numeric strings
        number = decimal.Decimal(text)
        if number.as_tuple().exponent < -9 or abs(number) >= decimal.Decimal(10) ** 29:
            raise Invalid
        with decimal.localcontext(prec=80):
            return number.quantize(decimal.Decimal("1e-9"))
    elif kind == "bool" and isinstance(value, bool):
        return value
    elif kind == "datetime" and isinstance(value, str):
        return ref_datetime(value)
    elif (
        kind == "list"
        and isinstance(value, list)
        and all(item is None or isinstance(item, str) for item in value)
    ):
        return value
    raise Invalid


def reference(lines: list[bytes]) -> tuple[list[dict[str, Any]], dict[str, Any], set[Any]]:
    """Rows, counts and the set of invalid (column, 1-based row) cells."""
    rows, bad = [], set()
    counts: dict[str, Any] = {"masked": 0, "inexact": {}}
    for number, line in enumerate(lines, 1):
        record = json.loads(
            line.decode("utf-8"),
            parse_int=lambda t: ("num", t),
            parse_float=lambda t: ("num", t),
        )
        row = {}
        for column in COLUMNS:
            try:
                row[column] = ref_value(KINDS[column], record.get(column), counts)
            except Invalid:
                bad.add((column, number))
                row[column] = None
        value = row["score"]
        if value is not None and abs(value) >= 2**53:
            counts["inexact"]["score"] = counts["inexact"].get("score", 0) + 1
        rows.append(row)
    return rows, counts, bad


# ---- what the platform may send

doubles = st.floats(allow_nan=False, allow_infinity=False).map(repr)
odd_numbers = st.sampled_from(
    [
        "14.898609719035171",
        "0.30000000000000004",
        "4255875062385414000",
        "-4635244755532264000",
        "9" * 31,
        "1e400",
        "-0",
        "1E5",
        "9007199254740993",
    ]
)
integers = st.integers(-(10**20), 10**20).map(str)
numbers = st.one_of(doubles, odd_numbers, integers)
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x4E20), max_size=4)
dates = st.dates(dt.date(1970, 1, 1), dt.date(2100, 1, 1))
datetimes = st.one_of(
    dates.map(str),
    st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2100, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%d %H:%M:%S")
    ),
    st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2100, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%d %H:%M:%S.") + f"{d.microsecond // 1000:03d}"
    ),
)
odd_datetimes = st.sampled_from(
    [
        "2024-02-30 10:00:00",
        "2024-01-01T10:00:00",
        "2024-01-01t10:00:00",
        "yesterday",
        "2024-01-01 10:00",
        "2024-01-01 10",
        "2024-01-01 10:00:00.1234",
        "2024-01-01 10:00:00.",
        "2024-01-01 24:00:00",
        "2024-01-01 10:00:60",
        "2024-01-01 10:00:00Z",
        "2024-01-01 10:00:00+08",
        "2024-01-01 10:00+08:00",
        "20240101",
        "2024-1-01 10:00:00",
        "\u0662\u0660\u0662\u0664-01-01",
        "2024-01-01\n",
    ]
)
decimals = st.one_of(
    st.integers(-(10**28), 10**28).map(str),
    st.decimals(-(10**6), 10**6, places=4, allow_nan=False).map(str),
)


def raw(text: str) -> str:
    return text


def string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def cell(kind: str, odd_values: bool) -> st.SearchStrategy[str]:
    """The JSON text of one value of a column of ``kind``, usually valid, sometimes odd."""
    marker = st.just(string(MARKER))
    null = st.just("null")
    common = [null, marker]
    valid = {
        "float": numbers,
        "decimal": decimals,
        "string": st.one_of(texts.map(string), cjk.map(string)),
        "bool": st.sampled_from(["true", "false"]),
        "datetime": datetimes.map(string),
        "list": st.lists(st.one_of(st.none(), texts), max_size=3).map(
            lambda items: json.dumps(items, ensure_ascii=False)
        ),
    }[kind]
    odd = {
        "float": st.sampled_from(['"12"', "true", "[1]"]),
        "decimal": st.sampled_from(["1.1234567891", "9" * 31, '"7"', '"+.5"', '"x"', "true"]),
        "string": st.one_of(numbers, st.sampled_from(["true", "false", '["x"]'])),
        "bool": st.sampled_from(['"true"', "1"]),
        "datetime": odd_datetimes.map(string),
        "list": st.sampled_from(['"a,b"', '["a", 1]']),
    }[kind]
    return st.one_of(valid, valid, valid, *common, *([odd] if odd_values else []))


@st.composite
def records(draw: st.DrawFn) -> bytes:
    keys = draw(st.permutations(COLUMNS))
    present = [k for k in keys if draw(st.integers(0, 5))]  # some keys absent
    odd_values = draw(st.integers(0, 19)) == 0  # one record in twenty may hold odd values
    pairs = [f"{string(k)}: {draw(cell(KINDS[k], odd_values))}" for k in present]
    if draw(st.booleans()):
        pairs.append('"other": {"nested": [1, "x"]}')  # keys outside the export are ignored
    return ("{" + ", ".join(pairs) + "}").encode()


@st.composite
def streams(draw: st.DrawFn) -> tuple[list[bytes], list[int], int, int]:
    clean = draw(st.booleans())
    lines = draw(st.lists(records(), min_size=1, max_size=60))
    if clean:  # long runs of clean rows, so Arrow's fast path takes part
        filler = b'{"score": 1.5, "name": "x", "labels": ["a", null], "seen": "2024-01-01"}'
        lines = [x for line in lines for x in (filler,) * draw(st.integers(0, 20)) + (line,)]
    body_size = sum(len(line) + 1 for line in lines)
    cuts = draw(st.lists(st.integers(0, body_size), max_size=12))
    return lines, sorted(set(cuts)), draw(st.integers(1, 4000)), draw(st.integers(1, 50))


def decode(
    lines: list[bytes], cuts: list[int], block_bytes: int, group_rows: int = 1 << 20
) -> tuple[pa.Table, BlockDecoder]:
    """The export's path: blocks parsed and finished, completed per row group of at most
    ``group_rows`` rows while the Parquet file is written, then read back."""
    body = b"".join(line + b"\n" for line in lines)
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    decoder = BlockDecoder(SCHEMA)
    with tempfile.TemporaryDirectory() as directory:
        path = pathlib.Path(directory, "users.parquet")
        with parquet_stream(
            path,
            SCHEMA.arrow_schema,
            compression="none",
            row_group_rows=group_rows,
            prepare=decoder.complete,
        ) as stream:
            for block in iter_line_blocks(chunks, block_bytes):
                stream.add(decoder.finish(block, decoder.parse(block)))
        return pq.read_table(path), decoder


@settings(max_examples=120, deadline=None)
@given(streams())
def test_any_cut_of_any_stream_decodes_as_the_reference_does(
    stream: tuple[list[bytes], list[int], int, int],
) -> None:
    lines, cuts, block_bytes, group_rows = stream
    rows, counts, bad = reference(lines)
    if bad:
        with pytest.raises(ExportDataError) as caught:
            decode(lines, cuts, block_bytes, group_rows)
        named = re.search(r"column '([^']+)' \(row (\d+) of the export\)", str(caught.value))
        assert named is not None, str(caught.value)
        assert (named.group(1), int(named.group(2))) in bad, str(caught.value)
        return
    table, decoder = decode(lines, cuts, block_bytes, group_rows)
    assert table.schema.equals(SCHEMA.arrow_schema, check_metadata=False)
    assert table.to_pylist() == rows
    assert decoder.masked_values == counts["masked"]
    assert decoder.inexact_values == counts["inexact"]
    assert decoder.rows == len(lines)


@pytest.mark.parametrize("block_bytes", [1, 64, 1 << 20])
def test_a_null_in_a_list_stays_null_whatever_its_neighbours(block_bytes: int) -> None:
    """The defect where ``["a", null]`` became ``['a', 'null']`` beside a masked marker."""
    plain = b'{"labels": ["a", null]}'
    marked = b'{"labels": ["a", null], "vip": "' + MARKER.encode() + b'"}'
    for lines in ([plain] * 40, [plain] * 20 + [marked] + [plain] * 20):
        table, _ = decode(lines, [], block_bytes)
        assert set(map(tuple, table.column("labels").to_pylist())) == {("a", None)}


@pytest.mark.parametrize(
    ("bad", "column"),
    [(b'{"seen": "2024-02-30 10:00:00"}', "seen"), (b'{"user_id": ' + b"9" * 31 + b"}", "user_id")],
)
@pytest.mark.parametrize("group_rows", [1, 7, 10, 1 << 20])
def test_a_refusal_in_a_later_row_group_names_the_row_of_the_export(
    bad: bytes, column: str, group_rows: int
) -> None:
    """Datetimes and decimals are completed per row group: the row named is still the
    export's (the 26th line here), whichever group holds it."""
    good = b'{"score": 1.5, "seen": "2024-01-01 10:00:00", "user_id": 7}'
    lines = [good] * 25 + [bad] + [good] * 9
    with pytest.raises(ExportDataError, match=rf"column '{column}' \(row 26 of the export\)"):
        decode(lines, [100, 900], 64, group_rows)
