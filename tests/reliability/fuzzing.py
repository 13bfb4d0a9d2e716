"""Hypothesis strategies for bad input: awkward JSON values and near-valid request bodies.

A body that is wrong in one place finds more parsing bugs than random noise, so most
strategies start from a valid body and change one thing in it: replace a value (at any depth)
with an awkward one, drop a key, or add an unknown one.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Final

from hypothesis import strategies as st


class HugeNumber:
    """Stands for the JSON number ``1e400``, which a JSON parser reads as infinity; as a Python
    value it is simply an object of no JSON type."""

    TEXT: Final = "1e400"

    def __repr__(self) -> str:
        return self.TEXT


_HUGE_MARKER: Final = "\x00huge-number\x00"


def to_json(value: Any, *, ensure_ascii: bool = True) -> bytes:
    """``value`` as JSON text, each :class:`HugeNumber` written as ``1e400``."""

    def encode(item: Any) -> Any:
        if isinstance(item, HugeNumber):
            return _HUGE_MARKER
        raise TypeError(f"{type(item).__name__} is not JSON")

    text = json.dumps(value, ensure_ascii=ensure_ascii, default=encode)
    marker = json.dumps(_HUGE_MARKER, ensure_ascii=ensure_ascii)
    return text.replace(marker, HugeNumber.TEXT).encode()


EDGE_VALUES: Final[tuple[Any, ...]] = (
    HugeNumber(),
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63,
    10**30,
    -(10**30),
    0.5,
    -0.0,
    1e308,
    -1e308,
    "",
    " ",
    "\x00",
    "null",
    "$ALL",
    "event.",
    "event.$Anything",
    "user.age",
    "2024-02-30",
    "0000-01-01",
    "9999-12-31",
    "2024-01-15",
    "１２３",
    "٢٠٢٤-٠١-٠١",
    "a" * 101,
    "../..",
    "%2F",
    "AND",
    "DAY",
    "HOUR",
    "SUM",
    "TOTAL_COUNT",
    "EQ",
    "RANGE",
    [],
    {},
    [None],
    [[]],
    {"": None},
)
"""Values that sit on an edge: huge, empty, of the wrong kind, almost right."""

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)

json_values = st.one_of(
    st.sampled_from(EDGE_VALUES),
    st.recursive(
        _SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=8,
    ),
)
"""Any JSON value, edge values often."""


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value: keys of objects and indexes of arrays, at any depth."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _parent(body: Any, path: tuple[Any, ...]) -> Any:
    for step in path[:-1]:
        body = body[step]
    return body


@st.composite
def mutated(draw: st.DrawFn, body: Any) -> Any:
    """``body`` changed in one place: a value replaced, a key or item removed, or a key added."""
    result = copy.deepcopy(body)
    path = draw(st.sampled_from(_paths(result)))
    action = draw(st.sampled_from(("replace", "remove", "add")))
    if not path:
        return draw(json_values) if action == "replace" else result
    parent = _parent(result, path)
    if action == "replace":
        parent[path[-1]] = draw(json_values)
    elif action == "remove":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
    else:
        parent.insert(path[-1], draw(json_values))
    return result
