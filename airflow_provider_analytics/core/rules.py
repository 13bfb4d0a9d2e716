"""The spec's rules for single values, and :class:`Declared`, the base of every request body.

Each rule returns the accepted (possibly normalised) value or raises
:class:`AnalyticsValidationError` naming the field and the rule, before anything is sent. A bool
is never a number; every string sent is bounded and free of control characters (which could split
a query parameter or a log line) and of lone surrogates (which no UTF-8 can carry).
"""

from __future__ import annotations

import datetime
import difflib
import functools
import math
import re
import unicodedata
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, Self
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import AnalyticsValidationError

if TYPE_CHECKING:
    from collections.abc import Collection

ID_MAX_LENGTH = 100
TABLE_NAMES_RULE = (
    "dot-separated names, none empty, with surrounding whitespace, '/', '\\', '#', '?' or "
    "control characters, or over 255 bytes: each names a folder (a URL's path ends at '#' "
    "and '?')"
)
_NOT_IN_NAME = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f\ud800-\udfff]")
NAME_MAX_LENGTH = 50
REMARK_MAX_LENGTH = 100
STRING_MAX_LENGTH = 4096  # far beyond any real value; a runaway template cannot ship megabytes
COUNT_MAX = 2**31 - 1  # limit, page, pageSize: the platform reads them as a Java int
INT64_MAX = 2**63 - 1  # the platform reads numbers as 64-bit values at most
DATA_TYPES = ("string", "number", "boolean", "datetime", "array<string>")

ID_RULE = "must contain only letters, digits and underscore and not start with a digit"
REF_RULE = ID_RULE + " (a leading $ marks a preset item)"
TEXT_PUNCTUATION = "_ -.,()，。（）"
TEXT_RULE = "letters, digits, space and _ - . , ( ) ，。（）"

_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_EMAIL = re.compile(r"[^@\s]+@[^@\s.]+(?:\.[^@\s.]+)+")
CAMPAIGN_ID_PATTERN = r"[A-Za-z0-9_-]{1,64}"
_CAMPAIGN_ID = re.compile(CAMPAIGN_ID_PATTERN)
_UNSENDABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_EMAIL_MAX_LENGTH = 254


def fail(field: str, rule: str, *value: Any) -> NoReturn:
    """Raise the validation error for ``field``; the offending value is shown when given."""
    raise AnalyticsValidationError(field, rule, *value)


def sendable(value: str, field: str, *, max_length: int = STRING_MAX_LENGTH) -> str:
    """A string fit to be sent: at most ``max_length`` characters, no control characters."""
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


def non_empty_string(value: Any, field: str, *, max_length: int = STRING_MAX_LENGTH) -> str:
    """A string with something other than whitespace in it, fit to be sent."""
    if not isinstance(value, str) or not value.strip():
        fail(field, "must be a non-empty string", value)
    return sendable(value, field, max_length=max_length)


def is_ref(value: str) -> bool:
    """Whether ``value`` names an existing item: an id (spec 2.5), or a preset id (``$city``)."""
    value = value.removeprefix("$")
    return len(value) <= ID_MAX_LENGTH and _ID.fullmatch(value) is not None


def id_ref(value: Any, field: str, *, preset: bool = True) -> str:
    """An id that refers to an existing item; preset ids carry a leading ``$`` (not allowed
    in a new id: ``preset=False``)."""
    text = string(value, field)
    bare = text.removeprefix("$") if preset else text
    if not 1 <= len(bare) <= ID_MAX_LENGTH:
        fail(field, f"must be 1 to {ID_MAX_LENGTH} characters long", value)
    if not _ID.fullmatch(bare):
        fail(field, REF_RULE if preset else ID_RULE, value)
    return text


def new_id(value: Any, field: str) -> str:
    """An id for a new property or event (spec 2.5): 1 to 100 characters, no ``$``."""
    return id_ref(value, field, preset=False)


