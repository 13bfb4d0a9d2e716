"""What a table holds: the identity of each run's rows, so many writers can share one table.

A cohort table holds cohorts, and its rows carry ``cohort_code``; a report table holds reports,
and its rows carry ``report_key``. A run replaces exactly its own (identity, day): two cohorts
exported to one table on one day both stay, and so do two funnels with different steps.

This module is the one rule of what an identity may be. Every :class:`Identity` is checked when
it is made, so the operators, the jobs, the migration command and the report key's digest all
refuse the same values with the same words, before any request:

- a cohort code is 1 to 100 characters, fit to be sent, without ``/``, ``\\``, ``..``, ``=`` or
  surrounding whitespace; a report key is 1 to 64 ASCII letters, digits, ``_``, ``-``, ``.``;
- its folder name (``cohort_code=<code>``, escaped as below) is at most :data:`FOLDER_MAX_BYTES`
  bytes of UTF-8, the longest file name ext4, XFS, APFS and NTFS take; object stores count
  bytes too. A longer one is refused by name instead of failing on "File name too long" after
  the requests were made.

The folder name is escaped as Hive and Spark escape a partition value (``FileUtils.
escapePathName``): ``%``, ``:``, ``?``, ``#``, ``*``, ``[``, ``]``, quotes and the like become
``%XX``. DuckDB, pyarrow, Spark and Hive all unescape ``%XX`` when they read a partition value
from a folder, so every reader sees the identity itself: ``%76ip`` is written as
``cohort_code=%2576ip`` and reads back as ``%76ip``, not as ``vip``. Escaping was chosen over
refusing these characters because a cohort's code is the platform's, not the user's: refusing
``%`` would make such a cohort impossible to export, while the escape is the one every Hive
reader already undoes.

The report key is a stable name the user gives (``checkout_funnel``), or else a digest of the
request as sent, without its dates (``funnel_1f3a9c0e2b7d``): the same request gets the same key
on every day and in every look-back, whether it was written as a dict or built as a typed
request, and a request with other steps, filters or splits gets another one.

The partition columns (:data:`PARTITION_COLUMNS`: ``dt`` and the identity columns) are added by
the destinations, so no data column may take their names (:func:`refuse_partition_columns`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

from airflow_provider_analytics.core import rules
from airflow_provider_analytics.core.errors import AnalyticsUsageError

if TYPE_CHECKING:
    from collections.abc import Iterable

COHORT_COLUMN: Final = "cohort_code"
"""The column a cohort table names each row's cohort in."""

REPORT_COLUMN: Final = "report_key"
"""The column a report table names each row's report in."""

DAY_COLUMN: Final = "dt"
"""The column every table written is partitioned by after the identity: the run's day."""

PARTITION_COLUMNS: Final = frozenset({DAY_COLUMN, COHORT_COLUMN, REPORT_COLUMN})
"""Columns the destinations add (the day, the identity): no data column takes their names."""

REPORT_MARK_COLUMNS: Final = ("report_updated_at", "report_updated_at_text")
"""Columns every report table has and a cohort table does not need: how a table written
before identities existed tells which kind of rows it holds."""

IDENTITY_METADATA_KEY: Final = "analytics.identity"
"""Parquet file metadata key holding ``<column>=<value>`` of the rows the object holds."""

COHORT_FILE: Final = "users"
"""The table name of a cohort export (its file is ``users.parquet``)."""

DATE_KEYS: Final = frozenset({"fromDate", "toDate"})
"""Request keys that change from run to run and so stay out of a report's digest."""

FOLDER_MAX_BYTES: Final = 255
"""Longest folder name, in bytes of UTF-8: the ``NAME_MAX`` of common file systems."""

COHORT_CODE_RULE: Final = (
    "must not contain '/', '\\', '..', '=' or surrounding whitespace (it names a storage partition)"
)
REPORT_KEY_RULE: Final = (
    "must be 1 to 64 characters of ASCII letters, digits, '_', '-' and '.', starting with a "
    "letter or a digit (it names the report's rows in a shared table)"
)
_REPORT_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HIVE_ESCAPED = re.compile(r"[\x00-\x1f\x7f\"#%'*/:=?\\{\[\]^]")


def hive_escape(value: str) -> str:
    """``value`` as Hive and Spark write it in a folder name (``%`` -> ``%25``, ``:`` ->
    ``%3A``, ...), which DuckDB, pyarrow, Spark and Hive read back as ``value``."""
    return _HIVE_ESCAPED.sub(lambda found: f"%{ord(found.group()):02X}", value)


def folder_name(column: str, value: str) -> str:
    """The Hive folder ``<column>=<escaped value>`` of a partition."""
    return f"{column}={hive_escape(value)}"


def _fits_folder(column: str, value: str, field: str) -> None:
    size = len(folder_name(column, value).encode("utf-8", "surrogatepass"))
    if size > FOLDER_MAX_BYTES:
        rules.fail(
            field,
            f"must make a folder name ({column}=<value>, UTF-8, '%'-escaped as Hive does) of "
            f"at most {FOLDER_MAX_BYTES} bytes, the longest file name file systems take; this "
            f"one has {size} bytes",
            value,
        )


