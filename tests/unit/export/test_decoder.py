"""NDJSON cohort records -> typed Arrow tables (export/decoder.py)."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_analytics.core.ndjson import (
    MalformedStreamError,
    iter_counted_blocks,
)
from airflow_provider_analytics.export.decoder import (
    _PLAIN_LENGTHS,
    BlockDecoder,
    ExportDataError,
    _plain_texts,
)
from airflow_provider_analytics.export.schema import (
    MASKED_MARKER,
    NUMBER_TYPE,
    TIMESTAMP_TYPE,
    TYPE_TABLE,
    default_properties,
    export_schema,
)

PLAN = [
    {"id": "distinct_id", "dataType": "number", "visible": 1, "plan": 1},
    {"id": "$city", "dataType": "string", "visible": 1, "plan": 1},
    {"id": "is_vip", "dataType": "boolean", "visible": 1, "plan": 1},
    {"id": "seen", "dataType": "datetime", "visible": 1, "plan": 1},
    {"id": "tags", "dataType": "array<string>", "visible": 1, "plan": 1},
    {"id": "income", "dataType": "number", "masking": 1, "visible": 1, "plan": 1},
    {"id": "hidden", "dataType": "string", "visible": 0, "plan": 1},
    {"id": "outside", "dataType": "string", "visible": 1, "plan": 0},
]
COLUMNS = ["distinct_id", "$city", "is_vip", "seen", "tags", "income", "tag.rfm", "$mystery"]


def ndjson(*records: dict, columns: list[str] = COLUMNS) -> bytes:
    """Records as the platform writes them: every requested key present (``null`` when the
    record here does not give it), keys not asked for kept."""
    full = [{**dict.fromkeys(columns), **r} for r in records]
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in full)


def with_nulls(line: bytes, *present: str, columns: list[str] = COLUMNS) -> bytes:
    """A hand-written record line with the requested keys it does not hold added as null."""
    nulls = "".join(f"{json.dumps(c)}: null, " for c in columns if c not in present)
    return b"{" + nulls.encode() + line.removeprefix(b"{")


def decode(data: bytes, columns=COLUMNS, timezone="Asia/Shanghai") -> tuple[pa.Table, BlockDecoder]:
    decoder = BlockDecoder(export_schema(columns, PLAN, timezone=timezone))
    tables, rows = [], []
    for block, _ in iter_counted_blocks([data], 1 << 20):
        rows.append(decoder.rows)
        tables.append(decoder.decode(block))
    schema = decoder.arrow_schema  # a number column may have become double on the way
    tables = [decoder.widen(t, schema, row) for t, row in zip(tables, rows, strict=True)]
    return (pa.concat_tables(tables) if tables else schema.empty_table()), decoder


def test_schema_types_follow_the_plan_and_the_masking_rule() -> None:
    schema = export_schema(COLUMNS, PLAN)
    assert schema.names == COLUMNS
    types = {f.name: f.type for f in schema.arrow_schema}
    assert types == {
        "distinct_id": NUMBER_TYPE,
        "$city": pa.string(),
        "is_vip": pa.bool_(),
        "seen": TIMESTAMP_TYPE,
        "tags": pa.list_(pa.string()),
        "income": pa.string(),  # masked in the plan -> string holding the marker
        "tag.rfm": pa.string(),
        "$mystery": pa.string(),
    }
    origins = {c.name: c.origin for c in schema.columns}
    assert origins["income"] == "masked"
    assert origins["tag.rfm"] == "tag"
    assert origins["$mystery"] == "unknown"


def test_default_properties_are_the_visible_plan_items_in_plan_order() -> None:
    assert default_properties(PLAN) == ["distinct_id", "$city", "is_vip", "seen", "tags", "income"]


def test_overrides_take_arrow_or_plan_types_and_must_name_exported_columns() -> None:
    schema = export_schema(["distinct_id", "$city"], PLAN, overrides={"distinct_id": pa.int64()})
    assert schema.arrow_schema.field("distinct_id").type == pa.int64()
    assert export_schema(["x"], PLAN, overrides={"x": "boolean"}).arrow_schema[0].type == pa.bool_()
    with pytest.raises(ValueError, match="not exported"):
        export_schema(["$city"], PLAN, overrides={"nope": pa.int64()})
    with pytest.raises(ValueError, match="not an Arrow type"):
        export_schema(["$city"], PLAN, overrides={"$city": "text"})
    with pytest.raises(ValueError, match="more than once"):
        export_schema(["$city", "$city"], PLAN)


def test_every_type_decodes_with_doubles_and_timezone() -> None:
    """``distinct_id`` holds decimals here, so it is a double column; its integer beyond 2**53
    is one a double holds exactly (an id printed as a Java double prints it)."""
    table, decoder = decode(
        ndjson(
            {
                "distinct_id": 4255875062385414144,
                "$city": "上海",
                "is_vip": True,
                "seen": "2024-01-05 10:00:00.123",
                "tags": ["a", None],
                "income": MASKED_MARKER,
                "tag.rfm": "high",
            },
            {
                "distinct_id": 14.898609719035171,
                "$city": None,
                "is_vip": False,
                "seen": "2024-01-05",
                "tags": [],
                "income": None,
            },
            {"distinct_id": 0.30000000000000004, "seen": "2024-01-05 23:59:59"},
        )
    )
    rows = table.to_pylist()
    assert [r["distinct_id"] for r in rows] == [
        4255875062385414144.0,
        14.898609719035171,
        0.1 + 0.2,
    ]
    assert table.schema.field("distinct_id").type == pa.float64()
    utc = dt.UTC
    assert rows[0]["seen"] == dt.datetime(2024, 1, 5, 2, 0, 0, 123000, tzinfo=utc)
    assert rows[1]["seen"] == dt.datetime(2024, 1, 4, 16, 0, tzinfo=utc)
    assert rows[2]["seen"] == dt.datetime(2024, 1, 5, 15, 59, 59, tzinfo=utc)
    assert rows[0]["tags"] == ["a", None] and rows[1]["tags"] == []
    assert rows[0]["income"] == MASKED_MARKER
    assert rows[0]["tag.rfm"] == "high" and rows[1]["tag.rfm"] is None
    assert rows[0]["$city"] == "上海"
    assert table.schema == decoder.arrow_schema


def test_exact_decimal_setting_keeps_ids_and_refuses_what_does_not_fit() -> None:
    columns = ["distinct_id", "$city"]
    schema = export_schema(columns, PLAN, overrides={"distinct_id": "decimal"})
    decoder = BlockDecoder(schema)
    data = ndjson({"distinct_id": 4255875062385414001}, {"distinct_id": 0.5}, columns=columns)
    table = decoder.decode(data)
    assert table.column("distinct_id").to_pylist() == [Decimal(4255875062385414001), Decimal("0.5")]
    for value in ["9" * 31, "1.1234567891", "9" * 80]:
        decoder = BlockDecoder(schema)
        data = b'{"distinct_id": 1}\n{"distinct_id": ' + value.encode() + b"}\n"
        data = b"".join(
            with_nulls(line, "distinct_id", columns=columns) + b"\n" for line in data.splitlines()
        )
        with pytest.raises(ExportDataError, match=r"column 'distinct_id' \(row 2 of the export\)"):
            decoder.decode(data)


def test_marker_in_typed_columns_becomes_null_and_is_counted() -> None:
    record = {c: MASKED_MARKER for c in ["distinct_id", "is_vip", "seen", "tags", "$city"]}
    clean = [{"distinct_id": 7}] * 40
    table, decoder = decode(ndjson(*clean, record, *clean))
    row = table.to_pylist()[40]
    assert row["distinct_id"] is None and row["is_vip"] is None
    assert row["seen"] is None and row["tags"] is None
    assert row["$city"] == MASKED_MARKER  # a string column keeps the marker text
    assert decoder.masked_values == 4
    assert decoder.slow_lines == 0  # markers are nulled for Arrow, no line left the fast path
    assert table.column("distinct_id").to_pylist()[41] == 7


@pytest.mark.parametrize("compact", [False, True])
def test_markers_are_nulled_for_arrow_in_both_spacings(compact: bool) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    records = [{"distinct_id": i, "is_vip": True, "$city": MASKED_MARKER} for i in range(30)]
    records[7]["is_vip"] = records[19]["tags"] = MASKED_MARKER  # type: ignore[assignment]
    data = b"".join(
        json.dumps(
            {**dict.fromkeys(COLUMNS), **r}, ensure_ascii=False, separators=separators
        ).encode()
        + b"\n"
        for r in records
    )
    table, decoder = decode(data)
    assert decoder.slow_lines == 0 and decoder.masked_values == 2
    assert table.column("is_vip").to_pylist() == [None if i == 7 else True for i in range(30)]
    assert table.column("distinct_id").to_pylist() == list(range(30))
    assert set(table.column("$city").to_pylist()) == {MASKED_MARKER}


@pytest.mark.parametrize(
    "odd",
    [
        {"other": {"is_vip": MASKED_MARKER}},  # a nested key is not the record's column
        {"$city": '"is_vip": {'},  # a brace in a text
        {'x"is_vip': MASKED_MARKER},  # a longer key ending in the column's, after a quote
    ],
)
def test_markers_beside_braces_that_open_no_record_take_the_line_rule(odd: dict) -> None:
    records = [{"distinct_id": i, "is_vip": False} for i in range(30)]
    records[5] = {**records[5], "is_vip": MASKED_MARKER}
    records[12] = {**records[12], **odd}
    table, decoder = decode(ndjson(*records))
    assert decoder.masked_values == 1 and decoder.slow_lines >= 1
    assert table.column("is_vip").to_pylist() == [None if i == 5 else False for i in range(30)]


def test_marker_only_in_a_datetime_column_keeps_the_fast_path() -> None:
    table, decoder = decode(ndjson({"seen": MASKED_MARKER}, {"seen": "2024-02-01"}))
    assert decoder.slow_lines == 0
    assert decoder.masked_values == 1
    assert table.column("seen").to_pylist()[0] is None


def test_numbers_and_booleans_in_string_columns_become_their_json_text() -> None:
    data = (
        with_nulls(b'{"$mystery": 12.50, "$city": true}', "$mystery", "$city")
        + b"\n"
        + with_nulls(b'{"$mystery": 1e5, "tag.rfm": false}', "$mystery", "tag.rfm")
        + b"\n"
    )
    table, _ = decode(data, [*COLUMNS[:-1], "$mystery"])
    assert table.column("$mystery").to_pylist() == ["12.50", "1e5"]
    assert table.column("$city").to_pylist() == ["true", None]
    assert table.column("tag.rfm").to_pylist() == [None, "false"]


def test_a_tag_named_by_its_bare_code_is_the_tag_column() -> None:
    for name in ("t_vip", "tag.t_vip"):
        schema = export_schema(["$city", name], PLAN)
        assert schema.names == ["$city", "tag.t_vip"]
        table = BlockDecoder(schema).decode(ndjson({"$city": "x", "tag.t_vip": "gold"}))
        assert table.column("tag.t_vip").to_pylist() == ["gold"]
    with pytest.raises(ValueError, match="more than once"):
        export_schema(["t_vip", "tag.t_vip"], PLAN)


@pytest.mark.parametrize(
    ("line", "column", "why"),
    [
        (b'{"is_vip": 5}', "is_vip", "not true or false"),
        (b'{"distinct_id": "abc"}', "distinct_id", "not a number"),
        (b'{"distinct_id": "12"}', "distinct_id", "not a number"),
        (b'{"seen": "yesterday"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01T10:00:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-02-30 10:00:00"}', "seen", "not a calendar date"),
        (b'{"seen": "2024-01-01t10:00:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00:00.1234"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00:00."}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 24:00:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00:60"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00:00Z"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00+08:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01 10:00:00+08"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "20240101"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-1-01 10:00:00"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "\\u0662\\u0660\\u0662\\u0664-01-01"}', "seen", "not yyyy-MM-dd"),
        (b'{"seen": "2024-01-01\\n"}', "seen", "not yyyy-MM-dd"),
        (b'{"tags": "a,b"}', "tags", "not a list"),
        (b'{"tags": ["a", 1]}', "tags", "not a list"),
        (b'{"distinct_id": true}', "distinct_id", "not a number"),
        (b'{"$city": ["x"]}', "$city", "not a string"),
    ],
)
def test_values_that_fit_no_type_fail_naming_column_and_row(
    line: bytes, column: str, why: str
) -> None:
    data = ndjson({"distinct_id": 1}, {"distinct_id": 2}) + with_nulls(line, column) + b"\n"
    with pytest.raises(ExportDataError, match=rf"column '{re.escape(column)}' \(row 3 .*{why}"):
        decode(data)


def test_rows_are_numbered_across_blocks() -> None:
    decoder = BlockDecoder(export_schema(COLUMNS, PLAN))
    decoder.decode(ndjson(*[{"distinct_id": i} for i in range(5)]))
    with pytest.raises(ExportDataError, match=r"row 7 of the export"):
        decoder.decode(ndjson({"seen": "2024-01-01"}, {"seen": "2023-02-29 00:00:00"}))


def test_empty_input_gives_no_blocks() -> None:
    table, decoder = decode(b"")
    assert table.num_rows == 0 and decoder.rows == 0
    assert table.schema == decoder.schema.arrow_schema


def test_cut_inside_a_line_is_a_stream_error() -> None:
    data = ndjson({"distinct_id": 1}, {"distinct_id": 2})
    with pytest.raises(MalformedStreamError, match="ended inside a line"):
        list(iter_counted_blocks([data[:-5]], 8))


def test_final_line_without_newline_is_accepted_when_complete() -> None:
    data = ndjson({"distinct_id": 1}, {"distinct_id": 2}).rstrip(b"\n")
    assert b"".join(b for b, _ in iter_counted_blocks([data], 4)).count(b"\n") == 2
    assert [lines for _, lines in iter_counted_blocks([data], 4)] == [1, 1]


def test_malformed_line_in_the_middle_is_a_stream_error() -> None:
    data = ndjson({"distinct_id": 1}) + b'{"distinct_id": \n' + ndjson({"distinct_id": 3})
    with pytest.raises(MalformedStreamError, match="line 2"):
        decode(data)


def lines_of(*records: dict) -> list[bytes]:
    return ndjson(*records).splitlines()


def test_two_records_on_one_line_are_refused_naming_the_line() -> None:
    lines = lines_of(*[{"distinct_id": i, "$city": f"c{i}"} for i in range(40)])
    joined = [*lines[:10], lines[10] + lines[11], *lines[12:]]  # a newline lost, no record
    with pytest.raises(MalformedStreamError, match=r"line 11 of the export is not valid JSON"):
        decode(b"\n".join(joined) + b"\n")


def test_a_missing_line_and_a_line_of_two_records_are_refused_not_written() -> None:
    """The block's row count stays right: only the line count shows the damage."""
    lines = lines_of(*[{"distinct_id": i, "$city": f"c{i}"} for i in range(40)])
    damaged = [*lines[:5], *lines[6:20], lines[20] + lines[20], *lines[21:]]
    data = b"\n".join(damaged) + b"\n"
    assert len(damaged) == 39 and data.count(b"}{") == 1
    with pytest.raises(MalformedStreamError, match=r"line 20 of the export is not valid JSON"):
        decode(data)