def text(value: Any, field: str, *, min_length: int, max_length: int) -> str:
    """A display text (name or remark): bounded length, no special characters.

    Combining marks (category M) belong to the letter before them in many scripts (Thai...).
    """
    if not isinstance(value, str):
        fail(field, "must be a string", value)
    if not min_length <= len(value) <= max_length:
        fail(field, f"must be {min_length} to {max_length} characters long", value)
    for c in value:
        if not (c.isalnum() or c in TEXT_PUNCTUATION or unicodedata.category(c)[0] == "M"):
            rule = f"must not contain special characters such as {c!r} (allowed: {TEXT_RULE})"
            fail(field, rule, value)
    return value


def name(value: Any, field: str = "name") -> str:
    """A display name: 1 to 50 characters, no special characters."""
    return text(value, field, min_length=1, max_length=NAME_MAX_LENGTH)


def remark(value: Any, field: str = "remark") -> str:
    """A remark: at most 100 characters, no special characters."""
    return text(value, field, min_length=0, max_length=REMARK_MAX_LENGTH)


def table_identifier(value: Any, field: str, rule: str = "must be namespace.table") -> str:
    """An Iceberg table's identifier: ``namespace.table``, each dot-separated name fit to be
    a folder of the warehouse (a ``/`` would put one table's files inside another's, which
    that table's orphan-file removal then deletes)."""
    names = value.split(".") if isinstance(value, str) else []
    if len(names) < 2 or not all(
        name == name.strip() != "" and not _NOT_IN_NAME.search(name) and len(name.encode()) <= 255
        for name in names
    ):
        fail(field, f"{rule} ({TABLE_NAMES_RULE})", value)
    return value


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
    from_value: Any,
    to_value: Any,
    *,
    from_field: str = "fromDate",
    to_field: str = "toDate",
    max_days: int | None = None,
) -> tuple[str, str]:
    """Two dates, the first not after the second (and at most ``max_days`` days, both
    counted, when given)."""
    start, end = date(from_value, from_field), date(to_value, to_field)
    if start > end:
        fail(to_field, f"must not be before {from_field} ({start})", end)
    span = (datetime.date.fromisoformat(end) - datetime.date.fromisoformat(start)).days + 1
    if max_days is not None and span > max_days:
        fail(to_field, f"must be at most {max_days} days from {from_field} ({start})", end)
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
        kinds = {None: "an integer", 1: "a positive integer"}
        kind = kinds.get(minimum, f"an integer >= {minimum}")
        if minimum is not None and maximum is not None:
            kind = f"an integer from {minimum} to {maximum}"
        fail(field, f"must be {kind}", value)
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
    return value if isinstance(value, float) else integer(value, field)


def positive(value: Any, field: str) -> int | float:
    """A finite number greater than 0 (a threshold; the seconds between two polls, where 0
    would poll in a tight loop)."""
    if number(value, field) <= 0:
        fail(field, "must be greater than 0", value)
    return value


def json_scalar(value: Any, field: str) -> str | int | float | bool:
    """A string fit to be sent, a bool or a finite number: what a filter parameter may be."""
    if isinstance(value, str):
        return sendable(value, field)
    if isinstance(value, bool):
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
    """An absolute ``http``/``https`` URL with a host (and a valid port, if any), without
    ``user:password@`` (which a published link would show) or a backslash in its authority
    (which browsers and Python read as different hosts)."""
    if isinstance(value, str) and not any(c.isspace() for c in sendable(value, field)):
        try:
            parts = urlsplit(value)
            _ = parts.port  # a port that is no number from 0 to 65535 raises
        except ValueError:
            parts = None
        if parts is not None and "@" in parts.netloc:
            fail(field, "must not carry user:password@ (a published link would show it)")
        if (
            parts is not None
            and parts.scheme in ("http", "https")
            and parts.hostname
            and "\\" not in parts.netloc
        ):
            return value
    fail(field, "must be an absolute http:// or https:// URL with a host", value)


