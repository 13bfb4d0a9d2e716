"""The platform's input rules (spec 2.5, 4.x and 8), checked the way the server does.

Every check raises :class:`~.errors.BadRequest` naming the offending parameter by its
path in the request (``properties[1].dataType``), so tests can see exactly which value
the emulator refused. Optional fields that are absent or JSON ``null`` count as not sent.
"""

from __future__ import annotations

import re
from datetime import date
from typing import TYPE_CHECKING, Any, Final

from analytics_emulator import catalog
from analytics_emulator.errors import BadRequest

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

ID_MAX: Final = 100
NAME_MAX: Final = 50
REMARK_MAX: Final = 100
ID_PATTERN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PRESET_ID_PATTERN: Final = re.compile(r"\$[A-Za-z0-9_]+")
CONVERT_TIME_UNITS: Final = ("DAY", "HOUR", "MINUTE")
_DATE_PATTERN: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_TEXT_PUNCTUATION: Final = frozenset("_ -.,()，。（）")


def join_path(parent: str, child: str | int) -> str:
    """The path of a nested parameter: ``steps`` + ``1`` -> ``steps[1]``, then ``.expression``."""
    if isinstance(child, int):
        return f"{parent}[{child}]"
    return f"{parent}.{child}" if parent else child


def is_text_free_of_special_characters(text: str) -> bool:
    """Letters and digits of any script plus ``_``, space, ``-``, ``.``, ``,``, parentheses
    and the full-width ``，。（）``."""
    return all(ch.isalnum() or ch in _TEXT_PUNCTUATION for ch in text)


def required(body: Mapping[str, Any], key: str, path: str = "") -> Any:
    """The value of a required field; absent or null is a 400."""
    value = body.get(key)
    if value is None:
        raise BadRequest(f"{join_path(path, key)} is required", [join_path(path, key)])
    return value


def string(value: Any, param: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise BadRequest(f"{param} must be a string", [param])
    if not allow_empty and not value.strip():
        raise BadRequest(f"{param} must not be empty", [param])
    return value


def optional_string(body: Mapping[str, Any], key: str, path: str = "") -> str | None:
    value = body.get(key)
    return None if value is None else string(value, join_path(path, key), allow_empty=True)


def identifier(value: Any, param: str, *, is_preset: Callable[[str], bool]) -> str:
    """A property or event id (spec 2.5).

    Ids start with a letter or underscore, then letters, digits and underscores, at most
    100 characters. A ``$`` prefix marks the platform's preset items, so such an id is
    accepted only when it names an existing preset item.

    :param is_preset: tells whether a ``$`` id names a preset item of the right kind.
    """
    text = string(value, param)
    if len(text) > ID_MAX:
        raise BadRequest(f"{param} must have at most {ID_MAX} characters", [param])
    if text.startswith("$"):
        if PRESET_ID_PATTERN.fullmatch(text) and is_preset(text):
            return text
        raise BadRequest(f"{param} may start with '$' only for preset items", [param])
    if not ID_PATTERN.fullmatch(text):
        raise BadRequest(
            f"{param} must use letters, digits and underscores and not start with a digit",
            [param],
        )
    return text


def _text(value: Any, param: str, limit: int, *, allow_empty: bool) -> str:
    text = string(value, param, allow_empty=allow_empty)
    if len(text) > limit:
        raise BadRequest(f"{param} must have at most {limit} characters", [param])
    if not is_text_free_of_special_characters(text):
        raise BadRequest(f"{param} must not contain special characters", [param])
    return text


def name(value: Any, param: str) -> str:
    """A display name: not blank, at most 50 characters, no special characters."""
    return _text(value, param, NAME_MAX, allow_empty=False)


def remark(value: Any, param: str) -> str:
    """A remark: at most 100 characters, no special characters (may be empty)."""
    return _text(value, param, REMARK_MAX, allow_empty=True)


def optional_name(body: Mapping[str, Any], key: str, path: str = "") -> str | None:
    value = body.get(key)
    return None if value is None else name(value, join_path(path, key))


def optional_remark(body: Mapping[str, Any], key: str, path: str = "") -> str | None:
    value = body.get(key)
    return None if value is None else remark(value, join_path(path, key))


def data_type(value: Any, param: str) -> str:
    """One of the five data types of spec 2.5."""
    if value not in catalog.DATA_TYPES:
        raise BadRequest(f"{param} must be one of {', '.join(catalog.DATA_TYPES)}", [param])
    return str(value)


def day(value: Any, param: str) -> date:
    """A ``yyyy-MM-dd`` date."""
    if isinstance(value, str) and _DATE_PATTERN.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise BadRequest(f"{param} must be a date written yyyy-MM-dd", [param])


def date_range(body: Mapping[str, Any], path: str = "") -> tuple[date, date]:
    """Required ``fromDate`` and ``toDate`` with ``fromDate <= toDate`` (both inclusive)."""
    first = day(required(body, "fromDate", path), join_path(path, "fromDate"))
    last = day(required(body, "toDate", path), join_path(path, "toDate"))
    if first > last:
        params = [join_path(path, "fromDate"), join_path(path, "toDate")]
        raise BadRequest("fromDate must not be after toDate", params)
    return first, last


def positive_int(value: Any, param: str) -> int:
    """A JSON integer above zero (booleans and 1.0 are not integers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadRequest(f"{param} must be a positive integer", [param])
    return value


def optional_positive_int(body: Mapping[str, Any], key: str, path: str = "") -> int | None:
    value = body.get(key)
    return None if value is None else positive_int(value, join_path(path, key))


def boolean(value: Any, param: str) -> bool:
    """A JSON ``true`` or ``false`` (not 0/1, not a string)."""
    if not isinstance(value, bool):
        raise BadRequest(f"{param} must be true or false", [param])
    return value


def optional_boolean(body: Mapping[str, Any], key: str, path: str = "") -> bool | None:
    value = body.get(key)
    return None if value is None else boolean(value, join_path(path, key))


def convert_time(value: Any, param: str = "convertTime") -> int:
    """The conversion window length: a positive integer (spec 8)."""
    return positive_int(value, param)


def convert_time_unit(value: Any, param: str = "convertTimeUnit") -> str:
    if value not in CONVERT_TIME_UNITS:
        raise BadRequest(f"{param} must be one of {', '.join(CONVERT_TIME_UNITS)}", [param])
    return str(value)


def flag_query(value: str | None, param: str) -> int | None:
    """An optional ``0``/``1`` query parameter such as ``plan`` or ``dataStatus``."""
    if value is None:
        return None
    if value not in ("0", "1"):
        raise BadRequest(f"{param} must be 0 or 1", [param])
    return int(value)


def required_query(value: str | None, param: str) -> str:
    if value is None or not value.strip():
        raise BadRequest(f"query parameter {param} is required", [param])
    return value


def array(value: Any, param: str) -> list[Any]:
    if not isinstance(value, list):
        raise BadRequest(f"{param} must be an array", [param])
    return value


def obj(value: Any, param: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadRequest(f"{param} must be an object", [param])
    return value