@pytest.mark.parametrize("city", ["c", "{"], ids=["markers nulled", "markers by the line rule"])
def test_a_line_of_two_records_among_typed_markers_is_refused(city: str) -> None:
    """A ``{`` in a value keeps the markers from being nulled for Arrow: the line rule then
    takes the rows Arrow refuses, whose numbers (objects) no longer match the lines."""
    records = [
        {"distinct_id": i, "$city": city, "is_vip": MASKED_MARKER if i % 7 == 0 else True}
        for i in range(40)
    ]
    lines = lines_of(*records)
    joined = [*lines[:29], lines[29] + b" " + lines[30], *lines[31:]]
    with pytest.raises(MalformedStreamError, match=r"line 30 of the export is not valid JSON"):
        decode(b"\n".join(joined) + b"\n")


def test_blank_lines_between_records_are_skipped() -> None:
    records = [{"distinct_id": i} for i in range(40)]
    lines = lines_of(*records)
    data = b"\n".join([b"", *lines[:3], b"", b"  \r", *lines[3:]]) + b"\n\n"
    table, decoder = decode(data)
    assert table.column("distinct_id").to_pylist() == list(range(40))
    assert decoder.rows == 40


def test_clean_blocks_stay_on_the_fast_path() -> None:
    records = [{"distinct_id": i, "$city": "c", "is_vip": i % 2 == 0} for i in range(500)]
    table, decoder = decode(ndjson(*records))
    assert table.num_rows == decoder.rows == 500
    assert decoder.slow_lines == 0


