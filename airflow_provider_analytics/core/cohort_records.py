"""What one line of a cohort export (spec 4.13) must be: the one rule every reader applies.

The client's line and record readers and the Parquet decoder all read a line through
:func:`decode_line` (strict JSON, one object) and check its keys with :class:`RecordKeys`, so a
script and a DAG refuse the same lines with the same words. A record holds every requested key
(spec 2.6: ``null`` when the user has no value), so an absent one is a protocol fault; the
platform's error object sent with a success status is refused by name; a key not asked for is
counted and logged once (the first :data:`MAX_LISTED_KEYS` by name, masked), never dropped
without a word.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Final

from airflow_provider_analytics.core import strict_json
from airflow_provider_analytics.core.errors import AnalyticsProtocolError, bounded_repr
from airflow_provider_analytics.core.ndjson import MalformedStreamError, describe_unfinished
from airflow_provider_analytics.core.redaction import Redactor

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

log = logging.getLogger(__name__)

OPERATION: Final = "export_cohort_users"
ERROR_OBJECT_KEYS: Final = frozenset({"code", "msg", "data"})
"""The keys of the platform's error body (API notes, "Status codes and error bodies")."""
_SHOWN_KEYS: Final = 5
MAX_LISTED_KEYS: Final = 100
"""Keys not asked for that are listed and logged by name; further ones are only counted."""


class ExportRecordError(AnalyticsProtocolError):
    """A line is JSON but not a record of this export (a requested key absent, or the
    platform's error object). Not retried: the platform said what it said."""

    transient = False


def decode_line(
    line: bytes, number: int, *, using: json.JSONDecoder | None = None
) -> dict[str, Any]:
    """Line ``number`` (1-based, blank lines not counted) as a JSON object by the strict rules,
    ``using`` a :func:`strict_json.decoder` where numbers are kept as their text."""
    try:
        record = strict_json.loads(line) if using is None else strict_json.loads(line, using=using)
    except strict_json.StrictJsonError as error:
        if line.lstrip()[:1] in (b"<", b"["):
            raise MalformedStreamError(describe_unfinished(line, number - 1)) from None
        detail = f"line {number} of the export {error}"
        if not str(error).startswith("is not strict JSON"):
            detail += (
                "; run the export again: a damaged line usually means the stream was damaged "
                "on its way"
            )
        raise MalformedStreamError(detail) from None
    if not isinstance(record, dict):
        raise MalformedStreamError(
            f"line {number} of the export is not a JSON object but a {type(record).__name__}"
        )
    return record


def _number(value: Any) -> Any:
    """A number a caller's decoder kept as its text (a ``str`` subclass), as a number."""
    if isinstance(value, str) and type(value) is not str:
        return strict_json.loads(value)
    return value


def is_error_object(body: Mapping[str, Any]) -> bool:
    """Whether ``body`` is the platform's error object: ``code`` and ``msg`` (and ``data``),
    nothing else."""
    return "code" in body and "msg" in body and body.keys() <= ERROR_OBJECT_KEYS


class RecordKeys:
    """The ``keys`` every record of one export must hold (``None``: unknown, only the error
    object is refused), and a count of the keys beyond them, named through ``redactor`` (a key
    may be a token the server echoes)."""

    def __init__(self, keys: Iterable[str] | None, redactor: Redactor | None = None) -> None:
        self.keys: tuple[str, ...] | None = None if keys is None else tuple(dict.fromkeys(keys))
        self._expected = None if self.keys is None else frozenset(self.keys)
        self._redactor = redactor or Redactor()
        self._listed: dict[str, str] = {}  # key -> its name in ``unexpected``, secrets masked
        self.unexpected: dict[str, int] = {}  # masked key not asked for -> records holding it
        self.unlisted = 0  # times a record held a key beyond those in ``unexpected``

    def require(self, record: Mapping[str, Any], row: int) -> None:
        """Refuse ``record`` (1-based ``row``) unless it holds every requested key and is no
        error object; counts nothing."""
        expected = self._expected
        if expected is not None and record.keys() >= expected:
            return
        # the platform's error body, unless a record may be so
        if is_error_object(record) and (expected is None or not expected >= ERROR_OBJECT_KEYS):
            code, msg = _number(record.get("code")), record.get("msg")
            raise ExportRecordError(
                f"{OPERATION}: row {row} of the export is the platform's error object (code "
                f"{bounded_repr(code)}, msg {bounded_repr(msg)}), not a cohort user record; the "
                "platform failed while it answered with a success status. Nothing was written; "
                "run the export again later, and report the message to the platform's operators "
                "if it stays",
                code=code,
                msg=str(msg) if isinstance(msg, str) else None,
                data=_number(record.get("data")),
                operation=OPERATION,
            )
        if expected is None:
            return
        missing = [key for key in self.keys or () if key not in record]
        shown = ", ".join(bounded_repr(key) for key in missing[:_SHOWN_KEYS])
        if len(missing) > _SHOWN_KEYS:
            shown += f" and {len(missing) - _SHOWN_KEYS} more"
        raise ExportRecordError(
            f"{OPERATION}: row {row} of the export lacks the "
            f"{'key' if len(missing) == 1 else 'keys'} {shown} that the export "
            "asked for; a cohort user record holds every requested property, null when the user "
            "has no value (spec 2.6), so the answer is not one this export can trust. Nothing "
            "was written",
            operation=OPERATION,
        )

    def check(self, record: Mapping[str, Any], row: int) -> None:
        """:meth:`require`, then count (and log the first time) each key not asked for."""
        self.require(record, row)
        expected = self._expected
        if expected is None or len(record) == len(expected):
            return
        for key in record:
            if key not in expected:
                self.count(key, 1, row)

    def met(self, key: str) -> bool:
        """Whether :meth:`count` of ``key`` logs nothing (so needs no row)."""
        return key in self._listed or self.unlisted > 0

    def count(self, key: str, records: int, row: int) -> None:
        """Count ``records`` more records holding ``key``, which the export did not ask for;
        the first time, log it naming ``row`` (1-based), the first record that held it."""
        name = self._listed.get(key)
        if name is None and len(self._listed) < MAX_LISTED_KEYS:
            name = self._listed[key] = self._redactor.text(key)
            log.warning(
                "%s: row %d of the export holds the key %s, which the export did not "
                "ask for; such keys are counted in unexpected_keys and not written",
                OPERATION,
                row,
                bounded_repr(name),
            )
        if name is not None:
            self.unexpected[name] = self.unexpected.get(name, 0) + records
            return
        if not self.unlisted:
            log.warning(
                "%s: row %d of the export holds a key not asked for beyond the first %d; "
                "further ones are counted in unexpected_keys_unlisted, neither named nor logged",
                OPERATION,
                row,
                MAX_LISTED_KEYS,
            )
        self.unlisted += records
