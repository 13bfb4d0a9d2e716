"""The spec's rules for single values: ids, names, remarks, data types, dates, numbers.

Each function returns the accepted (possibly normalised) value or raises
:class:`AnalyticsValidationError` naming the field and the rule, before anything is sent.
A bool is never accepted where a number is expected, although Python treats it as one.
Every string that is sent is bounded in length and free of control characters (which could
split a query parameter or a log line) and of lone surrogates (which no UTF-8 can carry).
"""

from __future__ import annotations

import datetime
import functools
import math
import re
import unicodedata
import zoneinfo
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from airflow_provider_analytics.core.errors import AnalyticsValidationError

if TYPE_CHECKING:
    from collections.abc import Collection

ID_MAX_LENGTH = 100
NAME_MAX_LENGTH = 50
REMARK_MAX_LENGTH = 100
STRING_MAX_LENGTH = 4096
"""Longest free string sent (filter values, ad tracking fields, login user); far beyond any
real value, short enough that a runaway template cannot ship megabytes."""
COUNT_MAX = 2**31 - 1
"""Largest row count (``limit``, ``page``, ``pageSize``): the platform reads them as 32-bit
integers (a Java ``int``)."""
INT64_MAX = 2**63 - 1
"""Largest magnitude of any integer sent: the platform reads numbers as 64-bit values at most."""
COHORT_CODE_RULE = (
    "must not contain '/', '\\', '..' or surrounding whitespace (it names a storage partition)"
)
DATA_TYPES = ("string", "number", "boolean", "datetime", "array<string>")

ID_RULE = "must contain only letters, digits and underscore and not start with a digit"
REF_RULE = ID_RULE + " (a leading $ marks a preset item)"
TEXT_PUNCTUATION = "_ -.,()，。（）"
TEXT_RULE = "letters, digits, space and _ - . , ( ) ，。（）"

_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
_CAMPAIGN_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_UNSENDABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_EMAIL_MAX_LENGTH = 254


def fail(field: str, rule: str, *value: Any) -> NoReturn:
    """Raise the validation error for ``field``; the offending value is shown when given."""
    raise AnalyticsValidationError(field, rule, *value)


def sendable(value: str, field: str, *, max_length: int = STRING_MAX_LENGTH) -> str:
    """A string fit to be sent: at most ``max_length`` characters, no control characters.

    :param value: the string (already known to be one).
    :param field: the parameter, for the message.
    :param max_length: longest accepted length.
    """
    if len(value) > max_length:
        fail(field, f"must be at most {max_length} characters long (got {len(value)})")
    found = _UNSENDABLE.search(value)
    if found is not None:
        fail(
            field,
            f"must not contain control characters or lone surrogates "
            f"(found {found.group()!r} at position {found.start()})",
        )
    return value


def string(value: Any, field: str) -> str:
    """A string (possibly empty) fit to be sent."""
    if not isinstance(value, str):
        fail(field, "must be a string", value)
    return sendable(value, field)


def non_empty_string(value: Any, field: str) -> str:
    """A string with something other than whitespace in it, fit to be sent."""
    if not isinstance(value, str) or not value.strip():
        fail(field, "must be a non-empty string", value)
    return sendable(value, field)


def optional_string(value: Any, field: str) -> str | None:
    """``None`` or a string."""
    return None if value is None else string(value, field)


def is_id(value: str) -> bool:
    """Whether ``value`` follows the id rule of spec 2.5."""
    return len(value) <= ID_MAX_LENGTH and _ID.fullmatch(value) is not None


def is_ref(value: str) -> bool:
    """Whether ``value`` names an existing item: an id, or a preset id such as ``$city``."""
    return is_id(value.removeprefix("$"))