def cohort_code(value: Any, field: str = COHORT_COLUMN) -> str:
    """A cohort code: 1 to 100 characters, fit to be sent, and a storage partition value whose
    folder name fits (:data:`FOLDER_MAX_BYTES`).

    :raises AnalyticsValidationError: naming ``field``.
    """
    if not isinstance(value, str) or not value.strip():
        rules.fail(field, "must be a non-empty string", value)
    code = rules.sendable(value, field, max_length=rules.ID_MAX_LENGTH)
    if "/" in code or "\\" in code or ".." in code or "=" in code or code != code.strip():
        rules.fail(field, COHORT_CODE_RULE, value)
    _fits_folder(COHORT_COLUMN, code, field)
    return code


def report_key(value: Any, field: str = REPORT_COLUMN) -> str:
    """A report key by :data:`REPORT_KEY_RULE` (ASCII, so its folder name always fits).

    :raises AnalyticsValidationError: naming ``field``.
    """
    if not isinstance(value, str) or not _REPORT_KEY.fullmatch(value):
        rules.fail(field, REPORT_KEY_RULE, value)
    return value


_VALUE_RULES: Final = {COHORT_COLUMN: cohort_code, REPORT_COLUMN: report_key}


@dataclass(frozen=True)
class Identity:
    """The rows a run writes: ``column`` holds ``value`` in each of them. Checked when made,
    by the rule of its column, so no path holds an identity the rule refuses.

    :param column: ``cohort_code`` or ``report_key``.
    :param value: the cohort's code or the report's key.
    :raises AnalyticsValidationError: naming the column, for a value its rule refuses.
    """

    column: str
    value: str

    def __post_init__(self) -> None:
        check = _VALUE_RULES.get(self.column)
        if check is None:
            rules.fail("identity", f"must be {COHORT_COLUMN}=<code> or {REPORT_COLUMN}=<key>")
        check(self.value, self.column)

    def __str__(self) -> str:
        return f"{self.column}={self.value}"

    @property
    def folder(self) -> str:
        """The Hive folder of its rows, escaped (:func:`hive_escape`)."""
        return folder_name(self.column, self.value)

    @classmethod
    def parse(cls, text: str) -> Identity | None:
        """An identity as :meth:`__str__` writes it, or ``None`` when ``text`` names no
        identity column.

        :raises AnalyticsValidationError: naming the column, for a value its rule refuses.
        """
        column, equals, value = text.partition("=")
        if not equals or column not in _VALUE_RULES or not value:
            return None
        return cls(column, value)


def cohort_identity(cohort_code: str) -> Identity:
    """The identity of a cohort export's rows."""
    return Identity(COHORT_COLUMN, cohort_code)


class SentRequest(Protocol):
    """A request checked by its declared model: what it sends is :meth:`to_body`."""

    def to_body(self) -> dict[str, Any]: ...


def report_identity(report_name: str, request: SentRequest, key: Any = None) -> Identity:
    """The identity of a report's rows: the key given, or the digest of the request as sent.

    :param report_name: ``funnel`` or ``events``, the digest's prefix.
    :param request: the checked request (its declared model), never a dict as written: the
        digest is taken over what is sent, after the request's own check, so a dict and the
        equivalent typed request get one key, and a value the request refuses is named by it.
    :param key: the user's stable name, checked by :data:`REPORT_KEY_RULE`.
    :raises AnalyticsValidationError: naming ``report_key``.
    """
    if key is not None:
        return Identity(REPORT_COLUMN, key)
    if isinstance(request, Mapping) or not callable(getattr(request, "to_body", None)):
        raise AnalyticsUsageError(
            "report_identity needs the checked request (its declared model), not "
            f"{type(request).__name__}: the digest covers the request as sent"
        )
    return Identity(REPORT_COLUMN, f"{report_name}_{request_digest(request.to_body())}")


def request_digest(body: Mapping[str, Any]) -> str:
    """Twelve hex digits of SHA-256 over a JSON body without its dates, keys sorted."""
    kept = {key: value for key, value in body.items() if key not in DATE_KEYS}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def refuse_partition_columns(names: Iterable[str], field: str, where: str) -> None:
    """Refuse a data column named like a partition column (compared case-insensitively, as
    DuckDB, Spark and Hive compare names): a folder-based reader would replace its values with
    the folder's, and an Iceberg table would hold two columns of one name.

    :param names: the data's column names.
    :param field: the argument they came from, for the message.
    :param where: what holds them (``the export's columns``), for the message.
    :raises AnalyticsValidationError: naming ``field`` and the column.
    """
    for name in names:
        if name.casefold() in PARTITION_COLUMNS:
            rules.fail(
                field,
                f"{where} include {name!r}, a partition column the destinations add "
                f"({', '.join(sorted(PARTITION_COLUMNS))}); folder-based readers would replace "
                "its values with the partition's. Leave it out, or use "
                "column_names='warehouse', which names it with a trailing '_'",
                name,
            )


def table_holds(column_names: Iterable[str]) -> str:
    """Which identity column a table's rows hold: the one it has, else ``report_key`` when it
    has every :data:`REPORT_MARK_COLUMNS` column (as every report table has), else
    ``cohort_code``."""
    names = set(column_names)
    for column in (COHORT_COLUMN, REPORT_COLUMN):
        if column in names:
            return column
    return REPORT_COLUMN if names.issuperset(REPORT_MARK_COLUMNS) else COHORT_COLUMN
