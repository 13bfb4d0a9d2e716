"""The synthetic population: determinism, record shape, value types, and that the export's
NDJSON text says exactly what the paged records say."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta

import numpy as np
import pytest
from analytics_emulator import catalog
from analytics_emulator import fixedwidth as fw
from analytics_emulator.population import BLOCK_ROWS, Population

DEFAULT = catalog.default_user_property_ids()
EVERYTHING = [p.id for p in catalog.USER_PROPERTIES] + list(catalog.TAG_CODES)
MASKED = {p.id for p in catalog.USER_PROPERTIES if p.masking == 1}


@pytest.fixture(scope="module")
def population() -> Population:
    return Population(7)


@pytest.fixture(scope="module")
def sample(population: Population) -> list[dict]:
    """The first 12,000 users (a block and a half) with every property and tag."""
    return population.records(0, 12_000, EVERYTHING)


def test_same_seed_same_users_other_seed_other_users(population: Population) -> None:
    again = Population(7).records(100, 110, DEFAULT)
    assert population.records(100, 110, DEFAULT) == again
    other = Population(8).records(100, 110, DEFAULT)
    assert [r["distinct_id"] for r in other] != [r["distinct_id"] for r in again]


def test_any_range_is_the_slice_of_a_bigger_one(population: Population, sample: list[dict]) -> None:
    across_blocks = population.records(BLOCK_ROWS - 5, BLOCK_ROWS + 5, EVERYTHING)
    assert across_blocks == sample[BLOCK_ROWS - 5 : BLOCK_ROWS + 5]
    assert population.records(3, 3, DEFAULT) == []


def test_property_choice_does_not_change_values(population: Population, sample: list[dict]) -> None:
    narrow = population.records(0, 50, ["age", "nickname"])
    assert narrow == [{"age": r["age"], "nickname": r["nickname"]} for r in sample[:50]]


def test_keys_follow_the_request_with_tags_prefixed(population: Population) -> None:
    record = population.records(0, 1, ["tag_rfm", "age", "$city", "age"])[0]
    assert list(record) == ["tag.tag_rfm", "age", "$city"]


def test_distinct_ids_are_unique_big_and_of_both_signs(sample: list[dict]) -> None:
    ids = [r["distinct_id"] for r in sample]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(i, int) and abs(i) > 2**53 for i in ids)
    assert any(i < 0 for i in ids) and any(i > 0 for i in ids)


def _values(sample: list[dict], key: str) -> list:
    return [r[key] for r in sample if r[key] is not None]


def test_datetimes_use_the_three_formats(sample: list[dict]) -> None:
    formats = {
        "$last_visit_time": ("%Y-%m-%d %H:%M:%S.%f", r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"),
        "$first_visit_time": ("%Y-%m-%d %H:%M:%S", r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"),
        "register_time": ("%Y-%m-%d %H:%M:%S", r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"),
        "birthday": ("%Y-%m-%d", r"\d{4}-\d\d-\d\d"),
    }
    for key, (pattern, shape) in formats.items():
        for value in _values(sample, key)[:500]:
            assert re.fullmatch(shape, value), (key, value)
            datetime.strptime(value, pattern)


def test_numbers_booleans_and_lists_have_their_types(sample: list[dict]) -> None:
    for key in ("age", "total_orders", "legacy_level"):
        assert all(type(v) is int for v in _values(sample, key))
    for key in ("balance", "score"):
        values = _values(sample, key)
        assert all(isinstance(v, float) and round(v, 2) == v for v in values)
        assert any(v != round(v) for v in values)
    assert any(v < 0 for v in _values(sample, "balance"))
    for key in ("is_vip", "subscribed"):
        assert {True, False} == set(_values(sample, key))
    for key in ("interests", "devices"):
        lists = _values(sample, key)
        assert all(isinstance(v, list) and all(isinstance(s, str) for s in v) for v in lists)
        assert any(v == [] for v in lists) and any(len(v) > 1 for v in lists)


def test_strings_include_multibyte_text(sample: list[dict]) -> None:
    nicknames = _values(sample, "nickname")
    assert any(any(ord(ch) > 0xFFFF for ch in n) for n in nicknames), "no emoji"
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in n) for n in nicknames), "no CJK"
    assert any('"' in n or "\\" in n for n in nicknames), "nothing JSON must escape"
    assert len({r["email"] for r in sample if r["email"]}) == len(_values(sample, "email"))


def test_about_five_percent_nulls_but_none_in_ids_and_masks(sample: list[dict]) -> None:
    for key in ("age", "$city", "birthday", "interests", "tag.tag_rfm", "nickname"):
        share = sum(r[key] is None for r in sample) / len(sample)
        assert 0.03 < share < 0.07, (key, share)
    assert all(r["distinct_id"] is not None for r in sample)
    for key in MASKED:
        assert {r[key] for r in sample} == {catalog.MASKED_MARKER}
    assert {r["pending_flag"] for r in sample} == {None}


def test_city_and_province_agree(sample: list[dict]) -> None:
    pairs = {(r["$city"], r["$province"]) for r in sample if r["$city"] and r["$province"]}
    cities = [city for city, _ in pairs]
    assert len(cities) == len(set(cities))


def test_masking_can_be_chosen_per_call(population: Population) -> None:
    plain = population.records(0, 20, ["phone", "age"], masked=set())
    assert all(r["phone"] != catalog.MASKED_MARKER for r in plain)
    marked = population.records(0, 20, ["phone", "age"], masked={"age"})
    assert {r["age"] for r in marked} == {catalog.MASKED_MARKER}


def test_unknown_property_is_always_null(population: Population) -> None:
    assert {r["added_later"] for r in population.records(0, 30, ["added_later"])} == {None}


@pytest.mark.parametrize("block", [0, 1])
def test_export_lines_parse_to_the_records(population: Population, block: int) -> None:
    encoded = population.encode_block(block, EVERYTHING)
    lines = encoded.data.decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) - 1 == encoded.rows == BLOCK_ROWS
    expected = population.records(block * BLOCK_ROWS, (block + 1) * BLOCK_ROWS, EVERYTHING)
    assert [json.loads(line) for line in lines[:-1]] == expected


def test_export_text_is_exact(population: Population) -> None:
    encoded = population.encode_block(0, ["distinct_id", "balance", "score"])
    records = population.records(0, 200, ["distinct_id", "balance", "score"])
    for line, record in zip(encoded.data.decode().split("\n"), records, strict=False):
        assert f'"distinct_id":{record["distinct_id"]},' in line
        for key in ("balance", "score"):
            if record[key] is not None:
                assert re.search(rf'"{key}":-?\d+\.\d\d[,}}]', line), line
                assert f'"{key}":{record[key]:.2f}' in line


def test_encoded_block_slices_lines(population: Population) -> None:
    encoded = population.encode_block(0, ["age"])
    first_three = bytes(encoded.lines(0, 3)).decode().split("\n")
    assert len(first_three) == 4 and first_three[3] == ""
    assert bytes(encoded.lines(2, 3)).decode() == first_three[2] + "\n"
    assert bytes(encoded.lines(0, encoded.rows)) == encoded.data


def test_empty_property_list_gives_empty_objects(population: Population) -> None:
    assert population.encode_block(0, []).data.startswith(b"{}\n{}\n")


# fixedwidth: the vectorised formatters against Python's own formatting


def _texts(matrix: np.ndarray) -> list[str]:
    return [fw.strip_text(row) for row in matrix]


def test_integers_match_python() -> None:
    values = np.array(
        [0, 7, -7, 10, -10, 99, 100, 2**53 + 1, -(2**62), 2**63 - 1, -(2**63) + 1], dtype=np.int64
    )
    assert _texts(fw.integers(values)) == [str(v) for v in values.tolist()]
    rng = np.random.default_rng(1)
    random = rng.integers(-(2**63) + 1, 2**63 - 1, size=2000)
    assert _texts(fw.integers(random)) == [str(v) for v in random.tolist()]


def test_decimals_are_two_digit_exact() -> None:
    hundredths = np.array([0, 5, -5, 100, -100, 123456, -200000, 9999999], dtype=np.int64)
    expected = ["0.00", "0.05", "-0.05", "1.00", "-1.00", "1234.56", "-2000.00", "99999.99"]
    assert _texts(fw.decimals(hundredths)) == expected


@pytest.mark.parametrize(
    ("style", "pattern"),
    [(fw.DATE, "%Y-%m-%d"), (fw.SECONDS, "%Y-%m-%d %H:%M:%S"), (fw.MILLIS, None)],
)
def test_datetimes_match_python(style: str, pattern: str | None) -> None:
    rng = np.random.default_rng(2)
    ms_per_year = 365 * fw.MS_PER_DAY
    # Inside the lookup table's years and outside them (both code paths).
    millis = np.concatenate(
        [
            rng.integers(-80 * ms_per_year, 60 * ms_per_year, size=3000),
            rng.integers(-500 * ms_per_year, 500 * ms_per_year, size=300),
        ]
    )
    epoch = datetime(1970, 1, 1)
    for ms, text in zip(millis.tolist(), _texts(fw.datetimes(millis, style)), strict=True):
        moment = epoch + timedelta(milliseconds=ms)
        if pattern is None:
            wanted = moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
        else:
            wanted = moment.strftime(pattern)
        assert text == f'"{wanted}"'


def test_dates_before_the_epoch() -> None:
    days = (date(1950, 3, 1) - date(1970, 1, 1)).days
    text = _texts(fw.datetimes(np.array([days * fw.MS_PER_DAY]), fw.DATE))
    assert text == ['"1950-03-01"']


def test_with_nulls_and_join_rows() -> None:
    values = fw.with_nulls(fw.integers(np.array([1, 22, 333])), np.array([False, True, False]))
    joined = fw.join_rows([fw.constant(b"[", 3), values, fw.constant(b"]\n", 3)])
    assert bytes(joined) == b"[1]\n[null]\n[333]\n"