def new_id(value: Any, field: str) -> str:
    """An id for a new property or event (spec 2.5): 1 to 100 characters, no ``$``."""
    text = string(value, field)
    if not 1 <= len(text) <= ID_MAX_LENGTH:
        fail(field, f"must be 1 to {ID_MAX_LENGTH} characters long", value)
    if not is_id(text):
        fail(field, ID_RULE, value)
    return text


def id_ref(value: Any, field: str) -> str:
    """An id that refers to an existing item; preset ids carry a leading ``$``."""
    text = string(value, field)
    if not 1 <= len(text.removeprefix("$")) <= ID_MAX_LENGTH:
        fail(field, f"must be 1 to {ID_MAX_LENGTH} characters long", value)
    if not is_ref(text):
        fail(field, REF_RULE, value)
    return text


def _allowed_in_text(char: str) -> bool:
    # Combining marks belong to the letter before them in many scripts (Devanagari, Thai...).
    return char.isalnum() or char in TEXT_PUNCTUATION or unicodedata.category(char)[0] == "M"


def text(value: Any, field: str, *, min_length: int, max_length: int) -> str:
    """A display text (name or remark): bounded length, no special characters (control
    characters included)."""
    if not isinstance(value, str):
        fail(field, "must be a string", value)
    result = value
    if not min_length <= len(result) <= max_length:
        fail(field, f"must be {min_length} to {max_length} characters long", value)
    bad = next((c for c in result if not _allowed_in_text(c)), None)
    if bad is not None:
        fail(
            field,
            f"must not contain special characters such as {bad!r} (allowed: {TEXT_RULE})",
            value,
        )
    return result


def name(value: Any, field: str = "name") -> str:
    """A display name: 1 to 50 characters, no special characters."""
    return text(value, field, min_length=1, max_length=NAME_MAX_LENGTH)


def remark(value: Any, field: str = "remark") -> str:
    """A remark: at most 100 characters, no special characters."""
    return text(value, field, min_length=0, max_length=REMARK_MAX_LENGTH)


def one_of(value: Any, field: str, choices: Collection[str]) -> str:
    """One of a fixed set of strings (case-sensitive)."""
    if not isinstance(value, str) or value not in choices:
        fail(field, f"must be one of {', '.join(choices)}", value)
    return value


def data_type(value: Any, field: str = "dataType") -> str:
    """One of the data types of spec 2.5."""
    return one_of(value, field, DATA_TYPES)


def date(value: Any, field: str) -> str:
    """A calendar date as ``yyyy-MM-dd``; a ``datetime.date`` is written that way."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            datetime.date.fromisoformat(value)
        except ValueError:
            fail(field, "must be a date that exists on the calendar", value)
        return value
    fail(field, "must be a date written yyyy-MM-dd", value)


def date_range(
    from_value: Any, to_value: Any, *, from_field: str = "fromDate", to_field: str = "toDate"
) -> tuple[str, str]:
    """Two dates, the first not after the second."""
    start, end = date(from_value, from_field), date(to_value, to_field)
    if start > end:
        fail(to_field, f"must not be before {from_field} ({start})", end)
    return start, end


def integer(
    value: Any, field: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An int (not a bool) within optional bounds."""
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        if minimum is not None and maximum is not None:
            rule = f"must be an integer from {minimum} to {maximum}"
        elif minimum == 1:
            rule = "must be a positive integer"
        elif minimum is not None:
            rule = f"must be an integer >= {minimum}"
        else:
            rule = "must be an integer"
        fail(field, rule, value)
    return _within_int64(value, field)


def _within_int64(value: int, field: str) -> int:
    if not -INT64_MAX <= value <= INT64_MAX:
        fail(field, "must fit in a 64-bit integer", value)
    return value


def positive_int(value: Any, field: str) -> int:
    """An int (not a bool) of at least 1."""
    return integer(value, field, minimum=1)