def campaign_id(value: Any, field: str = "campaign_id") -> str:
    """An ad tracking campaign id: 1 to 64 letters, digits, ``_`` or ``-`` (which keeps ``/``,
    ``..`` and ``?`` out of the paths it is put into); an int (as create returns it) is written
    out."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not _CAMPAIGN_ID.fullmatch(value):
        fail(field, "must be 1 to 64 letters, digits, '_' or '-'", value)
    return value


_UTC_OFFSET = re.compile(r"[+-](?:[01][0-9]|2[0-3]):[0-5][0-9]")  # ASCII digits


@functools.cache
def _zone_names() -> frozenset[str]:
    """IANA names less those naming no place: ``Factory`` (Arrow refuses it), ``localtime`` and
    ``posixrules`` (whatever the machine running the task is set to)."""
    return frozenset(zoneinfo.available_timezones() - {"Factory", "localtime", "posixrules"})


def time_zone(value: Any, field: str = "timezone") -> str:
    """An IANA zone name (``Asia/Shanghai``, ``UTC``) or a fixed offset (``+08:00``), checked
    before any request (an unknown zone would otherwise fail at the first decoded datetime)."""
    if isinstance(value, str) and (_UTC_OFFSET.fullmatch(value) or value in _zone_names()):
        return value
    fail(
        field,
        "must be a time zone name such as Asia/Shanghai or UTC, or an offset like +08:00",
        value,
    )


def distinct(
    items: Sequence[str],
    field: str,
    *,
    sent: Callable[[str], str] = str,
    position: Callable[[int], str] | None = None,
) -> None:
    """Refuse an item given twice in a list the spec defines as a set (what the platform does
    with a repeat is not shown), naming both positions; two items ``sent`` alike are a repeat."""
    where = position or (lambda i: f"{field}[{i}]")
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        key = sent(item)
        j = first.setdefault(key, i)
        if j == i:
            continue
        if items[j] == item:
            repeat = f"{where(j)} and {where(i)} are both {item!r}"
        else:
            repeat = f"{where(j)} {items[j]!r} and {where(i)} {item!r} are both sent as {key!r}"
        fail(field, f"must not repeat an item (the spec defines it as a set): {repeat}")


# Declared request bodies

_UNION_TAGS = frozenset({"int", "float", "str", "constrained-int", "constrained-str"})


def field_path(location: Sequence[int | str]) -> str:
    """``('rows', 2, 'values', 0)`` as ``rows[2].values[0]`` (union member tags left out)."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part not in _UNION_TAGS and "[" not in part:
            text += f".{part}" if text else part
    return text


def _joined(path: str, field: str) -> str:
    if not path or not field:
        return path or field
    return path + field if field.startswith("[") else f"{path}.{field}"


def refusal(error: ValidationError, root: str = "") -> AnalyticsValidationError:
    """The first fault of a declared body's ``error``, naming its field under ``root``."""
    first = error.errors(include_url=False)[0]
    cause = first.get("ctx", {}).get("error")
    if not isinstance(cause, AnalyticsValidationError):
        missing = first["type"] == "missing"
        cause = AnalyticsValidationError("", "is required" if missing else first["msg"])
    location = [part for part in first["loc"] if not str(part)[:1].isupper()]  # model names
    path = _joined(_joined(root, field_path(location)), cause.field)
    return cause.at(path or "request")


def check(
    rule: Callable[..., Any], *args: Any, optional: bool = False, **kwargs: Any
) -> BeforeValidator:
    """A field's rule: ``rule(value, "", *args)``; the model names the field where it is."""
    return BeforeValidator(
        lambda value: None if optional and value is None else rule(value, "", *args, **kwargs)
    )


def items(
    value: Any,
    what: str,
    *,
    item: Callable[[Any, str], Any] | None = None,
    non_empty: bool = False,
) -> tuple[Any, ...] | None:
    """A list (or tuple) of ``what`` as a tuple, each checked by ``item`` if given (``None``
    stays ``None``); a string is not a list of its characters."""
    if value is None:
        return None
    if (
        isinstance(value, str | bytes | Mapping)
        or not isinstance(value, Sequence)
        or (non_empty and not value)
    ):
        fail("", f"must be a {'non-empty ' if non_empty else ''}list of {what}", value)
    return tuple(value if item is None else (item(v, f"[{i}]") for i, v in enumerate(value)))


def listed(what: str, **options: Any) -> BeforeValidator:
    """A list field's rule (:func:`items`)."""
    return BeforeValidator(lambda value: items(value, what, **options))


class Declared(BaseModel):
    """A request body declared once: the typed form users build and the spec's dict are read
    through the same rules.

    Attributes are snake_case, body keys the spec's camelCase. A fault raises
    :class:`AnalyticsValidationError` naming the field as the body writes it
    (``steps[1].expression``; a part built alone by its class: ``Condition.params``). A body is
    frozen all the way down and :meth:`model_copy` checks its copy again.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=to_camel, validate_by_name=False
    )

    _shape: ClassVar[str] = ""  # the keys as a reader writes them, for messages
    _text: ClassVar[str | None] = None  # the key a bare string fills (a step's expression)
    _kept: ClassVar[frozenset[str]] = frozenset()  # sent even when None (a step's filter)
    _part: ClassVar[bool] = True  # a fault of this body built alone is named by its class

    def __init__(self, /, **data: Any) -> None:
        fields = type(self).model_fields
        keyed = {
            (fields[key].validation_alias or key) if key in fields else key: value
            for key, value in data.items()
        }
        try:
            self.__pydantic_validator__.validate_python(keyed, self_instance=self)
        except ValidationError as error:
            raise refusal(error, type(self)._root()) from None

    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]  # nested: not called

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:  # a typed signature; a nested body is validated as data
            cls.__init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def _root(cls) -> str:
        return cls.__name__ if cls._part else ""

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        """``obj`` (a dict with the spec's keys) read through this declaration; a fault raises
        :class:`AnalyticsValidationError` naming the first field."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as error:
            raise refusal(error, cls._root()) from None

    @classmethod
    def fields_in(cls, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The fields among a typed ``__init__``'s or a method's ``locals()`` (``self`` and
        whatever else is not a field left out)."""
        return {name: value for name, value in arguments.items() if name in cls.model_fields}

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """``json_data`` read by the strict JSON rules (a repeated key, ``NaN`` refused), then
        as :meth:`model_validate`."""
        try:
            body = strict_json.loads(json_data)
        except strict_json.StrictJsonError as error:
            fail(cls._root() or "request", str(error))
        return cls.model_validate(body, **kwargs)

    @classmethod
    def model_validate_strings(cls, obj: Any, **kwargs: Any) -> Self:
        """As :meth:`model_validate`: the rules take a string as a string, never as a number."""
        return cls.model_validate(obj, **kwargs)

    from_body = model_validate  # the typed form of a body dict (checked by the same rules)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied, checked as a new body is (an unknown key refused by
        name, not by a typed ``__init__``'s signature)."""
        copy = type(self).__new__(type(self))
        Declared.__init__(copy, **{**dict(self), **(update or {})})
        return copy

    def to_body(self) -> dict[str, Any]:
        """The body as the client sends it: the spec's keys, ``None`` left out."""
        return self.model_dump(mode="json", by_alias=True)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        if cls._text is not None and isinstance(value, str):
            return {cls._text: value}
        if not isinstance(value, Mapping):
            fail("", cls._kind_rule(), value)
        allowed = [str(field.validation_alias or name) for name, field in cls.model_fields.items()]
        unknown = sorted(str(key) for key in value if key not in allowed)
        if unknown:
            key = unknown[0]
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            shown = key if key.isidentifier() else repr(key)  # an empty or odd key stays visible
            fail(shown, f"is not a known key{hint} (allowed: {', '.join(sorted(allowed))})")
        return value

    @classmethod
    def _kind_rule(cls) -> str:
        dict_form = f"an object (dict) {cls._shape}"
        if cls._text:
            dict_form = f"an expression string (or {dict_form})"
        return f"must be a {cls.__name__} or {dict_form}"

    @model_serializer(mode="wrap")
    def _sent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        body: dict[str, Any] = handler(self)
        return {key: value for key, value in body.items() if value is not None or key in self._kept}
