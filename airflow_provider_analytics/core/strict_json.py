"""The one strict JSON decoder: every answer, export line and file the package reads as JSON
goes through it, so a script and a DAG read the same bytes the same way.

Refused, where ``json.loads`` would accept them silently:

- ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; they would become numbers);
- a key repeated in one object (the later value would win, the earlier vanish);
- bytes that are not UTF-8 (JSON text is UTF-8; a replacement would change a value);
- a ``\\uD800``-style escape of half a surrogate pair, which decodes to a string no UTF-8
  writer (Parquet, a warehouse) can hold.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from airflow_provider_analytics.core.errors import AnalyticsError


class StrictJsonError(AnalyticsError, ValueError):
    """The text is not strict JSON. The message is a predicate (``is not valid JSON (...)``)
    for the caller to put after its subject (``line 4 of the export``, ``the answer``)."""


def refuse_constant(name: str) -> Any:
    """``parse_constant`` hook: ``NaN`` and the infinities are not JSON."""
    raise StrictJsonError(f"is not strict JSON: {name} is not a JSON value")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: an object whose key is repeated is refused, naming the key."""
    record = dict(pairs)
    if len(record) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise StrictJsonError(
                    f"is not strict JSON: the key {key[:80]!r} is given twice in one object; "
                    "JSON readers "
                    "would keep only the last"
                )
            seen.add(key)
    return record


def decoder(**number_hooks: Any) -> json.JSONDecoder:
    """A decoder with the strict rules; ``number_hooks`` (``parse_int``, ``parse_float``) let
    a caller keep numbers as it needs them (the export keeps their text)."""
    return json.JSONDecoder(
        parse_constant=refuse_constant, object_pairs_hook=unique_keys, **number_hooks
    )


_DECODER: Final = decoder()


def loads(data: bytes | str, *, using: json.JSONDecoder = _DECODER) -> Any:
    """Decode one JSON document by the strict rules.

    :param data: the document, UTF-8 bytes or text.
    :param using: a decoder made by :func:`decoder` (numbers kept as the caller needs them).
    :raises StrictJsonError: it is not strict JSON; the message says why (and the line and
        column of a syntax error).
    """
    if isinstance(data, bytes | bytearray | memoryview):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StrictJsonError(f"is not valid UTF-8 (byte {exc.start})") from None
    else:
        text = data
    try:
        value = using.decode(text)
    except json.JSONDecodeError as exc:
        raise StrictJsonError(
            f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then are the decoded strings walked
        _refuse_lone_surrogates(value)
    return value


_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: Any) -> None:
    # json pairs the halves of a character; a half left over cannot be written as UTF-8
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        raise StrictJsonError(
            "is not strict JSON: a \\u escape names half a surrogate pair, which is no character"
        ) from None
