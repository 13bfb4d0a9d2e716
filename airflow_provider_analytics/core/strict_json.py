"""The one strict JSON decoder every answer, export line and file read as JSON goes through.

It refuses what ``json.loads`` accepts silently: ``NaN`` and the infinities (written, or a
number beyond a double's range such as ``1e400``), a key repeated in one object, bytes that
are not UTF-8, and an escape of half a surrogate pair (no UTF-8 writer can hold it); an
integer too long for ``int`` is refused by name, not with a bare ``ValueError``. It keeps the
bounds, before decoding: :data:`MAX_BYTES` long, :data:`MAX_DEPTH` deep (not a bare
``RecursionError``), and :func:`first_fault` stops validation at an array's
first fault (a 50 MB array of zeros would otherwise take gigabytes of errors).
"""

from __future__ import annotations

import copy
import json
import math
import re
import sys
from collections import Counter
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core.errors import AnalyticsError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

MAX_DEPTH: Final = 64  # the platform's answers are a few levels deep
MAX_BYTES: Final = 128 * 2**20
"""Longest document read: far beyond any answer, short of what exhausts a worker once decoded
(a JSON document takes several times its size as Python objects)."""


class StrictJsonError(AnalyticsError, ValueError):
    """Not strict JSON; the message is a predicate (``is not valid JSON (...)``) for the caller
    to put after its subject (``line 4 of the export``)."""


def refuse_constant(name: str) -> Any:
    """``parse_constant`` hook: ``NaN`` and the infinities are not JSON."""
    raise StrictJsonError(f"is not strict JSON: {name} is not a JSON value")


def finite_float(text: str) -> float:
    """``parse_float`` hook: a number beyond a double's range is refused, not read as infinity."""
    value = float(text)
    if math.isinf(value):
        raise StrictJsonError(f"is not strict JSON: {text[:40]} is beyond a double's range")
    return value


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: an object whose key is repeated is refused, naming the key."""
    record = dict(pairs)
    if len(record) != len(pairs):
        key = next(key for key, times in Counter(name for name, _ in pairs).items() if times > 1)
        raise StrictJsonError(
            f"is not strict JSON: the key {key[:80]!r} is given twice in one object; "
            "JSON readers would keep only the last"
        )
    return record


def decoder(**number_hooks: Any) -> json.JSONDecoder:
    """A decoder with the strict rules; ``number_hooks`` (``parse_int``, ``parse_float``) let
    a caller keep numbers as it needs them (the export keeps their text)."""
    hooks = {"parse_float": finite_float, **number_hooks}
    return json.JSONDecoder(parse_constant=refuse_constant, object_pairs_hook=unique_keys, **hooks)


_DECODER: Final = decoder()


def loads(data: bytes | bytearray | str, *, using: json.JSONDecoder = _DECODER) -> Any:
    """Decode one JSON document (UTF-8 bytes or text) by the strict rules, ``using`` a
    :func:`decoder`; :class:`StrictJsonError` says why not."""
    if len(data) > MAX_BYTES:
        raise StrictJsonError(
            f"is {len(data)} bytes long, more than the {MAX_BYTES} bytes a document may be"
        )
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if _deeper_than(raw, MAX_DEPTH):
        raise _too_deep()
    try:
        text = data if isinstance(data, str) else raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StrictJsonError(f"is not valid UTF-8 (byte {exc.start})") from None
    try:
        value = using.decode(text)
    except json.JSONDecodeError as exc:
        raise StrictJsonError(
            f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:  # brackets that never close: the depth check cannot pair them
        raise _too_deep() from None
    except ValueError as exc:  # an integer too long for int(); a hook's refusal passes as it is
        if isinstance(exc, StrictJsonError):
            raise
        raise StrictJsonError(
            f"is not strict JSON: an integer has more than {sys.get_int_max_str_digits()} digits"
        ) from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then are the decoded strings walked
        try:  # json pairs the halves of a character; a half left over cannot be UTF-8
            json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            raise StrictJsonError(
                "is not strict JSON: a \\u escape names half a surrogate pair, which is no "
                "character"
            ) from None
    return value


_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _too_deep() -> StrictJsonError:
    return StrictJsonError(
        f"is nested deeper than {MAX_DEPTH} levels of arrays and objects, the most a document "
        "may be"
    )


def _deeper_than(data: bytes, limit: int) -> bool:
    """Whether ``data`` nests arrays and objects deeper than ``limit``, before decoding it
    (:func:`~airflow_provider_analytics.core.json_brackets.nesting`, imported only for a
    document with more brackets than that); brackets that do not pair are the decoder's to
    name."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    from airflow_provider_analytics.core.json_brackets import nesting

    return nesting(data)[0] > limit


def first_fault(adapter: TypeAdapter[Any]) -> Any:
    """A validator of ``adapter``'s type that stops at the first fault of every array (its core
    schema with ``fail_fast`` on every sequence), so an answer's errors are bounded by its
    declaration, not its length; the adapter itself where a pydantic plugin wraps the class."""
    validator_type = type(adapter.validator)
    if validator_type.__name__ != "SchemaValidator":
        return adapter
    schema = copy.deepcopy(adapter.core_schema)
    nodes: list[Any] = [schema]
    while nodes:
        node = nodes.pop()
        if isinstance(node, dict):
            if node.get("type") in ("list", "tuple", "set", "frozenset", "generator"):
                node["fail_fast"] = True
            nodes.extend(node.values())
        elif isinstance(node, list | tuple):
            nodes.extend(node)
    return validator_type(schema)  # type: ignore[call-arg]