RECORDS = [
    {"distinct_id": i * 10**17 + i, "$city": "城市🏙" * (i % 3), "tags": ["标签", "é"][: i % 3]}
    for i in range(40)
]
BODY = ndjson(*RECORDS)


@settings(max_examples=60, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=25),
    block=st.integers(1, 600),
)
def test_any_chunking_of_the_body_gives_the_same_table(cuts: list[int], block: int) -> None:
    points = sorted(set(cuts))
    chunks = [BODY[a:b] for a, b in zip([0, *points], [*points, len(BODY)], strict=True)]
    decoder = BlockDecoder(export_schema(COLUMNS, PLAN))
    counted = list(iter_counted_blocks(chunks, block))
    blocks = [b for b, _ in counted]
    assert all(b.endswith(b"\n") for b in blocks)
    assert counted == [(b, b.count(b"\n")) for b in blocks]
    table = pa.concat_tables([decoder.decode(b) for b in blocks])
    assert table.num_rows == len(RECORDS)
    assert table.column("distinct_id").to_pylist() == [r["distinct_id"] for r in RECORDS]
    assert table.column("$city").to_pylist() == [r["$city"] for r in RECORDS]
    assert table.column("tags").to_pylist() == [r["tags"] for r in RECORDS]


def test_the_documented_type_table_is_the_one_the_code_uses() -> None:
    page = (Path(__file__).parents[3] / "docs" / "output_tables.md").read_text(encoding="utf-8")
    section = page.split("## Column types", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `")]
    assert table == [
        f"| `{name}` | {arrow_type} | {note} |" for name, arrow_type, note in TYPE_TABLE
    ]
    schema = export_schema([item["id"] for item in PLAN[:5]], PLAN)
    by_plan_type = {
        item["dataType"]: c.arrow_type for item, c in zip(PLAN[:5], schema.columns, strict=True)
    }
    assert by_plan_type == {name: arrow_type for name, arrow_type, _ in TYPE_TABLE}


def test_a_marker_in_a_large_string_column_is_its_text_whatever_came_before() -> None:
    """A column overridden to large_string is text like string: the marker stays its text,
    also in a block after one whose typed markers were nulled."""
    columns = ["distinct_id", "$city"]
    schema = export_schema(columns, PLAN, overrides={"$city": pa.large_string()})
    marked = ndjson({"distinct_id": MASKED_MARKER, "$city": "x"}, columns=columns)
    text = ndjson({"distinct_id": 1, "$city": MASKED_MARKER}, columns=columns)
    alone = BlockDecoder(schema).decode(text)
    after = BlockDecoder(schema)
    first = after.decode(marked)
    second = after.decode(text)
    assert first.column("distinct_id").to_pylist() == [None]
    assert alone.column("$city").to_pylist() == [MASKED_MARKER]
    assert second.column("$city").to_pylist() == [MASKED_MARKER]
    assert after.masked_values == 1


DATETIME_LIKE = st.sampled_from(
    [
        None,
        "",
        "2024-01-01",
        "2024-01-01 10:00:05",
        "2024-01-01 10:00:05.1",
        "2024-01-01 10:00:05.12",
        "2024-01-01 10:00:05.123",
        "2024-01-01T10:00:05",
        "2024-01-01 10:00:0T",
        "2024-01-01 10:00",
        "2024-01-01 10:00:05.1234",
        "yesterday",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.lists(DATETIME_LIKE, max_size=12), min_size=1, max_size=4),
    start=st.integers(0, 5),
)
def test_the_numpy_check_of_datetime_texts_agrees_with_the_compute_one(
    pieces: list[list[str | None]], start: int
) -> None:
    """The lengths-and-no-"T" check datetime columns take first says yes only where the
    compute functions do, also for sliced chunks and nulls."""
    texts = pa.chunked_array([pa.array(p, pa.string()) for p in pieces], pa.string())
    texts = texts.slice(min(start, len(texts)))
    by_compute = pc.all(
        pc.and_(
            pc.is_in(pc.binary_length(texts), value_set=pa.array([10, 19, 21, 22, 23], pa.int32())),
            pc.invert(pc.match_substring(texts, "T")),
        )
    ).as_py()
    if _plain_texts(texts):
        assert by_compute is not False or "" in texts.to_pylist()
    else:
        assert by_compute is False


def test_a_marker_beside_an_odd_datetime_text_is_counted_and_the_text_refused() -> None:
    data = ndjson({"seen": MASKED_MARKER}, {"seen": "2024-02-01"}, {"seen": "2024-02-01T10:00:00"})
    decoder = BlockDecoder(export_schema(COLUMNS, PLAN, timezone="Asia/Shanghai"))
    with pytest.raises(ExportDataError, match=r"column 'seen' \(row 3 of the export\)"):
        decoder.decode(data)
    assert decoder.masked_values == 1


def test_the_marker_is_never_as_long_as_a_datetime_text() -> None:
    # the datetime columns compare their texts with the marker only when a length is not a
    # datetime text's: the marker's own length must never be one
    assert not _PLAIN_LENGTHS[len(MASKED_MARKER.encode())]


def test_a_datetime_a_clock_change_skips_is_read_as_the_transition() -> None:
    """As the reports read it (one rule, core.arrow_types.wall_clock_in): it was the
    microsecond before, a time of the day before."""
    table, _ = decode(ndjson({"seen": "2024-09-08 00:00:00"}), timezone="America/Santiago")
    (seen,) = table.column("seen").to_pylist()
    assert seen == dt.datetime(2024, 9, 8, 4, tzinfo=dt.UTC)