def count(value: Any, field: str) -> int:
    """A row count (``limit``, ``page``, ``pageSize``): an int from 1 to :data:`COUNT_MAX`."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= COUNT_MAX:
        fail(field, f"must be a positive integer up to {COUNT_MAX}", value)
    return value


def cohort_code(value: Any, field: str = "cohort_code") -> str:
    """A cohort code: 1 to 100 characters, sendable, and safe as a storage partition value."""
    if not isinstance(value, str) or not value.strip():
        fail(field, "must be a non-empty string", value)
    code = sendable(value, field, max_length=ID_MAX_LENGTH)
    if "/" in code or "\\" in code or ".." in code or code != code.strip():
        fail(field, COHORT_CODE_RULE, value)
    return code


def flag(value: Any, field: str) -> int:
    """The integer 0 or 1 (the spec's 0/1 filters)."""
    if value not in (0, 1) or isinstance(value, bool) or not isinstance(value, int):
        fail(field, "must be 0 or 1", value)
    return value


def boolean(value: Any, field: str) -> bool:
    """A real bool: not 0/1 and not ``"true"``."""
    if not isinstance(value, bool):
        fail(field, "must be True or False", value)
    return value


def number(value: Any, field: str) -> int | float:
    """A finite int or float (not a bool)."""
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        fail(field, "must be a finite number", value)
    return value if isinstance(value, float) else _within_int64(value, field)


def json_scalar(value: Any, field: str) -> str | int | float | bool:
    """A string, bool or finite number: what a filter parameter may be."""
    if isinstance(value, str | bool):
        return value
    if isinstance(value, int | float):
        return number(value, field)
    fail(field, "must be a string, a number or a bool", value)


def email(value: Any, field: str = "email") -> str:
    """A plausible e-mail address (``local@domain.tld``)."""
    if not isinstance(value, str) or len(value) > _EMAIL_MAX_LENGTH or not _EMAIL.fullmatch(value):
        fail(field, "must be an e-mail address like name@example.com", value)
    return sendable(value, field)


def http_url(value: Any, field: str) -> str:
    """An absolute ``http``/``https`` URL with a host."""
    if isinstance(value, str) and not any(c.isspace() for c in sendable(value, field)):
        try:
            parts = urlsplit(value)
        except ValueError:
            parts = None
        if parts is not None and parts.scheme in ("http", "https") and parts.hostname:
            return value
    fail(field, "must be an absolute http:// or https:// URL with a host", value)


def campaign_id(value: Any, field: str = "campaign_id") -> str:
    """An ad tracking campaign id: 1 to 64 letters, digits, ``_`` or ``-``.

    The create operation returns it as a number, so ints are accepted and written out.
    The character set keeps ``/``, ``..`` and ``?`` out of the paths it is put into.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _CAMPAIGN_ID.fullmatch(value):
        fail(field, "must be 1 to 64 letters, digits, '_' or '-'", value)
    return value


_UTC_OFFSET = re.compile(r"[+-](?:[01]\d|2[0-3]):[0-5]\d")


@functools.cache
def _zone_names() -> frozenset[str]:
    """The IANA zone names of the system's (or the tzdata package's) database, less those
    that name no place: ``Factory`` (a placeholder Arrow refuses), and ``localtime`` and
    ``posixrules`` (whatever the machine that runs the task is set to)."""
    return frozenset(zoneinfo.available_timezones() - {"Factory", "localtime", "posixrules"})


def time_zone(value: Any, field: str = "timezone") -> str:
    """A time zone the platform's datetimes are read in: an IANA name (``Asia/Shanghai``,
    ``UTC``) or a fixed offset (``+08:00``).

    Checked before any request: an unknown zone would otherwise fail only once the first
    datetime value is decoded, after the requests were made.

    :raises AnalyticsValidationError: naming ``field``.
    """
    if isinstance(value, str) and (_UTC_OFFSET.fullmatch(value) or value in _zone_names()):
        return value
    fail(
        field,
        "must be a time zone name such as Asia/Shanghai or UTC, or an offset like +08:00",
        value,
    )
