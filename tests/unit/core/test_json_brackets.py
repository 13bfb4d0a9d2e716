"""The one measure of JSON nesting (core/json_brackets.py): the deepest and lowest depth of a
text's arrays and objects outside strings, compared with a character walk written here, for a
short text (measured on its brackets) and a long one (vectorised) alike."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from airflow_provider_analytics.core.json_brackets import SMALL, nesting, structure

TRICKY_TEXT = st.text(alphabet='[]{}"\\,: ab\n', max_size=10)
"""Strings full of what the scan must not count: brackets, quotes, backslash runs."""

values = st.recursive(
    st.none() | st.integers() | TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY_TEXT, inner, max_size=3),
    max_leaves=12,
)


def walked(text: str) -> tuple[int, int]:
    """The reference: one character at a time, a string's escapes skipped as JSON reads them."""
    depth = deepest = lowest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
            lowest = min(lowest, depth)
    return deepest, lowest


@seed(20261127)
@settings(max_examples=400, deadline=None)
@given(st.lists(values, min_size=1, max_size=4), st.sampled_from(["\n", "", " "]))
def test_texts_one_after_another_nest_as_a_character_walk_finds(
    documents: list[Any], between: str
) -> None:
    text = between.join(json.dumps(document, ensure_ascii=False) for document in documents)
    data = text.encode()
    padded = data + b" " * SMALL  # the same text, measured the vectorised way
    assert nesting(data) == nesting(padded) == walked(text)


def test_a_stray_closing_bracket_is_a_depth_below_zero_and_deep_values_count_across_lines() -> None:
    assert nesting(b'{"a": 1}]\n[[[') == (2, -1)  # the three after it measured from -1
    assert nesting(b"[\n" * 70 + b"]\n" * 70) == (70, 0)
    assert nesting(b'"[[[[" 1') == (0, 0)
    assert nesting(b'[ "unterminated [[[') == nesting(b'[ "unterminated [[[' + b" " * SMALL)
    assert nesting(b'[ "unterminated [[[') == (1, 1)
    assert nesting(b"") == nesting(b" " * SMALL) == (0, 0)


def test_each_bracket_outside_strings_is_found_with_its_depth() -> None:
    found = structure(b'{"k": ["]", {"\\"[": []}]}')
    assert bytes(found.char.tolist()) == b"{[{[]}]}"
    assert found.depth.tolist() == [1, 2, 3, 4, 3, 2, 1, 0]
