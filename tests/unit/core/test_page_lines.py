"""A page of cohort users split into its members and the users' lines as sent."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airflow_provider_analytics.core.page_lines import split_page
from airflow_provider_analytics.core.strict_json import StrictJsonError

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=6,
)
users = st.lists(st.dictionaries(st.text(max_size=6), values, max_size=5), max_size=8)


@given(users=users, indent=st.sampled_from([None, 2]), count=st.integers(0, 10**9))
def test_each_user_is_a_line_holding_what_was_sent(users, indent, count) -> None:
    page = {"count": count, "page": 1, "size": len(users), "users": users}
    body = json.dumps(page, indent=indent, ensure_ascii=False).encode()
    parts = split_page(body)
    assert parts.envelope == {"count": count, "page": 1, "size": len(users)}
    assert parts.rows == len(users)
    lines = parts.lines.decode().split("\n")
    assert lines[-1] == ""
    assert [json.loads(line) for line in lines[:-1]] == users


def test_text_with_brackets_braces_and_escapes_stays_inside_its_user() -> None:
    body = b'{"users": [{"a": "},{\\"x\\": [1]", "b": "\\n"}, {"c": "]"}], "count": 2, "size": 2}'
    parts = split_page(body)
    assert parts.rows == 2
    assert parts.lines == b'{"a": "},{\\"x\\": [1]", "b": "\\n"}\n{"c": "]"}\n'


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"count": 1, "users": [], "count": 2}', "'count' is given twice"),
        (b'{"users": [], "users": []}', "'users' is given twice"),
        (b'{"count": NaN, "users": []}', "NaN"),
        (b'{"users": [1, 2]}', r"users\[0\] is not a JSON object"),
        (b'{"users": [{}, "x"]}', r"users\[1\] is not a JSON object"),
        (b'{"users": [{} {}]}', r"users\[1\] is not a JSON object"),
        (b'{"users": [{}]} x', "Extra data"),
        (b'{"users": [{},]}', r"users\[1\] is not a JSON object"),
        (b'{"users": [{}], }', "not valid JSON"),
        (b'[{"users": []}]', "is not a JSON object"),
        (b'{"users": [{"a": 1}', "the users array does not end"),
        (b'{"count": "\xff", "users": [{"a": 1}]}', "not valid UTF-8"),
        (b"", "not valid JSON"),
    ],
)
def test_a_page_that_breaks_the_rules_is_refused_by_name(body: bytes, says: str) -> None:
    with pytest.raises(StrictJsonError, match=says):
        split_page(body)


def test_users_that_are_not_an_array_are_left_to_the_declared_answer() -> None:
    parts = split_page(b'{"count": 1, "users": "none"}')
    assert parts.rows is None and parts.envelope == {"count": 1, "users": "none"}
